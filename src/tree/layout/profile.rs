//! The tree of an ETDump (`.etdp`): `header.json`, per run data block
//! `runs/<n>/events.json` and `allocations.json`, and a `trace.json` in
//! Chrome's trace-event format.

use std::collections::BTreeMap;

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{Value as Json, json};

use super::index_entry::TensorShape;
use super::{Builder, Dir, Origin};
use crate::format::etdump::{DebugTensor, Event, ProfileFile, Run, TICK, Value};
use crate::format::scalar;
use crate::format::strings::Name;
use crate::tree::Content;
use crate::tree::file_names::padded;
use crate::tree::render::{Streamed, readme};

/// Why a logged tensor has no file.
pub(super) const NO_DEBUG_BUFFER: &str =
    "the debug buffer (<name>.debug.bin or debug_output.bin beside the ETDump) is not there";

/// Ticks as milliseconds, a tick being taken as 1 ns.
pub fn ms(ticks: u64) -> f64 {
    ticks as f64 / 1e6
}

impl Builder {
    pub(super) fn profile(&mut self, root: &mut Dir, origin: Origin, p: &ProfileFile<'_>) {
        let buffer = self.debug_buffers.get(&origin.source).copied();
        let events: usize = p.runs.iter().map(|r| r.events.len()).sum();
        self.json(
            root,
            "header.json",
            &json!({
                "kind": "profile",
                "file_size": p.bytes.len(),
                "size_prefix": p.size_prefix,
                "identifier": String::from_utf8_lossy(p.bytes.get(8..12).unwrap_or_default()),
                "version": p.version,
                "run_data_blocks": p.runs.len(),
                "events": events,
                "debug_tensors": p.debug_tensors().len(),
                "debug_buffer": buffer.map(|(_, len)| json!({
                    "name": self.source_names.get(&buffer.map_or(0, |b| b.0)),
                    "size": len,
                })),
                "tick": TICK,
                "warnings": p.warnings,
            }),
        );
        let mut rdir = self.subdir(root, "runs");
        let max = p.runs.len().saturating_sub(1) as u64;
        let tensors = p.debug_tensors();
        let kmax = tensors.len().saturating_sub(1) as u64;
        let mut files: Vec<Result<String, String>> = Vec::new();
        let mut dirs = Vec::with_capacity(p.runs.len());
        for i in 0..p.runs.len() {
            let mut dir = self.subdir(&mut rdir, &padded(i as u64, max));
            // The tensors come in run order.
            let run_range = tensors.partition_point(|(r, _, _)| *r < i)
                ..tensors.partition_point(|(r, _, _)| *r <= i);
            let first_tensor = run_range.start;
            let here: Vec<&DebugTensor> = tensors[run_range].iter().map(|(_, _, t)| *t).collect();
            match buffer {
                Some((source, len)) if !here.is_empty() => {
                    let mut ddir = self.subdir(&mut dir, "debug");
                    for t in here {
                        let stem = padded(files.len() as u64, kmax);
                        let file = self.debug_tensor(&mut ddir, &stem, (source, len), t);
                        files.push(file.map(|name| format!("debug/{name}")));
                    }
                }
                _ => files.extend(here.iter().map(|_| Err(NO_DEBUG_BUFFER.to_owned()))),
            }
            dirs.push((dir, first_tensor));
        }
        // A run's events run to millions: its files are rendered when
        // first looked at, streamed from the ETDump parsed again.
        let files = std::sync::Arc::new(files);
        for (i, (mut dir, first_tensor)) in dirs.into_iter().enumerate() {
            let names = files.clone();
            self.lazy(
                &mut dir,
                "events.json",
                origin.source,
                Box::new(move |bytes, out| {
                    with_run(bytes, i, out, |run, out| {
                        let events = EventsJson {
                            run,
                            first_tensor,
                            files: &names,
                        };
                        crate::tree::render::json_to(out, &RunJson::new(i, run, events))
                    })
                }),
            );
            self.lazy(
                &mut dir,
                "allocations.json",
                origin.source,
                Box::new(move |bytes, out| {
                    with_run(bytes, i, out, |run, out| {
                        crate::tree::render::json_to(out, &AllocationsJson(run))
                    })
                }),
            );
        }
        // The one file as large as all the runs together: rendered when
        // first looked at, from the ETDump parsed again.
        let name = (self.source_names.get(&origin.source).cloned()).unwrap_or_default();
        let sources = match self.profiled_method(p) {
            Some(method) => self
                .joined_or_say_why(
                    &name,
                    (&method, None),
                    &["the module_hierarchy and stack_frame of trace.json's events".to_owned()],
                )
                .map(|rows| crate::join::etrecord::row_sources(&rows))
                .unwrap_or_default(),
            None => Default::default(),
        };
        let readme = readme::with_not_made(readme::PROFILE, &std::mem::take(&mut self.not_made));
        self.generated(root, "README.txt", readme);
        self.lazy(
            root,
            "trace.json",
            origin.source,
            Box::new(move |bytes, out| match ProfileFile::parse(bytes) {
                Ok(p) => crate::tree::render::json_to(out, &Trace(&p, &sources)),
                Err(e) => Err(crate::tree::lazy::failed(e)),
            }),
        );
    }
}

