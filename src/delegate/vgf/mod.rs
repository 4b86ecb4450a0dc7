//! The VGF delegate payload (`VgfBackend`): a whole VGF file, Arm's ML SDK
//! model format. A 128-byte header locates four sections: the module table
//! (SPIR-V graph or compute modules), the model sequence table (segments
//! running modules with their bindings), the model resource table (every
//! tensor's Vulkan format and shape) and the constants. Each section is
//! read on its own, so a damaged one leaves the rest shown.

mod backend;
pub mod code;
pub mod constants;
pub mod dot;
pub mod dump;
pub mod header;
pub mod tables;
pub mod vulkan;

use std::collections::BTreeMap;

pub use backend::Vgf;
pub use constants::Constant;
pub use header::Header;

use crate::format::Result;
use crate::schema::vgf as fb;

/// The backend id this module decodes.
pub const BACKEND_ID: &str = "VgfBackend";

/// A decoded payload. Spans are relative to the payload's first byte.
#[derive(Debug)]
pub struct Payload<'a> {
    /// The payload.
    pub bytes: &'a [u8],
    /// The header.
    pub header: Header,
    /// The module table, when it verifies.
    pub modules: Option<fb::ModuleTable<'a>>,
    /// The model sequence table, when it verifies.
    pub sequence: Option<fb::ModelSequenceTable<'a>>,
    /// The model resource table, when it verifies.
    pub resources: Option<fb::ModelResourceTable<'a>>,
    /// The constants section's layout and entries, when it reads.
    pub constants: Option<(constants::Kind, Vec<Constant<'a>>)>,
    /// What is wrong with the sections that did not read.
    pub errors: Vec<String>,
}

/// Decodes `payload`. Only a header that does not read is an error; a
/// section that does not is left out and named in `errors`.
pub fn decode(payload: &[u8]) -> Result<Payload<'_>> {
    let header = header::parse(payload)?;
    let mut errors = Vec::new();
    let mut section = |i: usize| match &header.sections[i] {
        Ok(span) => Some(*span),
        Err(why) => {
            errors.push(why.clone());
            None
        }
    };
    let spans = [section(0), section(1), section(2), section(3)];
    let modules = spans[0].and_then(|s| keep(&mut errors, tables::modules(payload, s)));
    let sequence = spans[1].and_then(|s| keep(&mut errors, tables::sequence(payload, s)));
    let resources = spans[2].and_then(|s| keep(&mut errors, tables::resources(payload, s)));
    let constants = spans[3].and_then(|s| keep(&mut errors, constants::read(payload, s)));
    Ok(Payload {
        bytes: payload,
        header,
        modules,
        sequence,
        resources,
        constants,
        errors,
    })
}

/// `r`'s value, or `None` with its error kept in `errors`.
fn keep<T>(errors: &mut Vec<String>, r: Result<T>) -> Option<T> {
    r.map_err(|e| errors.push(e.to_string())).ok()
}

impl<'a> Payload<'a> {
    /// The modules, in order.
    pub fn module_list(&self) -> Vec<fb::Module<'a>> {
        self.modules
            .and_then(|m| m.modules())
            .map(|v| v.iter().collect())
            .unwrap_or_default()
    }

    /// The segments, in order.
    pub fn segments(&self) -> Vec<fb::SegmentInfo<'a>> {
        self.sequence
            .and_then(|s| s.segments())
            .map(|v| v.iter().collect())
            .unwrap_or_default()
    }

    /// Resource `i` of the model resource table, if there is one.
    pub fn resource(&self, i: u32) -> Option<fb::ModelResourceTableEntry<'a>> {
        let list = self.resources?.mrt_entry()?;
        let i = usize::try_from(i).ok().filter(|&i| i < list.len())?;
        Some(list.get(i))
    }

    /// Number of resources.
    pub fn resource_count(&self) -> usize {
        self.resources
            .and_then(|r| r.mrt_entry())
            .map_or(0, |v| v.len())
    }

    /// The constants, in order.
    pub fn constant_list(&self) -> &[Constant<'a>] {
        self.constants.as_ref().map_or(&[], |c| &c.1)
    }

    /// Segment counts by module type (`GRAPH`, `COMPUTE`).
    pub fn op_counts(&self) -> BTreeMap<String, usize> {
        let mut counts = BTreeMap::new();
        for s in self.segments() {
            *counts.entry(module_type(s.type_())).or_default() += 1;
        }
        counts
    }

    /// Constant bytes by their resource's Vulkan format name.
    pub fn stored(&self) -> Vec<(String, crate::delegate::Bytes<'_>)> {
        self.constant_list()
            .iter()
            .filter_map(|c| {
                let format = self
                    .resource(c.mrt_index)
                    .map_or_else(|| "unknown".to_owned(), |r| vulkan::format(r.vk_format()));
                Some((format, *c.bytes.as_ref().ok()?))
            })
            .collect()
    }
}

/// A `Description`'s dims or strides as integers, empty when absent.
pub fn dims(v: Option<flatbuffers::Vector<'_, fb::Int64>>) -> Vec<i64> {
    v.map(|v| v.iter().map(|d| d.value()).collect())
        .unwrap_or_default()
}

/// A module type's name (`GRAPH`), or its number.
pub fn module_type(t: fb::ModuleType) -> String {
    t.variant_name()
        .map_or_else(|| format!("type{}", t.0), str::to_owned)
}

/// A resource category's name (`CONSTANT`), or its number.
pub fn category(c: fb::ResourceCategory) -> String {
    c.variant_name()
        .map_or_else(|| format!("category{}", c.0), str::to_owned)
}
