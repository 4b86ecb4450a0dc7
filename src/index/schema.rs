//! The catalog's tables: their columns, in order, with types as DuckDB
//! names them (docs/index.md lists the same, with units), and the rows
//! that fill them.

use std::sync::Arc;

use arrow_array::builder::{
    ArrayBuilder, BooleanBuilder, Int64Builder, ListBuilder, StringBuilder, StructBuilder,
    TimestampMicrosecondBuilder, UInt64Builder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{ArrowError, DataType, Field, Fields, Schema, TimeUnit};

/// A column's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    /// UTF-8 text.
    Str,
    /// An unsigned count or size.
    U64,
    /// True or false.
    Bool,
    /// A point in time, microseconds, UTC.
    Time,
    /// A list of text.
    Strs,
    /// A list of signed integers.
    I64s,
    /// A list of [`Stamp`]s.
    Stamps,
}

impl Ty {
    /// The type as DuckDB's `DESCRIBE` names it.
    pub fn sql(self) -> &'static str {
        match self {
            Ty::Str => "VARCHAR",
            Ty::U64 => "UBIGINT",
            Ty::Bool => "BOOLEAN",
            Ty::Time => "TIMESTAMP WITH TIME ZONE",
            Ty::Strs => "VARCHAR[]",
            Ty::I64s => "BIGINT[]",
            Ty::Stamps => "STRUCT(path VARCHAR, size UBIGINT, mtime TIMESTAMP WITH TIME ZONE)[]",
        }
    }
}

/// A file (or folder) a file's rows were made with, as it was then: a
/// re-run compares it with what is there now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp {
    /// The path, as the listing spells paths.
    pub path: String,
    /// Bytes; `None` for a folder.
    pub size: Option<u64>,
    /// Modification time, microseconds since the epoch.
    pub mtime: Option<i64>,
}

/// The fields of a [`Stamp`] in a column.
fn stamp_fields() -> Fields {
    Fields::from(vec![
        Field::new("path", DataType::Utf8, true),
        Field::new("size", DataType::UInt64, true),
        Field::new(
            "mtime",
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            true,
        ),
    ])
}

/// One column.
#[derive(Debug, Clone, Copy)]
pub struct Column {
    /// Its name.
    pub name: &'static str,
    /// Its type.
    pub ty: Ty,
}

const fn col(name: &'static str, ty: Ty) -> Column {
    Column { name, ty }
}

/// One table: a folder of part files under the catalog.
#[derive(Debug, Clone, Copy)]
pub struct Table {
    /// The folder's name.
    pub name: &'static str,
    /// Its columns, in order.
    pub columns: &'static [Column],
}

/// One file listed: what it is, or why it could not be read.
pub const FILES: Table = Table {
    name: "files",
    columns: &[
        col("source", Ty::Str),
        col("name", Ty::Str),
        col("kind", Ty::Str),
        col("size", Ty::U64),
        col("mtime", Ty::Time),
        col("etag", Ty::Str),
        col("identifier", Ty::Str),
        col("version", Ty::U64),
        col("methods", Ty::Strs),
        col("backends", Ty::Strs),
        col("data_files", Ty::Strs),
        col("data_stamps", Ty::Stamps),
        col("tensors", Ty::U64),
        col("tensor_bytes", Ty::U64),
        col("sha256", Ty::Str),
        col("fetched", Ty::U64),
        col("warnings", Ty::Strs),
        col("error", Ty::Str),
    ],
};

/// Every stored byte range of a file's tree, each once.
pub const TENSORS: Table = Table {
    name: "tensors",
    columns: &[
        col("source", Ty::Str),
        col("path", Ty::Str),
        col("method", Ty::Str),
        col("name", Ty::Str),
        col("weights_name", Ty::Str),
        col("dtype", Ty::Str),
        col("numpy_dtype", Ty::Str),
        col("shape", Ty::I64s),
        col("dim_order", Ty::I64s),
        col("nbytes", Ty::U64),
        col("file", Ty::Str),
        col("offset", Ty::U64),
        col("store", Ty::Str),
        col("backend", Ty::Str),
        col("scheme", Ty::Str),
        col("sha256", Ty::Str),
    ],
};

/// Each operator of each method: the program's own, run by a kernel
/// library, and the nodes of decoded delegate payloads.
pub const OPERATORS: Table = Table {
    name: "operators",
    columns: &[
        col("source", Ty::Str),
        col("method", Ty::Str),
        col("operator", Ty::Str),
        col("name", Ty::Str),
        col("overload", Ty::Str),
        col("calls", Ty::U64),
        col("kernel_keys", Ty::Strs),
        col("runs_in", Ty::Str),
        col("delegate", Ty::U64),
    ],
};

