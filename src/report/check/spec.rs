//! Runtime specs: which operators (with the kernel keys they have kernels
//! for, where known) and which backends a runtime registers.
//!
//! A spec is built in (`executorch-1.5.1`, `portable`), the JSON a Python
//! runtime prints (`{"operators": [...], "backends": [...]}`), or a
//! selective build's `selected_operators.yaml` (the format of the tree's
//! `ops.yaml`). Several specs add up, as linked kernel libraries do.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Deserialize;

/// What ExecuTorch 1.5.1's PyPI runtime registers, written by
/// `scripts/gen-runtime-spec.py`.
const EXECUTORCH_1_5_1: &str = include_str!("executorch-1.5.1.json");

/// Names of the built-in specs.
pub const BUILTIN: &[&str] = &["executorch-1.5.1", "portable"];

/// The default spec.
pub const DEFAULT: &str = "executorch-1.5.1";

/// Spec files larger than this are refused rather than read.
const MAX_SPEC_BYTES: u64 = 64 << 20;

/// Which kernels a runtime has for one operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kernels {
    /// A kernel for every kernel key (a default kernel, or keys unknown).
    Any,
    /// Kernels for these keys (`v1/6;0,1|6;0,1`) only.
    Keys(BTreeSet<String>),
}

/// One runtime spec, or several added up.
#[derive(Debug, Clone, Default)]
pub struct RuntimeSpec {
    /// What the spec is called: a built-in name or the file given.
    pub names: Vec<String>,
    /// The ExecuTorch version, when the spec says.
    pub version: Option<String>,
    operators: BTreeMap<String, Kernels>,
    backends: BTreeSet<String>,
    /// `include_all_operators: true`: every operator, every key.
    all_operators: bool,
    /// Built with `ET_ENABLE_DEPRECATED_CONSTANT_BUFFER`: it loads programs
    /// keeping their constants in `Program.constant_buffer` (exported
    /// before ExecuTorch 0.7). Off unless a spec says so, as in ExecuTorch
    /// 1.5.1's own build.
    pub deprecated_constant_buffer: bool,
}

/// A spec that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    /// The file cannot be read.
    #[error("{path}: {error}")]
    Read {
        /// The file given.
        path: String,
        /// Why.
        error: String,
    },
    /// The file is not a spec.
    #[error("{path}: not a runtime spec: {why}")]
    Invalid {
        /// The file given.
        path: String,
        /// What is wrong, and where.
        why: String,
    },
}

/// The JSON a Python runtime's one-liner prints.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonSpec {
    #[serde(default)]
    version: Option<String>,
    #[serde(default)]
    operators: Vec<String>,
    #[serde(default)]
    backends: Vec<String>,
    #[serde(default)]
    deprecated_constant_buffer: bool,
}

impl RuntimeSpec {
    /// A built-in spec, or the spec file at `arg`, or several of them
    /// joined by `+` and added up (`executorch-1.5.1+my_ops.yaml`).
    pub fn load(arg: &str) -> Result<RuntimeSpec, SpecError> {
        match Self::load_one(arg) {
            Err(_) if arg.contains('+') => Ok(Self::merge(
                arg.split('+')
                    .map(Self::load_one)
                    .collect::<Result<Vec<_>, _>>()?,
            )),
            one => one,
        }
    }

    /// A built-in spec, or the spec file at `arg`.
    fn load_one(arg: &str) -> Result<RuntimeSpec, SpecError> {
        if let Some(s) = Self::builtin(arg) {
            return Ok(s);
        }
        let path = Path::new(arg);
        let read = |error: String| SpecError::Read {
            path: arg.to_owned(),
            error,
        };
        let meta = std::fs::metadata(path).map_err(|e| {
            read(format!(
                "{e} (not a file, nor a built-in spec: {})",
                BUILTIN.join(", ")
            ))
        })?;
        if meta.len() > MAX_SPEC_BYTES {
            return Err(read(format!(
                "{} bytes; a spec file is at most {MAX_SPEC_BYTES}",
                meta.len()
            )));
        }
        let bytes = std::fs::read(path).map_err(|e| read(e.to_string()))?;
        Self::parse(arg, &bytes)
    }

