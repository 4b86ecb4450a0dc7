//! NPTG graphs (`program.ptg` of a `.ptn`) built with the generated
//! flatbuffer builders, from small descriptions of methods, graphs, nodes
//! and arguments.

use flatbuffers::{FlatBufferBuilder, WIPOffset};
use ptefs::schema::native_graph as ng;

/// An argument of a node.
#[derive(Debug, Clone)]
pub enum Arg {
    Tensor(String),
    None,
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(String),
    Dtype(ng::ScalarType),
    /// Values and, parallel to them, value names ("" for a literal).
    Ints(Vec<i64>, Vec<String>),
    Tensors(Vec<String>),
    OptionalTensors(Vec<Option<String>>),
    Graph(String, Box<GraphSpec>),
}

/// A node's output: a name with an optional alias, or a list of names.
#[derive(Debug, Clone)]
pub enum Out {
    Tensor {
        name: String,
        alias_of: Option<String>,
    },
    List(Vec<String>),
}

#[derive(Debug, Clone)]
pub struct NodeSpec {
    pub name: String,
    pub op: ng::OpKind,
    pub target: Option<String>,
    /// (parameter name, argument, mutated)
    pub inputs: Vec<(String, Arg, bool)>,
    pub outputs: Vec<Out>,
}

impl NodeSpec {
    pub fn placeholder(name: &str) -> Self {
        NodeSpec {
            name: name.into(),
            op: ng::OpKind::PLACEHOLDER,
            target: None,
            inputs: Vec::new(),
            outputs: vec![Out::Tensor {
                name: name.into(),
                alias_of: None,
            }],
        }
    }

    pub fn call(name: &str, target: &str, inputs: Vec<(&str, Arg, bool)>) -> Self {
        NodeSpec {
            name: name.into(),
            op: ng::OpKind::CALL_FUNCTION,
            target: Some(target.into()),
            inputs: inputs
                .into_iter()
                .map(|(n, a, m)| (n.to_owned(), a, m))
                .collect(),
            outputs: vec![Out::Tensor {
                name: name.into(),
                alias_of: None,
            }],
        }
    }

    pub fn output(values: &[&str]) -> Self {
        NodeSpec {
            name: "output".into(),
            op: ng::OpKind::OUTPUT,
            target: None,
            inputs: values
                .iter()
                .map(|v| (String::new(), Arg::Tensor((*v).into()), false))
                .collect(),
            outputs: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct GraphSpec {
    pub nodes: Vec<NodeSpec>,
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
    /// (value name, dtype, sizes)
    pub values: Vec<(String, ng::ScalarType, Vec<i64>)>,
}

#[derive(Debug, Clone)]
pub struct ConstSpec {
    pub name: String,
    pub data_key: String,
    pub dtype: ng::ScalarType,
    pub sizes: Vec<i64>,
    pub kind: ng::InputKind,
    pub mutated: bool,
    /// Affine group quantization: (scale key, quant_min, quant_max, group).
    pub quant: Option<(String, i32, i32, i32)>,
}

#[derive(Debug, Clone, Default)]
pub struct MethodSpec {
    pub name: String,
    pub graph: GraphSpec,
    pub constants: Vec<ConstSpec>,
    pub output_specs: Vec<(String, ng::OutputKind, Option<String>)>,
    pub mutable_buffers: Vec<(String, String)>,
}

/// The NPTG flatbuffer of `methods`.
pub fn program(methods: &[MethodSpec]) -> Vec<u8> {
    let mut b = FlatBufferBuilder::new();
    let ms: Vec<_> = methods.iter().map(|m| method(&mut b, m)).collect();
    let ms = b.create_vector(&ms);
    let version = b.create_string("1");
    let root = ng::Program::create(
        &mut b,
        &ng::ProgramArgs {
            version: Some(version),
            methods: Some(ms),
        },
    );
    b.finish(root, Some("NPTG"));
    b.finished_data().to_vec()
}

type B<'a> = FlatBufferBuilder<'a>;

fn strings<'a>(
    b: &mut B<'a>,
    v: &[String],
) -> WIPOffset<flatbuffers::Vector<'a, flatbuffers::ForwardsUOffset<&'a str>>> {
    let s: Vec<_> = v.iter().map(|x| b.create_string(x)).collect();
    b.create_vector(&s)
}

fn meta<'a>(
    b: &mut B<'a>,
    dtype: ng::ScalarType,
    sizes: &[i64],
    quant: Option<&(String, i32, i32, i32)>,
) -> WIPOffset<ng::TensorMeta<'a>> {
    let dims: Vec<_> = sizes
        .iter()
        .map(|&d| ng::Dim::create(b, &ng::DimArgs { min: d, max: d }))
        .collect();
    let dims = b.create_vector(&dims);
    let quant = quant.map(|(key, lo, hi, group)| {
        let key = b.create_string(key);
        let g = ng::AffineGroup::create(
            b,
            &ng::AffineGroupArgs {
                scale_data_key: Some(key),
                scale_dtype: ng::ScalarType::FLOAT,
                quant_min: *lo,
                quant_max: *hi,
                group_size: *group,
                zero_point_data_key: None,
                zero_point_dtype: ng::ScalarType::BYTE,
            },
        );
        ng::QuantSpec::create(
            b,
            &ng::QuantSpecArgs {
                scheme_type: ng::QuantScheme::AffineGroup,
                scheme: Some(g.as_union_value()),
            },
        )
    });
    ng::TensorMeta::create(
        b,
        &ng::TensorMetaArgs {
            dtype,
            sizes: Some(dims),
            dim_order: None,
            quant,
        },
    )
}

