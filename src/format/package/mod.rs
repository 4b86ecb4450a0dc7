//! Native program packages (`.ptn`): a zip of stored members holding the
//! graph flatbuffer (`program.ptg`), the tensors (`program.safetensors`)
//! and, when equal tensors were stored once, `aliases.json`.
//!
//! The zip structure must be sound for the package to open at all. The
//! members are then read one by one: a member that cannot be read (a
//! corrupt flatbuffer, a safetensors header that lies about its offsets, a
//! compressed member) is recorded in [`PackageFile::errors`] and the rest
//! is still shown.

pub mod graph;
pub mod safetensors;
mod summary;
pub mod zip;

use std::collections::{BTreeMap, HashMap};

use super::{Error, Result, Span, clip};
use crate::schema::native_graph as ng;
pub use safetensors::{StoredTensor, Tensors};
pub use summary::{DtypeCount, MethodSummary, PackageSummary};
pub use zip::Member;

/// The graph member's name.
pub const PROGRAM_MEMBER: &str = "program.ptg";
/// The tensors member's name.
pub const TENSORS_MEMBER: &str = "program.safetensors";
/// The aliases member's name.
pub const ALIASES_MEMBER: &str = "aliases.json";

/// Members up to this size have their CRC-32 checked when parsed.
pub const CRC_CHECKED: u64 = 64 << 20;

/// Largest `aliases.json` read; it holds one short line per duplicate key.
const ALIASES_LIMIT: u64 = 64 << 20;

/// A parsed package.
#[derive(Debug)]
pub struct PackageFile<'a> {
    /// The whole file.
    pub bytes: &'a [u8],
    /// Zip members in central directory order.
    pub members: Vec<Member>,
    /// The verified graph, when `program.ptg` is readable.
    pub program: Option<ng::Program<'a>>,
    /// The tensors, when `program.safetensors` is readable (empty when the
    /// package has none).
    pub tensors: Tensors,
    /// Duplicate data key → owner key, sorted by duplicate.
    pub aliases: BTreeMap<String, String>,
    /// Why a member could not be shown, one sentence each.
    pub errors: Vec<String>,
    /// Index in `tensors.tensors` by key.
    by_key: HashMap<String, usize>,
    /// Oddities that do not stop anything from being shown.
    pub warnings: Vec<String>,
}

impl<'a> PackageFile<'a> {
    /// Reads the zip structure (an error when it is unsound) and then each
    /// member (an entry in `errors` when one is unreadable).
    pub fn parse(bytes: &'a [u8]) -> Result<Self> {
        let members = zip::members(bytes).map_err(|e| e.context("package"))?;
        let mut p = PackageFile {
            bytes,
            members,
            program: None,
            tensors: Tensors::default(),
            aliases: BTreeMap::new(),
            errors: Vec::new(),
            by_key: HashMap::new(),
            warnings: Vec::new(),
        };
        p.check_members();
        match p.stored(PROGRAM_MEMBER) {
            Some(Ok(span)) => match graph::parse(bytes, span) {
                Ok(g) => p.program = Some(g),
                Err(e) => p.errors.push(e.to_string()),
            },
            Some(Err(e)) => p.errors.push(e.to_string()),
            None => {
                // Any zip starts like a package; one without the graph is
                // some other archive.
                let names: Vec<&str> = p.members.iter().map(|m| m.name.as_str()).collect();
                let hint = crate::format::lookalike::of_zip(&names)
                    .map_or_else(String::new, |h| format!("; {h}"));
                return Err(Error::new(format!(
                    "a zip archive but not a native program package: no {PROGRAM_MEMBER} member among {} ({}){hint}",
                    names.len(),
                    clip(&names.join(", "), 200)
                )));
            }
        }
        match p.stored(TENSORS_MEMBER) {
            Some(Ok(span)) => match safetensors::parse(bytes, span) {
                Ok(t) => {
                    p.by_key = (t.tensors.iter().enumerate())
                        .map(|(i, t)| (t.key.clone(), i))
                        .collect();
                    p.tensors = t;
                }
                Err(e) => p.errors.push(e.to_string()),
            },
            Some(Err(e)) => p.errors.push(e.to_string()),
            None => {}
        }
        match p.stored(ALIASES_MEMBER) {
            Some(Ok(span)) => match p.read_aliases(span) {
                Ok(a) => p.aliases = a,
                Err(e) => p.errors.push(e.to_string()),
            },
            Some(Err(e)) => p.errors.push(e.to_string()),
            None => {}
        }
        Ok(p)
    }

