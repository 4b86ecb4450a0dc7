//! The unpickler's machine: its input cursor, stack, memo and object arena,
//! with every read and allocation bounded.

use super::super::{Error, Result};
use super::allowed;
use super::value::{Id, MAX_OBJECTS, Obj, Pickle};

/// A stack slot: an object or a MARK.
#[derive(Clone, Copy)]
pub(super) enum Item {
    Mark,
    Obj(Id),
}

/// The machine one pickle runs on.
pub(super) struct Reader<'a> {
    pub(super) bytes: &'a [u8],
    pub(super) at: usize,
    pub(super) objs: Vec<Obj>,
    pub(super) stack: Vec<Item>,
    pub(super) memo: foldhash::HashMap<u64, Id>,
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
    pub(super) fn err(&self, op_at: usize, why: impl std::fmt::Display) -> Error {
        Error::new(format!("pickle opcode at byte {op_at}: {why}"))
    }

    pub(super) fn take(&mut self, n: u64, op_at: usize) -> Result<&[u8]> {
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

    pub(super) fn uint(&mut self, n: usize, op_at: usize) -> Result<u64> {
        let b = self.take(n as u64, op_at)?;
        let mut v = [0u8; 8];
        v[..n].copy_from_slice(b);
        Ok(u64::from_le_bytes(v))
    }

    pub(super) fn line(&mut self, op_at: usize) -> Result<String> {
        let rest = &self.bytes[self.at..];
        let Some(end) = rest.iter().position(|&b| b == b'\n') else {
            return Err(self.err(op_at, "GLOBAL name has no end of line"));
        };
        let s = String::from_utf8_lossy(&rest[..end]).into_owned();
        self.at += end + 1;
        Ok(s)
    }

    pub(super) fn new_obj(&mut self, o: Obj, op_at: usize) -> Result<Id> {
        if self.objs.len() >= MAX_OBJECTS {
            return Err(self.err(op_at, format!("more than {MAX_OBJECTS} objects")));
        }
        self.objs.push(o);
        Ok(self.objs.len() - 1)
    }

    pub(super) fn push(&mut self, o: Obj, op_at: usize) -> Result<()> {
        let id = self.new_obj(o, op_at)?;
        self.stack.push(Item::Obj(id));
        Ok(())
    }

    pub(super) fn pop(&mut self, op_at: usize) -> Result<Id> {
        match self.stack.pop() {
            Some(Item::Obj(id)) => Ok(id),
            Some(Item::Mark) => Err(self.err(op_at, "expected an object, found a MARK")),
            None => Err(self.err(op_at, "the stack is empty")),
        }
    }

    pub(super) fn top(&self, op_at: usize) -> Result<Id> {
        match self.stack.last() {
            Some(Item::Obj(id)) => Ok(*id),
            _ => Err(self.err(op_at, "expected an object on the stack")),
        }
    }

    /// The objects above the topmost MARK, which is removed.
    pub(super) fn pop_mark(&mut self, op_at: usize) -> Result<Vec<Id>> {
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

    pub(super) fn global(&self, module: &str, name: &str, op_at: usize) -> Result<&'static str> {
        allowed::lookup(module, name).map_err(|refused| self.err(op_at, refused))
    }

    pub(super) fn string(&mut self, n: u64, op_at: usize) -> Result<()> {
        let s = String::from_utf8(self.take(n, op_at)?.to_vec())
            .map_err(|_| self.err(op_at, "string is not UTF-8"))?;
        self.push(Obj::Str(s), op_at)
    }

    pub(super) fn bytes_obj(&mut self, n: u64, op_at: usize) -> Result<()> {
        let b = self.take(n, op_at)?.to_vec();
        self.push(Obj::Bytes(b), op_at)
    }

    pub(super) fn memo_put(&mut self, key: u64, op_at: usize) -> Result<()> {
        let id = self.top(op_at)?;
        if self.memo.len() >= MAX_OBJECTS {
            return Err(self.err(op_at, "memo too large"));
        }
        self.memo.insert(key, id);
        Ok(())
    }

    pub(super) fn memo_get(&mut self, key: u64, op_at: usize) -> Result<()> {
        let Some(&id) = self.memo.get(&key) else {
            return Err(self.err(op_at, format!("memo key {key} was never stored")));
        };
        self.stack.push(Item::Obj(id));
        Ok(())
    }

    pub(super) fn container(&mut self, id: Id, op_at: usize) -> Result<&mut Obj> {
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
    pub(super) fn latin1_bytes(&self, func: &str, args: Id) -> Option<Obj> {
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
}
