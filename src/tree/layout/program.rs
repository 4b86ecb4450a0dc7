//! The tree of a program (`.pte`).

use std::collections::HashSet;
use std::io::Write;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Value, json};

use super::delegate::{NamedIndex, Place, Shown};
use super::index_entry::{IndexEntry, Meaning, Source};
use super::meta::MethodMeta;
use super::tensor_index::{self, shape_of};
use super::{Attached, Builder, Dir, Origin};
use crate::format::{MethodInfo, Name, ProgramFile, Span, TensorData, TensorInfo};
use crate::tree::Dtype;
use crate::tree::file_names::{decode, encode, fitted, padded};
use crate::tree::render::{self, code_txt, flatc_json, readme};
use crate::tree::table::{Kind, Rows};
use crate::tree::weights::Missing;

/// Where a tensor's bytes are: their origin and span, and the name of
/// the attached data file holding them, if one does.
type Found<'d> = (Origin, Span, Option<&'d str>);

impl Builder {
    pub(super) fn program(
        &mut self,
        root: &mut Dir,
        file_name: &str,
        origin: Origin,
        p: &ProgramFile<'_>,
        data: &[Attached<'_, '_>],
    ) {
        self.weights_file(root, file_name);
        self.json(root, "header.json", &header(p));
        let len = p.bytes.len();
        self.lazy_program(root, "program.json", origin, len, move |p, out| {
            render::json_to(out, &summary(p, origin))
        });

        let mut methods = self.subdir(root, "methods");
        let mut method_dirs = Vec::new();
        let joined = self.profile_join(file_name, p);
        let plans: Vec<_> = p.methods.iter().map(|m| m.plan).collect();
        let named = NamedIndex::new(p, origin, data);
        let shown = Shown {
            file_name,
            origin,
            program: p,
        };
        for (mi, m) in p.methods.iter().enumerate() {
            let name = methods.names.unique(&encode(m.name), "");
            let mut mdir = self.dir(methods.ino, name.clone());
            let base = format!("methods/{name}");
            let delegate_dirs = self.delegates((&mut mdir, &name), &base, &shown, m, &named);
            let meta = MethodMeta::new(m, delegate_dirs, &plans);
            let (table, rows) = self.tensors(
                &mut mdir,
                file_name,
                origin,
                (m, &meta, p.bytes),
                (data, (mi, len)),
            );
            let nvalues = m.plan.values().map_or(0, |v| v.len());
            self.lazy_program(&mut mdir, "plan.json", origin, len, move |p, out| {
                let plan = p.methods.get(mi).map(|m| m.plan);
                let paths = value_paths(&base, &rows, nvalues);
                render::json_to(
                    out,
                    &plan.map(|plan| flatc_json::Plan {
                        plan,
                        paths: &paths,
                    }),
                )
            });
            let dirs = meta.delegate_dirs.clone();
            let method = m.name.to_string();
            let mut files = vec![format!("methods/{name}/source.tsv")];
            if joined.as_ref().is_some_and(|j| j.method_index == mi) {
                files.extend(
                    ["by-module.tsv", "modules.folded"]
                        .map(|f| format!("methods/{name}/profile/{f}")),
                );
            }
            let source = self.joined_or_say_why(file_name, (&method, Some(m)), &files);
            let notes = source.as_ref().and_then(|_| self.source_notes(&method));
            self.lazy_program(&mut mdir, "code.txt", origin, len, move |p, out| {
                match p.methods.get(mi) {
                    Some(m) => {
                        let code = code_txt::render_with_dirs(m.plan, &dirs);
                        match &notes {
                            Some(n) => {
                                out.write_all(crate::join::etrecord::annotate(&code, n).as_bytes())
                            }
                            None => out.write_all(code.as_bytes()),
                        }
                    }
                    None => Ok(()),
                }
            });
            self.method_meta(&mut mdir, (m, origin, (mi, len)), &meta, table);
            if let Some(rows) = &source {
                let tsv = crate::join::etrecord::source_tsv(rows);
                self.generated(&mut mdir, "source.tsv", tsv.into_bytes().into());
            }
            if let Some(j) = joined.as_ref().filter(|j| j.method_index == mi) {
                let rows = (j, source.clone());
                self.method_profile(&mut mdir, rows, (p, m, mi), &meta.delegate_dirs, origin);
            }
            method_dirs.push((name, meta.delegate_dirs));
        }

        self.program_ops(root, p, &method_dirs);
        let readme = readme::with_not_made(readme::PROGRAM, &std::mem::take(&mut self.not_made));
        self.generated(root, "README.txt", readme);

        let mut cdir = self.subdir(root, "constants");
        self.constants_table(cdir.ino, origin, &p.constants);
        let shift = origin.shift;
        self.lazy_program(
            &mut cdir,
            "index.json",
            origin,
            p.bytes.len(),
            move |p, out| constants_index(out, p, shift),
        );

        let mut ndir = self.subdir(root, "named");
        let attached_keys: usize = data.iter().map(|d| d.file.entries.len()).sum();
        ndir.names.reserve(p.named.len() + attached_keys + 1);
        let mut index = Vec::new();
        let attached = data.iter().flat_map(|d| {
            d.file.entries.iter().map(move |e| {
                (
                    e.key,
                    e.segment_index,
                    Origin {
                        source: d.source,
                        shift: 0,
                    },
                    e.span,
                    Some(d.name),
                )
            })
        });
        let own = p
            .named
            .iter()
            .map(|n| (n.key, n.segment_index, origin, n.span, None));
        for (key, segment_index, o, span, file) in own.chain(attached) {
            let holder = match file {
                None => Some(p.bytes),
                Some(f) => data.iter().find(|d| d.name == f).map(|d| d.file.bytes),
            };
            let checkpoint_names = holder.and_then(|b| {
                let direct = self.checkpoint_names(span, b)?;
                let permuted = || self.permuted_names(span, b);
                Some(if direct.is_empty() {
                    permuted()
                } else {
                    direct
                })
            });
            let (name, ino) = self.named_blob(&mut ndir, &encode(key), o, span);
            self.weight_key(o.source, o.shifted(span), &key.to_string());
            for k in checkpoint_names.iter().flatten() {
                self.by_name.push((k.clone(), ino));
            }
            index.push(NamedRow {
                name,
                key: key.bytes().into(),
                segment_index,
                file: file.map(Box::from),
                offset: o.shifted(span).offset,
                len: span.len,
                checkpoint_names,
            });
        }
        // Rendered when first read: serializing it cost as much as laying
        // out the directory it describes.
        let render = move |_: &[u8], out: &mut dyn Write| {
            let entries: Vec<IndexEntry<'_>> = index.iter().map(NamedRow::entry).collect();
            render::json_to(out, &entries)
        };
        self.lazy(&mut ndir, "index.json", origin.source, Box::new(render));
        self.by_name_dir(root);

        let mut sdir = self.subdir(root, "segments");
        sdir.names.reserve(p.segments.len());
        let max = p.segments.len().saturating_sub(1) as u64;
        for (i, span) in p.segments.iter().enumerate() {
            self.raw(&mut sdir, &padded(i as u64, max), origin, *span);
        }
    }

