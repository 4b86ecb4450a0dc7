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

mod plan;

use super::super::{Error, Result, Span};
pub use plan::plan;

const LOCAL_SIG: u32 = 0x0403_4b50;
const CENTRAL_SIG: u32 = 0x0201_4b50;
const EOCD_SIG: u32 = 0x0605_4b50;
const ZIP64_EOCD_SIG: u32 = 0x0606_4b50;
const ZIP64_LOCATOR_SIG: u32 = 0x0706_4b50;
const EOCD_LEN: usize = 22;
const CENTRAL_LEN: usize = 46;
const LOCAL_LEN: usize = 30;
const ZIP64_LOCATOR_LEN: usize = 20;
const ZIP64_EOCD_LEN: usize = 56;
/// The zip64 extended information extra field.
const ZIP64_EXTRA: u16 = 0x0001;
/// General purpose flag bit 0: the member is encrypted.
const ENCRYPTED: u16 = 1;

/// One member of the archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// The name recorded in the central directory.
    pub name: String,
    /// Compression method (0 is stored; 8 is deflate).
    pub method: u16,
    /// CRC-32 the central directory records for the uncompressed bytes.
    pub crc32: u32,
    /// Size once uncompressed.
    pub uncompressed_size: u64,
    /// Where the local header starts.
    pub header_offset: u64,
    /// The member's data as stored in the file (compressed size long).
    pub data: Span,
    /// Where this member's entry starts in the central directory.
    pub central_offset: u64,
}

impl Member {
    /// The data span when the member is stored, or an error saying why its
    /// bytes cannot be served as a range of the file.
    pub fn stored(&self) -> Result<Span> {
        if self.method != 0 {
            return Err(Error::new(format!(
                "zip member {} is compressed (method {}, {}); ptefs serves members as byte ranges \
                 of the package and reads only stored members (method 0), as ExecuTorch writes them",
                self.name,
                self.method,
                method_name(self.method)
            )));
        }
        if self.uncompressed_size != self.data.len {
            return Err(Error::new(format!(
                "zip member {} is stored but its sizes differ: {} bytes stored, {} uncompressed",
                self.name, self.data.len, self.uncompressed_size
            )));
        }
        Ok(self.data)
    }
}

fn method_name(method: u16) -> &'static str {
    match method {
        8 => "deflate",
        9 => "deflate64",
        12 => "bzip2",
        14 => "lzma",
        93 => "zstandard",
        95 => "xz",
        99 => "AES encrypted",
        _ => "unknown method",
    }
}

/// Little-endian reads at checked positions of `bytes`.
struct Reader<'a> {
    bytes: &'a [u8],
}

impl Reader<'_> {
    fn u16(&self, at: u64) -> u16 {
        let at = at as usize;
        u16::from_le_bytes([self.bytes[at], self.bytes[at + 1]])
    }
    fn u32(&self, at: u64) -> u32 {
        let at = at as usize;
        u32::from_le_bytes(self.bytes[at..at + 4].try_into().unwrap_or_default())
    }
    fn u64(&self, at: u64) -> u64 {
        let at = at as usize;
        u64::from_le_bytes(self.bytes[at..at + 8].try_into().unwrap_or_default())
    }
    /// `len` bytes at `at`, checked to lie in the file.
    fn span(&self, at: u64, len: u64, what: impl FnOnce() -> String) -> Result<Span> {
        Span::checked(at, len, self.bytes.len() as u64, what)
    }
}

/// Where the central directory is and how many entries it claims.
struct Directory {
    offset: u64,
    size: u64,
    entries: u64,
}

/// Reads every member's location, checked: records in the file, names
/// unique and UTF-8, local headers agreeing with the central directory,
/// and no two members (or a member and the central directory) sharing
/// bytes.
pub fn members(bytes: &[u8]) -> Result<Vec<Member>> {
    let r = Reader { bytes };
    let dir = directory(&r)?;
    let cd = r.span(dir.offset, dir.size, || "zip central directory".into())?;
    // Each entry takes at least CENTRAL_LEN bytes, which bounds the loop
    // and the allocation by the directory's real size.
    if dir.entries > cd.len / CENTRAL_LEN as u64 {
        return Err(Error::new(format!(
            "zip end of central directory claims {} members, but the central directory at offset {} is only {} bytes",
            dir.entries, cd.offset, cd.len
        )));
    }
    let mut out = Vec::with_capacity(dir.entries as usize);
    let mut at = cd.offset;
    for i in 0..dir.entries {
        let (member, next) = central_entry(&r, at, cd.end(), i)?;
        if out.iter().any(|m: &Member| m.name == member.name) {
            return Err(Error::new(format!(
                "zip member {} appears twice in the central directory (second entry at offset {at})",
                member.name
            )));
        }
        out.push(member);
        at = next;
    }
    check_disjoint(&out, cd)?;
    Ok(out)
}

