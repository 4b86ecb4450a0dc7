//! The folder of a decoded delegate (`xnnpack/`, `vulkan/`, …), laid out
//! from what its backend says it shows ([`crate::delegate::folder`]):
//! `header.json`, files served as byte ranges of the source, generated
//! files, files rendered when first read, `weights/` with each weight's
//! `.bin`, `.npy` and `index.json` entry, and `ERROR.txt` for a payload
//! that does not decode (or decodes only in part). Nothing here knows a
//! backend: each is found by its delegate id.

use std::collections::HashMap;
use std::io::{self, Write};
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::delegate::{Located, NamedIndex, Place, found, located};
use super::index_entry::Source;
use super::{Builder, Dir};
use crate::delegate::folder::{File, Layout, Paths, Weight, Weights};
use crate::delegate::strided::Strided;
use crate::delegate::{self, Backend, Decoded, Lookup, Rendered};
use crate::format::Span;
use crate::tree::file_names::encode;
use crate::tree::lazy::{self, SharedBytes};
use crate::tree::render::npy;
use crate::tree::{Dtype, SourceId, render};

impl Builder {
    /// Decodes the payload of a delegate whose backend has a decoder and
    /// lays out what it holds; opaque backends get nothing more.
    pub(super) fn decoded_delegate(
        &mut self,
        ddir: &mut Dir,
        id: &str,
        place: &Place<'_, '_>,
        named: &NamedIndex<'_>,
    ) {
        let Some(backend) = delegate::backend(id) else {
            return;
        };
        let payload = place.processed.bytes(place.program.bytes);
        let at = place.origin.shifted(place.processed).offset;
        let mut x = self.subdir(ddir, backend.folder());
        if let Some(mut h) = backend.header(payload, at) {
            if let Some(o) = h.as_object_mut() {
                let shared = shared_with(place);
                if !shared.is_empty() {
                    o.insert("shared_with".into(), Value::Array(shared));
                }
            }
            self.json(&mut x, "header.json", &h);
        }
        let decoded = match backend.decode(payload, &place.specs, named) {
            Ok(d) => d,
            Err(e) => return self.not_decoded(&mut x, place, &[e.to_string()]),
        };
        let Layout {
            files,
            weights,
            errors,
        } = decoded.layout();
        let base = format!("{}/{}", place.dir_path, backend.folder());
        let context = self.render_context(place, named);
        let paths = weights.map_or_else(HashMap::new, |w| {
            self.weights_dir((&mut x, place, named), &base, w, (backend, &context))
        });
        let paths = Arc::new(paths);
        let mut folders = Folders::new(x);
        for f in files {
            let (dir, leaf) = folders.parent(self, f.path());
            match f {
                File::Bytes { bytes, .. } => match found(&bytes, place, named) {
                    Ok((o, span, _)) => {
                        let name = dir.names.unique(&leaf, "");
                        self.file(dir.ino, name, o.content(span), None);
                    }
                    Err(why) => self.warnings.push(format!(
                        "{}: {base}/{}: {why}",
                        place.file_name,
                        f.path()
                    )),
                },
                File::Json { value, .. } => self.json(dir, &leaf, &value),
                File::Text { text, .. } => self.generated(dir, &leaf, text.into_bytes().into()),
                File::Rendered { path } => {
                    let paths = paths.clone();
                    let render = move |d: &dyn Decoded<'_>, out: &mut dyn Write| {
                        write_rendered(d.render(&path, &paths), out)
                    };
                    self.lazy_decoded(dir, &leaf, (backend, place), context.clone(), render);
                }
            }
        }
        let mut x = folders.into_root();
        if !errors.is_empty() {
            self.not_decoded(&mut x, place, &errors);
        }
    }

    /// `ERROR.txt` and a warning for a payload that does not decode, in
    /// whole or in part.
    fn not_decoded(&mut self, x: &mut Dir, place: &Place<'_, '_>, errors: &[String]) {
        let all = errors.join("; ");
        self.warnings.push(format!(
            "{}: {}: delegate payload not decoded: {all}",
            place.file_name, place.dir_path
        ));
        let text = format!(
            "The payload of this delegate ({} bytes at file offset {}) could not be decoded:\n{}\n",
            place.processed.len,
            place.origin.shifted(place.processed).offset,
            errors.join("\n")
        );
        self.generated(x, "ERROR.txt", text.into_bytes().into());
    }

    /// `weights/` in `x`: each weight's files and `index.json`, and one
    /// warning for the weights without files (a program without its `.ptd`
    /// would otherwise print a line per weight). Returns the path of each
    /// weight's `.bin` for renderers.
    fn weights_dir(
        &mut self,
        (x, place, named): (&mut Dir, &Place<'_, '_>, &NamedIndex<'_>),
        base: &str,
        weights: Weights<'_>,
        (backend, context): (&'static dyn Backend, &Arc<RenderContext>),
    ) -> Paths {
        let base = format!("{base}/weights");
        let mut wdir = self.subdir(x, "weights");
        // A .bin and a .npy each, and index.json.
        wdir.names.reserve(2 * weights.items.len() + 1);
        let mut paths = HashMap::new();
        let mut filed = Vec::with_capacity(weights.items.len());
        let mut missing = Vec::new();
        let total = weights.items.len();
        for w in weights.items {
            let mut lacking = None;
            let value = w.value;
            let f = self.weight_files(&mut wdir, place, named, w, &mut lacking);
            if let (Some(v), Ok(shown)) = (value, &f.shown) {
                paths.insert(v, format!("{base}/{}", shown.bin));
            }
            missing.extend(lacking);
            filed.push(f);
        }
        if let Some((id, why)) = missing.first() {
            self.warnings.push(format!(
                "{}: {base}: {} of {} {} (see index.json); value {id}: {why}",
                place.file_name,
                missing.len(),
                total,
                weights.lacking,
            ));
        }
        // Each entry joins the backend's own fields, made from the payload
        // decoded again when the file is first read, with what the tree
        // made of the weight here.
        let render = move |d: &dyn Decoded<'_>, out: &mut dyn Write| {
            let items = d.layout().weights.map(|w| w.items).unwrap_or_default();
            let index: Vec<Value> = (items.iter().zip(&filed))
                .map(|(w, f)| Value::Object(f.entry(w)))
                .collect();
            render::json_to(out, &index)
        };
        self.lazy_decoded(
            &mut wdir,
            "index.json",
            (backend, place),
            context.clone(),
            render,
        );
        paths
    }

    /// The files of weight `w` (and of its parts) in `wdir`, and what its
    /// `index.json` entry says of them; `lacking` gets the first reason a
    /// file is missing.
    fn weight_files(
        &mut self,
        wdir: &mut Dir,
        place: &Place<'_, '_>,
        named: &NamedIndex<'_>,
        w: Weight<'_>,
        lacking: &mut Option<(u32, String)>,
    ) -> Filed {
        let shown = match (located(&w.bytes, place, named), w.view.clone()) {
            (Ok(at), Some(view)) => Ok(self.gathered(wdir, &w, &at, view)),
            (Ok(at), None) => {
                let (bin, npy) = self.weight_pair(wdir, &w, &at);
                Ok(Shown {
                    bin,
                    npy,
                    nbytes: at.1.len,
                    file: at.2.map(Box::from),
                    offset: at.0.shifted(at.1).offset,
                })
            }
            (Err(why), _) => {
                lacking.get_or_insert((w.id, why.clone()));
                let key = match &w.bytes {
                    Ok(delegate::Bytes::Named { key, .. }) => Some(key.to_string()),
                    _ => None,
                };
                let what = crate::tree::weights::Missing {
                    file: Some(format!("{}.bin", encode(&w.stem))),
                    key,
                    why: why.clone(),
                    ..Default::default()
                };
                self.missing_weight(wdir.ino, what);
                Err(why)
            }
        };
        let parts = (w.parts.into_iter())
            .map(|(key, part)| (key, self.weight_files(wdir, place, named, part, lacking)))
            .collect();
        Filed { shown, parts }
    }

    /// The files of a weight that is a strided view into the storage at
    /// `at`: `<stem>.bin` holds the view's elements in row-major order,
    /// gathered from the storage when first read, and `<stem>.npy` the
    /// same behind its header.
    fn gathered(
        &mut self,
        wdir: &mut Dir,
        w: &Weight<'_>,
        at: &Located<'_>,
        view: Strided,
    ) -> Shown {
        let storage = at.0.shifted(at.1);
        let source = at.0.source;
        let nbytes = view.nbytes().unwrap_or(0);
        let stem = encode(&w.stem);
        let renderer = |prefix: Vec<u8>| -> lazy::Renderer {
            let view = view.clone();
            Box::new(move |bytes: &[u8], out: &mut dyn Write| {
                let within = usize::try_from(storage.offset)
                    .ok()
                    .zip(usize::try_from(storage.end()).ok())
                    .and_then(|(start, end)| bytes.get(start..end));
                let Some(within) = within else {
                    return Err(io::Error::other("the storage is no longer where it was"));
                };
                out.write_all(&prefix)?;
                view.gather(within, out)
            })
        };
        let bin = self.lazy(wdir, &format!("{stem}.bin"), source, renderer(Vec::new()));
        let header = (w.npy.as_ref())
            .filter(|n| !n.widen && n.nbytes == nbytes)
            .and_then(|n| npy::header(n.descr, &n.shape));
        let npy = header.map(|h| self.lazy(wdir, &format!("{stem}.npy"), source, renderer(h)));
        Shown {
            bin,
            npy,
            nbytes,
            file: at.2.map(Box::from),
            offset: storage.offset,
        }
    }

    /// `<stem>.bin` and, when the bytes are exactly what its NumPy view
    /// needs, `<stem>.npy`.
    fn weight_pair(
        &mut self,
        wdir: &mut Dir,
        w: &Weight<'_>,
        at: &Located<'_>,
    ) -> (String, Option<String>) {
        let span = at.1;
        let npy = w.npy.as_ref().filter(|n| n.nbytes == span.len);
        // The type the bytes hold, whether or not this span fits the shape,
        // so that equal bytes typed alike stay one file.
        let element = (w.npy.as_ref())
            .filter(|n| !n.widen)
            .and_then(|n| crate::format::scalar::from_numpy(n.descr));
        let dtype = Dtype::Named {
            name: w.dtype,
            element,
        };
        let meta = self.meta(dtype, w.dims.clone());
        self.typed_pair(wdir, &encode(&w.stem), (at.0, span), npy, meta)
    }

    /// `name` in `dir`, rendered by `render` from the payload at `place`
    /// when first looked at: the payload is decoded again for each render
    /// (with the named data it refers to, as when the tree was built), so
    /// the tree keeps no view of it.
    fn lazy_decoded(
        &mut self,
        dir: &mut Dir,
        name: &str,
        (backend, place): (&'static dyn Backend, &Place<'_, '_>),
        context: Arc<RenderContext>,
        render: impl Fn(&dyn Decoded<'_>, &mut dyn Write) -> io::Result<()> + Send + Sync + 'static,
    ) {
        let at = place.origin.shifted(place.processed);
        let renderer = move |bytes: &[u8], out: &mut dyn Write| {
            let Some(payload) = usize::try_from(at.offset)
                .ok()
                .zip(usize::try_from(at.end()).ok())
                .and_then(|(start, end)| bytes.get(start..end))
            else {
                return Err(crate::tree::lazy::failed(
                    "the payload is no longer where it was",
                ));
            };
            let lookup = RenderLookup {
                own: (context.own, bytes),
                spans: &context.spans,
                others: &context.others,
            };
            let specs: Vec<(&str, &[u8])> = context
                .specs
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_slice()))
                .collect();
            match backend.decode(payload, &specs, &lookup) {
                Ok(d) => render(&*d, out),
                Err(e) => Err(crate::tree::lazy::failed(e)),
            }
        };
        self.lazy(dir, name, place.origin.source, Box::new(renderer));
    }
}

