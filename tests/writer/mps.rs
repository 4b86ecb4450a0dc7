//! Writes MPS delegate payloads (the 24-byte `MP00` header, an `MPSGraph`
//! flatbuffer padded to 16 bytes, then the constant data) with the
//! generated builders, laid out as ExecuTorch's MPS preprocess lays them
//! out.
#![allow(dead_code)]

use flatbuffers::{FlatBufferBuilder, UnionWIPOffset, WIPOffset};
use ptefs::schema::mps as mf;

/// A tensor value: its bytes at `segment_offset` of the constant data
/// (`size` of them), or inline (`inline`, older writers).
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    pub dtype: mf::MPSDataType,
    pub dims: Vec<i32>,
    pub size: u64,
    pub segment_offset: u64,
    pub inline: Option<Vec<u8>>,
}

impl Tensor {
    /// A tensor that is not a constant.
    pub fn plain(dtype: mf::MPSDataType, dims: &[i32]) -> Tensor {
        Tensor {
            dtype,
            dims: dims.to_vec(),
            size: 0,
            segment_offset: 0,
            inline: None,
        }
    }

    /// A constant at `offset` of the constant data.
    pub fn at(dtype: mf::MPSDataType, dims: &[i32], offset: u64, size: u64) -> Tensor {
        Tensor {
            size,
            segment_offset: offset,
            ..Tensor::plain(dtype, dims)
        }
    }

    /// A constant with its bytes inside the flatbuffer.
    pub fn inline(dtype: mf::MPSDataType, dims: &[i32], bytes: Vec<u8>) -> Tensor {
        Tensor {
            size: bytes.len() as u64,
            inline: Some(bytes),
            ..Tensor::plain(dtype, dims)
        }
    }
}

/// A node of the graph (the kinds the tests need).
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// input, weight, bias, output; stride, padding (left, right, top,
    /// bottom), groups.
    Conv2D {
        ids: [i32; 4],
        stride: [i32; 2],
        padding: [i32; 4],
        groups: i32,
    },
    ReLU(i32, i32),
    Add(i32, i32, i32, f32),
    HardTanh(i32, i32, f32, f32),
    Addmm([i32; 4], f32, f32),
    Cat(Vec<i32>, i32, i32),
    /// Input, output, dtype (raw, may be one the schema does not name).
    Cast(i32, i32, i16),
    /// A union tag (one the schema may not know) over a 1x1 table.
    Tagged(u8, i32, i32),
}

/// A node with its optional output range.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub op: Op,
    pub min_max: Option<(f32, f32)>,
}

impl From<Op> for Node {
    fn from(op: Op) -> Node {
        Node { op, min_max: None }
    }
}

/// An `MPSGraph`.
#[derive(Debug, Clone)]
pub struct Graph {
    pub version: String,
    pub nodes: Vec<Node>,
    pub values: Vec<Tensor>,
    pub inputs: Vec<i32>,
    pub outputs: Vec<i32>,
    pub constants: Vec<i32>,
    pub graph_type: i16,
}

fn op<'a>(
    fbb: &mut FlatBufferBuilder<'a>,
    o: &Op,
) -> (mf::MPSNodeUnion, Option<WIPOffset<UnionWIPOffset>>) {
    use mf::MPSNodeUnion as U;
    match o {
        Op::Conv2D {
            ids,
            stride,
            padding,
            groups,
        } => {
            let t = mf::MPSConv::create(
                fbb,
                &mf::MPSConvArgs {
                    input1_id: ids[0],
                    input2_id: ids[1],
                    input3_id: ids[2],
                    output_id: ids[3],
                    stride_x: stride[0],
                    stride_y: stride[1],
                    dilation_x: 1,
                    dilation_y: 1,
                    groups: *groups,
                    padding_left: padding[0],
                    padding_right: padding[1],
                    padding_top: padding[2],
                    padding_bottom: padding[3],
                },
            );
            (U::MPSConv2D, Some(t.as_union_value()))
        }
        Op::ReLU(i, o) => {
            let t = mf::_MPSNode2x1::create(
                fbb,
                &mf::_MPSNode2x1Args {
                    input1_id: *i,
                    input2_id: 0,
                    output_id: *o,
                },
            );
            (U::MPSReLU, Some(t.as_union_value()))
        }
        Op::Add(a, b, o, alpha) => {
            let t = mf::_MPSNodeWithAlpha2x1::create(
                fbb,
                &mf::_MPSNodeWithAlpha2x1Args {
                    input1_id: *a,
                    input2_id: *b,
                    output_id: *o,
                    alpha: *alpha,
                },
            );
            (U::MPSAdd, Some(t.as_union_value()))
        }
        Op::HardTanh(i, o, lo, hi) => {
            let t = mf::MPSHardTanh::create(
                fbb,
                &mf::MPSHardTanhArgs {
                    input1_id: *i,
                    output_id: *o,
                    min_value: *lo,
                    max_value: *hi,
                },
            );
            (U::MPSHardTanh, Some(t.as_union_value()))
        }
        Op::Addmm(ids, beta, alpha) => {
            let t = mf::MPSAddmm::create(
                fbb,
                &mf::MPSAddmmArgs {
                    input1_id: ids[0],
                    input2_id: ids[1],
                    input3_id: ids[2],
                    output_id: ids[3],
                    beta: *beta,
                    alpha: *alpha,
                },
            );
            (U::MPSAddmm, Some(t.as_union_value()))
        }
        Op::Cat(ins, o, dim) => {
            let input_ids = Some(fbb.create_vector(ins));
            let t = mf::MPSCat::create(
                fbb,
                &mf::MPSCatArgs {
                    input_ids,
                    output_id: *o,
                    dim: *dim,
                },
            );
            (U::MPSCat, Some(t.as_union_value()))
        }
        Op::Cast(i, o, dt) => {
            let t = mf::MPSCast::create(
                fbb,
                &mf::MPSCastArgs {
                    input1_id: *i,
                    output_id: *o,
                    dtype: mf::MPSDataType(*dt),
                },
            );
            (U::MPSCast, Some(t.as_union_value()))
        }
        Op::Tagged(tag, i, o) => {
            let t = mf::_MPSNode1x1::create(
                fbb,
                &mf::_MPSNode1x1Args {
                    input1_id: *i,
                    output_id: *o,
                },
            );
            (mf::MPSNodeUnion(*tag), Some(t.as_union_value()))
        }
    }
}

