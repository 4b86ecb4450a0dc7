//! The command line: every subcommand's help shows an example, docs/commands.md's
//! command table lists exactly the subcommands and options there are, and
//! a mistyped subcommand is answered with a suggestion.

use crate::common;
use crate::writer;

use std::collections::BTreeSet;

use common::*;

fn subcommands() -> Vec<clap::Command> {
    ptefs::cli::command().get_subcommands().cloned().collect()
}

#[test]
fn every_subcommand_help_shows_an_example() {
    for sub in subcommands() {
        let out = ptefs().args([sub.get_name(), "--help"]).output().unwrap();
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("Example"),
            "`ptefs {} --help` shows no example:\n{text}",
            sub.get_name()
        );
    }
}

/// The top-level help names every kind of file ptefs opens, in its short
/// (`-h`) and long (`--help`) forms.
#[test]
fn the_top_level_help_names_every_kind_of_file() {
    for flag in ["-h", "--help"] {
        let out = ptefs().arg(flag).output().unwrap();
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout);
        let first = text.lines().next().unwrap_or_default();
        for kind in [".pte", ".ptd", ".bpte", ".ptn", ".etdp"] {
            assert!(
                first.contains(kind),
                "`ptefs {flag}` does not name {kind}: {first}"
            );
        }
    }
}

/// The options every command that opens files shares are one definition:
/// the same help text everywhere, and every command names every kind of
/// input it takes.
#[test]
fn shared_options_and_input_kinds_are_the_same_in_every_command() {
    let shared = ["data", "names", "no_auto_data", "header"];
    let mut seen: std::collections::BTreeMap<&str, String> = Default::default();
    for sub in subcommands() {
        // `pack` opens no tree: it reads a program and the named values
        // to put in its data file; `commit` and `edits` ask a mount.
        // `ops` reads programs' operator tables alone: no data, no names;
        // `index` attaches to each file the data files beside it.
        if ["umount", "pack", "commit", "edits", "ops", "index"].contains(&sub.get_name()) {
            continue;
        }
        for id in shared {
            // `check` shows no tensor by name: it takes no checkpoint.
            if id == "names" && sub.get_name() == "check" {
                continue;
            }
            let arg = sub
                .get_arguments()
                .find(|a| a.get_id() == id)
                .unwrap_or_else(|| panic!("`ptefs {}` has no --{id}", sub.get_name()));
            let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
            let first = seen.entry(id).or_insert_with(|| help.clone());
            assert_eq!(*first, help, "--{id} of `ptefs {}`", sub.get_name());
        }
        let inputs: String = sub
            .get_positionals()
            .filter_map(|a| a.get_help().map(|h| h.to_string()))
            .collect();
        // `check` judges one program, with its data files as --data.
        let kinds: &[&str] = match sub.get_name() {
            "check" => &[".pte", ".bpte", "http(s)://", "s3://"],
            _ => &[
                ".pte",
                ".ptd",
                ".bpte",
                ".ptn",
                "director",
                "http(s)://",
                "s3://",
            ],
        };
        for kind in kinds {
            assert!(
                inputs.contains(kind),
                "`ptefs {} --help` does not name {kind} among its inputs: {inputs}",
                sub.get_name()
            );
        }
    }
}

/// The command table of docs/commands.md: (subcommand, the options its
/// row names).
fn readme_rows() -> Vec<(String, Vec<String>)> {
    let page =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/commands.md")).unwrap();
    let start = page.find("# Commands").unwrap();
    page[start..]
        .lines()
        .skip_while(|l| !l.starts_with("| `ptefs"))
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| {
            let usage = l.split('`').nth(1)?;
            let mut words = usage.split_whitespace().skip(1);
            let name = words.next()?.to_owned();
            let options = usage
                .split(|c: char| c.is_whitespace() || c == '[' || c == ']')
                .filter(|w| w.starts_with('-'))
                .map(|w| w.trim_end_matches("...").to_owned())
                .collect();
            Some((name, options))
        })
        .collect()
}

/// Every way to spell an argument: `-l`, `--json`.
fn spellings(a: &clap::Arg) -> Vec<String> {
    let short = a
        .get_short_and_visible_aliases()
        .into_iter()
        .flatten()
        .map(|c| format!("-{c}"));
    let long = a
        .get_long_and_visible_aliases()
        .into_iter()
        .flatten()
        .map(|l| format!("--{l}"));
    short.chain(long).collect()
}

