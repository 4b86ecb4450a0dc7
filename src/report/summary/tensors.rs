//! The stored byte ranges of a tree, each once, with what the tree calls
//! them: every file that is a span of a source (its `.bin`), grouped by
//! inode, so a range seen at several paths (a constant and a method's
//! tensor, a delegate weight and its named-data entry) is one item.

use std::collections::HashMap;

use serde_json::Value;

use super::Subject;
use crate::format::Span;
use crate::tree::{Content, Ino, ROOT};

/// One stored byte range.
#[derive(Debug, Clone)]
pub(super) struct Stored {
    /// The first path the tree gives it.
    pub path: String,
    /// Which source holds it.
    pub source: usize,
    /// Where.
    pub span: Span,
    /// Element type name, for tensors (`FLOAT`, `xnn_datatype_qcint8`).
    pub dtype: Option<String>,
    /// NumPy's type string, `raw_bits` when it only holds the bits.
    pub numpy: Option<(String, bool)>,
    /// Logical sizes, for tensors.
    pub sizes: Option<Vec<i64>>,
    /// Its best name: a checkpoint key, fully qualified name, data key or
    /// delegate weight name; `None` when nothing names it.
    pub name: Option<String>,
    /// The module path it belongs to (see `layers`).
    pub layer: String,
    /// What stores it: `constants`, `named data`, a delegate, a `.ptd`.
    pub store: String,
    /// The delegate using it (`forward/0-XnnpackBackend`), if any.
    pub delegate: Option<String>,
    /// How a delegate quantized it, from its `index.json`.
    pub quant: Option<Quant>,
    /// True for the scales of another weight.
    pub is_scale: bool,
    /// Operators using it (`aten::permute_copy.out`), from `index.json`.
    pub ops: Vec<String>,
}

impl Stored {
    /// Elements, when the shape is known.
    pub fn elements(&self) -> Option<u64> {
        self.sizes
            .as_ref()
            .map(|s| s.iter().map(|&d| d.max(0) as u64).product())
    }

    /// True for a typed tensor (not an opaque blob).
    pub fn is_tensor(&self) -> bool {
        self.dtype.is_some()
    }
}

/// A delegate weight's quantization, as its `index.json` records it.
#[derive(Debug, Clone)]
pub(super) struct Quant {
    /// `PerChannelQuant`, `PerTensorQuant`, `PerChannelGroupQuant`, ...
    pub scheme: String,
    /// The dimension scales run along.
    pub channel_dim: Option<usize>,
    /// Elements per scale along that dimension, for group schemes.
    pub group_size: Option<u64>,
    /// Where the scales are: source, span and element type name.
    pub scales: Option<(usize, Span, String)>,
}

