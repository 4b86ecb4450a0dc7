//! Which stored bytes a tree file serves, for an edit made through it.
//!
//! The tree already records, for every file, the span of a source it
//! serves; an edit takes that span as it is. Only files whose bytes are a
//! stored tensor's bytes as stored can be edited: rendered files (JSON,
//! text, `.npy` views widened or repacked from what is stored) and stored
//! blobs that are no one tensor (whole segments, delegate payloads) are
//! refused. A named blob (`named/<key>.bin`, a `.ptd`'s `tensors/<key>.bin`
//! of a key with no layout) is one value a delegate reads, kept as raw
//! bytes: it takes raw bytes of its size.

use std::sync::Arc;

use super::{EditError, Result};
use crate::format::Span;
use crate::tree::{Content, Dtype, Ino, SourceId, Tree};

/// The stored bytes a tree file serves.
#[derive(Debug, Clone)]
pub struct Stored {
    /// The source holding them.
    pub source: SourceId,
    /// Where they are in it.
    pub span: Span,
    /// The `.npy` header served before them, for a `.npy` file.
    pub header: Option<Arc<[u8]>>,
    /// The tensor's element type and sizes; `None` for a constant buffer,
    /// which tensors of several types may share, or a named blob, whose
    /// layout only the delegate reading it knows.
    pub tensor: Option<(Dtype, Arc<[i64]>)>,
}

impl Stored {
    /// The dtype and shape as messages show them: `FLOAT [3, 4]`.
    pub fn describe(&self) -> String {
        match &self.tensor {
            Some((dtype, sizes)) => format!("{} {:?}", dtype.name(), &sizes[..]),
            None => format!("{} stored bytes of no one type", self.span.len),
        }
    }
}

/// The stored tensor bytes that file `ino` (at tree `path`) serves, or why
/// it serves none that can be edited.
pub fn stored(tree: &Tree, ino: Ino, path: &str) -> Result<Stored> {
    let refuse = |why: &str| EditError::NotStored {
        path: path.to_owned(),
        why: why.to_owned(),
    };
    let Some(file) = tree.file(ino) else {
        return Err(refuse("is a directory; give a tensor's .bin or .npy file"));
    };
    let (source, span, header) = match &*file.content {
        Content::Source { source, span } => (*source, *span, None),
        Content::Prefixed {
            prefix,
            source,
            span,
        } => (*source, *span, Some(prefix.clone())),
        Content::Widened { .. } => {
            return Err(refuse(
                "serves bfloat16 values widened to float32, not the stored bytes; set the .bin beside it",
            ));
        }
        Content::Assembled(_) => {
            return Err(refuse(
                "holds every tensor of the file; set them from it with `ptefs set --from`, or set a tensor's own .bin or .npy",
            ));
        }
        Content::Generated(_) | Content::Lazy(_) => {
            return Err(refuse(
                "is rendered from the file (text, JSON or a converted view), not stored bytes; only a stored tensor's .bin or .npy can be set",
            ));
        }
    };
    let tensor = file.tensor.map(|m| (m.dtype, m.sizes.clone()));
    if tensor.is_none() && !tree.is_constant_buffer(ino) && !tree.is_named_blob(ino) {
        return Err(refuse(
            "holds stored bytes that are not one tensor (a segment, a delegate's payload); only a stored tensor's .bin or .npy can be set",
        ));
    }
    Ok(Stored {
        source,
        span,
        header,
        tensor,
    })
}
