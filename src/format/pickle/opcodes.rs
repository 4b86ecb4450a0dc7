//! What each binary opcode of protocols 2 to 5 does to the machine.

use super::super::Result;
use super::reader::{Item, Reader};
use super::value::{Id, Obj, Pickle};

impl Reader<'_> {
    pub(super) fn run(&mut self) -> Result<Pickle> {
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
