//! `inspect` and `diff` as the `ptefs` command makes them with `--json`:
//! the library's report values (`report::inspect::inspect_input`,
//! `report::diff::compare_inputs`, `view::profile_diff::ProfilePair` and
//! `view::etrecord_diff::compare_etrecords`, which the command calls too),
//! serialised with serde_json.

use std::path::PathBuf;

use clap::ValueEnum;
use pyo3::prelude::*;

use ptefs::report::diff::{Options, Section, Tolerance, compare_inputs};
use ptefs::report::inspect::{Extras, inspect_input};
use ptefs::source::redact::shown;
use ptefs::view::etrecord_diff::{EtRecordDiffError, compare_etrecords};
use ptefs::view::profile_diff::{ProfileDiffError, ProfilePair};
use ptefs::view::{Opened, Request, load_checkpoint};

use crate::errors::{Error, open_error};

/// Opens and maps what `req` names with the data files found beside it.
fn open(req: &Request) -> Result<Opened, ptefs::view::OpenError> {
    let (req, _notes) = req.with_found_data();
    Opened::open(&req)
}

/// `ptefs inspect --json [--top N]` of the first input of `req`.
pub fn inspect(py: Python<'_>, req: &Request, top: Option<usize>) -> PyResult<String> {
    let out = py.detach(|| -> Result<String, PyErr> {
        let opened = open(req).map_err(|e| Python::attach(|py| open_error(py, e)))?;
        let inputs = opened
            .parse()
            .map_err(|e| Python::attach(|py| open_error(py, e)))?;
        let Some(input) = inputs.shown.first() else {
            return Err(Error::new_err("nothing to inspect"));
        };
        let checkpoint = match &req.names {
            Some(path) => {
                Some(load_checkpoint(path).map_err(|e| Python::attach(|py| open_error(py, e)))?)
            }
            None => None,
        };
        let sources: Vec<&[u8]> = opened.sources.iter().map(|s| s.bytes()).collect();
        let extras = Extras {
            checkpoint: checkpoint.as_ref(),
            top,
            stats: false,
        };
        let report = inspect_input(input, &inputs.attached, &sources, extras, &mut |_| {});
        serde_json::to_string(&report).map_err(|e| Error::new_err(e.to_string()))
    })?;
    Ok(out)
}

