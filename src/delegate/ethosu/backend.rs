//! `ethos-u/` in an Ethos-U delegate's directory: the backend behind the
//! seam, and what its folder shows: `header.json` (every block header),
//! each block as `<name>.bin` (an external block's key as `<name>.key`),
//! `io.json`, and `weights/` with the encoded NPU weights.

use std::ops::Range;

use serde_json::{Value, json};

use super::{Block, Payload, WEIGHTS, stream};
use crate::delegate::artifact::Specs;
use crate::delegate::backend::backend_basics;
use crate::delegate::folder::{self, Fields, File, Layout, Npy, Paths, Weights};
use crate::delegate::{Backend, Bytes, Decoded, Rendered, Summary, WeightName};
use crate::format::Result;

/// `EthosUBackend`.
pub struct EthosU;

/// The datatype name the encoded weight stream gets: Vela compresses the
/// weights into a stream only the NPU reads, so it has no element type.
const WEIGHT_STREAM: &str = "npu_weight_stream";

impl Backend for EthosU {
    backend_basics! {
        id: super::BACKEND_ID,
        folder: "ethos-u",
        decode: |payload, named| super::decode(payload, named),
    }

    /// Every block header read, with offsets in the payload and the file.
    fn header(&self, payload: &[u8], at: u64) -> Option<Value> {
        let s = stream::walk(payload);
        if s.blocks.is_empty() {
            return None;
        }
        let blocks: Vec<Value> = s
            .blocks
            .iter()
            .map(|b| {
                json!({
                    "index": b.index,
                    "name": b.name,
                    "header_offset": b.header.offset,
                    "header_file_offset": at + b.header.offset,
                    "data_offset": b.data.offset,
                    "data_file_offset": at + b.data.offset,
                    "size": b.data.len,
                    "external": b.external,
                    "external_key": b.key,
                })
            })
            .collect();
        Some(json!({
            "format": stream::START,
            "payload_size": payload.len(),
            "payload_file_offset": at,
            "blocks": blocks,
        }))
    }

    fn named_keys<'a>(&self, payload: &'a [u8], _specs: Specs<'_, 'a>) -> Result<Vec<&'a str>> {
        super::named_keys(payload)
    }

    /// Block headers and the small blocks; never the weights.
    fn fetch(&self, payload: &[u8], have: &dyn Fn(&Range<u64>) -> bool) -> Vec<Range<u64>> {
        stream::fetch(payload, have)
    }
}

/// A block's file stem: its name with anything that is not a plain file
/// name character replaced, so a hostile name cannot make directories.
fn stem(b: &Block<'_>) -> String {
    let s: String = b
        .name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() {
        format!("block{}", b.index)
    } else {
        s
    }
}

impl<'a> Decoded<'a> for Payload<'a> {
    /// One command stream; its inputs and outputs as values; the encoded
    /// weights' bytes.
    fn summary(&self) -> Summary {
        let mut ops = std::collections::BTreeMap::new();
        if self.stream.block("cmd_data").is_some() {
            ops.insert("ethos-u command stream".to_owned(), 1);
        }
        let weights = self.weights().into_iter();
        Summary::graph(
            super::BACKEND_ID,
            ops.len(),
            self.inputs.len() + self.outputs.len(),
            ops,
            weights.filter_map(|(_, b)| Some((WEIGHT_STREAM.to_owned(), b?))),
        )
    }

    fn weights(&self) -> Vec<(WeightName, Option<Bytes<'a>>)> {
        self.weight_blocks()
            .map(|(b, bytes)| {
                let name = WeightName {
                    name: stem(b),
                    layer: Some("cmd_data".to_owned()),
                    role: "weights".to_owned(),
                    value_id: b.index as u32,
                    datatype: WEIGHT_STREAM.to_owned(),
                    dims: vec![u32::try_from(b.data.len).unwrap_or(u32::MAX)],
                    key: b.key.map(str::to_owned),
                };
                (name, bytes.as_ref().ok().copied())
            })
            .collect()
    }

    fn layout(&self) -> Layout<'_> {
        let mut files = Vec::new();
        for (b, bytes) in self.stream.blocks.iter().zip(&self.resolved) {
            let stem = stem(b);
            if b.is_external() {
                files.push(File::Bytes {
                    path: format!("{stem}.key"),
                    bytes: Bytes::Payload(b.data),
                });
            }
            // Without its bytes the block has no file; the weight's
            // index entry and the warning say why.
            if let Ok(bytes) = bytes {
                files.push(File::Bytes {
                    path: format!("{stem}.bin"),
                    bytes: *bytes,
                });
            }
        }
        files.push(File::Json {
            path: "io.json".into(),
            value: json!({
                "scratch_size": self.scratch_size,
                "inputs": self.inputs,
                "outputs": self.outputs,
            }),
        });
        let items: Vec<folder::Weight<'_>> =
            self.weight_blocks().map(|(b, r)| weight(b, r)).collect();
        Layout {
            files,
            weights: (!items.is_empty()).then(|| Weights {
                lacking: "weight blocks lack files for their bytes",
                items,
            }),
            errors: self.errors.clone(),
        }
    }

    fn render<'r>(&'r self, _path: &str, _paths: &'r Paths) -> Rendered<'r> {
        Rendered::None
    }
}

impl<'a> Payload<'a> {
    /// The weight blocks and where their bytes are.
    fn weight_blocks(
        &self,
    ) -> impl Iterator<Item = (&Block<'a>, &std::result::Result<Bytes<'a>, String>)> {
        self.stream
            .blocks
            .iter()
            .zip(&self.resolved)
            .filter(|(b, _)| b.name == WEIGHTS)
    }
}

/// The weight block's files and `index.json` entry: bytes, viewed by
/// NumPy as a flat `uint8` array.
fn weight<'s>(
    b: &'s Block<'_>,
    bytes: &'s std::result::Result<Bytes<'_>, String>,
) -> folder::Weight<'s> {
    let len = bytes.as_ref().map_or(0, |b| b.len());
    let entry = Fields::new(move |put| {
        put("block", json!(b.name));
        put("dtype", json!(WEIGHT_STREAM));
        put("numpy_dtype", json!("|u1"));
        put("shape", json!([len]));
        put("offset", json!((!b.is_external()).then_some(b.data.offset)));
        put("key", json!(b.key));
        put("users", json!(["cmd_data"]));
    });
    folder::Weight {
        stem: stem(b),
        bytes: bytes.clone(),
        dtype: "uint8",
        dims: vec![i64::try_from(len).unwrap_or(i64::MAX)],
        npy: bytes.is_ok().then(|| Npy {
            descr: "|u1",
            shape: vec![len],
            nbytes: len,
            widen: false,
        }),
        id: b.index as u32,
        value: Some(b.index),
        entry,
        parts: Vec::new(),
        view: None,
    }
}
