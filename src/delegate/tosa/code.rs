//! `code.txt` of a TOSA graph: a line per operator, deterministic.
//!
//! ```text
//! # TOSA 1.0.0 (software 2026.5.0): 1 block, 15 operators, 16 values, 10 constants
//! ## main/main: inputs %x:f32[1,16] -> outputs %tosa_reshape_default_1:f32[1,8]
//! 008: CONV2D %tosa_reshape_default:f32[1,1,1,16] %aten_convolution_default_weight_ohwi:f32[32,1,1,16] … -> %tosa_conv2d_default:f32[1,1,1,32] pad=[0,0,0,0] stride=[1,1] dilation=[1,1] local_bound=false acc_type=FP32
//! ```
//! Each operand is `%name:type[dims]`, a constant's followed by `=value`
//! when it holds a few values, `(N bytes)` otherwise; a name the block
//! does not define prints `:?`, and one with spaces, quotes or control
//! characters is quoted and escaped.

use std::fmt::Write;

use super::Payload;
use super::attributes::{self, Field};
use super::dtype;
use super::graph::{Block, Operand, op_name};
use crate::format::scalar::f16_to_f32;
use crate::schema::tosa as fb;

/// Most dims or values shown per operand: an operator may name one
/// operand many times, so a line must not grow with its size.
const MAX_SHOWN: usize = 16;

/// Most elements of a constant printed as its value.
const MAX_VALUES: u64 = 4;

/// The text of `code.txt`.
pub fn render(p: &Payload<'_>) -> String {
    let mut out = String::new();
    let v = p.graph.version();
    let draft = if v._draft() { " draft" } else { "" };
    let _ = write!(
        out,
        "# TOSA {}.{}.{}{draft}",
        v._major(),
        v._minor(),
        v._patch()
    );
    if let Some(s) = p.graph.software_version() {
        let _ = write!(
            out,
            " (software {}.{}.{}{})",
            s._major(),
            s._minor(),
            s._micro(),
            s._modifier().unwrap_or("")
        );
    }
    let _ = writeln!(
        out,
        ": {} block{}, {} operators, {} values, {} constants",
        p.blocks.len(),
        if p.blocks.len() == 1 { "" } else { "s" },
        p.operators(),
        p.values(),
        p.constants.len()
    );
    for b in &p.blocks {
        block(&mut out, b);
    }
    out
}

fn block(out: &mut String, b: &Block<'_>) {
    let _ = write!(out, "## {}: inputs", shown(&b.path()));
    names(out, b, b.block.inputs());
    out.push_str(" -> outputs");
    names(out, b, b.block.outputs());
    out.push('\n');
    for (k, op) in b.operators().enumerate() {
        let _ = write!(out, "{k:03}: {}", op_name(op.op()));
        names(out, b, op.inputs());
        out.push_str(" ->");
        names(out, b, op.outputs());
        for (name, f) in attributes::fields(op).unwrap_or_default() {
            let _ = write!(out, " {name}={}", field(&f, op, b));
        }
        if let Some(t) = op
            .location()
            .and_then(|l| l.text())
            .filter(|t| !t.is_empty())
        {
            let _ = write!(out, " loc={t:?}");
        }
        out.push('\n');
    }
}

fn names(
    out: &mut String,
    b: &Block<'_>,
    v: Option<flatbuffers::Vector<'_, flatbuffers::ForwardsUOffset<&str>>>,
) {
    let mut any = false;
    for name in v.into_iter().flatten() {
        out.push(' ');
        operand(out, b, name);
        any = true;
    }
    if !any {
        out.push_str(" none");
    }
}

/// A name as `code.txt` shows it: as written, or quoted and escaped when
/// it holds spaces, quotes or control characters that would break the
/// line apart.
pub fn shown(name: &str) -> std::borrow::Cow<'_, str> {
    if !name.is_empty()
        && name
            .chars()
            .all(|c| !c.is_control() && !c.is_whitespace() && c != '"')
    {
        name.into()
    } else {
        format!("{name:?}").into()
    }
}

/// `%name:type[dims]`, with the value of a small constant.
fn operand(out: &mut String, b: &Block<'_>, name: &str) {
    let _ = write!(out, "%{}", shown(name));
    match b.operand(name) {
        Operand::Tensor(t) => {
            let shape: Vec<i32> = t.shape().map(|s| s.iter().collect()).unwrap_or_default();
            let _ = write!(out, ":{}{}", dtype::short(t.type_()), bounded(&shape));
            if let Some(d) = t.data().filter(|d| !d.is_empty()) {
                out.push_str(&value(t.type_(), d.bytes()));
            } else if t.offset() > 1 && t.size() > 0 {
                let _ = write!(out, "({} bytes at {})", t.size(), t.offset());
            }
        }
        Operand::Shape(s) => {
            let _ = write!(out, ":shape[{}]", s.rank());
            if let Some(d) = s.data().filter(|d| !d.is_empty()) {
                out.push_str(&value(fb::DType::SHAPE, d.bytes()));
            }
        }
        Operand::Unknown => out.push_str(":?"),
    }
}