/// `ptefs diff --json` of two files, each with `data` attached, of two
/// ETRecords, or of two ETDumps (with `threshold` in percent and the
/// `program` that ran): the report as JSON, and whether they differ (for
/// ETDumps, whether B is slower than A by more than `threshold` anywhere).
#[pyfunction]
#[pyo3(signature = (a, b, data=Vec::new(), names=None, auto_data=true, only=Vec::new(), atol=0.0, rtol=0.0, threshold=10.0, program=None))]
#[allow(clippy::too_many_arguments)]
pub fn diff(
    py: Python<'_>,
    a: PathBuf,
    b: PathBuf,
    data: Vec<PathBuf>,
    names: Option<PathBuf>,
    auto_data: bool,
    only: Vec<String>,
    atol: f64,
    rtol: f64,
    threshold: f64,
    program: Option<PathBuf>,
) -> PyResult<(String, bool)> {
    if !(atol >= 0.0 && rtol >= 0.0) {
        return Err(Error::new_err(
            "atol and rtol must be numbers at or above 0",
        ));
    }
    if threshold.is_nan() || threshold < 0.0 {
        return Err(Error::new_err("threshold must be a number at or above 0"));
    }
    let only = only
        .iter()
        .map(|s| {
            Section::from_str(s, true).map_err(|_| {
                let known: Vec<String> = Section::value_variants()
                    .iter()
                    .filter_map(|v| v.to_possible_value().map(|p| p.get_name().to_owned()))
                    .collect();
                Error::new_err(format!(
                    "{s:?} is no section; sections are {}",
                    known.join(", ")
                ))
            })
        })
        .collect::<PyResult<Vec<Section>>>()?;
    for p in [&a, &b] {
        if p.is_dir() {
            return Err(Error::new_err(format!(
                "{}: is a directory; compare directories with `ptefs diff`",
                shown(p)
            )));
        }
    }
    let opt = Options {
        only,
        tolerance: Tolerance { atol, rtol },
    };
    let request = |input: &PathBuf| Request {
        inputs: vec![input.clone()],
        data: data.clone(),
        recursive: false,
        names: None,
        auto_data,
        debug_buffer: None,
        profile: None,
        etrecord: None,
    };
    let (ra, rb) = (request(&a), request(&b));
    let (na, nb) = (shown(&a), shown(&b));
    py.detach(|| -> PyResult<(String, bool)> {
        let fail = |e| Python::attach(|py| open_error(py, e));
        match ProfilePair::of(&a, &b) {
            Some(pair) => {
                let report = pair
                    .compare(program.as_deref(), threshold / 100.0)
                    .map_err(|e| match e {
                        ProfileDiffError::Open(e) => fail(e),
                        e => Error::new_err(e.to_string()),
                    })?;
                let json =
                    serde_json::to_string(&report).map_err(|e| Error::new_err(e.to_string()))?;
                return Ok((json, report.exceeded));
            }
            None if program.is_some() => {
                return Err(Error::new_err(
                    "program is for comparing two ETDumps (.etdp)",
                ));
            }
            None => {}
        }
        match compare_etrecords(&a, &b, opt.tolerance) {
            Ok(Some(_)) if !opt.only.is_empty() => {
                return Err(Error::new_err(
                    "only names sections of programs; two ETRecords are compared whole",
                ));
            }
            Ok(Some(report)) => {
                let json =
                    serde_json::to_string(&report).map_err(|e| Error::new_err(e.to_string()))?;
                return Ok((json, report.differ));
            }
            Ok(None) => {}
            Err(EtRecordDiffError::Open(e)) => return Err(fail(e)),
            Err(e) => return Err(Error::new_err(e.to_string())),
        }
        let checkpoint = names
            .as_deref()
            .map(load_checkpoint)
            .transpose()
            .map_err(fail)?;
        let mut oa = open(&ra).map_err(fail)?;
        let mut ob = open(&rb).map_err(fail)?;
        // Tensors are compared byte for byte: remote files are read whole.
        oa.fetch_whole().map_err(fail)?;
        ob.fetch_whole().map_err(fail)?;
        let (ia, ib) = (oa.parse().map_err(fail)?, ob.parse().map_err(fail)?);
        let report = compare_inputs(
            (&ia.shown, &ia.attached),
            (&ib.shown, &ib.attached),
            (&na, &nb),
            &opt,
            checkpoint.as_ref(),
            &mut |_| {},
        )
        .ok_or_else(|| Error::new_err("nothing to compare"))?;
        let json = serde_json::to_string(&report).map_err(|e| Error::new_err(e.to_string()))?;
        Ok((json, report.differ))
    })
}

/// `ptefs check --json [--runtime SPEC]... [--memory-limit SIZE]` of the
/// first input of `req`: the library's check, serialised.
pub fn check(
    py: Python<'_>,
    req: &Request,
    runtime: &[String],
    memory_limit: Option<u64>,
) -> PyResult<String> {
    use ptefs::report::check::{Limits, spec};
    use ptefs::view::check::CheckError;
    py.detach(|| -> Result<String, PyErr> {
        let names: Vec<&str> = if runtime.is_empty() {
            vec![spec::DEFAULT]
        } else {
            runtime.iter().map(String::as_str).collect()
        };
        let specs = names
            .iter()
            .map(|n| spec::RuntimeSpec::load(n))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| Error::new_err(e.to_string()))?;
        let runtime = spec::RuntimeSpec::merge(specs);
        let opened = open(req).map_err(|e| Python::attach(|py| open_error(py, e)))?;
        let limits = Limits {
            memory: memory_limit,
        };
        let result = ptefs::view::check::check(&opened, &runtime, limits).map_err(|e| match e {
            CheckError::Open(e) => Python::attach(|py| open_error(py, e)),
            e => Error::new_err(e.to_string()),
        })?;
        serde_json::to_string(&result).map_err(|e| Error::new_err(e.to_string()))
    })
}
