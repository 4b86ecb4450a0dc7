//! Joins: a profile's events with the instructions of the program that ran
//! ([`profile`]), an ETRecord's graph nodes with the same instructions
//! ([`etrecord`]), the two together, time per model module
//! ([`modules`]), and the outputs a run logged against the ETRecord's
//! reference outputs ([`numeric_gap`]). Above `format` and `meta`, below the tree and the
//! reports.

pub mod etrecord;
pub mod modules;
pub mod numeric_gap;
pub mod profile;
