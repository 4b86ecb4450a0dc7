//! Data files found by themselves: for a program needing keys that no
//! given data file holds (of external tensors, or of named data its
//! delegates refer to), the `.ptd` files beside it that hold them,
//! whatever their names (exporters let users name them, and Vulkan shards
//! its constants over several). Only each candidate's header and
//! flatbuffer are read, to learn its keys.

use std::collections::HashMap;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::delegate::referenced_named_keys;
use crate::format::{self, DataFile, Kind, Name, Parsed, ProgramFile};
use crate::meta::external::{missing_keys, missing_named, suppliers};
use crate::source::Source;

/// The data files to attach beyond `data` for the programs among `inputs`
/// (files only; directories are left alone), with one note per file
/// saying which program it supplies and with what.
pub fn find(inputs: &[PathBuf], data: &[PathBuf]) -> (Vec<PathBuf>, Vec<String>) {
    // A remote data file is fetched as far as parsing needs.
    let open = |p: &PathBuf| {
        let mut s = Source::open(p).ok()?;
        s.prefetch(crate::tree::fetch_plan).ok()?;
        Some(s)
    };
    let given: Vec<Source> = data.iter().filter_map(open).collect();
    let given: Vec<DataFile<'_>> = given.iter().filter_map(|s| as_data(s.bytes())).collect();
    let given: Vec<&DataFile<'_>> = given.iter().collect();
    let sources: Vec<(&PathBuf, Source)> = inputs
        .iter()
        .filter(|p| p.is_file() && kind_of(p) == Some(Kind::Program))
        .filter_map(|p| Some((p, Source::open(p).ok()?)))
        .collect();
    let parsed: Vec<(&Path, ProgramFile<'_>)> = (sources.iter())
        .filter_map(|(p, s)| match format::parse(s.bytes()) {
            Ok(Parsed::Program(program)) => Some((p.as_path(), program)),
            _ => None,
        })
        .collect();
    let programs: Vec<(&Path, &ProgramFile<'_>)> = parsed.iter().map(|(p, f)| (*p, f)).collect();
    find_among(&programs, &given, data)
}

/// [`find`] for programs already parsed, each with its file's path, and
/// the given data files (`data`) as parsed.
pub fn find_among(
    programs: &[(&Path, &ProgramFile<'_>)],
    given: &[&DataFile<'_>],
    data: &[PathBuf],
) -> (Vec<PathBuf>, Vec<String>) {
    let mut chosen: Vec<PathBuf> = Vec::new();
    let mut notes = Vec::new();
    for &(input, p) in programs {
        // What the program lacks first: most programs lack nothing, and
        // then the directory is never looked through.
        let wanted = Wanted::of(p, given);
        if wanted.keys.is_empty() {
            continue;
        }
        // The data files beside it, known by their first bytes, are mapped
        // and parsed to learn their keys.
        let skip: Vec<&Path> = data.iter().chain(&chosen).map(PathBuf::as_path).collect();
        let paths: Vec<PathBuf> = beside(input, &skip, |_| true)
            .into_iter()
            .filter(|p| kind_of(p) == Some(Kind::Data))
            .collect();
        let sources: Vec<(PathBuf, Source)> = paths
            .into_iter()
            .filter_map(|p| Source::open(&p).ok().map(|s| (p, s)))
            .collect();
        let mut parsed: Vec<(&Path, DataFile<'_>)> = sources
            .iter()
            .filter_map(|(p, s)| as_data(s.bytes()).map(|d| (p.as_path(), d)))
            .collect();
        // The program's own `<stem>.ptd` first: it supplies what it holds.
        let own = input.file_stem().map(|s| {
            let mut own = s.to_owned();
            own.push(".ptd");
            own
        });
        if let Some(at) = (parsed.iter()).position(|(p, _)| p.file_name() == own.as_deref()) {
            let own = parsed.remove(at);
            parsed.insert(0, own);
        }
        let (parsed, rivals) = without_rivals(parsed, &wanted.keys, own.as_deref());
        if !rivals.files.is_empty() {
            let names: Vec<String> = rivals.files.iter().map(|p| file_name(p)).collect();
            notes.push(format!(
                "{}: attached none of {} (found beside it): each holds {}, and none is \
                 named {}; --data names the one to attach",
                file_name(input),
                names.join(", "),
                wanted.describe(&rivals.keys),
                own.as_deref()
                    .map_or("<stem>.ptd".into(), |o| o.to_string_lossy()),
            ));
        }
        let refs: Vec<&DataFile<'_>> = parsed.iter().map(|(_, d)| d).collect();
        for (i, keys) in suppliers(&wanted.keys, &refs) {
            let path = parsed[i].0;
            notes.push(format!(
                "{}: attached {} (found beside it) for {}",
                file_name(input),
                file_name(path),
                wanted.describe(&keys)
            ));
            chosen.push(path.to_owned());
        }
    }
    (chosen, notes)
}

/// Data files found beside a program that hold the same keys it needs:
/// which of them to attach is the user's to say, not their names' order.
struct Rivals<'p, 'k> {
    /// The files, in name order.
    files: Vec<&'p Path>,
    /// The keys more than one of them holds.
    keys: Vec<Name<'k>>,
}

/// `candidates` (the program's own `<stem>.ptd`, named `own`, first when
/// beside it) without the files holding a key of `wanted` that another
/// also holds, when the program's own file does not: those are the
/// rivals. Shards each holding keys of their own stay.
fn without_rivals<'p, 'd, 'k>(
    candidates: Vec<(&'p Path, DataFile<'d>)>,
    wanted: &[Name<'k>],
    own: Option<&std::ffi::OsStr>,
) -> (Vec<(&'p Path, DataFile<'d>)>, Rivals<'p, 'k>) {
    let holds = |d: &DataFile<'_>, k: &Name<'_>| d.entries.iter().any(|e| e.key == *k);
    let own_file = (candidates.first()).filter(|(p, _)| own.is_some() && p.file_name() == own);
    let keys: Vec<Name<'k>> = (wanted.iter())
        .filter(|k| !own_file.is_some_and(|(_, d)| holds(d, k)))
        .filter(|k| candidates.iter().filter(|(_, d)| holds(d, k)).count() > 1)
        .copied()
        .collect();
    let (rivals, rest): (Vec<_>, Vec<_>) = candidates.into_iter().partition(|(p, d)| {
        !(own.is_some() && p.file_name() == own) && keys.iter().any(|k| holds(d, k))
    });
    let mut files: Vec<&Path> = rivals.into_iter().map(|(p, _)| p).collect();
    files.sort();
    (rest, Rivals { files, keys })
}

/// The keys a program needs that no given data file holds, and what needs
/// each.
struct Wanted<'p> {
    /// External tensor keys, then named-data keys of delegates.
    keys: Vec<Name<'p>>,
    /// The backend of the delegates needing each named-data key (`None`
    /// for an external tensor's key).
    backend: HashMap<Name<'p>, Option<&'p str>>,
}

impl<'p> Wanted<'p> {
    fn of(program: &ProgramFile<'p>, attached: &[&DataFile<'_>]) -> Wanted<'p> {
        let mut keys = missing_keys(program, attached);
        let mut backend: HashMap<Name<'p>, Option<&'p str>> =
            keys.iter().map(|k| (*k, None)).collect();
        let referenced = referenced_named_keys(program);
        // The first delegate referring to a key names its backend.
        let first: HashMap<Name<'p>, &'p str> = referenced.iter().rev().copied().collect();
        let named = missing_named(
            program,
            attached,
            referenced
                .iter()
                .map(|(k, _)| *k)
                .filter(|k| !backend.contains_key(k)),
        );
        for k in named {
            backend.insert(k, first.get(&k).copied());
            keys.push(k);
        }
        Wanted { keys, backend }
    }

    /// What `found` (some of the keys) are: `4 external tensors: a, b, c,
    /// and 1 more`, then `2 named blobs of its XnnpackBackend delegates:
    /// k, l`, one part per backend.
    fn describe(&self, found: &[Name<'_>]) -> String {
        let mut groups: Vec<(Option<&str>, Vec<Name<'_>>)> = Vec::new();
        for k in found {
            let what = self.backend.get(k).copied().flatten();
            match groups.iter_mut().find(|(w, _)| *w == what) {
                Some((_, ks)) => ks.push(*k),
                None => groups.push((what, vec![*k])),
            }
        }
        let parts: Vec<String> = groups
            .iter()
            .map(|(what, keys)| {
                let shown: Vec<String> =
                    keys.iter().take(3).map(|k| k.show().into_owned()).collect();
                let more = keys.len() - shown.len();
                let (noun, of) = match what {
                    None => ("external tensor", String::new()),
                    Some(b) => ("named blob", format!(" of its {b} delegates")),
                };
                format!(
                    "{} {noun}{}{of}: {}{}",
                    keys.len(),
                    if keys.len() == 1 { "" } else { "s" },
                    shown.join(", "),
                    if more > 0 {
                        format!(", and {more} more")
                    } else {
                        String::new()
                    }
                )
            })
            .collect();
        parts.join("; ")
    }
}

fn file_name(p: &Path) -> String {
    crate::source::base_name(p)
}

/// A data file's view of `bytes`, when they are one.
fn as_data(bytes: &[u8]) -> Option<DataFile<'_>> {
    if format::sniff(bytes).ok()? != Kind::Data {
        return None;
    }
    DataFile::parse(bytes).ok()
}

/// Regular files beside `program` whose names `wanted` accepts, in name
/// order, other than it and the files `skip` names. Files are told apart
/// by device and inode, which listing the directory gives without
/// resolving any path.
fn beside(program: &Path, skip: &[&Path], wanted: impl Fn(&Path) -> bool) -> Vec<PathBuf> {
    let dir = match program.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    // A symlink (a build output linked beside the program) is the file
    // it names.
    let candidates: Vec<(PathBuf, std::fs::Metadata)> = entries
        .filter_map(|e| e.ok())
        .filter(|e| wanted(Path::new(&e.file_name())))
        .filter_map(|e| {
            let m = match e.file_type().ok()?.is_symlink() {
                true => std::fs::metadata(e.path()).ok()?,
                false => e.metadata().ok()?,
            };
            m.is_file().then(|| (e.path(), m))
        })
        .collect();
    // Most directories hold nothing wanted: only then is anything stat'ed.
    if candidates.is_empty() {
        return Vec::new();
    }
    let identity = |p: &Path| std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()));
    let known: Vec<(u64, u64)> = std::iter::once(program)
        .chain(skip.iter().copied())
        .filter_map(identity)
        .collect();
    let mut out: Vec<PathBuf> = candidates
        .into_iter()
        .filter(|(_, m)| !known.contains(&(m.dev(), m.ino())))
        .map(|(p, _)| p)
        .collect();
    out.sort();
    out
}

/// What kind of file `path` is, from its first bytes alone: a directory
/// of large models is looked through without mapping any of them.
fn kind_of(path: &Path) -> Option<Kind> {
    let mut head = [0u8; 16];
    let mut file = std::fs::File::open(path).ok()?;
    let mut len = 0;
    while len < head.len() {
        match file.read(&mut head[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    format::sniff(&head[..len]).ok()
}

/// What was looked for beside a program: found and attached, with a
/// note saying so; or found and not attached, with a note saying why.
pub enum Found {
    /// Attach this file.
    Attach(PathBuf, String),
    /// Nothing attached; the note names what was found and why not.
    NotAttached(String),
}

/// The profile of `program` found by itself: the only `.etdp` file
/// beside it, when that is an ETDump whose events all name instructions
/// of the program (an ETDump does not name the program it profiled, so
/// the join is the check). `None` when there is no `.etdp` beside it.
pub fn find_profile(program: &Path) -> Option<Found> {
    if !program.is_file() {
        return None;
    }
    let found = beside(program, &[], |name| {
        name.extension().is_some_and(|e| e == "etdp")
    });
    let not = |file: &Path, why: &str| {
        Some(Found::NotAttached(format!(
            "{}: not attached {} as its profile: {why}",
            file_name(program),
            file_name(file)
        )))
    };
    if found.is_empty() {
        return None;
    }
    let source = Source::open(program).ok()?;
    let Ok(Parsed::Program(p)) = format::parse(source.bytes()) else {
        return None;
    };
    let only = match &found[..] {
        [only] => only,
        // Several: none is the one found; --profile names it.
        _ => return None,
    };
    let profile = match Source::open(only) {
        Ok(s) => s,
        Err(e) => return not(only, &e.to_string()),
    };
    let e = match format::parse(profile.bytes()) {
        Ok(Parsed::Profile(e)) => e,
        Ok(_) => return not(only, "it is not an ETDump"),
        Err(e) => return not(only, &e.to_string()),
    };
    let Some(join) = crate::join::profile::join(&p, &e) else {
        return not(only, "its runs name none of the program's methods");
    };
    let timed = join
        .instructions
        .iter()
        .filter(|i| !i.durations.is_empty())
        .count();
    if let Some(first) = join.unmatched.first() {
        return not(
            only,
            &format!(
                "{} of its events name no instruction of method {:?} (the first: {})",
                join.unmatched.len(),
                join.method,
                first.why
            ),
        );
    }
    if timed == 0 {
        return not(only, "its events time no instruction of the program");
    }
    if let Some(why) = join.disagreement() {
        return not(only, &why);
    }
    let note = format!(
        "{}: attached {} (found beside it, the only .etdp there) as its profile: \
         its events time {timed} of the {} instructions of method {:?}, and none names \
         an instruction the program lacks",
        file_name(program),
        file_name(only),
        join.instructions.len(),
        join.method
    );
    Some(Found::Attach(only.clone(), note))
}

/// The ETRecord beside `program` (`<stem>.etrecord`, else `etrecord.bin`,
/// the name ExecuTorch's examples save it under), when `program` is a
/// program and the file is an ETRecord recording one of its methods.
/// `None` when neither name is beside it.
pub fn find_etrecord(program: &Path) -> Option<Found> {
    if !program.is_file() {
        return None;
    }
    let stem = program.file_stem()?.to_string_lossy().into_owned();
    let own = format!("{stem}.etrecord");
    let found = beside(program, &[], |name| {
        name.to_str()
            .is_some_and(|n| n == own || n == "etrecord.bin")
    });
    let pick = found
        .iter()
        .find(|p| p.file_name().is_some_and(|n| n.to_string_lossy() == own))
        .or(found.first())?;
    let not = |why: &str| {
        Some(Found::NotAttached(format!(
            "{}: not attached {} as its ETRecord: {why}",
            program.display(),
            pick.display()
        )))
    };
    let source = Source::open(program).ok()?;
    let Ok(Parsed::Program(p)) = format::parse(source.bytes()) else {
        return None;
    };
    let record = match Source::open(pick) {
        Ok(s) => s,
        Err(e) => return not(&e.to_string()),
    };
    let r = match format::parse(record.bytes()) {
        Ok(Parsed::EtRecord(r)) => r,
        Ok(_) => return not("it is not an ETRecord"),
        Err(e) => return not(&e.to_string()),
    };
    let method = p.methods.iter().map(|m| m.name.to_string()).find(|m| {
        r.graphs
            .iter()
            .any(|g| g.name == format!("edge_dialect_exported_program/{m}"))
    });
    let Some(method) = method else {
        return not("it records none of the program's methods");
    };
    for m in &p.methods {
        let rows = crate::join::etrecord::rows(&r, &m.name.to_string());
        if let Some(why) =
            (rows.ok()).and_then(|rows| crate::join::etrecord::disagreement(&rows, m))
        {
            return not(&why);
        }
    }
    let note = format!(
        "{}: attached {} (found beside it) as its ETRecord: it records method {method:?}",
        program.display(),
        pick.display()
    );
    Some(Found::Attach(pick.clone(), note))
}
