//! The data file a program expects, packed from tensors given by name: a
//! safetensors checkpoint, a directory of `.npy` (or raw `.bin`) files, or
//! another data file. Every key the program needs is written with the
//! type, shape and dimension order it declares; names match exactly, or
//! as the same dotted path under a prefix (`model.fc1.weight` for
//! `fc1.weight`), or as a name a checkpoint gives the key's bytes
//! (`--names`: XNNPACK keys its blobs by the sha256 of their bytes).

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::cast;
use super::npy;
use super::ptd::Blob;
use super::{EditError, Result};
use crate::format::{self, Parsed, ProgramFile, TensorData, TensorLayout, scalar};
use crate::meta::checkpoint::{Checkpoint, Digest32, digest, oihw_to_ohwi};
use crate::schema::ScalarType;
use crate::source::Source;

/// A key the program needs from a data file.
#[derive(Debug, Clone)]
pub struct Want {
    /// The key.
    pub key: String,
    /// The layout declared for an external tensor; `None` for named data
    /// a delegate refers to, whose bytes are opaque.
    pub layout: Option<TensorLayout>,
}

impl Want {
    /// Bytes of the declared tensor.
    fn nbytes(&self) -> Option<u64> {
        let l = self.layout.as_ref()?;
        format::tensor_nbytes(l.scalar_type, &l.sizes)
            .ok()
            .flatten()
    }
}

/// The keys `program` needs from a data file, each once: its external
/// tensors in method and value order, then the named data its delegates
/// refer to that it does not hold itself.
pub fn wanted(program: &ProgramFile<'_>) -> Vec<Want> {
    let mut out: Vec<Want> = Vec::new();
    for t in program.methods.iter().flat_map(|m| &m.tensors) {
        if let TensorData::External { key } = t.data {
            let key = key.show().into_owned();
            if !out.iter().any(|w| w.key == key) {
                out.push(Want {
                    key,
                    layout: Some(TensorLayout {
                        scalar_type: t.scalar_type,
                        sizes: t.sizes.clone(),
                        dim_order: t.dim_order.clone(),
                    }),
                });
            }
        }
    }
    for (key, _) in crate::delegate::referenced_named_keys(program) {
        let held = program.named.iter().any(|n| n.key == key);
        let key = key.show().into_owned();
        if !held && !out.iter().any(|w| w.key == key) {
            out.push(Want { key, layout: None });
        }
    }
    out
}

/// The program at `path` and the keys it needs from a data file.
pub fn program_wants(path: &Path) -> Result<Vec<Want>> {
    let program = Source::open(path)?;
    let shown = crate::source::redact::shown(path);
    match format::parse(program.bytes()) {
        Ok(Parsed::Program(p)) => Ok(wanted(&p)),
        Ok(_) => Err(EditError::Pack(format!(
            "{shown}: is given with --for but is not a program (.pte)"
        ))),
        Err(e) => Err(EditError::Pack(format!("{shown}: {e}"))),
    }
}

/// Named values read from one input.
#[derive(Debug)]
pub struct Supply {
    /// The input as given.
    pub path: PathBuf,
    /// Its files, each mapped, with the name it gives its value (for a
    /// directory) or `None` (for a file holding many).
    files: Vec<(Option<String>, Source)>,
}

/// One named value an input offers.
#[derive(Debug, Clone)]
pub struct Offer<'s> {
    /// The name.
    pub name: String,
    /// Where it comes from, for messages.
    pub from: String,
    /// Element type and shape, when the input says; `None` for raw bytes.
    pub tensor: Option<(ScalarType, Vec<u64>)>,
    /// The bytes, as a tensor's stored row-major, or as the blob is.
    pub bytes: &'s [u8],
}

