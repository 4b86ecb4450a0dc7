//! What a decoded payload shows in its backend's folder
//! (`methods/<m>/delegates/<i>-<Backend>/<folder>/`), said without knowing
//! the tree: files that are byte ranges of the payload or of named data,
//! small generated files, files rendered when first read, and `weights/`
//! with each weight's `.bin`, `.npy` and `index.json` entry. The tree lays
//! out any such description the same way, so a backend states only this.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::{Map, Value};

use super::Bytes;

/// The contents of a backend's folder beside `header.json`.
#[derive(Debug, Default)]
pub struct Layout<'a> {
    /// Files by path relative to the folder (`a/b.bin` makes `a/`).
    pub files: Vec<File<'a>>,
    /// `weights/`, when the payload has weights.
    pub weights: Option<Weights<'a>>,
    /// What is wrong with a payload that decoded only in part: written to
    /// `ERROR.txt` and warned about, while the rest is shown.
    pub errors: Vec<String>,
}

/// A file of the folder.
#[derive(Debug)]
pub enum File<'a> {
    /// Bytes served as a range of the source, never copied.
    Bytes {
        /// Path in the folder.
        path: String,
        /// Where the bytes are.
        bytes: Bytes<'a>,
    },
    /// A JSON file made when the tree is built.
    Json {
        /// Path in the folder.
        path: String,
        /// Its value.
        value: Value,
    },
    /// A text file made when the tree is built.
    Text {
        /// Path in the folder.
        path: String,
        /// Its text.
        text: String,
    },
    /// A file rendered by [`super::Decoded::render`] when first read.
    Rendered {
        /// Path in the folder, also what `render` is asked for.
        path: String,
    },
}

impl File<'_> {
    /// Its path in the folder.
    pub fn path(&self) -> &str {
        match self {
            File::Bytes { path, .. }
            | File::Json { path, .. }
            | File::Text { path, .. }
            | File::Rendered { path } => path,
        }
    }
}

/// `weights/` and its `index.json`.
#[derive(Debug, Default)]
pub struct Weights<'a> {
    /// What the warning says of weights without files (`weights lack
    /// files for their bytes`).
    pub lacking: &'static str,
    /// Every weight, in the order `index.json` lists them.
    pub items: Vec<Weight<'a>>,
}

/// One weight: `<stem>.bin`, `<stem>.npy` where NumPy can view the bytes,
/// and an `index.json` entry holding `entry`'s fields and the tree's own
/// (`name`, `npy`, `nbytes`, `source`, `missing`).
#[derive(Debug)]
pub struct Weight<'a> {
    /// File stem (`012-conv2d.filter`).
    pub stem: String,
    /// Where the bytes are; `Err` says why they cannot be shown.
    pub bytes: Result<Bytes<'a>, String>,
    /// Type name and dims, for the files' extended attributes.
    pub dtype: &'static str,
    /// Dimensions as the backend states them.
    pub dims: Vec<i64>,
    /// How NumPy views the bytes, when it can.
    pub npy: Option<Npy>,
    /// The id the warning names for a weight without files.
    pub id: u32,
    /// The key renderers find the weight's path by (see [`Paths`]).
    pub value: Option<usize>,
    /// The backend's own fields of the `index.json` entry, in order.
    pub entry: Fields<'a>,
    /// Further files that go with it (quantization scales), each with the
    /// entry key its own entry is nested under.
    pub parts: Vec<(&'static str, Weight<'a>)>,
    /// When the weight is a strided view into `bytes` (its storage) that
    /// is not one range of it: its files hold the view's elements,
    /// gathered when first read.
    pub view: Option<super::strided::Strided>,
}

/// A weight's own fields of its `index.json` entry, made only when
/// `index.json` is read: most trees are never asked for it, and making
/// them when the tree was laid out was most of what a delegate's folder
/// cost.
pub struct Fields<'a>(Box<Make<'a>>);

/// What makes a weight's fields: it hands each, in order, to `put`.
type Make<'a> = dyn Fn(&mut dyn FnMut(&str, Value)) + 'a;

impl<'a> Fields<'a> {
    /// Fields that `make` hands to its `put` when asked for.
    pub fn new(make: impl Fn(&mut dyn FnMut(&str, Value)) + 'a) -> Self {
        Fields(Box::new(make))
    }

    /// No fields of the backend's own.
    pub fn none() -> Self {
        Fields::new(|_| {})
    }

    /// The fields, made now.
    pub fn make(&self) -> Map<String, Value> {
        let mut fields = Map::new();
        (self.0)(&mut |k, v| {
            fields.insert(k.to_owned(), v);
        });
        fields
    }
}

impl std::fmt::Debug for Fields<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Fields(..)")
    }
}

/// A NumPy view of a weight's bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Npy {
    /// NumPy descr (`<f4`).
    pub descr: &'static str,
    /// Shape.
    pub shape: Vec<u64>,
    /// Bytes the shape needs: the `.npy` exists only when the stored
    /// bytes are exactly these many (wider for `widen`: half as many).
    pub nbytes: u64,
    /// True when the stored values are bfloat16 and the `.npy` widens
    /// them to float32 as it is read.
    pub widen: bool,
}

/// The path from the program's root of each weight's `.bin`, by
/// [`Weight::value`], for renderers that point at them (`graph.json`'s
/// `ptefs_path`).
pub type Paths = HashMap<usize, String>;
