//! XNNPACK nodes as operator name plus fields in schema order, so that
//! `graph.json`, `code.txt` and weight naming read one representation.

use serde::Serialize;

use crate::schema::xnnpack as fb;
use fb::XNodeUnion as U;

/// "No value" in an id field.
pub const NONE_ID: u32 = u32::MAX;

/// A field of a node table.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Field {
    /// `uint`.
    U32(u32),
    /// `float` (may be non-finite).
    F32(f32),
    /// `[uint]`, `None` when absent.
    List(Option<Vec<u32>>),
}

/// One node of the graph.
#[derive(Debug, Clone)]
pub struct Node {
    /// Position in `XNNGraph.xnodes`.
    pub index: usize,
    /// The union type tag.
    pub tag: u8,
    /// The union member name (`XNNConv2d`), `None` for an unknown tag.
    pub op: Option<&'static str>,
    /// The operator in snake case without the `XNN` prefix
    /// (`depthwise_conv2d`), or `op<tag>` for an unknown one.
    pub short: &'static str,
    /// The node table's fields in schema order (empty for an unknown tag).
    pub fields: Vec<(&'static str, Field)>,
    /// `XNode.debug_handle`.
    pub debug_handle: u32,
    /// `XNode.output_min_max`, when present.
    pub output_min_max: Option<(f32, f32)>,
}

impl Node {
    /// Ids the node reads, with their role (`input1`, `filter`, `bias`),
    /// in field order, leaving out "none" ids and unused concatenation
    /// inputs.
    pub fn inputs(&self) -> Vec<(&'static str, u32)> {
        let used_inputs = self.op.and_then(|op| op.strip_prefix("XNNConcatenate"));
        let used_inputs: Option<u32> = used_inputs.and_then(|n| n.parse().ok());
        self.ids()
            .filter(|(role, _)| !role.starts_with("output"))
            .filter(
                |(role, _)| match (used_inputs, role.strip_prefix("input")) {
                    (Some(n), Some(k)) => k.parse::<u32>().is_ok_and(|k| k <= n),
                    _ => true,
                },
            )
            .collect()
    }

    /// Ids the node writes, with their role (`output`, `output_index`).
    pub fn outputs(&self) -> Vec<(&'static str, u32)> {
        self.ids()
            .filter(|(role, _)| role.starts_with("output"))
            .collect()
    }

