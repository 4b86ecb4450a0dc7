//! Every command the documentation shows runs as written. A page's `$ `
//! lines, in blocks fenced with ```` ``` ```` or ```` ```sh ````, run in
//! order in one bash (so variables and mounts carry from one command to
//! the next), each block's from the top of the checkout (so a block that
//! needs to be elsewhere says so with its own `cd`), and each prints exactly
//! the lines under it, stdout and stderr together; a command that fails
//! prints `(exit status N)` last. A command ending in `\` goes on on the
//! next line; a `> ` continuation prompt is refused, as it would become
//! part of the command when pasted. A ```` ```console ```` block is shown
//! but not run: it is kept for what the tests cannot run (another
//! program's output, such as ExecuTorch's runtime loading a file).
//!
//! What differs from run to run (timings, temporary paths) is shown as
//! `...`: within a line it stands for any text, and a line that is only
//! `...` (indented or not) for any lines. That is the only normalization.
//!
//! Each page gets its own `TMPDIR`, so `mktemp -d` mount points and files
//! are gone after it, and anything a failing page left mounted there is
//! unmounted. A page that mounts needs FUSE. A page that names `$SERVER`
//! gets nginx serving `tests/fixtures/mlp.pte` as `models/model.pte` to
//! user `alice`, password `s3cret-pw`, on a port of its own, and `SERVER`
//! set to its `host:port`.
//!
//! With `PTEFS_DOCS_WRITE=1` the tests write what each command printed
//! into the page instead, keeping the output a page already shows as it
//! is (`...` included).

use crate::common;
use common::docs::{self, Example};

use std::path::Path;

use common::mounted::*;
use common::servers::{Nginx, server_or_skip};
use common::*;

