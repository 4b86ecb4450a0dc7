//! The catalog folder: one folder per table, one Parquet part file per
//! run or shard in each. A part is written under a hidden temporary name
//! and renamed into place once whole, so a reader (or a crash) never sees
//! half a part; `files` is renamed last, so a file whose `files` row is
//! in place has its rows of every table in place too.

use std::collections::{BTreeMap, HashSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{TimestampMicrosecondType, UInt64Type};
use arrow_array::{Array, BooleanArray, RecordBatch, StringArray};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

use super::facts::Facts;
use super::schema::{CHECKS, FILES, Row, Stamp, TABLES, TENSORS, Table};
use crate::source::redact::redact;
use crate::source::remote::is_url;
use crate::source::remote::prefix::{Prefix, is_prefix};

/// Rows buffered per table before they are written as a batch.
const BATCH_ROWS: usize = 8192;

/// Rows per row group: what a reader reads, and a writer holds, at once.
const ROW_GROUP_ROWS: usize = 65_536;

/// Trouble with the catalog folder itself: the run stops (exit 2).
#[derive(Debug, thiserror::Error)]
#[error("{path}: {why}")]
pub struct PartError {
    /// The file or folder.
    pub path: PathBuf,
    /// What went wrong.
    pub why: String,
}

fn err(path: &Path, why: impl std::fmt::Display) -> PartError {
    PartError {
        path: path.to_owned(),
        why: why.to_string(),
    }
}

/// Where the catalog is: a local folder, or a prefix of an object store
/// (`s3://bucket/catalog/`), whose parts are staged in a local folder
/// and each put whole.
pub enum Out {
    /// A local folder.
    Dir(PathBuf),
    /// A prefix of a store, and the local folder parts are staged in.
    Store {
        /// The prefix.
        prefix: Prefix,
        /// The URL as given, for messages.
        url: String,
        /// The staging folder.
        staging: tempfile::TempDir,
    },
}

impl Out {
    /// The catalog `arg` names.
    pub fn open(arg: &str) -> Result<Out, PartError> {
        if !is_url(arg) {
            return Ok(Out::Dir(PathBuf::from(arg)));
        }
        if !is_prefix(arg) {
            return Err(err(
                Path::new(&redact(arg)),
                "an output in an object store is a prefix: an s3://, gs:// or az:// URL ending in /",
            ));
        }
        let prefix = Prefix::open(arg).map_err(|e| err(Path::new(&redact(arg)), e))?;
        let staging = tempfile::tempdir().map_err(|e| err(Path::new("staging folder"), e))?;
        Ok(Out::Store {
            prefix,
            url: redact(arg),
            staging,
        })
    }

    /// Waits for, then holds, the catalog folder's lock: runs into one
    /// local folder read its parts and put theirs in place one at a time,
    /// so none reads a part another is replacing or drops rows another
    /// just wrote. A store has no lock: runs into one prefix are the
    /// shards of one listing, which touch disjoint rows. Released when
    /// dropped.
    pub fn lock(&self) -> Result<Option<File>, PartError> {
        let Out::Dir(dir) = self else {
            return Ok(None);
        };
        std::fs::create_dir_all(dir).map_err(|e| err(dir, e))?;
        let path = dir.join(".ptefs-index.lock");
        let file = (std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true))
        .open(&path)
        .map_err(|e| err(&path, e))?;
        // SAFETY: flock takes the descriptor of a file this function holds
        // open and returns it; the lock goes with the descriptor.
        if unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&file), libc::LOCK_EX) } != 0 {
            return Err(err(&path, std::io::Error::last_os_error()));
        }
        Ok(Some(file))
    }

    /// The local folder parts are written in.
    pub fn dir(&self) -> &Path {
        match self {
            Out::Dir(d) => d,
            Out::Store { staging, .. } => staging.path(),
        }
    }

    /// The finished parts of `table`, local (fetched first from a store).
    fn parts(&self, table: Table) -> Result<Vec<PathBuf>, PartError> {
        let Out::Store { prefix, url, .. } = self else {
            return part_files(self.dir(), table);
        };
        let folder = self.dir().join(table.name);
        std::fs::create_dir_all(&folder).map_err(|e| err(&folder, e))?;
        let mut out = Vec::new();
        let listed = prefix
            .list(&format!("{}/", table.name))
            .map_err(|e| err(Path::new(url), e))?;
        for o in listed {
            let rel = prefix.relative(&o.url).to_owned();
            let Some(name) = rel.strip_prefix(&format!("{}/", table.name)) else {
                continue;
            };
            if name.starts_with('.') || name.contains('/') || !name.ends_with(".parquet") {
                continue;
            }
            let local = folder.join(name);
            if !local.exists() {
                let bytes = prefix.get(&rel).map_err(|e| err(Path::new(url), e))?;
                std::fs::write(&local, bytes).map_err(|e| err(&local, e))?;
            }
            out.push(local);
        }
        out.sort();
        Ok(out)
    }

    /// Makes the local part `path` of `table` the catalog's: in a store,
    /// puts it whole.
    fn publish(&self, table: Table, path: &Path) -> Result<(), PartError> {
        let Out::Store { prefix, url, .. } = self else {
            return Ok(());
        };
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("part");
        let bytes = std::fs::read(path).map_err(|e| err(path, e))?;
        prefix
            .put(&format!("{}/{name}", table.name), bytes)
            .map_err(|e| err(Path::new(url), e))
    }

    /// Removes the part `path` of `table` from the catalog.
    fn remove(&self, table: Table, path: &Path) -> Result<(), PartError> {
        std::fs::remove_file(path).map_err(|e| err(path, e))?;
        let Out::Store { prefix, url, .. } = self else {
            return Ok(());
        };
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("part");
        prefix
            .delete(&format!("{}/{name}", table.name))
            .map_err(|e| err(Path::new(url), e))
    }
}