/// `[d0,d1,…]`, at most [`MAX_SHOWN`] items.
fn bounded(items: &[i32]) -> String {
    let shown: Vec<String> = items.iter().take(MAX_SHOWN).map(i32::to_string).collect();
    let more = if items.len() > MAX_SHOWN {
        format!(",… {} in all", items.len())
    } else {
        String::new()
    };
    format!("[{}{more}]", shown.join(","))
}

/// `=[v0, v1]` for a constant of at most [`MAX_VALUES`] elements whose
/// type reads as numbers, `(N bytes)` otherwise.
fn value(t: fb::DType, bytes: &[u8]) -> String {
    match numbers(t, bytes) {
        Some(v) if v.len() as u64 <= MAX_VALUES => format!("=[{}]", v.join(", ")),
        _ => format!("({} bytes)", bytes.len()),
    }
}

/// The values of `bytes` as elements of `t`, when `t` is a plain integer
/// or float type and the bytes hold whole elements.
fn numbers(t: fb::DType, bytes: &[u8]) -> Option<Vec<String>> {
    let width = match t {
        fb::DType::BOOL | fb::DType::INT8 => 1,
        fb::DType::INT16 | fb::DType::FP16 | fb::DType::BF16 => 2,
        fb::DType::INT32 | fb::DType::FP32 => 4,
        fb::DType::INT64 | fb::DType::SHAPE => 8,
        _ => return None,
    };
    if !bytes.len().is_multiple_of(width) || bytes.len() / width > MAX_VALUES as usize {
        return None;
    }
    Some(bytes.chunks_exact(width).map(|c| element(t, c)).collect())
}

/// One little-endian element of `t` (of [`numbers`]'s widths) as text.
fn element(t: fb::DType, c: &[u8]) -> String {
    let mut b8 = [0u8; 8];
    b8[..c.len()].copy_from_slice(c);
    let u = u64::from_le_bytes(b8);
    match t {
        fb::DType::BOOL => (u != 0).to_string(),
        fb::DType::INT8 => (u as u8 as i8).to_string(),
        fb::DType::INT16 => (u as u16 as i16).to_string(),
        fb::DType::INT32 => (u as u32 as i32).to_string(),
        fb::DType::FP32 => float32(f32::from_bits(u as u32)),
        // bfloat16 is the top half of a float32.
        fb::DType::BF16 => float32(f32::from_bits((u as u32) << 16)),
        fb::DType::FP16 => float(f64::from(f16_to_f32(u as u16))),
        _ => (u as i64).to_string(),
    }
}

/// A float32 in the fewest digits that read back as it.
fn float32(x: f32) -> String {
    if x.is_finite() {
        format!("{x:?}")
    } else {
        x.to_string()
    }
}

fn float(x: f64) -> String {
    if x.is_finite() {
        format!("{x:?}")
    } else {
        x.to_string()
    }
}

/// An attribute field as text: CLAMP's bounds as values of its input's
/// type, vectors bounded.
fn field(f: &Field<'_>, op: fb::TosaOperator<'_>, b: &Block<'_>) -> String {
    match f {
        Field::Int(x) => x.to_string(),
        Field::Bool(x) => x.to_string(),
        Field::Enum(name, n) => name.map_or_else(|| n.to_string(), str::to_owned),
        Field::Ints(None) | Field::Bytes(None) | Field::Str(None) => "none".to_owned(),
        Field::Ints(Some(v)) => bounded(v),
        Field::Str(Some(s)) => format!("{s:?}"),
        Field::Bytes(Some(bytes)) => {
            let input = op
                .inputs()
                .and_then(|i| (!i.is_empty()).then(|| i.get(0)))
                .map(|name| b.operand(name));
            let shown = match input {
                Some(Operand::Tensor(t)) => numbers(t.type_(), bytes),
                _ => None,
            };
            match shown {
                Some(v) if v.len() == 1 => v.concat(),
                Some(v) => format!("[{}]", v.join(", ")),
                None => format!("{} bytes", bytes.len()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_read_as_their_type() {
        assert_eq!(
            element(fb::DType::FP32, &[0xff, 0xff, 0x7f, 0x7f]),
            "3.4028235e38"
        );
        assert_eq!(element(fb::DType::INT8, &[0xff]), "-1");
        assert_eq!(element(fb::DType::FP16, &[0x00, 0x3c]), "1.0");
        assert_eq!(element(fb::DType::BF16, &[0x80, 0x3f]), "1.0");
        assert_eq!(element(fb::DType::SHAPE, &[2, 0, 0, 0, 0, 0, 0, 0]), "2");
        assert_eq!(numbers(fb::DType::FP32, &[0; 3]), None);
        assert_eq!(numbers(fb::DType::INT4, &[0; 4]), None);
        assert_eq!(f16_to_f32(0x7c00), f32::INFINITY);
    }
}