fn method<'a>(b: &mut B<'a>, m: &MethodSpec) -> WIPOffset<ng::Method<'a>> {
    let graph = graph(b, &m.graph);
    let constants: Vec<_> = m
        .constants
        .iter()
        .map(|c| {
            let meta = meta(b, c.dtype, &c.sizes, c.quant.as_ref());
            let name = b.create_string(&c.name);
            let key = b.create_string(&c.data_key);
            ng::NamedTensorRef::create(
                b,
                &ng::NamedTensorRefArgs {
                    name: Some(name),
                    data_key: Some(key),
                    meta: Some(meta),
                    kind: c.kind,
                    mutated: c.mutated,
                },
            )
        })
        .collect();
    let constants = b.create_vector(&constants);
    let specs: Vec<_> = m
        .output_specs
        .iter()
        .map(|(n, kind, target)| {
            let name = b.create_string(n);
            let target = target.as_ref().map(|t| b.create_string(t));
            ng::OutputSpec::create(
                b,
                &ng::OutputSpecArgs {
                    name: Some(name),
                    kind: *kind,
                    target,
                },
            )
        })
        .collect();
    let specs = b.create_vector(&specs);
    let buffers: Vec<_> = m
        .mutable_buffers
        .iter()
        .map(|(n, f)| {
            let name = b.create_string(n);
            let fqn = b.create_string(f);
            ng::MutableBufferSpec::create(
                b,
                &ng::MutableBufferSpecArgs {
                    name: Some(name),
                    fqn: Some(fqn),
                },
            )
        })
        .collect();
    let buffers = b.create_vector(&buffers);
    let name = b.create_string(&m.name);
    ng::Method::create(
        b,
        &ng::MethodArgs {
            name: Some(name),
            graph: Some(graph),
            constants: Some(constants),
            output_specs: Some(specs),
            mutable_buffers: Some(buffers),
        },
    )
}

