//! Writes native program packages (`.ptn`): a zip of stored members (with
//! zip64 records on request, and zero runs left as holes so that packages
//! of gigabytes cost no disk), safetensors members, and the graph from
//! [`super::nptg`].

use std::io::{self, Seek, SeekFrom, Write};

pub use super::package_graph::*;

/// A piece of a member's bytes.
#[derive(Debug, Clone)]
pub enum Chunk {
    Bytes(Vec<u8>),
    /// This many zero bytes, written as a hole.
    Zeros(u64),
}

/// A zip member.
#[derive(Debug, Clone)]
pub struct Member {
    pub name: String,
    pub chunks: Vec<Chunk>,
    /// Compression method written into both headers (the data is written
    /// as given either way).
    pub method: u16,
}

impl Member {
    pub fn stored(name: &str, data: Vec<u8>) -> Self {
        Member {
            name: name.into(),
            chunks: vec![Chunk::Bytes(data)],
            method: 0,
        }
    }

    fn len(&self) -> u64 {
        self.chunks
            .iter()
            .map(|c| match c {
                Chunk::Bytes(b) => b.len() as u64,
                Chunk::Zeros(n) => *n,
            })
            .sum()
    }

    fn crc(&self) -> u32 {
        let mut h = crc32fast::Hasher::new();
        for c in &self.chunks {
            match c {
                Chunk::Bytes(b) => h.update(b),
                // Holes are only used for members too large to check.
                Chunk::Zeros(_) => return 0,
            }
        }
        h.finalize()
    }
}

/// A zip archive.
#[derive(Debug, Clone, Default)]
pub struct Zip {
    pub members: Vec<Member>,
    /// Write sizes and offsets as 0xFFFFFFFF with zip64 extra fields and
    /// zip64 end records, as writers do past 4 GiB.
    pub zip64: bool,
}

/// Where the writer put each member: (local header offset, data offset).
pub type Layout = Vec<(u64, u64)>;

impl Zip {
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut c = io::Cursor::new(Vec::new());
        self.write(&mut c).unwrap();
        c.into_inner()
    }

    pub fn write(&self, out: &mut (impl Write + Seek)) -> io::Result<Layout> {
        let mut layout = Vec::new();
        let mut pos = 0u64;
        for m in &self.members {
            let zip64 = self.zip64 || m.len() >= u32::MAX as u64;
            let extra = if zip64 {
                zip64_extra(&[m.len(), m.len()])
            } else {
                Vec::new()
            };
            let mut h = Vec::new();
            h.extend(0x0403_4b50u32.to_le_bytes());
            h.extend(45u16.to_le_bytes());
            h.extend(0u16.to_le_bytes());
            h.extend(m.method.to_le_bytes());
            h.extend(0u32.to_le_bytes()); // 1980-01-01 00:00
            h.extend(m.crc().to_le_bytes());
            let size32 = if zip64 { u32::MAX } else { m.len() as u32 };
            h.extend(size32.to_le_bytes());
            h.extend(size32.to_le_bytes());
            h.extend((m.name.len() as u16).to_le_bytes());
            h.extend((extra.len() as u16).to_le_bytes());
            h.extend(m.name.as_bytes());
            h.extend(&extra);
            out.write_all(&h)?;
            layout.push((pos, pos + h.len() as u64));
            pos += h.len() as u64;
            for c in &m.chunks {
                match c {
                    Chunk::Bytes(b) => out.write_all(b)?,
                    Chunk::Zeros(n) => {
                        out.seek(SeekFrom::Current(*n as i64))?;
                    }
                }
            }
            pos += m.len();
        }
        let cd_start = pos;
        let mut cd = Vec::new();
        for (m, &(header, _)) in self.members.iter().zip(&layout) {
            let zip64 = self.zip64 || m.len() >= u32::MAX as u64 || header >= u32::MAX as u64;
            let extra = if zip64 {
                zip64_extra(&[m.len(), m.len(), header])
            } else {
                Vec::new()
            };
            let wide = |v: u64| if zip64 { u32::MAX } else { v as u32 };
            cd.extend(0x0201_4b50u32.to_le_bytes());
            cd.extend(0x031eu16.to_le_bytes());
            cd.extend(45u16.to_le_bytes());
            cd.extend(0u16.to_le_bytes());
            cd.extend(m.method.to_le_bytes());
            cd.extend(0u32.to_le_bytes());
            cd.extend(m.crc().to_le_bytes());
            cd.extend(wide(m.len()).to_le_bytes());
            cd.extend(wide(m.len()).to_le_bytes());
            cd.extend((m.name.len() as u16).to_le_bytes());
            cd.extend((extra.len() as u16).to_le_bytes());
            cd.extend([0u8; 6]); // comment length, disk, internal attributes
            cd.extend(0o100644u32.wrapping_shl(16).to_le_bytes());
            cd.extend(wide(header).to_le_bytes());
            cd.extend(m.name.as_bytes());
            cd.extend(&extra);
        }
        let n = self.members.len() as u64;
        if self.zip64 {
            let eocd64 = cd_start + cd.len() as u64;
            cd.extend(0x0606_4b50u32.to_le_bytes());
            cd.extend(44u64.to_le_bytes());
            cd.extend(45u16.to_le_bytes());
            cd.extend(45u16.to_le_bytes());
            cd.extend([0u8; 8]);
            cd.extend(n.to_le_bytes());
            cd.extend(n.to_le_bytes());
            cd.extend((eocd64 - cd_start).to_le_bytes());
            cd.extend(cd_start.to_le_bytes());
            cd.extend(0x0706_4b50u32.to_le_bytes());
            cd.extend(0u32.to_le_bytes());
            cd.extend(eocd64.to_le_bytes());
            cd.extend(1u32.to_le_bytes());
        }
        let cd_len = if self.zip64 {
            u32::MAX
        } else {
            cd.len() as u32
        };
        let (count, start) = if self.zip64 {
            (u16::MAX, u32::MAX)
        } else {
            (n as u16, cd_start as u32)
        };
        cd.extend(0x0605_4b50u32.to_le_bytes());
        cd.extend([0u8; 4]);
        cd.extend(count.to_le_bytes());
        cd.extend(count.to_le_bytes());
        cd.extend(cd_len.to_le_bytes());
        cd.extend(start.to_le_bytes());
        cd.extend(0u16.to_le_bytes());
        out.write_all(&cd)?;
        Ok(layout)
    }
}

