use std::fmt;

/// Why a file cannot be read. Each variant names the field or range at
/// fault and, where there is one, the byte offset; the caller adds the file
/// name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A file or header shorter than its fixed part.
    #[error("{what} is {len} bytes, too short for {needed}")]
    TooShort {
        /// What is too short (`program`, `file`).
        what: &'static str,
        /// Its length.
        len: u64,
        /// What it must hold, with the size.
        needed: &'static str,
    },
    /// A header that the file ends inside.
    #[error(
        "{what} at byte {at} is cut off: the file ends at byte {len}, the header needs bytes {at}..{needed}"
    )]
    CutOff {
        /// The header.
        what: &'static str,
        /// Where it starts.
        at: u64,
        /// The file's length.
        len: u64,
        /// Where it would end.
        needed: u64,
    },
    /// A sum of header fields that ends past the file or overflows.
    #[error("{what} = {a} + {b} {}", match end {
        Some(end) => format!("= {end}, past the end of the file at {len}"),
        None => "overflows".to_owned(),
    })]
    HeaderSum {
        /// The sum and the fields in it, with their bytes.
        what: &'static str,
        /// The first term.
        a: u64,
        /// The second term.
        b: u64,
        /// The sum, `None` when it overflows.
        end: Option<u64>,
        /// The file's length.
        len: u64,
    },
    /// A header field whose value cannot be right.
    #[error("{field} is {value}, {problem}")]
    HeaderField {
        /// The field, with its bytes (`extended header length (bytes 12..16)`).
        field: &'static str,
        /// Its value as read.
        value: String,
        /// Why it is wrong, with the limit it breaks.
        problem: String,
    },
    /// A flatbuffer that fails verification.
    #[error("{what} (bytes 0..{len}) fails verification: {detail}")]
    Verification {
        /// Which flatbuffer.
        what: &'static str,
        /// Its length.
        len: usize,
        /// The verifier's report: the range at fault and the path to it.
        detail: String,
    },
    /// A range that ends past the end of what holds it.
    #[error("{what}: bytes {offset}..{end} extend past the end at {limit}")]
    PastEnd {
        /// The range.
        what: String,
        /// Its first byte.
        offset: u64,
        /// One past its last byte.
        end: u64,
        /// Where the holder ends.
        limit: u64,
    },
    /// A range whose end does not fit in 64 bits.
    #[error("{what}: offset {offset} + length {len} overflows")]
    Overflow {
        /// The range.
        what: String,
        /// Its offset.
        offset: u64,
        /// Its length.
        len: u64,
    },
    /// A range shorter than the bytes it must hold.
    #[error(
        "{what}: needs {needed} bytes but only {available} are available at file offset {offset}"
    )]
    TooSmall {
        /// What needs the bytes.
        what: String,
        /// How many it needs.
        needed: u64,
        /// How many there are.
        available: u64,
        /// Where the range starts.
        offset: u64,
    },
    /// An index into a vector of the flatbuffer that is out of range.
    #[error("{what} index {index} is out of range ({len} {items})")]
    Index {
        /// The vector.
        what: String,
        /// The index.
        index: u64,
        /// The vector's length.
        len: u64,
        /// What the vector holds (`entries`, `segments`).
        items: &'static str,
    },
    /// Bytes 4..8 that name no ExecuTorch format.
    #[error(
        "not an ExecuTorch file: bytes 4..8 are {magic}, expected ET?? (program), FT?? (data) or BP?? (bundled program){hint}"
    )]
    NotExecuTorch {
        /// The bytes, as text or hex.
        magic: String,
        /// What the file looks like instead (`; it looks like …`), or
        /// nothing.
        hint: String,
    },
    /// Tensor sizes that give no byte count.
    #[error("sizes {sizes} {problem}")]
    Sizes {
        /// The sizes (the first few, for a long shape).
        sizes: String,
        /// What is wrong with them.
        problem: String,
    },
    /// Any other field whose value the format does not allow, named in
    /// the message.
    #[error("{0}")]
    Field(String),
    /// An error inside a part of the file, named by `context`.
    #[error("{context}: {source}")]
    In {
        /// The part (`method 0 ("forward")`, `value 3`).
        context: String,
        /// What is wrong there.
        source: Box<Error>,
    },
}

/// Result of parsing.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// A field error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        Error::Field(message.into())
    }

    /// The byte offset in the file where the fault is, where the error
    /// names one.
    pub fn offset(&self) -> Option<u64> {
        match self {
            Error::CutOff { at, .. } => Some(*at),
            Error::PastEnd { offset, .. }
            | Error::Overflow { offset, .. }
            | Error::TooSmall { offset, .. } => Some(*offset),
            Error::In { source, .. } => source.offset(),
            _ => None,
        }
    }

    /// The same error inside `context`.
    pub fn context(self, context: impl fmt::Display) -> Self {
        Error::In {
            context: context.to_string(),
            source: Box::new(self),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_fields_and_offsets() {
        let sum = |end| Error::HeaderSum {
            what: "segment end (bytes 32..40 + bytes 40..48)",
            a: 100,
            b: 50,
            end,
            len: 120,
        };
        assert_eq!(
            sum(Some(150)).to_string(),
            "segment end (bytes 32..40 + bytes 40..48) = 100 + 50 = 150, past the end of the file at 120"
        );
        assert_eq!(
            sum(None).to_string(),
            "segment end (bytes 32..40 + bytes 40..48) = 100 + 50 overflows"
        );
        let inner = Error::Index {
            what: "constant_buffer".into(),
            index: 9,
            len: 2,
            items: "entries",
        };
        assert_eq!(
            inner
                .context("value 3")
                .context("method 0 (\"forward\")")
                .to_string(),
            "method 0 (\"forward\"): value 3: constant_buffer index 9 is out of range (2 entries)"
        );
    }
}
