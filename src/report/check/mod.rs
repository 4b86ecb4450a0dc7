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
mod findings;
mod memory;
mod operators;
pub mod refused;
pub mod spec;
mod text;

use crate::format::{DataFile, ProgramFile};
use delegates::delegates;
use external::external_data;
use findings::finding;
pub use findings::{Check, Finding, Kind, Limits, MethodVerdict, RuntimeInfo};
use memory::arenas;
use operators::{non_portable, operators};
use spec::RuntimeSpec;

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
    let refusal = refused::identifier(program.bytes, why)
        .or_else(|| refused::constant_buffer(program, runtime));
    if let Some(p) = refusal {
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
