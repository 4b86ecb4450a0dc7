//! An opened set of files and its tree, served by the library's
//! filesystem core: each method is one or two [`Fs`] calls.

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use ptefs::fs::{FileKind, Fs};
use ptefs::source::MappedBytes;
use ptefs::tree::{Content, Ino};
use ptefs::view::{Request, View};

use crate::errors::{fs_error, open_error};
use crate::memory::Memory;

/// Files opened, validated and laid out as the mount shows them.
#[pyclass(frozen, module = "ptefs._ptefs")]
pub struct Tree {
    pub(crate) fs: Fs,
    /// What was opened, for reports that parse again.
    pub(crate) request: Request,
}

impl Tree {
    /// The inode at `path`.
    pub(crate) fn ino(&self, path: &str) -> PyResult<Ino> {
        self.fs.resolve(path).map_err(|e| fs_error(path, e))
    }
}

#[pymethods]
impl Tree {
    /// Opens `inputs` (paths, URLs or directories) with the data files
    /// `data` attached and the profile `profile` and ETRecord `etrecord`
    /// joined, as `ptefs ls` would.
    #[new]
    #[pyo3(signature = (
        inputs,
        data=Vec::new(),
        names=None,
        auto_data=true,
        recursive=false,
        profile=None,
        debug_buffer=None,
        etrecord=None,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        inputs: Vec<PathBuf>,
        data: Vec<PathBuf>,
        names: Option<PathBuf>,
        auto_data: bool,
        recursive: bool,
        profile: Option<PathBuf>,
        debug_buffer: Option<PathBuf>,
        etrecord: Option<PathBuf>,
    ) -> PyResult<Tree> {
        let request = Request {
            inputs,
            data,
            recursive,
            names,
            auto_data,
            debug_buffer,
            profile,
            etrecord,
        };
        let (view, request) = py.detach(|| (View::open(&request), request));
        let view = view.map_err(|e| open_error(py, e))?;
        Ok(Tree {
            fs: Fs::new(view),
            request,
        })
    }

    /// Warnings about what was opened, notes (data files attached by
    /// themselves) and files skipped in directories, one line each.
    fn messages(&self) -> Vec<String> {
        let view = self.fs.view();
        let mut out: Vec<String> = view
            .tree
            .warnings
            .iter()
            .map(|w| format!("warning: {w}"))
            .collect();
        out.extend(view.notes.iter().map(|n| format!("note: {n}")));
        out.extend(
            view.skipped.iter().map(|(p, why)| {
                format!("note: skipped {}: {why}", ptefs::source::redact::shown(p))
            }),
        );
        out
    }

    /// The sources, in the order opened: (name, path or URL redacted,
    /// size, remote).
    fn sources(&self) -> Vec<(String, String, u64, bool)> {
        self.fs
            .view()
            .sources
            .iter()
            .map(|s| {
                (
                    s.name.clone(),
                    ptefs::source::redact::shown(&s.path),
                    s.opened.len,
                    s.is_remote(),
                )
            })
            .collect()
    }

    /// The entries of directory `path`: (name, is a directory).
    fn listdir(&self, py: Python<'_>, path: &str) -> PyResult<Vec<(String, bool)>> {
        let ino = self.ino(path)?;
        py.detach(|| {
            let entries = self.fs.readdir(ino, 2)?;
            Ok(entries
                .map(|e| (e.name.into_owned(), e.kind == FileKind::Directory))
                .collect())
        })
        .map_err(|e| fs_error(path, e))
    }

    /// Every path under `path` (itself first unless it is the root),
    /// depth first in name order: (path, is a directory).
    fn walk(&self, py: Python<'_>, path: &str) -> PyResult<Vec<(String, bool)>> {
        let ino = self.ino(path)?;
        let tree = &self.fs.view().tree;
        Ok(py.detach(|| {
            self.fs
                .walk(ino)
                .filter(|(p, _)| !p.is_empty())
                .map(|(p, i)| (p, tree.is_dir(i)))
                .collect()
        }))
    }

    /// `path`'s attributes: kind, size, mode, links, inode, and its
    /// `user.ptefs.*` extended attributes.
    fn stat<'py>(&self, py: Python<'py>, path: &str) -> PyResult<Bound<'py, PyDict>> {
        let ino = self.ino(path)?;
        let attr = self.fs.getattr(ino).map_err(|e| fs_error(path, e))?;
        let xattrs = self.fs.xattrs(ino).map_err(|e| fs_error(path, e))?;
        let d = PyDict::new(py);
        let dir = attr.kind == FileKind::Directory;
        d.set_item("type", if dir { "directory" } else { "file" })?;
        d.set_item("size", attr.size)?;
        let kind_bits = if dir { libc_mode::DIR } else { libc_mode::REG };
        d.set_item("mode", kind_bits | u32::from(attr.perm))?;
        d.set_item("nlink", attr.nlink)?;
        d.set_item("ino", attr.ino)?;
        d.set_item("uid", attr.uid)?;
        d.set_item("gid", attr.gid)?;
        let x = PyDict::new(py);
        for (k, v) in xattrs {
            x.set_item(k, PyBytes::new(py, &v))?;
        }
        d.set_item("xattrs", x)?;
        Ok(d)
    }

    /// Up to `size` bytes of file `path` from `offset` (all of it by
    /// default), read as `ptefs cat` reads them.
    #[pyo3(signature = (path, offset=0, size=None))]
    fn read<'py>(
        &self,
        py: Python<'py>,
        path: &str,
        offset: u64,
        size: Option<u64>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let ino = self.ino(path)?;
        let bytes = py
            .detach(|| self.fs.read_copy(ino, offset, size.unwrap_or(u64::MAX)))
            .map_err(|e| fs_error(path, e))?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Where file `path`'s bytes can be viewed without copying: its
    /// rendered prefix (a `.npy` header, or nothing) and a [`Memory`] over
    /// the rest in a local source's map; `None` when some of its bytes
    /// are computed or the source is remote (then read it).
    fn mapped<'py>(
        &self,
        py: Python<'py>,
        path: &str,
    ) -> PyResult<Option<(Bound<'py, PyBytes>, Memory)>> {
        let ino = self.ino(path)?;
        let view = self.fs.view();
        let Some(file) = view.tree.file(ino) else {
            return Err(fs_error(path, ptefs::fs::FsError::IsDir(ino)));
        };
        let (prefix, source, span): (&[u8], _, _) = match &*file.content {
            Content::Source { source, span } => (&[], *source, *span),
            Content::Prefixed {
                prefix,
                source,
                span,
            } => (prefix, *source, *span),
            _ => return Ok(None),
        };
        let s = &view.sources[source];
        // A source that changed since the tree was built is refused as a
        // read of it would be.
        s.check_unchanged()
            .map_err(|e| fs_error(path, ptefs::fs::FsError::SourceChanged(e)))?;
        let MappedBytes::Map(map) = s.shared() else {
            return Ok(None);
        };
        let Some(memory) = Memory::new(MappedBytes::Map(map), span.offset, span.len) else {
            return Ok(None);
        };
        Ok(Some((PyBytes::new(py, prefix), memory)))
    }

    /// A `.npy` file's array as it can be viewed without copying: its
    /// descr, shape, whether it is in Fortran order, and a [`Memory`] over
    /// its data in a local source's map. A `.bin` whose `.npy` twin serves
    /// the same bytes is viewed through the twin. `None` when there is no
    /// such view (no file, no twin, computed bytes, a remote source).
    fn npy_view(&self, path: &str) -> PyResult<Option<NpyView>> {
        let view = self.fs.view();
        let tree = &view.tree;
        let Some(ino) = tree.resolve(path) else {
            return Ok(None);
        };
        let npy = match path.strip_suffix(".bin") {
            Some(stem) => {
                let twin = tree.resolve(&format!("{stem}.npy"));
                let served = |i| {
                    let f = tree.file(i)?;
                    match &*f.content {
                        Content::Source { source, span }
                        | Content::Prefixed { source, span, .. } => Some((*source, *span)),
                        _ => None,
                    }
                };
                match twin {
                    Some(t) if served(t).is_some() && served(t) == served(ino) => t,
                    _ => return Ok(None),
                }
            }
            None => ino,
        };
        let Some(file) = tree.file(npy) else {
            return Ok(None);
        };
        let Content::Prefixed {
            prefix,
            source,
            span,
        } = &*file.content
        else {
            return Ok(None);
        };
        let Some((descr, shape, fortran)) = npy_header(prefix) else {
            return Ok(None);
        };
        let s = &view.sources[*source];
        s.check_unchanged()
            .map_err(|e| fs_error(path, ptefs::fs::FsError::SourceChanged(e)))?;
        let MappedBytes::Map(map) = s.shared() else {
            return Ok(None);
        };
        Ok(Memory::new(MappedBytes::Map(map), span.offset, span.len)
            .map(|m| (descr, shape, fortran, m)))
    }

    /// Every stored tensor once, as JSON (see `tensors.rs`).
    fn tensors_json(&self, py: Python<'_>) -> PyResult<String> {
        py.detach(|| crate::tensors::list(&self.fs))
            .map_err(|e| crate::errors::Error::new_err(e.to_string()))
    }

    /// `ptefs inspect --json` of the first file, as JSON.
    #[pyo3(signature = (top=None))]
    fn inspect_json(&self, py: Python<'_>, top: Option<usize>) -> PyResult<String> {
        crate::reports::inspect(py, &self.request, top)
    }

    /// `ptefs check --json` of the first file against the runtime specs
    /// `runtime` (added up; the default spec when empty), as JSON.
    #[pyo3(signature = (runtime=Vec::new(), memory_limit=None))]
    fn check_json(
        &self,
        py: Python<'_>,
        runtime: Vec<String>,
        memory_limit: Option<u64>,
    ) -> PyResult<String> {
        crate::reports::check(py, &self.request, &runtime, memory_limit)
    }

    /// `ptefs report --json` of what is open, as JSON, and with `html`
    /// the self-contained page `ptefs report -o` writes.
    #[pyo3(signature = (html=false))]
    fn report_json(&self, py: Python<'_>, html: bool) -> PyResult<(String, Option<String>)> {
        py.detach(|| -> Result<_, ptefs::view::OpenError> {
            let mut view = View::open(&self.request)?;
            let report = view.report()?;
            let page = html.then(|| ptefs::report::page::html(&report));
            let json = serde_json::to_string(&report).unwrap_or_default();
            Ok((json, page))
        })
        .map_err(|e| open_error(py, e))
    }
}