impl Builder {
    /// `<stem>.npy` in `dir`: the tensor's bytes in the debug buffer
    /// (`source`, `buffer_len` bytes long) after a NumPy header;
    /// `<stem>.ERROR.txt` saying why when it has none. Returns the file's
    /// name, or the reason.
    pub(super) fn debug_tensor(
        &mut self,
        dir: &mut Dir,
        stem: &str,
        (source, buffer_len): (crate::tree::SourceId, u64),
        t: &DebugTensor,
    ) -> Result<String, String> {
        let shape = TensorShape {
            scalar_type: t.scalar_type,
            sizes: t.sizes.clone().into(),
            dim_order: (0..t.sizes.len().min(256) as u16)
                .map(|d| d as u8)
                .collect(),
        };
        let fail = |b: &mut Builder, dir: &mut Dir, why: String| {
            b.generated(
                dir,
                &format!("{stem}.ERROR.txt"),
                format!("{why}\n").into_bytes().into(),
            );
            Err(why)
        };
        let span = match t.span_in(buffer_len) {
            Ok(span) => span,
            Err(why) => return fail(self, dir, why),
        };
        let Some(prefix) = self.npy_header(&shape) else {
            return fail(self, dir, "NumPy has no type for it".to_owned());
        };
        let name = dir.names.unique(stem, ".npy");
        let meta = Some(self.meta_of(super::Dtype::Scalar(t.scalar_type), shape.sizes.clone()));
        self.file(
            dir.ino,
            name.clone(),
            Content::Prefixed {
                prefix,
                source,
                span,
            },
            meta,
        );
        Ok(name)
    }
}

fn id_int(id: i32) -> Json {
    if id == -1 { Json::Null } else { json!(id) }
}

fn tensor_json(t: &DebugTensor, k: &mut usize, files: &[Result<String, String>]) -> Json {
    let index = *k;
    *k += 1;
    let (file, why) = match files.get(index) {
        Some(Ok(f)) => (Some(f.as_str()), None),
        Some(Err(e)) => (None, Some(e.as_str())),
        None => (None, None),
    };
    json!({
        "debug_tensor": index,
        "scalar_type": scalar::name(t.scalar_type),
        "sizes": t.sizes,
        "strides": t.strides,
        "offset": t.offset,
        "nbytes": t.nbytes,
        "problem": t.problem,
        "npy": file,
        "npy_missing": why,
    })
}

/// Renders run `i` of the ETDump `bytes` with `render`, or says why not.
fn with_run(
    bytes: &[u8],
    i: usize,
    out: &mut dyn std::io::Write,
    render: impl FnOnce(&Run<'_>, &mut dyn std::io::Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    match ProfileFile::parse(bytes) {
        Ok(p) => match p.runs.get(i) {
            Some(run) => render(run, out),
            None => Err(crate::tree::lazy::failed(format!(
                "the ETDump has no run {i}"
            ))),
        },
        Err(e) => Err(crate::tree::lazy::failed(e)),
    }
}

/// `runs/<n>/events.json`: the run's fields, then its events.
#[derive(serde::Serialize)]
struct RunJson<'r, 'a> {
    run: usize,
    name: Option<Name<'a>>,
    bundled_input_index: i32,
    allocators: &'r [Option<Name<'a>>],
    events: EventsJson<'r, 'a>,
}

impl<'r, 'a> RunJson<'r, 'a> {
    fn new(index: usize, run: &'r Run<'a>, events: EventsJson<'r, 'a>) -> Self {
        RunJson {
            run: index,
            name: run.name,
            bundled_input_index: run.bundled_input_index,
            allocators: &run.allocators,
            events,
        }
    }
}

/// A run's events, each made as it is written. Debug tensors are
/// numbered across runs: this run's first is `first_tensor`, and `files`
/// gives each its `.npy` or why it has none.
struct EventsJson<'r, 'a> {
    run: &'r Run<'a>,
    first_tensor: usize,
    files: &'r [Result<String, String>],
}