    fn ids(&self) -> impl Iterator<Item = (&'static str, u32)> + '_ {
        self.fields.iter().filter_map(|(name, f)| match f {
            Field::U32(id) if *id != NONE_ID => name.strip_suffix("_id").map(|r| (r, *id)),
            _ => None,
        })
    }

    /// The fields that are not value ids.
    pub fn attributes(&self) -> impl Iterator<Item = &(&'static str, Field)> {
        self.fields
            .iter()
            .filter(|(name, _)| !name.ends_with("_id"))
    }
}

/// `DepthwiseConv2d` → `depthwise_conv2d`: an underscore before each
/// capital that follows a lower-case letter or digit, except a `D` after a
/// digit (`Conv2d`, `Bilinear2D`); `ReLU` is one word.
pub fn snake(camel: &str) -> String {
    let camel = camel.replace("ReLU", "Relu");
    let mut out = String::with_capacity(camel.len() + 4);
    let mut prev: Option<char> = None;
    for c in camel.chars() {
        if c.is_ascii_uppercase()
            && let Some(p) = prev
            && (p.is_ascii_lowercase() || (p.is_ascii_digit() && c != 'D'))
        {
            out.push('_');
        }
        out.push(c.to_ascii_lowercase());
        prev = Some(c);
    }
    out
}

/// [`Node::short`] of a node with union tag `tag`, whose table was read
/// (`known`) or not: made once per tag, as every graph repeats a few
/// operators many times.
fn short_name(tag: u8, known: bool) -> &'static str {
    static NAMES: std::sync::OnceLock<Vec<(String, String)>> = std::sync::OnceLock::new();
    let names = NAMES.get_or_init(|| {
        (0..=u8::MAX)
            .map(|t| {
                let unknown = format!("op{t}");
                let op = U(t).variant_name();
                (
                    op.map_or_else(|| unknown.clone(), |op| snake(&op[3..])),
                    unknown,
                )
            })
            .collect()
    });
    let (name, unknown) = &names[usize::from(tag)];
    if known { name } else { unknown }
}

macro_rules! uints {
    ($t:expr; $($f:ident),*) => {
        vec![$((stringify!($f), Field::U32($t.$f()))),*]
    };
}

fn list(v: Option<flatbuffers::Vector<'_, u32>>) -> Field {
    Field::List(v.map(|v| v.iter().collect()))
}

fn node1x1(n: fb::Node1x1<'_>) -> Vec<(&'static str, Field)> {
    uints!(n; input_id, output_id, flags)
}

fn node2x1(n: fb::Node2x1<'_>) -> Vec<(&'static str, Field)> {
    uints!(n; input1_id, input2_id, output_id, flags)
}

fn conv(n: fb::ConvNode<'_>) -> Vec<(&'static str, Field)> {
    uints!(n; padding_top, padding_right, padding_bottom, padding_left, kernel_height,
        kernel_width, subsampling_height, subsampling_width, dilation_height, dilation_width,
        group_input_channels, group_output_channels, groups, adjustment_height,
        adjustment_width, input1_id, filter_id, bias_id, output_id, flags)
}

fn pooling(n: fb::PoolingNode<'_>) -> Vec<(&'static str, Field)> {
    uints!(n; padding_top, padding_right, padding_bottom, padding_left, pooling_height,
        pooling_width, stride_height, stride_width, dilation_height, dilation_width,
        input_id, output_id, flags)
}

fn cat(n: fb::CatNode<'_>) -> Vec<(&'static str, Field)> {
    uints!(n; axis, input1_id, input2_id, input3_id, input4_id, output_id, flags, input5_id)
}

fn fully_connected(n: fb::XNNFullyConnected<'_>) -> Vec<(&'static str, Field)> {
    uints!(n; input1_id, filter_id, bias_id, output_id, flags)
}

fn transpose(n: fb::XNNStaticTranspose<'_>) -> Vec<(&'static str, Field)> {
    let mut f = vec![
        ("num_dims", Field::U32(n.num_dims())),
        ("perm", list(n.perm())),
    ];
    f.extend(uints!(n; input_id, output_id, flags));
    f
}

fn reshape(n: fb::XNNStaticReshape<'_>) -> Vec<(&'static str, Field)> {
    let mut f = vec![
        ("num_dims", Field::U32(n.num_dims())),
        ("new_shape", list(n.new_shape())),
    ];
    f.extend(uints!(n; input_id, output_id, flags));
    f
}

fn slice(n: fb::XNNStaticSlice<'_>) -> Vec<(&'static str, Field)> {
    let mut f = vec![
        ("num_dims", Field::U32(n.num_dims())),
        ("offsets", list(n.offsets())),
        ("sizes", list(n.sizes())),
    ];
    f.extend(uints!(n; input_id, output_id, flags));
    f
}

fn resize(n: fb::XNNStaticResizeBilinear2D<'_>) -> Vec<(&'static str, Field)> {
    uints!(n; new_height, new_width, input_id, output_id, flags)
}

fn pad(n: fb::XNNStaticConstantPad<'_>) -> Vec<(&'static str, Field)> {
    let mut f = vec![
        ("pre_paddings", list(n.pre_paddings())),
        ("post_paddings", list(n.post_paddings())),
        ("padding_value", Field::F32(n.padding_value())),
    ];
    f.extend(uints!(n; input_id, output_id, flags));
    f
}

fn elu(n: fb::XNNELU<'_>) -> Vec<(&'static str, Field)> {
    let mut f = vec![("alpha", Field::F32(n.alpha()))];
    f.extend(uints!(n; input_id, output_id, flags));
    f
}

fn leaky_relu(n: fb::XNNLeakyReLU<'_>) -> Vec<(&'static str, Field)> {
    let mut f = vec![("negative_slope", Field::F32(n.negative_slope()))];
    f.extend(uints!(n; input_id, output_id, flags));
    f
}

fn argmax(n: fb::XNNArgMaxPooling2d<'_>) -> Vec<(&'static str, Field)> {
    uints!(n; padding_top, padding_right, padding_bottom, padding_left, pooling_height,
        pooling_width, input_id, output_value_id, output_index_id, flags)
}

fn sdpa(n: fb::XNNScaledDotProductAttention<'_>) -> Vec<(&'static str, Field)> {
    uints!(n; query_id, key_id, value_id, scale_id, mask_id, output_id, flags)
}

/// The fields of node `x`'s table; `None` for an unknown or absent member.
fn fields(x: fb::XNode<'_>) -> Option<Vec<(&'static str, Field)>> {
    match x.xnode_union_type() {
        U::XNNAdd => x.xnode_union_as_xnnadd().map(node2x1),
        U::XNNFullyConnected => x.xnode_union_as_xnnfully_connected().map(fully_connected),
        U::XNNSoftmax => x.xnode_union_as_xnnsoftmax().map(node1x1),
        U::XNNSigmoid => x.xnode_union_as_xnnsigmoid().map(node1x1),
        U::XNNStaticTranspose => x.xnode_union_as_xnnstatic_transpose().map(transpose),
        U::XNNClamp => x.xnode_union_as_xnnclamp().map(node1x1),
        U::XNNConv2d => x.xnode_union_as_xnnconv_2d().map(conv),
        U::XNNDiv => x.xnode_union_as_xnndiv().map(node2x1),
        U::XNNStaticResizeBilinear2D => {
            x.xnode_union_as_xnnstatic_resize_bilinear_2_d().map(resize)
        }
        U::XNNStaticConstantPad => x.xnode_union_as_xnnstatic_constant_pad().map(pad),
        U::XNNAvgPooling2d => x.xnode_union_as_xnnavg_pooling_2d().map(pooling),
        U::XNNMinimum => x.xnode_union_as_xnnminimum().map(node2x1),
        U::XNNDepthwiseConv2d => x.xnode_union_as_xnndepthwise_conv_2d().map(conv),
        U::XNNMaxPooling2d => x.xnode_union_as_xnnmax_pooling_2d().map(pooling),
        U::XNNMultiply => x.xnode_union_as_xnnmultiply().map(node2x1),
        U::XNNSubtract => x.xnode_union_as_xnnsubtract().map(node2x1),
        U::XNNFloor => x.xnode_union_as_xnnfloor().map(node1x1),
        U::XNNConvert => x.xnode_union_as_xnnconvert().map(node1x1),
        U::XNNGlobalAvgPooling2d => x.xnode_union_as_xnnglobal_avg_pooling_2d().map(node1x1),
        U::XNNStaticReshape => x.xnode_union_as_xnnstatic_reshape().map(reshape),
        U::XNNArgMaxPooling2d => x.xnode_union_as_xnnarg_max_pooling_2d().map(argmax),
        U::XNNSquareRoot => x.xnode_union_as_xnnsquare_root().map(node1x1),
        U::XNNCeiling => x.xnode_union_as_xnnceiling().map(node1x1),
        U::XNNHardswish => x.xnode_union_as_xnnhardswish().map(node1x1),
        U::XNNLeakyReLU => x.xnode_union_as_xnnleaky_re_lu().map(leaky_relu),
        U::XNNMaximum => x.xnode_union_as_xnnmaximum().map(node2x1),
        U::XNNNegate => x.xnode_union_as_xnnnegate().map(node1x1),
        U::XNNSquare => x.xnode_union_as_xnnsquare().map(node1x1),
        U::XNNELU => x.xnode_union_as_xnnelu().map(elu),
        U::XNNAbs => x.xnode_union_as_xnnabs().map(node1x1),
        U::XNNPReLU => x.xnode_union_as_xnnpre_lu().map(node2x1),
        U::XNNConcatenate2 => x.xnode_union_as_xnnconcatenate_2().map(cat),
        U::XNNConcatenate3 => x.xnode_union_as_xnnconcatenate_3().map(cat),
        U::XNNConcatenate4 => x.xnode_union_as_xnnconcatenate_4().map(cat),
        U::XNNStaticSlice => x.xnode_union_as_xnnstatic_slice().map(slice),
        U::XNNScaledDotProductAttention => {
            x.xnode_union_as_xnnscaled_dot_product_attention().map(sdpa)
        }
        U::XNNBatchMatrixMultiply => x.xnode_union_as_xnnbatch_matrix_multiply().map(node2x1),
        U::XNNConcatenate5 => x.xnode_union_as_xnnconcatenate_5().map(cat),
        U::XNNConvTranspose2d => x.xnode_union_as_xnnconv_transpose_2d().map(conv),
        U::XNNReciprocalSquareRoot => x.xnode_union_as_xnnreciprocal_square_root().map(node1x1),
        U::XNNLog => x.xnode_union_as_xnnlog().map(node1x1),
        U::XNNGelu => x.xnode_union_as_xnngelu().map(node1x1),
        U::XNNTanh => x.xnode_union_as_xnntanh().map(node1x1),
        U::XNNExp => x.xnode_union_as_xnnexp().map(node1x1),
        U::XNNSin => x.xnode_union_as_xnnsin().map(node1x1),
        U::XNNCopy => x.xnode_union_as_xnncopy().map(node1x1),
        U::XNNCos => x.xnode_union_as_xnncos().map(node1x1),
        _ => None,
    }
}

/// Reads node `index`. A type tag this schema does not know, or a member
/// that is absent, gives a node without fields rather than an error, so
/// the rest of the graph still shows.
pub fn read(index: usize, x: fb::XNode<'_>) -> Node {
    let tag = x.xnode_union_type();
    let fields = fields(x);
    let op = fields.as_ref().and(tag.variant_name());
    Node {
        index,
        tag: tag.0,
        op,
        short: short_name(tag.0, op.is_some()),
        fields: fields.unwrap_or_default(),
        debug_handle: x.debug_handle(),
        output_min_max: x.output_min_max().map(|m| (m.output_min(), m.output_max())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snake_case_names() {
        assert_eq!(snake("DepthwiseConv2d"), "depthwise_conv2d");
        assert_eq!(snake("FullyConnected"), "fully_connected");
        assert_eq!(snake("StaticResizeBilinear2D"), "static_resize_bilinear2d");
        assert_eq!(snake("ELU"), "elu");
        assert_eq!(snake("LeakyReLU"), "leaky_relu");
        assert_eq!(snake("PReLU"), "prelu");
        assert_eq!(snake("Concatenate2"), "concatenate2");
        assert_eq!(snake("GlobalAvgPooling2d"), "global_avg_pooling2d");
    }

    #[test]
    fn roles_from_field_names() {
        let n = Node {
            index: 3,
            tag: 32,
            op: Some("XNNConcatenate2"),
            short: "concatenate2",
            fields: vec![
                ("axis", Field::U32(1)),
                ("input1_id", Field::U32(4)),
                ("input2_id", Field::U32(5)),
                ("input3_id", Field::U32(0)),
                ("input4_id", Field::U32(0)),
                ("output_id", Field::U32(6)),
                ("flags", Field::U32(0)),
                ("input5_id", Field::U32(0)),
            ],
            debug_handle: 0,
            output_min_max: None,
        };
        assert_eq!(n.inputs(), vec![("input1", 4), ("input2", 5)]);
        assert_eq!(n.outputs(), vec![("output", 6)]);
        assert_eq!(n.attributes().count(), 2);
    }
}
