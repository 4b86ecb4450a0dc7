//! Every relative link in the documentation resolves: the file it names
//! exists, and an `#anchor` is a heading of that file as GitHub spells it.

use crate::common::docs;

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

/// The targets of `[text](target)` links on a line, skipping inline code.
fn links(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut code = false;
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'`' => code = !code,
            b']' if !code && bytes.get(i + 1) == Some(&b'(') => {
                if let Some(end) = line[i + 2..].find(')') {
                    out.push(line[i + 2..i + 2 + end].to_owned());
                    i += 2 + end;
                }
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// GitHub's anchor for a heading: lower case, punctuation dropped but for
/// `-` and `_`, spaces as `-`; a repeated heading gets `-1`, `-2`, ...
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    for (_, line) in docs::prose(text) {
        let Some(title) = line.strip_prefix('#') else {
            continue;
        };
        let title = title.trim_start_matches('#');
        if !title.starts_with(' ') {
            continue;
        }
        let slug: String = title
            .trim()
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let mut unique = slug.clone();
        let mut n = 0;
        while seen.contains(&unique) {
            n += 1;
            unique = format!("{slug}-{n}");
        }
        seen.insert(unique);
    }
    seen
}

/// `base/target` with `.` and `..` folded, or `None` when it climbs out of
/// the checkout.
fn join(base: &Path, target: &str) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in base.join(target).components() {
        match c {
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    Some(out)
}

/// What is wrong with each broken link of a page, as `page:line: reason`.
fn broken(page: &Path, text: &str) -> Vec<String> {
    let dir = page.parent().unwrap_or(Path::new(""));
    let mut out = Vec::new();
    for (n, line) in docs::prose(text) {
        for target in links(line) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let at = format!("{}:{n}: `{target}`", page.display());
            let (file, anchor) = match target.split_once('#') {
                Some((f, a)) => (f, Some(a)),
                None => (target.as_str(), None),
            };
            if file.is_empty() {
                let a = anchor.unwrap_or_default();
                if !anchors(text).contains(a) {
                    out.push(format!("{at}: no heading #{a} in {}", page.display()));
                }
                continue;
            }
            let Some(resolved) = join(dir, file) else {
                out.push(format!("{at} leaves the checkout"));
                continue;
            };
            let full = docs::root().join(&resolved);
            if !full.exists() {
                out.push(format!("{at}: no file {}", resolved.display()));
                continue;
            }
            if let Some(a) = anchor {
                let heads = if full.is_file() && full.extension().is_some_and(|x| x == "md") {
                    anchors(&std::fs::read_to_string(&full).unwrap())
                } else {
                    BTreeSet::new()
                };
                if !heads.contains(a) {
                    out.push(format!("{at}: no heading #{a} in {}", resolved.display()));
                }
            }
        }
    }
    out
}

#[test]
fn every_relative_link_in_the_docs_resolves() {
    let pages = docs::pages();
    assert!(
        pages.len() > 20,
        "the documentation is README, python/README.md and docs/: {pages:?}"
    );
    let bad: Vec<String> = pages
        .iter()
        .flat_map(|p| broken(p, &docs::read(p)))
        .collect();
    assert!(bad.is_empty(), "broken links:\n{}", bad.join("\n"));
}

#[test]
fn a_missing_file_or_heading_is_reported() {
    let text = "# Top\n\n## Check: will it load?\n\n\
        [ok](#check-will-it-load) [top](#top) [gone](#nowhere)\n\
        [file](../docs/tree.md#the-tree) [no file](missing.md)\n\
        [no heading](tree.md#nowhere) `[code](skipped.md)`\n\
        ```\n[block](skipped.md)\n```\n";
    let bad = broken(Path::new("docs/page.md"), text);
    assert_eq!(
        bad,
        [
            "docs/page.md:5: `#nowhere`: no heading #nowhere in docs/page.md",
            "docs/page.md:6: `missing.md`: no file docs/missing.md",
            "docs/page.md:7: `tree.md#nowhere`: no heading #nowhere in docs/tree.md",
        ],
    );
}

/// No page is orphaned: each is reachable from README.md by links.
#[test]
fn every_page_is_reachable_from_the_readme() {
    let pages: BTreeSet<PathBuf> = docs::pages().into_iter().collect();
    let mut reached = BTreeSet::from([PathBuf::from("README.md")]);
    let mut todo = vec![PathBuf::from("README.md")];
    while let Some(page) = todo.pop() {
        let dir = page.parent().unwrap_or(Path::new("")).to_path_buf();
        for (_, line) in docs::prose(&docs::read(&page)) {
            for target in links(line) {
                let file = target.split('#').next().unwrap();
                if target.contains("://") || file.is_empty() {
                    continue;
                }
                if let Some(p) = join(&dir, file)
                    && pages.contains(&p)
                    && reached.insert(p.clone())
                {
                    todo.push(p);
                }
            }
        }
    }
    let orphans: Vec<_> = pages.difference(&reached).collect();
    assert!(orphans.is_empty(), "no link leads to {orphans:?}");
}