impl Serialize for EventsJson<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut k = self.first_tensor;
        let mut seq = s.serialize_seq(Some(self.run.events.len()))?;
        for (i, e) in self.run.events.iter().enumerate() {
            seq.serialize_element(&event_json(i, e, self.run, &mut k, self.files))?;
        }
        seq.end()
    }
}

/// One event of `events.json`; `k` numbers its debug tensors.
fn event_json(
    i: usize,
    e: &Event<'_>,
    run: &Run<'_>,
    k: &mut usize,
    files: &[Result<String, String>],
) -> Json {
    match e {
        Event::Profile(p) => json!({
            "index": i,
            "kind": "profile",
            "name": p.name,
            "chain_index": p.chain_index,
            "instruction_id": p.instruction_id,
            "delegate_debug_id_int": id_int(p.delegate_debug_id_int),
            "delegate_debug_id_str": p.delegate_debug_id_str,
            "delegate_debug_metadata_hex": p.delegate_debug_metadata.map(hex),
            "start_ticks": p.start,
            "end_ticks": p.end,
            "duration_ticks": p.duration(),
            "duration_ms": p.duration().map(ms),
        }),
        Event::Allocation(a) => json!({
            "index": i,
            "kind": "allocation",
            "allocator_id": a.allocator_id,
            "allocator": usize::try_from(a.allocator_id).ok().and_then(|id| run.allocators.get(id)),
            "size": a.size,
        }),
        Event::Debug(d) => {
            let value = match &d.value {
                Value::Missing => json!({"type": "missing"}),
                Value::Null => json!({"type": "Null"}),
                Value::Int(x) => json!({"type": "Int", "value": x}),
                Value::Bool(x) => json!({"type": "Bool", "value": x}),
                Value::Float(x) => json!({"type": "Float", "value": x}),
                Value::Double(x) => json!({"type": "Double", "value": x}),
                Value::String(_) => json!({"type": "String", "value": null}),
                Value::Unknown(t) => json!({"type": format!("unknown ({t})")}),
                Value::Tensor(t) => {
                    json!({"type": "Tensor", "tensor": tensor_json(t, k, files)})
                }
                Value::TensorList(ts) => json!({
                    "type": "TensorList",
                    "tensors": ts.iter().map(|t| tensor_json(t, k, files)).collect::<Vec<_>>(),
                }),
            };
            json!({
                "index": i,
                "kind": "debug",
                "name": d.name,
                "chain_index": d.chain_index,
                "instruction_id": d.instruction_id,
                "delegate_debug_id_int": id_int(d.delegate_debug_id_int),
                "delegate_debug_id_str": d.delegate_debug_id_str,
                "output": d.output,
                "value": value,
            })
        }
        Event::Empty => json!({"index": i, "kind": "empty"}),
    }
}

/// `runs/<n>/allocations.json`: the allocators with the count and total
/// of their allocations, then each allocation.
struct AllocationsJson<'r, 'a>(&'r Run<'a>);

impl Serialize for AllocationsJson<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let run = self.0;
        let allocations = || {
            run.events.iter().enumerate().filter_map(|(i, e)| match e {
                Event::Allocation(a) => Some((i, a)),
                _ => None,
            })
        };
        let mut totals: BTreeMap<i32, (u64, u64)> = BTreeMap::new();
        for (_, a) in allocations() {
            let t = totals.entry(a.allocator_id).or_default();
            t.0 += 1;
            t.1 = t.1.saturating_add(a.size);
        }
        let allocators: Vec<Json> = run
            .allocators
            .iter()
            .enumerate()
            .map(|(id, name)| {
                let (count, bytes) = i32::try_from(id)
                    .ok()
                    .and_then(|id| totals.get(&id))
                    .copied()
                    .unwrap_or_default();
                json!({"id": id, "name": name, "allocations": count, "bytes": bytes})
            })
            .collect();
        let list = Streamed(|| {
            allocations()
                .map(|(i, a)| json!({"event": i, "allocator_id": a.allocator_id, "size": a.size}))
        });
        let mut map = s.serialize_map(Some(2))?;
        map.serialize_entry("allocators", &allocators)?;
        map.serialize_entry("allocations", &list)?;
        map.end()
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// `trace.json`: every profile event as a complete (`"ph": "X"`) event in
/// microseconds from the earliest start in the file. Each run data block
/// is a process; in it, the method-level events (chain -1) are one thread
/// and each chain another, where a delegate's events nest inside the
/// instruction that called it. An instruction's events carry in `args`
/// the module paths and source lines the second field gives by
/// instruction, and a delegate's own event those it gives by
/// `<instruction>:<debug id>` (from an ETRecord, see
/// [`crate::join::etrecord::row_sources`]; empty without one). Events are
/// made as they are written.
pub struct Trace<'p, 'a>(
    pub &'p ProfileFile<'a>,
    pub &'p std::collections::HashMap<String, (String, String)>,
);

