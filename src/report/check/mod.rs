//! `check`: will a program load and run on a given runtime? Every reason
//! it would not, per method, in the words the runtime logs, so that one
//! can be grepped against the other.
//!
//! The runtime stops at the first method that fails to load, and within a
//! method at the first kind of failure; this reports every method and
//! every problem.

pub mod alignment;
pub mod refused;
pub mod spec;

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;

use serde::Serialize;

use crate::format::{DataFile, Name, ProgramFile, TensorData, operator_name};
use crate::meta::{external, oplist};
use crate::report::summary::text::human;
use crate::schema::program as fb;
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

/// The kernel calls of `plan`, each as (instruction index in its chain,
/// the call).
fn kernel_calls<'a>(plan: fb::ExecutionPlan<'a>) -> Vec<(usize, fb::KernelCall<'a>)> {
    plan.chains()
        .iter()
        .flatten()
        .flat_map(|c| c.instructions().into_iter().flatten().enumerate())
        .filter_map(|(i, ins)| Some((i, ins.instr_args_as_kernel_call()?)))
        .collect()
}

/// Operators without a kernel for a call: one finding per operator, and
/// the runtime's log lines, one per instruction as it logs them.
fn operators(
    plan: fb::ExecutionPlan<'_>,
    method: &str,
    runtime: &RuntimeSpec,
    spec_name: &str,
    problems: &mut Vec<Finding>,
    log: &mut Vec<String>,
) {
    let mut by_op: BTreeMap<usize, (Finding, bool)> = BTreeMap::new();
    let mut missing_instructions = 0;
    for (i, k) in kernel_calls(plan) {
        let Ok(index) = usize::try_from(k.op_index()) else {
            continue;
        };
        let Some(op) = operator_name(plan, k.op_index()) else {
            continue;
        };
        let key = oplist::kernel_key(plan, k);
        if runtime.has_kernel(&op, &key) {
            continue;
        }
        let known = runtime.kernels(&op).is_some();
        missing_instructions += 1;
        let line = format!("Missing operator: [{index}] {op}");
        if known {
            log.push(format!("kernel '{op}' not found."));
        }
        log.push(line.clone());
        let (f, _) = by_op.entry(index).or_insert_with(|| {
            let why = if known {
                format!("{spec_name} has kernels for {op}, none for the kernel key {key}")
            } else {
                format!("{spec_name} has no kernel for it")
            };
            let mut f = finding(
                Some(method),
                if known {
                    Kind::MissingKernel
                } else {
                    Kind::MissingOperator
                },
                op.clone(),
                why,
            );
            f.operator = Some(index);
            f.log.push(line);
            f.error = Some(OPERATOR_MISSING);
            (f, known)
        });
        f.instructions.push(i);
    }
    if missing_instructions > 0 {
        log.push(format!(
            "There are {missing_instructions} instructions don't have corresponding \
             operator registered. See logs for details"
        ));
    }
    problems.extend(by_op.into_values().map(|(f, _)| f));
}

/// Operators the runtime has that the portable kernel library lacks.
fn non_portable(plan: fb::ExecutionPlan<'_>, method: &str, runtime: &RuntimeSpec) -> Vec<Finding> {
    let n = plan.operators().map_or(0, |o| o.len());
    (0..n)
        .filter_map(|i| {
            let op = operator_name(plan, i as i32)?;
            (runtime.kernels(&op).is_some() && !crate::report::summary::coverage::in_portable(&op))
                .then(|| {
                    let mut f = finding(
                        Some(method),
                        Kind::NonPortableOperator,
                        op,
                        "not in the portable kernel library: the runtime must link the \
                     kernel library that has it (optimized, quantized or custom)"
                            .to_owned(),
                    );
                    f.operator = Some(i);
                    f
                })
        })
        .collect()
}