    /// The member called `name`.
    pub fn member(&self, name: &str) -> Option<&Member> {
        self.members.iter().find(|m| m.name == name)
    }

    fn stored(&self, name: &str) -> Option<Result<Span>> {
        self.member(name).map(Member::stored)
    }

    /// The stored tensor with data key `key`, following an alias to its
    /// owner.
    pub fn tensor(&self, key: &str) -> Option<&StoredTensor> {
        let owner = self.aliases.get(key).map_or(key, String::as_str);
        self.tensors.tensors.get(*self.by_key.get(owner)?)
    }

    /// Every data key with stored bytes, owners and aliases alike, sorted:
    /// the key, its bytes, and the owner's key for an alias.
    pub fn keys(&self) -> Vec<(&str, &StoredTensor, Option<&str>)> {
        let mut keys: Vec<_> = (self.tensors.tensors.iter())
            .map(|t| (t.key.as_str(), t, None))
            .collect();
        for (alias, owner) in &self.aliases {
            if let Some(t) = self.tensor(owner) {
                keys.push((alias.as_str(), t, Some(owner.as_str())));
            }
        }
        keys.sort_by_key(|k| k.0);
        keys
    }

    /// Methods of the graph, empty when it is unreadable.
    pub fn methods(&self) -> impl Iterator<Item = ng::Method<'a>> + use<'a> {
        self.program.map(|p| p.methods()).into_iter().flatten()
    }

    /// Checks CRC-32s of the members small enough to check quickly; a
    /// mismatch is a warning, since the bytes are still shown as they are.
    fn check_members(&mut self) {
        for m in &self.members {
            if m.method != 0 {
                continue;
            }
            if m.name != PROGRAM_MEMBER && m.name != TENSORS_MEMBER && m.name != ALIASES_MEMBER {
                self.warnings
                    .push(format!("package member {} is not one ptefs knows", m.name));
            }
            if m.data.len <= CRC_CHECKED {
                let crc = crc32fast::hash(m.data.bytes(self.bytes));
                if crc != m.crc32 {
                    self.warnings.push(format!(
                        "package member {}: CRC-32 of the stored bytes is {crc:08x}, the central directory records {:08x}",
                        m.name, m.crc32
                    ));
                }
            }
        }
    }

    fn read_aliases(&self, span: Span) -> Result<BTreeMap<String, String>> {
        if span.len > ALIASES_LIMIT {
            return Err(Error::new(format!(
                "{ALIASES_MEMBER} is {} bytes, more than the {ALIASES_LIMIT} this reader accepts",
                span.len
            )));
        }
        let map: BTreeMap<String, String> = serde_json::from_slice(span.bytes(self.bytes))
            .map_err(|e| {
                Error::new(format!(
                    "{ALIASES_MEMBER} (at offset {}) is not a JSON object of strings: {e}",
                    span.offset
                ))
            })?;
        for (alias, owner) in &map {
            if !self.by_key.contains_key(owner) {
                return Err(Error::new(format!(
                    "{ALIASES_MEMBER}: alias {alias} names owner {owner}, which has no entry in {TENSORS_MEMBER}"
                )));
            }
            if self.by_key.contains_key(alias) {
                return Err(Error::new(format!(
                    "{ALIASES_MEMBER}: {alias} is both an alias and a key of {TENSORS_MEMBER}"
                )));
            }
        }
        Ok(map)
    }

    /// Package facts and per-method counts, for `inspect`.
    pub fn summary(&self) -> PackageSummary {
        summary::summarize(self)
    }
}
