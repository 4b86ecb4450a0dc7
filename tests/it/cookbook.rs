//! README's cookbook runs as written: every `$ ` command in order in one
//! shell at the top of the checkout, each printing exactly the output
//! shown under it. A command is one line, so that it works pasted as
//! shown: no `> ` continuation prompts, which a shell would read as part
//! of the command. With
//! `PTEFS_COOKBOOK_WRITE=1` the test writes the real output into README
//! instead.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::mounted::*;
use common::*;

/// A command and the output README shows for it.
struct Step {
    command: String,
    output: Vec<String>,
    /// Line range of the output in README.
    lines: (usize, usize),
}

fn steps(readme: &[&str]) -> Vec<Step> {
    let start = readme
        .iter()
        .position(|l| *l == "## Cookbook")
        .expect("a Cookbook section");
    let mut steps: Vec<Step> = Vec::new();
    let mut in_block = false;
    for (i, line) in readme.iter().enumerate().skip(start + 1) {
        if line.starts_with("## ") {
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
                "README line {}: a continuation prompt fails when pasted; make the command one line",
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

#[test]
fn the_cookbook_runs_as_written() {
    if !fuse_or_skip("the_cookbook_runs_as_written") {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme_path = root.join("README.md");
    let readme = std::fs::read_to_string(&readme_path).unwrap();
    let lines: Vec<&str> = readme.lines().collect();
    let steps = steps(&lines);
    assert!(steps.len() >= 10, "{} commands", steps.len());
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
        std::fs::write(&readme_path, out.join("\n") + "\n").unwrap();
        return;
    }
    for (s, got) in steps.iter().zip(&outputs) {
        assert_eq!(
            got, &s.output,
            "README line {}: `{}` printed something else",
            s.lines.0, s.command
        );
    }
}

/// No command anywhere in README continues on a `> ` line: pasted into a
/// shell, the prompt would become part of the command.
#[test]
fn no_readme_command_needs_a_continuation_prompt() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let lines: Vec<&str> = readme.lines().collect();
    for (i, pair) in lines.windows(2).enumerate() {
        let command = pair[0].trim_start().starts_with("$ ");
        assert!(
            !(command && pair[1].trim_start().starts_with("> ")),
            "README line {}: `{}` continues on a prompt line",
            i + 2,
            pair[1]
        );
    }
}
