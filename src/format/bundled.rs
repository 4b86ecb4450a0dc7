//! The bundled program (`.bpte`): a program plus test inputs and outputs.

use std::sync::Arc;

use super::program::{ProgramFile, tensor_nbytes};
use super::shapes::Shapes;
use super::strings::{self, Name};
use super::{Error, Result, Span, verify};
use crate::schema::ScalarType;
use crate::schema::bundled as fb;

/// A validated bundled program.
pub struct BundledFile<'a> {
    /// The whole file.
    pub bytes: &'a [u8],
    /// The verified flatbuffer root.
    pub bundled: fb::BundledProgram<'a>,
    /// Where the embedded `.pte` lies in the file.
    pub program_span: Span,
    /// The embedded program, parsed; its spans are relative to `program_span`.
    pub program: ProgramFile<'a>,
    /// Test cases by method, in file order.
    pub suites: Vec<(Name<'a>, Vec<TestCase>)>,
    /// Oddities worth a note that do not stop the file being shown.
    pub warnings: Vec<String>,
}

// Debug by hand: the generated tables' Debug reads strings through the
// `&str` accessors, which must not run on unchecked bytes (see `text`).
impl std::fmt::Debug for BundledFile<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BundledFile")
            .field("program_span", &self.program_span)
            .field("program", &self.program)
            .field("suites", &self.suites)
            .field("warnings", &self.warnings)
            .finish_non_exhaustive()
    }
}

/// One test case: inputs and the outputs they should produce.
#[derive(Debug, Clone, Default)]
pub struct TestCase {
    /// Method inputs, in order.
    pub inputs: Vec<TestValue>,
    /// Expected outputs, in order.
    pub expected_outputs: Vec<TestValue>,
}

/// A value in a test case.
#[derive(Debug, Clone, PartialEq)]
pub enum TestValue {
    /// A tensor; its bytes are in the file.
    Tensor(BundledTensor),
    /// An integer.
    Int(i64),
    /// A boolean.
    Bool(bool),
    /// A float.
    Double(f64),
    /// A union type this reader does not know.
    Unknown(u8),
}

/// A tensor stored in a test case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundledTensor {
    /// Element type.
    pub scalar_type: ScalarType,
    /// Logical sizes, shared by values that share a tensor table.
    pub sizes: Arc<[i64]>,
    /// Dimension order, outermost first; shared like `sizes`.
    pub dim_order: Arc<[u8]>,
    /// The tensor's bytes in the `.bpte`; `None` for an empty tensor whose
    /// data vector is absent.
    pub span: Option<Span>,
}

impl<'a> BundledFile<'a> {
    /// Parses and validates a bundled program and the program inside it.
    pub fn parse(bytes: &'a [u8]) -> Result<BundledFile<'a>> {
        if super::sniff(bytes)? != super::Kind::Bundled {
            return Err(Error::new("not a bundled program: bytes 4..8 are not BP??"));
        }
        let (bundled, warning) =
            verify::root::<fb::BundledProgram>(bytes, "bundled program flatbuffer")?;
        let warnings = warning.into_iter().collect();
        let inner = bundled.program().map(|p| p.bytes());
        let program_span = Span::of_vector(bytes, inner)
            .ok_or_else(|| Error::new("bundled program has no embedded program"))?;
        let inner = program_span.bytes(bytes);
        let at = |e: Error| {
            e.context(format_args!(
                "embedded program at byte {}",
                program_span.offset
            ))
        };
        if super::sniff(inner).map_err(at)? != super::Kind::Program {
            return Err(at(Error::new("its magic (bytes 4..8) is not ET??")));
        }
        let program = ProgramFile::parse(inner).map_err(at)?;
        let mut suites = Vec::new();
        let mut shapes = Shapes::default();
        for (s, suite) in bundled.method_test_suites().iter().flatten().enumerate() {
            let name = strings::test_suite_method(suite).unwrap_or_default();
            let mut cases = Vec::new();
            for (c, case) in suite.test_cases().iter().flatten().enumerate() {
                let ctx = |e: Error| e.context(format_args!("test suite {s} ({name:?}) case {c}"));
                cases.push(TestCase {
                    inputs: values(bytes, case.inputs(), &mut shapes)
                        .map_err(|e| ctx(e.context("inputs")))?,
                    expected_outputs: values(bytes, case.expected_outputs(), &mut shapes)
                        .map_err(|e| ctx(e.context("expected outputs")))?,
                });
            }
            suites.push((name, cases));
        }
        Ok(BundledFile {
            bytes,
            bundled,
            program_span,
            program,
            suites,
            warnings,
        })
    }
}

fn values<'a>(
    file: &'a [u8],
    list: Option<flatbuffers::Vector<'a, flatbuffers::ForwardsUOffset<fb::Value<'a>>>>,
    shapes: &mut Shapes<'a>,
) -> Result<Vec<TestValue>> {
    let mut out = Vec::new();
    for (i, v) in list.iter().flatten().enumerate() {
        let value = if let Some(t) = v.val_as_tensor() {
            let (sizes, dim_order) = shapes.of(t.sizes(), t.dim_order());
            let whole = Span::of_vector(file, t.data().map(|d| d.bytes()));
            let nbytes = tensor_nbytes(t.scalar_type(), &sizes)
                .map_err(|e| e.context(format_args!("value {i}")))?;
            let what = || format!("value {i} tensor data");
            let span = match (whole, nbytes) {
                (Some(whole), Some(n)) => Some(whole.prefix(n, what)?),
                (whole, None) | (whole @ None, Some(0)) => whole,
                (None, Some(n)) => Err(Error::TooSmall {
                    what: what(),
                    needed: n,
                    available: 0,
                    offset: 0,
                })?,
            };
            TestValue::Tensor(BundledTensor {
                scalar_type: t.scalar_type(),
                sizes,
                dim_order,
                span,
            })
        } else if let Some(x) = v.val_as_int() {
            TestValue::Int(x.int_val())
        } else if let Some(x) = v.val_as_bool() {
            TestValue::Bool(x.bool_val())
        } else if let Some(x) = v.val_as_double() {
            TestValue::Double(x.double_val())
        } else {
            TestValue::Unknown(v.val_type().0)
        };
        out.push(value);
    }
    Ok(out)
}