/// The part being written of one table.
struct Part {
    table: Table,
    tmp: PathBuf,
    path: PathBuf,
    writer: Option<ArrowWriter<File>>,
    pending: Vec<Row>,
    /// Rows written so far.
    rows: usize,
}

impl Part {
    fn flush(&mut self) -> Result<(), PartError> {
        let batch = self
            .table
            .batch(&self.pending)
            .map_err(|e| err(&self.tmp, e))?;
        self.pending.clear();
        self.write(&batch)
    }

    fn write(&mut self, batch: &RecordBatch) -> Result<(), PartError> {
        if self.writer.is_none() {
            let file = File::create(&self.tmp).map_err(|e| err(&self.tmp, e))?;
            let props = WriterProperties::builder()
                .set_compression(Compression::SNAPPY)
                .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
                .set_created_by(format!("ptefs {}", env!("CARGO_PKG_VERSION")))
                .build();
            let w = ArrowWriter::try_new(file, batch.schema(), Some(props))
                .map_err(|e| err(&self.tmp, e))?;
            self.writer = Some(w);
        }
        self.rows += batch.num_rows();
        if let Some(w) = self.writer.as_mut()
            && batch.num_rows() > 0
        {
            w.write(batch).map_err(|e| err(&self.tmp, e))?;
        }
        Ok(())
    }
}

/// The parts one run writes.
pub struct Parts {
    parts: Vec<Part>,
}

/// The name of a new part file: the time, the process and the shard, so
/// runs and shards writing into one folder never collide.
pub fn part_name(shard: &str) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    format!(
        "part-{}{:09}-{}-{shard}.parquet",
        now.as_secs(),
        now.subsec_nanos(),
        std::process::id()
    )
}

impl Parts {
    /// Starts a part named `name` in each table's folder under `dir`
    /// (made when missing).
    pub fn create(dir: &Path, name: &str) -> Result<Parts, PartError> {
        let mut parts = Vec::new();
        for table in TABLES {
            let folder = dir.join(table.name);
            std::fs::create_dir_all(&folder).map_err(|e| err(&folder, e))?;
            parts.push(Part {
                table,
                tmp: folder.join(format!(".{name}.tmp")),
                path: folder.join(name),
                writer: None,
                pending: Vec::new(),
                rows: 0,
            });
        }
        // An unwritable folder is found now, not after an hour of work.
        for p in &mut parts {
            p.flush()?;
        }
        Ok(Parts { parts })
    }

    /// Adds the rows of one file.
    pub fn add(&mut self, facts: &Facts) -> Result<(), PartError> {
        for (part, rows) in self.parts.iter_mut().zip(facts.tables()) {
            part.pending.extend_from_slice(rows);
            if part.pending.len() >= BATCH_ROWS {
                part.flush()?;
            }
        }
        let tensors = self
            .parts
            .iter_mut()
            .find(|p| p.table.name == TENSORS.name)
            .ok_or_else(|| err(Path::new(TENSORS.name), "no part"))?;
        for b in &facts.tensors {
            tensors.write(b)?;
        }
        Ok(())
    }

