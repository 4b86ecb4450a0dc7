//! What a run indexes: the files its sources name, each once, in one
//! order every machine agrees on, and the share of them a shard takes.
//!
//! A source is a file, a directory (walked recursively), a glob
//! (`models/**/*.pte`), or `@list.txt` (one path or URL a line). In a
//! directory, programs, data files, bundles and packages are taken by
//! extension, so a damaged one still gets its row; profiles and ETRecords,
//! which have no extension of their own, by content.

use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use sha2::{Digest, Sha256};

use super::schema::Stamp;
use crate::format::{Kind, sniff};
use crate::source::remote::{is_url, prefix};

/// Extensions taken from a directory whatever their content.
const MODEL_EXTENSIONS: &[&str] = &["pte", "ptd", "bpte", "ptn"];

/// Lines a `@list` file may hold.
const MAX_LIST_LINES: usize = 10_000_000;

/// One file to index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// The path or URL, as listed: the key of its rows.
    pub source: String,
    /// Its size in bytes, when the listing says.
    pub size: Option<u64>,
    /// Its modification time, microseconds since the epoch, when known.
    pub mtime: Option<i64>,
    /// Its entity tag, for an object in a store.
    pub etag: Option<String>,
    /// The device and inode of a local file, by which two paths of one
    /// file are told to be one.
    pub file: Option<(u64, u64)>,
}

/// What a run's sources name.
#[derive(Debug, Default)]
pub struct Listing {
    /// The files, sorted by source and each once.
    pub items: Vec<Item>,
    /// Paths left out as another path of a file listed: (left out, kept).
    pub same_files: Vec<(String, String)>,
}

/// A source that cannot be listed: the run stops (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum ListError {
    /// A path that does not exist, or cannot be read.
    #[error("{path}: {error}")]
    Io {
        /// The path.
        path: String,
        /// Why.
        error: std::io::Error,
    },
    /// A `@list` file that is not a list.
    #[error("{path}: {why}")]
    List {
        /// The list file.
        path: String,
        /// What is wrong, and on which line.
        why: String,
    },
    /// A glob that matches nothing.
    #[error("{0}: no file matches")]
    NoMatch(String),
    /// A prefix of an object store that cannot be listed.
    #[error(transparent)]
    Remote(#[from] crate::source::SourceError),
    /// A malformed `--shard`.
    #[error("--shard {0}: expected I/N with 0 <= I < N (0/4 .. 3/4)")]
    Shard(String),
}

/// The files `sources` name, sorted by source and each once: a file
/// reached by several paths (`a.pte` and `./a.pte`, a link, a directory
/// and a file in it) is listed by the first of them in that order that is
/// not a symbolic link, so its rows are not counted twice.
pub fn list(sources: &[String]) -> Result<Listing, ListError> {
    let mut out = Vec::new();
    for s in sources {
        if let Some(list) = s.strip_prefix('@') {
            for line in list_file(list)? {
                // A file a list names that is gone is that file's trouble
                // (a row with its error), not the run's.
                match one(&line, &mut out) {
                    Err(ListError::Io { .. }) => out.push(Item {
                        source: line,
                        size: None,
                        mtime: None,
                        etag: None,
                        file: None,
                    }),
                    r => r?,
                }
            }
        } else {
            one(s, &mut out)?;
        }
    }
    for i in &mut out {
        i.source = tidy(&i.source);
    }
    out.sort_by(|a, b| a.source.cmp(&b.source));
    out.dedup_by(|a, b| a.source == b.source);
    // Of the paths of one file, the first that is not a link is kept.
    let is_link = |i: &Item| std::fs::symlink_metadata(&i.source).is_ok_and(|m| m.is_symlink());
    let mut kept = std::collections::HashMap::new();
    for (n, i) in out.iter().enumerate() {
        if let Some(f) = i.file {
            let k = kept.entry(f).or_insert(n);
            if is_link(&out[*k]) && !is_link(i) {
                *k = n;
            }
        }
    }
    let mut listing = Listing::default();
    for (n, i) in out.iter().enumerate() {
        match i.file.map(|f| kept[&f]) {
            Some(k) if k != n => listing
                .same_files
                .push((i.source.clone(), out[k].source.clone())),
            _ => listing.items.push(i.clone()),
        }
    }
    Ok(listing)
}