    /// `tensors/` of a method, computed from a row per tensor with bytes.
    /// Returns the table's index and its rows.
    fn tensors(
        &mut self,
        mdir: &mut Dir,
        file_name: &str,
        origin: Origin,
        (m, meta, bytes): (&MethodInfo<'_>, &MethodMeta, &[u8]),
        (data, (mi, len)): (&[Attached<'_, '_>], (usize, usize)),
    ) -> (usize, Arc<Rows>) {
        let mut tdir = self.subdir(mdir, "tensors");
        let max_value = tensor_index::max_value(m);
        let mut rows = Rows::new(origin.source, max_value, self.names.is_some());
        let mut kinds = foldhash::HashMap::default();
        let mut warned: HashSet<Name<'_>> = HashSet::new();
        for t in &m.tensors {
            let found = match t.data.span() {
                Some(span) => Some((origin, span, None)),
                None => match self.external(file_name, m, t, data, &mut warned) {
                    Ok(found) => found,
                    Err(why) => {
                        let key = match t.data {
                            TensorData::External { key } => Some(decode(&encode(key))),
                            _ => None,
                        };
                        let what = Missing {
                            value: Some(t.value_index),
                            key,
                            why,
                            ..Missing::default()
                        };
                        self.missing_weight(tdir.ino, what);
                        None
                    }
                },
            };
            let Some((o, span, file)) = found else {
                continue;
            };
            let holder = match file {
                None => Some(bytes),
                Some(f) => data.iter().find(|d| d.name == f).map(|d| d.file.bytes),
            };
            // Tensors of one shape share its parsed sizes and dim order, so
            // where they are identifies the shape without hashing them.
            let key = (
                t.scalar_type,
                t.sizes.as_ptr() as usize,
                t.dim_order.as_ptr() as usize,
            );
            let kind = match kinds.get(&key) {
                Some(&k) => k,
                None => {
                    let shape = shape_of(t);
                    let kind = Kind {
                        meta: self.meta_ordered(
                            Dtype::Scalar(shape.scalar_type),
                            shape.sizes.clone(),
                            Some(shape.dim_order.clone()),
                        ),
                        npy: self.npy_header(&shape),
                    };
                    let k = rows.push_kind(kind);
                    kinds.insert(key, k);
                    k
                }
            };
            let fqn = t.fqn.map(encode);
            let source = (o.source, file.unwrap_or(file_name));
            let row = rows.push(t.value_index, fqn.as_deref(), kind, source, o.shifted(span));
            if let Some(names) = holder.and_then(|b| self.checkpoint_names(span, b)) {
                rows.set_checkpoint_names(row, names);
            }
            if t.fqn.is_none()
                && let Some(label) = meta.alias_label(t.value_index)
            {
                let bin = rows.names(row).bin;
                let stem = format!("{}.{label}", bin.trim_end_matches(".bin"));
                rows.set_alias(row, fitted(&stem, &[".bin"]).concat());
            }
        }
        let rows = Arc::new(rows);
        let table = self.tensor_table(tdir.ino, rows.clone());
        let dirs = meta.delegate_dirs.clone();
        let placed = rows.clone();
        self.lazy_program(&mut tdir, "index.json", origin, len, move |p, out| {
            let Some(m) = p.methods.get(mi) else {
                return Ok(());
            };
            let plans: Vec<_> = p.methods.iter().map(|m| m.plan).collect();
            let meta = MethodMeta::new(m, dirs.clone(), &plans);
            render::json_to(
                out,
                &render::Streamed(|| tensor_index::entries(m, &meta, &placed)),
            )
        });
        (table, rows)
    }

    /// Where an external tensor's bytes are among the attached data files:
    /// the first file with its key. Warns once per key when none has it;
    /// `Err` says why its bytes are not there.
    fn external<'d, 'k>(
        &mut self,
        file_name: &str,
        m: &MethodInfo<'_>,
        t: &TensorInfo<'k>,
        data: &[Attached<'d, '_>],
        warned: &mut HashSet<Name<'k>>,
    ) -> Result<Option<Found<'d>>, String> {
        let TensorData::External { key } = t.data else {
            return Ok(None);
        };
        let found = crate::meta::external::find(data.iter().map(|d| d.file), key)
            .map(|(i, e)| (&data[i], e.span));
        match found {
            Some((d, span)) if span.len >= t.nbytes => Ok(Some((
                Origin {
                    source: d.source,
                    shift: 0,
                },
                Span {
                    len: t.nbytes,
                    ..span
                },
                Some(d.name),
            ))),
            Some((d, span)) => {
                let why = format!(
                    "{key:?} in {} has {} bytes, the tensor needs {}",
                    d.name, span.len, t.nbytes
                );
                self.warnings.push(format!(
                    "{file_name}: method {:?} value {}: {why}",
                    m.name, t.value_index
                ));
                Err(why)
            }
            None => {
                let why = if data.is_empty() {
                    "no data file is attached (--data)"
                } else {
                    "no attached data file has that key"
                };
                if warned.insert(key) {
                    self.warnings.push(format!(
                        "{file_name}: method {:?}: external tensor {key:?} (value {}) is missing: {why}",
                        m.name, t.value_index
                    ));
                }
                Err(why.to_owned())
            }
        }
    }

