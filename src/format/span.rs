use super::{Error, Result};

/// A byte range of a source file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Span {
    /// Offset of the first byte.
    pub offset: u64,
    /// Number of bytes.
    pub len: u64,
}

impl Span {
    /// `len` bytes at `offset`, checked to end within `limit`; `what` names
    /// the range in the error.
    pub fn checked(
        offset: u64,
        len: u64,
        limit: u64,
        what: impl FnOnce() -> String,
    ) -> Result<Span> {
        match offset.checked_add(len) {
            Some(end) if end <= limit => Ok(Span { offset, len }),
            Some(end) => Err(Error::new(format!(
                "{}: bytes {offset}..{end} extend past the end at {limit}",
                what()
            ))),
            None => Err(Error::new(format!(
                "{}: offset {offset} + length {len} overflows",
                what()
            ))),
        }
    }

    /// One past the last byte.
    pub fn end(&self) -> u64 {
        self.offset + self.len
    }

    /// The first `len` bytes of this span, checked to fit.
    pub fn prefix(&self, len: u64, what: impl FnOnce() -> String) -> Result<Span> {
        if len > self.len {
            return Err(Error::new(format!(
                "{}: needs {len} bytes but only {} are available at file offset {}",
                what(),
                self.len,
                self.offset
            )));
        }
        Ok(Span {
            offset: self.offset,
            len,
        })
    }

    /// `len` bytes at `offset` within this span, checked to fit.
    pub fn sub(&self, offset: u64, len: u64, what: impl FnOnce() -> String) -> Result<Span> {
        let inner = Span::checked(offset, len, self.len, what)?;
        Ok(Span {
            offset: self.offset + inner.offset,
            len,
        })
    }

    /// The bytes of this span in `file`. Spans come from `checked` against
    /// the file length, so this cannot go out of bounds for that file.
    pub fn bytes<'a>(&self, file: &'a [u8]) -> &'a [u8] {
        let start = usize::try_from(self.offset)
            .unwrap_or(usize::MAX)
            .min(file.len());
        let end = usize::try_from(self.end())
            .unwrap_or(usize::MAX)
            .min(file.len());
        &file[start..end]
    }

    /// Where `inner` (a subslice of `file`) starts in `file`.
    pub fn of_subslice(file: &[u8], inner: &[u8]) -> Span {
        let offset = (inner.as_ptr() as usize).wrapping_sub(file.as_ptr() as usize);
        Span {
            offset: offset as u64,
            len: inner.len() as u64,
        }
    }
}
