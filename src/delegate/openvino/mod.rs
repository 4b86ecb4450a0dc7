//! The OpenVINO delegate payload (`OpenvinoBackend`): the bytes of
//! OpenVINO's `CompiledModel::export_model`, a six-u64 [`header`] locating
//! the plugin's custom-data XML, the weights, and the IR (the model's XML,
//! stored XOR-obfuscated by the CPU plugin: [`obfuscation`]). The IR's
//! `Const` layers point into the weights ([`consts`]).

mod backend;
pub mod consts;
pub mod header;
pub mod ir;
pub mod obfuscation;
pub mod render;

pub use backend::Openvino;
pub use consts::Const;
pub use header::Header;
pub use ir::Model;

use crate::format::Result;

/// The backend id this module decodes.
pub const BACKEND_ID: &str = "OpenvinoBackend";

/// A decoded payload. Spans are relative to the payload's first byte.
#[derive(Debug)]
pub struct Payload<'a> {
    /// The payload.
    pub bytes: &'a [u8],
    /// Where its three regions are.
    pub header: Header,
    /// The IR's XML, decoded, when it reads as XML.
    pub xml: Option<Vec<u8>>,
    /// True when the IR was stored obfuscated.
    pub obfuscated: bool,
    /// The IR's layers and edges, when they parse.
    pub model: Option<Model>,
    /// Every `Const` layer's weight.
    pub consts: Vec<Const<'a>>,
    /// What is wrong with the IR.
    pub errors: Vec<String>,
}

/// Decodes `payload`. A header whose regions do not fit is an error; an IR
/// that does not decode or parse is reported in [`Payload::errors`] with
/// the regions still shown.
pub fn decode(payload: &[u8]) -> Result<Payload<'_>> {
    let header = header::parse(payload)?;
    let mut p = Payload {
        bytes: payload,
        header,
        xml: None,
        obfuscated: false,
        model: None,
        consts: Vec::new(),
        errors: Vec::new(),
    };
    let stored = header.model.bytes(payload);
    let Some((xml, obfuscated)) = obfuscation::decode(stored) else {
        p.errors.push(format!(
            "model XML at payload offset {}: neither its {} bytes nor their XOR with the CPU plugin's key start with \"<?xml\"",
            header.model.offset, header.model.len
        ));
        return Ok(p);
    };
    match ir::parse(&xml) {
        Ok(m) => {
            p.consts = consts::collect(&m, header.consts);
            p.model = Some(m);
        }
        Err(e) => p.errors.push(format!(
            "{e} (the IR stored at payload offset {})",
            header.model.offset
        )),
    }
    p.xml = Some(xml);
    p.obfuscated = obfuscated;
    Ok(p)
}
