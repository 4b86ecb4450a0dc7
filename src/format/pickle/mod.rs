//! A pickle reader that builds values and never runs anything.
//!
//! `torch.save` archives hold a pickle (`data.pkl`) whose objects are made
//! by calling a handful of torch and standard-library functions. Reading
//! one with Python's unpickler imports and calls whatever globals the file
//! names, so this reader only records the calls: a `GLOBAL` becomes
//! [`Obj::Global`] when its name is one [`ALLOWED`] lists and an error
//! naming it otherwise, and `REDUCE`/`NEWOBJ`/`BUILD` become
//! [`Obj::Call`]/[`Obj::Build`] nodes that the caller interprets. Nothing is
//! imported or executed.
//!
//! `serde-pickle`, the maintained Rust crate for the protocol, resolves
//! `GLOBAL`/`REDUCE` itself (refusing them or replacing them with `None`) and
//! exposes neither the call structure nor persistent ids, both of which a
//! `torch.save` archive is made of; hence this small opcode reader. It takes
//! the binary opcodes of protocols 2 to 5 and refuses the text ones of
//! protocols 0 and 1, which `torch.save` does not write.
//!
//! Limits: objects are kept in an arena (containers hold indices, so memo
//! references share and mutation works as in Python); the arena, the memo
//! and every length read are bounded by [`MAX_OBJECTS`] and the input's own
//! size, and walking a value is bounded by [`MAX_DEPTH`], so a deeply nested
//! or self-referencing pickle gives an error, not a stack overflow.

mod allowed;
mod json;
mod opcodes;
mod reader;
mod value;

pub use allowed::ALLOWED;
pub use reader::read;
pub use value::{Id, MAX_DEPTH, MAX_OBJECTS, Obj, Pickle};

#[cfg(test)]
mod tests;