/// Delegates whose backend is not registered.
fn delegates(
    program: &ProgramFile<'_>,
    m: &crate::format::MethodInfo<'_>,
    method: &str,
    runtime: &RuntimeSpec,
    spec_name: &str,
    problems: &mut Vec<Finding>,
) {
    for d in &m.delegates {
        let id = d.id.show().into_owned();
        if runtime.has_backend(&id) {
            problems.extend(refused_payload(program, d, method));
            continue;
        }
        let calls: Vec<usize> = m
            .plan
            .chains()
            .iter()
            .flatten()
            .flat_map(|c| c.instructions().into_iter().flatten().enumerate())
            .filter(|(_, ins)| {
                ins.instr_args_as_delegate_call()
                    .is_some_and(|c| usize::try_from(c.delegate_index()).ok() == Some(d.index))
            })
            .map(|(i, _)| i)
            .collect();
        let mut f = finding(
            Some(method),
            Kind::BackendNotRegistered,
            id.clone(),
            format!("{spec_name} registers no backend {id}"),
        );
        f.delegate = Some(d.index);
        f.instructions = calls;
        f.log.push(format!("Backend {id} is not registered."));
        f.error = Some(NOT_FOUND);
        problems.push(f);
    }
}

/// A delegate whose payload its backend refuses at init: an XNNPACK
/// flatbuffer with an identifier (format version) other than the ones
/// the backend reads, or a TensorRT blob whose header its backend's
/// parser refuses.
fn refused_payload(
    program: &ProgramFile<'_>,
    d: &crate::format::Delegate<'_>,
    method: &str,
) -> Option<Finding> {
    let (id, span) = d.id.as_str().zip(d.processed)?;
    let payload = span.bytes(program.bytes);
    match id {
        "XnnpackBackend" => refused_xnnpack(payload, d.index, method),
        crate::delegate::tensorrt::BACKEND_ID => refused_tensorrt(payload, d.index, method),
        _ => None,
    }
}

/// A TensorRT blob whose header `TensorRTBlobHeader::parse` refuses: a
/// magic other than TR01 or TR02, or offsets and sizes it rejects. What
/// that backend logs is not known here, so the finding has no log line.
fn refused_tensorrt(payload: &[u8], index: usize, method: &str) -> Option<Finding> {
    let id = crate::delegate::tensorrt::BACKEND_ID;
    let refusals = match crate::delegate::tensorrt::header(payload) {
        Some(h) => h.refusals(payload.len() as u64),
        None => vec![format!(
            "the payload is {} bytes, shorter than its header",
            payload.len()
        )],
    };
    if refusals.is_empty() {
        return None;
    }
    let mut f = finding(
        Some(method),
        Kind::DelegateRefused,
        id.to_owned(),
        format!(
            "the backend refuses its blob header: {}",
            refusals.join("; ")
        ),
    );
    f.delegate = Some(index);
    Some(f)
}

/// An XNNPACK payload whose flatbuffer identifier the backend does not
/// read.
fn refused_xnnpack(payload: &[u8], index: usize, method: &str) -> Option<Finding> {
    let id = "XnnpackBackend";
    let found = crate::delegate::xnnpack::header::refused_identifier(payload)?;
    let shown =
        String::from_utf8_lossy(found.split(|&b| b == 0).next().unwrap_or_default()).into_owned();
    let mut f = finding(
        Some(method),
        Kind::DelegateRefused,
        id.to_owned(),
        format!(
            "its payload's flatbuffer identifier is {:?}; the backend reads XN00 and XN01",
            found.escape_ascii().to_string()
        ),
    );
    f.delegate = Some(index);
    f.log.push(format!(
        "XNNPACK Delegate Serialization Format version identifier '{shown}' != expected XN00 or XN01'"
    ));
    f.log
        .push("XNNCompiler::compileModel failed: 0x30".to_owned());
    f.log.push(format!("Init failed for backend {id}: 0x30"));
    f.error = Some(DELEGATE_INVALID_COMPATIBILITY);
    Some(f)
}

