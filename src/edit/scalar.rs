//! The value a constant method returns (`get_max_seq_len`), set where the
//! program's flatbuffer stores it: the `int_val`, `double_val` or
//! `bool_val` field of the output's `EValue`, rewritten in place. A value
//! the flatbuffer leaves out (the field's default, 0 or false) has no
//! place to be written and is refused.

use super::{Edit, EditError, Result};
use crate::format::{Parsed, ProgramFile, Span};
use crate::schema::program as fb;

/// Where a constant method's value is stored, and its kind.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Place {
    /// An `Int`'s 8 bytes.
    Int(Span),
    /// A `Double`'s 8 bytes.
    Double(Span),
    /// A `Bool`'s byte.
    Bool(Span),
}

/// The stored value of method `method` of `program`, a method of no
/// instructions returning one scalar; `Err` says why there is none.
pub fn stored(program: &ProgramFile<'_>, method: &str) -> std::result::Result<Place, String> {
    let m = program
        .methods
        .iter()
        .find(|m| m.name.show() == method)
        .ok_or_else(|| format!("the program has no method {method:?}"))?;
    let plan = m.plan;
    let instructions: usize = plan
        .chains()
        .iter()
        .flatten()
        .map(|c| c.instructions().map_or(0, |i| i.len()))
        .sum();
    let outputs: Vec<i32> = plan.outputs().iter().flatten().collect();
    let [out] = outputs[..] else {
        return Err(format!(
            "{method} returns {} values, not one",
            outputs.len()
        ));
    };
    if instructions > 0 {
        return Err(format!(
            "{method} computes its value; only a constant method's can be set"
        ));
    }
    let value = usize::try_from(out)
        .ok()
        .and_then(|i| plan.values().filter(|v| i < v.len()).map(|v| v.get(i)))
        .ok_or_else(|| format!("{method}'s output {out} is not one of its values"))?;
    let field = |t: flatbuffers::Table<'_>, slot: u16, len: u64, make: fn(Span) -> Place| {
        let at = t.vtable().get(slot);
        if at == 0 {
            return Err(format!(
                "{method} returns the schema's default (0 or false), which the flatbuffer does not store; it cannot be set in place"
            ));
        }
        Ok(make(Span {
            offset: (t.loc() + at as usize) as u64,
            len,
        }))
    };
    if let Some(i) = value.val_as_int() {
        return field(i._tab, fb::Int::VT_INT_VAL, 8, Place::Int);
    }
    if let Some(d) = value.val_as_double() {
        return field(d._tab, fb::Double::VT_DOUBLE_VAL, 8, Place::Double);
    }
    if let Some(b) = value.val_as_bool() {
        return field(b._tab, fb::Bool::VT_BOOL_VAL, 1, Place::Bool);
    }
    Err(format!("{method} returns no int, float or bool"))
}

/// The edit storing `given` (JSON text: a number or `true`/`false`) as the
/// value at `at`; `path` names it in messages.
pub fn edit(at: Place, given: &[u8], path: &str) -> Result<Edit> {
    let bad = |why: String| EditError::Mismatch {
        path: path.to_owned(),
        why,
    };
    let v: serde_json::Value = serde_json::from_slice(given).map_err(|e| {
        bad(format!(
            "the new value is not a JSON number or boolean: {e}"
        ))
    })?;
    let (span, bytes) = match at {
        Place::Int(s) => {
            let n = v
                .as_i64()
                .ok_or_else(|| bad(format!("{v} is not an integer, and the method returns one")))?;
            if n == 0 {
                return Err(bad(
                    "0 is the default, which the flatbuffer does not store".into()
                ));
            }
            (s, n.to_le_bytes().to_vec())
        }
        Place::Double(s) => {
            let x = v
                .as_f64()
                .ok_or_else(|| bad(format!("{v} is not a number, and the method returns one")))?;
            if x == 0.0 {
                return Err(bad(
                    "0 is the default, which the flatbuffer does not store".into()
                ));
            }
            (s, x.to_le_bytes().to_vec())
        }
        Place::Bool(s) => {
            let b = v.as_bool().ok_or_else(|| {
                bad(format!(
                    "{v} is not true or false, and the method returns a bool"
                ))
            })?;
            if !b {
                return Err(bad(
                    "false is the default, which the flatbuffer does not store".into(),
                ));
            }
            (s, vec![1])
        }
    };
    Ok(Edit {
        offset: span.offset,
        bytes,
        path: path.to_owned(),
    })
}

/// The method whose `value.json` tree path `path` is
/// (`methods/<method>/value.json`).
pub fn method_of(path: &str) -> Option<&str> {
    let rest = path.trim_start_matches('/').strip_prefix("methods/")?;
    let method = rest.strip_suffix("/value.json")?;
    (!method.is_empty() && !method.contains('/')).then_some(method)
}

/// The edit of `program` (a program file's bytes) that makes constant
/// method `method` return `given` (JSON text); `path` names it.
pub fn set(program: &[u8], method: &str, given: &[u8], path: &str) -> Result<Edit> {
    let refuse = |why: String| EditError::NotStored {
        path: path.to_owned(),
        why,
    };
    let Ok(Parsed::Program(p)) = crate::format::parse(program) else {
        return Err(refuse("is not in a program file".into()));
    };
    let at = stored(&p, method).map_err(refuse)?;
    edit(at, given, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_paths_name_their_method() {
        assert_eq!(
            method_of("methods/get_max_seq_len/value.json"),
            Some("get_max_seq_len")
        );
        assert_eq!(method_of("methods/a/b/value.json"), None);
        assert_eq!(method_of("methods/forward/io.json"), None);
    }
}