    /// `delegates/` of a method (`base` is the method's directory path),
    /// decoding the payloads of backends ptefs knows. Returns each
    /// delegate's directory name.
    fn delegates(
        &mut self,
        (mdir, method): (&mut Dir, &str),
        base: &str,
        shown: &Shown<'_, '_>,
        m: &MethodInfo<'_>,
        named: &NamedIndex<'_>,
    ) -> Vec<String> {
        let origin = shown.origin;
        let mut ddir = self.subdir(mdir, "delegates");
        let mut names = Vec::new();
        let max = m.delegates.len().saturating_sub(1) as u64;
        for d in &m.delegates {
            let stem = format!("{}-{}", padded(d.index as u64, max), encode(d.id));
            let name = ddir.names.unique(&stem, "");
            names.push(name.clone());
            let mut one = self.dir(ddir.ino, name.clone());
            let about = crate::tree::DelegateDir {
                label: format!("{method}/{name}"),
                backend: encode(d.id),
                method: m.name.to_string(),
            };
            self.delegate_dirs
                .insert(one.ino, std::sync::Arc::new(about));
            match d.processed {
                Some(span) => {
                    self.raw(&mut one, "processed", origin, span);
                }
                None => self.generated(&mut one, "processed.bin", Box::default()),
            }
            let specs: Vec<Value> = d
                .compile_specs
                .iter()
                .map(|(k, v)| match std::str::from_utf8(v) {
                    Ok(text) => json!({"key": k, "size": v.len(), "text": text}),
                    Err(_) => {
                        json!({"key": k, "size": v.len(), "hex": crate::delegate::artifact::hex(v)})
                    }
                })
                .collect();
            self.json(&mut one, "compile_specs.json", &specs);
            // A delegate whose payload is not located, or whose backend id
            // is not text, has nothing to decode.
            if let (Some(processed), Some(id)) = (d.processed, d.id.as_str()) {
                let place = Place {
                    dir_path: format!("{base}/delegates/{name}"),
                    origin,
                    program: shown.program,
                    file_name: shown.file_name,
                    processed,
                    specs: crate::delegate::text_specs(&d.compile_specs),
                };
                self.decoded_delegate(&mut one, id, &place, named);
            }
        }
        names
    }
}

