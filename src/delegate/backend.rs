//! The seam every decoded backend sits behind: a [`Backend`] says which
//! delegate id it decodes and how, and what it decodes is a [`Decoded`]
//! that summarises itself, names its weights, lays out its folder and
//! renders its lazily made files. [`crate::delegate::backend`] is the one
//! place that picks a backend, by delegate id (never by magic bytes:
//! WebGPU reuses Vulkan's `VH00`).

use std::ops::Range;

use serde_json::Value;

use super::artifact::Specs;
use super::folder::{Layout, Paths};
use super::{Bytes, Lookup, Summary, WeightName};
use crate::format::Result;

/// A delegate backend ptefs decodes.
pub trait Backend: Sync {
    /// The delegate id exporters write (`XnnpackBackend`).
    fn id(&self) -> &'static str;

    /// The folder its decoded payloads get (`xnnpack`).
    fn folder(&self) -> &'static str;

    /// Decodes `payload`, with the delegate's compile specs at hand (some
    /// backends read the payload with them: AOTInductor's keys by method
    /// name, QNN's options), finding the named data it refers to in
    /// `named`. Errors name what is wrong and where; a weight whose bytes
    /// cannot be found is not an error but a weight that says why.
    fn decode<'a>(
        &self,
        payload: &'a [u8],
        specs: Specs<'_, 'a>,
        named: &dyn Lookup<'a>,
    ) -> Result<Box<dyn Decoded<'a> + 'a>>;

    /// `header.json`, with offsets in the file (`at`: the payload's file
    /// offset), when the payload's header reads, decoded or not.
    fn header(&self, _payload: &[u8], _at: u64) -> Option<Value> {
        None
    }

    /// The named-data keys `payload` (with its compile specs) refers to,
    /// each once, read with as little decoding as possible (to find the
    /// data files holding them).
    fn named_keys<'a>(&self, _payload: &'a [u8], _specs: Specs<'_, 'a>) -> Result<Vec<&'a str>> {
        Ok(Vec::new())
    }

    /// The named-data entries a rendered file reads whole (AOTInductor's
    /// library, for `symbols.txt`), for sources fetched in ranges: the
    /// program's own entries of these keys are fetched with the payload.
    fn reads_named<'a>(&self, _payload: &'a [u8], _specs: Specs<'_, 'a>) -> Vec<&'a str> {
        Vec::new()
    }

    /// Which of its nodes the events a delegate recorded while profiled
    /// timed: `ids` are the events' string debug ids in the order first
    /// recorded within one call. `None` when the payload cannot say (by
    /// default).
    fn profile_nodes(&self, _payload: &[u8], _ids: &[&str]) -> Option<super::ProfileNodes> {
        None
    }

    /// The payload ranges decoding reads, for sources fetched in ranges:
    /// `payload` is the payload as held so far (bytes not yet fetched read
    /// as zeros) and `have` says whether a range is held. Called again
    /// until it asks for nothing not held. By default: all of it.
    fn fetch(&self, payload: &[u8], _have: &dyn Fn(&Range<u64>) -> bool) -> Vec<Range<u64>> {
        std::iter::once(0..payload.len() as u64).collect()
    }
}

/// A decoded payload.
pub trait Decoded<'a>: std::fmt::Debug {
    /// Node counts per operator and bytes by kind, for `inspect`.
    fn summary(&self) -> Summary;

    /// Every weight with its stable name and where its bytes are (`None`
    /// when they cannot be found), for pairing two versions of a model.
    fn weights(&self) -> Vec<(WeightName, Option<Bytes<'a>>)>;

    /// What its folder shows.
    fn layout(&self) -> Layout<'_>;

    /// The contents of lazily rendered file `path` ([`Layout`]'s
    /// `File::Rendered`); `paths` holds each weight's path in the tree.
    fn render<'r>(&'r self, path: &str, paths: &'r Paths) -> Rendered<'r>;

    /// Key header fields and what they say, for `inspect` and `diff`
    /// (none by default).
    fn facts(&self) -> Vec<(String, String)> {
        Vec::new()
    }
}

/// A rendered file's contents.
pub enum Rendered<'r> {
    /// JSON, written in the tree's JSON style.
    Json(Box<dyn erased_serde::Serialize + 'r>),
    /// Text or bytes.
    Bytes(Vec<u8>),
    /// The backend renders no such file.
    None,
}

impl Rendered<'_> {
    /// Text as a rendered file.
    pub fn text(s: String) -> Self {
        Rendered::Bytes(s.into_bytes())
    }
}

/// The methods every `impl Backend` spells the same way: `id` and `folder`,
/// and, for a backend whose decoding needs the payload and its named data
/// but not the compile specs, `decode` as a call that returns its
/// [`Decoded`] (the parameters named as the caller names them, so the call
/// reads as written):
///
/// ```ignore
/// impl Backend for Mlx {
///     backend_basics! {
///         id: super::BACKEND_ID,
///         folder: "mlx",
///         decode: |payload, named| super::decode(payload, named),
///     }
/// }
/// ```
macro_rules! backend_basics {
    (id: $id:expr, folder: $folder:expr $(,)?) => {
        fn id(&self) -> &'static str {
            $id
        }

        fn folder(&self) -> &'static str {
            $folder
        }
    };
    (
        id: $id:expr,
        folder: $folder:expr,
        decode: |$payload:ident, $named:ident| $call:expr $(,)?
    ) => {
        $crate::delegate::backend::backend_basics!(id: $id, folder: $folder);

        fn decode<'a>(
            &self,
            $payload: &'a [u8],
            _specs: $crate::delegate::artifact::Specs<'_, 'a>,
            $named: &dyn $crate::delegate::Lookup<'a>,
        ) -> $crate::format::Result<Box<dyn $crate::delegate::Decoded<'a> + 'a>> {
            Ok(Box::new($call?))
        }
    };
}
pub(crate) use backend_basics;
