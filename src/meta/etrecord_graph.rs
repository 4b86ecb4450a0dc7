//! The nodes of a program an ETRecord records (`torch.export`'s serialized
//! JSON): for each, its name, op, target, arguments, debug handle, module
//! stack (`nn_module_stack`) and source line (`stack_trace`), as Inspector
//! reads them from the same metadata.

use serde_json::Value as Json;

/// One module of a node's `nn_module_stack`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Module {
    /// The stack's key (`L__self__l1`).
    pub key: String,
    /// The module's path in the model (`l1`, empty for the root).
    pub path: String,
    /// Its class (`torch.nn.modules.linear.Linear`).
    pub class: String,
}

/// One graph node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// `%name`.
    pub name: String,
    /// `placeholder`, `call_function` or `output`.
    pub op: &'static str,
    /// The target, shortened (`aten.addmm.default`).
    pub target: String,
    /// Arguments as text (`%x`, `[1, 0]`).
    pub args: Vec<String>,
    /// The debug handle, when the node has one.
    pub debug_handle: Option<i64>,
    /// Outermost first.
    pub module_stack: Vec<Module>,
    /// The stack trace as recorded.
    pub stack_trace: Option<String>,
}

impl Node {
    /// The innermost module, if any.
    pub fn module(&self) -> Option<&Module> {
        self.module_stack.last()
    }

    /// The innermost module's path in the model, which is whole already
    /// (`l1`, `block.conv`); empty for the model itself.
    pub fn module_path(&self) -> String {
        self.module_stack
            .iter()
            .rev()
            .find(|m| !m.path.is_empty())
            .map_or(String::new(), |m| m.path.clone())
    }

    /// [`Node::module_path`], `.` for the model itself.
    pub fn shown_module_path(&self) -> String {
        let path = self.module_path();
        if path.is_empty() {
            ".".to_owned()
        } else {
            path
        }
    }

    /// The first frame of the stack trace, the model's own line, as
    /// `file:line`.
    pub fn source_line(&self) -> Option<String> {
        let t = self.stack_trace.as_deref()?;
        let line = t.lines().find(|l| l.trim_start().starts_with("File "))?;
        let rest = line.trim_start().strip_prefix("File \"")?;
        let (file, rest) = rest.split_once('"')?;
        let n = rest.trim_start_matches(", line ").split(',').next()?;
        Some(format!("{file}:{}", n.trim()))
    }
}

/// Parses `nn_module_stack` as serialized: `key,path,class` entries joined
/// with `;`.
pub fn module_stack(s: &str) -> Vec<Module> {
    s.split(';')
        .filter(|e| !e.is_empty())
        .filter_map(|e| {
            let (key, rest) = e.split_once(',')?;
            let (path, class) = rest.rsplit_once(',')?;
            Some(Module {
                key: key.to_owned(),
                path: path.to_owned(),
                class: class.to_owned(),
            })
        })
        .collect()
}

/// The target without the dialect's module prefix.
fn short_target(t: &str) -> String {
    for p in ["executorch.exir.dialects.edge.ops.", "torch.ops."] {
        if let Some(s) = t.strip_prefix(p) {
            return s.to_owned();
        }
    }
    t.to_owned()
}

fn arg_text(a: &Json) -> String {
    let Some((kind, v)) = a.as_object().and_then(|o| o.iter().next()) else {
        return a.to_string();
    };
    let name = |v: &Json| {
        v.get("name")
            .and_then(Json::as_str)
            .map_or_else(|| v.to_string(), |n| format!("%{n}"))
    };
    match kind.as_str() {
        "as_tensor" | "as_sym_int" | "as_sym_bool" | "as_custom_obj" => name(v),
        "as_tensors" | "as_optional_tensors" => format!(
            "[{}]",
            v.as_array()
                .map(|a| a
                    .iter()
                    .map(|t| name(t.get("as_tensor").unwrap_or(t)))
                    .collect::<Vec<_>>())
                .unwrap_or_default()
                .join(", ")
        ),
        "as_none" => "None".to_owned(),
        "as_string" => v
            .as_str()
            .map_or_else(|| v.to_string(), |s| format!("{s:?}")),
        _ => v.to_string(),
    }
}

