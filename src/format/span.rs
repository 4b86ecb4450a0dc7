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
            Some(end) => Err(Error::PastEnd {
                what: what(),
                offset,
                end,
                limit,
            }),
            None => Err(Error::Overflow {
                what: what(),
                offset,
                len,
            }),
        }
    }

    /// One past the last byte.
    pub fn end(&self) -> u64 {
        self.offset + self.len
    }

    /// The first `len` bytes of this span, checked to fit.
    pub fn prefix(&self, len: u64, what: impl FnOnce() -> String) -> Result<Span> {
        if len > self.len {
            return Err(Error::TooSmall {
                what: what(),
                needed: len,
                available: self.len,
                offset: self.offset,
            });
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

    /// Where the vector `inner` lies in `file`, or `None` when it is absent
    /// (a flatbuffer field that is not set) or, which verification rules
    /// out, not inside `file`. An absent vector has no place in the file, so
    /// it gets no span rather than an offset computed from some other
    /// allocation.
    pub fn of_vector(file: &[u8], inner: Option<&[u8]>) -> Option<Span> {
        let inner = inner?;
        let offset = (inner.as_ptr() as usize).checked_sub(file.as_ptr() as usize)?;
        let end = offset.checked_add(inner.len())?;
        (end <= file.len()).then_some(Span {
            offset: offset as u64,
            len: inner.len() as u64,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_are_located_and_absent_ones_have_no_span() {
        let file = [0u8; 16];
        assert_eq!(
            Span::of_vector(&file, Some(&file[4..10])),
            Some(Span { offset: 4, len: 6 })
        );
        assert_eq!(
            Span::of_vector(&file, Some(&file[16..])),
            Some(Span { offset: 16, len: 0 })
        );
        assert_eq!(Span::of_vector(&file, None), None);
        assert_eq!(Span::of_vector(&file, Some(&[][..])), None);
    }
}
