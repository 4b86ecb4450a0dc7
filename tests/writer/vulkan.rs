//! Writes Vulkan delegate payloads (the `VH00` header, a `VkGraph`
//! flatbuffer and constant bytes) with the generated builders.
#![allow(dead_code)]

use flatbuffers::{FlatBufferBuilder, UnionWIPOffset, WIPOffset};
use ptefs::schema::vulkan as vf;

/// A value of the graph.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Int(i64),
    Double(f64),
    Bool(bool),
    /// Datatype, dims, constant id (negative: none), memory object id.
    Tensor(vf::VkDataType, Vec<u32>, i32, i32),
    IntList(Vec<i64>),
    DoubleList(Vec<f64>),
    BoolList(Vec<bool>),
    /// A `ValueList`: ids of other values.
    Ids(Vec<i32>),
    String(String),
    SymInt(i32),
}

/// Stored bytes: at `offset` of the constant bytes, or (offset u64::MAX)
/// the named-data entry `key`.
#[derive(Debug, Clone, PartialEq)]
pub struct Constant {
    pub offset: u64,
    pub length: u64,
    pub key: Option<String>,
}

impl Constant {
    pub fn at(offset: u64, length: u64) -> Constant {
        Constant {
            offset,
            length,
            key: None,
        }
    }

    pub fn named(key: &str, length: u64) -> Constant {
        Constant {
            offset: u64::MAX,
            length,
            key: Some(key.to_owned()),
        }
    }
}

/// A `VkGraph`.
#[derive(Debug, Clone, Default)]
pub struct Graph {
    pub version: String,
    /// Operator name and argument value ids.
    pub chain: Vec<(String, Vec<i32>)>,
    pub values: Vec<Value>,
    pub inputs: Vec<u32>,
    pub outputs: Vec<u32>,
    pub constants: Vec<Constant>,
}

impl Graph {
    fn value<'a>(fbb: &mut FlatBufferBuilder<'a>, v: &Value) -> WIPOffset<vf::VkValue<'a>> {
        use vf::GraphTypes as G;
        let (t, u): (G, WIPOffset<UnionWIPOffset>) = match v {
            Value::Null => (
                G::Null,
                vf::Null::create(fbb, &vf::NullArgs {}).as_union_value(),
            ),
            Value::Int(i) => (
                G::Int,
                vf::Int::create(fbb, &vf::IntArgs { int_val: *i }).as_union_value(),
            ),
            Value::Double(d) => (
                G::Double,
                vf::Double::create(fbb, &vf::DoubleArgs { double_val: *d }).as_union_value(),
            ),
            Value::Bool(b) => (
                G::Bool,
                vf::Bool::create(fbb, &vf::BoolArgs { bool_val: *b }).as_union_value(),
            ),
            Value::Tensor(dt, dims, constant_id, mem_obj_id) => {
                let dims = fbb.create_vector(dims);
                let args = vf::VkTensorArgs {
                    datatype: *dt,
                    dims: Some(dims),
                    constant_id: *constant_id,
                    mem_obj_id: *mem_obj_id,
                    ..Default::default()
                };
                (
                    G::VkTensor,
                    vf::VkTensor::create(fbb, &args).as_union_value(),
                )
            }
            Value::IntList(l) => {
                let items = Some(fbb.create_vector(l));
                (
                    G::IntList,
                    vf::IntList::create(fbb, &vf::IntListArgs { items }).as_union_value(),
                )
            }
            Value::DoubleList(l) => {
                let items = Some(fbb.create_vector(l));
                (
                    G::DoubleList,
                    vf::DoubleList::create(fbb, &vf::DoubleListArgs { items }).as_union_value(),
                )
            }
            Value::BoolList(l) => {
                let items = Some(fbb.create_vector(l));
                (
                    G::BoolList,
                    vf::BoolList::create(fbb, &vf::BoolListArgs { items }).as_union_value(),
                )
            }
            Value::Ids(l) => {
                let items = Some(fbb.create_vector(l));
                (
                    G::ValueList,
                    vf::ValueList::create(fbb, &vf::ValueListArgs { items }).as_union_value(),
                )
            }
            Value::String(s) => {
                let string_val = Some(fbb.create_string(s));
                (
                    G::String,
                    vf::String::create(fbb, &vf::StringArgs { string_val }).as_union_value(),
                )
            }
            Value::SymInt(i) => (
                G::SymInt,
                vf::SymInt::create(fbb, &vf::SymIntArgs { value: *i }).as_union_value(),
            ),
        };
        vf::VkValue::create(
            fbb,
            &vf::VkValueArgs {
                value_type: t,
                value: Some(u),
            },
        )
    }

    /// The `VkGraph` flatbuffer, identifier `VK00`.
    pub fn flatbuffer(&self) -> Vec<u8> {
        let mut fbb = FlatBufferBuilder::new();
        let calls: Vec<_> = self
            .chain
            .iter()
            .enumerate()
            .map(|(i, (name, args))| {
                let name = Some(fbb.create_string(name));
                let args = Some(fbb.create_vector(args));
                vf::OperatorCall::create(
                    &mut fbb,
                    &vf::OperatorCallArgs {
                        node_id: i as u32,
                        name,
                        args,
                    },
                )
            })
            .collect();
        let chain = fbb.create_vector(&calls);
        let values: Vec<_> = self
            .values
            .iter()
            .map(|v| Self::value(&mut fbb, v))
            .collect();
        let values = fbb.create_vector(&values);
        let constants: Vec<_> = self
            .constants
            .iter()
            .map(|c| {
                let named_key = c.key.as_ref().map(|k| fbb.create_string(k));
                vf::VkBytes::create(
                    &mut fbb,
                    &vf::VkBytesArgs {
                        offset: c.offset,
                        length: c.length,
                        named_key,
                    },
                )
            })
            .collect();
        let constants = fbb.create_vector(&constants);
        let shaders = fbb.create_vector::<WIPOffset<vf::VkBytes>>(&[]);
        let version = fbb.create_string(&self.version);
        let inputs = fbb.create_vector(&self.inputs);
        let outputs = fbb.create_vector(&self.outputs);
        let root = vf::VkGraph::create(
            &mut fbb,
            &vf::VkGraphArgs {
                version: Some(version),
                chain: Some(chain),
                values: Some(values),
                input_ids: Some(inputs),
                output_ids: Some(outputs),
                constants: Some(constants),
                shaders: Some(shaders),
                ..Default::default()
            },
        );
        fbb.finish(root, Some("VK00"));
        fbb.finished_data().to_vec()
    }

    /// The payload: a `VH00` header (30 bytes, padded to 32), the
    /// flatbuffer, then `constants` at a 16-byte boundary, the header
    /// giving their size.
    pub fn payload(&self, constants: &[u8]) -> Vec<u8> {
        let fb = self.flatbuffer();
        let cd_off = (32 + fb.len()).div_ceil(16) * 16;
        let mut p = vec![0u8; cd_off];
        p[4..8].copy_from_slice(b"VH00");
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
