//! Writes XNNPACK delegate payloads (the `XH00` header, an `XNNGraph`
//! flatbuffer and constant data) with the generated builders, for tests of
//! what no fixture has: payload constant data, old `constant_buffer`
//! weights, 4-bit group quantization, hostile headers and graphs.
#![allow(dead_code)]

use flatbuffers::{FlatBufferBuilder, UnionWIPOffset, WIPOffset};
use ptefs::schema::xnnpack as xf;

/// Quantization parameters of a value.
#[derive(Debug, Clone, PartialEq)]
pub enum Quant {
    PerTensor {
        scale: f32,
        zero_point: i32,
    },
    PerChannel {
        scale: Vec<f32>,
        channel_dim: i32,
        buffer: u32,
        num_scales: u32,
    },
    Group {
        scale: Vec<f32>,
        channel_dim: i32,
        group_size: i32,
        scale_bf16: Vec<u16>,
        buffer: u32,
        num_scales: u32,
    },
    PerToken {
        num_nonbatch_dims: i32,
    },
}

/// A tensor value.
#[derive(Debug, Clone, PartialEq)]
pub struct Value {
    pub datatype: i16,
    pub dims: Vec<u32>,
    pub constant: u32,
    pub id: u32,
    pub flags: u32,
    pub external_id: u32,
    pub quant: Option<Quant>,
}

impl Value {
    /// A value with no external id (`u32::MAX`).
    pub fn new(id: u32, datatype: i16, dims: &[u32], constant: u32) -> Value {
        Value {
            datatype,
            dims: dims.to_vec(),
            constant,
            id,
            flags: 0,
            external_id: u32::MAX,
            quant: None,
        }
    }
    pub fn quant(mut self, q: Quant) -> Value {
        self.quant = Some(q);
        self
    }
}

/// A node.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// `XNNConv2d` (or `XNNDepthwiseConv2d`) with a 3x3 kernel.
    Conv {
        depthwise: bool,
        input: u32,
        filter: u32,
        bias: u32,
        output: u32,
    },
    FullyConnected {
        input: u32,
        filter: u32,
        bias: u32,
        output: u32,
    },
    Add {
        a: u32,
        b: u32,
        output: u32,
    },
    /// A node with a type tag this reader may not know, as a 1x1 table.
    Tagged {
        tag: u8,
        input: u32,
        output: u32,
    },
}

/// A graph and how to frame it.
#[derive(Debug, Clone, PartialEq)]
pub struct Graph {
    pub identifier: [u8; 4],
    pub nodes: Vec<(Node, Option<(f32, f32)>)>,
    pub values: Vec<Value>,
    pub inputs: Vec<u32>,
    pub outputs: Vec<u32>,
    /// `(offset, size, named_key)`; entry 0 is written as given.
    pub constant_data: Vec<(u64, u64, String)>,
    /// Old payloads: `constant_buffer` storage.
    pub constant_buffer: Vec<Vec<u8>>,
}

impl Default for Graph {
    fn default() -> Self {
        Graph {
            identifier: *b"XN01",
            nodes: Vec::new(),
            values: Vec::new(),
            inputs: Vec::new(),
            outputs: Vec::new(),
            constant_data: Vec::new(),
            constant_buffer: Vec::new(),
        }
    }
}