/// External tensors and delegates' named data that no data file provides
/// as the program expects it.
fn external_data<'p>(
    program: &ProgramFile<'p>,
    m: &crate::format::MethodInfo<'p>,
    method: &str,
    data: &[&DataFile<'_>],
    used: &mut std::collections::HashSet<&'p [u8]>,
    problems: &mut Vec<Finding>,
) {
    let externals: Vec<_> = m
        .tensors
        .iter()
        .filter_map(|t| match t.data {
            TensorData::External { key } => Some((t, key)),
            _ => None,
        })
        .collect();
    let delegate_keys: Vec<(usize, &str, Name<'p>)> = m
        .delegates
        .iter()
        .flat_map(|d| {
            let id = d.id.as_str().unwrap_or("");
            crate::delegate::delegate_named_keys(program, d)
                .into_iter()
                .map(move |k| (d.index, id, k))
        })
        .collect();
    for (_, key) in &externals {
        used.insert(key.bytes());
    }
    for (_, _, key) in &delegate_keys {
        used.insert(key.bytes());
    }
    let named_in_program = |k: Name<'_>| program.named.iter().any(|n| n.key == k);
    let needs_file =
        !externals.is_empty() || delegate_keys.iter().any(|(_, _, k)| !named_in_program(*k));
    if data.is_empty() && needs_file {
        let mut f = finding(
            Some(method),
            Kind::NoData,
            method.to_owned(),
            format!(
                "it needs {} from a data file (.ptd), and none is attached",
                count_keys(externals.len(), delegate_keys.len())
            ),
        );
        if !externals.is_empty() {
            f.log.push("external_data_map is null".to_owned());
            f.error = Some(INVALID_STATE);
        }
        problems.push(f);
    }
    for (t, key) in &externals {
        let shown = key.show().into_owned();
        match external::find(data.iter().copied(), *key) {
            None if !data.is_empty() => {
                let mut f = finding(
                    Some(method),
                    Kind::MissingData,
                    shown.clone(),
                    format!(
                        "external tensor (value {}) that no attached data file holds",
                        t.value_index
                    ),
                );
                f.log
                    .push(format!("Failed to get metadata for key {shown}"));
                f.error = Some(NOT_FOUND);
                problems.push(f);
            }
            None => {}
            Some((_, e)) => {
                let (wrong, lines) = layout_mismatch(e, t);
                if !wrong.is_empty() {
                    let mut f = finding(
                        Some(method),
                        Kind::DataMismatch,
                        shown,
                        format!(
                            "external tensor (value {}): the data file has {}",
                            t.value_index,
                            wrong.join(", ")
                        ),
                    );
                    f.log = lines;
                    f.error = Some(INVALID_EXTERNAL_DATA);
                    problems.push(f);
                }
            }
        }
    }
    let held: HashMap<&[u8], ()> = data
        .iter()
        .flat_map(|d| d.entries.iter().map(|e| (e.key.bytes(), ())))
        .collect();
    let mut seen = std::collections::HashSet::new();
    for (index, id, key) in &delegate_keys {
        if named_in_program(*key) || held.contains_key(key.bytes()) || data.is_empty() {
            continue;
        }
        if !seen.insert(key.bytes()) {
            continue;
        }
        let shown = key.show().into_owned();
        let mut f = finding(
            Some(method),
            Kind::MissingData,
            shown.clone(),
            format!(
                "named data of its {id} delegate that neither the program nor an \
                 attached data file holds"
            ),
        );
        f.delegate = Some(*index);
        // The backend asks for the key while it initialises, and fails
        // its init with the data map's NotFound.
        if *id == "XnnpackBackend" {
            f.log.push(format!(
                "Failed to get constant data for key {shown} from named_data_map. \
                 Error code: 32"
            ));
            f.log
                .push("XNNCompiler::compileModel failed: 0x20".to_owned());
        }
        f.log.push(format!("Init failed for backend {id}: 0x20"));
        f.error = Some(NOT_FOUND);
        problems.push(f);
    }
}

/// How a data file's entry differs from the external tensor it is for:
/// each difference, and the line the runtime logs for the first (it checks
/// element type, then rank, then each size, then the dim order).
fn layout_mismatch(
    e: &crate::format::DataEntry<'_>,
    t: &crate::format::TensorInfo<'_>,
) -> (Vec<String>, Vec<String>) {
    let mut wrong = Vec::new();
    let mut lines = Vec::new();
    if let Some(l) = &e.layout {
        if l.scalar_type != t.scalar_type {
            wrong.push(format!(
                "element type {} where the program expects {}",
                crate::format::scalar::name(l.scalar_type),
                crate::format::scalar::name(t.scalar_type)
            ));
            lines.push(format!(
                "Scalar type mismatch. Expected {}, got {}.",
                t.scalar_type.0, l.scalar_type.0
            ));
        }
        if *l.sizes != *t.sizes {
            wrong.push(format!(
                "shape {:?} where the program expects {:?}",
                l.sizes, t.sizes
            ));
            if l.sizes.len() != t.sizes.len() {
                lines.push(format!(
                    "Dim mismatch. Expected {}, got {}.",
                    t.sizes.len(),
                    l.sizes.len()
                ));
            } else if let Some((i, (want, got))) = (t.sizes.iter().zip(l.sizes.iter()))
                .enumerate()
                .find(|(_, (a, b))| a != b)
            {
                lines.push(format!(
                    "Sizes mismatch. Expected {want}, got {got} for size at index {i}."
                ));
            }
        } else if *l.dim_order != *t.dim_order {
            wrong.push(format!(
                "dim order {:?} where the program expects {:?}",
                l.dim_order, t.dim_order
            ));
        }
    }
    if e.span.len != t.nbytes && wrong.is_empty() {
        wrong.push(format!(
            "{} bytes where the program expects {}",
            e.span.len, t.nbytes
        ));
    }
    lines.truncate(1);
    (wrong, lines)
}

fn count_keys(tensors: usize, named: usize) -> String {
    match (tensors, named) {
        (t, 0) => format!("{t} external tensors"),
        (0, n) => format!("{n} named blobs of its delegates"),
        (t, n) => format!("{t} external tensors and {n} named blobs of its delegates"),
    }
}

/// Planned memory arenas over `limit` bytes. Arena `i` is
/// `non_const_buffer_sizes[i]`, what the runtime's
/// `MethodMeta::memory_planned_buffer_size(i - 1)`
/// (runtime/executor/method_meta.cpp) reports and the runner must
/// allocate; entry 0 is reserved.
fn arenas(plan: fb::ExecutionPlan<'_>, method: &str, limit: u64, problems: &mut Vec<Finding>) {
    let sizes = plan.non_const_buffer_sizes();
    for (i, size) in sizes.iter().flatten().enumerate().skip(1) {
        let size = u64::try_from(size).unwrap_or(u64::MAX);
        if size > limit {
            let mut f = finding(
                Some(method),
                Kind::ArenaOverLimit,
                format!("arena {i}"),
                format!(
                    "planned memory arena {i} is {size} bytes ({}), over the limit of {limit} ({})",
                    human(size),
                    human(limit)
                ),
            );
            f.bytes = Some(size);
            f.limit = Some(limit);
            problems.push(f);
        }
    }
}

impl Check {
    /// True when every problem of `method` is an arena over the memory
    /// limit: it would load, on a target with room for it.
    fn only_over_memory(&self, method: &str) -> bool {
        self.problems
            .iter()
            .filter(|p| p.method.as_deref() == Some(method))
            .all(|p| p.kind == Kind::ArenaOverLimit)
    }

    /// The check as text: the runtime, each method's verdict with its
    /// problems, then warnings.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "file: {}", crate::escape::escape(&self.file));
        let ops = self
            .runtime
            .operators
            .map_or("every operator".to_owned(), |n| format!("{n} operators"));
        let backends = if self.runtime.backends.is_empty() {
            "no backends".to_owned()
        } else {
            format!("backends {}", self.runtime.backends.join(", "))
        };
        let _ = writeln!(
            out,
            "runtime: {} ({ops}; {backends})",
            self.runtime.specs.join(" + ")
        );
        let data = if self.data.is_empty() {
            "none".to_owned()
        } else {
            self.data.join(", ")
        };
        let _ = writeln!(out, "data: {}", crate::escape::escape(&data));
        for p in self
            .problems
            .iter()
            .filter(|p| p.kind == Kind::ProgramRefused)
        {
            let e = p.error.unwrap_or_default();
            let _ = writeln!(out, "program: does not load: Program::load returns {e}");
            let _ = writeln!(out, "  {}", line(p));
            let _ = writeln!(out, "  the runtime logs:");
            for l in &p.log {
                let _ = writeln!(out, "    {}", crate::escape::escape(l));
            }
        }
        for m in &self.methods {
            let verdict = match (m.ok, m.error) {
                (true, _) => "loads".to_owned(),
                (false, Some(e)) => format!("does not load: load_method returns {e}"),
                (false, None) if self.only_over_memory(&m.name) => "does not fit".to_owned(),
                (false, None) => "does not load".to_owned(),
            };
            let _ = writeln!(out, "{}: {verdict}", crate::escape::escape(&m.name));
            for p in self
                .problems
                .iter()
                .filter(|p| p.method.as_deref() == Some(&m.name))
            {
                let _ = writeln!(out, "  {}", line(p));
            }
            if !m.log.is_empty() {
                let _ = writeln!(out, "  the runtime logs:");
                for l in &m.log {
                    let _ = writeln!(out, "    {}", crate::escape::escape(l));
                }
            }
        }
        if !self.warnings.is_empty() {
            let _ = writeln!(out, "warnings:");
            for w in &self.warnings {
                let at = w
                    .method
                    .as_deref()
                    .map_or(String::new(), |m| format!("{m}: "));
                let _ = writeln!(out, "  {}{}", crate::escape::escape(&at), line(w));
            }
        }
        let failing = self.methods.iter().filter(|m| !m.ok).count();
        let _ = if self.ok {
            writeln!(out, "ok: every method loads")
        } else if self.methods.is_empty() {
            writeln!(out, "the program does not load")
        } else {
            writeln!(
                out,
                "{} problem{} in {failing} of {} method{}",
                self.problems.len(),
                if self.problems.len() == 1 { "" } else { "s" },
                self.methods.len(),
                if self.methods.len() == 1 { "" } else { "s" },
            )
        };
        out
    }
}

/// One finding on a line: where, what, why.
fn line(f: &Finding) -> String {
    let mut at = Vec::new();
    if let Some(i) = f.operator {
        at.push(format!("operator [{i}]"));
    }
    if let Some(d) = f.delegate {
        at.push(format!("delegate {d}"));
    }
    if !f.instructions.is_empty() {
        let list: Vec<String> = f.instructions.iter().map(usize::to_string).collect();
        let s = if list.len() == 1 { "" } else { "s" };
        at.push(format!("instruction{s} {}", list.join(", ")));
    }
    let at = if at.is_empty() {
        String::new()
    } else {
        format!(" ({})", at.join(", "))
    };
    crate::escape::escape(&format!(
        "{}: {}{at}: {}",
        serde_json::to_value(f.kind)
            .ok()
            .and_then(|v| v.as_str().map(|s| s.replace('_', " ")))
            .unwrap_or_default(),
        f.name,
        f.why
    ))
    .into_owned()
}
