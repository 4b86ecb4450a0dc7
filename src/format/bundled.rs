//! The bundled program (`.bpte`): a program plus test inputs and outputs.

use super::header::show_magic;
use super::program::{ProgramFile, tensor_nbytes};
use super::{Error, Result, Span, verify};
use crate::schema::ScalarType;
use crate::schema::bundled as fb;

/// A validated bundled program.
#[derive(Debug)]
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
    pub suites: Vec<(&'a str, Vec<TestCase>)>,
    /// Oddities worth a note that do not stop the file being shown.
    pub warnings: Vec<String>,
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
    /// Logical sizes.
    pub sizes: Vec<i64>,
    /// Dimension order, outermost first.
    pub dim_order: Vec<u8>,
    /// The tensor's bytes in the `.bpte`.
    pub span: Span,
}

impl<'a> BundledFile<'a> {
    /// Parses and validates a bundled program and the program inside it.
    pub fn parse(bytes: &'a [u8]) -> Result<BundledFile<'a>> {
        if super::sniff(bytes)? != super::Kind::Bundled {
            return Err(Error::new("not a bundled program: bytes 4..8 are not BP??"));
        }
        let bundled =
            flatbuffers::root_with_opts::<fb::BundledProgram>(&verify::options(bytes.len()), bytes)
                .map_err(|e| {
                    Error::new(format!(
                        "bundled program flatbuffer fails verification: {}",
                        verify::one_line(&e)
                    ))
                })?;
        let mut warnings = Vec::new();
        if bytes[4..8] != *b"BP08" {
            warnings.push(format!(
                "file identifier is {}; this reader's schema is \"BP08\", so fields may be misread",
                show_magic(&bytes[4..8])
            ));
        }
        let inner = bundled
            .program()
            .map(|p| p.bytes())
            .ok_or_else(|| Error::new("bundled program has no embedded program"))?;
        let program_span = Span::of_subslice(bytes, inner);
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
        for (s, suite) in bundled.method_test_suites().iter().flatten().enumerate() {
            let name = suite.method_name().unwrap_or("");
            let mut cases = Vec::new();
            for (c, case) in suite.test_cases().iter().flatten().enumerate() {
                let ctx = |e: Error| e.context(format_args!("test suite {s} ({name:?}) case {c}"));
                cases.push(TestCase {
                    inputs: values(bytes, case.inputs()).map_err(|e| ctx(e.context("inputs")))?,
                    expected_outputs: values(bytes, case.expected_outputs())
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
) -> Result<Vec<TestValue>> {
    let mut out = Vec::new();
    for (i, v) in list.iter().flatten().enumerate() {
        let value = if let Some(t) = v.val_as_tensor() {
            let sizes: Vec<i64> = t.sizes().iter().flatten().map(i64::from).collect();
            let data = t.data().map_or(&[][..], |d| d.bytes());
            let whole = Span::of_subslice(file, data);
            let span = match tensor_nbytes(t.scalar_type(), &sizes)
                .map_err(|e| e.context(format_args!("value {i}")))?
            {
                Some(n) => whole.prefix(n, || format!("value {i} tensor data"))?,
                None => whole,
            };
            TestValue::Tensor(BundledTensor {
                scalar_type: t.scalar_type(),
                sizes,
                dim_order: t.dim_order().iter().flatten().collect(),
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
