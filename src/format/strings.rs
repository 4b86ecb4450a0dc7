//! Strings of the flatbuffers, read as bytes.
//!
//! The runtime loads programs whose names are not UTF-8, so the verifier
//! checks strings for bounds only (see `scripts/gen-schema.sh`). The
//! generated `&str` accessors would then build a `str` from unchecked bytes,
//! which is undefined behaviour for invalid UTF-8; every string field is read
//! through the functions here instead, which hand out a [`Name`].

use std::borrow::Cow;
use std::fmt;

use flatbuffers::{ForwardsUOffset, VOffsetT, Vector};

use crate::schema::bundled as bfb;
use crate::schema::flat_tensor as tfb;
use crate::schema::program as fb;

/// A string from a file: its exact bytes, which need not be UTF-8.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Name<'a>(&'a [u8]);

impl<'a> Name<'a> {
    /// A name with these bytes.
    pub fn new(bytes: &'a [u8]) -> Name<'a> {
        Name(bytes)
    }

    /// The exact bytes.
    pub fn bytes(self) -> &'a [u8] {
        self.0
    }

    /// The name as text when it is UTF-8.
    pub fn as_str(self) -> Option<&'a str> {
        std::str::from_utf8(self.0).ok()
    }

    /// True when the name is not UTF-8, so [`show`](Self::show) escapes it.
    pub fn is_escaped(self) -> bool {
        self.as_str().is_none()
    }

    /// The name as text: unchanged when it is UTF-8; otherwise every byte
    /// that is not part of a UTF-8 character, and every `%`, as `%XX`. The
    /// escaped form is exact: decoding `%XX` gives the bytes back.
    pub fn show(self) -> Cow<'a, str> {
        match self.as_str() {
            Some(s) => Cow::Borrowed(s),
            None => Cow::Owned(escape(self.0)),
        }
    }

    /// True for the empty name.
    pub fn is_empty(self) -> bool {
        self.0.is_empty()
    }

    /// Length in bytes.
    pub fn len(self) -> usize {
        self.0.len()
    }
}

/// `bytes` with `%` and every byte outside a valid UTF-8 character as `%XX`.
fn escape(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 8);
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '%' => out.push_str("%25"),
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

impl fmt::Display for Name<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.show())
    }
}

impl fmt::Debug for Name<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.show(), f)
    }
}

impl From<Name<'_>> for String {
    /// The [`show`](Name::show) form.
    fn from(name: Name<'_>) -> String {
        name.show().into_owned()
    }
}

impl AsRef<[u8]> for Name<'_> {
    fn as_ref(&self) -> &[u8] {
        self.0
    }
}

impl PartialEq<str> for Name<'_> {
    fn eq(&self, other: &str) -> bool {
        self.0 == other.as_bytes()
    }
}

impl PartialEq<&str> for Name<'_> {
    fn eq(&self, other: &&str) -> bool {
        self.0 == other.as_bytes()
    }
}

impl serde::Serialize for Name<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.show())
    }
}

/// The bytes of the string (or `[ubyte]`) field at `slot` of `table`.
///
/// # Safety
/// `table` must have been reached from a root that passed verification
/// with a schema in which `slot` holds a string or a `[ubyte]`.
unsafe fn field<'a>(table: &flatbuffers::Table<'a>, slot: VOffsetT) -> Option<Name<'a>> {
    // SAFETY: by the contract above the verifier checked that the field's
    // offset leads to a length prefix and that many bytes inside the buffer;
    // `Vector<u8>` reads exactly those, and `bytes()` needs no UTF-8.
    let v = unsafe { table.get::<ForwardsUOffset<Vector<'a, u8>>>(slot, None) };
    v.map(|v| Name(v.bytes()))
}

