//! The operator union of several programs: the operators and kernel keys
//! a runtime must register to run every one of them, as one
//! `selected_operators.yaml` for ExecuTorch's selective build.

use std::collections::BTreeSet;

use crate::format::{Parsed, ProgramFile};
use crate::meta::oplist::{self, OpList};

/// What several programs need of a runtime.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Union {
    /// Every operator, with the kernel keys of every call of it.
    pub ops: OpList,
    /// The backends the programs delegate to. A runtime registers these
    /// by linking the backend's library; selective build does not list
    /// them.
    pub backends: BTreeSet<String>,
}

/// Why a file adds nothing to the union.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {why}")]
pub struct NotLoadable {
    /// The file's name.
    pub file: String,
    /// What it is instead.
    pub why: &'static str,
}

/// The program a runtime would load from `parsed`: a `.pte`'s own, a
/// bundle's.
pub fn program<'p, 'a>(
    file: &str,
    parsed: &'p Parsed<'a>,
) -> Result<&'p ProgramFile<'a>, NotLoadable> {
    let why = match parsed {
        Parsed::Program(p) => return Ok(p),
        Parsed::Bundled(b) => return Ok(&b.program),
        Parsed::Package(_) => {
            "a .ptn (native program package) holds no flatbuffer program for the runtime's kernels"
        }
        Parsed::Data(_) => "a data file (.ptd) holds no operators",
        Parsed::Profile(_) => "an ETDump (.etdp) holds no program",
        Parsed::EtRecord(_) => "an ETRecord holds no program the runtime loads",
    };
    Err(NotLoadable {
        file: file.to_owned(),
        why,
    })
}

impl Union {
    /// Adds `program`'s operators, kernel keys and backends.
    pub fn add(&mut self, program: &ProgramFile<'_>) {
        let list = oplist::oplist(program.methods.iter().map(|m| m.plan));
        self.ops.operators.extend(list.operators);
        for (op, keys) in list.kernel_keys {
            self.ops.kernel_keys.entry(op).or_default().extend(keys);
        }
        for m in &program.methods {
            self.backends
                .extend(m.delegates.iter().map(|d| d.id.show().into_owned()));
        }
    }

    /// The `selected_operators.yaml` of the union, as the tree's
    /// `ops.yaml` writes one program's.
    pub fn yaml(&self) -> String {
        crate::tree::render::ops_yaml::yaml(&self.ops)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_keys_of_two_programs_merge_per_operator() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let mut union = Union::default();
        let mut alone = Vec::new();
        for f in ["mlp.pte", "dtypes.pte"] {
            let bytes = std::fs::read(dir.join(f)).unwrap();
            let parsed = crate::format::parse(&bytes).unwrap();
            let p = program(f, &parsed).unwrap();
            let list = oplist::oplist(p.methods.iter().map(|m| m.plan));
            union.add(p);
            alone.push(list);
        }
        for list in &alone {
            assert!(list.operators.is_subset(&union.ops.operators));
            for (op, keys) in &list.kernel_keys {
                assert!(keys.is_subset(&union.ops.kernel_keys[op]), "{op}");
            }
        }
        let ops: BTreeSet<_> = alone.iter().flat_map(|l| l.operators.clone()).collect();
        assert_eq!(ops, union.ops.operators);
        let data = std::fs::read(dir.join("mlp_external.ptd")).unwrap();
        let parsed = crate::format::parse(&data).unwrap();
        let e = program("mlp_external.ptd", &parsed)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("mlp_external.ptd: a data file"), "{e}");
    }
}
