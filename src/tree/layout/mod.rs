//! Lays out the tree from parsed files, as docs/tree.md
//! documents it.

mod builder;
mod bundled;
mod data;
mod delegate;
mod delegate_layout;
mod etrecord;
mod index_entry;
mod meta;
mod package;
mod profile;
mod program;
mod program_profile;
mod tables;
mod tensor_index;
mod weights;

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use super::file_names::{DirNames, encode};
use super::lazy::{self, RenderCache, SharedBytes};
use super::report_files::{ReportFile, ReportInputs, ReportMaker};
use super::{Content, Dtype, Ino, NodeKind, ROOT, SourceId, Tree};
use crate::format::{DataFile, Parsed, Span};
use crate::meta::checkpoint::Checkpoint;
use builder::{Builder, Dir};
pub use program_profile::AttachedProfile;

/// A parsed file to show, with the name it is shown under.
#[derive(Debug)]
pub struct Input<'a> {
    /// The file's base name (`mlp.pte`).
    pub name: String,
    /// Which source it is, for [`Content::Source`].
    pub source: SourceId,
    /// The source's bytes, which lazily rendered files are rendered from.
    pub bytes: SharedBytes,
    /// The parsed file.
    pub parsed: Parsed<'a>,
}

/// Builds the tree. One input is shown at the root unless `one_dir_each`;
/// otherwise each gets a directory named by its base name. Every data file
/// in `attached` supplies external tensors and named blobs to every
/// program.
pub fn build(inputs: &[Input<'_>], attached: &[Input<'_>], one_dir_each: bool) -> Tree {
    build_with_names(inputs, attached, one_dir_each, None)
}