/// `constants/index.json`: per constant buffer its file, where it is,
/// the bytes the file holds (those of the largest tensor using it) and
/// the bytes of its whole slot (to the next buffer, padding included).
fn constants_index(
    out: &mut dyn std::io::Write,
    p: &ProgramFile<'_>,
    shift: u64,
) -> std::io::Result<()> {
    let slots = p.constant_slots().unwrap_or_default();
    let max = p.constants.len().saturating_sub(1) as u64;
    let entries = || {
        p.constants.iter().enumerate().filter_map(|(i, served)| {
            let served = (*served)?;
            let slot = slots.get(i).copied().flatten().unwrap_or(served);
            Some(ConstantEntry {
                index: i,
                name: format!("{}.bin", padded(i as u64, max)),
                offset: served.offset + shift,
                nbytes: served.len,
                slot_nbytes: slot.len,
                padding: slot.len.saturating_sub(served.len),
            })
        })
    };
    render::json_to(out, &render::Streamed(entries))
}

/// One entry of `constants/index.json`.
#[derive(Serialize)]
struct ConstantEntry {
    index: usize,
    name: String,
    offset: u64,
    nbytes: u64,
    slot_nbytes: u64,
    padding: u64,
}

fn header(p: &ProgramFile<'_>) -> Value {
    let h = &p.header;
    json!({
        "kind": "program",
        "file_size": p.bytes.len(),
        "root_offset": h.root_offset,
        "identifier": String::from_utf8_lossy(&h.magic),
        "extended_header": h.extended.as_ref().map(|e| json!({
            "magic": String::from_utf8_lossy(&e.magic),
            "length": e.length,
            "program_size": e.program_size,
            "segment_base_offset": e.segment_base_offset,
            "segment_data_size": e.segment_data_size,
        })),
        "flatbuffer_size": p.flatbuffer.len,
    })
}

