//! The zip container of a `.ptn`: where each member's stored bytes lie.
//!
//! A package is served as byte ranges of the file itself, so what is needed
//! from the zip is, per member, the exact span of its data in the file and
//! proof that the span holds the member's bytes as they are (method 0,
//! "stored"). General zip crates are built around reading members through a
//! decompressing `Read`, and the one that exposes a member's data offset
//! (`zip`) brings deflate, bzip2, zstd and AES with it by default while
//! tolerating structures this reader must refuse (members overlapping each
//! other or the central directory). The parts needed here are three fixed
//! records and the zip64 extra field, so this module reads them itself:
//! end of central directory (and its zip64 twin), the central directory, and
//! each member's local header, with every offset checked against the file
//! size before use and every error naming the record and offset at fault.

mod central;
mod end;
mod local;
mod member;
mod plan;
mod read;
mod records;

pub use member::Member;
pub use plan::plan;
pub use read::members;
