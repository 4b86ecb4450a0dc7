//! The integration tests, one binary: each module is what was once its own
//! test file; `common` holds their helpers and `writer` (shared with the
//! examples) writes the files no fixture covers.

mod common;
#[path = "../writer/mod.rs"]
mod writer;

mod agreement;
mod aoti_views;
mod auto_data;
mod auto_data_delegates;
mod backend;
mod bad_input;
mod changes;
mod check;
mod checkpoint_names;
mod cli;
mod constants_index;
mod delegate_dot;
mod diff;
mod doc_examples;
mod doc_links;
mod edit_fs;
mod edit_journal;
mod edit_mount;
mod edit_oracle;
mod edit_pack;
mod edit_safety;
mod edit_set;
mod etdump;
mod etdump_join;
mod etrecord;
mod etrecord_models;
mod fetch_plans;
mod fs;
mod hidden_characters;
mod index;
mod inspect;
mod links;
mod listing_cost;
mod load;
mod meta;
mod mount;
mod mutations;
mod names;
mod numpy;
mod odd_inputs;
mod ops;
mod oracles;
mod package;
mod package_hostile;
mod package_mount;
mod package_writer;
mod progress;
mod read_modes;
mod remote;
mod report;
mod report_files;
mod resources;
mod secrets;
mod sources;
mod tables;
mod truncate_rendering;
mod weights;
mod workflows;
mod writer_features;
mod writer_roundtrip;