fn zip64_extra(values: &[u64]) -> Vec<u8> {
    let mut e = Vec::new();
    e.extend(1u16.to_le_bytes());
    e.extend((values.len() as u16 * 8).to_le_bytes());
    for v in values {
        e.extend(v.to_le_bytes());
    }
    e
}

/// A safetensors tensor: key, dtype code, shape, bytes.
pub struct StTensor {
    pub key: String,
    pub dtype: &'static str,
    pub shape: Vec<u64>,
    pub data: Chunk,
}

/// The safetensors member: header (padded to 8 with spaces) and data, as
/// chunks so that zero data can stay a hole.
pub fn safetensors(tensors: &[StTensor]) -> Vec<Chunk> {
    let mut header = serde_json::Map::new();
    let mut offset = 0u64;
    for t in tensors {
        let len = match &t.data {
            Chunk::Bytes(b) => b.len() as u64,
            Chunk::Zeros(n) => *n,
        };
        header.insert(
            t.key.clone(),
            serde_json::json!({"dtype": t.dtype, "shape": t.shape, "data_offsets": [offset, offset + len]}),
        );
        offset += len;
    }
    let mut json = serde_json::to_vec(&header).unwrap();
    while !json.len().is_multiple_of(8) {
        json.push(b' ');
    }
    let mut head = (json.len() as u64).to_le_bytes().to_vec();
    head.extend(json);
    let mut chunks = vec![Chunk::Bytes(head)];
    chunks.extend(tensors.iter().map(|t| t.data.clone()));
    chunks
}

/// A whole package: graph, tensors, and aliases when given.
pub fn package(methods: &[MethodSpec], tensors: &[StTensor], aliases: &[(&str, &str)]) -> Zip {
    let mut members = vec![Member::stored("program.ptg", program(methods))];
    if !tensors.is_empty() {
        members.push(Member {
            name: "program.safetensors".into(),
            chunks: safetensors(tensors),
            method: 0,
        });
    }
    if !aliases.is_empty() {
        let map: std::collections::BTreeMap<&str, &str> = aliases.iter().copied().collect();
        members.push(Member::stored(
            "aliases.json",
            serde_json::to_vec_pretty(&map).unwrap(),
        ));
    }
    Zip {
        members,
        zip64: false,
    }
}
