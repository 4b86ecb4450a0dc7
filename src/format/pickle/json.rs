//! A read pickle's values as JSON, for showing what is not a tensor.

use super::super::{Error, Result};
use super::value::{Id, MAX_DEPTH, Obj, Pickle};

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
