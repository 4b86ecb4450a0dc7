//! The Vulkan delegate payload (`VulkanBackend`): a `VH00` header, a
//! `VkGraph` flatbuffer (identifier `VK00`) holding an operator chain by
//! name over a table of values, and constant bytes, with constants often
//! kept in named data instead.

mod backend;
pub mod constants;
pub mod graph;
pub mod graph_json;
pub mod header;

use std::collections::BTreeMap;

pub use backend::Vulkan;
pub use constants::{Constant, Use};
pub use graph::Call;
pub use header::Header;

use crate::delegate::Lookup;
use crate::format::Result;
use crate::schema::vulkan as fb;

/// The backend id this module decodes.
pub const BACKEND_ID: &str = "VulkanBackend";

/// A decoded payload. Spans are relative to the payload's first byte.
#[derive(Debug)]
pub struct Payload<'a> {
    /// The payload.
    pub bytes: &'a [u8],
    /// Where the flatbuffer and constant bytes are.
    pub header: Header,
    /// The verified graph.
    pub graph: fb::VkGraph<'a>,
    /// The operator chain, in order.
    pub calls: Vec<Call<'a>>,
    /// Every constant tensor, in value order.
    pub constants: Vec<Constant<'a>>,
}

/// Decodes `payload`, finding the named data it refers to (of the program
/// or an attached data file) in `named`. Errors name what is wrong
/// and where; a constant whose bytes cannot be found is not an error but a
/// constant whose `bytes` says why.
pub fn decode<'a>(payload: &'a [u8], named: &dyn Lookup<'a>) -> Result<Payload<'a>> {
    let header = header::parse(payload)?;
    let graph = graph::verify(payload, header.flatbuffer)?;
    let calls = graph::calls(graph);
    let cx = constants::Context {
        graph,
        constant_data: header.constant_data,
        named,
    };
    let constants = constants::collect(&cx, &calls);
    Ok(Payload {
        bytes: payload,
        header,
        graph,
        calls,
        constants,
    })
}

/// The named-data keys `payload` refers to, in table order, each once.
pub fn named_keys(payload: &[u8]) -> Result<Vec<&str>> {
    let header = header::parse(payload)?;
    let graph = graph::verify(payload, header.flatbuffer)?;
    let mut seen = std::collections::HashSet::new();
    Ok(graph
        .constants()
        .iter()
        .flatten()
        .filter(|c| c.offset() == u64::MAX)
        .filter_map(|c| c.named_key().filter(|k| !k.is_empty()))
        .filter(|key| seen.insert(*key))
        .collect())
}

impl Payload<'_> {
    /// Call counts by operator name.
    pub fn op_counts(&self) -> BTreeMap<String, usize> {
        let mut counts = BTreeMap::new();
        for c in &self.calls {
            *counts.entry(c.name.to_owned()).or_default() += 1;
        }
        counts
    }

    /// Each constant's datatype name (`FLOAT32`) and stored bytes.
    pub fn stored(&self) -> Vec<(String, crate::delegate::Bytes<'_>)> {
        self.constants
            .iter()
            .filter_map(|c| Some((graph::datatype_name(c.datatype), *c.bytes.as_ref().ok()?)))
            .collect()
    }

    /// `code.txt`: the version, inputs and outputs, then one line per call:
    /// index, operator and its arguments as `%id:dtype[dims]` for tensors
    /// and `%id=value` for the rest.
    pub fn code(&self) -> String {
        let g = self.graph;
        let ids = |v: Option<flatbuffers::Vector<'_, u32>>| -> String {
            let shown: Vec<String> = v
                .into_iter()
                .flatten()
                .map(|id| graph::describe(g, i32::try_from(id).unwrap_or(-1)))
                .collect();
            shown.join(" ")
        };
        let mut out = format!(
            "# VkGraph version {:?}, {} calls, {} values, {} constants\n",
            g.version().unwrap_or(""),
            self.calls.len(),
            g.values().map_or(0, |v| v.len()),
            self.constants.len()
        );
        out.push_str(&format!("inputs: {}\n", ids(g.input_ids())));
        out.push_str(&format!("outputs: {}\n", ids(g.output_ids())));
        for c in &self.calls {
            let args: Vec<String> = c.args.iter().map(|&a| graph::describe(g, a)).collect();
            let name = if c.name.is_empty() { "?" } else { c.name };
            out.push_str(&format!("{:03} {name} {}\n", c.index, args.join(" ")));
        }
        out
    }
}
