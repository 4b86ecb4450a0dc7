//! What the tree says a program means: `io.json`, `memory.json`,
//! `value.json`, users and aliases of tensors, byte-less values in
//! `index.json`, and `values/`. Checked against flatc's JSON of the
//! fixtures and against exports the writer makes.

use crate::common;
use crate::writer;

use std::collections::BTreeSet;

use common::*;
use ptefs::schema::ScalarType;
use serde_json::{Value, json};
use writer::{Bytes, Chain, Data, Delegate, Instr, Method, Program, Tensor, Value as V};

/// flatc's JSON of fixture `model`.
fn flatc(model: &str) -> Value {
    let p = fixture(&format!("flatc-json/{model}.json"));
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

fn pte_fixtures() -> Vec<String> {
    models()
        .into_iter()
        .filter(|m| m.ends_with(".pte") && fixture(&format!("flatc-json/{m}.json")).exists())
        .collect()
}

/// A planned tensor.
fn planned(t: ScalarType, sizes: &[i32], offset: u64) -> Tensor {
    let mut t = Tensor::new(t, sizes, Data::None);
    t.allocation = Some((1, offset));
    t
}

/// An export shaped like ExecuTorch's LLM exports: KV caches written by
/// `llama::update_cache` (the key cache exported with its name, the value
/// cache without), a norm weight and a scalar constant passed into a
/// delegate call, and constant methods.
fn llm() -> Program {
    let norm: Vec<u8> = (0..32).collect();
    let scale = 0.5f32.to_le_bytes().to_vec();
    let values = vec![
        V::Tensor(planned(ScalarType::LONG, &[1, 4], 0)),
        V::Tensor(
            planned(ScalarType::FLOAT, &[1, 16, 2, 8], 64)
                .named("layers.0.attention.kv_cache.k_cache"),
        ),
        V::Tensor(planned(ScalarType::FLOAT, &[1, 16, 2, 8], 1088)),
        V::Tensor(planned(ScalarType::FLOAT, &[1, 4, 2, 8], 2112)),
        V::Int(0),
        V::Tensor(Tensor::new(
            ScalarType::FLOAT,
            &[8],
            Data::Constant(norm.into()),
        )),
        V::Tensor(Tensor::new(
            ScalarType::FLOAT,
            &[],
            Data::Constant(scale.into()),
        )),
        V::Tensor(planned(ScalarType::FLOAT, &[1, 4, 16], 2368)),
        V::Tensor(planned(ScalarType::FLOAT, &[1], 2624)),
        V::Tensor(planned(ScalarType::FLOAT, &[1, 4, 2, 8], 2688)),
    ];
    let forward = Method {
        inputs: vec![0],
        outputs: vec![7],
        chains: vec![Chain {
            inputs: vec![0],
            outputs: vec![7],
            instructions: vec![
                Instr::Kernel {
                    op: 0,
                    args: vec![3, 1, 4, 8, 8],
                },
                Instr::Kernel {
                    op: 0,
                    args: vec![3, 2, 4, 8, 8],
                },
                Instr::Kernel {
                    op: 1,
                    args: vec![3, 6, 9, 9],
                },
                Instr::Delegate {
                    index: 0,
                    args: vec![9, 5, 6, 7],
                },
            ],
            stacktrace: None,
        }],
        operators: vec![
            ("llama::update_cache".into(), "out".into()),
            ("aten::mul".into(), "out".into()),
        ],
        delegates: vec![Delegate {
            id: "XnnpackBackend".into(),
            blob: Bytes::Owned(vec![7; 40]),
            inline: false,
            compile_specs: Vec::new(),
        }],
        non_const_buffer_sizes: vec![0, 4096],
        ..Method::new("forward", values)
    };
    let constant = |name: &str, values: Vec<V>| Method {
        outputs: (0..values.len() as i32).collect(),
        ..Method::new(name, values)
    };
    Program {
        methods: vec![
            forward,
            constant("get_max_seq_len", vec![V::Int(128)]),
            constant("use_kv_cache", vec![V::Bool(true)]),
            constant("get_eos_ids", vec![V::Int(1), V::Int(2)]),
        ],
        ..Program::default()
    }
}

fn index(v: &ptefs::view::View, method: &str) -> Vec<Value> {
    json(v, &format!("methods/{method}/tensors/index.json"))
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn io_json_is_what_the_exporter_recorded() {
    for model in pte_fixtures() {
        let v = view(&model);
        for plan in flatc(&model)["execution_plan"].as_array().unwrap() {
            let name = plan["name"].as_str().unwrap();
            let io = json(&v, &format!("methods/{name}/io.json"));
            for side in ["inputs", "outputs"] {
                let ids = plan[side].as_array().cloned().unwrap_or_default();
                let listed = io[side].as_array().unwrap();
                assert_eq!(ids.len(), listed.len(), "{model} {name} {side}");
                for (id, got) in ids.iter().zip(listed) {
                    assert_eq!(&got["value"], id, "{model} {name} {side}");
                    let value = &plan["values"][id.as_u64().unwrap() as usize];
                    assert_eq!(got["type"], value["val_type"], "{model} {name} {id}");
                    let t = &value["val"];
                    if value["val_type"] != "Tensor" {
                        continue;
                    }
                    assert_eq!(got["scalar_type"], t["scalar_type"], "{model} {name} {id}");
                    assert_eq!(got["sizes"], t["sizes"]);
                    assert_eq!(got["dim_order"], t["dim_order"]);
                    let dynamism = t.get("shape_dynamism").cloned().unwrap_or(json!("STATIC"));
                    assert_eq!(got["shape_dynamism"], dynamism, "{model} {name} {id}");
                    let alloc = &t["allocation_info"];
                    assert_eq!(got["memory_planned"], json!(!alloc.is_null()));
                    if !alloc.is_null() {
                        assert_eq!(got["mem_id"], alloc["memory_id"]);
                        let low = alloc["memory_offset_low"].as_u64().unwrap_or(0);
                        let high = alloc["memory_offset_high"].as_u64().unwrap_or(0);
                        assert_eq!(got["mem_offset"], json!(high << 32 | low));
                    }
                }
            }
        }
    }
}

#[test]
fn memory_json_places_every_planned_tensor_once() {
    let mut checked = 0;
    for model in pte_fixtures() {
        let v = view(&model);
        for plan in flatc(&model)["execution_plan"].as_array().unwrap() {
            let name = plan["name"].as_str().unwrap();
            let mem = json(&v, &format!("methods/{name}/memory.json"));
            let sizes = plan["non_const_buffer_sizes"].clone();
            assert_eq!(mem["non_const_buffer_sizes"], sizes, "{model} {name}");
            let mut expected = BTreeSet::new();
            for (i, value) in plan["values"].as_array().unwrap().iter().enumerate() {
                let alloc = &value["val"]["allocation_info"];
                if value["val_type"] == "Tensor" && !alloc.is_null() {
                    let low = alloc["memory_offset_low"].as_u64().unwrap_or(0);
                    let id = alloc["memory_id"].as_u64().unwrap_or(0);
                    expected.insert((id, i as u64, low));
                }
            }
            let mut got = BTreeSet::new();
            for b in mem["buffers"].as_array().unwrap() {
                let id = b["mem_id"].as_u64().unwrap();
                if let Some(size) = sizes.get(id as usize) {
                    assert_eq!(&b["size"], size);
                }
                let mut last = 0;
                for p in b["values"].as_array().unwrap() {
                    let off = p["mem_offset"].as_u64().unwrap();
                    assert!(off >= last, "{model} {name}: sorted by offset");
                    last = off;
                    assert!(off + p["nbytes"].as_u64().unwrap() <= b["size"].as_u64().unwrap());
                    assert!(got.insert((id, p["value"].as_u64().unwrap(), off)));
                }
            }
            checked += expected.len();
            assert_eq!(got, expected, "{model} {name}");
        }
    }
    assert!(checked > 50, "{checked}");
}

#[test]
fn kv_caches_are_listed_where_the_exporter_named_them_and_found_by_their_writer() {
    let (_d, v) = view_bytes("llm.pte", &llm().to_bytes());
    let idx = index(&v, "forward");
    // The named cache has no bytes but is listed with its placement.
    let k: Vec<&Value> = idx
        .iter()
        .filter(|e| e["fqn"] == "layers.0.attention.kv_cache.k_cache")
        .collect();
    assert_eq!(k.len(), 1, "{idx:#?}");
    let k = k[0];
    assert_eq!(k["bytes"], "none");
    assert!(k.get("name").is_none());
    assert_eq!(k["value_index"], 1);
    assert_eq!(k["mem_id"], 1);
    assert_eq!(k["mem_offset"], 64);
    assert_eq!(k["nbytes"], 16 * 2 * 8 * 4);
    assert_eq!(k["sizes"], json!([1, 16, 2, 8]));
    // Custom ops have no schema here: position only.
    assert_eq!(
        k["users"],
        json!([{"chain": 0, "instruction": 0, "op": "llama::update_cache.out", "arg": 1}])
    );
    // The unnamed cache is in memory.json, found by its writer.
    let mem = json(&v, "methods/forward/memory.json");
    let placed = mem["buffers"][0]["values"].as_array().unwrap();
    let vcache = placed.iter().find(|p| p["value"] == 2).unwrap();
    assert_eq!(vcache["mem_offset"], 1088);
    assert_eq!(vcache["users"][0]["op"], "llama::update_cache.out");
    assert_eq!(vcache["users"][0]["instruction"], 1);
    assert_eq!(placed.len(), 7, "every planned tensor of the method");
    // Anonymous planned tensors stay out of index.json.
    assert!(idx.iter().all(|e| e["value_index"] != 2));
}

#[test]
fn constant_methods_have_value_json() {
    let (_d, v) = view_bytes("llm.pte", &llm().to_bytes());
    assert_eq!(json(&v, "methods/get_max_seq_len/value.json"), json!(128));
    assert_eq!(json(&v, "methods/use_kv_cache/value.json"), json!(true));
    assert_eq!(json(&v, "methods/get_eos_ids/value.json"), json!([1, 2]));
    let io = json(&v, "methods/get_eos_ids/io.json");
    assert_eq!(
        io["outputs"][1],
        json!({"value": 1, "type": "Int", "literal": 2})
    );
    assert!(v.tree.resolve("methods/forward/value.json").is_none());
    for model in pte_fixtures() {
        let v = view(&model);
        for m in ls(&v, "methods") {
            let m = m.trim_end_matches('/');
            assert!(
                v.tree.resolve(&format!("methods/{m}/value.json")).is_none(),
                "{model} {m}: a method with instructions"
            );
        }
    }
}

/// `(chain, instruction, op or delegate, arg, item)` of every tensor use
/// of value `value`, read from flatc's JSON of the plan.
fn uses_in_flatc(plan: &Value, value: u64) -> BTreeSet<(u64, u64, String, u64, Option<u64>)> {
    let values = plan["values"].as_array().unwrap();
    let ops = plan["operators"].as_array().cloned().unwrap_or_default();
    let mut out = BTreeSet::new();
    for (c, chain) in plan["chains"].as_array().unwrap().iter().enumerate() {
        let instructions = chain["instructions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for (n, ins) in instructions.iter().enumerate() {
            let a = &ins["instr_args"];
            let callee = match ins["instr_args_type"].as_str().unwrap() {
                "KernelCall" => {
                    let op = &ops[a["op_index"].as_u64().unwrap_or(0) as usize];
                    match op["overload"].as_str() {
                        Some(o) if !o.is_empty() => format!("{}.{o}", op["name"].as_str().unwrap()),
                        _ => op["name"].as_str().unwrap().to_owned(),
                    }
                }
                "DelegateCall" => format!("delegate {}", a["delegate_index"].as_u64().unwrap_or(0)),
                _ => continue,
            };
            for (pos, arg) in a["args"].as_array().unwrap().iter().enumerate() {
                let arg = arg.as_u64().unwrap();
                let at = |item| (c as u64, n as u64, callee.clone(), pos as u64, item);
                if arg == value {
                    out.insert(at(None));
                }
                let items = values[arg as usize]["val"]["items"].as_array().cloned();
                let list = matches!(
                    values[arg as usize]["val_type"].as_str(),
                    Some("TensorList" | "OptionalTensorList")
                );
                for (k, item) in items.into_iter().flatten().enumerate() {
                    if list && item.as_u64() == Some(value) {
                        out.insert(at(Some(k as u64)));
                    }
                }
            }
        }
    }
    out
}

#[test]
fn users_are_every_argument_that_names_the_tensor() {
    let mut checked = 0;
    for model in pte_fixtures() {
        let v = view(&model);
        for plan in flatc(&model)["execution_plan"].as_array().unwrap() {
            let name = plan["name"].as_str().unwrap();
            let dirs = ls(&v, &format!("methods/{name}/delegates"));
            for e in index(&v, name) {
                let value = e["value_index"].as_u64().unwrap();
                let mut got = BTreeSet::new();
                for u in e["users"].as_array().into_iter().flatten() {
                    let callee = match (u["op"].as_str(), u["delegate"].as_str()) {
                        (Some(op), _) => op.to_owned(),
                        (None, Some(dir)) => {
                            let i = dirs.iter().position(|d| d.trim_end_matches('/') == dir);
                            format!("delegate {}", i.expect("an existing delegate directory"))
                        }
                        _ => panic!("{u}"),
                    };
                    got.insert((
                        u["chain"].as_u64().unwrap(),
                        u["instruction"].as_u64().unwrap(),
                        callee,
                        u["arg"].as_u64().unwrap(),
                        u["item"].as_u64(),
                    ));
                }
                checked += got.len();
                assert_eq!(
                    got,
                    uses_in_flatc(plan, value),
                    "{model} {name} value {value}"
                );
            }
        }
    }
    assert!(checked >= 8, "{checked}");
}

#[test]
fn argument_names_come_from_the_operator_schemas() {
    let v = view("mlp.pte");
    let idx = index(&v, "forward");
    let names: Vec<(u64, String, String)> = idx
        .iter()
        .flat_map(|e| {
            e["users"].as_array().into_iter().flatten().map(|u| {
                (
                    e["value_index"].as_u64().unwrap(),
                    u["op"].as_str().unwrap().to_owned(),
                    u["arg_name"].as_str().unwrap().to_owned(),
                )
            })
        })
        .collect();
    // code.txt: permute_copy.out %0 [1, 0] %5 %5; addmm.out %1 %4 %5 1 1 %9 %9
    assert_eq!(
        names,
        [
            (0, "aten::permute_copy.out", "self"),
            (1, "aten::addmm.out", "self"),
            (2, "aten::permute_copy.out", "self"),
            (3, "aten::addmm.out", "self"),
        ]
        .map(|(v, o, a)| (v, o.to_owned(), a.to_owned()))
    );
    let mem = json(&v, "methods/forward/memory.json");
    let placed = mem["buffers"][0]["values"].as_array().unwrap();
    let five = placed.iter().find(|p| p["value"] == 5).unwrap();
    let roles: Vec<(&str, bool)> = five["users"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| (u["arg_name"].as_str().unwrap(), u.get("writes").is_some()))
        .collect();
    assert_eq!(
        roles,
        [("out", true), ("return", true), ("mat2", false)],
        "%5 is written by permute_copy and read by addmm"
    );
}

#[test]
fn anonymous_constants_get_a_readable_alias_that_is_the_same_file() {
    let (_d, v) = view_bytes("llm.pte", &llm().to_bytes());
    let idx = index(&v, "forward");
    let norm = idx.iter().find(|e| e["value_index"] == 5).unwrap();
    assert_eq!(norm["alias"], "5.delegate-0.arg1.bin");
    assert_eq!(
        norm["users"],
        json!([{"chain": 0, "instruction": 3, "delegate": "0-XnnpackBackend", "arg": 1}])
    );
    let scale = idx.iter().find(|e| e["value_index"] == 6).unwrap();
    assert_eq!(scale["alias"], "6.mul.other.bin", "first use names it");
    assert_eq!(scale["users"].as_array().unwrap().len(), 2);
    for (name, alias) in [
        ("5.bin", "5.delegate-0.arg1.bin"),
        ("6.bin", "6.mul.other.bin"),
    ] {
        let dir = v.tree.resolve("methods/forward/tensors").unwrap();
        let a = v.tree.lookup(dir, name.as_bytes()).unwrap();
        let b = v.tree.lookup(dir, alias.as_bytes()).unwrap();
        assert_eq!(a, b, "{alias} is a further name of {name}");
        assert!(
            v.tree.nlink(a) >= 3,
            "{name}, {alias}, values/: {}",
            v.tree.nlink(a)
        );
    }

    // Fixtures: every anonymous constant a kernel reads has one, with its
    // bytes; named ones keep their names only.
    let mut aliased = 0;
    for model in pte_fixtures() {
        let v = view(&model);
        for m in ls(&v, "methods") {
            let m = m.trim_end_matches('/');
            for e in index(&v, m) {
                let used = e["users"].as_array().is_some_and(|u| !u.is_empty());
                let anonymous = e["fqn"].is_null() && e.get("name").is_some();
                assert_eq!(e.get("alias").is_some(), used && anonymous, "{model} {e}");
                if let Some(alias) = e["alias"].as_str() {
                    let dir = format!("methods/{m}/tensors");
                    let a = read(&v, &format!("{dir}/{alias}"));
                    assert_eq!(
                        a,
                        read(&v, &format!("{dir}/{}", e["name"].as_str().unwrap()))
                    );
                    assert!(alias.starts_with(e["name"].as_str().unwrap().trim_end_matches("bin")));
                    aliased += 1;
                }
            }
        }
    }
    assert!(aliased >= 4, "{aliased}");
}

#[test]
fn values_dir_names_each_tensor_file_by_value_id() {
    for model in pte_fixtures() {
        let v = view(&model);
        for m in ls(&v, "methods") {
            let m = m.trim_end_matches('/');
            let plan = json(&v, &format!("methods/{m}/plan.json"));
            let mut n = 0;
            for (i, value) in plan["values"].as_array().unwrap().iter().enumerate() {
                let link = v.tree.resolve(&format!("methods/{m}/values/{i}"));
                match value["val"]["ptefs_path"].as_str() {
                    Some(path) => {
                        assert_eq!(link, v.tree.resolve(path), "{model} {m} {i}");
                        n += 1;
                    }
                    None => assert!(link.is_none(), "{model} {m} {i}"),
                }
            }
            assert_eq!(ls(&v, &format!("methods/{m}/values")).len(), n);
        }
    }
}

#[test]
fn aliases_and_values_are_hard_links_in_a_mount() {
    use std::os::unix::fs::MetadataExt;
    if !common::mounted::fuse_or_skip("aliases_and_values_are_hard_links_in_a_mount") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let p = write_file(dir.path(), "llm.pte", &llm().to_bytes());
    let (_d, offline) = view_bytes("llm.pte", &llm().to_bytes());
    let m = common::mounted::Mounted::new(&[p.as_os_str()]);
    let meta = |rel: &str| std::fs::metadata(m.path(rel)).unwrap();
    let bin = meta("methods/forward/tensors/5.bin");
    for other in [
        "methods/forward/tensors/5.delegate-0.arg1.bin",
        "methods/forward/values/5",
    ] {
        let o = meta(other);
        assert_eq!((o.ino(), o.nlink()), (bin.ino(), bin.nlink()), "{other}");
        let bytes = std::fs::read(m.path(other)).unwrap();
        assert_eq!(bytes, read(&offline, "methods/forward/tensors/5.bin"));
    }
    assert_eq!(bin.nlink(), 4, "5.bin, its alias, values/5, constants/<i>");
    for f in ["io.json", "memory.json"] {
        let path = format!("methods/forward/{f}");
        assert_eq!(std::fs::read(m.path(&path)).unwrap(), read(&offline, &path));
    }
    let v = std::fs::read(m.path("methods/get_eos_ids/value.json")).unwrap();
    assert_eq!(serde_json::from_slice::<Value>(&v).unwrap(), json!([1, 2]));
}

#[test]
fn code_txt_types_each_tensor_and_every_id_can_be_read() {
    for model in pte_fixtures() {
        let v = view(&model);
        for plan in flatc(&model)["execution_plan"].as_array().unwrap() {
            let name = plan["name"].as_str().unwrap();
            let code = String::from_utf8(read(&v, &format!("methods/{name}/code.txt"))).unwrap();
            let values = plan["values"].as_array().unwrap();
            let mut typed = 0;
            for line in code.lines().filter(|l| !l.trim_start().starts_with('#')) {
                let mut seen = BTreeSet::new();
                for token in line
                    .split([' ', '[', ',', '='])
                    .filter(|t| t.starts_with('%'))
                {
                    let (id, ty) = token[1..].split_once(':').unwrap_or((&token[1..], ""));
                    let Ok(id) = id.trim_end_matches(']').parse::<usize>() else {
                        continue;
                    };
                    let value = &values[id];
                    if value["val_type"] != "Tensor" {
                        continue;
                    }
                    // Typed exactly on its first appearance in a line.
                    assert_eq!(!ty.is_empty(), seen.insert(id), "{model}: {line}");
                    if !ty.is_empty() {
                        typed += 1;
                        let dims = value["val"]["sizes"].as_array().unwrap();
                        let dims: Vec<String> = dims.iter().map(|d| d.to_string()).collect();
                        assert!(
                            line.contains(&format!("%{id}:{ty}[{}]", dims.join(","))),
                            "{model}: {line}"
                        );
                    }
                    if value["val"]["ptefs_path"].is_string() {
                        let path = format!("methods/{name}/values/{id}");
                        assert!(v.tree.resolve(&path).is_some(), "{model}: {path}");
                    }
                }
            }
            let instructions: usize = plan["chains"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["instructions"].as_array().map_or(0, Vec::len))
                .sum();
            assert!(typed >= instructions.min(1), "{model} {name}");
            // One comment per recorded frame.
            let frames: usize = plan["chains"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|c| c["stacktrace"].as_array().cloned().unwrap_or_default())
                .map(|f| f["items"].as_array().map_or(0, |i| i.len().min(8)))
                .sum();
            let comments = code.lines().filter(|l| l.starts_with("  # ")).count();
            assert_eq!(comments, frames, "{model} {name}");
        }
    }
    let v = view("mlp.pte");
    let code = String::from_utf8(read(&v, "methods/forward/code.txt")).unwrap();
    assert!(code.contains(
        "1: aten::addmm.out %1:f32[32] %4:f32[4,16] %5:f32[16,32] 1 1 out=%9:f32[4,32] -> %9\n"
    ));
    let v = view("mv2_xnnpack.pte");
    let code = String::from_utf8(read(&v, "methods/forward/code.txt")).unwrap();
    assert!(code.contains(
        "0: delegate 0 XnnpackBackend (delegates/0-XnnpackBackend) %52:f32[1,3,224,224]"
    ));
    assert!(
        v.tree
            .resolve("methods/forward/delegates/0-XnnpackBackend")
            .is_some()
    );
    let v = view("mlp_stacktrace.pte");
    let code = String::from_utf8(read(&v, "methods/forward/code.txt")).unwrap();
    assert!(code.contains("  # /home/u/models/export_my_fixtures.py:57 in forward: return self.fc2(torch.relu(self.fc1(x)))\n"));
}

#[test]
fn stack_trace_comments_are_one_line_each_and_bounded() {
    let frame = writer::Frame {
        filename: Some("model.py".into()),
        lineno: 7,
        name: Some("forward".into()),
        context: Some(format!("x = f(\n{}\n)", "y".repeat(300))),
    };
    let n = 600;
    let mut p = Program::forward(vec![V::Tensor(Tensor::new(
        ScalarType::FLOAT,
        &[1],
        Data::None,
    ))]);
    p.methods[0].operators = vec![("aten::relu".into(), "out".into())];
    p.methods[0].chains[0].instructions = (0..n)
        .map(|_| Instr::Kernel {
            op: 0,
            args: vec![0, 0, 0],
        })
        .collect();
    p.methods[0].chains[0].stacktrace = Some(vec![vec![frame; 10]; n]);
    let (_d, v) = view_bytes("t.pte", &p.to_bytes());
    let code = String::from_utf8(read(&v, "methods/forward/code.txt")).unwrap();
    let comments: Vec<&str> = code.lines().filter(|l| l.starts_with("  #")).collect();
    assert!(
        comments[0].starts_with("  # model.py:7 in forward: x = f( yyy"),
        "{}",
        comments[0]
    );
    assert_eq!(
        comments.last().unwrap(),
        &"  # (stack traces of later instructions are left out)"
    );
    let traced: usize = comments.iter().map(|c| c.len() + 1).sum();
    assert!(traced < (1 << 20) + 8 * 1024, "{traced}");
    assert_eq!(
        code.lines().filter(|l| !l.starts_with(['#', ' '])).count(),
        n
    );
    assert!(code.contains("0: aten::relu.out %0:f32[1] out=%0 -> %0\n"));
}

/// `dtype;dim,order` of tensor value `i` of a flatc plan.
fn kernel_part(values: &[Value], i: u64) -> Option<String> {
    let v = &values[i as usize];
    if v["val_type"] != "Tensor" {
        return None;
    }
    let t = &v["val"];
    let dtype = scalar_code(t["scalar_type"].as_str().unwrap_or("BYTE"));
    let order: Vec<String> = t["dim_order"]
        .as_array()
        .map(|d| d.iter().map(|x| x.to_string()).collect())
        .unwrap_or_default();
    Some(format!("{dtype};{}", order.join(",")))
}

/// The schema's number of a scalar type name.
fn scalar_code(name: &str) -> i8 {
    let all = [
        "BYTE",
        "CHAR",
        "SHORT",
        "INT",
        "LONG",
        "HALF",
        "FLOAT",
        "DOUBLE",
        "COMPLEXHALF",
        "COMPLEXFLOAT",
        "COMPLEXDOUBLE",
        "BOOL",
        "QINT8",
        "QUINT8",
        "QINT32",
        "BFLOAT16",
    ];
    all.iter().position(|n| *n == name).unwrap() as i8
}

/// What gen_oplist lists for a flatc plan set: operators and kernel keys
/// (without the model path it records as `debug_info`).
fn gen_oplist(model: &str) -> Value {
    let mut operators = serde_json::Map::new();
    let mut keys: std::collections::BTreeMap<String, BTreeSet<String>> = Default::default();
    for plan in flatc(model)["execution_plan"].as_array().unwrap() {
        let ops = plan["operators"].as_array().cloned().unwrap_or_default();
        let full = |op: &Value| match op["overload"].as_str() {
            Some(o) if !o.is_empty() => format!("{}.{o}", op["name"].as_str().unwrap()),
            _ => op["name"].as_str().unwrap().to_owned(),
        };
        for op in &ops {
            operators.insert(
                full(op),
                json!({"include_all_overloads": false,
                       "is_root_operator": true, "is_used_for_training": true}),
            );
        }
        let values = plan["values"].as_array().unwrap();
        for chain in plan["chains"].as_array().unwrap() {
            for ins in chain["instructions"]
                .as_array()
                .cloned()
                .unwrap_or_default()
            {
                if ins["instr_args_type"] != "KernelCall" {
                    continue;
                }
                let a = &ins["instr_args"];
                let op = full(&ops[a["op_index"].as_u64().unwrap_or(0) as usize]);
                let mut parts = Vec::new();
                for arg in a["args"].as_array().unwrap() {
                    let v = &values[arg.as_u64().unwrap() as usize];
                    let items = v["val"]["items"].as_array().cloned().unwrap_or_default();
                    let part = match v["val_type"].as_str().unwrap() {
                        "Tensor" => kernel_part(values, arg.as_u64().unwrap()),
                        "TensorList" => {
                            items.first().and_then(|i| kernel_part(values, i.as_u64()?))
                        }
                        "OptionalTensorList" => items
                            .iter()
                            .filter_map(|i| i.as_i64().filter(|&i| i >= 0))
                            .find_map(|i| kernel_part(values, i as u64)),
                        _ => None,
                    };
                    parts.extend(part);
                }
                let key = if parts.is_empty() {
                    "v1".to_owned()
                } else {
                    format!("v1/{}", parts.join("|"))
                };
                keys.entry(op).or_default().insert(key);
            }
        }
    }
    json!({
        "build_features": [],
        "custom_classes": [],
        "et_kernel_metadata": keys,
        "include_all_non_op_selectives": false,
        "include_all_operators": false,
        "kernel_metadata": {},
        "operators": operators,
    })
}

const YAML_TO_JSON: &str = "import json, sys, yaml\n\
    print(json.dumps(yaml.safe_load(open(sys.argv[1]))))";

#[test]
fn ops_yaml_parses_to_what_gen_oplist_lists() {
    let dir = tempfile::tempdir().unwrap();
    let mut with_kernels = 0;
    for model in pte_fixtures() {
        let v = view(&model);
        let path = write_file(dir.path(), "ops.yaml", &read(&v, "ops.yaml"));
        let parsed: Value = serde_json::from_str(python(YAML_TO_JSON, &[&path]).trim()).unwrap();
        assert_eq!(parsed, gen_oplist(&model), "{model}");
        if !parsed["et_kernel_metadata"].as_object().unwrap().is_empty() {
            with_kernels += 1;
        }
        // ops.txt counts every call of every operator and delegate.
        let text = String::from_utf8(read(&v, "ops.txt")).unwrap();
        let counted: u64 = text
            .lines()
            .skip(1)
            .map(|l| l.split('\t').nth(1).unwrap().parse::<u64>().unwrap())
            .sum();
        let instructions: usize = flatc(&model)["execution_plan"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|p| p["chains"].as_array().unwrap().clone())
            .flat_map(|c| c["instructions"].as_array().cloned().unwrap_or_default())
            .filter(|i| {
                matches!(
                    i["instr_args_type"].as_str(),
                    Some("KernelCall" | "DelegateCall")
                )
            })
            .count();
        assert_eq!(counted, instructions as u64, "{model}\n{text}");
    }
    assert!(with_kernels >= 5, "{with_kernels}");
    let v = view("mv2_xnnpack.pte");
    let text = String::from_utf8(read(&v, "ops.txt")).unwrap();
    assert!(
        text.contains("forward\t1\tXnnpackBackend\tmethods/forward/delegates/0-XnnpackBackend\n"),
        "{text}"
    );
    let v = view("mlp.pte");
    let text = String::from_utf8(read(&v, "ops.txt")).unwrap();
    assert!(
        text.contains("forward\t2\taten::addmm.out\tkernel library\n"),
        "{text}"
    );
}

#[test]
fn ops_yaml_of_an_llm_export_lists_custom_ops_and_leaves_delegated_work_out() {
    let (dir, v) = view_bytes("llm.pte", &llm().to_bytes());
    let path = write_file(dir.path(), "ops.yaml", &read(&v, "ops.yaml"));
    let parsed: Value = serde_json::from_str(python(YAML_TO_JSON, &[&path]).trim()).unwrap();
    let ops: Vec<&String> = parsed["operators"].as_object().unwrap().keys().collect();
    assert_eq!(ops, ["aten::mul.out", "llama::update_cache.out"]);
    assert_eq!(
        parsed["et_kernel_metadata"],
        json!({
            "aten::mul.out": ["v1/6;0,1,2,3|6;|6;0,1,2,3|6;0,1,2,3"],
            "llama::update_cache.out": ["v1/6;0,1,2,3|6;0,1,2,3|6;0|6;0"],
        })
    );
    let text = String::from_utf8(read(&v, "ops.txt")).unwrap();
    assert!(text.contains("forward\t2\tllama::update_cache.out\tkernel library\n"));
    assert!(
        text.contains("forward\t1\tXnnpackBackend\tmethods/forward/delegates/0-XnnpackBackend\n")
    );
}

/// True when Graphviz's `dot` is there; without it the test is skipped
/// loudly, or fails when the run requires every component.
fn dot_or_skip(test: &str) -> bool {
    common::required::tool_or_skip(test, "dot", "scripts/setup.sh").is_some()
}

/// `(from, to, value)` of each edge line of a graph.dot.
fn dot_edges(text: &str) -> Vec<(String, String, u64)> {
    text.lines()
        .filter_map(|l| {
            let (from, rest) = l.trim().split_once(" -> ")?;
            let (to, label) = rest.split_once(" [label=\"%")?;
            let v = label.split(' ').next()?.parse().ok()?;
            Some((from.to_owned(), to.to_owned(), v))
        })
        .collect()
}

#[test]
fn graph_dot_renders_and_connects_each_tensor_to_its_readers() {
    if !dot_or_skip("graph_dot_renders_and_connects_each_tensor_to_its_readers") {
        return;
    }
    for model in pte_fixtures() {
        let v = view(&model);
        for plan in flatc(&model)["execution_plan"].as_array().unwrap() {
            let name = plan["name"].as_str().unwrap();
            let text = read(&v, &format!("methods/{name}/graph.dot"));
            let svg = common::dot_svg(&format!("{model} {name}"), &text);
            let text = String::from_utf8(text).unwrap();
            let calls = plan["chains"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|c| c["instructions"].as_array().cloned().unwrap_or_default())
                .filter(|i| {
                    matches!(
                        i["instr_args_type"].as_str(),
                        Some("KernelCall" | "DelegateCall")
                    )
                })
                .count();
            assert!(svg.matches("class=\"node\"").count() >= calls, "{model}");
            // Every edge into a call carries one of the call's arguments.
            for (from, to, value) in dot_edges(&text) {
                if to == "outputs" {
                    assert!(plan["outputs"].as_array().unwrap().contains(&json!(value)));
                    continue;
                }
                let (c, n) = to[1..].split_once('_').unwrap();
                let ins = &plan["chains"][c.parse::<usize>().unwrap()]["instructions"]
                    [n.parse::<usize>().unwrap()];
                let args = ins["instr_args"]["args"].as_array().unwrap();
                let values = plan["values"].as_array().unwrap();
                let named = args.iter().any(|a| {
                    a == &json!(value)
                        || values[a.as_u64().unwrap() as usize]["val"]["items"]
                            .as_array()
                            .is_some_and(|i| i.contains(&json!(value)))
                });
                assert!(named, "{model} {name}: {from} -> {to} carries %{value}");
            }
            let outputs = plan["outputs"].as_array().unwrap();
            let into_outputs = dot_edges(&text).iter().filter(|e| e.1 == "outputs").count();
            assert_eq!(into_outputs, outputs.len(), "{model} {name}");
        }
    }
    let v = view("mlp.pte");
    let text = String::from_utf8(read(&v, "methods/forward/graph.dot")).unwrap();
    assert!(
        text.contains("  c0_0 -> c0_1 [label=\"%5 f32[16,32]\"];\n"),
        "{text}"
    );
    assert!(text.contains("  v4 [shape=invhouse, label=\"%4 input\"];\n"));

    let (_d, v) = view_bytes("llm.pte", &llm().to_bytes());
    let text = read(&v, "methods/forward/graph.dot");
    common::dot_svg("llm forward", &text);
    let text = String::from_utf8(text).unwrap();
    assert!(text.contains(
        "  v1 [shape=cylinder, label=\"%1 buffer layers.0.attention.kv_cache.k_cache\"];\n"
    ));
    assert!(text.contains("  c0_3 [shape=box, label=\"0.3: delegate 0-XnnpackBackend\"];\n"));
    let edges = dot_edges(&text);
    for e in [
        ("v1", "c0_0", 1),
        ("c0_2", "c0_3", 9),
        ("v5", "c0_3", 5),
        ("c0_3", "outputs", 7),
    ] {
        assert!(
            edges.contains(&(e.0.to_owned(), e.1.to_owned(), e.2)),
            "{e:?} in {text}"
        );
    }
}

/// A training export as ExecuTorch lays it out: `forward` returns the loss,
/// then the parameters, then their gradients; three constant methods name
/// the parameters and say where each group starts.
fn training() -> Program {
    let w: Vec<u8> = (0..24).collect();
    let b: Vec<u8> = (50..58).collect();
    let values = vec![
        V::Tensor(planned(ScalarType::FLOAT, &[4, 3], 0)),
        V::Tensor(planned(ScalarType::FLOAT, &[], 64)),
        V::Tensor(Tensor::new(
            ScalarType::FLOAT,
            &[2, 3],
            Data::Mutable(w.into()),
        )),
        V::Tensor(Tensor::new(
            ScalarType::FLOAT,
            &[2],
            Data::Mutable(b.into()),
        )),
        V::Tensor(planned(ScalarType::FLOAT, &[2, 3], 128)),
        V::Tensor(planned(ScalarType::FLOAT, &[2], 192)),
    ];
    let forward = Method {
        inputs: vec![0],
        outputs: vec![1, 2, 3, 4, 5],
        non_const_buffer_sizes: vec![0, 256],
        ..Method::new("forward", values)
    };
    let constant = |name: &str, values: Vec<V>| Method {
        outputs: (0..values.len() as i32).collect(),
        ..Method::new(name, values)
    };
    Program {
        methods: vec![
            constant(
                "__et_training_fqn_forward",
                vec![V::Str("linear.weight".into()), V::Str("linear.bias".into())],
            ),
            constant("__et_training_gradients_index_forward", vec![V::Int(3)]),
            constant("__et_training_parameters_index_forward", vec![V::Int(1)]),
            forward,
        ],
        ..Program::default()
    }
}

#[test]
fn a_training_exports_parameters_and_gradients_carry_their_names() {
    let (_d, v) = view_bytes("train.pte", &training().to_bytes());
    let idx = index(&v, "forward");
    let by_value = |i: u64| idx.iter().find(|e| e["value_index"] == i).unwrap().clone();
    // Parameters: their bytes, named by the FQN list.
    let w = by_value(2);
    assert_eq!(
        w["training"],
        json!({"role": "parameter", "fqn": "linear.weight", "output": 1, "value": 2})
    );
    assert_eq!(w["alias"], "2.linear.weight.bin");
    assert_eq!(
        read(&v, "methods/forward/tensors/2.linear.weight.bin"),
        (0..24).collect::<Vec<u8>>()
    );
    assert_eq!(by_value(3)["training"]["fqn"], "linear.bias");
    // Gradients: planned outputs without bytes, listed by name.
    let gw = by_value(4);
    assert_eq!(gw["bytes"], "none");
    assert_eq!(
        gw["training"],
        json!({"role": "gradient", "fqn": "linear.weight", "output": 3, "value": 4})
    );
    assert_eq!(gw["mem_offset"], 128);
    assert_eq!(by_value(5)["training"]["fqn"], "linear.bias");
    assert_eq!(idx.len(), 4, "the loss and the input stay out");
    assert_eq!(
        json(&v, "methods/__et_training_fqn_forward/value.json"),
        json!(["linear.weight", "linear.bias"])
    );
    // Without the index methods nothing is claimed.
    let mut p = training();
    p.methods.retain(|m| !m.name.contains("index"));
    let (_d, v) = view_bytes("t.pte", &p.to_bytes());
    assert!(
        index(&v, "forward")
            .iter()
            .all(|e| e.get("training").is_none())
    );
}

#[test]
fn largest_counts_each_byte_range_once() {
    use ptefs::report::inspect::largest;
    let sizes =
        |v: &ptefs::view::View| -> Vec<u64> { v.sources.iter().map(|s| s.opened.len).collect() };
    let v = view("mv2_xnnpack.pte");
    let top = largest(&v.tree, 3, &sizes(&v));
    assert_eq!(top.len(), 3);
    assert!(top.windows(2).all(|w| w[0].bytes >= w[1].bytes));
    assert_eq!(top[0].bytes, 5_120_000);
    let key = "named/68976bc734ee90ce0fc94ecf8fa77ec405085ac5bb5b6726ebdeb601f20cdc16.bin";
    assert!(
        top[0].path == key || top[0].aliases.iter().any(|a| a == key),
        "{:?}",
        top[0]
    );
    // Every range once, under a raw name; sizes are the bytes served.
    let all = largest(&v.tree, usize::MAX, &sizes(&v));
    let mut ranges = BTreeSet::new();
    for l in &all {
        assert!(
            !l.path.starts_with("segments/") && !l.path.ends_with(".npy"),
            "{l:?}"
        );
        let ino = v.tree.resolve(&l.path).unwrap();
        let c = v.content(ino).unwrap();
        assert_eq!(c.len(), l.bytes);
        assert!(ranges.insert(format!("{c:?}")), "{} twice", l.path);
        for a in &l.aliases {
            assert_eq!(v.tree.resolve(a), Some(ino), "{a}");
        }
    }
    // mlp: the four tensors, each once though several names show it.
    let v = view("mlp.pte");
    let top = largest(&v.tree, 10, &sizes(&v));
    type Row = (String, Option<String>, Option<Vec<i64>>, u64);
    let got: Vec<Row> = top
        .iter()
        .map(|l| {
            (
                l.path.clone(),
                l.scalar_type.clone(),
                l.sizes.clone(),
                l.bytes,
            )
        })
        .collect();
    let f = |p: &str, s: Vec<i64>, b| (p.to_owned(), Some("FLOAT".to_owned()), Some(s), b);
    assert_eq!(
        got,
        [
            f("methods/forward/tensors/0.bin", vec![32, 16], 2048),
            f("methods/forward/tensors/2.bin", vec![8, 32], 1024),
            f("methods/forward/tensors/1.bin", vec![32], 128),
            f("methods/forward/tensors/3.bin", vec![8], 32),
        ]
    );
}

#[test]
fn missing_external_keys_and_the_data_files_that_supply_them() {
    use ptefs::format::{DataFile as Ptd, Parsed, parse};
    use ptefs::meta::external::{missing_keys, suppliers};
    let pte = std::fs::read(fixture("mlp_external.pte")).unwrap();
    let ptd = std::fs::read(fixture("mlp_external.ptd")).unwrap();
    let other = std::fs::read(fixture("xnnpack_external.ptd")).unwrap();
    let Ok(Parsed::Program(p)) = parse(&pte) else {
        panic!()
    };
    fn data(b: &[u8]) -> Ptd<'_> {
        match parse(b) {
            Ok(Parsed::Data(d)) => d,
            _ => panic!("not a data file"),
        }
    }
    let (d, o) = (data(&ptd), data(&other));
    let missing = missing_keys(&p, &[]);
    let shown: Vec<String> = missing.iter().map(|k| k.show().into_owned()).collect();
    assert_eq!(shown, ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]);
    assert!(missing_keys(&p, &[&d]).is_empty());
    let found = suppliers(&missing, &[&o, &d]);
    assert_eq!(found.len(), 1, "only mlp_external.ptd holds them");
    assert_eq!((found[0].0, found[0].1.len()), (1, 4));
    // Shards: each supplies the keys it holds; a later copy adds nothing.
    let shard = |keys: &[&str]| {
        writer::DataFile {
            entries: keys
                .iter()
                .map(|k| (k.to_string(), None, Bytes::Owned(vec![1; 4])))
                .collect(),
        }
        .to_bytes()
    };
    let (a, b) = (
        shard(&["fc1.weight", "fc1.bias"]),
        shard(&["fc2.weight", "fc2.bias"]),
    );
    let (a, b) = (data(&a), data(&b));
    let found = suppliers(&missing, &[&a, &b, &d]);
    let named: Vec<(usize, Vec<String>)> = found
        .iter()
        .map(|(i, ks)| (*i, ks.iter().map(|k| k.show().into_owned()).collect()))
        .collect();
    assert_eq!(
        named,
        [
            (0, vec!["fc1.weight".to_owned(), "fc1.bias".to_owned()]),
            (1, vec!["fc2.weight".to_owned(), "fc2.bias".to_owned()]),
        ]
    );
}