/// What the tree made of one weight, kept for its `index.json` entry.
struct Filed {
    /// Its files and where its bytes are, or why it has none.
    shown: Result<Shown, String>,
    /// Its parts' (quantization scales), by the key their entry is
    /// nested under.
    parts: Vec<(&'static str, Filed)>,
}

/// A weight's files and where its bytes are.
struct Shown {
    bin: String,
    npy: Option<String>,
    nbytes: u64,
    /// The attached data file holding the bytes (`None`: the file shown).
    file: Option<Box<str>>,
    offset: u64,
}

impl Filed {
    /// The `index.json` entry of weight `w`: the tree's fields around the
    /// backend's own (`name`, `npy`, then the backend's, then `nbytes`,
    /// `source` or `missing`, then the parts).
    fn entry(&self, w: &Weight<'_>) -> Map<String, Value> {
        let mut own = w.entry.make();
        let mut e = Map::with_capacity(own.len() + 6);
        e.insert("name".into(), Value::Null);
        e.insert("npy".into(), Value::Null);
        e.append(&mut own);
        e.insert("nbytes".into(), Value::Null);
        e.insert("source".into(), Value::Null);
        match &self.shown {
            Ok(s) => {
                e.insert("name".into(), json!(s.bin));
                e.insert("npy".into(), json!(s.npy));
                e.insert("nbytes".into(), json!(s.nbytes));
                let source = Source {
                    file: s.file.as_deref(),
                    offset: s.offset,
                };
                e.insert("source".into(), json!(source));
            }
            Err(why) => {
                e.insert("missing".into(), json!(why));
            }
        }
        for ((key, part), (_, w)) in self.parts.iter().zip(&w.parts) {
            e.insert((*key).to_owned(), Value::Object(part.entry(w)));
        }
        e
    }
}

/// The other delegates of the program whose payload is the same bytes of
/// the file (one shared context or engine, stored once), by method and
/// index: their byte-range files are the same inodes as this one's.
fn shared_with(place: &Place<'_, '_>) -> Vec<Value> {
    let me = |m: &str, index: usize| {
        place
            .dir_path
            .strip_prefix(&format!("methods/{}/delegates/", encode(m)))
            .and_then(|d| d.split('-').next())
            .and_then(|n| n.parse::<usize>().ok())
            == Some(index)
    };
    let mut out = Vec::new();
    for m in &place.program.methods {
        let name = m.name.to_string();
        for d in &m.delegates {
            if d.processed == Some(place.processed) && !me(&name, d.index) {
                out.push(json!({"method": name, "delegate": d.index}));
            }
        }
    }
    out
}

/// What a delegate's lazily rendered files decode their payload with
/// again: where the named data is, the attached sources' bytes, and the
/// compile specs. Made once per delegate and shared by its files.
pub(super) struct RenderContext {
    own: SourceId,
    spans: HashMap<Vec<u8>, (SourceId, Span)>,
    others: HashMap<SourceId, SharedBytes>,
    specs: Vec<(String, Vec<u8>)>,
}

impl Builder {
    fn render_context(&self, place: &Place<'_, '_>, named: &NamedIndex<'_>) -> Arc<RenderContext> {
        let own = place.origin.source;
        let spans: HashMap<Vec<u8>, (SourceId, Span)> = named
            .by_key
            .iter()
            .map(|(k, &(o, span, _, _))| (k.to_vec(), (o.source, o.shifted(span))))
            .collect();
        let others = spans
            .values()
            .filter(|(s, _)| *s != own)
            .filter_map(|(s, _)| Some((*s, self.source_bytes.get(s)?.clone())))
            .collect();
        let specs = place
            .specs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.to_vec()))
            .collect();
        Arc::new(RenderContext {
            own,
            spans,
            others,
            specs,
        })
    }
}

