//! The nodes of a tree: directories with their named children, files
//! with their content, and the types and shapes of tensor files.

use super::{Content, Ino};

/// A node of the tree: a directory or a file. A file may have several names
/// (hard links: the same bytes seen at two paths); its first name is the
/// one [`super::Tree::path`] gives.
#[derive(Debug)]
pub struct Node {
    /// The directory holding the node's first name (the root is its own
    /// parent).
    pub parent: Ino,
    /// Where that name stands among the parent's entries.
    pub(super) slot: u32,
    /// Directory or file.
    pub kind: NodeKind,
}

/// A name in a directory, and the node it names.
#[derive(Debug)]
pub struct Child {
    /// The name.
    pub name: Box<str>,
    /// What it names.
    pub ino: Ino,
}

/// What a node is.
#[derive(Debug)]
pub enum NodeKind {
    /// A directory with its entries sorted by name.
    Dir(Vec<Child>),
    /// A regular file.
    File(File),
}

/// A regular file.
#[derive(Debug)]
pub struct File {
    /// The bytes.
    pub content: Content,
    /// For a tensor's files, its entry in the tree's tensor table ([`super::Tree::tensor_meta`]).
    pub tensor: Option<u32>,
}

/// A tensor file's element type, in the vocabulary of what stores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dtype {
    /// A program or data file tensor (`FLOAT`).
    Scalar(crate::schema::ScalarType),
    /// A delegate's type: its own name (`xnn_datatype_fp32`, `float32`
    /// for quantization scales), and the scalar type its stored bytes are
    /// read as where they are plain numbers NumPy reads as they are.
    Named {
        /// The delegate's name for the type.
        name: &'static str,
        /// The elements the stored bytes hold, where that is a scalar type.
        element: Option<crate::schema::ScalarType>,
    },
}

impl Dtype {
    /// Whether two types are the same type by name: a delegate's type
    /// stays itself whether or not a file of it has a NumPy view.
    pub fn same_type(self, other: Dtype) -> bool {
        match (self, other) {
            (Dtype::Scalar(a), Dtype::Scalar(b)) => a == b,
            (Dtype::Named { name: a, .. }, Dtype::Named { name: b, .. }) => a == b,
            _ => false,
        }
    }

    /// The scalar type of the stored elements, where they are one.
    pub fn element(self) -> Option<crate::schema::ScalarType> {
        match self {
            Dtype::Scalar(t) => Some(t),
            Dtype::Named { element, .. } => element,
        }
    }

    /// The name the extended attributes and reports show.
    pub fn name(self) -> String {
        match self {
            Dtype::Scalar(t) => crate::format::scalar::name(t),
            Dtype::Named { name, .. } => name.to_owned(),
        }
    }
}

/// Type and shape of a tensor, shared by its `.bin` and `.npy`.
#[derive(Debug)]
pub struct TensorMeta {
    /// Element type.
    pub dtype: Dtype,
    /// Logical sizes (shared with the tensor's other files and values).
    pub sizes: std::sync::Arc<[i64]>,
    /// The dim order, where it is not the default one (`None`: dimensions
    /// stored outermost first).
    pub dim_order: Option<std::sync::Arc<[u8]>>,
}
