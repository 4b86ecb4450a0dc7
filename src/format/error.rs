use std::fmt;

/// Why a file cannot be read: one sentence naming the field and, where it
/// helps, the byte offset. The caller adds the file name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(String);

/// Result of parsing.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// An error with the given message.
    pub fn new(message: impl Into<String>) -> Self {
        Error(message.into())
    }

    /// The same error with `context: ` in front.
    pub fn context(self, context: impl fmt::Display) -> Self {
        Error(format!("{context}: {}", self.0))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}
