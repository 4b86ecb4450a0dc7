//! Reports about whole files: `inspect` (what a file holds and what makes
//! it big), `diff` (what differs between two) and `report` (where the
//! bytes go, what runs where, what the weights look like; [`summary`], and
//! its HTML [`page`]). Each is a typed, serialisable value; text, JSON and
//! HTML are renderings of it.

pub mod check;
mod composition;
pub mod diff;
pub mod inspect;
pub mod page;
pub mod stats;
pub mod stored;
pub mod summary;

pub use composition::Share;
