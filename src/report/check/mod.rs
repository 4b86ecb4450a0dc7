//! `check`: will a program load and run on a given runtime? Every reason
//! it would not, per method, in the words the runtime logs, so that one
//! can be grepped against the other.
//!
//! The runtime stops at the first method that fails to load, and within a
//! method at the first kind of failure; this reports every method and
//! every problem.

pub mod alignment;
mod delegates;
mod external;
mod memory;
mod operators;
pub mod refused;
pub mod spec;
mod text;

use serde::Serialize;

use crate::format::{DataFile, ProgramFile};
use delegates::delegates;
use external::external_data;
use memory::arenas;
use operators::{non_portable, operators};
use spec::RuntimeSpec;

/// Error codes of `executorch::runtime::Error`, as `load_method` returns
/// them.
const OPERATOR_MISSING: &str = "0x14 OperatorMissing";
const NOT_FOUND: &str = "0x20 NotFound";
const INVALID_EXTERNAL_DATA: &str = "0x24 InvalidExternalData";
const INVALID_STATE: &str = "0x2 InvalidState";
const DELEGATE_INVALID_COMPATIBILITY: &str = "0x30 DelegateInvalidCompatibility";

/// What a finding is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// An operator with no kernel in the runtime.
    MissingOperator,
    /// An operator the runtime has, but not for the kernel key called.
    MissingKernel,
    /// A delegate whose backend the runtime does not register.
    BackendNotRegistered,
    /// An external tensor or named-data key no data file provides.
    MissingData,
    /// A key provided with another size, element type or shape.
    DataMismatch,
    /// A program needing data from a file, and none given.
    NoData,
    /// A planned memory arena over `--memory-limit`.
    ArenaOverLimit,
    /// An operator found only in a kernel library besides the portable one.
    NonPortableOperator,
    /// A method that only returns constants.
    ConstantMethod,
    /// A data file key the program does not use.
    UnusedData,
    /// A file `Program::load` refuses before any method is loaded.
    ProgramRefused,
    /// A delegate payload its registered backend refuses at init.
    DelegateRefused,
    /// A constant at an offset its element type's alignment does not
    /// divide, which the runtime reads in place.
    Unaligned,
}

/// One problem or warning.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// The method it is in (`None`: the whole program).
    pub method: Option<String>,
    /// What it is about.
    pub kind: Kind,
    /// The operator, backend or key.
    pub name: String,
    /// The operator's index in the plan's operator table.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operator: Option<usize>,
    /// The delegate's index in the plan.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delegate: Option<usize>,
    /// Where the data is, in bytes from the start of its file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    /// The alignment the data needs, in bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alignment: Option<u64>,
    /// The size of what is over a limit (a planned arena), in bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// The limit it is over, in bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
    /// The instructions concerned, by index in their chain.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub instructions: Vec<usize>,
    /// Why it is a problem.
    pub why: String,
    /// What the runtime logs for it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub log: Vec<String>,
    /// The error `load_method` returns for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<&'static str>,
}

/// One method's verdict.
#[derive(Debug, Clone, Serialize)]
pub struct MethodVerdict {
    /// The method.
    pub name: String,
    /// True when it would load and run.
    pub ok: bool,
    /// What the runtime logs when loading it fails, in its order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub log: Vec<String>,
    /// The error `load_method` returns (the first problem's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<&'static str>,
}

/// The runtime a program was checked against.
#[derive(Debug, Clone, Serialize)]
pub struct RuntimeInfo {
    /// The specs added up.
    pub specs: Vec<String>,
    /// The ExecuTorch version, when a spec says.
    pub version: Option<String>,
    /// Operators it has (`None`: every one).
    pub operators: Option<usize>,
    /// Backends it registers.
    pub backends: Vec<String>,
}

impl RuntimeInfo {
    /// What `runtime` is, as a check names it.
    fn of(runtime: &RuntimeSpec) -> Self {
        RuntimeInfo {
            specs: runtime.names.clone(),
            version: runtime.version.clone(),
            operators: runtime.operator_count(),
            backends: runtime.backends().map(str::to_owned).collect(),
        }
    }
}

/// Whether a program loads and runs on a runtime, and why not.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// The program's name.
    pub file: String,
    /// The data files attached.
    pub data: Vec<String>,
    /// The runtime.
    pub runtime: RuntimeInfo,
    /// True when every method would load and run.
    pub ok: bool,
    /// Each method.
    pub methods: Vec<MethodVerdict>,
    /// Why methods would not load or run.
    pub problems: Vec<Finding>,
    /// Facts that do not stop it.
    pub warnings: Vec<Finding>,
}

/// What a check needs besides the program.
#[derive(Debug, Clone, Copy, Default)]
pub struct Limits {
    /// The largest planned memory arena allowed, in bytes.
    pub memory: Option<u64>,
}

/// A finding with only what every kind has.
fn finding(method: Option<&str>, kind: Kind, name: String, why: String) -> Finding {
    Finding {
        method: method.map(str::to_owned),
        kind,
        name,
        operator: None,
        delegate: None,
        offset: None,
        alignment: None,
        bytes: None,
        limit: None,
        instructions: Vec::new(),
        why,
        log: Vec::new(),
        error: None,
    }
}

