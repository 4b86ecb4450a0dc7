//! The `vela_bin_stream` wire format Arm's AoT flow writes: blocks one
//! after another, each a 32-byte header (a 16-byte NUL-padded name, a u32
//! size, an external flag byte and 11 reserved bytes) followed by `size`
//! bytes padded to a multiple of 16. The stream opens with an empty
//! `vela_bin_stream` block and closes with an empty `vela_end_stream` block
//! whose padded end is the payload's end. A block marked external holds a
//! 64-byte named-data key instead of its bytes.

use std::ops::Range;

use crate::format::{Span, le};

/// Bytes of a block header.
pub const HEADER_LEN: u64 = 32;
/// Bytes of a block name field.
const NAME_LEN: usize = 16;
/// The external flag value that makes a block's data a named-data key.
pub const EXTERNAL: u8 = 1;
/// The length of an external block's key, as the runtime requires.
pub const KEY_LEN: u64 = 64;
/// The first block's name.
pub const START: &str = "vela_bin_stream";
/// The last block's name.
pub const END: &str = "vela_end_stream";

/// One block, with spans relative to the payload's first byte.
#[derive(Debug, Clone)]
pub struct Block<'a> {
    /// Position in the stream, from 0.
    pub index: usize,
    /// The name up to its first NUL, as written (lossily decoded).
    pub name: String,
    /// The 32-byte header.
    pub header: Span,
    /// The data, `size` bytes after the header (no padding).
    pub data: Span,
    /// The external flag byte as written.
    pub external: u8,
    /// For an external block: the named-data key its data holds.
    pub key: Option<&'a str>,
}

impl Block<'_> {
    /// True when the runtime reads the block's bytes from named data.
    pub fn is_external(&self) -> bool {
        self.external == EXTERNAL
    }
}

/// The blocks that could be read, and what stopped the walk early.
#[derive(Debug, Default)]
pub struct Stream<'a> {
    /// Blocks in stream order.
    pub blocks: Vec<Block<'a>>,
    /// What is wrong with the stream, each naming the offset and field.
    pub errors: Vec<String>,
}

impl<'a> Stream<'a> {
    /// The first block named `name`.
    pub fn block(&self, name: &str) -> Option<&Block<'a>> {
        self.blocks.iter().find(|b| b.name == name)
    }
}

/// Rounds `n` up to a multiple of 16, as block data is padded.
fn padded(n: u64) -> Option<u64> {
    n.checked_add(15).map(|v| v & !15)
}

/// Walks `payload`'s blocks, stopping at the first one that does not fit
/// (every block before it is kept).
pub fn walk(payload: &[u8]) -> Stream<'_> {
    let total = payload.len() as u64;
    let mut s = Stream::default();
    let mut at = 0u64;
    while at < total {
        let index = s.blocks.len();
        match block(payload, index, at) {
            Ok((b, next)) => {
                let is_end = b.name == END;
                s.blocks.push(b);
                if is_end {
                    if next != total {
                        s.errors.push(format!(
                            "vela block {index} ({END}) at payload offset {at}: the stream ends at {next}, the payload at {total}"
                        ));
                    }
                    return s;
                }
                at = next;
            }
            Err(e) => {
                s.errors.push(e);
                return s;
            }
        }
    }
    s.errors.push(format!(
        "vela stream: no {END:?} block before the payload's end at offset {total}"
    ));
    s
}

/// The ranges decoding reads, as far as the blocks held so far tell: each
/// block header in turn, an external block's key before its header is
/// read, and the data of the blocks decoding looks into (`inputs`,
/// `outputs`, `scratch_size`, the first bytes of `cmd_data`); never the
/// weights or the rest of the command stream.
pub fn fetch(payload: &[u8], have: &dyn Fn(&Range<u64>) -> bool) -> Vec<Range<u64>> {
    let total = payload.len() as u64;
    let mut want = Vec::new();
    let (mut at, mut index) = (0u64, 0usize);
    while at < total {
        let head = at..(at + HEADER_LEN).min(total);
        if !have(&head) {
            want.push(head);
            return want;
        }
        // The key of an external block is read with its header.
        if let Some(h) = payload.get(head.start as usize..head.end as usize)
            && h.len() == HEADER_LEN as usize
            && h[20] == EXTERNAL
        {
            let key = head.end..head.end.saturating_add(KEY_LEN).min(total);
            if !have(&key) {
                want.push(key);
                return want;
            }
        }
        let Ok((b, next)) = block(payload, index, at) else {
            return want;
        };
        let data = b.data.offset..b.data.end();
        match b.name.as_str() {
            "inputs" | "outputs" | "scratch_size" => want.push(data),
            "cmd_data" => want.push(data.start..data.end.min(data.start + 4)),
            END => return want,
            _ => {}
        }
        at = next;
        index += 1;
    }
    want
}

