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

    /// The stack trace's frames, outermost first.
    pub fn frames(&self) -> Vec<Frame> {
        self.stack_trace.as_deref().map(frames).unwrap_or_default()
    }

    /// The model's own line ([`model_frame`]) as `file:line`.
    pub fn source_line(&self) -> Option<String> {
        let frames = self.frames();
        model_frame(&frames).map(|f| format!("{}:{}", f.file, f.line))
    }
}

/// One frame of a stack trace as Python prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The file, as recorded.
    pub file: String,
    /// The line in it.
    pub line: u64,
    /// The function (`forward`).
    pub function: String,
    /// The line's code, when the trace holds it.
    pub code: String,
}

/// The frames of a stack trace as `torch.export` records it (Python's
/// `File "f", line n, in fn` lines, each followed by its code), outermost
/// first.
pub fn frames(trace: &str) -> Vec<Frame> {
    let mut out: Vec<Frame> = Vec::new();
    for line in trace.lines() {
        let t = line.trim_start();
        let parsed = t.strip_prefix("File \"").and_then(|rest| {
            let (file, rest) = rest.split_once('"')?;
            let rest = rest.strip_prefix(", line ")?;
            let (n, function) = rest.split_once(", in ").unwrap_or((rest, ""));
            Some(Frame {
                file: file.to_owned(),
                line: n.trim().parse().ok()?,
                function: function.trim().to_owned(),
                code: String::new(),
            })
        });
        match (parsed, out.last_mut()) {
            (Some(f), _) => out.push(f),
            (None, Some(last)) if last.code.is_empty() => t.clone_into(&mut last.code),
            _ => {}
        }
    }
    out
}

/// Whether `file` is torch's or ExecuTorch's own: a path through a
/// directory named `torch` or `executorch` (their packages, wherever
/// installed).
pub fn is_library(file: &str) -> bool {
    let mut dirs: Vec<&str> = file.split(['/', '\\']).collect();
    dirs.pop();
    dirs.iter().any(|d| matches!(*d, "torch" | "executorch"))
}

/// The frame a user wants of a stack: the innermost in the model's own
/// code, not torch's or ExecuTorch's (`out = self.conv1(x)` rather than
/// the `forward` that called it, or torch's `F.linear` it calls); the
/// innermost of all when every frame is theirs (a bare
/// `nn.TransformerEncoder`).
pub fn model_frame(frames: &[Frame]) -> Option<&Frame> {
    frames.get(model_frame_index(frames)?)
}

/// Where [`model_frame`] is in `frames`.
fn model_frame_index(frames: &[Frame]) -> Option<usize> {
    (frames.iter())
        .rposition(|f| !is_library(&f.file))
        .or(frames.len().checked_sub(1))
}

/// A stack trace as Python prints it, innermost last; the frame at
/// `picked` marked with `>` in the first column.
pub fn stack_text(frames: &[Frame], picked: Option<usize>) -> String {
    let mut o = String::new();
    for (i, f) in frames.iter().enumerate() {
        let mark = if Some(i) == picked { '>' } else { ' ' };
        o.push_str(&format!(
            "{mark} File \"{}\", line {}, in {}\n",
            f.file, f.line, f.function
        ));
        if !f.code.is_empty() {
            o.push_str(&format!("    {}\n", f.code));
        }
    }
    o
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
        "as_float" | "as_floats" => python_floats(v),
        "as_string" => v
            .as_str()
            .map_or_else(|| v.to_string(), |s| format!("{s:?}")),
        _ => v.to_string(),
    }
}

/// The words Python's `json` writes for the floats JSON has no number
/// for, as `json.loads` and torch's deserializer read them back.
const NON_FINITE: [&[u8]; 3] = [b"-Infinity", b"Infinity", b"NaN"];

/// JSON as Python's `json` writes it: standard JSON but for `-Infinity`,
/// `Infinity` and `NaN` outside strings (a `masked_fill(-inf)` or a
/// softmax's mask puts them in an exported program). Each is read as the
/// string of that word, which [`arg_text`] shows as Python prints the
/// float (`-inf`); text without them is parsed as it is.
pub fn python_json(bytes: &[u8]) -> serde_json::Result<Json> {
    match serde_json::from_slice(bytes) {
        Err(e) if e.is_syntax() && has_non_finite(bytes) => {
            serde_json::from_slice(&quote_non_finite(bytes))
        }
        parsed => parsed,
    }
}

fn has_non_finite(bytes: &[u8]) -> bool {
    NON_FINITE[1..]
        .iter()
        .any(|w| bytes.windows(w.len()).any(|x| x == *w))
}

