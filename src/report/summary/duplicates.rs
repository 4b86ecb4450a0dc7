//! Equal bytes stored more than once.
//!
//! ExecuTorch stores equal constants once within the constant segment, and
//! XNNPACK keys its named data by SHA-256, so the copies real exports have
//! lie across stores: a weight both a delegate and a portable operator use
//! sits in the constant segment and again as the delegate's named data; a
//! `.pte` and its `.ptd` can repeat each other. So every stored range is a
//! candidate, whatever holds it: each distinct range (source, offset,
//! length) is hashed once, and only ranges whose length another range
//! shares are hashed at all.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::Subject;
use crate::report::stored::Name;
use crate::report::stored::Stored;

/// Ranges shorter than this are not reported: equal small scalars and
/// zero biases are common and cost nothing.
const MIN_BYTES: u64 = 64;

/// Bytes stored more than once.
#[derive(Debug, Clone, Serialize)]
pub struct Duplicate {
    /// SHA-256 of the bytes, hex.
    pub sha256: String,
    /// Bytes of one copy.
    pub bytes: u64,
    /// Every copy, in file then offset order.
    pub copies: Vec<Copy>,
    /// Bytes beyond the first copy.
    pub wasted: u64,
}

/// One copy of duplicated bytes.
#[derive(Debug, Clone, Serialize)]
pub struct Copy {
    /// Its path in the tree.
    pub path: Name,
    /// The file holding it.
    pub file: String,
    /// Its offset in that file.
    pub offset: u64,
}

pub(super) fn find(subject: Subject<'_>, items: &[Stored]) -> Vec<Duplicate> {
    // One item per distinct range.
    let mut ranges: BTreeMap<(usize, u64, u64), &Stored> = BTreeMap::new();
    for s in items.iter().filter(|s| s.span.len >= MIN_BYTES) {
        ranges
            .entry((s.source, s.span.offset, s.span.len))
            .or_insert(s);
    }
    let mut by_len: HashMap<u64, Vec<&Stored>> = HashMap::new();
    for s in ranges.into_values() {
        by_len.entry(s.span.len).or_default().push(s);
    }
    // Ranges of one length are told apart first by a few hundred bytes
    // from their start, middle and end: a file of many equally sized
    // tensors then costs a SHA-256 only of those that may be equal.
    let mut by_sample: HashMap<(u64, u64), Vec<&Stored>> = HashMap::new();
    for s in by_len.into_values().filter(|v| v.len() > 1).flatten() {
        by_sample
            .entry((s.span.len, sample(subject.bytes(s.source, s.span))))
            .or_default()
            .push(s);
    }
    let candidates: Vec<&Stored> = by_sample
        .into_values()
        .filter(|v| v.len() > 1)
        .flatten()
        .collect();
    let digests = hash_all(subject, &candidates);
    let mut groups: HashMap<(u64, [u8; 32]), Vec<&Stored>> = HashMap::new();
    for (s, d) in candidates.iter().zip(digests) {
        groups.entry((s.span.len, d)).or_default().push(s);
    }
    let mut out: Vec<Duplicate> = groups
        .into_iter()
        .filter(|(_, v)| v.len() > 1)
        .map(|((len, digest), mut v)| {
            v.sort_by_key(|s| (s.source, s.span.offset));
            Duplicate {
                sha256: hex(&digest),
                bytes: len,
                wasted: len * (v.len() as u64 - 1),
                copies: v
                    .iter()
                    .map(|s| Copy {
                        path: s.path.clone(),
                        file: subject.tree.source_name(s.source).to_owned(),
                        offset: s.span.offset,
                    })
                    .collect(),
            }
        })
        .collect();
    out.sort_by(|a, b| {
        b.wasted
            .cmp(&a.wasted)
            .then_with(|| a.sha256.cmp(&b.sha256))
    });
    out
}

/// A hash of 256 bytes each from the start, middle and end of `b`.
fn sample(b: &[u8]) -> u64 {
    use std::hash::BuildHasher;
    const PART: usize = 256;
    let mid = b.len() / 2;
    let parts = [
        &b[..PART.min(b.len())],
        &b[mid.saturating_sub(PART / 2)..(mid + PART / 2).min(b.len())],
        &b[b.len().saturating_sub(PART)..],
    ];
    foldhash::fast::FixedState::with_seed(0).hash_one(parts)
}

/// SHA-256 of each item's bytes, on every core.
fn hash_all(subject: Subject<'_>, items: &[&Stored]) -> Vec<[u8; 32]> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut out = vec![[0u8; 32]; items.len()];
    let per = items.len().div_ceil(threads.max(1)).max(1);
    std::thread::scope(|scope| {
        for (chunk, dst) in items.chunks(per).zip(out.chunks_mut(per)) {
            scope.spawn(move || {
                for (s, d) in chunk.iter().zip(dst.iter_mut()) {
                    *d = Sha256::digest(subject.bytes(s.source, s.span)).into();
                }
            });
        }
    });
    out
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}