/// [`build`], with the keys of a checkpoint (`--names`) shown under
/// `by-name/` and in `index.json` wherever a tensor holds their bytes.
pub fn build_with_names(
    inputs: &[Input<'_>],
    attached: &[Input<'_>],
    one_dir_each: bool,
    names: Option<&Checkpoint>,
) -> Tree {
    let options = Options {
        one_dir_each,
        names,
        ..Options::default()
    };
    build_in(inputs, attached, &options, &Weak::new())
}

/// The debug buffer of an ETDump: the file whose byte ranges its debug
/// tensors are.
#[derive(Debug, Clone)]
pub struct DebugBuffer {
    /// The ETDump's source.
    pub of: SourceId,
    /// The buffer's source.
    pub source: SourceId,
    /// Its bytes, which `compare.tsv` is rendered from.
    pub bytes: SharedBytes,
    /// Its base name.
    pub name: String,
}

/// What a tree shows beyond its inputs and the data attached to them.
#[derive(Default, Clone, Copy)]
pub struct Options<'o, 'a> {
    /// Each input in a directory of its own (more than one input, or a
    /// directory given).
    pub one_dir_each: bool,
    /// A checkpoint's keys (`--names`), under `by-name/` and in
    /// `index.json`.
    pub names: Option<&'o Checkpoint>,
    /// The debug buffers of ETDumps.
    pub debug: &'o [DebugBuffer],
    /// A profile (an ETDump) joined with every program shown.
    pub profile: Option<&'o Input<'a>>,
    /// An ETRecord joined with every program shown.
    pub etrecord: Option<&'o Input<'a>>,
    /// What renders the `report/` directory of each program, bundled
    /// program and package, when first read; none without it.
    pub reports: Option<ReportMaker>,
    /// Data files shown beside the programs of a directory that supply
    /// them, besides `attached`: (the program's source, the data file's).
    pub beside: &'o [(SourceId, SourceId)],
}

/// The tree of `inputs` with `attached` data, showing what `options` add;
/// shared, so that its `report/` files can read the tree they live in.
pub fn build_with(
    inputs: &[Input<'_>],
    attached: &[Input<'_>],
    options: &Options<'_, '_>,
) -> Arc<Tree> {
    Arc::new_cyclic(|me| build_in(inputs, attached, options, me))
}

/// [`build_with`], for a tree that will be `me` once built (or never, for
/// a tree without reports).
fn build_in(
    inputs: &[Input<'_>],
    attached: &[Input<'_>],
    options: &Options<'_, '_>,
    me: &Weak<Tree>,
) -> Tree {
    let Options {
        one_dir_each,
        names,
        debug,
        profile,
        etrecord,
        reports,
        beside,
    } = *options;
    let data: Vec<Attached<'_, '_>> = attached
        .iter()
        .filter_map(|i| match &i.parsed {
            Parsed::Data(d) => Some(Attached {
                name: &i.name,
                source: i.source,
                file: d,
            }),
            _ => None,
        })
        .collect();
    let mut b = Builder {
        names: names.map(|c| {
            c.index()
                .into_iter()
                .map(|(d, keys)| (d, keys.into_iter().map(str::to_owned).collect()))
                .collect()
        }),
        checkpoint: names.cloned(),
        cache: Some(RenderCache::new(lazy::CACHE_BUDGET)),
        debug_buffers: (debug.iter())
            .map(|d| (d.of, (d.source, (*d.bytes).as_ref().len() as u64)))
            .collect(),
        profile: profile.map(|i| AttachedProfile {
            source: i.source,
            name: i.name.clone(),
        }),
        etrecord: etrecord.map(|i| i.source),
        reports,
        me: me.clone(),
        report_data: attached
            .iter()
            .filter(|i| matches!(i.parsed, Parsed::Data(_)))
            .map(|i| ReportFile {
                name: i.name.clone(),
                source: i.source,
                bytes: i.bytes.clone(),
            })
            .collect(),
        ..Builder::default()
    };
    for i in inputs.iter().chain(attached).chain(profile).chain(etrecord) {
        b.source_names.insert(i.source, i.name.clone());
        b.source_bytes.insert(i.source, i.bytes.clone());
    }
    for d in debug {
        b.source_names.insert(d.source, d.name.clone());
        b.source_bytes.insert(d.source, d.bytes.clone());
    }
    let root = b.push(ROOT, String::new(), NodeKind::Dir(Vec::new()));
    if let ([only], false) = (inputs, one_dir_each) {
        b.input(root, only, &data);
    } else {
        // A name with `/` (a file found in a subdirectory, `a/m.pte`)
        // is shown in directories of those names.
        let mut dirs: HashMap<String, Dir> = HashMap::new();
        dirs.insert(
            String::new(),
            Dir {
                ino: root,
                names: DirNames::default(),
            },
        );
        for input in inputs {
            let mut parts: Vec<&str> = input.name.split('/').filter(|p| !p.is_empty()).collect();
            let last = parts.pop().unwrap_or("");
            let mut at = String::new();
            for part in parts {
                let inner = format!("{at}/{part}");
                if !dirs.contains_key(&inner) {
                    let Some(parent) = dirs.get_mut(&at) else {
                        break;
                    };
                    let dir = b.subdir(parent, &encode(part));
                    dirs.insert(inner.clone(), dir);
                }
                at = inner;
            }
            let Some(parent) = dirs.get_mut(&at) else {
                continue;
            };
            let name = parent.names.unique(&encode(last), "");
            let ino = b.dir(parent.ino, name).ino;
            let mut data = data.clone();
            data.extend(
                (inputs.iter())
                    .filter(|d| beside.contains(&(input.source, d.source)))
                    .filter_map(|d| match &d.parsed {
                        Parsed::Data(file) => Some(Attached {
                            name: &d.name,
                            source: d.source,
                            file,
                        }),
                        _ => None,
                    }),
            );
            b.input(ino, input, &data);
        }
    }
    b.finish()
}

/// A data file attached to programs.
#[derive(Clone, Copy)]
struct Attached<'i, 'a> {
    name: &'i str,
    source: SourceId,
    file: &'i DataFile<'a>,
}

/// Where a file's bytes are, as seen from the tree: which source, and where
/// the file starts in it (non-zero for a program inside a bundled program).
#[derive(Clone, Copy)]
struct Origin {
    source: SourceId,
    shift: u64,
}

impl Origin {
    fn content(self, span: Span) -> Content {
        Content::Source {
            source: self.source,
            span: self.shifted(span),
        }
    }
    fn shifted(self, span: Span) -> Span {
        Span {
            offset: span.offset + self.shift,
            len: span.len,
        }
    }
}

impl Builder {
    fn input(&mut self, root: Ino, input: &Input<'_>, data: &[Attached<'_, '_>]) {
        for w in input.parsed.warnings() {
            self.warnings.push(format!("{}: {w}", input.name));
        }
        let mut dir = Dir {
            ino: root,
            names: DirNames::default(),
        };
        let origin = Origin {
            source: input.source,
            shift: 0,
        };
        match &input.parsed {
            Parsed::Program(p) => self.program(&mut dir, &input.name, origin, p, data),
            Parsed::Data(d) => self.data(&mut dir, &input.name, origin, d),
            Parsed::Bundled(b) => self.bundled(&mut dir, &input.name, origin, b, data),
            Parsed::Package(p) => self.package(&mut dir, origin, p),
            Parsed::Profile(p) => self.profile(&mut dir, origin, p),
            Parsed::EtRecord(r) => self.etrecord(&mut dir, origin, r),
        }
        if matches!(
            input.parsed,
            Parsed::Program(_) | Parsed::Bundled(_) | Parsed::Package(_)
        ) {
            self.report_dir(&mut dir, input);
        }
    }

    /// `report/`, whose files are rendered by the builder's report maker
    /// when first read (all from one report, computed once), from the
    /// tree being built.
    fn report_dir(&mut self, dir: &mut Dir, input: &Input<'_>) {
        let Some(maker) = self.reports else {
            return;
        };
        let files = maker();
        let inputs = Arc::new(ReportInputs {
            dir: dir.ino,
            shown: ReportFile {
                name: input.name.clone(),
                source: input.source,
                bytes: input.bytes.clone(),
            },
            attached: self.report_data.clone(),
        });
        let mut sub = self.subdir(dir, "report");
        for name in super::report_files::FILES {
            let (files, inputs, me) = (files.clone(), inputs.clone(), self.me.clone());
            self.lazy(
                &mut sub,
                name,
                input.source,
                Box::new(move |_, out| match me.upgrade() {
                    Some(tree) => files.render(&tree, &inputs, name, out),
                    // Only a tree being dropped, whose files no one reads.
                    None => writeln!(out, "the tree of this report is gone"),
                }),
            );
        }
    }
}
