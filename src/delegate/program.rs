//! Every delegate of a program decoded at once, for reports (`inspect`,
//! `diff`) that start from parsed files rather than from the tree.

use super::{Decoded, Lookup, WeightName, decode, text_specs};
use crate::format::{DataFile, Name, ProgramFile, Result, Span};

/// Named-data entries by key, as the runtime looks them up: the
/// program's own first, then each data file's in the order of `data`; a
/// key found again later is shadowed. `entry` makes what is kept of each
/// from the data file it is in (`None`: the program; `Some(i)`:
/// `data[i]`), its span in that file and its bytes.
pub fn named_index<'a, V>(
    program: &ProgramFile<'a>,
    data: &[&DataFile<'a>],
    mut entry: impl FnMut(Option<usize>, Span, &'a [u8]) -> V,
) -> foldhash::HashMap<&'a [u8], V> {
    let mut by_key = foldhash::HashMap::default();
    for n in &program.named {
        let bytes = n.span.bytes(program.bytes);
        by_key
            .entry(n.key.bytes())
            .or_insert_with(|| entry(None, n.span, bytes));
    }
    for (i, d) in data.iter().enumerate() {
        for e in &d.entries {
            let bytes = e.span.bytes(d.bytes);
            by_key
                .entry(e.key.bytes())
                .or_insert_with(|| entry(Some(i), e.span, bytes));
        }
    }
    by_key
}

/// Named-data blobs by key ([`named_index`]).
#[derive(Debug, Default)]
pub struct NamedData<'a> {
    by_key: foldhash::HashMap<&'a [u8], &'a [u8]>,
}

impl<'a> NamedData<'a> {
    /// The blobs of `program` and of `data`, in that order of precedence.
    pub fn of(program: &ProgramFile<'a>, data: &[&DataFile<'a>]) -> NamedData<'a> {
        NamedData {
            by_key: named_index(program, data, |_, _, bytes| bytes),
        }
    }

    /// The blob stored under `key`.
    pub fn get(&self, key: &str) -> Option<&'a [u8]> {
        self.by_key.get(key.as_bytes()).copied()
    }
}

impl<'a> Lookup<'a> for NamedData<'a> {
    fn bytes(&self, key: &str) -> Option<&'a [u8]> {
        self.get(key)
    }
}

/// One delegate of a program, decoded when its backend has a decoder.
#[derive(Debug)]
pub struct ProgramDelegate<'a> {
    /// The method holding it.
    pub method: Name<'a>,
    /// Index in the method's `delegates`.
    pub index: usize,
    /// The backend id.
    pub backend: Name<'a>,
    /// The payload (empty when it is not located).
    pub payload: &'a [u8],
    /// `None` for a backend without a decoder, or a delegate whose payload
    /// is not located (the payload stays opaque).
    pub decoded: Option<Result<Box<dyn Decoded<'a> + 'a>>>,
}

/// Decodes every delegate of every method of `program`.
pub fn decode_program<'a>(
    program: &ProgramFile<'a>,
    named: &NamedData<'a>,
) -> Vec<ProgramDelegate<'a>> {
    let mut out = Vec::new();
    for m in &program.methods {
        for d in &m.delegates {
            out.push(ProgramDelegate {
                method: m.name,
                index: d.index,
                backend: d.id,
                payload: d.processed.map_or(&[][..], |s| s.bytes(program.bytes)),
                decoded: d.id.as_str().zip(d.processed).and_then(|(id, span)| {
                    let specs = text_specs(&d.compile_specs);
                    decode(id, span.bytes(program.bytes), &specs, named)
                }),
            });
        }
    }
    out
}

/// The named-data keys the delegates of `program` refer to, each with the
/// backend id of a delegate referring to it, in method and delegate order.
/// A payload that does not decode refers to nothing here; the tree says
/// what is wrong with it.
pub fn referenced_named_keys<'a>(program: &ProgramFile<'a>) -> Vec<(Name<'a>, &'a str)> {
    program
        .methods
        .iter()
        .flat_map(|m| &m.delegates)
        .flat_map(|d| {
            delegate_named_keys(program, d)
                .into_iter()
                .map(move |k| (k, d))
        })
        .filter_map(|(k, d)| Some((k, d.id.as_str()?)))
        .collect()
}

/// The named-data keys one delegate of `program` refers to, in payload
/// order; empty when its payload is not decoded.
pub fn delegate_named_keys<'a>(
    program: &ProgramFile<'a>,
    d: &crate::format::Delegate<'a>,
) -> Vec<Name<'a>> {
    let Some((id, span)) = d.id.as_str().zip(d.processed) else {
        return Vec::new();
    };
    let specs = text_specs(&d.compile_specs);
    let payload = span.bytes(program.bytes);
    match super::named_keys(id, payload, &specs) {
        Some(Ok(keys)) => keys.into_iter().map(|k| Name::new(k.as_bytes())).collect(),
        _ => Vec::new(),
    }
}

impl<'a> ProgramDelegate<'a> {
    /// Every weight of the decoded payload with its stable name and its
    /// stored bytes (`None` when they cannot be found), for pairing two
    /// versions of a model by name and comparing the bytes; empty when
    /// the payload is not decoded.
    pub fn weights_with_bytes(&self, named: &NamedData<'a>) -> Vec<(WeightName, Option<&'a [u8]>)> {
        let Some(Ok(d)) = &self.decoded else {
            return Vec::new();
        };
        d.weights()
            .into_iter()
            .map(|(name, b)| (name, b.and_then(|b| b.resolve(self.payload, named))))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_the_delegates_of_a_fixture() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/quant_xnnpack.pte"
        );
        let bytes = std::fs::read(path).unwrap();
        let p = ProgramFile::parse(&bytes).unwrap();
        let named = NamedData::of(&p, &[]);
        let all = decode_program(&p, &named);
        assert_eq!(all.len(), 1);
        let d = all[0].decoded.as_ref().unwrap().as_ref().unwrap();
        let s = d.summary();
        assert_eq!(s.backend, "XnnpackBackend");
        assert_eq!((s.nodes, s.values), (4, 9));
        assert_eq!(s.ops["XNNFullyConnected"], 2);
        assert_eq!(s.constant_bytes["xnn_datatype_qcint8"], 2048 + 1024);
        assert_eq!(s.constant_bytes["scales"], (64 + 64 + 16 + 16) * 4);
        let weights = all[0].weights_with_bytes(&named);
        let (name, bytes) = &weights[0];
        assert_eq!(name.name, "001-fully_connected.filter");
        assert_eq!(
            (name.layer.as_deref(), name.role.as_str()),
            (Some("001-fully_connected"), "filter")
        );
        assert_eq!(bytes.map(<[u8]>::len), Some(2048));
    }
}