impl Graph {
    /// The `MPSGraph` flatbuffer, identifier `MP00`.
    pub fn flatbuffer(&self) -> Vec<u8> {
        let mut fbb = FlatBufferBuilder::new();
        let nodes: Vec<_> = self
            .nodes
            .iter()
            .map(|n| {
                let (t, u) = op(&mut fbb, &n.op);
                let min_max = n.min_max.map(|(lo, hi)| {
                    mf::MPSMinMax::create(
                        &mut fbb,
                        &mf::MPSMinMaxArgs {
                            min_value: lo,
                            max_value: hi,
                        },
                    )
                });
                mf::MPSNode::create(
                    &mut fbb,
                    &mf::MPSNodeArgs {
                        mpsnode_union_type: t,
                        mpsnode_union: u,
                        min_max,
                    },
                )
            })
            .collect();
        let values: Vec<_> = self
            .values
            .iter()
            .map(|v| {
                let dims = Some(fbb.create_vector(&v.dims));
                let constant_buffer = v.inline.as_ref().map(|b| {
                    let storage = Some(fbb.create_vector(b));
                    mf::Buffer::create(&mut fbb, &mf::BufferArgs { storage })
                });
                mf::MPSTensor::create(
                    &mut fbb,
                    &mf::MPSTensorArgs {
                        datatype: v.dtype,
                        num_dims: v.dims.len() as i32,
                        dims,
                        constant_buffer_size: v.size,
                        constant_buffer,
                        segment_offset: v.segment_offset,
                    },
                )
            })
            .collect();
        let args = mf::MPSGraphArgs {
            version: Some(fbb.create_string(&self.version)),
            mps_nodes: Some(fbb.create_vector(&nodes)),
            mps_values: Some(fbb.create_vector(&values)),
            input_ids: Some(fbb.create_vector(&self.inputs)),
            output_ids: Some(fbb.create_vector(&self.outputs)),
            constant_ids: Some(fbb.create_vector(&self.constants)),
            graph_type: mf::OpType(self.graph_type),
            constant_segment: Some(mf::DataSegment::create(
                &mut fbb,
                &mf::DataSegmentArgs { offset: 0, size: 0 },
            )),
        };
        let root = mf::MPSGraph::create(&mut fbb, &args);
        mf::finish_mpsgraph_buffer(&mut fbb, root);
        fbb.finished_data().to_vec()
    }

    /// The payload: header, flatbuffer padded to 16, then `constants`
    /// padded to 16 (the size field counts the padding, as written).
    pub fn payload(&self, constants: &[u8]) -> Vec<u8> {
        let fb = self.flatbuffer();
        let data_off = (24 + fb.len()).div_ceil(16) * 16;
        let mut data = constants.to_vec();
        data.resize(constants.len().div_ceil(16) * 16, 0);
        let mut p = vec![0u8; data_off];
        p[4..8].copy_from_slice(b"MP00");
        p[8..16].copy_from_slice(&(data_off as u64).to_le_bytes());
        p[16..24].copy_from_slice(&(data.len() as u64).to_le_bytes());
        p[24..24 + fb.len()].copy_from_slice(&fb);
        p.extend_from_slice(&data);
        p
    }
}
