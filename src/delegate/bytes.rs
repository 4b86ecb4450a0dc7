//! Where a decoded payload's bytes are: inside the payload, or inside a
//! named-data entry (of the program or an attached data file).

use crate::format::Span;

/// A byte range a decoder found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Bytes<'a> {
    /// Inside the payload; the span is relative to its first byte.
    Payload(Span),
    /// Inside the named-data entry `key`; the span is relative to the
    /// entry's first byte.
    Named {
        /// The named-data key.
        key: &'a str,
        /// Where in the entry.
        span: Span,
    },
}

impl<'a> Bytes<'a> {
    /// The first `len` bytes of named-data entry `key`.
    pub fn named(key: &'a str, len: u64) -> Self {
        Bytes::Named {
            key,
            span: Span { offset: 0, len },
        }
    }

    /// Number of bytes.
    pub fn len(&self) -> u64 {
        self.span().len
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The span, relative to the payload or to the named-data entry.
    pub fn span(&self) -> Span {
        match *self {
            Bytes::Payload(s) | Bytes::Named { span: s, .. } => s,
        }
    }

    /// The named-data key, when the bytes are there.
    pub fn key(&self) -> Option<&'a str> {
        match *self {
            Bytes::Payload(_) => None,
            Bytes::Named { key, .. } => Some(key),
        }
    }

    /// The first `len` bytes (at most all of them).
    pub fn prefix(self, len: u64) -> Self {
        let cut = |s: Span| Span {
            len: len.min(s.len),
            ..s
        };
        match self {
            Bytes::Payload(s) => Bytes::Payload(cut(s)),
            Bytes::Named { key, span } => Bytes::Named {
                key,
                span: cut(span),
            },
        }
    }

    /// The first `need` bytes, or why there are fewer (`what` names them).
    pub fn take(self, need: u64, what: &str) -> Result<Self, String> {
        if self.len() < need {
            return Err(format!(
                "{what} needs {need} bytes, {} are stored",
                self.len()
            ));
        }
        Ok(self.prefix(need))
    }

    /// The bytes themselves: from `payload`, or from the entry `named`
    /// finds. `None` when the entry is missing or shorter than the span.
    pub fn resolve<'p>(&self, payload: &'p [u8], named: &dyn Lookup<'p>) -> Option<&'p [u8]> {
        let (whole, s) = match *self {
            Bytes::Payload(s) => (payload, s),
            Bytes::Named { key, span } => (named.bytes(key)?, span),
        };
        let start = usize::try_from(s.offset).ok()?;
        let end = usize::try_from(s.end()).ok()?;
        whole.get(start..end)
    }
}

/// Named-data entries by key, as the runtime looks them up: the program's
/// own first, then each attached data file's.
pub trait Lookup<'a> {
    /// The bytes of entry `key`.
    fn bytes(&self, key: &str) -> Option<&'a [u8]>;

    /// The length of entry `key`.
    fn len(&self, key: &str) -> Option<u64> {
        self.bytes(key).map(|b| b.len() as u64)
    }
}

/// No named data at all.
pub struct NoNamed;

impl<'a> Lookup<'a> for NoNamed {
    fn bytes(&self, _: &str) -> Option<&'a [u8]> {
        None
    }
}
