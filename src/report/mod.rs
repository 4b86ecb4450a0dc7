//! Reports about whole files: `inspect` (what a file holds and what makes
//! it big) and `diff` (what differs between two). Each is a typed,
//! serialisable value; text and JSON are two renderings of it.

mod composition;
pub mod diff;
pub mod inspect;

pub use composition::Share;