macro_rules! string_fields {
    ($($(#[$doc:meta])* $fun:ident: $table:ident :: $slot:ident;)*) => {$(
        $(#[$doc])*
        pub fn $fun<'a>(table: $table<'a>) -> Option<Name<'a>> {
            // SAFETY: tables of the generated types come only from roots
            // made by `verify::root` (or the crate's own verifier, which is
            // stricter), and both schemas give this slot a string or bytes.
            unsafe { field(&table._tab, $table::$slot) }
        }
    )*};
}

use bfb::BundledMethodTestSuite;
use fb::{
    BackendDelegate, CompileSpec, ContainerMetadata, ExecutionPlan, ExtraTensorInfo, Frame,
    Operator,
};
use tfb::NamedData as DataNamedData;

use crate::schema::etdump::{
    Allocator as EdAllocator, DebugEvent as EdDebugEvent, ProfileEvent as EdProfileEvent,
    RunData as EdRunData,
};

string_fields! {
    /// `ExecutionPlan.name`.
    plan_name: ExecutionPlan::VT_NAME;
    /// `Operator.name`.
    operator_name: Operator::VT_NAME;
    /// `Operator.overload`.
    operator_overload: Operator::VT_OVERLOAD;
    /// `ExtraTensorInfo.fully_qualified_name`.
    fully_qualified_name: ExtraTensorInfo::VT_FULLY_QUALIFIED_NAME;
    /// `BackendDelegate.id`.
    backend_id: BackendDelegate::VT_ID;
    /// `CompileSpec.key`.
    compile_spec_key: CompileSpec::VT_KEY;
    /// `Frame.filename`.
    frame_filename: Frame::VT_FILENAME;
    /// `Frame.name`.
    frame_name: Frame::VT_NAME;
    /// `Frame.context`.
    frame_context: Frame::VT_CONTEXT;
    /// `ContainerMetadata.encoded_inp_str`.
    encoded_inp_str: ContainerMetadata::VT_ENCODED_INP_STR;
    /// `ContainerMetadata.encoded_out_str`.
    encoded_out_str: ContainerMetadata::VT_ENCODED_OUT_STR;
    /// `BundledMethodTestSuite.method_name`.
    test_suite_method: BundledMethodTestSuite::VT_METHOD_NAME;
    /// `FlatTensor`'s `NamedData.key`.
    data_key: DataNamedData::VT_KEY;
}

string_fields! {
    /// ETDump `RunData.name`.
    run_name: EdRunData::VT_NAME;
    /// ETDump `Allocator.name`.
    allocator_name: EdAllocator::VT_NAME;
    /// ETDump `ProfileEvent.name`.
    profile_event_name: EdProfileEvent::VT_NAME;
    /// ETDump `ProfileEvent.delegate_debug_id_str`.
    profile_event_delegate_id: EdProfileEvent::VT_DELEGATE_DEBUG_ID_STR;
    /// ETDump `DebugEvent.name`.
    debug_event_name: EdDebugEvent::VT_NAME;
    /// ETDump `DebugEvent.delegate_debug_id_str`.
    debug_event_delegate_id: EdDebugEvent::VT_DELEGATE_DEBUG_ID_STR;
}

/// `Program`'s `NamedData.key`.
pub fn named_data_key(table: fb::NamedData<'_>) -> Option<Name<'_>> {
    // SAFETY: as for the functions above.
    unsafe { field(&table._tab, fb::NamedData::VT_KEY) }
}

/// `String.string_val`.
pub fn string_val(table: fb::String<'_>) -> Option<Name<'_>> {
    // SAFETY: as for the functions above.
    unsafe { field(&table._tab, fb::String::VT_STRING_VAL) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_is_shown_as_is_and_the_rest_escaped_exactly() {
        assert_eq!(Name(b"fc1.weight").show(), "fc1.weight");
        assert_eq!(Name(b"100%").show(), "100%");
        assert!(!Name(b"100%").is_escaped());
        let odd = Name(b"a\xFF%b\xC3");
        assert!(odd.is_escaped());
        assert_eq!(odd.show(), "a%FF%25b%C3");
        assert_eq!(Name(b"\xC3\xA9\x80").show(), "é%80");
    }
}
