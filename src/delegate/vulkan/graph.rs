//! The verified `VkGraph` flatbuffer: its operator chain and values, and
//! values described for `code.txt`.

use crate::format::{Result, Span};
use crate::schema::vulkan as fb;

/// One operator call of the chain.
#[derive(Debug, Clone)]
pub struct Call<'a> {
    /// Position in `VkGraph.chain`.
    pub index: usize,
    /// `node_id` as written.
    pub node_id: u32,
    /// Operator name (`aten.convolution.default`); empty when absent.
    pub name: &'a str,
    /// Value ids of its arguments, inputs and outputs, in order.
    pub args: Vec<i32>,
}

/// Verifies the flatbuffer at `span` of `payload` and returns its root.
pub fn verify<'a>(payload: &'a [u8], span: Span) -> Result<fb::VkGraph<'a>> {
    crate::delegate::flatbuffer::root::<fb::VkGraph>(payload, span, "VkGraph")
}

/// The operator chain in order.
pub fn calls<'a>(g: fb::VkGraph<'a>) -> Vec<Call<'a>> {
    g.chain()
        .iter()
        .flatten()
        .enumerate()
        .map(|(index, c)| Call {
            index,
            node_id: c.node_id(),
            name: c.name().unwrap_or(""),
            args: c.args().map(|a| a.iter().collect()).unwrap_or_default(),
        })
        .collect()
}

/// Value `id` of the graph, when there is one.
pub fn value<'a>(g: fb::VkGraph<'a>, id: i32) -> Option<fb::VkValue<'a>> {
    let values = g.values()?;
    let i = usize::try_from(id).ok().filter(|&i| i < values.len())?;
    Some(values.get(i))
}

/// The element type's short name (`f32`), its size in bytes and NumPy
/// descr; `None` for `UNSET` and unknown types.
pub fn storage(t: fb::VkDataType) -> Option<(&'static str, u64, &'static str)> {
    Some(match t {
        fb::VkDataType::BOOL => ("bool", 1, "|b1"),
        fb::VkDataType::UINT8 => ("u8", 1, "|u1"),
        fb::VkDataType::INT8 => ("i8", 1, "|i1"),
        fb::VkDataType::INT32 => ("i32", 4, "<i4"),
        fb::VkDataType::FLOAT16 => ("f16", 2, "<f2"),
        fb::VkDataType::FLOAT32 => ("f32", 4, "<f4"),
        fb::VkDataType::FLOAT64 => ("f64", 8, "<f8"),
        fb::VkDataType::INT64 => ("i64", 8, "<i8"),
        _ => return None,
    })
}

/// The name of element type `t` (`FLOAT32`), or its number.
pub fn datatype_name(t: fb::VkDataType) -> String {
    t.variant_name()
        .map_or_else(|| format!("datatype{}", t.0), str::to_owned)
}

/// A tensor's dims, empty when absent.
pub fn dims(t: fb::VkTensor<'_>) -> Vec<u32> {
    t.dims().map(|d| d.iter().collect()).unwrap_or_default()
}

/// Value `id` as `code.txt` shows it: `%3:f32[1,16]` for a tensor,
/// `%4=[1, 1]` for a list, `%5=none`, `%6=?` for an id with no value.
pub fn describe(g: fb::VkGraph<'_>, id: i32) -> String {
    let Some(v) = value(g, id) else {
        return format!("%{id}=?");
    };
    if let Some(t) = v.value_as_vk_tensor() {
        let dtype =
            storage(t.datatype()).map_or_else(|| datatype_name(t.datatype()), |s| s.0.to_owned());
        let dims = t.dims().unwrap_or_default().iter();
        return format!("%{id}:{dtype}{}", bounded(dims, |d| d.to_string(), ","));
    }
    format!("%{id}={}", literal(v))
}

/// Most items of a list (or dims of a tensor) shown per use of a value:
/// calls may name one value many times, so a line must not grow with the
/// length of what it names.
const MAX_SHOWN: usize = 16;

/// `[a<sep>b…]`, at most [`MAX_SHOWN`] items, then how many in all.
fn bounded<T>(
    items: impl ExactSizeIterator<Item = T>,
    show: impl Fn(T) -> String,
    sep: &str,
) -> String {
    let n = items.len();
    let shown: Vec<String> = items.take(MAX_SHOWN).map(show).collect();
    let more = if n > MAX_SHOWN {
        format!("{sep}… {n} in all")
    } else {
        String::new()
    };
    format!("[{}{more}]", shown.join(sep))
}

fn list<T>(items: impl ExactSizeIterator<Item = T>, show: impl Fn(T) -> String) -> String {
    bounded(items, show, ", ")
}

fn float(x: f64) -> String {
    if x.is_finite() {
        format!("{x:?}")
    } else {
        x.to_string()
    }
}

/// A non-tensor value as text.
fn literal(v: fb::VkValue<'_>) -> String {
    if v.value_as_null().is_some() {
        "none".to_owned()
    } else if let Some(x) = v.value_as_int() {
        x.int_val().to_string()
    } else if let Some(x) = v.value_as_double() {
        float(x.double_val())
    } else if let Some(x) = v.value_as_bool() {
        x.bool_val().to_string()
    } else if let Some(x) = v.value_as_int_list() {
        list(x.items().unwrap_or_default().iter(), |i| i.to_string())
    } else if let Some(x) = v.value_as_double_list() {
        list(x.items().unwrap_or_default().iter(), float)
    } else if let Some(x) = v.value_as_bool_list() {
        list(x.items().unwrap_or_default().iter(), |b| b.to_string())
    } else if let Some(x) = v.value_as_value_list() {
        list(x.items().unwrap_or_default().iter(), |i| format!("%{i}"))
    } else if let Some(x) = v.value_as_string() {
        format!("{:?}", x.string_val().unwrap_or(""))
    } else if let Some(x) = v.value_as_sym_int() {
        format!("symint({})", x.value())
    } else {
        let t = v.value_type();
        t.variant_name()
            .map_or_else(|| format!("type{}", t.0), |n| n.to_owned())
    }
}