/// Each delegate of each method.
pub const DELEGATES: Table = Table {
    name: "delegates",
    columns: &[
        col("source", Ty::Str),
        col("method", Ty::Str),
        col("index", Ty::U64),
        col("backend", Ty::Str),
        col("payload_bytes", Ty::U64),
        col("nodes", Ty::U64),
        col("version", Ty::Str),
        col("error", Ty::Str),
    ],
};

/// One verdict per program and runtime spec.
pub const CHECKS: Table = Table {
    name: "checks",
    columns: &[
        col("source", Ty::Str),
        col("runtime", Ty::Str),
        col("loads", Ty::Bool),
        col("problems", Ty::U64),
        col("warnings", Ty::U64),
        col("result", Ty::Str),
    ],
};

/// Every table, in the order the catalog lists them.
pub const TABLES: [Table; 5] = [FILES, TENSORS, OPERATORS, DELEGATES, CHECKS];

/// One value of a row.
#[derive(Debug, Clone, PartialEq)]
pub enum V {
    /// No value.
    Null,
    /// Text.
    Str(String),
    /// A count or size.
    U64(u64),
    /// True or false.
    Bool(bool),
    /// Microseconds since the epoch, UTC.
    Time(i64),
    /// A list of text.
    Strs(Vec<String>),
    /// A list of integers.
    I64s(Vec<i64>),
    /// A list of stamps.
    Stamps(Vec<Stamp>),
}

impl From<&str> for V {
    fn from(s: &str) -> V {
        V::Str(s.to_owned())
    }
}

impl From<String> for V {
    fn from(s: String) -> V {
        V::Str(s)
    }
}

impl From<u64> for V {
    fn from(n: u64) -> V {
        V::U64(n)
    }
}

impl From<usize> for V {
    fn from(n: usize) -> V {
        V::U64(n as u64)
    }
}

impl From<bool> for V {
    fn from(b: bool) -> V {
        V::Bool(b)
    }
}

impl From<Vec<String>> for V {
    fn from(v: Vec<String>) -> V {
        V::Strs(v)
    }
}

impl<T: Into<V>> From<Option<T>> for V {
    fn from(o: Option<T>) -> V {
        o.map_or(V::Null, Into::into)
    }
}

/// A row: one value per column, in the table's order.
pub type Row = Vec<V>;

/// The builder of one column.
enum Builder {
    Str(StringBuilder),
    U64(UInt64Builder),
    Bool(BooleanBuilder),
    Time(TimestampMicrosecondBuilder),
    Strs(ListBuilder<StringBuilder>),
    I64s(ListBuilder<Int64Builder>),
    Stamps(ListBuilder<StructBuilder>),
}

impl Builder {
    fn new(ty: Ty) -> Builder {
        match ty {
            Ty::Str => Builder::Str(StringBuilder::new()),
            Ty::U64 => Builder::U64(UInt64Builder::new()),
            Ty::Bool => Builder::Bool(BooleanBuilder::new()),
            Ty::Time => Builder::Time(TimestampMicrosecondBuilder::new().with_timezone("UTC")),
            Ty::Strs => Builder::Strs(ListBuilder::new(StringBuilder::new())),
            Ty::I64s => Builder::I64s(ListBuilder::new(Int64Builder::new())),
            Ty::Stamps => {
                let fields: Vec<Box<dyn ArrayBuilder>> = vec![
                    Box::new(StringBuilder::new()),
                    Box::new(UInt64Builder::new()),
                    Box::new(TimestampMicrosecondBuilder::new().with_timezone("UTC")),
                ];
                Builder::Stamps(ListBuilder::new(StructBuilder::new(stamp_fields(), fields)))
            }
        }
    }

