//! Parsing and validation of `.pte`, `.ptd`, `.bpte`, `.ptn` and `.etdp`
//! files and ETRecords.
//!
//! Everything here works on a byte slice (usually a memory map) and returns
//! views that borrow it. Every offset and length taken from the file is
//! checked before use; malformed input yields an [`Error`] naming what is
//! wrong and where, never a panic.

mod bundled;
mod checked_index;
mod data;
mod error;
pub mod etdump;
pub mod etrecord;
pub mod fetch_plan;
mod header;
pub mod le;
pub mod lookalike;
pub mod package;
pub mod pickle;
mod program;
pub mod scalar;
mod shapes;
mod span;
pub mod strings;
mod verify;

pub use bundled::{BundledFile, BundledTensor, TestCase, TestValue};
pub use data::{DataEntry, DataFile, TensorLayout};
pub use error::{Error, Result};
pub use etdump::ProfileFile;
pub use etrecord::EtRecordFile;
pub use fetch_plan::Ranges;
pub use header::{PtdHeader, PteExtendedHeader, PteHeader};
pub use package::PackageFile;
pub use program::{
    Delegate, MethodInfo, NAME_LIMIT, NamedBlob, ProgramFile, TensorData, TensorInfo, clip,
    operator_name, tensor_nbytes,
};
pub use span::Span;
pub use strings::Name;

/// What a file is, decided by the magic at byte 4 rather than by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `ET??`: an ExecuTorch program.
    Program,
    /// `FT??`: a FlatTensor data file.
    Data,
    /// `BP??`: a bundled program.
    Bundled,
    /// `PK\x03\x04` at byte 0: a native program package (a zip).
    Package,
    /// `ED00` at byte 8 (after a size prefix): an ETDump, the runtime's
    /// profile.
    Profile,
}

impl Kind {
    /// The usual file extension, for messages.
    pub fn extension(self) -> &'static str {
        match self {
            Kind::Program => "pte",
            Kind::Data => "ptd",
            Kind::Bundled => "bpte",
            Kind::Package => "ptn",
            Kind::Profile => "etdp",
        }
    }
}

/// Identifies a file by its magic bytes.
pub fn sniff(bytes: &[u8]) -> Result<Kind> {
    if bytes.starts_with(b"PK\x03\x04") {
        return Ok(Kind::Package);
    }
    if bytes.len() < 8 {
        return Err(Error::TooShort {
            what: "file",
            len: bytes.len() as u64,
            needed: "a program or data file header (8 bytes)",
        });
    }
    let magic = &bytes[4..8];
    let digits = magic[2].is_ascii_digit() && magic[3].is_ascii_digit();
    match (&magic[..2], digits) {
        (b"ET", true) => Ok(Kind::Program),
        (b"FT", true) => Ok(Kind::Data),
        (b"BP", true) => Ok(Kind::Bundled),
        _ if bytes.get(8..12) == Some(b"ED00") => Ok(Kind::Profile),
        _ => Err(Error::NotExecuTorch {
            magic: header::show_magic(magic),
            hint: lookalike::of_bytes(bytes).map_or_else(String::new, |h| format!("; {h}")),
        }),
    }
}

/// A parsed file of any kind.
#[derive(Debug)]
pub enum Parsed<'a> {
    /// A `.pte`.
    Program(ProgramFile<'a>),
    /// A `.ptd`.
    Data(DataFile<'a>),
    /// A `.bpte`.
    Bundled(BundledFile<'a>),
    /// A `.ptn`.
    Package(PackageFile<'a>),
    /// An `.etdp`.
    Profile(ProfileFile<'a>),
    /// An ETRecord (a zip with an `ETRECORD_V0` member).
    EtRecord(EtRecordFile<'a>),
}

/// Parses and validates a file of any kind, chosen by its magic.
pub fn parse(bytes: &[u8]) -> Result<Parsed<'_>> {
    Ok(match sniff(bytes)? {
        Kind::Program => Parsed::Program(ProgramFile::parse(bytes)?),
        Kind::Data => Parsed::Data(DataFile::parse(bytes)?),
        Kind::Bundled => Parsed::Bundled(BundledFile::parse(bytes)?),
        Kind::Package if etrecord::is_etrecord(bytes) => {
            Parsed::EtRecord(EtRecordFile::parse(bytes)?)
        }
        Kind::Package => Parsed::Package(PackageFile::parse(bytes)?),
        Kind::Profile => Parsed::Profile(ProfileFile::parse(bytes)?),
    })
}

impl<'a> Parsed<'a> {
    /// The whole file's bytes.
    pub fn bytes(&self) -> &'a [u8] {
        match self {
            Parsed::Program(p) => p.bytes,
            Parsed::Data(d) => d.bytes,
            Parsed::Bundled(b) => b.bytes,
            Parsed::Package(p) => p.bytes,
            Parsed::Profile(p) => p.bytes,
            Parsed::EtRecord(r) => r.bytes,
        }
    }

    /// Problems that do not stop the file from being shown (an unexpected
    /// identifier, a nonzero storage offset, ...), one sentence each.
    pub fn warnings(&self) -> &[String] {
        match self {
            Parsed::Program(p) => &p.warnings,
            Parsed::Data(d) => &d.warnings,
            Parsed::Bundled(b) => &b.warnings,
            Parsed::Package(p) => &p.warnings,
            Parsed::Profile(p) => &p.warnings,
            Parsed::EtRecord(r) => &r.warnings,
        }
    }
}
