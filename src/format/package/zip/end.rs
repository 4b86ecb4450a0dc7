//! The end of central directory record (and its zip64 twin): where the
//! central directory is and how many entries it claims.

use super::super::super::{Error, Result};
use super::records::{
    EOCD_LEN, EOCD_SIG, Reader, ZIP64_EOCD_LEN, ZIP64_EOCD_SIG, ZIP64_LOCATOR_LEN,
    ZIP64_LOCATOR_SIG,
};

/// Where the central directory is and how many entries it claims.
pub(super) struct Directory {
    pub(super) offset: u64,
    pub(super) size: u64,
    pub(super) entries: u64,
}

pub(super) fn directory(r: &Reader<'_>) -> Result<Directory> {
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
pub(super) fn end_record(r: &Reader<'_>) -> Result<u64> {
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