/// The directories and object-store prefixes among `sources`, each as
/// the paths listed under it begin (`models/`, `s3://bucket/exports/`);
/// `""` for the current directory, under which every relative path is.
pub fn roots(sources: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for s in sources {
        if s.starts_with('@') || (is_url(s) && !prefix::is_prefix(s)) {
            continue;
        }
        if prefix::is_prefix(s) {
            out.push(s.clone());
        } else if Path::new(s).is_dir() {
            let t = tidy(s);
            out.push(match t.as_str() {
                "." | "./" => String::new(),
                t if t.ends_with('/') => t.to_owned(),
                t => format!("{t}/"),
            });
        }
    }
    out
}

/// True when `source` lies under `root`, one of [`roots`].
pub fn is_under(source: &str, root: &str) -> bool {
    if root.is_empty() {
        return !is_url(source) && !source.starts_with('/') && !source.starts_with("../");
    }
    source.starts_with(root)
}

/// The size (none for a folder) and modification time of the local file
/// or folder at `path`, as they are now; `None` when it is gone.
pub fn stamp(path: &str) -> Option<Stamp> {
    let meta = std::fs::metadata(path).ok()?;
    let mtime = meta.modified().ok().and_then(micros);
    Some(Stamp {
        path: path.to_owned(),
        size: (!meta.is_dir()).then_some(meta.len()),
        mtime,
    })
}

/// A local path without the `.` components and repeated slashes that do
/// not change what it names (`./a//b.pte` is `a/b.pte`); `..` is kept, as
/// through a link it is not the parent the text shows. A URL is as given.
fn tidy(source: &str) -> String {
    if is_url(source) || prefix::is_prefix(source) {
        return source.to_owned();
    }
    let tidied: PathBuf = Path::new(source)
        .components()
        .filter(|c| c != &std::path::Component::CurDir)
        .collect();
    match tidied.to_str() {
        Some("") | None => source.to_owned(),
        Some(t) => t.to_owned(),
    }
}

/// The paths and URLs of a `@list` file: one a line, blank lines and
/// lines starting with `#` left out.
fn list_file(path: &str) -> Result<Vec<String>, ListError> {
    let io = |error| ListError::Io {
        path: path.to_owned(),
        error,
    };
    let text = std::fs::read(path).map_err(io)?;
    let text = String::from_utf8(text).map_err(|e| ListError::List {
        path: path.to_owned(),
        why: format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to()),
    })?;
    let lines: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect();
    if lines.len() > MAX_LIST_LINES {
        return Err(ListError::List {
            path: path.to_owned(),
            why: format!(
                "{} lines; a list holds at most {MAX_LIST_LINES}",
                lines.len()
            ),
        });
    }
    Ok(lines)
}

/// Adds what the one source `s` names.
fn one(s: &str, out: &mut Vec<Item>) -> Result<(), ListError> {
    if prefix::is_prefix(s) {
        // A store has no content to sniff without a request per object:
        // objects are taken by extension.
        let listed = prefix::Prefix::open(s)?.list("")?;
        out.extend(
            listed
                .into_iter()
                .filter(|o| {
                    let ext = o.url.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
                    ext.is_some_and(|e| MODEL_EXTENSIONS.contains(&e.as_str()) || e == "etdp")
                })
                .map(|o| Item {
                    source: o.url,
                    size: Some(o.size),
                    mtime: Some(o.modified.div_euclid(1000)),
                    etag: o.etag,
                    file: None,
                }),
        );
        return Ok(());
    }
    if is_url(s) {
        out.push(Item {
            source: s.to_owned(),
            size: None,
            mtime: None,
            etag: None,
            file: None,
        });
        return Ok(());
    }
    if s.contains(['*', '?', '[']) && !Path::new(s).exists() {
        let before = out.len();
        glob(s, out)?;
        return if out.len() == before {
            Err(ListError::NoMatch(s.to_owned()))
        } else {
            Ok(())
        };
    }
    let io = |error| ListError::Io {
        path: s.to_owned(),
        error,
    };
    let meta = std::fs::metadata(s).map_err(io)?;
    if meta.is_dir() {
        walk(Path::new(s), &mut |p| taken(p), out).map_err(io)
    } else {
        out.push(item(s.to_owned(), Some(&meta)));
        Ok(())
    }
}

/// `t` in microseconds since the epoch, the unit of every time in the
/// catalog: Parquet readers such as Spark's refuse nanoseconds, and a
/// re-run compares times in the unit they were kept in.
pub fn micros(t: std::time::SystemTime) -> Option<i64> {
    let d = t.duration_since(UNIX_EPOCH).ok()?;
    i64::try_from(d.as_micros()).ok()
}

/// The item of the file at `source`, with what `meta` says of it.
fn item(source: String, meta: Option<&std::fs::Metadata>) -> Item {
    let mtime = meta.and_then(|m| m.modified().ok()).and_then(micros);
    Item {
        source,
        size: meta.map(std::fs::Metadata::len),
        mtime,
        etag: None,
        file: meta.map(|m| (m.dev(), m.ino())),
    }
}