/// `program.json`: program-level facts, no bulk bytes.
fn summary(p: &ProgramFile<'_>, origin: Origin) -> Value {
    let prog = p.program;
    let max = p.segments.len().saturating_sub(1) as u64;
    let segments: Vec<Value> = prog
        .segments()
        .iter()
        .flatten()
        .zip(&p.segments)
        .enumerate()
        .map(|(i, (s, span))| {
            json!({
                "index": i,
                "offset": s.offset(),
                "size": s.size(),
                "file_offset": origin.shifted(*span).offset,
                "path": format!("segments/{}.bin", padded(i as u64, max)),
            })
        })
        .collect();
    let subsegments = |s: crate::schema::program::SubsegmentOffsets<'_>| {
        json!({
            "segment_index": s.segment_index(),
            "offsets": s.offsets().iter().flatten().collect::<Vec<u64>>(),
        })
    };
    let inline: Vec<Value> = prog
        .backend_delegate_data()
        .iter()
        .flatten()
        .enumerate()
        .map(|(i, d)| {
            let span = Span::of_vector(p.bytes, d.data().map(|v| v.bytes()));
            json!({
                "index": i,
                "size": span.map_or(0, |s| s.len),
                "file_offset": span.map(|s| origin.shifted(s).offset),
            })
        })
        .collect();
    json!({
        "identifier": String::from_utf8_lossy(&p.header.magic),
        "version": prog.version(),
        "methods": p.methods.iter().map(|m| m.name).collect::<Vec<_>>(),
        "segments": segments,
        "constant_segment": prog.constant_segment().map(subsegments),
        "constant_buffer_count": prog.constant_buffer().map_or(0, |b| b.len()),
        "mutable_data_segments": prog.mutable_data_segments().map(|v| v.iter().map(subsegments).collect::<Vec<_>>()),
        "backend_delegate_data": inline,
        "named_data": p.named.iter().map(|n| json!({"key": n.key, "segment_index": n.segment_index, "nbytes": n.span.len})).collect::<Vec<_>>(),
    })
}

/// Each value's `.bin` path (relative to the root) for `plan.json`, by
/// value index; `base` is the method's directory.
fn value_paths(base: &str, rows: &Rows, nvalues: usize) -> Vec<Option<String>> {
    let mut paths = vec![None; nvalues];
    for row in 0..rows.len() as u32 {
        if let Some(p) = paths.get_mut(rows.value(row)) {
            *p = Some(format!("{base}/tensors/{}", rows.names(row).bin));
        }
    }
    paths
}

/// A row of `named/index.json`, held until the file is first read.
struct NamedRow {
    name: String,
    key: Box<[u8]>,
    segment_index: u32,
    /// The attached data file holding the bytes (`None`: the file shown).
    file: Option<Box<str>>,
    offset: u64,
    len: u64,
    checkpoint_names: Option<Vec<String>>,
}

impl NamedRow {
    fn entry(&self) -> IndexEntry<'_> {
        let mut e = IndexEntry {
            name: Some(self.name.clone()),
            key: Some(Name::new(&self.key)),
            nbytes: Some(self.len),
            segment_index: Some(self.segment_index),
            source: Some(Source {
                file: self.file.as_deref(),
                offset: self.offset,
            }),
            location: Some("named"),
            meaning: Meaning {
                checkpoint_names: self.checkpoint_names.clone(),
                ..Meaning::default()
            }
            .boxed(),
            ..IndexEntry::default()
        };
        e.flag_escaped_names();
        e
    }
}
