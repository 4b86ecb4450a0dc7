//! What an op's fields refer to, read from their JSON: a `Tid` (tensor
//! slot) and a `Vid` (scalar value slot) both serialize as `{"idx": n}`, so
//! which one a field holds is told by its name (`vid`, `seed`, the `out` of
//! the integer ops) or by the wrapper tables that carry a kind
//! (`IntOrVid`, `FloatOrVid`, `VidOrTid`, `IntOrVidOrTid`).

use serde_json::Value;

/// Ops whose `out` is a value slot, not a tensor.
const VID_OUT: [&str; 7] = [
    "ItemIntNode",
    "AddIntNode",
    "SubtractIntNode",
    "MultiplyIntNode",
    "FloorDivideIntNode",
    "ModIntNode",
    "SymSizeNode",
];

/// Field names holding an op's results.
pub fn is_output(key: &str) -> bool {
    matches!(key, "out" | "outs" | "outputs")
}

/// A slot reference found in a field.
#[derive(Debug, Clone, PartialEq)]
pub enum Operand {
    /// A tensor slot.
    Tid(u64),
    /// A value slot.
    Vid(u64),
    /// A literal.
    Literal(Value),
    /// A list of operands.
    List(Vec<Operand>),
}

fn idx(v: &Value) -> Option<u64> {
    let o = v.as_object()?;
    (o.len() == 1).then(|| o.get("idx")?.as_u64())?
}

fn slot(v: Option<&Value>, vid: bool) -> Operand {
    match v.and_then(idx) {
        Some(n) if vid => Operand::Vid(n),
        Some(n) => Operand::Tid(n),
        None => Operand::Literal(Value::Null),
    }
}

/// The operand field `key` of op `op` holds.
pub fn read(op: &str, key: &str, v: &Value) -> Operand {
    if let Some(n) = idx(v) {
        let vid = key == "vid" || key == "seed" || (key == "out" && VID_OUT.contains(&op));
        return if vid {
            Operand::Vid(n)
        } else {
            Operand::Tid(n)
        };
    }
    match v {
        Value::Array(items) => Operand::List(items.iter().map(|x| read(op, key, x)).collect()),
        Value::Object(o) if o.contains_key("kind") => match o["kind"].as_u64() {
            Some(1) => slot(o.get("vid"), true),
            Some(2) => slot(o.get("tid"), false),
            _ => Operand::Literal(o.get("literal").cloned().unwrap_or(Value::Null)),
        },
        Value::Object(o) if o.contains_key("is_vid") => {
            if o["is_vid"].as_bool() == Some(true) {
                slot(o.get("vid"), true)
            } else if let Some(l) = o.get("literal") {
                Operand::Literal(l.clone())
            } else {
                slot(o.get("tid"), false)
            }
        }
        other => Operand::Literal(other.clone()),
    }
}

impl Operand {
    /// The tensor slots it refers to, in order.
    pub fn tids(&self, out: &mut Vec<u64>) {
        match self {
            Operand::Tid(n) => out.push(*n),
            Operand::List(l) => l.iter().for_each(|o| o.tids(out)),
            _ => {}
        }
    }
}

/// Each field of `fields` (an op's JSON) as an operand, nulls left out.
pub fn fields<'v>(op: &str, fields: &'v Value) -> Vec<(&'v str, Operand)> {
    fields
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| (k.as_str(), read(op, k, v)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn slots_are_told_apart() {
        assert_eq!(read("AddNode", "a", &json!({"idx": 3})), Operand::Tid(3));
        assert_eq!(
            read("AddIntNode", "out", &json!({"idx": 3})),
            Operand::Vid(3)
        );
        let iv = json!({"literal": 0, "vid": {"idx": 2}, "is_vid": true});
        assert_eq!(read("TileNode", "reps", &iv), Operand::Vid(2));
        let k = json!({"literal": 7, "kind": 0});
        assert_eq!(read("TakeNode", "index", &k), Operand::Literal(json!(7)));
        let mut t = Vec::new();
        read("X", "outs", &json!([{"idx": 1}, {"idx": 4}])).tids(&mut t);
        assert_eq!(t, [1, 4]);
    }
}