/// Adds every file under `dir` that `take` accepts, in name order.
/// Symbolic links to files are followed; links to directories are not
/// descended into, so no cycle can form.
fn walk(
    dir: &Path,
    take: &mut dyn FnMut(&Path) -> bool,
    out: &mut Vec<Item>,
) -> std::io::Result<()> {
    let mut entries = Vec::new();
    for e in std::fs::read_dir(dir)? {
        entries.push(e?.path());
    }
    entries.sort();
    for p in entries {
        if std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_dir()) {
            walk(&p, take, out)?;
            continue;
        }
        let Ok(meta) = std::fs::metadata(&p) else {
            continue;
        };
        if meta.is_file() && take(&p) {
            out.push(item(p.to_string_lossy().into_owned(), Some(&meta)));
        }
    }
    Ok(())
}

/// True for a file a directory contributes: a model file by extension,
/// a profile or an ETRecord by content.
fn taken(p: &Path) -> bool {
    let ext = p
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    if ext
        .as_deref()
        .is_some_and(|e| MODEL_EXTENSIONS.contains(&e))
    {
        return true;
    }
    let mut head = Vec::with_capacity(12);
    let Ok(f) = std::fs::File::open(p) else {
        return false;
    };
    if f.take(12).read_to_end(&mut head).is_err() {
        return false;
    }
    match sniff(&head) {
        Ok(Kind::Profile) => true,
        Ok(Kind::Package) => crate::source::Source::open(p)
            .is_ok_and(|s| crate::format::etrecord::is_etrecord(s.bytes())),
        _ => false,
    }
}

/// Adds the files `pattern` matches: `*` and `?` within a name, `[abc]`,
/// and `**` for any number of directories.
fn glob(pattern: &str, out: &mut Vec<Item>) -> Result<(), ListError> {
    // The walk starts at the longest leading part without a wildcard.
    let parts: Vec<&str> = pattern.split('/').collect();
    let fixed = parts
        .iter()
        .take_while(|p| !p.contains(['*', '?', '[']))
        .count();
    let base = match parts[..fixed].join("/") {
        b if b.is_empty() && pattern.starts_with('/') => "/".to_owned(),
        b if b.is_empty() => ".".to_owned(),
        b => b,
    };
    let rest: Vec<&str> = parts[fixed..].to_vec();
    let base_path = PathBuf::from(&base);
    if !base_path.is_dir() {
        return Ok(());
    }
    let mut found = Vec::new();
    walk(
        &base_path,
        &mut |p| {
            let rel = p.strip_prefix(&base_path).unwrap_or(p).to_string_lossy();
            let rel: Vec<&str> = rel.split('/').collect();
            matches_path(&rest, &rel)
        },
        &mut found,
    )
    .map_err(|error| ListError::Io {
        path: pattern.to_owned(),
        error,
    })?;
    // Paths as the pattern spells them (`./` only when it has one).
    for mut f in found {
        if base == "." && !pattern.starts_with("./") {
            f.source = f.source.trim_start_matches("./").to_owned();
        }
        out.push(f);
    }
    Ok(())
}

/// True when the path components `path` match the pattern components.
fn matches_path(pattern: &[&str], path: &[&str]) -> bool {
    match pattern.split_first() {
        None => path.is_empty(),
        Some((&"**", rest)) => (0..=path.len()).any(|i| matches_path(rest, &path[i..])),
        Some((p, rest)) => path.split_first().is_some_and(|(name, more)| {
            matches_name(p.as_bytes(), name.as_bytes()) && matches_path(rest, more)
        }),
    }
}

/// True when `name` matches the one-component pattern `p`.
fn matches_name(p: &[u8], name: &[u8]) -> bool {
    match p.split_first() {
        None => name.is_empty(),
        Some((b'*', rest)) => (0..=name.len()).any(|i| matches_name(rest, &name[i..])),
        Some((b'?', rest)) => name
            .split_first()
            .is_some_and(|(_, n)| matches_name(rest, n)),
        Some((b'[', rest)) => {
            let Some(close) = rest.iter().position(|&c| c == b']') else {
                return name.first() == Some(&b'[') && matches_name(rest, &name[1..]);
            };
            let (set, after) = (&rest[..close], &rest[close + 1..]);
            let (negate, set) = match set.split_first() {
                Some((b'!' | b'^', s)) => (true, s),
                _ => (false, set),
            };
            name.split_first().is_some_and(|(c, n)| {
                let mut hit = false;
                let mut i = 0;
                while i < set.len() {
                    if i + 2 < set.len() && set[i + 1] == b'-' {
                        hit |= (set[i]..=set[i + 2]).contains(c);
                        i += 3;
                    } else {
                        hit |= set[i] == *c;
                        i += 1;
                    }
                }
                hit != negate && matches_name(after, n)
            })
        }
        Some((c, rest)) => name.first() == Some(c) && matches_name(rest, &name[1..]),
    }
}

