//! A pickle reader that builds values and never runs anything.
//!
//! `torch.save` archives hold a pickle (`data.pkl`) whose objects are made
//! by calling a handful of torch and standard-library functions. Reading
//! one with Python's unpickler imports and calls whatever globals the file
//! names, so this reader only records the calls: a `GLOBAL` becomes
//! [`Obj::Global`] when its name is one [`ALLOWED`] lists and an error
//! naming it otherwise, and `REDUCE`/`NEWOBJ`/`BUILD` become
//! [`Obj::Call`]/[`Obj::Build`] nodes that the caller interprets. Nothing is
//! imported or executed.
//!
//! `serde-pickle`, the maintained Rust crate for the protocol, resolves
//! `GLOBAL`/`REDUCE` itself (refusing them or replacing them with `None`) and
//! exposes neither the call structure nor persistent ids, both of which a
//! `torch.save` archive is made of; hence this small opcode reader. It takes
//! the binary opcodes of protocols 2 to 5 and refuses the text ones of
//! protocols 0 and 1, which `torch.save` does not write.
//!
//! Limits: objects are kept in an arena (containers hold indices, so memo
//! references share and mutation works as in Python); the arena, the memo
//! and every length read are bounded by [`MAX_OBJECTS`] and the input's own
//! size, and walking a value is bounded by [`MAX_DEPTH`], so a deeply nested
//! or self-referencing pickle gives an error, not a stack overflow.

use super::{Error, Result};

/// Globals `torch.save` archives use: tensor and storage rebuilds, the
/// typed storages, dtypes, devices, `OrderedDict` and the like.
pub const ALLOWED: &[&str] = &[
    "torch._utils._rebuild_tensor_v2",
    "torch._utils._rebuild_tensor_v3",
    "torch._utils._rebuild_parameter",
    "torch._utils._rebuild_parameter_with_state",
    "collections.OrderedDict",
    "torch.device",
    "torch.Size",
    "builtins.set",
    "builtins.frozenset",
    "_codecs.encode",
    "torch.UntypedStorage",
    "torch.FloatStorage",
    "torch.DoubleStorage",
    "torch.HalfStorage",
    "torch.BFloat16Storage",
    "torch.LongStorage",
    "torch.IntStorage",
    "torch.ShortStorage",
    "torch.CharStorage",
    "torch.ByteStorage",
    "torch.BoolStorage",
    "torch.ComplexFloatStorage",
    "torch.ComplexDoubleStorage",
    "torch.float32",
    "torch.float64",
    "torch.float16",
    "torch.bfloat16",
    "torch.int64",
    "torch.int32",
    "torch.int16",
    "torch.int8",
    "torch.uint8",
    "torch.bool",
];

/// Most objects one pickle may make.
pub const MAX_OBJECTS: usize = 1 << 22;
/// Deepest nesting walked.
pub const MAX_DEPTH: usize = 128;

/// Index of an object in [`Pickle::objs`].
pub type Id = usize;

/// One object the pickle made.
#[derive(Debug, Clone, PartialEq)]
pub enum Obj {
    /// `None`.
    None,
    /// `True` or `False`.
    Bool(bool),
    /// An integer that fits 64 bits.
    Int(i64),
    /// A float.
    Float(f64),
    /// A `str` (or a protocol-2 byte string, read as Latin-1).
    Str(String),
    /// A `bytes`.
    Bytes(Vec<u8>),
    /// A list.
    List(Vec<Id>),
    /// A tuple.
    Tuple(Vec<Id>),
    /// A dict, in insertion order.
    Dict(Vec<(Id, Id)>),
    /// A set or frozenset.
    Set(Vec<Id>),
    /// An allowed global, by its qualified name (one of [`ALLOWED`]).
    Global(&'static str),
    /// `func(*args)` recorded, not run: `REDUCE` or `NEWOBJ`.
    Call {
        /// The global called.
        func: &'static str,
        /// The argument tuple.
        args: Id,
    },
    /// `obj.__setstate__(state)` recorded, not run: `BUILD`.
    Build {
        /// The object.
        obj: Id,
        /// Its state.
        state: Id,
    },
    /// A persistent id (`BINPERSID`): in `torch.save`, a storage.
    Persistent(Id),
}

/// A read pickle: its objects and the one `STOP` returned.
#[derive(Debug, Clone)]
pub struct Pickle {
    /// Every object made, in the order made.
    pub objs: Vec<Obj>,
    /// The value returned.
    pub root: Id,
}

impl Pickle {
    /// The object `id`.
    pub fn get(&self, id: Id) -> &Obj {
        &self.objs[id]
    }
}

#[derive(Clone, Copy)]
enum Item {
    Mark,
    Obj(Id),
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    objs: Vec<Obj>,
    stack: Vec<Item>,
    memo: foldhash::HashMap<u64, Id>,
}

/// Reads `bytes` as one pickle.
pub fn read(bytes: &[u8]) -> Result<Pickle> {
    let mut r = Reader {
        bytes,
        at: 0,
        objs: Vec::new(),
        stack: Vec::new(),
        memo: foldhash::HashMap::default(),
    };
    r.run()
}

impl Reader<'_> {
    fn err(&self, op_at: usize, why: impl std::fmt::Display) -> Error {
        Error::new(format!("pickle opcode at byte {op_at}: {why}"))
    }

