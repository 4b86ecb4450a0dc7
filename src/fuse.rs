//! fuse
