//! What share of a file each kind of content takes, each byte counted once.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::format::Span;

/// Bytes of one category.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Share {
    /// What the bytes are (`constants`, `named data`, `padding`, ...).
    pub category: String,
    /// How many bytes.
    pub bytes: u64,
    /// Their fraction of the file, rounded to three places.
    pub share: f64,
}

/// Byte ranges by category, collected in order of precedence.
#[derive(Debug, Default)]
pub(super) struct Composition {
    spans: Vec<(&'static str, Span)>,
}

impl Composition {
    /// Counts `span` as `category`, unless a category added earlier
    /// already covers it.
    pub(super) fn add(&mut self, category: &'static str, span: Span) {
        self.spans.push((category, span));
    }

    /// Categories in the order first added, with their bytes; whatever no
    /// category covers is `padding`.
    pub(super) fn finish(mut self, file_size: u64) -> Vec<Share> {
        let mut order: Vec<&str> = Vec::new();
        for (c, _) in &self.spans {
            if !order.contains(c) {
                order.push(c);
            }
        }
        let rank = |c: &str| order.iter().position(|x| *x == c).unwrap_or(usize::MAX);
        // Categories added earlier take precedence where ranges overlap.
        self.spans.sort_by_key(|(c, _)| rank(c));
        let mut covered = Covered::default();
        let mut totals: BTreeMap<&str, u64> = BTreeMap::new();
        for (c, s) in &self.spans {
            *totals.entry(c).or_default() += covered.add(s.offset, s.end());
        }
        let counted: u64 = totals.values().sum();
        let mut rows: Vec<Share> = order
            .iter()
            .map(|c| row(c, totals.get(c).copied().unwrap_or(0), file_size))
            .collect();
        rows.push(row("padding", file_size.saturating_sub(counted), file_size));
        rows
    }
}

/// Disjoint byte ranges counted so far: start → end.
#[derive(Default)]
struct Covered(BTreeMap<u64, u64>);

impl Covered {
    /// Adds `start..end`; returns how many of its bytes were not yet
    /// covered.
    fn add(&mut self, start: u64, end: u64) -> u64 {
        if end <= start {
            return 0;
        }
        let mut touching: Vec<u64> = Vec::new();
        if let Some((&a, &b)) = self.0.range(..start).next_back()
            && b >= start
        {
            touching.push(a);
        }
        touching.extend(self.0.range(start..=end).map(|(&a, _)| a));
        let (mut lo, mut hi, mut seen) = (start, end, 0);
        for a in touching {
            let b = self.0.remove(&a).unwrap_or(a);
            seen += b.min(end).saturating_sub(a.max(start));
            lo = lo.min(a);
            hi = hi.max(b);
        }
        self.0.insert(lo, hi);
        (end - start) - seen
    }
}

fn row(category: &str, bytes: u64, file_size: u64) -> Share {
    Share {
        category: category.to_owned(),
        bytes,
        share: share(bytes, file_size),
    }
}

/// `part / whole`, rounded to three places.
pub(super) fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        (part as f64 / whole as f64 * 1000.0).round() / 1000.0
    }
}

/// Moves `bytes` from category `from` to `to` (added before `padding` if
/// absent): for content that lies inside another category's range, such as
/// constants stored inline in the program's flatbuffer.
pub(super) fn move_bytes(rows: &mut Vec<Share>, from: &str, to: &str, bytes: u64, file_size: u64) {
    if bytes == 0 {
        return;
    }
    if !rows.iter().any(|r| r.category == to) {
        let at = rows.len().saturating_sub(1);
        rows.insert(at, row(to, 0, file_size));
    }
    for r in rows.iter_mut() {
        if r.category == from {
            r.bytes = r.bytes.saturating_sub(bytes);
        } else if r.category == to {
            r.bytes += bytes;
        } else {
            continue;
        }
        r.share = share(r.bytes, file_size);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(offset: u64, len: u64) -> Span {
        Span { offset, len }
    }

    #[test]
    fn every_byte_counts_once() {
        let mut c = Composition::default();
        c.add("program", span(0, 100));
        c.add("constants", span(90, 50));
        c.add("named", span(200, 10));
        // A later, wider category gets only what is left.
        c.add("file", span(0, 220));
        let rows = c.finish(300);
        let bytes: Vec<(&str, u64)> = rows.iter().map(|r| (&*r.category, r.bytes)).collect();
        assert_eq!(
            bytes,
            [
                ("program", 100),
                ("constants", 40),
                ("named", 10),
                ("file", 70),
                ("padding", 80)
            ]
        );
        assert_eq!(rows.iter().map(|r| r.bytes).sum::<u64>(), 300);
    }

    #[test]
    fn moved_bytes_keep_the_total() {
        let mut rows = Composition::default().finish(10);
        rows.insert(0, row("program", 10, 10));
        rows[1] = row("padding", 0, 10);
        move_bytes(&mut rows, "program", "constants", 4, 10);
        let bytes: Vec<(&str, u64)> = rows.iter().map(|r| (&*r.category, r.bytes)).collect();
        assert_eq!(bytes, [("program", 6), ("constants", 4), ("padding", 0)]);
    }
}
