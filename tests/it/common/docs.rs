//! The user documentation as the tests read it: README.md, the pages under
//! docs/ and python/README.md. docs/incoming/ holds notes waiting to be
//! folded into pages, so it is not documentation yet.

use std::path::{Path, PathBuf};

/// The checkout's root.
pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every documentation page, relative to the root, sorted.
pub fn pages() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                if p.file_name().is_some_and(|n| n != "incoming") {
                    walk(&p, out);
                }
            } else if p.extension().is_some_and(|x| x == "md") {
                out.push(p);
            }
        }
    }
    let mut out = vec![root().join("README.md"), root().join("python/README.md")];
    walk(&root().join("docs"), &mut out);
    let mut rel: Vec<PathBuf> = out
        .into_iter()
        .map(|p| p.strip_prefix(root()).unwrap().to_path_buf())
        .collect();
    rel.sort();
    rel
}

/// A page's text.
pub fn read(page: &Path) -> String {
    std::fs::read_to_string(root().join(page)).unwrap_or_else(|e| panic!("{}: {e}", page.display()))
}

/// The lines of a page outside fenced code blocks, with their 1-based
/// numbers; the fences themselves are left out.
pub fn prose(text: &str) -> Vec<(usize, &str)> {
    let mut in_block = false;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
        } else if !in_block {
            out.push((i + 1, line));
        }
    }
    out
}

/// A command of a page and the output the page shows under it.
#[derive(Debug, PartialEq)]
pub struct Example {
    /// The command, its `\`-continued lines joined with newlines.
    pub command: String,
    /// The output lines, without the block's indentation.
    pub output: Vec<String>,
    /// 1-based line of the `$ `.
    pub line: usize,
    /// 0-based range of the page's lines holding the output.
    pub lines: std::ops::Range<usize>,
    /// The indentation of the block (a block in a list item is indented).
    pub indent: String,
    /// Whether it is the first command of its block.
    pub opens_block: bool,
}

/// Whether a fence's info string marks a block the tests run: none, or
/// `sh`. A ```` ```console ```` block is shown but not run.
fn runs(info: &str) -> bool {
    matches!(info, "" | "sh")
}

/// The `$ ` commands of the runnable blocks of a page, in order.
pub fn examples(page: &[&str]) -> Vec<Example> {
    let mut out: Vec<Example> = Vec::new();
    // The indentation of the open block, and whether it runs.
    let mut block: Option<(String, bool)> = None;
    // The examples before the open block: lines ahead of a block's first
    // command are text shown, not output.
    let mut before = 0;
    let mut i = 0;
    while i < page.len() {
        let line = page[i];
        let trimmed = line.trim_start();
        i += 1;
        if let Some(info) = trimmed.strip_prefix("```") {
            before = out.len();
            block = match block {
                None => Some((
                    line[..line.len() - trimmed.len()].to_owned(),
                    runs(info.trim()),
                )),
                Some(_) => None,
            };
            continue;
        }
        let Some((indent, true)) = &block else {
            continue;
        };
        let text = line.strip_prefix(indent.as_str()).unwrap_or(line);
        if let Some(cmd) = text.strip_prefix("$ ") {
            let at = i;
            let mut command = cmd.to_owned();
            while command.ends_with('\\') && i < page.len() {
                command.push('\n');
                command.push_str(page[i].strip_prefix(indent.as_str()).unwrap_or(page[i]));
                i += 1;
            }
            out.push(Example {
                command,
                output: Vec::new(),
                line: at,
                lines: i..i,
                indent: indent.clone(),
                opens_block: out.len() == before,
            });
        } else if out.len() > before {
            let e = out.last_mut().unwrap();
            assert!(
                !(text.starts_with("> ") && e.output.is_empty()),
                "line {i}: a continuation prompt fails when pasted; make the command one line"
            );
            e.output.push(text.to_owned());
            e.lines.end = i;
        }
    }
    out
}

/// Whether `got` is what a page shows as `want`: equal, except that a
/// line of only `...` (indented or not) stands for any lines, none
/// included, and `...` within a line for any text.
pub fn shown_as(want: &[String], got: &[String]) -> bool {
    match want.split_first() {
        None => got.is_empty(),
        Some((w, rest)) if w.trim() == "..." => (0..=got.len()).any(|n| shown_as(rest, &got[n..])),
        Some((w, rest)) => got
            .split_first()
            .is_some_and(|(g, more)| line_shown_as(w, g) && shown_as(rest, more)),
    }
}

/// Whether line `got` is `want`, each `...` in `want` standing for any
/// text.
fn line_shown_as(want: &str, got: &str) -> bool {
    let mut parts = want.split("...");
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = got.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for p in middle {
        match rest.find(p) {
            Some(at) => rest = &rest[at + p.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// Runs a page's commands in order in one bash, each block's from the
/// top of the checkout, with the built `ptefs` first on `PATH`, `TMPDIR`
/// set to `tmp` and `env` in the environment; returns what each printed
/// (stdout and stderr together, as a terminal shows them), followed by
/// `(exit status N)` when it failed.
pub fn run(examples: &[Example], tmp: &Path, env: &[(&str, String)]) -> Vec<Vec<String>> {
    let bin = Path::new(super::ptefs_bin()).parent().unwrap();
    let mut script = format!("export PATH='{}':\"$PATH\"\n", bin.display());
    for (i, e) in examples.iter().enumerate() {
        if e.opens_block {
            script.push_str(&format!("cd '{}'\n", root().display()));
        }
        // `$?` is restored after the status line, for a page's `echo $?`.
        script.push_str(&format!(
            "printf '\\036@@@ %d\\n' {i}\n{{ {}\n}} 2>&1; s=$?; [ $s = 0 ] || echo \"(exit status $s)\"; (exit $s)\n",
            e.command
        ));
    }
    let out = std::process::Command::new("timeout")
        .args(["300", "bash", "-c", &script])
        .env("TMPDIR", tmp)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    // Each command's output follows a record separator (not a line: the
    // output before it need not end in a newline) and its number.
    let text = String::from_utf8_lossy(&out.stdout);
    let mut outputs: Vec<Vec<String>> = vec![Vec::new(); examples.len()];
    for part in text.split('\u{1e}').skip(1) {
        let (i, output) = part
            .strip_prefix("@@@ ")
            .and_then(|p| p.split_once('\n'))
            .expect("a numbered output");
        outputs[i.parse::<usize>().unwrap()] = output.lines().map(str::to_owned).collect();
    }
    outputs
}

/// `page` with each example's output replaced by `outputs`, but for those
/// the page already shows (see [`shown_as`]).
pub fn rewritten(page: &[&str], examples: &[Example], outputs: &[Vec<String>]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut next = 0;
    for (e, got) in examples.iter().zip(outputs) {
        if shown_as(&e.output, got) {
            continue;
        }
        out.extend(page[next..e.lines.start].iter().map(|l| (*l).to_owned()));
        out.extend(got.iter().map(|l| match l.as_str() {
            "" => String::new(),
            l => format!("{}{l}", e.indent),
        }));
        next = e.lines.end;
    }
    out.extend(page[next..].iter().map(|l| (*l).to_owned()));
    out.join("\n") + "\n"
}