fn quant<'a>(
    fbb: &mut FlatBufferBuilder<'a>,
    q: &Quant,
) -> (xf::XNNQuantParams, WIPOffset<UnionWIPOffset>) {
    match q {
        Quant::PerTensor { scale, zero_point } => (
            xf::XNNQuantParams::PerTensorQuant,
            xf::PerTensorQuant::create(
                fbb,
                &xf::PerTensorQuantArgs {
                    scale: *scale,
                    zero_point: *zero_point,
                },
            )
            .as_union_value(),
        ),
        Quant::PerChannel {
            scale,
            channel_dim,
            buffer,
            num_scales,
        } => {
            let scale = fbb.create_vector(scale);
            let args = xf::PerChannelQuantArgs {
                scale: Some(scale),
                channel_dim: *channel_dim,
                scale_buffer_idx: *buffer,
                num_scales: *num_scales,
            };
            (
                xf::XNNQuantParams::PerChannelQuant,
                xf::PerChannelQuant::create(fbb, &args).as_union_value(),
            )
        }
        Quant::Group {
            scale,
            channel_dim,
            group_size,
            scale_bf16,
            buffer,
            num_scales,
        } => {
            let scale = fbb.create_vector(scale);
            let bf16 = fbb.create_vector(scale_bf16);
            let args = xf::PerChannelGroupQuantArgs {
                scale: Some(scale),
                channel_dim: *channel_dim,
                group_size: *group_size,
                scale_bf16: Some(bf16),
                scale_buffer_idx: *buffer,
                num_scales: *num_scales,
            };
            (
                xf::XNNQuantParams::PerChannelGroupQuant,
                xf::PerChannelGroupQuant::create(fbb, &args).as_union_value(),
            )
        }
        Quant::PerToken { num_nonbatch_dims } => (
            xf::XNNQuantParams::PerTokenDynamicQuant,
            xf::PerTokenDynamicQuant::create(
                fbb,
                &xf::PerTokenDynamicQuantArgs {
                    num_nonbatch_dims: *num_nonbatch_dims,
                },
            )
            .as_union_value(),
        ),
    }
}

fn value<'a>(fbb: &mut FlatBufferBuilder<'a>, v: &Value) -> WIPOffset<xf::XValue<'a>> {
    let dims = fbb.create_vector(&v.dims);
    let t = xf::XNNTensorValue::create(
        fbb,
        &xf::XNNTensorValueArgs {
            datatype: xf::XNNDatatype(v.datatype),
            num_dims: v.dims.len() as u32,
            dims: Some(dims),
            constant_buffer_idx: v.constant,
            external_id: v.external_id,
            flags: v.flags,
            id_out: v.id,
            dq_datatype: xf::XNNDatatype::xnn_datatype_invalid,
        },
    );
    let (ty, u) = match &v.quant {
        None => (xf::XValueUnion::XNNTensorValue, t.as_union_value()),
        Some(q) => {
            let (qt, qp) = quant(fbb, q);
            let args = xf::XNNQuantizedTensorValueArgs {
                tensor_value: Some(t),
                quant_params_type: qt,
                quant_params: Some(qp),
            };
            (
                xf::XValueUnion::XNNQuantizedTensorValue,
                xf::XNNQuantizedTensorValue::create(fbb, &args).as_union_value(),
            )
        }
    };
    xf::XValue::create(
        fbb,
        &xf::XValueArgs {
            xvalue_union_type: ty,
            xvalue_union: Some(u),
        },
    )
}

fn node<'a>(
    fbb: &mut FlatBufferBuilder<'a>,
    n: &Node,
    mm: Option<(f32, f32)>,
) -> WIPOffset<xf::XNode<'a>> {
    let (ty, u) = match *n {
        Node::Conv {
            depthwise,
            input,
            filter,
            bias,
            output,
        } => {
            let args = xf::ConvNodeArgs {
                kernel_height: 3,
                kernel_width: 3,
                subsampling_height: 1,
                subsampling_width: 1,
                dilation_height: 1,
                dilation_width: 1,
                groups: 1,
                input1_id: input,
                filter_id: filter,
                bias_id: bias,
                output_id: output,
                ..Default::default()
            };
            let ty = if depthwise {
                xf::XNodeUnion::XNNDepthwiseConv2d
            } else {
                xf::XNodeUnion::XNNConv2d
            };
            (ty, xf::ConvNode::create(fbb, &args).as_union_value())
        }
        Node::FullyConnected {
            input,
            filter,
            bias,
            output,
        } => {
            let args = xf::XNNFullyConnectedArgs {
                input1_id: input,
                filter_id: filter,
                bias_id: bias,
                output_id: output,
                flags: 0,
            };
            (
                xf::XNodeUnion::XNNFullyConnected,
                xf::XNNFullyConnected::create(fbb, &args).as_union_value(),
            )
        }
        Node::Add { a, b, output } => {
            let args = xf::Node2x1Args {
                input1_id: a,
                input2_id: b,
                output_id: output,
                flags: 0,
            };
            (
                xf::XNodeUnion::XNNAdd,
                xf::Node2x1::create(fbb, &args).as_union_value(),
            )
        }
        Node::Tagged { tag, input, output } => {
            let args = xf::Node1x1Args {
                input_id: input,
                output_id: output,
                flags: 0,
            };
            (
                xf::XNodeUnion(tag),
                xf::Node1x1::create(fbb, &args).as_union_value(),
            )
        }
    };
    let mm = mm.map(|(lo, hi)| {
        xf::OutputMinMax::create(
            fbb,
            &xf::OutputMinMaxArgs {
                output_min: lo,
                output_max: hi,
            },
        )
    });
    xf::XNode::create(
        fbb,
        &xf::XNodeArgs {
            xnode_union_type: ty,
            xnode_union: Some(u),
            debug_handle: 7,
            output_min_max: mm,
        },
    )
}

