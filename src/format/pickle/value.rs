//! What a read pickle holds: an arena of objects that refer to each other by
//! index, so memo references share one object and mutation works as in Python.

/// Most objects one pickle may make.
pub const MAX_OBJECTS: usize = 1 << 22;
/// Deepest nesting walked.
pub const MAX_DEPTH: usize = 128;

/// Index of an object in [`Pickle::objs`].
pub type Id = usize;

/// One object the pickle made.
#[derive(Debug, Clone, PartialEq)]
pub enum Obj {
    /// `None`.
    None,
    /// `True` or `False`.
    Bool(bool),
    /// An integer that fits 64 bits.
    Int(i64),
    /// A float.
    Float(f64),
    /// A `str` (or a protocol-2 byte string, read as Latin-1).
    Str(String),
    /// A `bytes`.
    Bytes(Vec<u8>),
    /// A list.
    List(Vec<Id>),
    /// A tuple.
    Tuple(Vec<Id>),
    /// A dict, in insertion order.
    Dict(Vec<(Id, Id)>),
    /// A set or frozenset.
    Set(Vec<Id>),
    /// An allowed global, by its qualified name (one of [`ALLOWED`](super::ALLOWED)).
    Global(&'static str),
    /// `func(*args)` recorded, not run: `REDUCE` or `NEWOBJ`.
    Call {
        /// The global called.
        func: &'static str,
        /// The argument tuple.
        args: Id,
    },
    /// `obj.__setstate__(state)` recorded, not run: `BUILD`.
    Build {
        /// The object.
        obj: Id,
        /// Its state.
        state: Id,
    },
    /// A persistent id (`BINPERSID`): in `torch.save`, a storage.
    Persistent(Id),
}

/// A read pickle: its objects and the one `STOP` returned.
#[derive(Debug, Clone)]
pub struct Pickle {
    /// Every object made, in the order made.
    pub objs: Vec<Obj>,
    /// The value returned.
    pub root: Id,
}

impl Pickle {
    /// The object `id`.
    pub fn get(&self, id: Id) -> &Obj {
        &self.objs[id]
    }
}
