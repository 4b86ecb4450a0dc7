//! What the tree knows of each delegate's directory, set where the
//! directory is built, so that readers of the tree ask it which delegate
//! and backend a file belongs to instead of reading them out of paths.

/// A delegate's directory (`methods/forward/delegates/0-XnnpackBackend`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DelegateDir {
    /// The method's directory and the delegate's, as the tree names them
    /// (`forward/0-XnnpackBackend`).
    pub label: String,
    /// The delegate id (`XnnpackBackend`), as the directory's name spells it.
    pub backend: String,
    /// The name of the method calling the delegate (`forward`), as the
    /// program spells it.
    pub method: String,
}
