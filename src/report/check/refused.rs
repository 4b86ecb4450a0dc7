//! Files `Program::load` refuses before any method is looked at: a buffer
//! without the program identifier (a `.ptn` package among them), a file
//! shorter than its extended header says and a program flatbuffer that
//! fails verification. Each is one problem with
//! the line the runtime logs and the error it returns.

use super::findings::{Check, Finding, Kind, RuntimeInfo, finding};
use super::spec::RuntimeSpec;
use crate::format::Error;

/// The identifier `Program::load` requires at bytes 4..8.
pub const PROGRAM_IDENTIFIER: &[u8; 4] = b"ET12";

/// What `Program::load` returns for every refusal here.
const INVALID_PROGRAM: &str = "0x23 InvalidProgram";

/// Bytes 4..8 as the runtime logs them with `%.4s`: up to the first NUL.
fn logged_identifier(bytes: &[u8]) -> String {
    let id = bytes.get(4..8).unwrap_or_default();
    let id = id.split(|&b| b == 0).next().unwrap_or_default();
    String::from_utf8_lossy(id).into_owned()
}

/// The problem of a buffer whose bytes 4..8 are not [`PROGRAM_IDENTIFIER`],
/// or `None` when they are.
pub fn identifier(bytes: &[u8], why: &str) -> Option<Finding> {
    if bytes.get(4..8) == Some(PROGRAM_IDENTIFIER.as_slice()) {
        return None;
    }
    let id = logged_identifier(bytes);
    let mut f = finding(
        None,
        Kind::ProgramRefused,
        "program".to_owned(),
        why.to_owned(),
    );
    f.log.push(format!(
        "Program identifier '{id}' != expected '{}'",
        String::from_utf8_lossy(PROGRAM_IDENTIFIER)
    ));
    f.error = Some(INVALID_PROGRAM);
    Some(f)
}

/// The problem of a `.pte` (bytes 4..6 `ET`) that ptefs could not read
/// for `error`, when it is one `Program::load` also refuses, with the line
/// it logs: a file shorter than its extended header's segments end, or a
/// program flatbuffer the verifier rejects. Other errors the runtime meets
/// later or not at all, so they stay input errors.
pub fn unreadable(bytes: &[u8], error: &Error) -> Option<Finding> {
    if bytes.get(4..6) != Some(b"ET".as_slice()) {
        return None;
    }
    let mut e = error;
    while let Error::In { source, .. } = e {
        e = source;
    }
    let log = match e {
        Error::HeaderSum {
            what,
            end: Some(end),
            len,
            ..
        } if what.starts_with("extended header: segment base offset") => format!(
            "File size is too small. Expected file size from extended header is {end}, \
             actual file size from data loader is {len}"
        ),
        Error::Verification { what, .. } if what.starts_with("program") => {
            "Verification failed; data may be truncated or corrupt".to_owned()
        }
        _ => return None,
    };
    let mut f = finding(
        None,
        Kind::ProgramRefused,
        "program".to_owned(),
        error.to_string(),
    );
    f.log.push(log);
    f.error = Some(INVALID_PROGRAM);
    Some(f)
}

/// The problem of a program without a constant segment (its constants,
/// if any, in the deprecated `Program.constant_buffer`), which
/// `Program::load` refuses unless the runtime was built with
/// `ET_ENABLE_DEPRECATED_CONSTANT_BUFFER`; in the words of ExecuTorch
/// 1.5.1's runtime.
pub fn constant_buffer(
    program: &crate::format::ProgramFile<'_>,
    runtime: &RuntimeSpec,
) -> Option<Finding> {
    let segment = program.program.constant_segment();
    let has_segment = segment
        .and_then(|s| s.offsets())
        .is_some_and(|o| !o.is_empty());
    if has_segment || runtime.deprecated_constant_buffer {
        return None;
    }
    let buffers = program.program.constant_buffer().map_or(0, |b| b.len());
    let mut f = finding(
        None,
        Kind::ProgramRefused,
        "program".to_owned(),
        format!(
            "it has no constant segment, so its constants are looked for in the deprecated \
             constant_buffer ({buffers} entries), which this runtime is built without \
             (re-export the program; a spec saying \"deprecated_constant_buffer\": true \
             describes a runtime built with it)"
        ),
    );
    f.log.push(
        "PTE file relies on the constant_buffer path, which is disabled in this build \
         (ET_ENABLE_DEPRECATED_CONSTANT_BUFFER=0). Please re-export the PTE file."
            .to_owned(),
    );
    f.error = Some(INVALID_PROGRAM);
    Some(f)
}

/// The check of a file refused whole for `problem`: no method loads.
pub fn refused(file: &str, runtime: &RuntimeSpec, problem: Finding) -> Check {
    Check {
        file: file.to_owned(),
        data: Vec::new(),
        runtime: RuntimeInfo::of(runtime),
        ok: false,
        methods: Vec::new(),
        problems: vec![problem],
        warnings: Vec::new(),
    }
}
