//! The globals a pickle may name: those `torch.save` archives use, and
//! nothing that could run code if the value were later handed to Python.

/// Globals `torch.save` archives use: tensor and storage rebuilds, the
/// typed storages, dtypes, devices, `OrderedDict` and the like.
pub const ALLOWED: &[&str] = &[
    "torch._utils._rebuild_tensor_v2",
    "torch._utils._rebuild_tensor_v3",
    "torch._utils._rebuild_parameter",
    "torch._utils._rebuild_parameter_with_state",
    "collections.OrderedDict",
    "torch.device",
    "torch.Size",
    "builtins.set",
    "builtins.frozenset",
    "_codecs.encode",
    "torch.UntypedStorage",
    "torch.FloatStorage",
    "torch.DoubleStorage",
    "torch.HalfStorage",
    "torch.BFloat16Storage",
    "torch.LongStorage",
    "torch.IntStorage",
    "torch.ShortStorage",
    "torch.CharStorage",
    "torch.ByteStorage",
    "torch.BoolStorage",
    "torch.ComplexFloatStorage",
    "torch.ComplexDoubleStorage",
    "torch.float32",
    "torch.float64",
    "torch.float16",
    "torch.bfloat16",
    "torch.int64",
    "torch.int32",
    "torch.int16",
    "torch.int8",
    "torch.uint8",
    "torch.bool",
];

/// A global the reader refuses, by its qualified name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct NotAllowed(pub(super) String);

impl std::fmt::Display for NotAllowed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "global {} is not one torch.save archives use; refused (nothing is imported or run)",
            self.0
        )
    }
}

/// The allowed global `module.name` refers to. Protocol 2 writes Python 2's
/// module names; Python maps them back, and so does this.
pub(super) fn lookup(module: &str, name: &str) -> Result<&'static str, NotAllowed> {
    let module = match module {
        "__builtin__" => "builtins",
        "copy_reg" => "copyreg",
        m => m,
    };
    let full = format!("{module}.{name}");
    ALLOWED
        .iter()
        .find(|g| **g == full)
        .copied()
        .ok_or(NotAllowed(full))
}
