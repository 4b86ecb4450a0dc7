//! What a program means beyond its bytes: which operators its methods
//! call, who uses each value (with argument names from PyTorch's operator
//! schemas), and input/output and memory plans. Used by the tree builders
//! and by the `inspect` and `diff` reports; knows no files or commands.

pub mod checkpoint;
pub mod dataflow;
pub mod etrecord_graph;
pub mod external;
pub mod io;
pub mod memory_plan;
pub mod oplist;
pub mod ops;
pub mod schemas;
pub mod training;
pub mod users;