fn write_rendered(r: Rendered<'_>, out: &mut dyn Write) -> io::Result<()> {
    match r {
        Rendered::Json(v) => render::json_to(out, &v),
        Rendered::Bytes(b) => out.write_all(&b),
        Rendered::None => Ok(()),
    }
}

/// Named data as a render finds it: in the program's own source's bytes
/// or in an attached data file's.
struct RenderLookup<'r> {
    own: (SourceId, &'r [u8]),
    spans: &'r HashMap<Vec<u8>, (SourceId, Span)>,
    others: &'r HashMap<SourceId, SharedBytes>,
}

impl<'r> Lookup<'r> for RenderLookup<'r> {
    fn bytes(&self, key: &str) -> Option<&'r [u8]> {
        let &(source, span) = self.spans.get(key.as_bytes())?;
        let whole: &'r [u8] = if source == self.own.0 {
            self.own.1
        } else {
            (*self.others.get(&source)?).as_ref().as_ref()
        };
        let start = usize::try_from(span.offset).ok()?;
        whole.get(start..start.checked_add(usize::try_from(span.len).ok()?)?)
    }
}

/// A backend's folder and the subdirectories its file paths make, each
/// made once.
struct Folders {
    dirs: Vec<Dir>,
    by_path: HashMap<String, usize>,
}

impl Folders {
    fn new(root: Dir) -> Self {
        Folders {
            dirs: vec![root],
            by_path: HashMap::new(),
        }
    }

    /// The directory `path`'s last component goes in (made on first use),
    /// and that component encoded as a name.
    fn parent(&mut self, b: &mut Builder, path: &str) -> (&mut Dir, String) {
        let mut parts: Vec<String> = path
            .split('/')
            .filter(|p| !p.is_empty())
            .map(encode)
            .collect();
        let leaf = parts.pop().unwrap_or_else(|| encode(""));
        let (mut at, mut key) = (0, String::new());
        for part in parts {
            key.push('/');
            key.push_str(&part);
            at = match self.by_path.get(&key) {
                Some(&i) => i,
                None => {
                    let dir = b.subdir(&mut self.dirs[at], &part);
                    self.dirs.push(dir);
                    self.by_path.insert(key.clone(), self.dirs.len() - 1);
                    self.dirs.len() - 1
                }
            };
        }
        (&mut self.dirs[at], leaf)
    }

    fn into_root(mut self) -> Dir {
        self.dirs.swap_remove(0)
    }
}