/// The nodes of a serialized exported program: graph inputs as
/// placeholders, the call nodes in order, then the output.
pub fn nodes(program: &[u8]) -> Result<Vec<Node>, String> {
    let j: Json = serde_json::from_slice(program).map_err(|e| format!("program JSON: {e}"))?;
    let g = j
        .pointer("/graph_module/graph")
        .ok_or("program JSON has no graph_module.graph")?;
    let mut out = Vec::new();
    let empty = Vec::new();
    let list = |k: &str| g.get(k).and_then(Json::as_array).unwrap_or(&empty);
    for i in list("inputs") {
        let text = arg_text(i);
        out.push(Node {
            name: text.trim_start_matches('%').to_owned(),
            op: "placeholder",
            target: text.trim_start_matches('%').to_owned(),
            args: Vec::new(),
            debug_handle: None,
            module_stack: Vec::new(),
            stack_trace: None,
        });
    }
    for n in list("nodes") {
        let meta = n.get("metadata");
        let field = |k: &str| meta.and_then(|m| m.get(k)).and_then(Json::as_str);
        let outs = n
            .get("outputs")
            .and_then(Json::as_array)
            .map(|o| o.iter().map(arg_text).collect::<Vec<_>>())
            .unwrap_or_default();
        let name = n
            .get("name")
            .and_then(Json::as_str)
            .map(str::to_owned)
            .or_else(|| outs.first().map(|o| o.trim_start_matches('%').to_owned()))
            .unwrap_or_default();
        let node = Node {
            name,
            op: "call_function",
            target: short_target(n.get("target").and_then(Json::as_str).unwrap_or("")),
            args: n
                .get("inputs")
                .and_then(Json::as_array)
                .map(|a| {
                    a.iter()
                        .map(|i| {
                            let v = i.get("arg").map(arg_text).unwrap_or_default();
                            match i.get("kind").and_then(Json::as_i64) {
                                Some(2) => format!(
                                    "{}={v}",
                                    i.get("name").and_then(Json::as_str).unwrap_or("")
                                ),
                                _ => v,
                            }
                        })
                        .collect()
                })
                .unwrap_or_default(),
            debug_handle: field("debug_handle").and_then(|h| h.parse().ok()),
            module_stack: field("nn_module_stack")
                .map(module_stack)
                .unwrap_or_default(),
            stack_trace: field("stack_trace").map(str::to_owned),
        };
        // A node of several outputs is read back as itself followed by one
        // `getitem` per output, named by it and with its metadata.
        let items: Vec<Node> = if outs.len() > 1 {
            outs.iter()
                .enumerate()
                .map(|(i, o)| Node {
                    name: o.trim_start_matches('%').to_owned(),
                    target: "getitem".to_owned(),
                    args: vec![format!("%{}", node.name), i.to_string()],
                    ..node.clone()
                })
                .collect()
        } else {
            Vec::new()
        };
        out.push(node);
        out.extend(items);
    }
    out.push(Node {
        name: "output".to_owned(),
        op: "output",
        target: "output".to_owned(),
        args: list("outputs").iter().map(arg_text).collect(),
        debug_handle: None,
        module_stack: Vec::new(),
        stack_trace: None,
    });
    Ok(out)
}

/// `graph.txt`: one node a line, `%name = target(args)`, then the module
/// path with its class and the source line as a comment.
pub fn graph_text(nodes: &[Node]) -> String {
    let mut o = String::new();
    for n in nodes {
        let call = match n.op {
            "placeholder" => format!("%{} = placeholder", n.name),
            "output" => format!("return ({})", n.args.join(", ")),
            _ => format!("%{} = {}({})", n.name, n.target, n.args.join(", ")),
        };
        o.push_str(&call);
        if let Some(m) = n.module() {
            o.push_str(&format!("  # {} ({})", n.shown_module_path(), m.class));
            if let Some(s) = n.source_line() {
                o.push_str(&format!(" {s}"));
            }
        }
        o.push('\n');
    }
    o
}

/// `nodes.tsv`: node, op, target, debug handle, module hierarchy (the
/// stack's paths and classes, outermost first), and the source line.
pub fn nodes_tsv(nodes: &[Node]) -> String {
    let clean = |s: &str| s.replace(['\t', '\n'], " ");
    let mut o = String::from("node\top\ttarget\tdebug_handle\tmodule_hierarchy\tstack_frame\n");
    for n in nodes {
        let hierarchy = n
            .module_stack
            .iter()
            .map(|m| format!("{}:{}", m.path, m.class))
            .collect::<Vec<_>>()
            .join(";");
        o.push_str(&format!(
            "{}\t{}\t{}\t{}\t{}\t{}\n",
            clean(&n.name),
            n.op,
            clean(&n.target),
            n.debug_handle.map_or(String::new(), |h| h.to_string()),
            clean(&hierarchy),
            clean(&n.source_line().unwrap_or_default()),
        ));
    }
    o
}
