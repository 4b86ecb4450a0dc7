//! The fixed parts of the zip records read here (signatures and lengths)
//! and the little-endian reader of their fields.

use super::super::super::{Result, Span};

pub(super) const LOCAL_SIG: u32 = 0x0403_4b50;
pub(super) const CENTRAL_SIG: u32 = 0x0201_4b50;
pub(super) const EOCD_SIG: u32 = 0x0605_4b50;
pub(super) const ZIP64_EOCD_SIG: u32 = 0x0606_4b50;
pub(super) const ZIP64_LOCATOR_SIG: u32 = 0x0706_4b50;
pub(super) const EOCD_LEN: usize = 22;
pub(super) const CENTRAL_LEN: usize = 46;
pub(super) const LOCAL_LEN: usize = 30;
pub(super) const ZIP64_LOCATOR_LEN: usize = 20;
pub(super) const ZIP64_EOCD_LEN: usize = 56;
/// The zip64 extended information extra field.
pub(super) const ZIP64_EXTRA: u16 = 0x0001;
/// General purpose flag bit 0: the member is encrypted.
pub(super) const ENCRYPTED: u16 = 1;

/// Little-endian reads at checked positions of `bytes`.
pub(super) struct Reader<'a> {
    pub(super) bytes: &'a [u8],
}

impl Reader<'_> {
    pub(super) fn u16(&self, at: u64) -> u16 {
        let at = at as usize;
        u16::from_le_bytes([self.bytes[at], self.bytes[at + 1]])
    }
    pub(super) fn u32(&self, at: u64) -> u32 {
        let at = at as usize;
        u32::from_le_bytes(self.bytes[at..at + 4].try_into().unwrap_or_default())
    }
    pub(super) fn u64(&self, at: u64) -> u64 {
        let at = at as usize;
        u64::from_le_bytes(self.bytes[at..at + 8].try_into().unwrap_or_default())
    }
    /// `len` bytes at `at`, checked to lie in the file.
    pub(super) fn span(&self, at: u64, len: u64, what: impl FnOnce() -> String) -> Result<Span> {
        Span::checked(at, len, self.bytes.len() as u64, what)
    }
}
