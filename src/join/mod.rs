//! Joins: a profile's events with the instructions of the program that ran
//! ([`profile`]), an ETRecord's graph nodes with the same instructions
//! ([`etrecord`]), and the two together, time per model module
//! ([`modules`]). Above `format` and `meta`, below the tree and the
//! reports.

pub mod etrecord;
pub mod modules;
pub mod profile;
