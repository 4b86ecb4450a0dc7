//! `inspect`: what a file holds and what makes it big, as one typed value.

use std::collections::{BTreeMap, HashSet};

use serde::Serialize;

use super::Share;
use crate::format::{DataFile, Parsed};

mod build;
mod text;

/// Everything `ptefs inspect` reports about one file.
#[derive(Debug, Clone, Serialize)]
pub struct Inspection {
    /// The file's name.
    pub file: String,
    /// `program`, `data` or `bundled_program`.
    pub kind: &'static str,
    /// The file identifier (bytes 4..8): `ET12`, `FT01`, `BP08`.
    pub identifier: String,
    /// The root table's version field.
    pub version: u32,
    /// Bytes.
    pub file_size: u64,
    /// A bundled program's own facts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bundle: Option<Bundle>,
    /// The program (a `.pte`, or the one a bundle embeds).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub program: Option<Program>,
    /// A data file's contents.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Data>,
    /// What share of the file each kind of content takes.
    pub composition: Vec<Share>,
}

/// What a bundled program adds around its program.
#[derive(Debug, Clone, Serialize)]
pub struct Bundle {
    /// Where the embedded program lies in the bundle.
    pub embedded_program: Location,
    /// Test cases per method.
    pub test_suites: Vec<Suite>,
}

/// A byte range of the file.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Location {
    /// First byte.
    pub offset: u64,
    /// Bytes.
    pub size: u64,
}

/// A method's test cases in a bundle.
#[derive(Debug, Clone, Serialize)]
pub struct Suite {
    /// The method tested.
    pub method: String,
    /// How many cases.
    pub cases: usize,
}

/// A program's contents.
#[derive(Debug, Clone, Serialize)]
pub struct Program {
    /// `ET12` and the like.
    pub identifier: String,
    /// `Program.version`.
    pub version: u32,
    /// Each method, in file order.
    pub methods: Vec<Method>,
    /// Tensors with stored bytes, by element type.
    pub tensors: Vec<DtypeCount>,
    /// All segments.
    pub segments: Count,
    /// `Program.named_data` blobs.
    pub named_data: Count,
    /// Every delegate of every method.
    pub delegates: Vec<Delegate>,
}

/// One method.
#[derive(Debug, Clone, Serialize)]
pub struct Method {
    /// Its name.
    pub name: String,
    /// `ExecutionPlan.values` entries.
    pub values: usize,
    /// Instructions over all chains.
    pub instructions: u64,
    /// Entries of the operator table.
    pub operators: usize,
    /// How often each operator (or other instruction) occurs.
    pub calls: BTreeMap<String, u64>,
    /// Tensors with stored bytes.
    pub tensors: usize,
    /// Their bytes.
    pub tensor_bytes: u64,
    /// Of them, stored in a data file.
    pub external_tensors: usize,
    /// Of those, in no attached data file.
    pub external_missing: usize,
    /// Delegates.
    pub delegates: usize,
}

/// Tensors of one element type.
#[derive(Debug, Clone, Serialize)]
pub struct DtypeCount {
    /// The schema's name for the type (`FLOAT`).
    pub scalar_type: String,
    /// How many tensors.
    pub count: u64,
    /// Their bytes.
    pub bytes: u64,
}

/// How many of something, and their bytes.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Count {
    /// How many.
    pub count: usize,
    /// Their bytes.
    pub bytes: u64,
}

/// One delegate.
#[derive(Debug, Clone, Serialize)]
pub struct Delegate {
    /// The method holding it.
    pub method: String,
    /// Its index in the method.
    pub index: usize,
    /// The backend id.
    pub id: String,
    /// Bytes of its processed blob.
    pub bytes: u64,
}

/// A data file's contents.
#[derive(Debug, Clone, Serialize)]
pub struct Data {
    /// Named entries.
    pub named_data: usize,
    /// Entries with a tensor layout, by element type.
    pub tensors: Vec<DtypeCount>,
    /// Entries without one (delegate weights and the like).
    pub opaque_blobs: Count,
    /// Segments.
    pub segments: Count,
}

/// Inspects `parsed` (shown as `name`); `attached` are the data files
/// that may hold its external tensors.
pub fn inspect(name: &str, parsed: &Parsed<'_>, attached: &[&DataFile<'_>]) -> Inspection {
    let keys: HashSet<&str> = attached
        .iter()
        .flat_map(|d| d.entries.iter().map(|e| e.key))
        .collect();
    match parsed {
        Parsed::Program(p) => {
            let (program, composition) = build::program(p, 0, &keys);
            Inspection {
                file: name.to_owned(),
                kind: "program",
                identifier: program.identifier.clone(),
                version: program.version,
                file_size: p.bytes.len() as u64,
                bundle: None,
                program: Some(program),
                data: None,
                composition,
            }
        }
        Parsed::Data(d) => build::data(name, d),
        Parsed::Bundled(b) => build::bundled(name, b, &keys),
    }
}