impl Supply {
    /// Opens `path`: a data file, a safetensors file, or a directory of
    /// `.npy` and `.bin` files named by key.
    pub fn open(path: &Path) -> Result<Supply> {
        let files = if path.is_dir() {
            let mut files = Vec::new();
            let entries = std::fs::read_dir(path).map_err(EditError::io(path))?;
            let mut names: Vec<PathBuf> = entries
                .map(|e| e.map(|e| e.path()))
                .collect::<std::io::Result<_>>()
                .map_err(EditError::io(path))?;
            names.sort();
            for p in names {
                let Some(name) = p.file_name().and_then(|n| n.to_str()) else {
                    continue;
                };
                let key = name
                    .strip_suffix(".npy")
                    .or_else(|| name.strip_suffix(".bin"));
                if let Some(key) = key.filter(|_| p.is_file()) {
                    files.push((Some(key.to_owned()), Source::open(&p)?));
                }
            }
            files
        } else {
            vec![(None, Source::open(path)?)]
        };
        Ok(Supply {
            path: path.to_owned(),
            files,
        })
    }

    /// The files it was read from, held open.
    pub fn sources(&self) -> impl Iterator<Item = &Source> {
        self.files.iter().map(|(_, s)| s)
    }

    /// What the input offers, in its own order; in a directory, a `.npy`
    /// comes before the `.bin` of the same name.
    pub fn offers(&self) -> Result<Vec<Offer<'_>>> {
        let shown = crate::source::redact::shown(&self.path);
        let bad = |why: String| EditError::Pack(format!("{shown}: {why}"));
        let mut out = Vec::new();
        for (name, s) in &self.files {
            let bytes = s.bytes();
            let Some(name) = name else {
                return match format::sniff(bytes) {
                    Ok(format::Kind::Data) => {
                        let Ok(Parsed::Data(d)) = format::parse(bytes) else {
                            let e = format::parse(bytes).err().map(|e| e.to_string());
                            return Err(bad(e.unwrap_or_default()));
                        };
                        Ok(d.entries
                            .iter()
                            .map(|e| Offer {
                                name: e.key.show().into_owned(),
                                from: shown.clone(),
                                tensor: e.layout.as_ref().map(|l| {
                                    let shape = l.sizes.iter().map(|&d| d.max(0) as u64).collect();
                                    (l.scalar_type, shape)
                                }),
                                bytes: e.span.bytes(bytes),
                            })
                            .collect())
                    }
                    _ if npy::is_npy(bytes) => Err(bad(
                        "is a .npy, which names no key: give the directory holding it as <key>.npy"
                            .into(),
                    )),
                    _ => safetensors(bytes, &shown).map_err(bad),
                };
            };
            let from = format!("{shown}/{}", s.name);
            let offer = if npy::is_npy(bytes) {
                let h = npy::parse(bytes).map_err(|e| bad(format!("{}: {e}", s.name)))?;
                let dtype = scalar::from_numpy(&h.descr).ok_or_else(|| {
                    bad(format!(
                        "{}: dtype {} is not one a program stores",
                        s.name, h.descr
                    ))
                })?;
                if h.fortran_order && h.shape.iter().filter(|&&d| d > 1).count() > 1 {
                    return Err(bad(format!("{}: is in Fortran order", s.name)));
                }
                Offer {
                    name: name.clone(),
                    from,
                    tensor: Some((dtype, h.shape)),
                    bytes: &bytes[h.len..],
                }
            } else {
                Offer {
                    name: name.clone(),
                    from,
                    tensor: None,
                    bytes,
                }
            };
            if !out.iter().any(|o: &Offer<'_>| o.name == offer.name) {
                out.push(offer);
            }
        }
        Ok(out)
    }
}

/// The tensors of a safetensors file.
fn safetensors<'s>(bytes: &'s [u8], shown: &str) -> std::result::Result<Vec<Offer<'s>>, String> {
    let st = safetensors::SafeTensors::deserialize(bytes)
        .map_err(|e| format!("neither a data file (.ptd) nor a safetensors file: {e}"))?;
    let mut named = st.tensors();
    // In file order, as its header does not keep an order of its own.
    named.sort_by_key(|(_, v)| v.data().as_ptr() as usize);
    named
        .into_iter()
        .map(|(name, v)| {
            let dtype = safetensors_type(v.dtype()).ok_or_else(|| {
                format!("{name}: dtype {:?} is not one a program stores", v.dtype())
            })?;
            Ok(Offer {
                name,
                from: shown.to_owned(),
                tensor: Some((dtype, v.shape().iter().map(|&d| d as u64).collect())),
                bytes: v.data(),
            })
        })
        .collect()
}

