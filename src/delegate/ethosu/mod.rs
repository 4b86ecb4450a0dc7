//! The Arm Ethos-U delegate payload (`EthosUBackend`): a `vela_bin_stream`
//! of named blocks ([`stream`]) holding the NPU command stream
//! (`cmd_data`), its encoded weights (`weight_data`, possibly kept in named
//! data), the scratch size and the inputs' and outputs' places in the
//! scratch memory ([`io`]).

mod backend;
pub mod io;
pub mod stream;

pub use backend::EthosU;
pub use io::Io;
pub use stream::{Block, Stream};

use crate::delegate::{Bytes, Lookup};
use crate::format::{Error, Result};

/// The backend id this module decodes.
pub const BACKEND_ID: &str = "EthosUBackend";

/// The block holding the encoded NPU weights.
pub const WEIGHTS: &str = "weight_data";

/// A decoded payload. Spans are relative to the payload's first byte.
#[derive(Debug)]
pub struct Payload<'a> {
    /// The payload.
    pub bytes: &'a [u8],
    /// The blocks read.
    pub stream: Stream<'a>,
    /// Where each block's bytes are, by block index: in the payload, or
    /// the named-data entry an external block names (`Err`: not found).
    pub resolved: Vec<std::result::Result<Bytes<'a>, String>>,
    /// The `inputs` block's tensors.
    pub inputs: Vec<Io>,
    /// The `outputs` block's tensors.
    pub outputs: Vec<Io>,
    /// The `scratch_size` block's value.
    pub scratch_size: Option<u32>,
    /// What is wrong with the stream or its known blocks.
    pub errors: Vec<String>,
}

/// Decodes `payload`, finding external blocks in `named`. A payload whose
/// first block cannot be read is an error; later damage is reported in
/// [`Payload::errors`] with every block before it kept.
pub fn decode<'a>(payload: &'a [u8], named: &dyn Lookup<'a>) -> Result<Payload<'a>> {
    let stream = stream::walk(payload);
    if stream.blocks.is_empty() {
        return Err(Error::new(stream.errors.join("; ")));
    }
    let resolved: Vec<std::result::Result<Bytes<'a>, String>> =
        stream.blocks.iter().map(|b| resolve(b, named)).collect();
    let mut p = Payload {
        bytes: payload,
        errors: stream.errors.clone(),
        stream,
        resolved,
        inputs: Vec::new(),
        outputs: Vec::new(),
        scratch_size: None,
    };
    p.read_known(named);
    Ok(p)
}

/// Where block `b`'s bytes are.
fn resolve<'a>(b: &Block<'a>, named: &dyn Lookup<'a>) -> std::result::Result<Bytes<'a>, String> {
    match b.key {
        None => Ok(Bytes::Payload(b.data)),
        Some(key) => named.len(key).map(|n| Bytes::named(key, n)).ok_or_else(|| {
            format!(
                "block {:?} is external: named data {key:?} is not in the program nor an attached data file",
                b.name
            )
        }),
    }
}

/// The named-data keys of `payload`'s external blocks, each once.
pub fn named_keys(payload: &[u8]) -> Result<Vec<&str>> {
    let s = stream::walk(payload);
    let mut keys: Vec<&str> = Vec::new();
    for k in s.blocks.iter().filter_map(|b| b.key) {
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    Ok(keys)
}

impl<'a> Payload<'a> {
    /// The bytes of block `b`, when they can be found.
    fn data(&self, b: &Block<'a>, named: &dyn Lookup<'a>) -> Option<&'a [u8]> {
        let r = self.resolved.get(b.index)?.as_ref().ok()?;
        r.resolve(self.bytes, named)
    }

    /// Reads the blocks whose contents the layout shows as JSON, and checks
    /// the command stream's magic as the runtime does.
    fn read_known(&mut self, named: &dyn Lookup<'a>) {
        let blocks = self.stream.blocks.clone();
        for b in &blocks {
            let Some(data) = self.data(b, named) else {
                continue;
            };
            let at = b.data.offset;
            match b.name.as_str() {
                "inputs" => match io::parse(data, at, "inputs") {
                    Ok(v) => self.inputs = v,
                    Err(e) => self.errors.push(e),
                },
                "outputs" => match io::parse(data, at, "outputs") {
                    Ok(v) => self.outputs = v,
                    Err(e) => self.errors.push(e),
                },
                "scratch_size" => match io::scratch_size(data, at) {
                    Ok(v) => self.scratch_size = Some(v),
                    Err(e) => self.errors.push(e),
                },
                "cmd_data" => {
                    let magic = data.get(..4).unwrap_or(data);
                    if magic != b"COP1" && magic != b"COP2" {
                        self.errors.push(format!(
                            "cmd_data block at payload offset {at}: command stream magic {:?}, not \"COP1\" or \"COP2\"",
                            String::from_utf8_lossy(magic)
                        ));
                    }
                }
                _ => {}
            }
        }
    }
}