#[test]
fn the_readme_command_table_matches_the_command_line() {
    let rows = readme_rows();
    let documented: BTreeSet<&str> = rows
        .iter()
        .map(|(n, _)| n.as_str())
        .filter(|n| *n != "SOURCE")
        .collect();
    let subs = subcommands();
    let actual: BTreeSet<&str> = subs.iter().map(|c| c.get_name()).collect();
    assert_eq!(
        documented, actual,
        "docs/commands.md's command table vs the command line"
    );
    for (name, options) in &rows {
        let Some(sub) = subs.iter().find(|c| c.get_name() == name) else {
            continue;
        };
        let known: BTreeSet<String> = sub.get_arguments().flat_map(spellings).collect();
        for o in options {
            assert!(
                known.contains(o),
                "docs/commands.md documents `{o}` for `ptefs {name}`, which has {known:?}"
            );
        }
        // And every option the command has is in its row.
        for k in &known {
            if k == "-h" || k == "--help" {
                continue;
            }
            let short_or_long_in_row = sub
                .get_arguments()
                .map(spellings)
                .any(|names| names.contains(k) && names.iter().any(|n| options.contains(n)));
            assert!(
                short_or_long_in_row,
                "`ptefs {name}` has `{k}`, its row in docs/commands.md does not name it"
            );
        }
    }
}

#[test]
fn a_mistyped_subcommand_gets_a_suggestion() {
    let out = ptefs()
        .args(["lss"])
        .arg(fixture("mlp.pte"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("'lss'") && err.contains("'ls'"), "{err}");
}

#[test]
fn an_existing_source_is_mounted_by_the_short_form() {
    // `ptefs SOURCE MOUNTPOINT` with a source that exists means mount; a
    // bad mount point proves the mount command took it.
    let out = ptefs()
        .arg(fixture("mlp.pte"))
        .arg("/nonexistent/mountpoint")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("/nonexistent/mountpoint"), "{err}");
}

#[test]
fn control_characters_in_names_are_escaped_in_text_and_exact_in_json() {
    let key = "evil\nkey\x1b[31m\\";
    let p = writer::Program {
        named: vec![(key.to_owned(), vec![7u8; 4].into())],
        ..writer::Program::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let path = write_file(dir.path(), "m.pte", &p.to_bytes());
    let run = |args: &[&str]| {
        let out = ptefs().args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let p = path.to_str().unwrap();
    let listing = run(&["ls", p, "named"]);
    assert!(
        listing.contains("evil\\nkey\\x1b[31m\\\\.bin\n"),
        "{listing:?}"
    );
    assert!(!listing.contains('\x1b'), "{listing:?}");
    let listing = run(&["ls", "-R", p]);
    assert!(
        !listing.contains('\x1b') && listing.lines().all(|l| !l.is_empty()),
        "{listing:?}"
    );
    // The file is found by its real name, and index.json keeps it exact.
    let name = format!("named/{key}.bin");
    assert_eq!(run(&["cat", p, &name]).as_bytes(), [7u8; 4]);
    let index: serde_json::Value =
        serde_json::from_str(&run(&["cat", p, "named/index.json"])).unwrap();
    assert_eq!(index[0]["key"], key);
    let stat: serde_json::Value =
        serde_json::from_str(&run(&["stat", "--json", p, &name])).unwrap();
    assert_eq!(stat["path"], name.as_str());
    let text = run(&["stat", p, &name]);
    assert!(
        text.starts_with("  File: named/evil\\nkey\\x1b[31m"),
        "{text:?}"
    );
}

/// The table of delegate backends (docs/backends/README.md) names every
/// backend ptefs decodes, with its folder, linked to the backend's own page
/// docs/backends/<folder>.md, which exists.
#[test]
fn the_backend_table_lists_every_backend_with_its_page() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/backends");
    let page = std::fs::read_to_string(dir.join("README.md")).unwrap();
    let start = page.find("# Delegate backends").unwrap();
    let table = &page[start
        ..page[start..]
            .find("\n\n## ")
            .map_or(page.len(), |e| start + e)];
    for b in ptefs::delegate::backends() {
        let row = table
            .lines()
            .find(|l| l.contains(&format!("`{}`", b.id())))
            .unwrap_or_else(|| panic!("docs/backends/README.md's table lacks {}", b.id()));
        let folder = b.folder();
        assert!(
            row.contains(&format!("[`{folder}/`]({folder}.md)")),
            "{row}"
        );
        assert!(
            dir.join(format!("{folder}.md")).is_file(),
            "docs/backends/{folder}.md is missing"
        );
    }
    // And every page there is a backend's, or the index.
    let folders: BTreeSet<String> = ptefs::delegate::backends()
        .iter()
        .map(|b| format!("{}.md", b.folder()))
        .chain(["README.md".to_owned()])
        .collect();
    for e in std::fs::read_dir(&dir).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        assert!(
            folders.contains(&name),
            "docs/backends/{name} is no backend's page"
        );
    }
}