/// Every stored range of `subject`'s tree, in path order of first names.
pub(super) fn collect(subject: Subject<'_>, notes: &mut Vec<String>) -> Vec<Stored> {
    let tree = subject.tree;
    // Inode → every path, in walk order.
    let mut paths: HashMap<Ino, Vec<String>> = HashMap::new();
    let mut order: Vec<Ino> = Vec::new();
    for (path, ino) in tree.walk(ROOT) {
        if path
            .split('/')
            .any(|c| c == "segments" || c == "members" || c == "report")
        {
            continue;
        }
        let Some(f) = tree.file(ino) else { continue };
        if !matches!(*f.content, Content::Source { .. }) {
            continue;
        }
        let e = paths.entry(ino).or_default();
        if e.is_empty() {
            order.push(ino);
        }
        e.push(path);
    }
    let mut indexes = Indexes::default();
    let mut out = Vec::with_capacity(order.len());
    for ino in order {
        let Some(f) = tree.file(ino) else { continue };
        let Content::Source { source, span } = *f.content else {
            continue;
        };
        let all = paths.remove(&ino).unwrap_or_default();
        let first = tree.path(ino);
        let path = if all.contains(&first) {
            first
        } else {
            all.first().cloned().unwrap_or_default()
        };
        let meta = f.tensor;
        let entries: Vec<Value> = all
            .iter()
            .filter_map(|p| indexes.entry(subject, p, notes))
            .collect();
        let field = |k: &str| {
            entries
                .iter()
                .find_map(|e| e.get(k).filter(|v| !v.is_null()))
        };
        let text = |k: &str| field(k).and_then(Value::as_str).map(str::to_owned);
        let numpy = text("numpy_dtype")
            .map(|d| {
                (
                    d,
                    field("raw_bits").and_then(Value::as_bool).unwrap_or(false),
                )
            })
            .or_else(|| match meta.map(|m| m.dtype) {
                Some(crate::tree::Dtype::Scalar(t)) => {
                    crate::format::scalar::numpy(t).map(|n| (n.descr.to_owned(), n.raw_bits))
                }
                _ => None,
            });
        let delegate = all.iter().find_map(|p| delegate_of(p));
        let checkpoint = all
            .iter()
            .find_map(|p| p.split_once("by-name/").map(|(_, k)| k.to_owned()))
            .or_else(|| {
                field("checkpoint_names")
                    .and_then(Value::as_array)
                    .and_then(|a| a.first())
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            });
        let key = text("key").filter(|k| !is_digest_key(k));
        let weight_layer = text("layer");
        let name = checkpoint
            .clone()
            .or_else(|| text("fqn"))
            .or(key)
            .or_else(|| package_key(&all));
        let layer = match (&name, &weight_layer, &delegate) {
            (Some(n), _, _) => module_of(n),
            (None, Some(l), Some(d)) => format!("{d}/{l}"),
            (None, Some(l), None) => l.clone(),
            (None, None, _) => "(unnamed)".to_owned(),
        };
        let name = name.or_else(|| {
            let role = text("role");
            weight_layer.as_ref().map(|l| match (&delegate, role) {
                (Some(d), Some(r)) => format!("{d}/{l}.{r}"),
                (Some(d), None) => format!("{d}/{l}"),
                (None, _) => l.clone(),
            })
        });
        let is_scale = all.iter().any(|p| p.ends_with(".scale.bin"));
        let quant = quant_of(subject, &entries, &all);
        let ops = entries
            .iter()
            .filter_map(|e| e.get("users").and_then(Value::as_array))
            .flatten()
            .filter_map(|u| u.get("op").and_then(Value::as_str))
            .map(str::to_owned)
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        out.push(Stored {
            store: store_of(&path, delegate.as_deref(), tree.source_name(source)),
            path,
            source,
            span,
            dtype: meta.map(|m| m.dtype.name()),
            numpy: numpy.filter(|_| meta.is_some()),
            sizes: meta.map(|m| m.sizes.to_vec()),
            name,
            layer,
            delegate,
            quant,
            is_scale,
            ops,
        });
    }
    out
}

/// The module path of a tensor named `name`: all but its last dotted
/// component (`layers.0.attn.wq.weight` → `layers.0.attn.wq`); a name
/// without a dot is its own module.
pub(super) fn module_of(name: &str) -> String {
    match name.rsplit_once('.') {
        Some((m, _)) if !m.is_empty() => m.to_owned(),
        _ => name.to_owned(),
    }
}

/// True for keys that are digests rather than names: XNNPACK keys its
/// named data by SHA-256 (`<hex>`, `scale_<hex>`).
fn is_digest_key(k: &str) -> bool {
    let hex = k.rsplit('_').next().unwrap_or(k);
    hex.len() >= 32 && hex.bytes().all(|b| b.is_ascii_hexdigit())
}

/// `methods/forward/delegates/0-XnnpackBackend` → `forward/0-XnnpackBackend`.
fn delegate_of(path: &str) -> Option<String> {
    let parts: Vec<&str> = path.split('/').collect();
    let at = parts.iter().position(|p| *p == "delegates")?;
    let method = parts.get(at.checked_sub(1)?)?;
    let d = parts.get(at + 1)?;
    Some(format!("{method}/{d}"))
}

/// A `.ptn` tensor's key: its file under a top-level `tensors/`.
fn package_key(paths: &[String]) -> Option<String> {
    paths.iter().find_map(|p| {
        let (dir, file) = p.rsplit_once('/')?;
        let top = dir.rsplit('/').next()?;
        (top == "tensors" && !p.contains("methods/"))
            .then(|| file.strip_suffix(".bin").unwrap_or(file).to_owned())
    })
}

/// What stores the range at `path`.
fn store_of(path: &str, delegate: Option<&str>, source: &str) -> String {
    if let Some(d) = delegate
        && !path.contains("/named/")
        && !path.starts_with("named/")
    {
        return format!("delegate {d}");
    }
    let parts: Vec<&str> = path.split('/').collect();
    let has = |c: &str| parts.contains(&c);
    if source.ends_with(".ptd") || has("named") {
        "named data".to_owned()
    } else if has("constants") || has("tensors") && has("methods") {
        "constants".to_owned()
    } else if has("tensors") {
        "tensors".to_owned()
    } else {
        parts
            .len()
            .checked_sub(2)
            .and_then(|i| parts.get(i))
            .map_or("other", |s| s)
            .to_owned()
    }
}