/// An input that is no program: check runs programs (`.pte`, `.bpte`,
/// `.ptn`).
#[derive(Debug, thiserror::Error)]
#[error("{0}: not an ExecuTorch program (.pte, .bpte or .ptn); check runs programs")]
pub struct NotAProgram(pub String);

/// Checks the program `input` is (or bundles) with the data files of
/// `attached` against `runtime`: what `ptefs check`, `inspect`, `report`
/// and the Python API show.
pub fn check_input(
    input: &crate::tree::Input<'_>,
    attached: &[crate::tree::Input<'_>],
    runtime: &RuntimeSpec,
    limits: Limits,
) -> Result<Check, NotAProgram> {
    let (data, names): (Vec<&DataFile<'_>>, Vec<String>) = attached
        .iter()
        .filter_map(|i| match &i.parsed {
            crate::format::Parsed::Data(d) => Some((d, i.name.clone())),
            _ => None,
        })
        .unzip();
    check_parsed(&input.name, &input.parsed, &data, &names, runtime, limits)
}

/// Checks the file `parsed` (named `file`), if it is a program: a `.pte`,
/// the program a `.bpte` bundles, or a `.ptn`, which the runtime refuses
/// whole.
pub fn check_parsed(
    file: &str,
    parsed: &crate::format::Parsed<'_>,
    data: &[&DataFile<'_>],
    data_names: &[String],
    runtime: &RuntimeSpec,
    limits: Limits,
) -> Result<Check, NotAProgram> {
    let program = match parsed {
        crate::format::Parsed::Program(p) => p,
        crate::format::Parsed::Bundled(b) => &b.program,
        crate::format::Parsed::Package(p) => {
            let why = "a .ptn is a native program package (a zip of a graph and \
                       safetensors); the runtime loads only ExecuTorch flatbuffer programs";
            let problem =
                refused::identifier(p.bytes, why).ok_or_else(|| NotAProgram(file.to_owned()))?;
            let mut c = refused::refused(file, runtime, problem);
            c.data = data_names.to_vec();
            return Ok(c);
        }
        _ => return Err(NotAProgram(file.to_owned())),
    };
    Ok(check(file, program, data, data_names, runtime, limits))
}

/// Checks `program` with `data` (named `data_names`) attached against
/// `runtime`.
pub fn check(
    file: &str,
    program: &ProgramFile<'_>,
    data: &[&DataFile<'_>],
    data_names: &[String],
    runtime: &RuntimeSpec,
    limits: Limits,
) -> Check {
    let mut problems = Vec::new();
    let mut warnings = Vec::new();
    let mut methods = Vec::new();
    let mut used: std::collections::HashSet<&[u8]> = Default::default();
    let spec_name = runtime.names.join(" + ");
    let why = "the program's file identifier is not the one this runtime's schema reads";
    if let Some(p) = refused::identifier(program.bytes, why) {
        let mut c = refused::refused(file, runtime, p);
        c.data = data_names.to_vec();
        return c;
    }
    for m in &program.methods {
        let name = m.name.show().into_owned();
        let before = problems.len();
        // In the order Method::init meets them: values (external data),
        // then delegates, then each instruction's kernel. It stops at the
        // first phase that fails, and logs only what that phase logs.
        let mut phases: Vec<(Vec<Finding>, Vec<String>)> = Vec::new();
        let mut found = Vec::new();
        external_data(program, m, &name, data, &mut used, &mut found);
        let lines = found.iter().take(1).flat_map(|f| f.log.clone()).collect();
        phases.push((found, lines));
        let mut found = Vec::new();
        delegates(program, m, &name, runtime, &spec_name, &mut found);
        let lines = found.iter().take(1).flat_map(|f| f.log.clone()).collect();
        phases.push((found, lines));
        let mut found = Vec::new();
        let mut lines = Vec::new();
        operators(m.plan, &name, runtime, &spec_name, &mut found, &mut lines);
        phases.push((found, lines));
        let first = phases.iter().find(|(f, _)| !f.is_empty());
        let log = first.map(|(_, l)| l.clone()).unwrap_or_default();
        let error = first.and_then(|(f, _)| f.first()).and_then(|f| f.error);
        problems.extend(phases.into_iter().flat_map(|(f, _)| f));
        for w in non_portable(m.plan, &name, runtime) {
            if !warnings.iter().any(|x: &Finding| x.name == w.name) {
                warnings.push(w);
            }
        }
        if let Some(limit) = limits.memory {
            arenas(m.plan, &name, limit, &mut problems);
        }
        if crate::meta::io::constant_value(m.plan).is_some() {
            warnings.push(finding(
                Some(&name),
                Kind::ConstantMethod,
                name.clone(),
                "it runs no instruction and only returns constants".to_owned(),
            ));
        }
        methods.push(MethodVerdict {
            ok: problems.len() == before,
            name,
            log,
            error,
        });
    }
    warnings.extend(alignment::unaligned(file, program, data, data_names));
    for (d, dname) in data.iter().zip(data_names) {
        for e in &d.entries {
            if !used.contains(e.key.bytes()) {
                warnings.push(finding(
                    None,
                    Kind::UnusedData,
                    e.key.show().into_owned(),
                    format!("{dname} holds it; no method of the program uses it"),
                ));
            }
        }
    }
    Check {
        file: file.to_owned(),
        data: data_names.to_vec(),
        runtime: RuntimeInfo::of(runtime),
        ok: problems.is_empty(),
        methods,
        problems,
        warnings,
    }
}
