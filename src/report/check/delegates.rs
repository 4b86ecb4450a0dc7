//! Delegates whose backend the runtime does not register, and payloads
//! a registered backend refuses at init (XNNPACK, TensorRT).

use super::findings::{DELEGATE_INVALID_COMPATIBILITY, Finding, Kind, NOT_FOUND, finding};
use super::spec::RuntimeSpec;
use crate::format::ProgramFile;

/// Delegates whose backend is not registered.
pub(super) fn delegates(
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
