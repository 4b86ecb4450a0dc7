//! A fleet of files at once: the operator union of many programs
//! ([`ops`]), and the Parquet catalog of their files, tensors,
//! operators, delegates and check verdicts.

pub mod ops;