    /// The built-in spec `name`.
    pub fn builtin(name: &str) -> Option<RuntimeSpec> {
        match name {
            "executorch-1.5.1" => {
                let mut s = Self::parse(name, EXECUTORCH_1_5_1.as_bytes()).ok()?;
                s.version = Some("1.5.1".to_owned());
                Some(s)
            }
            "portable" => {
                // The runtime's own primitive operators come with it.
                let prim: Vec<String> = Self::builtin(DEFAULT)?
                    .operators
                    .into_keys()
                    .filter(|o| is_prim(o))
                    .collect();
                Some(RuntimeSpec {
                    names: vec![name.to_owned()],
                    version: None,
                    operators: crate::report::summary::coverage::portable_ops()
                        .map(str::to_owned)
                        .chain(prim)
                        .map(|o| (o, Kernels::Any))
                        .collect(),
                    backends: BTreeSet::new(),
                    all_operators: false,
                    deprecated_constant_buffer: false,
                })
            }
            _ => None,
        }
    }

    /// The spec in `bytes` (JSON or `selected_operators.yaml`), named
    /// `name` in messages.
    pub fn parse(name: &str, bytes: &[u8]) -> Result<RuntimeSpec, SpecError> {
        let invalid = |why: String| SpecError::Invalid {
            path: name.to_owned(),
            why,
        };
        let text = std::str::from_utf8(bytes)
            .map_err(|e| invalid(format!("not UTF-8 text (byte {})", e.valid_up_to())))?;
        let spec = if text.trim_start().starts_with('{') {
            let j: JsonSpec = serde_json::from_str(text).map_err(|e| invalid(e.to_string()))?;
            let spec = RuntimeSpec {
                names: Vec::new(),
                version: j.version,
                operators: j.operators.into_iter().map(|o| (o, Kernels::Any)).collect(),
                backends: j.backends.into_iter().collect(),
                all_operators: false,
                deprecated_constant_buffer: j.deprecated_constant_buffer,
            };
            // Most likely some other JSON file. A YAML that names nothing
            // is a real answer: the selective build of a program whose
            // every call is delegated.
            if spec.operators.is_empty() && spec.backends.is_empty() {
                return Err(invalid(
                    "it names no operators and no backends (expected the JSON of \
                     `operators` and `backends`, or a selected_operators.yaml)"
                        .to_owned(),
                ));
            }
            spec
        } else {
            selected_operators(text).map_err(invalid)?
        };
        if let Some(bad) = spec
            .operators
            .keys()
            .chain(&spec.backends)
            .find(|n| n.is_empty() || n.chars().any(char::is_control))
        {
            return Err(invalid(format!(
                "the name {} is empty or holds control characters",
                serde_json::to_string(bad).unwrap_or_default()
            )));
        }
        let mut spec = spec;
        spec.names.push(name.to_owned());
        Ok(spec)
    }

    /// `specs` added up: every operator, key and backend of any of them.
    pub fn merge(specs: impl IntoIterator<Item = RuntimeSpec>) -> RuntimeSpec {
        let mut out = RuntimeSpec::default();
        for s in specs {
            out.names.extend(s.names);
            out.version = out.version.or(s.version);
            out.all_operators |= s.all_operators;
            out.deprecated_constant_buffer |= s.deprecated_constant_buffer;
            out.backends.extend(s.backends);
            for (op, k) in s.operators {
                match (out.operators.get_mut(&op), k) {
                    (None, k) => {
                        out.operators.insert(op, k);
                    }
                    (Some(Kernels::Keys(have)), Kernels::Keys(more)) => have.extend(more),
                    (Some(have), Kernels::Any) => *have = Kernels::Any,
                    (Some(Kernels::Any), Kernels::Keys(_)) => {}
                }
            }
        }
        out
    }

