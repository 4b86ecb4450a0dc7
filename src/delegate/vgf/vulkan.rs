//! Vulkan enum values VGF stores as plain numbers: descriptor types and
//! the formats of tensors, named as Vulkan's headers name them, and how
//! NumPy views a tensor of each format.

/// The descriptor type stored for resources that have none.
pub const NO_DESCRIPTOR: u32 = u32::MAX;

/// `VkDescriptorType` value `v` by name: `none` for [`NO_DESCRIPTOR`],
/// `Unknown(v)` for a value not named here.
pub fn descriptor_type(v: u32) -> String {
    let name = match v {
        NO_DESCRIPTOR => "none",
        0 => "VK_DESCRIPTOR_TYPE_SAMPLER",
        1 => "VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER",
        2 => "VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE",
        3 => "VK_DESCRIPTOR_TYPE_STORAGE_IMAGE",
        4 => "VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER",
        5 => "VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER",
        6 => "VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER",
        7 => "VK_DESCRIPTOR_TYPE_STORAGE_BUFFER",
        8 => "VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER_DYNAMIC",
        9 => "VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC",
        10 => "VK_DESCRIPTOR_TYPE_INPUT_ATTACHMENT",
        1_000_460_000 => "VK_DESCRIPTOR_TYPE_TENSOR_ARM",
        _ => return format!("Unknown({v})"),
    };
    name.to_owned()
}

/// A single-component format: its name, bytes per element and NumPy
/// descr (`None` where NumPy's reading would differ from Vulkan's, as for
/// normalized and scaled formats).
fn format_info(v: u32) -> Option<(&'static str, u64, Option<&'static str>)> {
    Some(match v {
        0 => ("VK_FORMAT_UNDEFINED", 0, None),
        9 => ("VK_FORMAT_R8_UNORM", 1, None),
        10 => ("VK_FORMAT_R8_SNORM", 1, None),
        11 => ("VK_FORMAT_R8_USCALED", 1, None),
        12 => ("VK_FORMAT_R8_SSCALED", 1, None),
        13 => ("VK_FORMAT_R8_UINT", 1, Some("|u1")),
        14 => ("VK_FORMAT_R8_SINT", 1, Some("|i1")),
        15 => ("VK_FORMAT_R8_SRGB", 1, None),
        70 => ("VK_FORMAT_R16_UNORM", 2, None),
        71 => ("VK_FORMAT_R16_SNORM", 2, None),
        72 => ("VK_FORMAT_R16_USCALED", 2, None),
        73 => ("VK_FORMAT_R16_SSCALED", 2, None),
        74 => ("VK_FORMAT_R16_UINT", 2, Some("<u2")),
        75 => ("VK_FORMAT_R16_SINT", 2, Some("<i2")),
        76 => ("VK_FORMAT_R16_SFLOAT", 2, Some("<f2")),
        98 => ("VK_FORMAT_R32_UINT", 4, Some("<u4")),
        99 => ("VK_FORMAT_R32_SINT", 4, Some("<i4")),
        100 => ("VK_FORMAT_R32_SFLOAT", 4, Some("<f4")),
        110 => ("VK_FORMAT_R64_UINT", 8, Some("<u8")),
        111 => ("VK_FORMAT_R64_SINT", 8, Some("<i8")),
        112 => ("VK_FORMAT_R64_SFLOAT", 8, Some("<f8")),
        1_000_460_000 => ("VK_FORMAT_R8_BOOL_ARM", 1, Some("|b1")),
        _ => return None,
    })
}

/// `VkFormat` value `v` by name, `Unknown(v)` for one not named here
/// (formats of more than one component, which tensors do not use).
pub fn format(v: u32) -> String {
    format_info(v).map_or_else(|| format!("Unknown({v})"), |f| f.0.to_owned())
}

/// `VkFormat` value `v`'s name, when it is named here.
pub fn format_name(v: u32) -> Option<&'static str> {
    format_info(v).map(|f| f.0)
}

/// A short name for `code.txt` (`f32`, `i8`), or the format's number.
pub fn short(v: u32) -> String {
    let s = match v {
        13 => "u8",
        14 => "i8",
        74 => "u16",
        75 => "i16",
        76 => "f16",
        98 => "u32",
        99 => "i32",
        100 => "f32",
        110 => "u64",
        111 => "i64",
        112 => "f64",
        1_000_460_000 => "bool",
        _ => return format_info(v).map_or_else(|| format!("fmt{v}"), |f| f.0.to_owned()),
    };
    s.to_owned()
}

/// Bytes per element and NumPy descr of format `v`, when NumPy can view
/// it.
pub fn numpy(v: u32) -> Option<(u64, &'static str)> {
    let (_, size, descr) = format_info(v)?;
    Some((size, descr?))
}