/// The block whose header is at `at`, and where the next one starts.
fn block(payload: &[u8], index: usize, at: u64) -> Result<(Block<'_>, u64), String> {
    let total = payload.len() as u64;
    let short = || {
        format!(
            "vela block {index} at payload offset {at}: its header needs {HEADER_LEN} bytes, {} remain",
            total - at
        )
    };
    let head = Span::checked(at, HEADER_LEN, total, String::new).map_err(|_| short())?;
    let h = head.bytes(payload);
    let raw = &h[..NAME_LEN];
    let name_end = raw.iter().position(|&c| c == 0).unwrap_or(NAME_LEN);
    let name = String::from_utf8_lossy(&raw[..name_end]).into_owned();
    if index == 0 && name != START {
        // Not a stream at all: nothing after the name can be trusted.
        return Err(format!(
            "vela block 0 at payload offset 0: name {name:?}, the stream must open with {START:?}"
        ));
    }
    let size = le::u32_at(h, 16).map(u64::from).ok_or_else(short)?;
    let external = h[20];
    let data = Span::checked(head.end(), size, total, || {
        format!(
            "vela block {index} ({name:?}) at payload offset {at}, size field at {}: data",
            at + 16
        )
    })
    .map_err(|e| e.to_string())?;
    // The padding of the last block may run past a payload that was cut
    // right after its data; the walk then ends without an end block.
    let next = padded(size)
        .and_then(|p| head.end().checked_add(p))
        .unwrap_or(u64::MAX);
    let key = if external == EXTERNAL {
        if size != KEY_LEN {
            return Err(format!(
                "vela block {index} ({name:?}) at payload offset {at}: marked external (offset {}) but holds {size} bytes, a named-data key has {KEY_LEN}",
                at + 20
            ));
        }
        let k = std::str::from_utf8(data.bytes(payload)).map_err(|_| {
            format!(
                "vela block {index} ({name:?}) at payload offset {at}: its external key at {} is not UTF-8",
                data.offset
            )
        })?;
        Some(k)
    } else {
        None
    };
    let b = Block {
        index,
        name,
        header: head,
        data,
        external,
        key,
    };
    Ok((b, next))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blk(name: &str, data: &[u8], external: u8) -> Vec<u8> {
        let mut b = vec![0u8; 32];
        b[..name.len()].copy_from_slice(name.as_bytes());
        b[16..20].copy_from_slice(&(data.len() as u32).to_le_bytes());
        b[20] = external;
        b.extend_from_slice(data);
        b.resize(32 + data.len().div_ceil(16) * 16, 0);
        b
    }

    #[test]
    fn blocks_are_walked_with_padding() {
        let mut p = blk(START, &[], 0);
        p.extend(blk("cmd_data", b"COP1abc", 0));
        p.extend(blk(END, &[], 0));
        let s = walk(&p);
        assert!(s.errors.is_empty(), "{:?}", s.errors);
        let names: Vec<&str> = s.blocks.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(names, [START, "cmd_data", END]);
        assert_eq!(s.blocks[1].data, Span { offset: 64, len: 7 });
        assert_eq!(s.blocks[2].header.offset, 80);
    }

    #[test]
    fn damage_is_named() {
        let mut p = blk(START, &[], 0);
        p.extend(blk("cmd_data", b"COP1abc", 0));
        let cut = walk(&p[..40]);
        assert!(
            cut.errors[0].contains("vela block 1 at payload offset 32"),
            "{:?}",
            cut.errors
        );
        assert_eq!(cut.blocks.len(), 1);
        let open = walk(&p);
        assert!(
            open.errors[0].contains("no \"vela_end_stream\""),
            "{:?}",
            open.errors
        );
        let mut ext = blk(START, &[], 0);
        ext.extend(blk("weight_data", b"short", 1));
        let e = walk(&ext);
        assert!(
            e.errors[0].contains("marked external (offset 52)"),
            "{:?}",
            e.errors
        );
    }
}