fn directory(r: &Reader<'_>) -> Result<Directory> {
    let at = end_record(r)?;
    let entries16 = r.u16(at + 10);
    let size32 = r.u32(at + 12);
    let offset32 = r.u32(at + 16);
    if r.u16(at + 4) != 0 || r.u16(at + 6) != 0 || r.u16(at + 8) != entries16 {
        return Err(Error::new(format!(
            "zip end of central directory at offset {at} describes a multi-disk archive"
        )));
    }
    if entries16 != 0xffff && size32 != u32::MAX && offset32 != u32::MAX {
        return Ok(Directory {
            offset: offset32.into(),
            size: size32.into(),
            entries: entries16.into(),
        });
    }
    zip64_directory(r, at)
}

/// Where the end of central directory record is.
fn end_record(r: &Reader<'_>) -> Result<u64> {
    let len = r.bytes.len() as u64;
    // The record sits at the end, followed only by its comment (at most
    // 65535 bytes): search that window from the end.
    let lowest = len.saturating_sub((EOCD_LEN + 0xffff) as u64);
    let mut at = len.checked_sub(EOCD_LEN as u64).ok_or_else(|| {
        Error::new(format!(
            "file is {len} bytes, too short for a zip end of central directory record ({EOCD_LEN} bytes)"
        ))
    })?;
    loop {
        if r.u32(at) == EOCD_SIG && at + EOCD_LEN as u64 + u64::from(r.u16(at + 20)) == len {
            return Ok(at);
        }
        if at == lowest {
            return Err(Error::new(
                "no zip end of central directory record in the last 65557 bytes of the file",
            ));
        }
        at -= 1;
    }
}

fn zip64_directory(r: &Reader<'_>, eocd: u64) -> Result<Directory> {
    let locator = eocd.checked_sub(ZIP64_LOCATOR_LEN as u64).ok_or_else(|| {
        Error::new(format!(
            "zip end of central directory at offset {eocd} asks for zip64 but there is no room for its locator"
        ))
    })?;
    if r.u32(locator) != ZIP64_LOCATOR_SIG {
        return Err(Error::new(format!(
            "zip end of central directory at offset {eocd} asks for zip64 but no zip64 locator precedes it (offset {locator})"
        )));
    }
    let at = r.u64(locator + 8);
    r.span(at, ZIP64_EOCD_LEN as u64, || {
        format!("zip64 end of central directory named by the locator at offset {locator}")
    })?;
    if r.u32(at) != ZIP64_EOCD_SIG {
        return Err(Error::new(format!(
            "zip64 end of central directory at offset {at}: wrong signature"
        )));
    }
    let entries = r.u64(at + 32);
    if r.u64(at + 24) != entries {
        return Err(Error::new(format!(
            "zip64 end of central directory at offset {at} describes a multi-disk archive"
        )));
    }
    Ok(Directory {
        entries,
        size: r.u64(at + 40),
        offset: r.u64(at + 48),
    })
}

/// A central directory entry's own fields.
struct Record {
    name: String,
    method: u16,
    crc32: u32,
    compressed: u64,
    uncompressed: u64,
    header_offset: u64,
}

/// The central directory entry at `at` (the `index`-th), checked up to and
/// including its local header; returns it and where the next entry starts.
fn central_entry(r: &Reader<'_>, at: u64, end: u64, index: u64) -> Result<(Member, u64)> {
    let (rec, next) = central_record(r, at, end, index)?;
    let data = local_data(r, rec.header_offset, rec.compressed, rec.method, &rec.name)?;
    let member = Member {
        name: rec.name,
        method: rec.method,
        crc32: rec.crc32,
        uncompressed_size: rec.uncompressed,
        header_offset: rec.header_offset,
        data,
        central_offset: at,
    };
    Ok((member, next))
}

/// The fields of the central directory entry at `at` and where the next
/// entry starts.
fn central_record(r: &Reader<'_>, at: u64, end: u64, index: u64) -> Result<(Record, u64)> {
    let what = || format!("zip central directory entry {index}");
    let fixed = Span::checked(at, CENTRAL_LEN as u64, end, what)?;
    if r.u32(at) != CENTRAL_SIG {
        return Err(Error::new(format!(
            "zip central directory entry {index} at offset {at}: wrong signature"
        )));
    }
    let flags = r.u16(at + 8);
    let method = r.u16(at + 10);
    let crc32 = r.u32(at + 16);
    let mut compressed = u64::from(r.u32(at + 20));
    let mut uncompressed = u64::from(r.u32(at + 24));
    let name_len = u64::from(r.u16(at + 28));
    let extra_len = u64::from(r.u16(at + 30));
    let comment_len = u64::from(r.u16(at + 32));
    let mut header_offset = u64::from(r.u32(at + 42));
    let var = Span::checked(fixed.end(), name_len + extra_len + comment_len, end, || {
        format!("zip central directory entry {index} (name, extra field and comment)")
    })?;
    let name_span = var.prefix(name_len, what)?;
    let name = std::str::from_utf8(name_span.bytes(r.bytes))
        .map_err(|_| {
            Error::new(format!(
                "zip central directory entry {index} at offset {at}: name is not UTF-8"
            ))
        })?
        .to_owned();
    let extra = var.sub(name_len, extra_len, what)?;
    let mut wide = [
        (uncompressed == u64::from(u32::MAX)).then_some(&mut uncompressed),
        (compressed == u64::from(u32::MAX)).then_some(&mut compressed),
        (header_offset == u64::from(u32::MAX)).then_some(&mut header_offset),
    ];
    if wide.iter().any(Option::is_some) {
        zip64_extra(r, extra, &mut wide, &name)?;
    }
    if flags & ENCRYPTED != 0 {
        return Err(Error::new(format!("zip member {name} is encrypted")));
    }
    let rec = Record {
        name,
        method,
        crc32,
        compressed,
        uncompressed,
        header_offset,
    };
    Ok((rec, var.end()))
}