/// File type bits of `st_mode`, as `stat(2)` gives them.
mod libc_mode {
    /// A directory.
    pub const DIR: u32 = 0o040000;
    /// A regular file.
    pub const REG: u32 = 0o100000;
}

/// A `.npy` array viewed in place: descr, shape, Fortran order, memory.
type NpyView = (String, Vec<u64>, bool, Memory);

/// The descr, shape and order of a `.npy` header as the tree renders them
/// (`{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }`);
/// `None` for anything else, which the caller reads the slow way.
fn npy_header(prefix: &[u8]) -> Option<(String, Vec<u64>, bool)> {
    let text = std::str::from_utf8(prefix.get(10..)?).ok()?;
    let descr = text.strip_prefix("{'descr': '")?;
    let (descr, rest) = descr.split_once('\'')?;
    let rest = rest.strip_prefix(", 'fortran_order': ")?;
    let (fortran, rest) = if let Some(r) = rest.strip_prefix("False") {
        (false, r)
    } else {
        (true, rest.strip_prefix("True")?)
    };
    let dims = rest.strip_prefix(", 'shape': (")?.split_once(')')?.0;
    let shape = dims
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(|d| d.parse().ok())
        .collect::<Option<Vec<u64>>>()?;
    Some((descr.to_owned(), shape, fortran))
}
