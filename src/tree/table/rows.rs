//! A method's tensors as compact rows: what a large program's `tensors/`
//! and `values/` are computed from instead of holding a node and a name
//! per file. Rows are shared with the renderers of `index.json` and
//! `plan.json`, which read the build's decisions (names, where the bytes
//! are, aliases, checkpoint keys) from them.

use std::sync::Arc;

use crate::format::Span;
use crate::tree::SourceId;
use crate::tree::file_names::{fitted, padded};

/// The files of one tensor value: `.bin`, maybe `.npy`, maybe an alias.
#[derive(Debug, Clone, Copy)]
struct Row {
    /// Where the bytes are in the source.
    offset: u64,
    len: u64,
    /// Where the encoded fully qualified name is in [`Rows::text`].
    fqn_at: u64,
    /// The value index.
    value: u32,
    /// Bytes of the encoded name; [`NO_FQN`] when the value has none.
    fqn_len: u32,
    /// Index into [`Rows::kinds`].
    kind: u32,
    /// Which source holds the bytes.
    source: u32,
}

const NO_FQN: u32 = u32::MAX;

/// What tensors of one type and shape share: their entry in the tree's
/// tensor table and their `.npy` header (none where NumPy cannot describe
/// the type).
#[derive(Debug, Clone)]
pub struct Kind {
    /// Index into the tree's tensor types and shapes.
    pub meta: u32,
    /// The `.npy` header.
    pub npy: Option<Arc<[u8]>>,
}

/// A method's tensor rows, in value order.
#[derive(Debug, Default)]
pub struct Rows {
    rows: Vec<Row>,
    /// Encoded fully qualified names, one after another.
    text: String,
    kinds: Vec<Kind>,
    /// The largest value index, which sets the width of file names.
    max_value: u64,
    /// The source of the program itself; others are attached data files.
    home: SourceId,
    /// Names of the sources rows refer to, for `index.json`.
    source_names: Vec<(SourceId, Box<str>)>,
    /// Further names from a value's first use, by row.
    aliases: foldhash::HashMap<u32, Box<str>>,
    /// Checkpoint keys whose bytes a row holds; `None` without `--names`.
    checkpoint: Option<foldhash::HashMap<u32, Box<[String]>>>,
}

/// The names of a row's files.
#[derive(Debug, PartialEq, Eq)]
pub struct RowNames {
    /// `<stem>.bin`.
    pub bin: String,
    /// `<stem>.npy`, where NumPy can describe the tensor.
    pub npy: Option<String>,
}

impl Rows {
    /// Empty rows of a program in source `home`, whose tensor names are
    /// padded to the width of `max_value`; `names` says whether checkpoint
    /// keys are looked for.
    pub fn new(home: SourceId, max_value: u64, names: bool) -> Rows {
        Rows {
            home,
            max_value,
            checkpoint: names.then(Default::default),
            ..Rows::default()
        }
    }

    /// Adds a row for value `value` with encoded name `fqn`, of kind
    /// `kind`, whose bytes are `span` of `source`. Values must come in
    /// increasing order. Returns the row's index.
    pub fn push(
        &mut self,
        value: usize,
        fqn: Option<&str>,
        kind: u32,
        source: (SourceId, &str),
        span: Span,
    ) -> u32 {
        debug_assert!(self.rows.last().is_none_or(|r| (r.value as usize) < value));
        let fqn_at = self.text.len() as u64;
        let fqn_len = match fqn {
            Some(f) => {
                self.text.push_str(f);
                u32::try_from(f.len()).unwrap_or(NO_FQN - 1)
            }
            None => NO_FQN,
        };
        let (id, name) = source;
        if id != self.home && !self.source_names.iter().any(|(s, _)| *s == id) {
            self.source_names.push((id, name.into()));
        }
        self.rows.push(Row {
            offset: span.offset,
            len: span.len,
            fqn_at,
            value: u32::try_from(value).unwrap_or(u32::MAX),
            fqn_len,
            kind,
            source: u32::try_from(id).unwrap_or(u32::MAX),
        });
        self.rows.len() as u32 - 1
    }