    /// Writes what is left, and renames every part into place, `files`
    /// last. A part of no rows is dropped instead ([`fill_empty`] keeps
    /// one for a table that has no other), so runs that add nothing to a
    /// table do not pile up empty parts in it.
    pub fn finish(mut self, out: &Out) -> Result<Vec<PathBuf>, PartError> {
        for p in &mut self.parts {
            if !p.pending.is_empty() {
                p.flush()?;
            }
            if let Some(w) = p.writer.take() {
                let file = w.into_inner().map_err(|e| err(&p.tmp, e))?;
                file.sync_all().map_err(|e| err(&p.tmp, e))?;
            }
        }
        let mut done = Vec::new();
        for p in self.parts.iter().rev() {
            if p.rows == 0 {
                std::fs::remove_file(&p.tmp).map_err(|e| err(&p.tmp, e))?;
                continue;
            }
            std::fs::rename(&p.tmp, &p.path).map_err(|e| err(&p.path, e))?;
            out.publish(p.table, &p.path)?;
            done.push(p.path.clone());
        }
        Ok(done)
    }

    /// Removes the temporary files of a run that did not finish.
    pub fn abandon(self) {
        for p in &self.parts {
            let _ = std::fs::remove_file(&p.tmp);
        }
    }
}

impl Drop for Part {
    fn drop(&mut self) {
        // A part dropped before its rename was abandoned.
        if self.tmp.exists() && self.writer.is_some() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// Writes a part of no rows, with the table's columns, for each table of
/// which `catalog` holds no part, so that a query of an empty catalog
/// gives no rows rather than failing to find files.
pub fn fill_empty(catalog: &Out, name: &str) -> Result<(), PartError> {
    for table in TABLES {
        if !catalog.parts(table)?.is_empty() {
            continue;
        }
        let folder = catalog.dir().join(table.name);
        std::fs::create_dir_all(&folder).map_err(|e| err(&folder, e))?;
        let mut part = Part {
            table,
            tmp: folder.join(format!(".{name}.tmp")),
            path: folder.join(name),
            writer: None,
            pending: Vec::new(),
            rows: 0,
        };
        part.flush()?;
        if let Some(w) = part.writer.take() {
            let file = w.into_inner().map_err(|e| err(&part.tmp, e))?;
            file.sync_all().map_err(|e| err(&part.tmp, e))?;
        }
        std::fs::rename(&part.tmp, &part.path).map_err(|e| err(&part.path, e))?;
        catalog.publish(table, &part.path)?;
    }
    Ok(())
}

/// The finished part files of `table` under `dir`, in name order.
fn part_files(dir: &Path, table: Table) -> Result<Vec<PathBuf>, PartError> {
    let folder = dir.join(table.name);
    let entries = match std::fs::read_dir(&folder) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(err(&folder, e)),
    };
    let mut out = Vec::new();
    for e in entries {
        let p = e.map_err(|e| err(&folder, e))?.path();
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if !name.starts_with('.') && name.ends_with(".parquet") {
            out.push(p);
        }
    }
    out.sort();
    Ok(out)
}

/// What the catalog holds of one source: what identified its contents
/// when it was indexed, and what was computed of it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Indexed {
    /// Bytes.
    pub size: Option<u64>,
    /// Modification time, microseconds.
    pub mtime: Option<i64>,
    /// Entity tag.
    pub etag: Option<String>,
    /// The data files (and folder) its rows were made with; `None` from a
    /// catalog written before they were recorded.
    pub data: Option<Vec<Stamp>>,
    /// True when its row has its sha256.
    pub hashed: bool,
    /// True when its row is an error.
    pub failed: bool,
    /// The runtime specs its `checks` rows are for.
    pub runtimes: HashSet<String>,
}