impl Graph {
    /// The `XNNGraph` flatbuffer.
    pub fn flatbuffer(&self) -> Vec<u8> {
        let mut fbb = FlatBufferBuilder::new();
        let version = fbb.create_string("0");
        let nodes: Vec<_> = self
            .nodes
            .iter()
            .map(|(n, mm)| node(&mut fbb, n, *mm))
            .collect();
        let nodes = fbb.create_vector(&nodes);
        let values: Vec<_> = self.values.iter().map(|v| value(&mut fbb, v)).collect();
        let values = fbb.create_vector(&values);
        let inputs = fbb.create_vector(&self.inputs);
        let outputs = fbb.create_vector(&self.outputs);
        let cd: Vec<_> = self
            .constant_data
            .iter()
            .map(|(offset, size, key)| {
                let key = fbb.create_string(key);
                xf::ConstantDataOffset::create(
                    &mut fbb,
                    &xf::ConstantDataOffsetArgs {
                        offset: *offset,
                        size: *size,
                        named_key: Some(key),
                    },
                )
            })
            .collect();
        let cd = (!cd.is_empty()).then(|| fbb.create_vector(&cd));
        let cb: Vec<_> = self
            .constant_buffer
            .iter()
            .map(|s| {
                let storage = fbb.create_vector(s);
                xf::Buffer::create(
                    &mut fbb,
                    &xf::BufferArgs {
                        storage: Some(storage),
                    },
                )
            })
            .collect();
        let cb = (!cb.is_empty()).then(|| fbb.create_vector(&cb));
        let root = xf::XNNGraph::create(
            &mut fbb,
            &xf::XNNGraphArgs {
                version: Some(version),
                xnodes: Some(nodes),
                xvalues: Some(values),
                num_externs: (self.inputs.len() + self.outputs.len()) as u32,
                input_ids: Some(inputs),
                output_ids: Some(outputs),
                constant_buffer: cb,
                mem_buffer_sizes: None,
                constant_data: cd,
            },
        );
        let id = std::str::from_utf8(&self.identifier).unwrap();
        fbb.finish(root, Some(id));
        fbb.finished_data().to_vec()
    }

    /// The payload: an `XH00` header (30 bytes, padded to 32), the
    /// flatbuffer, then `constants` at a 16-byte boundary; or, without a
    /// header, the flatbuffer alone.
    pub fn payload(&self, header: bool, constants: &[u8]) -> Vec<u8> {
        let fb = self.flatbuffer();
        if !header {
            return fb;
        }
        let cd_off = (32 + fb.len()).div_ceil(16) * 16;
        let mut p = vec![0u8; cd_off];
        p[4..8].copy_from_slice(b"XH00");
        p[8..10].copy_from_slice(&30u16.to_le_bytes());
        p[10..14].copy_from_slice(&32u32.to_le_bytes());
        p[14..18].copy_from_slice(&(fb.len() as u32).to_le_bytes());
        p[18..22].copy_from_slice(&(cd_off as u32).to_le_bytes());
        p[22..30].copy_from_slice(&(constants.len() as u64).to_le_bytes());
        p[32..32 + fb.len()].copy_from_slice(&fb);
        p.extend_from_slice(constants);
        p
    }
}