    fn take(&mut self, n: u64, op_at: usize) -> Result<&[u8]> {
        let left = (self.bytes.len() - self.at) as u64;
        if n > left {
            return Err(self.err(
                op_at,
                format!("needs {n} bytes, but the pickle ends {left} bytes later"),
            ));
        }
        let s = &self.bytes[self.at..self.at + n as usize];
        self.at += n as usize;
        Ok(s)
    }

    fn uint(&mut self, n: usize, op_at: usize) -> Result<u64> {
        let b = self.take(n as u64, op_at)?;
        let mut v = [0u8; 8];
        v[..n].copy_from_slice(b);
        Ok(u64::from_le_bytes(v))
    }

    fn line(&mut self, op_at: usize) -> Result<String> {
        let rest = &self.bytes[self.at..];
        let Some(end) = rest.iter().position(|&b| b == b'\n') else {
            return Err(self.err(op_at, "GLOBAL name has no end of line"));
        };
        let s = String::from_utf8_lossy(&rest[..end]).into_owned();
        self.at += end + 1;
        Ok(s)
    }

    fn new_obj(&mut self, o: Obj, op_at: usize) -> Result<Id> {
        if self.objs.len() >= MAX_OBJECTS {
            return Err(self.err(op_at, format!("more than {MAX_OBJECTS} objects")));
        }
        self.objs.push(o);
        Ok(self.objs.len() - 1)
    }

    fn push(&mut self, o: Obj, op_at: usize) -> Result<()> {
        let id = self.new_obj(o, op_at)?;
        self.stack.push(Item::Obj(id));
        Ok(())
    }

    fn pop(&mut self, op_at: usize) -> Result<Id> {
        match self.stack.pop() {
            Some(Item::Obj(id)) => Ok(id),
            Some(Item::Mark) => Err(self.err(op_at, "expected an object, found a MARK")),
            None => Err(self.err(op_at, "the stack is empty")),
        }
    }

    fn top(&self, op_at: usize) -> Result<Id> {
        match self.stack.last() {
            Some(Item::Obj(id)) => Ok(*id),
            _ => Err(self.err(op_at, "expected an object on the stack")),
        }
    }

    /// The objects above the topmost MARK, which is removed.
    fn pop_mark(&mut self, op_at: usize) -> Result<Vec<Id>> {
        let Some(m) = self.stack.iter().rposition(|i| matches!(i, Item::Mark)) else {
            return Err(self.err(op_at, "no MARK on the stack"));
        };
        let items = self
            .stack
            .drain(m..)
            .skip(1)
            .filter_map(|i| match i {
                Item::Obj(id) => Some(id),
                Item::Mark => None,
            })
            .collect();
        Ok(items)
    }