/// Runs every example of `page` and compares what each printed with the
/// page, or writes it there with `PTEFS_DOCS_WRITE=1`.
fn runs_as_written(page: &str) {
    let text = docs::read(Path::new(page));
    let lines: Vec<&str> = text.lines().collect();
    let examples = docs::examples(&lines);
    assert!(!examples.is_empty(), "{page}: no command to run");
    if examples.iter().any(|e| e.command.contains("ptefs mount")) && !fuse_or_skip(page) {
        return;
    }
    let needs_server = examples.iter().any(|e| e.command.contains("$SERVER"));
    if needs_server && !(server_or_skip(page, "nginx") && server_or_skip(page, "openssl")) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let server = needs_server.then(|| basic_auth_server(tmp.path()));
    let env: Vec<_> = server
        .iter()
        .map(|n| ("SERVER", format!("127.0.0.1:{}", n.port)))
        .collect();
    let outputs = docs::run(&examples, tmp.path(), &env);
    unmount_under(tmp.path());
    if std::env::var("PTEFS_DOCS_WRITE").as_deref() == Ok("1") {
        let new = docs::rewritten(&lines, &examples, &outputs);
        std::fs::write(docs::root().join(page), new).unwrap();
        return;
    }
    let wrong: Vec<String> = examples
        .iter()
        .zip(&outputs)
        .filter(|(e, got)| !docs::shown_as(&e.output, got))
        .map(|(e, got)| {
            format!(
                "{page} line {}: `{}`\nthe page shows:\n{}\nit printed:\n{}\n",
                e.line,
                e.command,
                e.output.join("\n"),
                got.join("\n")
            )
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "{} of {} commands printed something else (PTEFS_DOCS_WRITE=1 writes it):\n{}",
        wrong.len(),
        examples.len(),
        wrong.join("\n")
    );
}

/// nginx serving `tests/fixtures/mlp.pte` as `models/model.pte` to user
/// `alice` with password `s3cret-pw`, its files under `dir`.
fn basic_auth_server(dir: &Path) -> Nginx {
    let root = dir.join("www");
    std::fs::create_dir_all(root.join("models")).unwrap();
    std::fs::copy(fixture("mlp.pte"), root.join("models/model.pte")).unwrap();
    let hash = std::process::Command::new("openssl")
        .args(["passwd", "-apr1", "s3cret-pw"])
        .output()
        .unwrap();
    assert!(hash.status.success(), "openssl passwd failed");
    let htpasswd = dir.join("htpasswd");
    let line = format!("alice:{}", String::from_utf8(hash.stdout).unwrap());
    std::fs::write(&htpasswd, line).unwrap();
    let (r, h) = (root.display().to_string(), htpasswd.display().to_string());
    Nginx::with_servers(&root, |_, port| {
        format!(
            "server {{ listen 127.0.0.1:{port}; root {r}; \
             location / {{ auth_basic \"models\"; auth_basic_user_file {h}; }} }}"
        )
    })
}

/// Unmounts whatever is still mounted under `dir`, as a page that failed
/// halfway leaves it.
fn unmount_under(dir: &Path) {
    let prefix = format!("{}/", dir.display());
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    for point in mounts.lines().filter_map(|l| l.split(' ').nth(4)) {
        if point.starts_with(&prefix) {
            let done = ptefs().arg("umount").arg(point).status();
            if !done.is_ok_and(|s| s.success()) {
                let _ = std::process::Command::new("umount")
                    .arg("-l")
                    .arg(point)
                    .status();
            }
        }
    }
}

/// One test per page with commands, and the list of them.
macro_rules! pages {
    ($($test:ident: $page:literal,)*) => {
        $(
            #[test]
            fn $test() {
                runs_as_written($page);
            }
        )*
        const PAGES: &[&str] = &[$($page),*];
    };
}

pages! {
    readme: "README.md",
    backends_index: "docs/backends/README.md",
    backend_aoti: "docs/backends/aoti.md",
    backend_coreml: "docs/backends/coreml.md",
    backend_ethos_u: "docs/backends/ethos-u.md",
    backend_mediatek: "docs/backends/mediatek.md",
    backend_mlx: "docs/backends/mlx.md",
    backend_mps: "docs/backends/mps.md",
    backend_nxp: "docs/backends/nxp.md",
    backend_openvino: "docs/backends/openvino.md",
    backend_qnn: "docs/backends/qnn.md",
    backend_tensorrt: "docs/backends/tensorrt.md",
    backend_tosa: "docs/backends/tosa.md",
    backend_vgf: "docs/backends/vgf.md",
    backend_xnnpack: "docs/backends/xnnpack.md",
    check: "docs/check.md",
    commands: "docs/commands.md",
    cookbook: "docs/cookbook.md",
    diff: "docs/diff.md",
    edit: "docs/edit.md",
    etrecord: "docs/etrecord.md",
    index: "docs/index.md",
    packages: "docs/packages.md",
    performance: "docs/performance.md",
    profiles: "docs/profiles.md",
    remote: "docs/remote.md",
}

/// No page with commands is left out of [`PAGES`].
#[test]
fn every_page_with_commands_runs() {
    for page in docs::pages() {
        let text = docs::read(&page);
        let lines: Vec<&str> = text.lines().collect();
        let name = page.to_str().unwrap();
        assert_eq!(
            !docs::examples(&lines).is_empty(),
            PAGES.contains(&name),
            "{name}: a page with commands is listed in PAGES, and only such a page"
        );
    }
}

/// How a page is read: indented blocks, `\` continuations, and
/// ```` ```console ```` blocks and blocks without a command left alone.
#[test]
fn examples_are_read_from_runnable_blocks() {
    let page = [
        "# Top",
        "```",
        "$ echo one",
        "# one",
        "$ echo \\",
        "    two",
        "two",
        "```",
        "```console",
        "$ vendor-tool",
        "```",
        "```",
        "{\"shown\": true}",
        "```",
        "1. a step:",
        "",
        "   ```",
        "   $ echo three",
        "   three",
        "   ```",
    ];
    let got: Vec<(String, Vec<String>, usize, bool)> = docs::examples(&page)
        .into_iter()
        .map(|e: Example| (e.command, e.output, e.line, e.opens_block))
        .collect();
    let owned = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    assert_eq!(
        got,
        [
            ("echo one".to_owned(), owned(&["# one"]), 3, true),
            ("echo \\\n    two".to_owned(), owned(&["two"]), 5, false),
            ("echo three".to_owned(), owned(&["three"]), 18, true),
        ]
    );
}

/// `...` stands for any text within a line, and for any lines alone.
#[test]
fn an_ellipsis_stands_for_what_varies() {
    let owned = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let got = owned(&["took 1.5ms", "a", "b", "end"]);
    assert!(docs::shown_as(&owned(&["took ...ms", "...", "end"]), &got));
    assert!(docs::shown_as(
        &owned(&["took ...", "a", "...", "b", "end"]),
        &got
    ));
    assert!(!docs::shown_as(&owned(&["took ...s", "a", "end"]), &got));
    assert!(!docs::shown_as(&owned(&["took 2...", "..."]), &got));
    assert!(!docs::shown_as(&owned(&["took 1.5ms"]), &got));
    assert!(docs::shown_as(&owned(&["..."]), &[]));
    assert!(docs::shown_as(
        &owned(&["took 1.5ms", "  ...", "end"]),
        &got
    ));
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