fn safetensors_type(d: safetensors::Dtype) -> Option<ScalarType> {
    use safetensors::Dtype as D;
    Some(match d {
        D::BOOL => ScalarType::BOOL,
        D::U8 => ScalarType::BYTE,
        D::I8 => ScalarType::CHAR,
        D::I16 => ScalarType::SHORT,
        D::U16 => ScalarType::UINT16,
        D::I32 => ScalarType::INT,
        D::U32 => ScalarType::UINT32,
        D::I64 => ScalarType::LONG,
        D::U64 => ScalarType::UINT64,
        D::F16 => ScalarType::HALF,
        D::BF16 => ScalarType::BFLOAT16,
        D::F32 => ScalarType::FLOAT,
        D::F64 => ScalarType::DOUBLE,
        D::F8_E5M2 => ScalarType::FLOAT8E5M2,
        D::F8_E4M3 => ScalarType::FLOAT8E4M3FN,
        _ => return None,
    })
}

/// A checkpoint given with `--names`: the names it gives stored bytes, by
/// their digest as they are and, for 4-d float tensors, as XNNPACK stores
/// a convolution filter (OHWI, not PyTorch's OIHW).
#[derive(Debug)]
pub struct Names {
    checkpoint: Checkpoint,
    /// Digest of a filter's bytes laid out OHWI → its name, sizes (OIHW)
    /// and element size.
    ohwi: HashMap<Digest32, Vec<(String, [usize; 4], usize)>>,
}

impl Names {
    /// Reads the checkpoint at `path`.
    pub fn open(path: &Path) -> Result<Names> {
        let shown = crate::source::redact::shown(path);
        let bytes = std::fs::read(path).map_err(EditError::io(path))?;
        let checkpoint =
            Checkpoint::parse(&bytes).map_err(|e| EditError::Pack(format!("{shown}: {e}")))?;
        let mut ohwi: HashMap<Digest32, Vec<_>> = HashMap::new();
        if let Ok(st) = safetensors::SafeTensors::deserialize(&bytes) {
            for (name, &(oihw, elem)) in &checkpoint.filters {
                let permuted = st
                    .tensor(name)
                    .ok()
                    .and_then(|v| oihw_to_ohwi(v.data(), oihw, elem));
                if let Some(p) = permuted {
                    ohwi.entry(digest(&p))
                        .or_default()
                        .push((name.clone(), oihw, elem));
                }
            }
        }
        Ok(Names { checkpoint, ohwi })
    }
}

/// A name a checkpoint gives a key's bytes, and the filter sizes and
/// element size when the key holds them OHWI.
#[derive(Debug, Clone)]
struct Alias<'c> {
    name: &'c str,
    ohwi: Option<([usize; 4], usize)>,
}

/// The names `checkpoint` gives `key` through its bytes: the key is the
/// sha256 of its bytes (as XNNPACK names the blobs it keeps in a data
/// file), or an input holds bytes under the key itself.
fn aliases<'c>(key: &str, offers: &[Offer<'_>], names: Option<&'c Names>) -> Vec<Alias<'c>> {
    let Some(n) = names else {
        return Vec::new();
    };
    let plain = |name: &'c str| Alias { name, ohwi: None };
    let mut out: Vec<Alias<'c>> = n
        .checkpoint
        .named_by_digest(key)
        .into_iter()
        .map(plain)
        .collect();
    if let Some(o) = offers.iter().find(|o| o.name == key) {
        let index = n.checkpoint.index();
        for name in index.get(&digest(o.bytes)).into_iter().flatten() {
            if !out.iter().any(|a| a.name == *name) {
                out.push(plain(name));
            }
        }
    }
    if out.is_empty() {
        let permuted = parse_digest(key).and_then(|d| n.ohwi.get(&d));
        out.extend(
            permuted
                .into_iter()
                .flatten()
                .map(|(name, oihw, elem)| Alias {
                    name: name.as_str(),
                    ohwi: Some((*oihw, *elem)),
                }),
        );
    }
    out
}