    fn global(&self, module: &str, name: &str, op_at: usize) -> Result<&'static str> {
        // Protocol 2 writes Python 2's module names; Python maps them back.
        let module = match module {
            "__builtin__" => "builtins",
            "copy_reg" => "copyreg",
            m => m,
        };
        let full = format!("{module}.{name}");
        ALLOWED
            .iter()
            .find(|g| **g == full)
            .copied()
            .ok_or_else(|| {
                self.err(
                    op_at,
                    format!(
                        "global {full} is not one torch.save archives use; refused \
                         (nothing is imported or run)"
                    ),
                )
            })
    }

    fn string(&mut self, n: u64, op_at: usize) -> Result<()> {
        let s = String::from_utf8(self.take(n, op_at)?.to_vec())
            .map_err(|_| self.err(op_at, "string is not UTF-8"))?;
        self.push(Obj::Str(s), op_at)
    }

    fn bytes_obj(&mut self, n: u64, op_at: usize) -> Result<()> {
        let b = self.take(n, op_at)?.to_vec();
        self.push(Obj::Bytes(b), op_at)
    }

    fn memo_put(&mut self, key: u64, op_at: usize) -> Result<()> {
        let id = self.top(op_at)?;
        if self.memo.len() >= MAX_OBJECTS {
            return Err(self.err(op_at, "memo too large"));
        }
        self.memo.insert(key, id);
        Ok(())
    }

    fn memo_get(&mut self, key: u64, op_at: usize) -> Result<()> {
        let Some(&id) = self.memo.get(&key) else {
            return Err(self.err(op_at, format!("memo key {key} was never stored")));
        };
        self.stack.push(Item::Obj(id));
        Ok(())
    }

    fn container(&mut self, id: Id, op_at: usize) -> Result<&mut Obj> {
        let o = &self.objs[id];
        if matches!(o, Obj::List(_) | Obj::Dict(_) | Obj::Set(_)) {
            Ok(&mut self.objs[id])
        } else if let Obj::Call { func, .. } = o
            && *func == "collections.OrderedDict"
        {
            // An OrderedDict() becomes an ordinary dict once filled.
            self.objs[id] = Obj::Dict(Vec::new());
            Ok(&mut self.objs[id])
        } else {
            Err(self.err(op_at, "items added to something not a list, dict or set"))
        }
    }

    /// Protocol 2 writes `bytes` as `_codecs.encode(text, "latin1")`: the
    /// bytes, without calling anything.
    fn latin1_bytes(&self, func: &str, args: Id) -> Option<Obj> {
        let Obj::Tuple(a) = &self.objs[args] else {
            return None;
        };
        match (func, a.as_slice()) {
            ("_codecs.encode", [text, enc]) => match (&self.objs[*text], &self.objs[*enc]) {
                (Obj::Str(t), Obj::Str(e)) if e == "latin1" => {
                    let b: Option<Vec<u8>> = t.chars().map(|c| u8::try_from(c).ok()).collect();
                    b.map(Obj::Bytes)
                }
                _ => None,
            },
            _ => None,
        }
    }

    fn run(&mut self) -> Result<Pickle> {
        loop {
            let op_at = self.at;
            let Some(&op) = self.bytes.get(self.at) else {
                return Err(self.err(op_at, "the pickle ends without STOP"));
            };
            self.at += 1;
            match op {
                0x80 => {
                    let v = self.uint(1, op_at)?;
                    if !(2..=5).contains(&v) {
                        return Err(self.err(op_at, format!("protocol {v}; read are 2 to 5")));
                    }
                }
                0x95 => {
                    self.uint(8, op_at)?;
                }
                b'.' => {
                    let root = self.pop(op_at)?;
                    return Ok(Pickle {
                        objs: std::mem::take(&mut self.objs),
                        root,
                    });
                }
                b'(' => self.stack.push(Item::Mark),
                b')' => self.push(Obj::Tuple(Vec::new()), op_at)?,
                b']' => self.push(Obj::List(Vec::new()), op_at)?,
                b'}' => self.push(Obj::Dict(Vec::new()), op_at)?,
                0x8f => self.push(Obj::Set(Vec::new()), op_at)?,
                b't' => {
                    let items = self.pop_mark(op_at)?;
                    self.push(Obj::Tuple(items), op_at)?;
                }
                0x85..=0x87 => {
                    let n = (op - 0x84) as usize;
                    let mut items = Vec::with_capacity(n);
                    for _ in 0..n {
                        items.push(self.pop(op_at)?);
                    }
                    items.reverse();
                    self.push(Obj::Tuple(items), op_at)?;
                }
                b'l' => {
                    let items = self.pop_mark(op_at)?;
                    self.push(Obj::List(items), op_at)?;
                }
                b'd' => {
                    let items = self.pop_mark(op_at)?;
                    let pairs = pairs(&items).ok_or_else(|| self.err(op_at, "odd item count"))?;
                    self.push(Obj::Dict(pairs), op_at)?;
                }
                0x91 => {
                    let items = self.pop_mark(op_at)?;
                    self.push(Obj::Set(items), op_at)?;
                }
                b'a' => {
                    let v = self.pop(op_at)?;
                    let l = self.top(op_at)?;
                    match self.container(l, op_at)? {
                        Obj::List(items) => items.push(v),
                        _ => return Err(self.err(op_at, "APPEND to something not a list")),
                    }
                }
                b'e' | 0x90 => {
                    let vs = self.pop_mark(op_at)?;
                    let l = self.top(op_at)?;
                    match self.container(l, op_at)? {
                        Obj::List(items) | Obj::Set(items) => items.extend(vs),
                        _ => return Err(self.err(op_at, "APPENDS to something not a list")),
                    }
                }
                b's' => {
                    let v = self.pop(op_at)?;
                    let k = self.pop(op_at)?;
                    let d = self.top(op_at)?;
                    match self.container(d, op_at)? {
                        Obj::Dict(items) => items.push((k, v)),
                        _ => return Err(self.err(op_at, "SETITEM on something not a dict")),
                    }
                }
                b'u' => {
                    let items = self.pop_mark(op_at)?;
                    let kv = pairs(&items).ok_or_else(|| self.err(op_at, "odd item count"))?;
                    let d = self.top(op_at)?;
                    match self.container(d, op_at)? {
                        Obj::Dict(items) => items.extend(kv),
                        _ => return Err(self.err(op_at, "SETITEMS on something not a dict")),
                    }
                }
                b'N' => self.push(Obj::None, op_at)?,
                0x88 => self.push(Obj::Bool(true), op_at)?,
                0x89 => self.push(Obj::Bool(false), op_at)?,
                b'J' => {
                    let v = self.uint(4, op_at)? as u32 as i32;
                    self.push(Obj::Int(v.into()), op_at)?;
                }
                b'K' => {
                    let v = self.uint(1, op_at)?;
                    self.push(Obj::Int(v as i64), op_at)?;
                }
                b'M' => {
                    let v = self.uint(2, op_at)?;
                    self.push(Obj::Int(v as i64), op_at)?;
                }
                0x8a | 0x8b => {
                    let n = if op == 0x8a {
                        self.uint(1, op_at)?
                    } else {
                        self.uint(4, op_at)?
                    };
                    let b = self.take(n, op_at)?;
                    if n > 8 {
                        return Err(self.err(op_at, format!("an integer of {n} bytes")));
                    }
                    let mut v = [0u8; 8];
                    v[..n as usize].copy_from_slice(b);
                    if n > 0 && n < 8 && b[n as usize - 1] & 0x80 != 0 {
                        v[n as usize..].fill(0xff);
                    }
                    self.push(Obj::Int(i64::from_le_bytes(v)), op_at)?;
                }
                b'G' => {
                    let b = self.take(8, op_at)?;
                    let v = f64::from_be_bytes(b.try_into().unwrap_or_default());
                    self.push(Obj::Float(v), op_at)?;
                }
                b'X' => {
                    let n = self.uint(4, op_at)?;
                    self.string(n, op_at)?;
                }
                0x8c => {
                    let n = self.uint(1, op_at)?;
                    self.string(n, op_at)?;
                }
                0x8d => {
                    let n = self.uint(8, op_at)?;
                    self.string(n, op_at)?;
                }
                b'B' => {
                    let n = self.uint(4, op_at)?;
                    self.bytes_obj(n, op_at)?;
                }
                b'C' => {
                    let n = self.uint(1, op_at)?;
                    self.bytes_obj(n, op_at)?;
                }
                0x8e => {
                    let n = self.uint(8, op_at)?;
                    self.bytes_obj(n, op_at)?;
                }
                b'T' | b'U' => {
                    let n = if op == b'T' {
                        self.uint(4, op_at)?
                    } else {
                        self.uint(1, op_at)?
                    };
                    let s = self.take(n, op_at)?.iter().map(|&b| b as char).collect();
                    self.push(Obj::Str(s), op_at)?;
                }
                b'c' => {
                    let module = self.line(op_at)?;
                    let name = self.line(op_at)?;
                    let g = self.global(&module, &name, op_at)?;
                    self.push(Obj::Global(g), op_at)?;
                }
                0x93 => {
                    let name = self.pop(op_at)?;
                    let module = self.pop(op_at)?;
                    let (Obj::Str(module), Obj::Str(name)) = (&self.objs[module], &self.objs[name])
                    else {
                        return Err(self.err(op_at, "STACK_GLOBAL of something not two strings"));
                    };
                    let g = self.global(module, name, op_at)?;
                    self.push(Obj::Global(g), op_at)?;
                }
                b'R' | 0x81 => {
                    let args = self.pop(op_at)?;
                    let func = self.pop(op_at)?;
                    let Obj::Global(func) = self.objs[func] else {
                        return Err(self.err(op_at, "a call of something not a global"));
                    };
                    if !matches!(self.objs[args], Obj::Tuple(_)) {
                        return Err(
                            self.err(op_at, format!("{func} called with arguments not a tuple"))
                        );
                    }
                    let call = self
                        .latin1_bytes(func, args)
                        .unwrap_or(Obj::Call { func, args });
                    self.push(call, op_at)?;
                }
                b'b' => {
                    let state = self.pop(op_at)?;
                    let obj = self.pop(op_at)?;
                    self.push(Obj::Build { obj, state }, op_at)?;
                }
                b'Q' => {
                    let id = self.pop(op_at)?;
                    self.push(Obj::Persistent(id), op_at)?;
                }
                b'q' => {
                    let k = self.uint(1, op_at)?;
                    self.memo_put(k, op_at)?;
                }
                b'r' => {
                    let k = self.uint(4, op_at)?;
                    self.memo_put(k, op_at)?;
                }
                0x94 => {
                    let k = self.memo.len() as u64;
                    self.memo_put(k, op_at)?;
                }
                b'h' => {
                    let k = self.uint(1, op_at)?;
                    self.memo_get(k, op_at)?;
                }
                b'j' => {
                    let k = self.uint(4, op_at)?;
                    self.memo_get(k, op_at)?;
                }
                b'0' => {
                    self.stack.pop();
                }
                b'1' => {
                    self.pop_mark(op_at)?;
                }
                b'2' => {
                    let top = self.top(op_at)?;
                    self.stack.push(Item::Obj(top));
                }
                other => {
                    return Err(self.err(
                        op_at,
                        format!(
                            "opcode 0x{other:02x} ({:?}) is not one of the binary protocol 2-5 \
                             opcodes read here",
                            other as char
                        ),
                    ));
                }
            }
        }
    }
}