    /// The kernels for `op` (`aten::add.out`), `None` when there is none.
    pub fn kernels(&self, op: &str) -> Option<&Kernels> {
        if self.all_operators {
            return Some(&Kernels::Any);
        }
        self.operators.get(op).or_else(|| {
            op.strip_suffix(".default")
                .and_then(|o| self.operators.get(o))
        })
    }

    /// True when the runtime has a kernel for `op` called with `key`.
    pub fn has_kernel(&self, op: &str, key: &str) -> bool {
        match self.kernels(op) {
            None => false,
            Some(Kernels::Any) => true,
            Some(Kernels::Keys(keys)) => keys.contains(key) || keys.contains("default"),
        }
    }

    /// True when the backend `id` is registered.
    pub fn has_backend(&self, id: &str) -> bool {
        self.backends.contains(id)
    }

    /// How many operators it has (`None`: all of them).
    pub fn operator_count(&self) -> Option<usize> {
        (!self.all_operators).then_some(self.operators.len())
    }

    /// Its backends, sorted.
    pub fn backends(&self) -> impl Iterator<Item = &str> {
        self.backends.iter().map(String::as_str)
    }
}

/// True for the operators the runtime registers itself
/// (`register_prim_ops`), with every kernel library or none.
pub fn is_prim(op: &str) -> bool {
    op.starts_with("executorch_prim::")
        || matches!(
            op,
            "aten::sym_size.int" | "aten::sym_numel" | "aten::_local_scalar_dense"
        )
}

/// A YAML scalar as `selected_operators.yaml` writes keys: plain,
/// single-quoted or double-quoted.
fn scalar(s: &str, line: usize) -> Result<String, String> {
    let s = s.trim();
    if s.starts_with('"') {
        serde_json::from_str(s).map_err(|e| format!("line {line}: bad quoted name {s}: {e}"))
    } else if let Some(inner) = s.strip_prefix('\'') {
        inner
            .strip_suffix('\'')
            .map(|i| i.replace("''", "'"))
            .ok_or_else(|| format!("line {line}: unterminated quoted name {s}"))
    } else {
        Ok(s.to_owned())
    }
}

/// The names of a section's value given on its own line in flow style
/// (`[a, "b"]`, or `{}` for none); none for a block that follows.
fn flow_items(value: &str, line: usize) -> Result<Vec<String>, String> {
    let v = value.trim();
    if v.is_empty() || v == "{}" {
        return Ok(Vec::new());
    }
    let Some(inner) = v.strip_prefix('[').and_then(|v| v.strip_suffix(']')) else {
        return Err(format!(
            "line {line}: expected a list (`[a, b]`) or the names on the lines below, \
             found {}",
            serde_json::to_string(v).unwrap_or_default()
        ));
    };
    inner
        .split(',')
        .map(str::trim)
        .filter(|i| !i.is_empty())
        .map(|i| scalar(i, line))
        .collect()
}

