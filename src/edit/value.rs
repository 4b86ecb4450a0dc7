//! New bytes for a stored tensor, from what a user gives: a `.npy` whose
//! type and shape match, or raw bytes of exactly the tensor's size.

use super::npy;
use super::{EditError, Result, Stored};
use crate::format::scalar;

/// The bytes to store for the tensor `to` (reached through tree `path`)
/// from `given` (the contents of `what`, a file name or `-`).
pub fn new_bytes(to: &Stored, path: &str, what: &str, given: &[u8]) -> Result<Vec<u8>> {
    let mismatch = |why: String| EditError::Mismatch {
        path: format!("{path}={what}"),
        why,
    };
    let want = to.span.len;
    if let Some(served) = &to.header {
        // A .npy path: the file must be what reading it gives, header and all.
        if !npy::is_npy(given) {
            return Err(mismatch(format!(
                "{what} is not a .npy file, and {path} takes one (write raw bytes to the .bin beside it)"
            )));
        }
        let h = npy::parse(given).map_err(|e| mismatch(format!("{what}: {e}")))?;
        let s = npy::parse(served).map_err(|e| mismatch(format!("{path}: {e}")))?;
        if (&h.descr, &h.shape) != (&s.descr, &s.shape) {
            return Err(mismatch(format!(
                "{what} is dtype {} shape {}; {path} is dtype {} shape {}",
                h.descr,
                h.shape_text(),
                s.descr,
                s.shape_text()
            )));
        }
        if given.get(..served.len()) != Some(&served[..]) {
            return Err(mismatch(format!(
                "{what}'s .npy header differs byte for byte from the one {path} serves \
                 (fortran_order {}, {} header bytes against {}); save it with the same header or write raw bytes to the .bin",
                h.fortran_order,
                h.len,
                served.len()
            )));
        }
        return exact(&given[served.len()..], want, what, path);
    }
    if npy::is_npy(given) {
        let h = npy::parse(given).map_err(|e| mismatch(format!("{what}: {e}")))?;
        let Some((dtype, sizes)) = &to.tensor else {
            return Err(mismatch(format!(
                "{what} is a .npy, but {path} is {}, with no one dtype; give raw bytes, or set a method's tensor file that uses it",
                to.describe()
            )));
        };
        let descr = dtype.element().and_then(scalar::numpy).map(|n| n.descr);
        let shape: Vec<u64> = sizes.iter().map(|&d| d.max(0) as u64).collect();
        let Some(descr) = descr else {
            return Err(mismatch(format!(
                "{what} is a .npy, but {} ({}) has no NumPy type; give its raw bytes",
                path,
                to.describe()
            )));
        };
        if h.descr != descr || h.shape != shape {
            return Err(mismatch(format!(
                "{what} is dtype {} shape {}; {path} is {} (dtype {descr} shape {})",
                h.descr,
                h.shape_text(),
                to.describe(),
                npy::shape_text(&shape)
            )));
        }
        if h.fortran_order && shape.iter().filter(|&&d| d > 1).count() > 1 {
            return Err(mismatch(format!(
                "{what} is in Fortran order; the tensor is stored in C order (save it with numpy.ascontiguousarray)"
            )));
        }
        return exact(&given[h.len..], want, what, path);
    }
    exact(given, want, what, path)
}

/// `data` if it is exactly `want` bytes.
fn exact(data: &[u8], want: u64, what: &str, path: &str) -> Result<Vec<u8>> {
    if data.len() as u64 != want {
        return Err(EditError::Mismatch {
            path: format!("{path}={what}"),
            why: format!(
                "{what} holds {} bytes of data; {path} holds {want}",
                data.len()
            ),
        });
    }
    Ok(data.to_vec())
}
