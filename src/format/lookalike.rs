//! What a file that is not an ExecuTorch file looks like, when its first
//! bytes (or a zip's member names) say: so that an error can name the
//! format someone passed by mistake and say what to do with it.

/// What `bytes` look like, as a phrase ending the "not an ExecuTorch
/// file" error; `None` when nothing is recognised.
pub fn of_bytes(bytes: &[u8]) -> Option<&'static str> {
    let at = |range: std::ops::Range<usize>| bytes.get(range).unwrap_or_default();
    if at(0..4) == b"VGF1" {
        return Some(
            "it looks like a VGF file (Arm's ML SDK format); a program delegated to VgfBackend holds one, which ptefs opens",
        );
    }
    if at(0..4) == b"GGUF" {
        return Some("it looks like a GGUF model (llama.cpp's format)");
    }
    if at(4..8) == b"TFL3" {
        return Some("it looks like a TensorFlow Lite model (a flatbuffer with identifier TFL3)");
    }
    if at(0..4) == b"\x7fELF" {
        return Some("it looks like an ELF binary or shared library");
    }
    if at(0..6) == b"\x93NUMPY" {
        return Some("it looks like a NumPy .npy array");
    }
    if looks_like_safetensors(bytes) {
        return Some(
            "it looks like a safetensors file; give it to --names to name a program's tensors after its keys",
        );
    }
    if bytes.first() == Some(&0x80) && matches!(bytes.get(1), Some(2..=5)) {
        return Some("it looks like a Python pickle (a torch.save file of the old format)");
    }
    if looks_like_onnx(bytes) {
        return Some("it looks like an ONNX model (a protobuf ModelProto)");
    }
    None
}

/// What a zip archive without a package's members looks like, from the
/// names of its members.
pub fn of_zip(names: &[&str]) -> Option<&'static str> {
    let any = |f: &dyn Fn(&str) -> bool| names.iter().any(|n| f(n));
    if any(&|n| {
        n.contains("debug_handle_map") || n.contains("edge_dialect") || n.starts_with("etrecord")
    }) {
        return Some(
            "it looks like an ETRecord (what export records for the devtools); open the .pte it was exported with",
        );
    }
    if any(&|n| {
        n.ends_with("serialized_exported_program.json")
            || n.contains("/models/") && n.ends_with(".json")
    }) {
        return Some("it looks like a PyTorch exported program (.pt2, from torch.export.save)");
    }
    if any(&|n| n.ends_with("/data.pkl") || n == "data.pkl") {
        return Some("it looks like a PyTorch checkpoint (torch.save's zip)");
    }
    None
}

/// A u64 header length, then a JSON object of that many bytes.
fn looks_like_safetensors(bytes: &[u8]) -> bool {
    let Some(len) = bytes
        .get(..8)
        .map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default()))
    else {
        return false;
    };
    (2..(1 << 30)).contains(&len) && bytes.get(8) == Some(&b'{') && (8 + len) <= bytes.len() as u64
}

/// ModelProto starts with `ir_version` (field 1, varint) and names its
/// producer or domain in text soon after.
fn looks_like_onnx(bytes: &[u8]) -> bool {
    let head = bytes.get(..bytes.len().min(64)).unwrap_or_default();
    bytes.first() == Some(&0x08)
        && [&b"pytorch"[..], b"onnx", b"tf2onnx", b"skl2onnx"]
            .iter()
            .any(|w| head.windows(w.len()).any(|x| x == *w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_people_pass_by_mistake_are_named() {
        assert!(of_bytes(b"VGF1\0\0\0\0").unwrap().contains("VGF"));
        assert!(of_bytes(b"GGUF\x03\0\0\0").unwrap().contains("GGUF"));
        let mut st = 4u64.to_le_bytes().to_vec();
        st.extend_from_slice(b"{ } ");
        assert!(of_bytes(&st).unwrap().contains("safetensors"));
        assert!(
            of_bytes(b"\x08\x07\x12\x07pytorch")
                .unwrap()
                .contains("ONNX")
        );
        assert_eq!(of_bytes(b"\0\0\0\0ZZZZ"), None);
        assert!(
            of_zip(&["etrecord/debug_handle_map"])
                .unwrap()
                .contains("ETRecord")
        );
        assert!(
            of_zip(&["archive/data.pkl"])
                .unwrap()
                .contains("checkpoint")
        );
        assert_eq!(of_zip(&["a.txt"]), None);
    }
}