/// A selective build's `selected_operators.yaml` (the names under
/// `operators:` and the keys under `et_kernel_metadata:`; other sections
/// are read past), or the YAML of the JSON spec, as `yaml.safe_dump`
/// writes it: `operators:` and `backends:` lists and a `version:`.
fn selected_operators(text: &str) -> Result<RuntimeSpec, String> {
    #[derive(PartialEq)]
    enum Section {
        Operators,
        Backends,
        Metadata,
        Other,
    }
    let mut section = Section::Other;
    let mut spec = RuntimeSpec::default();
    let mut keys: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut current: Option<String> = None;
    let mut seen_section = false;
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let content = raw.trim_end();
        if content.trim_start().is_empty() || content.trim_start().starts_with('#') {
            continue;
        }
        if content.starts_with('\t') {
            return Err(format!("line {line}: indented with a tab"));
        }
        let indent = content.len() - content.trim_start().len();
        let body = content.trim_start();
        // A list item of `operators:` or `backends:`, at any indent.
        if let Some(item) = body.strip_prefix("- ")
            && matches!(section, Section::Operators | Section::Backends)
        {
            let name = scalar(item, line)?;
            if section == Section::Operators {
                spec.operators.insert(name, Kernels::Any);
            } else {
                spec.backends.insert(name);
            }
            continue;
        }
        if indent == 0 {
            let Some((k, v)) = body.split_once(':') else {
                return Err(format!(
                    "line {line}: expected `name:` at the top level, found {}",
                    serde_json::to_string(body).unwrap_or_default()
                ));
            };
            section = match k {
                "operators" | "backends" => {
                    seen_section = true;
                    let into = if k == "operators" {
                        Section::Operators
                    } else {
                        Section::Backends
                    };
                    for name in flow_items(v, line)? {
                        match into {
                            Section::Operators => {
                                spec.operators.insert(name, Kernels::Any);
                            }
                            _ => {
                                spec.backends.insert(name);
                            }
                        }
                    }
                    into
                }
                "et_kernel_metadata" => Section::Metadata,
                "version" => {
                    spec.version = Some(scalar(v, line)?);
                    Section::Other
                }
                "include_all_operators" => {
                    spec.all_operators = v.trim() == "true";
                    Section::Other
                }
                _ => Section::Other,
            };
            current = None;
            continue;
        }
        match section {
            Section::Operators if indent == 2 => {
                let name = body
                    .strip_suffix(':')
                    .ok_or_else(|| format!("line {line}: expected `operator:`"))?;
                spec.operators.insert(scalar(name, line)?, Kernels::Any);
            }
            Section::Metadata => {
                if let Some(item) = body.strip_prefix("- ") {
                    let op = current
                        .clone()
                        .ok_or_else(|| format!("line {line}: a kernel key before its operator"))?;
                    keys.entry(op).or_default().insert(scalar(item, line)?);
                } else if let Some(name) = body.strip_suffix(':') {
                    let name = scalar(name, line)?;
                    keys.entry(name.clone()).or_default();
                    current = Some(name);
                } else {
                    return Err(format!("line {line}: expected `operator:` or `- key`"));
                }
            }
            _ => {}
        }
    }
    if !seen_section {
        return Err("no `operators:` or `backends:` section".to_owned());
    }
    for (op, ks) in keys {
        if !ks.is_empty() {
            spec.operators.insert(op, Kernels::Keys(ks));
        }
    }
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_executorch_has_its_operators_and_backends() {
        let s = RuntimeSpec::builtin("executorch-1.5.1").unwrap();
        assert_eq!(s.operator_count(), Some(240));
        let b: Vec<&str> = s.backends().collect();
        assert_eq!(b, ["OpenvinoBackend", "QnnBackend", "XnnpackBackend"]);
        assert!(s.has_kernel("aten::add.out", "v1/6;0,1"));
        assert!(!s.has_kernel("aten::triu.out", "v1"));
        let portable = RuntimeSpec::builtin("portable").unwrap();
        assert!(portable.has_kernel("executorch_prim::et_view.default", "v1"));
        assert!(portable.has_kernel("aten::add.out", "v1"));
        assert!(!portable.has_kernel("aten::linear.out", "v1"));
    }

    #[test]
    fn a_yaml_may_name_nothing_or_list_names_in_flow_style() {
        // The selective build of a program whose every call is delegated.
        let none = "build_features: []\noperators: {}\nkernel_metadata: {}\n";
        let s = RuntimeSpec::parse("none.yaml", none.as_bytes()).unwrap();
        assert_eq!(s.operator_count(), Some(0));
        let flow = "operators: [aten::add.out, \"aten::mul.out\"]\nbackends: [XnnpackBackend]\n";
        let s = RuntimeSpec::parse("flow.yaml", flow.as_bytes()).unwrap();
        assert!(s.has_kernel("aten::mul.out", "v1"));
        assert_eq!(s.backends().collect::<Vec<_>>(), ["XnnpackBackend"]);
        let err = |t: &str| {
            RuntimeSpec::parse("x.yaml", t.as_bytes())
                .unwrap_err()
                .to_string()
        };
        assert!(err("build_features: []\n").contains("no `operators:` or `backends:` section"));
        assert!(err("operators: aten::add.out\n").contains("line 1: expected a list"));
        assert!(err("{\"operators\": []}").contains("names no operators and no backends"));
    }

    #[test]
    fn kernel_keys_restrict_an_operator() {
        let y = "build_features: []\net_kernel_metadata:\n  \"aten::add.out\":\n  - \"v1/6;0,1|6;0,1\"\noperators:\n  \"aten::add.out\":\n    include_all_overloads: false\n  aten::mul.out:\n    is_root_operator: true\n";
        let s = RuntimeSpec::parse("sel.yaml", y.as_bytes()).unwrap();
        assert!(s.has_kernel("aten::add.out", "v1/6;0,1|6;0,1"));
        assert!(!s.has_kernel("aten::add.out", "v1/7;0,1|7;0,1"));
        assert!(s.has_kernel("aten::mul.out", "v1/7;0"));
        let merged = RuntimeSpec::merge([s, RuntimeSpec::builtin("portable").unwrap()]);
        assert!(merged.has_kernel("aten::add.out", "v1/7;0,1|7;0,1"));
        assert_eq!(merged.names, ["sel.yaml", "portable"]);
    }

    #[test]
    fn the_yaml_of_a_json_spec_reads_as_the_json() {
        let yaml = "backends:\n- XnnpackBackend\noperators:\n- aten::add.out\n- 'aten::mul.out'\nversion: 1.5.1\n";
        let json = r#"{"backends": ["XnnpackBackend"], "operators": ["aten::add.out", "aten::mul.out"], "version": "1.5.1"}"#;
        let (y, j) = (
            RuntimeSpec::parse("s", yaml.as_bytes()).unwrap(),
            RuntimeSpec::parse("s", json.as_bytes()).unwrap(),
        );
        assert_eq!(y.operator_count(), Some(2));
        assert_eq!(
            y.operators.keys().collect::<Vec<_>>(),
            j.operators.keys().collect::<Vec<_>>()
        );
        assert_eq!(y.backends, j.backends);
        assert_eq!(
            (y.version.as_deref(), j.version.as_deref()),
            (Some("1.5.1"), Some("1.5.1"))
        );
    }

    #[test]
    fn hostile_specs_are_refused_with_what_is_wrong() {
        let cases: &[(&[u8], &str)] = &[
            (b"\xff\xfe", "not UTF-8"),
            (b"{\"operators\": 3}", "invalid type"),
            (b"{\"ops\": []}", "unknown field"),
            (b"{}", "no operators and no backends"),
            (b"operators:\n\t\"a\":\n", "line 2: indented with a tab"),
            (b"operators:\n  \"a\n", "line 2"),
            (
                b"et_kernel_metadata:\n  - \"v1\"\n",
                "line 2: a kernel key before",
            ),
            (b"{\"backends\": [\"\\u0007\"]}", "control characters"),
            (b"just text", "line 1"),
            (b"backends:\n- \"Xnn\n", "line 2: bad quoted name"),
            (b"backends:\n- ''\n", "empty or holds control characters"),
        ];
        for (bytes, want) in cases {
            let e = RuntimeSpec::parse("bad.json", bytes)
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("bad.json: not a runtime spec"), "{e}");
            assert!(e.contains(want), "{e} lacks {want}");
        }
    }
}