/// A key of 64 hex digits as the digest it spells.
fn parse_digest(key: &str) -> Option<Digest32> {
    if key.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(key.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// The offer for `key` (or one of its `aliases`): the first with that
/// name, else the only one whose dotted name ends with one of them (or
/// that one of them ends with).
fn find<'o, 's>(key: &str, aliases: &[&str], offers: &'o [Offer<'s>]) -> Result<&'o Offer<'s>> {
    let names: Vec<&str> = std::iter::once(key)
        .chain(aliases.iter().copied())
        .collect();
    if let Some(o) = offers.iter().find(|o| names.contains(&o.name.as_str())) {
        return Ok(o);
    }
    let under = |long: &str, short: &str| {
        long.len() > short.len()
            && long.ends_with(short)
            && long.as_bytes()[long.len() - short.len() - 1] == b'.'
    };
    let near: Vec<&Offer<'s>> = offers
        .iter()
        .filter(|o| names.iter().any(|k| under(&o.name, k) || under(k, &o.name)))
        .collect();
    let named = match aliases {
        [] => String::new(),
        a => format!(" (named {} by --names)", a.join(", ")),
    };
    match near[..] {
        [one] => Ok(one),
        [] => Err(EditError::Pack(format!(
            "{key}{named}: the program needs this key and no input holds it"
        ))),
        _ => Err(EditError::Pack(format!(
            "{key}{named}: several inputs' names end with it ({}); give one",
            near.iter()
                .map(|o| o.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// Checks that `o`, found for `key` under a name the checkpoint gives it,
/// fills what the checkpoint held under that name.
fn fits_checkpoint(
    key: &str,
    o: &Offer<'_>,
    from: &str,
    alias: &str,
    c: &Checkpoint,
) -> Result<()> {
    let Some((nbytes, shape)) = c.sizes.get(alias) else {
        return Ok(());
    };
    let same_shape = o.tensor.as_ref().is_none_or(|(_, s)| s == shape);
    if o.bytes.len() as u64 != *nbytes || !same_shape {
        let given = match &o.tensor {
            Some((t, s)) => describe(*t, s),
            None => "raw".to_owned(),
        };
        return Err(EditError::Pack(format!(
            "{key}: {from} is {given}, {} bytes; --names held {alias} as shape {shape:?}, {nbytes} bytes",
            o.bytes.len()
        )));
    }
    Ok(())
}

fn describe(t: ScalarType, shape: &[u64]) -> String {
    format!("{} {shape:?}", scalar::name(t))
}

/// The blobs to write for `wants` from `offers` (the inputs' in the
/// order given), and one note per tensor converted with `cast`. With a
/// checkpoint (`--names`), a key is also found under each name the
/// checkpoint gives its bytes (as they are, or laid out OHWI as XNNPACK
/// keeps a convolution filter, in which case the value found is laid out
/// so too), and the value found must fill what the checkpoint held under
/// that name.
pub fn choose<'s>(
    wants: &[Want],
    offers: &[Offer<'s>],
    cast: bool,
    names: Option<&Names>,
) -> Result<(Vec<Blob<'s>>, Vec<String>)> {
    let mut blobs = Vec::with_capacity(wants.len());
    let mut notes = Vec::new();
    for w in wants {
        let aliases = match w.layout {
            None => aliases(&w.key, offers, names),
            // A tensor's layout is declared: only plain names apply.
            Some(_) => aliases(&w.key, offers, names)
                .into_iter()
                .filter(|a| a.ohwi.is_none())
                .collect(),
        };
        let alias_names: Vec<&str> = aliases.iter().map(|a| a.name).collect();
        let o = find(&w.key, &alias_names, offers)?;
        let from = if o.name == w.key {
            o.from.clone()
        } else {
            format!("{} ({})", o.from, o.name)
        };
        let alias = aliases.iter().find(|a| {
            let n = a.name;
            o.name == n
                || o.name.ends_with(&format!(".{n}"))
                || n.ends_with(&format!(".{}", o.name))
        });
        if let (Some(a), Some(n)) = (alias, names) {
            fits_checkpoint(&w.key, o, &from, a.name, &n.checkpoint)?;
        }
        let Some(layout) = &w.layout else {
            let bytes = match alias.and_then(|a| a.ohwi) {
                None => Cow::Borrowed(o.bytes),
                Some((oihw, elem)) => {
                    let b = oihw_to_ohwi(o.bytes, oihw, elem).ok_or_else(|| {
                        EditError::Pack(format!(
                            "{}: {from} holds {} bytes, not a filter of sizes {oihw:?}",
                            w.key,
                            o.bytes.len()
                        ))
                    })?;
                    notes.push(format!(
                        "{}: {from} laid out OHWI, as XNNPACK stores a convolution filter",
                        w.key
                    ));
                    Cow::Owned(b)
                }
            };
            blobs.push(Blob {
                key: w.key.clone(),
                bytes,
                layout: None,
            });
            continue;
        };
        let shape: Vec<u64> = layout.sizes.iter().map(|&d| d.max(0) as u64).collect();
        let declared = describe(layout.scalar_type, &shape);
        let bytes = match &o.tensor {
            None => {
                let want = w.nbytes().unwrap_or(0);
                if o.bytes.len() as u64 != want {
                    return Err(EditError::Pack(format!(
                        "{}: {from} holds {} bytes; the program declares {declared}, {want} bytes",
                        w.key,
                        o.bytes.len()
                    )));
                }
                Cow::Borrowed(o.bytes)
            }
            Some((t, s)) => {
                if *s != shape {
                    return Err(EditError::Pack(format!(
                        "{}: {from} is {}; the program declares {declared}",
                        w.key,
                        describe(*t, s)
                    )));
                }
                let contiguous = layout
                    .dim_order
                    .iter()
                    .enumerate()
                    .all(|(i, &d)| d as usize == i);
                if !contiguous {
                    return Err(EditError::Pack(format!(
                        "{}: the program stores it in dim_order {:?}; give its bytes as stored (a .bin or a .ptd), not a row-major tensor",
                        w.key,
                        &layout.dim_order[..]
                    )));
                }
                if *t == layout.scalar_type {
                    Cow::Borrowed(o.bytes)
                } else if cast && cast::can(*t, layout.scalar_type) {
                    let (b, changed) = cast::convert(o.bytes, *t, layout.scalar_type)
                        .expect("a conversion cast::can allows");
                    let n = o.bytes.len() / scalar::element_size(*t).unwrap_or(1).max(1) as usize;
                    notes.push(format!(
                        "{}: cast from {} to {}: {changed} of {n} values changed",
                        w.key,
                        scalar::name(*t),
                        scalar::name(layout.scalar_type)
                    ));
                    Cow::Owned(b)
                } else {
                    let hint = match cast::can(*t, layout.scalar_type) {
                        true => " (--cast converts it)",
                        false => "",
                    };
                    return Err(EditError::Pack(format!(
                        "{}: {from} is {}; the program declares {declared}{hint}",
                        w.key,
                        describe(*t, s)
                    )));
                }
            }
        };
        blobs.push(Blob {
            key: w.key.clone(),
            bytes,
            layout: Some(layout.clone()),
        });
    }
    Ok((blobs, notes))
}

/// Checks that `bytes` are a data file holding every wanted key with its
/// declared layout.
pub fn validate(bytes: &[u8], wants: &[Want]) -> std::result::Result<(), String> {
    let d = format::DataFile::parse(bytes).map_err(|e| e.to_string())?;
    for w in wants {
        let e = d
            .entries
            .iter()
            .find(|e| e.key.show() == w.key)
            .ok_or_else(|| format!("key {} is missing", w.key))?;
        if e.layout != w.layout {
            return Err(format!("key {} has another layout than declared", w.key));
        }
    }
    Ok(())
}
