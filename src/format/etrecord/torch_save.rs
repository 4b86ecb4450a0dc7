//! `torch.save` archives: a zip holding `<prefix>/data.pkl` (the value, as
//! a pickle whose tensors name their storages by key) and one stored member
//! `<prefix>/data/<key>` per storage. The pickle is read by the safe reader
//! ([`crate::format::pickle`]); the tensors become [`SavedTensor`]s that
//! locate their bytes in the outer file, so a contiguous tensor is a span
//! of it and nothing is copied.

use std::collections::HashMap;

use super::super::package::zip;
use super::super::pickle::{self, Id, MAX_DEPTH, Obj, Pickle};
use super::super::scalar::{COMPLEX_DOUBLE, COMPLEX_FLOAT, element_size};
use super::super::{Error, Result, Span};
use crate::schema::ScalarType;

/// A value `torch.save` stored.
#[derive(Debug, Clone)]
pub enum Saved {
    /// A tensor.
    Tensor(SavedTensor),
    /// A list or tuple.
    Seq(Vec<Saved>),
    /// A dict (an `OrderedDict` too), keys as text.
    Map(Vec<(String, Saved)>),
    /// Anything else, as JSON (numbers, strings, `None`, devices, ...).
    Other(serde_json::Value),
    /// A part that could not be read, and why; the rest still is.
    Bad(String),
}

/// A tensor of the archive: its type and layout, and where its storage's
/// bytes are in the outer file.
#[derive(Debug, Clone, PartialEq)]
pub struct SavedTensor {
    /// Element type.
    pub scalar_type: ScalarType,
    /// Sizes.
    pub shape: Vec<u64>,
    /// Strides, in elements.
    pub strides: Vec<i64>,
    /// First element's index in the storage.
    pub storage_offset: u64,
    /// The storage's key (`data/<key>`).
    pub storage_key: String,
    /// The storage's bytes in the outer file.
    pub storage: Span,
}

impl SavedTensor {
    /// Elements.
    pub fn numel(&self) -> u64 {
        self.shape.iter().product()
    }

    /// Bytes per element.
    pub fn element_size(&self) -> u64 {
        element_size(self.scalar_type).unwrap_or(1)
    }

    /// The tensor's bytes as one span of the file when they lie there in
    /// row-major order, as NumPy reads them.
    pub fn contiguous(&self) -> Option<Span> {
        let es = self.element_size();
        let mut expect = 1i64;
        for (&size, &stride) in self.shape.iter().zip(&self.strides).rev() {
            if size != 1 && stride != expect {
                return None;
            }
            expect = expect.checked_mul(size as i64)?;
        }
        Some(Span {
            offset: self.storage.offset + self.storage_offset * es,
            len: self.numel() * es,
        })
    }

    /// The tensor's bytes in row-major order, gathered from the file
    /// (`file` the whole outer file).
    pub fn gather(&self, file: &[u8]) -> Vec<u8> {
        if let Some(span) = self.contiguous() {
            return span.bytes(file).to_vec();
        }
        let es = self.element_size() as usize;
        let storage = self.storage.bytes(file);
        let mut out = Vec::with_capacity(self.numel() as usize * es);
        let mut index = vec![0u64; self.shape.len()];
        for _ in 0..self.numel() {
            let at: i64 = self.storage_offset as i64
                + index
                    .iter()
                    .zip(&self.strides)
                    .map(|(&i, &s)| i as i64 * s)
                    .sum::<i64>();
            let at = at as usize * es;
            out.extend_from_slice(storage.get(at..at + es).unwrap_or(&[0; 16][..es]));
            for d in (0..index.len()).rev() {
                index[d] += 1;
                if index[d] < self.shape[d] {
                    break;
                }
                index[d] = 0;
            }
        }
        out
    }
}

/// A read archive.
#[derive(Debug, Clone)]
pub struct Archive {
    /// The value saved.
    pub value: Saved,
}

/// Reads the archive stored at `member` of `file`.
pub fn read(file: &[u8], member: Span) -> Result<Archive> {
    let inner = member.bytes(file);
    let members = zip::members(inner).map_err(|e| e.context("torch.save archive"))?;
    let Some(pkl) = members.iter().find(|m| m.name.ends_with("data.pkl")) else {
        return Err(Error::new("torch.save archive has no data.pkl"));
    };
    let prefix = pkl.name.trim_end_matches("data.pkl").to_owned();
    let pkl_span = pkl.stored()?;
    let pickle = pickle::read(pkl_span.bytes(inner)).map_err(|e| e.context(&pkl.name))?;
    let mut storages = HashMap::new();
    for m in &members {
        if let Some(key) = m.name.strip_prefix(&format!("{prefix}data/")) {
            let span = m.stored()?;
            storages.insert(
                key.to_owned(),
                Span {
                    offset: member.offset + span.offset,
                    len: span.len,
                },
            );
        }
    }
    let ctx = Ctx {
        p: &pickle,
        storages: &storages,
    };
    Ok(Archive {
        value: ctx.value(pickle.root, 0),
    })
}

