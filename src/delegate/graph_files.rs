//! The files a backend that decodes a graph renders when first read:
//! `graph.json` (nodes and values with each weight's path), `code.txt`
//! (one line per node) and `graph.dot` (for Graphviz). Each backend says
//! how it draws them; their names and the choice among them live here.

use super::Rendered;
use super::folder::File;

/// The graph files, in the order a backend's folder lists them.
pub const NAMES: [&str; 3] = ["graph.json", "code.txt", "graph.dot"];

/// The graph files as files of a backend's folder, rendered when read.
pub fn files<'a>() -> impl Iterator<Item = File<'a>> {
    NAMES.into_iter().map(|p| File::Rendered { path: p.into() })
}

/// Graph file `path`, drawn by the one of `json`, `code` and `dot` it
/// names; [`Rendered::None`] for any other path (only the one asked for
/// is drawn).
pub fn render<'r, J: erased_serde::Serialize + 'r>(
    path: &str,
    json: impl FnOnce() -> J,
    code: impl FnOnce() -> String,
    dot: impl FnOnce() -> String,
) -> Rendered<'r> {
    match path {
        "graph.json" => Rendered::Json(Box::new(json())),
        "code.txt" => Rendered::text(code()),
        "graph.dot" => Rendered::text(dot()),
        _ => Rendered::None,
    }
}
