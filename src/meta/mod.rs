//! What a program means beyond its bytes: which operators its methods
//! call, and (as it grows) who uses each value, checkpoint names, and
//! input/output and memory plans. Used by the tree builders and by the
//! `inspect` and `diff` reports; knows no files or commands.

pub mod external;
pub mod ops;
