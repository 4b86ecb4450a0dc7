//! The cookbook (docs/cookbook.md) and README's tour run as written: every
//! `$ ` command of a page in order in one shell at the top of the
//! checkout, each printing exactly the output shown under it. A command is
//! one line, so that it works pasted as shown: no `> ` continuation
//! prompts, which a shell would read as part of the command. With
//! `PTEFS_COOKBOOK_WRITE=1` the tests write the real output into the page
//! instead.

use crate::common;
use common::docs;

use std::path::Path;
use std::process::Command;

use common::mounted::*;
use common::*;

/// A command and the output a page shows for it.
struct Step {
    command: String,
    output: Vec<String>,
    /// Line range of the output in the page.
    lines: (usize, usize),
}

/// Whether `line` is a heading that ends a section headed at `level`.
fn ends_section(line: &str, level: usize) -> bool {
    let hashes = line.len() - line.trim_start_matches('#').len();
    (1..=level).contains(&hashes) && line[hashes..].starts_with(' ')
}

/// The commands of the section headed `heading`, up to the next heading
/// of its level or above.
fn steps(page: &[&str], heading: &str) -> Vec<Step> {
    let start = page
        .iter()
        .position(|l| *l == heading)
        .unwrap_or_else(|| panic!("a section `{heading}`"));
    let level = heading.len() - heading.trim_start_matches('#').len();
    let mut steps: Vec<Step> = Vec::new();
    let mut in_block = false;
    for (i, line) in page.iter().enumerate().skip(start + 1) {
        if !in_block && ends_section(line, level) {
            break;
        }
        if line.starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if !in_block {
            continue;
        }
        if let Some(cmd) = line.strip_prefix("$ ") {
            steps.push(Step {
                command: cmd.to_owned(),
                output: Vec::new(),
                lines: (i + 1, i + 1),
            });
        } else {
            assert!(
                !(line.starts_with("> ") && steps.last().is_some_and(|s| s.output.is_empty())),
                "line {}: a continuation prompt fails when pasted; make the command one line",
                i + 1
            );
            let s = steps.last_mut().expect("a command before its output");
            s.output.push((*line).to_owned());
            s.lines.1 = i + 1;
        }
    }
    steps
}

/// Runs the commands in one bash; returns each one's output (stdout and
/// stderr, as a terminal shows them).
fn run(root: &Path, steps: &[Step]) -> Vec<Vec<String>> {
    let bin = Path::new(ptefs_bin()).parent().unwrap();
    let mut script = format!(
        "export PATH={}:$PATH\ncd {}\n",
        bin.display(),
        root.display()
    );
    for (i, s) in steps.iter().enumerate() {
        script.push_str(&format!(
            "printf '@@@ %d\\n' {i}\n{{ {}\n}} 2>&1 || echo \"(exit status $?)\"\n",
            s.command
        ));
    }
    let out = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let mut outputs: Vec<Vec<String>> = vec![Vec::new(); steps.len()];
    let mut current = None;
    for line in text.lines() {
        if let Some(i) = line.strip_prefix("@@@ ") {
            current = Some(i.parse::<usize>().unwrap());
        } else if let Some(i) = current {
            outputs[i].push(line.to_owned());
        }
    }
    outputs
}

/// Runs the section `heading` of `page` (relative to the root) and
/// compares each command's output with the page, or writes it there with
/// `PTEFS_COOKBOOK_WRITE=1`.
fn runs_as_written(page: &str, heading: &str, at_least: usize) {
    let root = docs::root();
    let path = root.join(page);
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let steps = steps(&lines, heading);
    assert!(steps.len() >= at_least, "{page}: {} commands", steps.len());
    let outputs = run(root, &steps);
    if std::env::var("PTEFS_COOKBOOK_WRITE").as_deref() == Ok("1") {
        let mut out: Vec<String> = Vec::new();
        let mut next = 0;
        for (s, got) in steps.iter().zip(&outputs) {
            let (from, to) = s.lines;
            out.extend(lines[next..from].iter().map(|l| (*l).to_owned()));
            out.extend(got.iter().cloned());
            next = if s.output.is_empty() { from } else { to };
        }
        out.extend(lines[next..].iter().map(|l| (*l).to_owned()));
        std::fs::write(&path, out.join("\n") + "\n").unwrap();
        return;
    }
    for (s, got) in steps.iter().zip(&outputs) {
        assert_eq!(
            got, &s.output,
            "{page} line {}: `{}` printed something else",
            s.lines.0, s.command
        );
    }
}

#[test]
fn the_cookbook_runs_as_written() {
    if !fuse_or_skip("the_cookbook_runs_as_written") {
        return;
    }
    runs_as_written("docs/cookbook.md", "# Cookbook", 10);
}

#[test]
fn the_readme_tour_runs_as_written() {
    if !fuse_or_skip("the_readme_tour_runs_as_written") {
        return;
    }
    runs_as_written("README.md", "## A tour", 5);
}

/// A section ends at the next heading of its level or above, and not at a
/// `# ` line inside a code block (a comment in a shell or a code.txt).
#[test]
fn a_section_ends_at_its_next_heading_outside_code() {
    let page = [
        "# Top",
        "## A",
        "```",
        "$ echo one",
        "# one",
        "## two",
        "```",
        "### Deeper",
        "```",
        "$ echo three",
        "```",
        "## B",
        "```",
        "$ echo four",
        "```",
    ];
    let got: Vec<(String, Vec<String>)> = steps(&page, "## A")
        .into_iter()
        .map(|s| (s.command, s.output))
        .collect();
    assert_eq!(
        got,
        [
            (
                "echo one".to_owned(),
                vec!["# one".to_owned(), "## two".to_owned()]
            ),
            ("echo three".to_owned(), vec![]),
        ]
    );
}

/// No command on any page continues on a `> ` line: pasted into a shell,
/// the prompt would become part of the command.
#[test]
fn no_documented_command_needs_a_continuation_prompt() {
    for page in docs::pages() {
        let text = docs::read(&page);
        let lines: Vec<&str> = text.lines().collect();
        for (i, pair) in lines.windows(2).enumerate() {
            let command = pair[0].trim_start().starts_with("$ ");
            assert!(
                !(command && pair[1].trim_start().starts_with("> ")),
                "{} line {}: `{}` continues on a prompt line",
                page.display(),
                i + 2,
                pair[1]
            );
        }
    }
}