    /// Appends `v`; a value of another type than the column's is a null
    /// (and a bug, which the tests of every table catch).
    fn push(&mut self, v: &V) {
        debug_assert!(
            matches!(
                (&*self, v),
                (_, V::Null)
                    | (Builder::Str(_), V::Str(_))
                    | (Builder::U64(_), V::U64(_))
                    | (Builder::Bool(_), V::Bool(_))
                    | (Builder::Time(_), V::Time(_))
                    | (Builder::Strs(_), V::Strs(_))
                    | (Builder::I64s(_), V::I64s(_))
                    | (Builder::Stamps(_), V::Stamps(_))
            ),
            "{v:?} in a column of another type"
        );
        match (self, v) {
            (Builder::Str(b), V::Str(s)) => b.append_value(s),
            (Builder::Str(b), _) => b.append_null(),
            (Builder::U64(b), V::U64(n)) => b.append_value(*n),
            (Builder::U64(b), _) => b.append_null(),
            (Builder::Bool(b), V::Bool(x)) => b.append_value(*x),
            (Builder::Bool(b), _) => b.append_null(),
            (Builder::Time(b), V::Time(t)) => b.append_value(*t),
            (Builder::Time(b), _) => b.append_null(),
            (Builder::Strs(b), V::Strs(items)) => {
                for s in items {
                    b.values().append_value(s);
                }
                b.append(true);
            }
            (Builder::Strs(b), _) => b.append(false),
            (Builder::I64s(b), V::I64s(items)) => {
                b.values().append_slice(items);
                b.append(true);
            }
            (Builder::I64s(b), _) => b.append(false),
            (Builder::Stamps(b), V::Stamps(items)) => {
                let s = b.values();
                for st in items {
                    if let Some(f) = s.field_builder::<StringBuilder>(0) {
                        f.append_value(&st.path);
                    }
                    if let Some(f) = s.field_builder::<UInt64Builder>(1) {
                        f.append_option(st.size);
                    }
                    if let Some(f) = s.field_builder::<TimestampMicrosecondBuilder>(2) {
                        f.append_option(st.mtime);
                    }
                    s.append(true);
                }
                b.append(true);
            }
            (Builder::Stamps(b), _) => b.append(false),
        }
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            Builder::Str(b) => Arc::new(b.finish()),
            Builder::U64(b) => Arc::new(b.finish()),
            Builder::Bool(b) => Arc::new(b.finish()),
            Builder::Time(b) => Arc::new(b.finish()),
            Builder::Strs(b) => Arc::new(b.finish()),
            Builder::I64s(b) => Arc::new(b.finish()),
            Builder::Stamps(b) => Arc::new(b.finish()),
        }
    }
}

impl Table {
    /// `rows` as one record batch of this table.
    pub fn batch(&self, rows: &[Row]) -> Result<RecordBatch, ArrowError> {
        let mut builders: Vec<Builder> = self.columns.iter().map(|c| Builder::new(c.ty)).collect();
        for row in rows {
            debug_assert_eq!(row.len(), builders.len(), "a row of {}", self.name);
            for (b, v) in builders.iter_mut().zip(row) {
                b.push(v);
            }
        }
        let arrays: Vec<ArrayRef> = builders.iter_mut().map(Builder::finish).collect();
        let fields: Vec<Field> = self
            .columns
            .iter()
            .zip(&arrays)
            .map(|(c, a)| Field::new(c.name, a.data_type().clone(), true))
            .collect();
        RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Array;
    use arrow_array::cast::AsArray;

    #[test]
    fn every_value_lands_in_its_column_and_nulls_stay_null() {
        let rows = vec![
            vec![
                V::from("a.pte"),
                V::from("runtime"),
                V::Bool(true),
                V::U64(0),
                V::U64(2),
                V::from("{}"),
            ],
            vec![
                V::from("b.pte"),
                V::Null,
                V::Null,
                V::Null,
                V::Null,
                V::Null,
            ],
        ];
        let b = CHECKS.batch(&rows).unwrap();
        assert_eq!((b.num_rows(), b.num_columns()), (2, 6));
        assert_eq!(b.column(2).null_count(), 1);
        let t = TENSORS.batch(&[]).unwrap();
        assert_eq!(t.num_rows(), 0);
        assert_eq!(t.schema().field(7).name(), "shape");
    }

    #[test]
    fn stamps_are_a_list_of_structs_with_nulls_kept() {
        let stamp = Stamp {
            path: "m/w.ptd".into(),
            size: None,
            mtime: Some(7),
        };
        let mut row: Row = vec![V::Null; FILES.columns.len()];
        let at = FILES
            .columns
            .iter()
            .position(|c| c.name == "data_stamps")
            .unwrap();
        row[at] = V::Stamps(vec![stamp]);
        let b = FILES.batch(&[row]).unwrap();
        let list = b.column(at).as_list::<i32>().value(0);
        let s = list.as_struct();
        assert_eq!(s.len(), 1);
        assert_eq!(s.column(0).as_string::<i32>().value(0), "m/w.ptd");
        assert!(s.column(1).is_null(0));
        assert_eq!(
            s.column(2)
                .as_primitive::<arrow_array::types::TimestampMicrosecondType>()
                .value(0),
            7
        );
    }
}