/// Each source that has a `files` row in `catalog`, with what the
/// catalog holds of it.
pub fn indexed(catalog: &Out) -> Result<BTreeMap<String, Indexed>, PartError> {
    let mut out: BTreeMap<String, Indexed> = BTreeMap::new();
    for path in catalog.parts(FILES)? {
        for batch in read(&path)? {
            let col = |name: &str| batch.column_by_name(name).map(Arc::clone);
            let missing = || err(&path, "not a files part: a column is missing");
            let other = || err(&path, "not a files part: a column has another type");
            let (source, size, mtime, etag, sha256, error) = (
                col("source").ok_or_else(missing)?,
                col("size").ok_or_else(missing)?,
                col("mtime").ok_or_else(missing)?,
                col("etag").ok_or_else(missing)?,
                col("sha256").ok_or_else(missing)?,
                col("error").ok_or_else(missing)?,
            );
            let stamps = col("data_stamps");
            let source = source.as_string_opt::<i32>().ok_or_else(other)?;
            let size = size.as_primitive_opt::<UInt64Type>().ok_or_else(other)?;
            let mtime = (mtime.as_primitive_opt::<TimestampMicrosecondType>()).ok_or_else(other)?;
            let etag = etag.as_string_opt::<i32>().ok_or_else(other)?;
            let sha256 = sha256.as_string_opt::<i32>().ok_or_else(other)?;
            let error = error.as_string_opt::<i32>().ok_or_else(other)?;
            let stamps = match &stamps {
                Some(s) => Some(s.as_list_opt::<i32>().ok_or_else(other)?),
                None => None,
            };
            for i in 0..batch.num_rows() {
                let v = |a: &dyn Array| a.is_valid(i);
                let data = match stamps {
                    Some(list) if list.is_valid(i) => {
                        Some(stamps_of(list.value(i).as_ref()).ok_or_else(other)?)
                    }
                    Some(_) => Some(Vec::new()),
                    None => None,
                };
                out.insert(
                    source.value(i).to_owned(),
                    Indexed {
                        size: v(size).then(|| size.value(i)),
                        mtime: v(mtime).then(|| mtime.value(i)),
                        etag: v(etag).then(|| etag.value(i).to_owned()),
                        data,
                        hashed: v(sha256),
                        failed: v(error),
                        runtimes: HashSet::new(),
                    },
                );
            }
        }
    }
    for path in catalog.parts(CHECKS)? {
        for batch in read(&path)? {
            let col = |name: &str| {
                batch
                    .column_by_name(name)
                    .and_then(|c| c.as_string_opt::<i32>())
                    .ok_or_else(|| err(&path, "not a checks part: a column is missing"))
            };
            let (source, runtime) = (col("source")?, col("runtime")?);
            for i in 0..batch.num_rows() {
                if let Some(f) = out.get_mut(source.value(i))
                    && runtime.is_valid(i)
                {
                    f.runtimes.insert(runtime.value(i).to_owned());
                }
            }
        }
    }
    Ok(out)
}

/// The stamps of one `data_stamps` list.
fn stamps_of(a: &dyn Array) -> Option<Vec<Stamp>> {
    let s = a.as_struct_opt()?;
    let path = s.column_by_name("path")?.as_string_opt::<i32>()?;
    let size = s.column_by_name("size")?.as_primitive_opt::<UInt64Type>()?;
    let mtime = (s.column_by_name("mtime")?).as_primitive_opt::<TimestampMicrosecondType>()?;
    Some(
        (0..s.len())
            .map(|i| Stamp {
                path: path.value(i).to_owned(),
                size: size.is_valid(i).then(|| size.value(i)),
                mtime: mtime.is_valid(i).then(|| mtime.value(i)),
            })
            .collect(),
    )
}

fn read(path: &Path) -> Result<Vec<RecordBatch>, PartError> {
    let file = File::open(path).map_err(|e| err(path, e))?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .and_then(|b| b.build())
        .map_err(|e| err(path, e))?;
    reader
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| err(path, e))
}

/// Rewrites the parts under `dir` without the rows of `sources` (which
/// this run indexes anew), each through a temporary file and a rename; a
/// part left with no rows is removed.
pub fn drop_rows(catalog: &Out, sources: &HashSet<String>) -> Result<(), PartError> {
    if sources.is_empty() {
        return Ok(());
    }
    // `files` first: a file without its `files` row is indexed again by
    // the next run, whatever its other rows.
    for table in TABLES {
        for path in catalog.parts(table)? {
            let batches = read(&path)?;
            let mut kept = Vec::new();
            let mut dropped = 0;
            for b in &batches {
                let Some(source) = b
                    .column_by_name("source")
                    .and_then(|c| c.as_any().downcast_ref::<StringArray>())
                else {
                    return Err(err(&path, "a part without a source column"));
                };
                let keep: BooleanArray = (0..b.num_rows())
                    .map(|i| Some(!sources.contains(source.value(i))))
                    .collect();
                dropped += keep.false_count();
                kept.push(
                    arrow_select::filter::filter_record_batch(b, &keep)
                        .map_err(|e| err(&path, e))?,
                );
            }
            if dropped == 0 {
                continue;
            }
            let rows: usize = kept.iter().map(RecordBatch::num_rows).sum();
            if rows == 0 {
                catalog.remove(table, &path)?;
                continue;
            }
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("part");
            let tmp = path.with_file_name(format!(".{name}.tmp"));
            let file = File::create(&tmp).map_err(|e| err(&tmp, e))?;
            let props = WriterProperties::builder()
                .set_compression(Compression::SNAPPY)
                .build();
            let mut w = ArrowWriter::try_new(file, kept[0].schema(), Some(props))
                .map_err(|e| err(&tmp, e))?;
            for b in &kept {
                w.write(b).map_err(|e| err(&tmp, e))?;
            }
            let file = w.into_inner().map_err(|e| err(&tmp, e))?;
            file.sync_all().map_err(|e| err(&tmp, e))?;
            std::fs::rename(&tmp, &path).map_err(|e| err(&path, e))?;
            catalog.publish(table, &path)?;
        }
    }
    Ok(())
}