struct Ctx<'a> {
    p: &'a Pickle,
    storages: &'a HashMap<String, Span>,
}

impl Ctx<'_> {
    fn value(&self, id: Id, depth: usize) -> Saved {
        if depth > MAX_DEPTH {
            return Saved::Bad(format!(
                "nested deeper than {MAX_DEPTH} levels (or refers to itself)"
            ));
        }
        match self.p.get(id) {
            Obj::List(ids) | Obj::Tuple(ids) => {
                Saved::Seq(ids.iter().map(|&i| self.value(i, depth + 1)).collect())
            }
            Obj::Dict(kv) => Saved::Map(
                kv.iter()
                    .map(|&(k, v)| (self.key(k), self.value(v, depth + 1)))
                    .collect(),
            ),
            Obj::Call { func, args } if func.starts_with("torch._utils._rebuild") => {
                match self.tensor(func, *args, depth) {
                    Ok(t) => Saved::Tensor(t),
                    Err(e) => Saved::Bad(e.to_string()),
                }
            }
            Obj::Call {
                func: "collections.OrderedDict",
                ..
            } => Saved::Map(Vec::new()),
            _ => match self.p.to_json(id) {
                Ok(j) => Saved::Other(j),
                Err(e) => Saved::Bad(e.to_string()),
            },
        }
    }

    fn key(&self, id: Id) -> String {
        match self.p.get(id) {
            Obj::Str(s) => s.clone(),
            Obj::Int(i) => i.to_string(),
            _ => self
                .p
                .to_json(id)
                .map_or_else(|e| e.to_string(), |j| j.to_string()),
        }
    }

    fn args(&self, id: Id) -> &[Id] {
        match self.p.get(id) {
            Obj::Tuple(a) => a,
            _ => &[],
        }
    }

    fn int(&self, id: Option<&Id>, what: &str) -> Result<i64> {
        match id.map(|&i| self.p.get(i)) {
            Some(Obj::Int(v)) => Ok(*v),
            _ => Err(Error::new(format!("tensor's {what} is not an integer"))),
        }
    }

    fn ints(&self, id: Option<&Id>, what: &str) -> Result<Vec<i64>> {
        let Some(Obj::Tuple(items) | Obj::List(items)) = id.map(|&i| self.p.get(i)) else {
            return Err(Error::new(format!("tensor's {what} is not a tuple")));
        };
        items.iter().map(|i| self.int(Some(i), what)).collect()
    }

    fn tensor(&self, func: &str, args: Id, depth: usize) -> Result<SavedTensor> {
        let a = self.args(args);
        if func.starts_with("torch._utils._rebuild_parameter") {
            let Some(Obj::Call { func, args }) = a.first().map(|&i| self.p.get(i)) else {
                return Err(Error::new("a parameter that does not hold a tensor"));
            };
            if depth > MAX_DEPTH {
                return Err(Error::new("parameters nested too deeply"));
            }
            return self.tensor(func, *args, depth + 1);
        }
        let Some(Obj::Persistent(pid)) = a.first().map(|&i| self.p.get(i)) else {
            return Err(Error::new(format!(
                "{func}: the first argument is not a storage"
            )));
        };
        // ('storage', <storage type>, key, location, numel)
        let pid = self.args(*pid);
        let storage_type = match pid.get(1).map(|&i| self.p.get(i)) {
            Some(Obj::Global(g)) => *g,
            _ => return Err(Error::new("a storage whose type is not a global")),
        };
        let key = match pid.get(2).map(|&i| self.p.get(i)) {
            Some(Obj::Str(k)) => k.clone(),
            _ => return Err(Error::new("a storage whose key is not a string")),
        };
        let numel = self.int(pid.get(4), "storage size")?;
        let scalar_type = if func.ends_with("_v3") {
            match a.get(6).map(|&i| self.p.get(i)) {
                Some(Obj::Global(g)) => dtype(g),
                _ => None,
            }
        } else {
            storage_dtype(storage_type)
        }
        .ok_or_else(|| Error::new(format!("storage {key}: no element type for {storage_type}")))?;
        let es = element_size(scalar_type).unwrap_or(1);
        let storage = *self.storages.get(&key).ok_or_else(|| {
            Error::new(format!(
                "storage {key} is named but the archive has no data/{key}"
            ))
        })?;
        let claimed = (numel as u64).saturating_mul(es);
        // A typed storage's size counts elements; an untyped one's bytes.
        let claimed = if storage_type == "torch.UntypedStorage" {
            numel as u64
        } else {
            claimed
        };
        if numel < 0 || claimed > storage.len {
            return Err(Error::new(format!(
                "storage {key} claims {claimed} bytes ({numel} elements), but data/{key} holds {}",
                storage.len
            )));
        }
        let offset = self.int(a.get(1), "storage offset")?;
        let shape = self.ints(a.get(2), "size")?;
        let strides = self.ints(a.get(3), "stride")?;
        if shape.len() != strides.len() || offset < 0 || shape.iter().any(|&s| s < 0) {
            return Err(Error::new(format!(
                "storage {key}: a tensor of sizes {shape:?}, strides {strides:?} and offset {offset}"
            )));
        }
        // The last element reached must lie in the storage.
        let mut last = offset as i128;
        let mut first = offset as i128;
        let empty = shape.contains(&0);
        for (&s, &st) in shape.iter().zip(&strides) {
            let reach = (s as i128 - 1).max(0) * st as i128;
            if st >= 0 {
                last += reach;
            } else {
                first += reach;
            }
        }
        if !empty && (first < 0 || (last + 1) * es as i128 > storage.len as i128) {
            return Err(Error::new(format!(
                "storage {key} holds {} bytes, but a tensor of sizes {shape:?}, strides {strides:?} \
                 at offset {offset} reaches element {last}",
                storage.len
            )));
        }
        Ok(SavedTensor {
            scalar_type,
            shape: shape.into_iter().map(|s| s as u64).collect(),
            strides,
            storage_offset: offset as u64,
            storage_key: key,
            storage,
        })
    }
}

