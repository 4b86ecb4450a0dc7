//! ETRecords (`generate_etrecord`'s output): a zip of stored members, told
//! from a `.ptn` by its empty `ETRECORD_V0` member. It holds, per program
//! recorded (the exported program, the edge-dialect program of each method,
//! extra graphs), the program as JSON and three `torch.save` archives
//! (`<name>_state_dict`, `<name>_constants`, `<name>_example_inputs`); the
//! maps tying the runtime's instructions to graph nodes, as JSON; and the
//! reference outputs and representative inputs, as `torch.save` archives.
//!
//! The zip must be sound for the file to open; each member is then read on
//! its own, and one that cannot be (compressed, an archive whose pickle is
//! refused) is recorded in [`EtRecordFile::errors`] while the rest is shown.

pub mod torch_save;

use super::package::zip::{self, Member};
use super::{Result, Span};
pub use torch_save::{Archive, Saved, SavedTensor};

/// The member that marks a zip as an ETRecord.
pub const IDENTIFIER: &str = "ETRECORD_V0";
/// The debug-handle map member.
pub const DEBUG_HANDLE_MAP: &str = "debug_handle_map";
/// The delegate map member.
pub const DELEGATE_MAP: &str = "delegate_map";
/// The instruction-outputs map member.
pub const INSTRUCTION_OUTS: &str = "instruction_id_to_num_outs_map";
/// The reference outputs member.
pub const REFERENCE_OUTPUTS: &str = "reference_outputs";
/// The representative inputs member.
pub const REPRESENTATIVE_INPUTS: &str = "representative_inputs";
/// Members that are not programs.
const RESERVED: &[&str] = &[
    IDENTIFIER,
    DEBUG_HANDLE_MAP,
    DELEGATE_MAP,
    INSTRUCTION_OUTS,
    REFERENCE_OUTPUTS,
    REPRESENTATIVE_INPUTS,
    "export_graph_id",
    "et_dialect_graph_module",
];
/// The suffixes of a program's archives.
const ARCHIVES: [&str; 3] = ["_state_dict", "_constants", "_example_inputs"];

/// One recorded program.
#[derive(Debug)]
pub struct Graph {
    /// Its member's name (`exported_program`,
    /// `edge_dialect_exported_program/forward`, an extra graph's name).
    pub name: String,
    /// The program's JSON.
    pub program: Span,
    /// `<name>_state_dict`, `<name>_constants` and `<name>_example_inputs`,
    /// each read or why not (`None` when absent).
    pub archives: [Option<std::result::Result<Archive, String>>; 3],
}

/// A parsed ETRecord.
#[derive(Debug)]
pub struct EtRecordFile<'a> {
    /// The whole file.
    pub bytes: &'a [u8],
    /// Zip members in central directory order.
    pub members: Vec<Member>,
    /// The programs recorded, in member order.
    pub graphs: Vec<Graph>,
    /// `debug_handle_map`, `delegate_map` and
    /// `instruction_id_to_num_outs_map`, where present.
    pub maps: [Option<Span>; 3],
    /// `reference_outputs`, read or why not.
    pub reference_outputs: Option<std::result::Result<Archive, String>>,
    /// `representative_inputs`, read or why not.
    pub representative_inputs: Option<std::result::Result<Archive, String>>,
    /// Why a member could not be shown, one sentence each.
    pub errors: Vec<String>,
    /// Oddities that do not stop anything from being shown.
    pub warnings: Vec<String>,
}

/// True when the zip `bytes` has an `ETRECORD_V0` member.
pub fn is_etrecord(bytes: &[u8]) -> bool {
    zip::members(bytes).is_ok_and(|m| m.iter().any(|m| m.name == IDENTIFIER))
}

impl<'a> EtRecordFile<'a> {
    /// Reads the zip structure (an error when it is unsound) and then each
    /// member (an entry in `errors` when one is unreadable).
    pub fn parse(bytes: &'a [u8]) -> Result<Self> {
        let members = zip::members(bytes).map_err(|e| e.context("ETRecord"))?;
        let mut f = EtRecordFile {
            bytes,
            members,
            graphs: Vec::new(),
            maps: [None, None, None],
            reference_outputs: None,
            representative_inputs: None,
            errors: Vec::new(),
            warnings: Vec::new(),
        };
        if !f.members.iter().any(|m| m.name == IDENTIFIER) {
            return Err(super::Error::new(format!(
                "zip has no {IDENTIFIER} member, so it is not an ETRecord"
            )));
        }
        for (i, name) in [DEBUG_HANDLE_MAP, DELEGATE_MAP, INSTRUCTION_OUTS]
            .iter()
            .enumerate()
        {
            f.maps[i] = f.stored(name);
        }
        f.reference_outputs = f.archive(REFERENCE_OUTPUTS);
        f.representative_inputs = f.archive(REPRESENTATIVE_INPUTS);
        let names: Vec<String> = f
            .members
            .iter()
            .map(|m| m.name.clone())
            .filter(|n| !RESERVED.contains(&n.as_str()) && !ARCHIVES.iter().any(|s| n.ends_with(s)))
            .collect();
        for name in names {
            let Some(program) = f.stored(&name) else {
                continue;
            };
            let archives = ARCHIVES.map(|s| f.archive(&format!("{name}{s}")));
            f.graphs.push(Graph {
                name,
                program,
                archives,
            });
        }
        Ok(f)
    }

    fn member(&self, name: &str) -> Option<&Member> {
        self.members.iter().find(|m| m.name == name)
    }

    /// The stored span of member `name`; absent, or an entry in `errors`.
    fn stored(&mut self, name: &str) -> Option<Span> {
        match self.member(name)?.stored() {
            Ok(span) => Some(span),
            Err(e) => {
                self.errors.push(e.to_string());
                None
            }
        }
    }

    fn archive(&mut self, name: &str) -> Option<std::result::Result<Archive, String>> {
        let span = self.member(name)?.stored();
        let read = span
            .and_then(|span| torch_save::read(self.bytes, span))
            .map_err(|e| format!("{name}: {e}"));
        if let Err(e) = &read {
            self.errors.push(e.clone());
        }
        Some(read)
    }

    /// The bytes of a map member (`maps[i]`), if present.
    pub fn map_bytes(&self, i: usize) -> Option<&'a [u8]> {
        self.maps
            .get(i)
            .copied()
            .flatten()
            .map(|s| s.bytes(self.bytes))
    }
}