/// `bytes` with each non-finite word outside strings put in quotes.
fn quote_non_finite(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len() + 64);
    let (mut i, mut in_string, mut escaped) = (0, false, false);
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            out.push(b);
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            i += 1;
            continue;
        }
        if b == b'"' {
            in_string = true;
        } else if let Some(w) = NON_FINITE.iter().find(|w| bytes[i..].starts_with(w)) {
            out.push(b'"');
            out.extend_from_slice(w);
            out.push(b'"');
            i += w.len();
            continue;
        }
        out.push(b);
        i += 1;
    }
    out
}

/// A float or list of floats as Python prints them: the non-finite ones
/// [`python_json`] read as words shown as `-inf`, `inf`, `nan`.
fn python_floats(v: &Json) -> String {
    match v {
        Json::String(s) => match s.as_str() {
            "-Infinity" => "-inf".to_owned(),
            "Infinity" => "inf".to_owned(),
            "NaN" => "nan".to_owned(),
            _ => v.to_string(),
        },
        Json::Array(a) => format!(
            "[{}]",
            a.iter().map(python_floats).collect::<Vec<_>>().join(",")
        ),
        _ => v.to_string(),
    }
}

/// The nodes of a serialized exported program: graph inputs as
/// placeholders, the call nodes in order, then the output.
pub fn nodes(program: &[u8]) -> Result<Vec<Node>, String> {
    let j = python_json(program).map_err(|e| format!("program JSON: {e}"))?;
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
        // A node of several outputs, or of one list of tensors (`split`),
        // is read back as itself followed by one `getitem` per output,
        // named by it and with its metadata.
        let listed: Vec<String> = (n.pointer("/outputs/0/as_tensors"))
            .and_then(Json::as_array)
            .filter(|_| outs.len() == 1)
            .map(|ts| {
                ts.iter()
                    .filter_map(|t| t.get("name")?.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let items: Vec<Node> = if outs.len() > 1 || !listed.is_empty() {
            let names: Vec<&str> = if listed.is_empty() {
                outs.iter().map(|o| o.trim_start_matches('%')).collect()
            } else {
                listed.iter().map(String::as_str).collect()
            };
            names
                .iter()
                .enumerate()
                .map(|(i, o)| Node {
                    name: (*o).to_owned(),
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

/// `stacks.txt`: each node's whole stack trace as Python prints it,
/// innermost last, under `%name:`, the frame [`model_frame`] picks marked
/// with `>`.
pub fn stacks_text(nodes: &[Node]) -> String {
    let mut o = String::new();
    for n in nodes {
        let frames = n.frames();
        if frames.is_empty() {
            continue;
        }
        o.push_str(&format!("%{}:\n", n.name));
        o.push_str(&stack_text(&frames, model_frame_index(&frames)));
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRACE: &str = "File \"/src/model.py\", line 105, in forward\n    x = block(x)\n  \
        File \"/src/model.py\", line 75, in forward\n    return self.down(self.up(x))\n  \
        File \"/venv/lib/python3.11/site-packages/torch/nn/modules/linear.py\", line 134, in forward\n    \
        return F.linear(input, self.weight, self.bias)";

    #[test]
    fn the_model_frame_is_the_innermost_outside_torch() {
        let f = frames(TRACE);
        assert_eq!(f.len(), 3);
        assert_eq!(f[1].code, "return self.down(self.up(x))");
        let m = model_frame(&f).unwrap();
        assert_eq!((m.file.as_str(), m.line), ("/src/model.py", 75));
    }

    #[test]
    fn with_every_frame_in_torch_the_innermost_is_taken() {
        let trace = "File \"/usr/lib/python3/site-packages/torch/nn/modules/transformer.py\", line 10, in forward\n    \
            x = self.layers(x)\n  File \"/usr/lib/python3/site-packages/executorch/exir/x.py\", line 3, in f\n    y()";
        let f = frames(trace);
        assert_eq!(model_frame(&f).unwrap().line, 3);
        // torchvision is the model's code, not torch's.
        assert!(!is_library(
            "/venv/site-packages/torchvision/models/resnet.py"
        ));
        assert!(is_library("/venv/site-packages/torch/nn/functional.py"));
    }

    #[test]
    fn stacks_are_printed_innermost_last_with_the_model_frame_marked() {
        let f = frames(TRACE);
        let text = stack_text(&f, model_frame_index(&f));
        assert!(
            text.contains("> File \"/src/model.py\", line 75, in forward\n    return self.down")
        );
        assert!(text.ends_with("    return F.linear(input, self.weight, self.bias)\n"));
    }

    #[test]
    fn python_json_reads_infinities_and_nans_outside_strings() {
        let j =
            python_json(br#"{"a": -Infinity, "b": [Infinity, NaN], "s": "NaN -Infinity \" NaN"}"#)
                .unwrap();
        assert_eq!(python_floats(&j["a"]), "-inf");
        assert_eq!(python_floats(&j["b"]), "[inf,nan]");
        assert_eq!(j["s"], "NaN -Infinity \" NaN");
        assert!(python_json(b"{\"a\": -Infinit}").is_err());
    }
}