/// Fills the 0xFFFFFFFF fields from the zip64 extra field, in the order the
/// format gives them.
fn zip64_extra(
    r: &Reader<'_>,
    extra: Span,
    wide: &mut [Option<&mut u64>],
    name: &str,
) -> Result<()> {
    let mut at = extra.offset;
    while at + 4 <= extra.end() {
        let id = r.u16(at);
        let len = u64::from(r.u16(at + 2));
        let body = Span::checked(at + 4, len, extra.end(), || {
            format!("zip member {name}: extra field {id:#06x}")
        })?;
        if id == ZIP64_EXTRA {
            let mut p = body.offset;
            for field in wide.iter_mut().flatten() {
                if p + 8 > body.end() {
                    return Err(Error::new(format!(
                        "zip member {name}: zip64 extra field at offset {at} is too short for the sizes it must hold"
                    )));
                }
                **field = r.u64(p);
                p += 8;
            }
            return Ok(());
        }
        at = body.end();
    }
    Err(Error::new(format!(
        "zip member {name}: sizes or offset are 0xFFFFFFFF but there is no zip64 extra field"
    )))
}

/// Checks the local header at `at` and returns the span of the data after it.
fn local_data(r: &Reader<'_>, at: u64, len: u64, method: u16, name: &str) -> Result<Span> {
    r.span(at, LOCAL_LEN as u64, || {
        format!("zip member {name}: local header")
    })?;
    if r.u32(at) != LOCAL_SIG {
        return Err(Error::new(format!(
            "zip member {name}: no local header signature at offset {at}"
        )));
    }
    let local_method = r.u16(at + 8);
    if local_method != method {
        return Err(Error::new(format!(
            "zip member {name}: local header at offset {at} says method {local_method}, the central directory {method}"
        )));
    }
    let name_len = u64::from(r.u16(at + 26));
    let extra_len = u64::from(r.u16(at + 28));
    let local_name = r.span(at + LOCAL_LEN as u64, name_len, || {
        format!("zip member {name}: name in the local header")
    })?;
    if local_name.bytes(r.bytes) != name.as_bytes() {
        return Err(Error::new(format!(
            "zip member {name}: the local header at offset {at} names it {:?}",
            String::from_utf8_lossy(local_name.bytes(r.bytes))
        )));
    }
    let start = local_name.end() + extra_len;
    r.span(start, len, || format!("zip member {name}: data"))
}

/// Members may not share bytes with each other or with the central
/// directory: overlapping members are how a zip makes one byte range mean
/// two things, and nothing served here should.
fn check_disjoint(members: &[Member], cd: Span) -> Result<()> {
    let mut ranges: Vec<(u64, u64, &str)> = members
        .iter()
        .map(|m| (m.header_offset, m.data.end(), m.name.as_str()))
        .collect();
    ranges.push((cd.offset, cd.end(), "the central directory"));
    ranges.sort_unstable();
    for pair in ranges.windows(2) {
        let ((a_start, a_end, a), (b_start, _, b)) = (pair[0], pair[1]);
        if b_start < a_end {
            return Err(Error::new(format!(
                "zip member {b} (from offset {b_start}) overlaps {a} (bytes {a_start}..{a_end})"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_what_is_not_a_zip() {
        let e = members(b"short").unwrap_err().to_string();
        assert!(e.contains("too short"), "{e}");
        let e = members(&[0u8; 100]).unwrap_err().to_string();
        assert!(e.contains("no zip end of central directory"), "{e}");
    }

    #[test]
    fn compressed_members_are_refused_by_name() {
        let m = Member {
            name: "program.safetensors".into(),
            method: 8,
            crc32: 0,
            uncompressed_size: 10,
            header_offset: 0,
            data: Span { offset: 40, len: 4 },
            central_offset: 0,
        };
        let e = m.stored().unwrap_err().to_string();
        assert!(
            e.contains("program.safetensors") && e.contains("deflate"),
            "{e}"
        );
    }
}
