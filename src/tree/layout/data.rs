//! The tree of a data file (`.ptd`).

use serde_json::json;

use super::index_entry::{IndexEntry, Source, TensorShape};
use super::{Builder, Dir, Origin};
use crate::format::DataFile;
use crate::tree::file_names::{encode, padded};
use crate::tree::render::{flatc_json, readme};

impl Builder {
    pub(super) fn data(&mut self, root: &mut Dir, name: &str, origin: Origin, d: &DataFile<'_>) {
        self.generated(root, "README.txt", readme::DATA.as_bytes().into());
        self.weights_file(root, name);
        let h = &d.header;
        self.json(
            root,
            "header.json",
            &json!({
                "kind": "data",
                "file_size": d.bytes.len(),
                "root_offset": h.root_offset,
                "identifier": String::from_utf8_lossy(&h.magic),
                "header_magic": String::from_utf8_lossy(&h.header_magic),
                "header_length": h.length,
                "padded_header_size": h.padded_header_size,
                "flatbuffer_size": h.flatbuffer_size,
                "segment_base_offset": h.segment_base_offset,
                "segment_data_size": h.segment_data_size,
            }),
        );

        let mut tdir = self.subdir(root, "tensors");
        let mut index = Vec::new();
        let mut paths = Vec::new();
        for e in &d.entries {
            let stem = encode(e.key);
            let mut entry = IndexEntry {
                key: Some(e.key),
                nbytes: Some(e.span.len),
                segment_index: Some(e.segment_index),
                source: Some(Source {
                    file: None,
                    offset: origin.shifted(e.span).offset,
                }),
                ..IndexEntry::default()
            };
            entry.flag_escaped_names();
            let name = match &e.layout {
                Some(l) => {
                    self.weight_key(origin.source, origin.shifted(e.span), &e.key.to_string());
                    let shape = TensorShape {
                        scalar_type: l.scalar_type,
                        sizes: l.sizes.clone(),
                        dim_order: l.dim_order.clone(),
                    };
                    let (bin, npy) =
                        self.tensor_files(&mut tdir, &stem, origin, Some(e.span), &shape);
                    entry.npy = Some(npy);
                    entry.shape = Some(shape.describe());
                    entry.location = Some("tensor");
                    bin
                }
                None => {
                    // Keyed, so `weights.safetensors` lists it as untyped.
                    self.weight_key(origin.source, origin.shifted(e.span), &e.key.to_string());
                    entry.location = Some("named");
                    self.named_blob(&mut tdir, &stem, origin, e.span).0
                }
            };
            if let Some(ino) = self.recent_entry(tdir.ino, &name) {
                for k in self.checkpoint_names(e.span, d.bytes).into_iter().flatten() {
                    self.by_name.push((k, ino));
                }
            }
            paths.push(Some(format!("tensors/{name}")));
            entry.name = Some(name);
            index.push(entry);
        }
        self.json(&mut tdir, "index.json", &index);
        self.json(
            root,
            "flat_tensor.json",
            &flatc_json::FlatTensor {
                flat: d.flat,
                paths: &paths,
            },
        );

        self.by_name_dir(root);

        let mut sdir = self.subdir(root, "segments");
        let max = d.segments.len().saturating_sub(1) as u64;
        for (i, span) in d.segments.iter().enumerate() {
            self.raw(&mut sdir, &padded(i as u64, max), origin, *span);
        }
    }
}