/// The `index.json` entries of each directory, parsed once.
#[derive(Default)]
struct Indexes {
    dirs: HashMap<String, HashMap<String, Value>>,
}

impl Indexes {
    /// The entry describing the file at `path`, from its directory's
    /// `index.json`.
    fn entry(
        &mut self,
        subject: Subject<'_>,
        path: &str,
        notes: &mut Vec<String>,
    ) -> Option<Value> {
        let (dir, file) = path.rsplit_once('/').unwrap_or(("", path));
        if !self.dirs.contains_key(dir) {
            let parsed = load_index(subject, dir, notes);
            self.dirs.insert(dir.to_owned(), parsed);
        }
        self.dirs.get(dir)?.get(file).cloned()
    }
}

fn load_index(subject: Subject<'_>, dir: &str, notes: &mut Vec<String>) -> HashMap<String, Value> {
    let mut out = HashMap::new();
    let path = if dir.is_empty() {
        "index.json".to_owned()
    } else {
        format!("{dir}/index.json")
    };
    let Some(ino) = subject.tree.resolve(&path) else {
        return out;
    };
    let Some(f) = subject.tree.file(ino) else {
        return out;
    };
    let piece = f.content.read(0, f.content.len());
    let mut bytes = Vec::new();
    let tail = piece
        .tail
        .map(|(s, span)| subject.bytes(s, span))
        .unwrap_or(&[]);
    piece.assemble(tail, &mut bytes);
    let value: Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(e) => {
            notes.push(format!("{path}: not JSON ({e}); its names are not used"));
            return out;
        }
    };
    let items = match value {
        Value::Array(a) => a,
        Value::Object(o) => o.into_iter().map(|(_, v)| v).collect(),
        _ => Vec::new(),
    };
    for item in items {
        // A weight's scales are described inside its entry.
        if let Some(s) = item.get("scales").filter(|s| s.is_object())
            && let Some(n) = s.get("name").and_then(Value::as_str)
        {
            // Scales belong to their weight's layer.
            let mut s = s.clone();
            if let (Some(o), Some(l)) = (s.as_object_mut(), item.get("layer")) {
                o.insert("layer".to_owned(), l.clone());
                let role = item.get("role").and_then(Value::as_str).unwrap_or("weight");
                o.insert("role".to_owned(), Value::String(format!("{role}.scale")));
            }
            out.insert(n.to_owned(), s);
        }
        if let Some(n) = item.get("name").and_then(Value::as_str) {
            out.insert(n.to_owned(), item.clone());
        }
    }
    out
}

/// The quantization a weight's index entry records, with where its
/// scales are.
fn quant_of(subject: Subject<'_>, entries: &[Value], paths: &[String]) -> Option<Quant> {
    let (e, q) = entries.iter().find_map(|e| {
        e.get("quantization")
            .filter(|q| q.is_object())
            .map(|q| (e, q))
    })?;
    let num = |v: &Value, k: &str| v.get(k).and_then(Value::as_u64);
    let scheme = q
        .get("scheme")
        .and_then(Value::as_str)
        .unwrap_or("unknown")
        .to_owned();
    let scales = e.get("scales").and_then(|s| {
        let name = s.get("name")?.as_str()?;
        let dir = paths.iter().find_map(|p| {
            let (d, _) = p.rsplit_once('/')?;
            subject.tree.resolve(&format!("{d}/{name}")).map(|i| (d, i))
        });
        let (_, ino) = dir?;
        let f = subject.tree.file(ino)?;
        let Content::Source { source, span } = *f.content else {
            return None;
        };
        let dtype = s
            .get("stored_dtype")
            .and_then(Value::as_str)
            .unwrap_or("float32")
            .to_owned();
        Some((source, span, dtype))
    });
    Some(Quant {
        scheme,
        channel_dim: num(q, "channel_dim").map(|d| d as usize),
        group_size: num(q, "group_size").or_else(|| num(q, "block_size")),
        scales,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modules_and_digests() {
        assert_eq!(module_of("layers.0.attn.wq.weight"), "layers.0.attn.wq");
        assert_eq!(module_of("scale"), "scale");
        assert!(is_digest_key(
            "scale_764fbdc951b9073275969a61783721024dc566c0dd1d8e115e0098dd2d18ba36"
        ));
        assert!(!is_digest_key("fc1.weight"));
        assert_eq!(
            delegate_of("methods/forward/delegates/0-XnnpackBackend/xnnpack/weights/a.bin"),
            Some("forward/0-XnnpackBackend".to_owned())
        );
    }
}
