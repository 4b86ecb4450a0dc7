//! External tensors and delegates' named data that no attached data file
//! provides as the program expects it.

use std::collections::HashMap;

use super::findings::{Finding, INVALID_EXTERNAL_DATA, INVALID_STATE, Kind, NOT_FOUND, finding};
use crate::format::{DataFile, Name, ProgramFile, TensorData};
use crate::meta::external;

/// Every key a data file must hold, whole, for the user to find or make
/// the right `.ptd`: the external tensors' keys, then those of each
/// backend's named data the program does not hold itself (XNNPACK's are
/// sha256 digests of the weights).
fn needed_keys(
    externals: &[(&crate::format::TensorInfo<'_>, Name<'_>)],
    delegate_keys: &[(usize, &str, Name<'_>)],
    named_in_program: impl Fn(Name<'_>) -> bool,
) -> String {
    let mut parts = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let tensors: Vec<String> = (externals.iter())
        .filter(|(_, k)| seen.insert(k.bytes()))
        .map(|(_, k)| k.show().into_owned())
        .collect();
    if !tensors.is_empty() {
        parts.push(format!(
            "the external tensors' keys: {}",
            tensors.join(", ")
        ));
    }
    let mut backends: Vec<(&str, Vec<String>)> = Vec::new();
    for (_, id, k) in delegate_keys {
        if named_in_program(*k) || !seen.insert(k.bytes()) {
            continue;
        }
        match backends.iter_mut().find(|(b, _)| b == id) {
            Some((_, keys)) => keys.push(k.show().into_owned()),
            None => backends.push((id, vec![k.show().into_owned()])),
        }
    }
    for (id, keys) in backends {
        parts.push(format!(
            "the keys of its {id} delegates' named data: {}",
            keys.join(", ")
        ));
    }
    parts.join("; ")
}

/// External tensors and delegates' named data that no data file provides
/// as the program expects it.
pub(super) fn external_data<'p>(
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
                "it needs {} from a data file (.ptd), and none is attached; {}",
                count_keys(externals.len(), delegate_keys.len()),
                needed_keys(&externals, &delegate_keys, named_in_program)
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
