//! Constant tensors: where their bytes are (the payload's constant bytes or
//! named data) and their names (the first call using them, and how).

use serde::Serialize;

use super::graph::{self, Call};
use crate::delegate::{Bytes, Lookup};
use crate::format::Span;
use crate::schema::vulkan as fb;

/// A call using a value: which call, its operator, and the argument
/// position.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Use {
    /// Position in the chain.
    pub call: usize,
    /// The operator name.
    pub op: String,
    /// Position among the call's arguments.
    pub arg: usize,
}

/// A tensor value with stored bytes.
#[derive(Debug, Clone)]
pub struct Constant<'a> {
    /// File stem: `<call>-<op>.arg<k>` of the first use
    /// (`003-aten.convolution.default.arg1`), or `unused.<id>`.
    pub name: String,
    /// The call part of the name (`003-aten.convolution.default`).
    pub layer: Option<String>,
    /// The role part (`arg1`), `unused` when no call uses it.
    pub role: String,
    /// The value id (its position in `VkGraph.values`).
    pub value_id: u32,
    /// `constant_id`: the position in `VkGraph.constants`.
    pub constant_id: u32,
    /// Element type.
    pub datatype: fb::VkDataType,
    /// Dimensions.
    pub dims: Vec<u32>,
    /// Bytes the dims need and the `.npy` descr and shape, when known.
    pub size: Option<(u64, &'static str, Vec<u64>)>,
    /// Where the bytes are; `Err` says why they cannot be shown.
    pub bytes: Result<Bytes<'a>, String>,
    /// Named-data key, if the bytes are kept there.
    pub key: Option<&'a str>,
    /// Calls using the value, in chain order.
    pub users: Vec<Use>,
}

/// What the constants need to find their bytes.
pub struct Context<'a, 'n> {
    /// The verified graph.
    pub graph: fb::VkGraph<'a>,
    /// The payload's constant bytes.
    pub constant_data: Span,
    /// Named data.
    pub named: &'n dyn Lookup<'a>,
}

impl<'a> Context<'a, '_> {
    /// The bytes `constants[id]` describes and the named-data key, if any.
    fn bytes(&self, id: u32) -> Result<(Bytes<'a>, Option<&'a str>), String> {
        let table = self.graph.constants().unwrap_or_default();
        let Some(entry) = ((id as usize) < table.len()).then(|| table.get(id as usize)) else {
            return Err(format!(
                "constant_id {id} is out of range ({} constants)",
                table.len()
            ));
        };
        if entry.offset() == u64::MAX
            && let Some(key) = entry.named_key().filter(|k| !k.is_empty())
        {
            let len = self.named.len(key).ok_or_else(|| {
                format!(
                    "named data key {key:?} is in neither the program nor an attached data file"
                )
            })?;
            return Ok((Bytes::named(key, len), Some(key)));
        }
        let span = self
            .constant_data
            .sub(entry.offset(), entry.length(), || {
                format!("constants[{id}] in the payload's constant bytes")
            })
            .map_err(|e| e.to_string())?;
        Ok((Bytes::Payload(span), None))
    }
}

/// The calls using each value id, in chain order.
fn users(calls: &[Call<'_>], values: usize) -> Vec<Vec<Use>> {
    let mut out = vec![Vec::new(); values];
    for c in calls {
        for (arg, &id) in c.args.iter().enumerate() {
            if let Some(u) = usize::try_from(id).ok().and_then(|i| out.get_mut(i)) {
                u.push(Use {
                    call: c.index,
                    op: c.name.to_owned(),
                    arg,
                });
            }
        }
    }
    for u in &mut out {
        u.dedup();
    }
    out
}

/// An operator name as part of a file name: characters other than
/// letters, digits, `.`, `_` and `-` become `_`.
fn file_part(op: &str) -> String {
    let part: String = op
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if part.is_empty() {
        "op".to_owned()
    } else {
        part
    }
}

/// Every tensor value with a `constant_id`, in value order.
pub fn collect<'a>(cx: &Context<'a, '_>, calls: &[Call<'_>]) -> Vec<Constant<'a>> {
    let Some(values) = cx.graph.values() else {
        return Vec::new();
    };
    let mut users = users(calls, values.len());
    let mut out = Vec::new();
    for (i, v) in values.iter().enumerate() {
        let Some(t) = v.value_as_vk_tensor() else {
            continue;
        };
        let Ok(constant_id) = u32::try_from(t.constant_id()) else {
            continue;
        };
        let users = std::mem::take(&mut users[i]);
        let (name, layer, role) = match users.first() {
            Some(u) => {
                let layer = format!("{:03}-{}", u.call, file_part(&u.op));
                let role = format!("arg{}", u.arg);
                (format!("{layer}.{role}"), Some(layer), role)
            }
            None => (format!("unused.{i}"), None, "unused".to_owned()),
        };
        let dims = graph::dims(t);
        let size = graph::storage(t.datatype()).and_then(|(_, elem, descr)| {
            let shape: Vec<u64> = dims.iter().map(|&d| u64::from(d)).collect();
            let n = shape.iter().try_fold(elem, |n, &d| n.checked_mul(d))?;
            Some((n, descr, shape))
        });
        let found = cx.bytes(constant_id);
        let key = found.as_ref().ok().and_then(|(_, k)| *k);
        let bytes = found.and_then(|(b, _)| fit(b, size.as_ref().map(|s| s.0)));
        out.push(Constant {
            name,
            layer,
            role,
            value_id: i as u32,
            constant_id,
            datatype: t.datatype(),
            dims,
            size,
            bytes,
            key,
            users,
        });
    }
    out
}

/// `b`, cut to the `need` bytes the dims say when it holds more; fewer
/// is an error.
fn fit(b: Bytes<'_>, need: Option<u64>) -> Result<Bytes<'_>, String> {
    let Some(need) = need else { return Ok(b) };
    if b.len() < need {
        return Err(format!(
            "the value's dims need {need} bytes, {} are stored",
            b.len()
        ));
    }
    Ok(b.prefix(need))
}
