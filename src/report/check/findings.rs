//! What a check finds: the findings, each method's verdict, the runtime
//! checked against, and the error codes the runtime logs with them.

use serde::Serialize;

use super::spec::RuntimeSpec;

/// Error codes of `executorch::runtime::Error`, as `load_method` returns
/// them.
pub(super) const OPERATOR_MISSING: &str = "0x14 OperatorMissing";
pub(super) const NOT_FOUND: &str = "0x20 NotFound";
pub(super) const INVALID_EXTERNAL_DATA: &str = "0x24 InvalidExternalData";
pub(super) const INVALID_STATE: &str = "0x2 InvalidState";
pub(super) const DELEGATE_INVALID_COMPATIBILITY: &str = "0x30 DelegateInvalidCompatibility";

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
    pub(super) fn of(runtime: &RuntimeSpec) -> Self {
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
pub(super) fn finding(method: Option<&str>, kind: Kind, name: String, why: String) -> Finding {
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