impl Serialize for Trace<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let t0 = self
            .0
            .runs
            .iter()
            .flat_map(|r| &r.events)
            .filter_map(|e| match e {
                Event::Profile(p) if p.duration().is_some() => Some(p.start),
                _ => None,
            })
            .min()
            .unwrap_or(0);
        let mut map = s.serialize_map(Some(3))?;
        let te = TraceEvents {
            p: self.0,
            t0,
            sources: self.1,
        };
        map.serialize_entry("traceEvents", &te)?;
        map.serialize_entry("displayTimeUnit", "ns")?;
        map.serialize_entry("otherData", &json!({"tick": TICK, "origin_ticks": t0}))?;
        map.end()
    }
}

/// The `traceEvents` array of [`Trace`].
struct TraceEvents<'p, 'a> {
    p: &'p ProfileFile<'a>,
    t0: u64,
    sources: &'p std::collections::HashMap<String, (String, String)>,
}

impl Serialize for TraceEvents<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let us = |ticks: u64| ticks.saturating_sub(self.t0) as f64 / 1e3;
        let mut seq = s.serialize_seq(None)?;
        for (r, run) in self.p.runs.iter().enumerate() {
            let name = run.name.map_or_else(String::new, |n| n.show().into_owned());
            seq.serialize_element(&json!({
                "name": "process_name", "ph": "M", "pid": r, "tid": 0,
                "args": {"name": format!("run {r} ({name})")},
            }))?;
            seq.serialize_element(&json!({
                "name": "process_sort_index", "ph": "M", "pid": r, "tid": 0,
                "args": {"sort_index": r},
            }))?;
            let mut threads = BTreeMap::new();
            for (i, e) in run.events.iter().enumerate() {
                let Event::Profile(ev) = e else { continue };
                let Some(dur) = ev.duration() else { continue };
                // tid 0: the method; tid c + 1: chain c.
                let tid = i64::from(ev.chain_index).saturating_add(1).max(0);
                threads.entry(tid).or_insert_with(|| {
                    if tid == 0 {
                        "method".to_owned()
                    } else {
                        format!("chain {}", tid - 1)
                    }
                });
                let label = match (ev.name, ev.delegate_debug_id_str) {
                    (Some(n), _) => n.show().into_owned(),
                    (None, Some(id)) => id.show().into_owned(),
                    (None, None) if ev.delegate_debug_id_int != -1 => {
                        format!("delegate {}", ev.delegate_debug_id_int)
                    }
                    (None, None) => "(unnamed)".to_owned(),
                };
                let mut args = json!({
                    "event": i,
                    "instruction_id": ev.instruction_id,
                    "chain_index": ev.chain_index,
                    "delegate_debug_id_int": id_int(ev.delegate_debug_id_int),
                    "delegate_debug_id_str": ev.delegate_debug_id_str,
                    "start_ticks": ev.start,
                    "end_ticks": ev.end,
                });
                // A delegate's own event has the nodes the delegate map
                // names for its debug id, and nothing where the map is
                // empty (XNNPACK's): its call's nodes are the call's.
                let key = match (ev.is_delegated(), ev.delegate_debug_id_str) {
                    (false, _) => ev.instruction_id.to_string(),
                    (true, Some(id)) => format!("{}:{}", ev.instruction_id, id.show()),
                    (true, None) => format!("{}:{}", ev.instruction_id, ev.delegate_debug_id_int),
                };
                let source = (ev.chain_index >= 0)
                    .then(|| self.sources.get(&key))
                    .flatten();
                if let Some((modules, frames)) = source {
                    args["module_hierarchy"] = json!(modules);
                    args["stack_frame"] = json!(frames);
                }
                seq.serialize_element(&json!({
                    "name": label,
                    "cat": if ev.is_delegated() { "delegate" } else { "runtime" },
                    "ph": "X",
                    "ts": us(ev.start),
                    "dur": dur as f64 / 1e3,
                    "pid": r,
                    "tid": tid,
                    "args": args,
                }))?;
            }
            for (tid, name) in threads {
                seq.serialize_element(&json!({
                    "name": "thread_name", "ph": "M", "pid": r, "tid": tid,
                    "args": {"name": name},
                }))?;
            }
        }
        seq.end()
    }
}
