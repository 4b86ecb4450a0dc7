//! The tree of a bundled program (`.bpte`).

use serde_json::json;

use super::index_entry::{IndexEntry, Source, TensorShape};
use super::{Attached, Builder, Dir, Origin};
use crate::format::{BundledFile, BundledTensor, TestValue};
use crate::tree::file_names::{encode, padded};
use crate::tree::render::readme;

impl Builder {
    pub(super) fn bundled(
        &mut self,
        root: &mut Dir,
        file_name: &str,
        origin: Origin,
        b: &BundledFile<'_>,
        data: &[Attached<'_, '_>],
    ) {
        self.generated(root, "README.txt", readme::BUNDLED.as_bytes().into());
        self.json(
            root,
            "header.json",
            &json!({
                "kind": "bundled_program",
                "file_size": b.bytes.len(),
                "identifier": String::from_utf8_lossy(&b.bytes[4..8]),
                "version": b.bundled.version(),
                "program": {"offset": b.program_span.offset, "size": b.program_span.len},
            }),
        );
        let mut pdir = self.subdir(root, "program");
        let inner = Origin {
            source: origin.source,
            shift: origin.shift + b.program_span.offset,
        };
        self.program(&mut pdir, file_name, inner, &b.program, data);

        let mut sets = self.subdir(root, "testsets");
        for (method, cases) in &b.suites {
            let name = sets.names.unique(&encode(method), "");
            let mut mdir = self.dir(sets.ino, name);
            let max_case = cases.len().saturating_sub(1) as u64;
            for (c, case) in cases.iter().enumerate() {
                let name = mdir.names.unique(&padded(c as u64, max_case), "");
                let mut cdir = self.dir(mdir.ino, name);
                let mut index = Vec::new();
                for (role, values) in [
                    ("input", &case.inputs),
                    ("expected", &case.expected_outputs),
                ] {
                    let max = values.len().saturating_sub(1) as u64;
                    for (i, v) in values.iter().enumerate() {
                        let stem = format!("{role}_{}", padded(i as u64, max));
                        let mut entry = self.test_value(&mut cdir, &stem, origin, v);
                        entry.role = Some(role);
                        entry.index = Some(i);
                        index.push(entry);
                    }
                }
                self.json(&mut cdir, "index.json", &index);
            }
        }
    }

    fn test_value(
        &mut self,
        dir: &mut Dir,
        stem: &str,
        origin: Origin,
        v: &TestValue,
    ) -> IndexEntry<'static> {
        let scalar = |kind, value| IndexEntry {
            kind: Some(kind),
            value: Some(value),
            ..IndexEntry::default()
        };
        match v {
            TestValue::Tensor(BundledTensor {
                scalar_type,
                sizes,
                dim_order,
                span,
            }) => {
                let shape = TensorShape {
                    scalar_type: *scalar_type,
                    sizes: sizes.clone(),
                    dim_order: dim_order.clone(),
                };
                let (bin, npy) = self.tensor_files(dir, stem, origin, *span, &shape);
                IndexEntry {
                    name: Some(bin),
                    npy: Some(npy),
                    kind: Some("Tensor"),
                    shape: Some(shape.describe()),
                    nbytes: Some(span.map_or(0, |s| s.len)),
                    source: span.map(|s| Source {
                        file: None,
                        offset: origin.shifted(s).offset,
                    }),
                    ..IndexEntry::default()
                }
            }
            TestValue::Int(x) => scalar("Int", json!(x)),
            TestValue::Bool(x) => scalar("Bool", json!(x)),
            TestValue::Double(x) => scalar("Double", json!(x)),
            TestValue::Unknown(t) => IndexEntry {
                kind: Some("unknown"),
                value: Some(json!(t)),
                ..IndexEntry::default()
            },
        }
    }
}