    /// Adds a kind; returns its index.
    pub fn push_kind(&mut self, kind: Kind) -> u32 {
        self.kinds.push(kind);
        self.kinds.len() as u32 - 1
    }

    /// Gives row `row` the further name `alias`.
    pub fn set_alias(&mut self, row: u32, alias: String) {
        self.aliases.insert(row, alias.into());
    }

    /// Records the checkpoint keys whose bytes row `row` holds.
    pub fn set_checkpoint_names(&mut self, row: u32, keys: Vec<String>) {
        if let Some(map) = &mut self.checkpoint
            && !keys.is_empty()
        {
            map.insert(row, keys.into());
        }
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The row of value `value`.
    pub fn find(&self, value: usize) -> Option<u32> {
        let value = u32::try_from(value).ok()?;
        self.rows
            .binary_search_by_key(&value, |r| r.value)
            .ok()
            .map(|i| i as u32)
    }

    /// Value index of row `row`.
    pub fn value(&self, row: u32) -> usize {
        self.get(row).map_or(0, |r| r.value as usize)
    }

    /// Source and span of row `row`'s bytes.
    pub fn bytes(&self, row: u32) -> (SourceId, Span) {
        self.get(row).map_or((0, Span::default()), |r| {
            (
                r.source as SourceId,
                Span {
                    offset: r.offset,
                    len: r.len,
                },
            )
        })
    }

    /// The kind of row `row`.
    pub fn kind(&self, row: u32) -> Option<&Kind> {
        self.kinds.get(self.get(row)?.kind as usize)
    }

    /// The name of the attached file holding row `row`'s bytes (`None`:
    /// the program itself).
    pub fn source_file(&self, row: u32) -> Option<&str> {
        let id = self.get(row)?.source as SourceId;
        self.source_names
            .iter()
            .find(|(s, _)| *s == id)
            .map(|(_, n)| &**n)
    }

    /// The stem of row `row`'s file names: value index, padded, and the
    /// encoded fully qualified name.
    fn stem(&self, row: u32) -> String {
        let Some(r) = self.get(row) else {
            return String::new();
        };
        let mut stem = padded(u64::from(r.value), self.max_value);
        if r.fqn_len != NO_FQN {
            let at = r.fqn_at as usize;
            stem.push('.');
            stem.push_str(self.text.get(at..at + r.fqn_len as usize).unwrap_or(""));
        }
        stem
    }

    /// The names of row `row`'s `.bin` and `.npy`.
    pub fn names(&self, row: u32) -> RowNames {
        let stem = self.stem(row);
        let npy = self.kind(row).is_some_and(|k| k.npy.is_some());
        let mut names = fitted(&stem, if npy { &[".bin", ".npy"] } else { &[".bin"] }).into_iter();
        RowNames {
            bin: names.next().unwrap_or_default(),
            npy: names.next(),
        }
    }

    /// The encoded fully qualified name of row `row`, if it has one.
    pub fn fqn(&self, row: u32) -> Option<&str> {
        let r = self.get(row).filter(|r| r.fqn_len != NO_FQN)?;
        let at = r.fqn_at as usize;
        self.text.get(at..at + r.fqn_len as usize)
    }

    /// The further name of row `row`, if it has one.
    pub fn alias(&self, row: u32) -> Option<&str> {
        self.aliases.get(&row).map(|a| &**a)
    }

    /// The checkpoint keys whose bytes row `row` holds; `None` without
    /// `--names`.
    pub fn checkpoint_names(&self, row: u32) -> Option<&[String]> {
        let map = self.checkpoint.as_ref()?;
        Some(map.get(&row).map_or(&[][..], |k| &k[..]))
    }

    /// Digits of the value index in names.
    pub fn width(&self) -> usize {
        self.max_value.to_string().len()
    }

    fn get(&self, row: u32) -> Option<&Row> {
        self.rows.get(row as usize)
    }
}