/// `--shard I/N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// Which shard, from 0.
    pub index: u64,
    /// Of how many.
    pub count: u64,
}

impl std::str::FromStr for Shard {
    type Err = ListError;

    fn from_str(s: &str) -> Result<Shard, ListError> {
        let bad = || ListError::Shard(s.to_owned());
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count): (u64, u64) = (
            i.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl Shard {
    /// The whole listing.
    pub const ALL: Shard = Shard { index: 0, count: 1 };

    /// True when `source` is this shard's: by a digest of its name alone,
    /// so every machine splits any listing of it the same way.
    pub fn takes(&self, source: &str) -> bool {
        let d = Sha256::digest(source.as_bytes());
        let mut first = [0u8; 8];
        first.copy_from_slice(&d[..8]);
        u64::from_be_bytes(first) % self.count == self.index
    }

    /// The part file suffix of this shard (`s2of4`).
    pub fn label(&self) -> String {
        format!("s{}of{}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_names_and_directories() {
        let m = |p: &str, path: &str| {
            let p: Vec<&str> = p.split('/').collect();
            let path: Vec<&str> = path.split('/').collect();
            matches_path(&p, &path)
        };
        assert!(m("*.pte", "a.pte"));
        assert!(!m("*.pte", "a.ptd"));
        assert!(!m("*.pte", "x/a.pte"));
        assert!(m("**/*.pte", "a.pte"));
        assert!(m("**/*.pte", "x/y/a.pte"));
        assert!(m("x/**", "x/y/a.pte"));
        assert!(m("m?.pt[de]", "m1.ptd"));
        assert!(!m("m?.pt[!de]", "m1.ptd"));
        assert!(m("v[0-9].pte", "v7.pte"));
    }

    #[test]
    fn shards_split_a_listing_into_disjoint_parts_covering_it() {
        let names: Vec<String> = (0..200).map(|i| format!("m{i}.pte")).collect();
        let shards: Vec<Shard> = (0..4).map(|i| format!("{i}/4").parse().unwrap()).collect();
        for n in &names {
            assert_eq!(shards.iter().filter(|s| s.takes(n)).count(), 1, "{n}");
        }
        assert!(shards.iter().all(|s| names.iter().any(|n| s.takes(n))));
        for bad in ["4/4", "1", "a/2", "0/0", "-1/3"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
    }

    #[test]
    fn one_file_under_several_paths_is_listed_once() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir(d.join("m")).unwrap();
        std::fs::write(d.join("m/a.pte"), b"not a program").unwrap();
        std::fs::write(d.join("m/b.pte"), b"another").unwrap();
        // A link sorted before its target: the target's path is kept.
        std::os::unix::fs::symlink("a.pte", d.join("m/0.pte")).unwrap();
        std::fs::hard_link(d.join("m/b.pte"), d.join("b-again.pte")).unwrap();
        let m = d.join("m").display().to_string();
        let sources = [
            format!("{m}/"),
            format!("{m}/./a.pte"),
            format!("{m}//b.pte"),
            d.join("b-again.pte").display().to_string(),
        ];
        let listing = list(&sources).unwrap();
        let listed: Vec<&str> = listing.items.iter().map(|i| i.source.as_str()).collect();
        let b_again = d.join("b-again.pte").display().to_string();
        assert_eq!(listed, [b_again.clone(), format!("{m}/a.pte")]);
        assert_eq!(
            listing.same_files,
            [
                (format!("{m}/0.pte"), format!("{m}/a.pte")),
                (format!("{m}/b.pte"), b_again),
            ]
        );
        // A file a list names that is gone is listed by its tidied text,
        // once, for its row to say it is gone.
        std::fs::write(
            d.join("list.txt"),
            format!("{m}/gone.pte\n{m}/./gone.pte\n"),
        )
        .unwrap();
        let gone = list(&[format!("@{}", d.join("list.txt").display())]).unwrap();
        let listed: Vec<&str> = gone.items.iter().map(|i| i.source.as_str()).collect();
        assert_eq!(listed, [format!("{m}/gone.pte")]);
    }
}
