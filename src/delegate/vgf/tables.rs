//! The three flatbuffer sections, each verified on its own so that one
//! damaged table leaves the others shown.

use crate::format::{Result, Span};
use crate::schema::vgf as fb;

/// The module table at `span`.
pub fn modules(payload: &[u8], span: Span) -> Result<fb::ModuleTable<'_>> {
    crate::delegate::flatbuffer::root::<fb::ModuleTable>(payload, span, "ModuleTable")
}

/// The model sequence table at `span`.
pub fn sequence(payload: &[u8], span: Span) -> Result<fb::ModelSequenceTable<'_>> {
    crate::delegate::flatbuffer::root::<fb::ModelSequenceTable>(payload, span, "ModelSequenceTable")
}

/// The model resource table at `span`.
pub fn resources(payload: &[u8], span: Span) -> Result<fb::ModelResourceTable<'_>> {
    crate::delegate::flatbuffer::root::<fb::ModelResourceTable>(payload, span, "ModelResourceTable")
}

/// A module's code kind as Arm's `vgf_dump` names it (`SPIR-V`, `GLSL`,
/// `HLSL`, `None`) and whether code is there.
pub fn code_kind(m: fb::Module<'_>) -> (&'static str, bool) {
    if let Some(c) = m.code_as_hlsl() {
        ("HLSL", c.code().is_some_and(|s| !s.is_empty()))
    } else if let Some(c) = m.code_as_glsl() {
        ("GLSL", c.code().is_some_and(|s| !s.is_empty()))
    } else if let Some(c) = m.code_as_spirv() {
        ("SPIR-V", c.words().is_some_and(|w| !w.is_empty()))
    } else {
        ("None", false)
    }
}

/// Where a module's code is in the payload and the extension its file
/// gets (`spv`, `glsl`, `hlsl`), when it has code.
pub fn code_span(payload: &[u8], m: fb::Module<'_>) -> Option<(Span, &'static str)> {
    if let Some(w) = m.code_as_spirv().and_then(|c| c.words()) {
        return Some((Span::of_vector(payload, Some(w.bytes()))?, "spv"));
    }
    let (text, ext) = if let Some(c) = m.code_as_glsl() {
        (c.code(), "glsl")
    } else {
        (m.code_as_hlsl().and_then(|c| c.code()), "hlsl")
    };
    Some((Span::of_vector(payload, text.map(str::as_bytes))?, ext))
}