fn pairs(items: &[Id]) -> Option<Vec<(Id, Id)>> {
    if !items.len().is_multiple_of(2) {
        return None;
    }
    Some(items.chunks(2).map(|c| (c[0], c[1])).collect())
}

#[cfg(test)]
mod tests;

impl Pickle {
    /// The value as JSON, for showing what is not a tensor: dicts become
    /// objects when their keys are strings or integers (arrays of pairs
    /// otherwise), tuples and sets arrays, calls and globals objects naming
    /// them. Errors past [`MAX_DEPTH`] levels (deep or cyclic pickles).
    pub fn to_json(&self, id: Id) -> Result<serde_json::Value> {
        self.json_at(id, 0)
    }

    fn json_at(&self, id: Id, depth: usize) -> Result<serde_json::Value> {
        use serde_json::{Value as J, json};
        if depth > MAX_DEPTH {
            return Err(Error::new(format!(
                "pickle value nested deeper than {MAX_DEPTH} levels (or refers to itself)"
            )));
        }
        let all = |ids: &[Id]| -> Result<J> {
            ids.iter()
                .map(|&i| self.json_at(i, depth + 1))
                .collect::<Result<Vec<_>>>()
                .map(J::Array)
        };
        Ok(match self.get(id) {
            Obj::None => J::Null,
            Obj::Bool(b) => json!(b),
            Obj::Int(i) => json!(i),
            Obj::Float(f) => json!(f),
            Obj::Str(s) => json!(s),
            Obj::Bytes(b) => json!({ "bytes": b.len() }),
            Obj::List(ids) | Obj::Tuple(ids) | Obj::Set(ids) => all(ids)?,
            Obj::Dict(kv) => {
                let keys: Option<Vec<String>> = kv
                    .iter()
                    .map(|(k, _)| match self.get(*k) {
                        Obj::Str(s) => Some(s.clone()),
                        Obj::Int(i) => Some(i.to_string()),
                        _ => None,
                    })
                    .collect();
                match keys {
                    Some(keys) => {
                        let mut m = serde_json::Map::new();
                        for (key, (_, v)) in keys.into_iter().zip(kv) {
                            m.insert(key, self.json_at(*v, depth + 1)?);
                        }
                        J::Object(m)
                    }
                    None => J::Array(
                        kv.iter()
                            .map(|(k, v)| {
                                Ok(json!([
                                    self.json_at(*k, depth + 1)?,
                                    self.json_at(*v, depth + 1)?
                                ]))
                            })
                            .collect::<Result<Vec<_>>>()?,
                    ),
                }
            }
            Obj::Global(g) => json!({ "global": g }),
            Obj::Call { func, args } => {
                json!({ "call": func, "args": self.json_at(*args, depth + 1)? })
            }
            Obj::Build { obj, state } => json!({
                "build": self.json_at(*obj, depth + 1)?,
                "state": self.json_at(*state, depth + 1)?,
            }),
            Obj::Persistent(p) => json!({ "persistent_id": self.json_at(*p, depth + 1)? }),
        })
    }
}