fn graph<'a>(b: &mut B<'a>, g: &GraphSpec) -> WIPOffset<ng::Graph<'a>> {
    let nodes: Vec<_> = g.nodes.iter().map(|n| node(b, n)).collect();
    let nodes = b.create_vector(&nodes);
    let inputs = strings(b, &g.inputs);
    let outputs = strings(b, &g.outputs);
    let values: Vec<_> = g
        .values
        .iter()
        .map(|(n, dtype, sizes)| {
            let meta = meta(b, *dtype, sizes, None);
            let name = b.create_string(n);
            ng::TensorValue::create(
                b,
                &ng::TensorValueArgs {
                    name: Some(name),
                    meta: Some(meta),
                },
            )
        })
        .collect();
    let values = b.create_vector(&values);
    ng::Graph::create(
        b,
        &ng::GraphArgs {
            nodes: Some(nodes),
            inputs: Some(inputs),
            outputs: Some(outputs),
            tensor_values: Some(values),
        },
    )
}

fn node<'a>(b: &mut B<'a>, n: &NodeSpec) -> WIPOffset<ng::Node<'a>> {
    let inputs: Vec<_> = n
        .inputs
        .iter()
        .map(|(name, a, mutated)| {
            let arg = argument(b, a);
            let name = (!name.is_empty()).then(|| b.create_string(name));
            ng::NamedArgument::create(
                b,
                &ng::NamedArgumentArgs {
                    name,
                    arg: Some(arg),
                    mutated: *mutated,
                },
            )
        })
        .collect();
    let inputs = b.create_vector(&inputs);
    let outputs: Vec<_> = n
        .outputs
        .iter()
        .map(|o| match o {
            Out::Tensor { name, alias_of } => {
                let name = b.create_string(name);
                let alias_of = alias_of.as_ref().map(|a| b.create_string(a));
                ng::Output::create(
                    b,
                    &ng::OutputArgs {
                        name: Some(name),
                        alias_of,
                        kind: ng::OutputValueKind::TENSOR,
                        names: None,
                    },
                )
            }
            Out::List(names) => {
                let names = strings(b, names);
                let empty = b.create_string("");
                ng::Output::create(
                    b,
                    &ng::OutputArgs {
                        name: Some(empty),
                        alias_of: None,
                        kind: ng::OutputValueKind::TENSOR_LIST,
                        names: Some(names),
                    },
                )
            }
        })
        .collect();
    let outputs = b.create_vector(&outputs);
    let name = b.create_string(&n.name);
    let target = n.target.as_ref().map(|t| b.create_string(t));
    ng::Node::create(
        b,
        &ng::NodeArgs {
            name: Some(name),
            op_kind: n.op,
            target,
            inputs: Some(inputs),
            outputs: Some(outputs),
            metadata: None,
        },
    )
}