fn storage_dtype(g: &str) -> Option<ScalarType> {
    Some(match g {
        "torch.FloatStorage" => ScalarType::FLOAT,
        "torch.DoubleStorage" => ScalarType::DOUBLE,
        "torch.HalfStorage" => ScalarType::HALF,
        "torch.BFloat16Storage" => ScalarType::BFLOAT16,
        "torch.LongStorage" => ScalarType::LONG,
        "torch.IntStorage" => ScalarType::INT,
        "torch.ShortStorage" => ScalarType::SHORT,
        "torch.CharStorage" => ScalarType::CHAR,
        "torch.ByteStorage" => ScalarType::BYTE,
        "torch.BoolStorage" => ScalarType::BOOL,
        "torch.ComplexFloatStorage" => COMPLEX_FLOAT,
        "torch.ComplexDoubleStorage" => COMPLEX_DOUBLE,
        _ => return None,
    })
}

fn dtype(g: &str) -> Option<ScalarType> {
    Some(match g {
        "torch.float32" => ScalarType::FLOAT,
        "torch.float64" => ScalarType::DOUBLE,
        "torch.float16" => ScalarType::HALF,
        "torch.bfloat16" => ScalarType::BFLOAT16,
        "torch.int64" => ScalarType::LONG,
        "torch.int32" => ScalarType::INT,
        "torch.int16" => ScalarType::SHORT,
        "torch.int8" => ScalarType::CHAR,
        "torch.uint8" => ScalarType::BYTE,
        "torch.bool" => ScalarType::BOOL,
        _ => return None,
    })
}

impl Saved {
    /// Every tensor with its path (`a/b/0`), depth first, in stored order.
    pub fn tensors(&self) -> Vec<(String, &SavedTensor)> {
        let mut out = Vec::new();
        self.leaves("", &mut |path, v| {
            if let Saved::Tensor(t) = v {
                out.push((path.to_owned(), t));
            }
        });
        out
    }

    /// Every part that could not be read, with its path and why.
    pub fn problems(&self) -> Vec<(String, &str)> {
        let mut out = Vec::new();
        self.leaves("", &mut |path, v| {
            if let Saved::Bad(why) = v {
                out.push((path.to_owned(), why.as_str()));
            }
        });
        out
    }

    /// Calls `f` with every value that is not a list or map, and its path
    /// below `path`, depth first in stored order.
    fn leaves<'a>(&'a self, path: &str, f: &mut dyn FnMut(&str, &'a Saved)) {
        let join = |k: &str| match path.is_empty() {
            true => k.to_owned(),
            false => format!("{path}/{k}"),
        };
        match self {
            Saved::Seq(items) => {
                for (i, v) in items.iter().enumerate() {
                    v.leaves(&join(&i.to_string()), f);
                }
            }
            Saved::Map(kv) => {
                for (k, v) in kv {
                    v.leaves(&join(k), f);
                }
            }
            leaf => f(path, leaf),
        }
    }
}