fn argument<'a>(b: &mut B<'a>, a: &Arg) -> WIPOffset<ng::Argument<'a>> {
    use ng::ArgumentValue as V;
    let (kind, value) = match a {
        Arg::Tensor(n) => {
            let n = b.create_string(n);
            (
                V::TensorArg,
                ng::TensorArg::create(b, &ng::TensorArgArgs { name: Some(n) }).as_union_value(),
            )
        }
        Arg::None => (
            V::NoneArg,
            ng::NoneArg::create(b, &ng::NoneArgArgs {}).as_union_value(),
        ),
        Arg::Int(v) => (
            V::IntArg,
            ng::IntArg::create(
                b,
                &ng::IntArgArgs {
                    value: *v,
                    ref_: None,
                },
            )
            .as_union_value(),
        ),
        Arg::Float(v) => (
            V::FloatArg,
            ng::FloatArg::create(
                b,
                &ng::FloatArgArgs {
                    value: *v,
                    ref_: None,
                },
            )
            .as_union_value(),
        ),
        Arg::Bool(v) => (
            V::BoolArg,
            ng::BoolArg::create(
                b,
                &ng::BoolArgArgs {
                    value: *v,
                    ref_: None,
                },
            )
            .as_union_value(),
        ),
        Arg::Str(s) => {
            let s = b.create_string(s);
            (
                V::StringArg,
                ng::StringArg::create(b, &ng::StringArgArgs { value: Some(s) }).as_union_value(),
            )
        }
        Arg::Dtype(t) => (
            V::ScalarTypeArg,
            ng::ScalarTypeArg::create(b, &ng::ScalarTypeArgArgs { value: *t }).as_union_value(),
        ),
        Arg::Ints(values, refs) => {
            let values = b.create_vector(values);
            let refs = (!refs.is_empty()).then(|| strings(b, refs));
            (
                V::IntListArg,
                ng::IntListArg::create(
                    b,
                    &ng::IntListArgArgs {
                        values: Some(values),
                        refs,
                    },
                )
                .as_union_value(),
            )
        }
        Arg::Tensors(names) => {
            let names = strings(b, names);
            (
                V::TensorListArg,
                ng::TensorListArg::create(b, &ng::TensorListArgArgs { names: Some(names) })
                    .as_union_value(),
            )
        }
        Arg::OptionalTensors(items) => {
            let names: Vec<String> = items
                .iter()
                .map(|i| i.clone().unwrap_or_default())
                .collect();
            let has: Vec<bool> = items.iter().map(Option::is_some).collect();
            let names = strings(b, &names);
            let has = b.create_vector(&has);
            (
                V::OptionalTensorListArg,
                ng::OptionalTensorListArg::create(
                    b,
                    &ng::OptionalTensorListArgArgs {
                        names: Some(names),
                        has_value: Some(has),
                    },
                )
                .as_union_value(),
            )
        }
        Arg::Graph(name, g) => {
            let g = graph(b, g);
            let name = b.create_string(name);
            (
                V::GraphArg,
                ng::GraphArg::create(
                    b,
                    &ng::GraphArgArgs {
                        name: Some(name),
                        graph: Some(g),
                    },
                )
                .as_union_value(),
            )
        }
    };
    ng::Argument::create(
        b,
        &ng::ArgumentArgs {
            value_type: kind,
            value: Some(value),
        },
    )
}

/// A method that reads each constant (`b_<key>` placeholders, dots as
/// underscores) and user input `x`, adds the first constant to `x`, and
/// returns the sum.
pub fn constants_method(constants: &[(&str, ng::ScalarType, &[i64])]) -> MethodSpec {
    let placeholder = |k: &str| format!("b_{}", k.replace('.', "_"));
    let mut g = GraphSpec::default();
    let mut consts = Vec::new();
    for (key, dtype, sizes) in constants {
        g.nodes.push(NodeSpec::placeholder(&placeholder(key)));
        consts.push(ConstSpec {
            name: placeholder(key),
            data_key: (*key).into(),
            dtype: *dtype,
            sizes: sizes.to_vec(),
            kind: ng::InputKind::BUFFER,
            mutated: false,
            quant: None,
        });
    }
    g.nodes.push(NodeSpec::placeholder("x"));
    let first = constants
        .first()
        .map_or("x".to_owned(), |c| placeholder(c.0));
    g.nodes.push(NodeSpec::call(
        "add",
        "torch.ops.aten.add.Tensor",
        vec![
            ("self", Arg::Tensor("x".into()), false),
            ("other", Arg::Tensor(first), false),
            ("alpha", Arg::Int(1), false),
        ],
    ));
    g.nodes.push(NodeSpec::output(&["add"]));
    g.inputs = vec!["x".into()];
    g.outputs = vec!["add".into()];
    g.values = vec![
        ("x".into(), ng::ScalarType::FLOAT, vec![4]),
        ("add".into(), ng::ScalarType::FLOAT, vec![4]),
    ];
    MethodSpec {
        name: "forward".into(),
        graph: g,
        constants: consts,
        output_specs: vec![("add".into(), ng::OutputKind::USER_OUTPUT, None)],
        mutable_buffers: Vec::new(),
    }
}
