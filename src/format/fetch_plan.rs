//! Fetch plans: which byte ranges of a file parsing reads, for sources
//! that fetch ranges rather than map the file (remote objects).
//!
//! [`plan`] is a function from the bytes fetched so far to the ranges
//! still needed; its caller fetches those and asks again until nothing is
//! missing. Each step reads only bytes already fetched: the header says how
//! long the flatbuffer is, the zip end record where the central directory
//! is, and so on. Tensor bytes (constant segments, named data, safetensors
//! data) are never part of a plan: they are read on demand later.
//! Delegate payloads are planned by their decoders (`crate::delegate`), from
//! the spans [`Plan::payloads`] lists.

use std::ops::Range;

use super::package::{self, ALIASES_MEMBER, PROGRAM_MEMBER, TENSORS_MEMBER};
use super::{DataFile, Kind, ProgramFile, PtdHeader, PteHeader, Span};

/// Bytes read first, before anything says more: the `.pte` extended
/// header (40 bytes) and the `.ptd` header (48) fit. Kept this small so
/// that what a file needs is planned, not fetched by luck with its head.
pub const HEAD: u64 = 64;

/// Byte ranges of a file, kept sorted and merged.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ranges {
    ranges: Vec<Range<u64>>,
}

impl Ranges {
    /// Adds `r`.
    pub fn insert(&mut self, r: Range<u64>) {
        if r.is_empty() {
            return;
        }
        let (mut start, mut end) = (r.start, r.end);
        // Merge with every range that overlaps or touches `r`.
        self.ranges.retain(|x| {
            let apart = x.end < start || x.start > end;
            if !apart {
                start = start.min(x.start);
                end = end.max(x.end);
            }
            apart
        });
        let at = self.ranges.partition_point(|x| x.start < start);
        self.ranges.insert(at, start..end);
    }

    /// True when all of `r` is held.
    pub fn covers(&self, r: &Range<u64>) -> bool {
        r.is_empty()
            || self
                .ranges
                .iter()
                .any(|x| x.start <= r.start && r.end <= x.end)
    }

    /// The parts of `r` not held, in order.
    pub fn missing(&self, r: &Range<u64>) -> Vec<Range<u64>> {
        let mut out = Vec::new();
        let mut at = r.start;
        for x in &self.ranges {
            if x.end <= at {
                continue;
            }
            if x.start >= r.end {
                break;
            }
            if x.start > at {
                out.push(at..x.start);
            }
            at = at.max(x.end);
        }
        if at < r.end {
            out.push(at..r.end);
        }
        out
    }

    /// Total bytes held.
    pub fn total(&self) -> u64 {
        self.ranges.iter().map(|r| r.end - r.start).sum()
    }

    /// The ranges held.
    pub fn ranges(&self) -> &[Range<u64>] {
        &self.ranges
    }
}

/// What parsing still needs of a file, as far as the bytes so far tell.
#[derive(Debug, Default)]
pub struct Plan {
    /// Ranges to fetch (some may be held already).
    pub ranges: Vec<Range<u64>>,
    /// Delegate payloads, by backend id, once the program is known.
    pub payloads: Vec<(String, Span)>,
}

impl Plan {
    /// Asks for `r`; true when it is held already.
    fn need(&mut self, have: &Ranges, r: Range<u64>) -> bool {
        let held = have.covers(&r);
        if !held {
            self.ranges.push(r);
        }
        held
    }
}

/// The ranges parsing `image` (a file of `image.len()` bytes of which
/// `have` holds the real bytes) needs next. A file that turns out invalid
/// needs nothing more: parsing then reports the error from the bytes that
/// show it.
pub fn plan(image: &[u8], have: &Ranges) -> Plan {
    let len = image.len() as u64;
    let mut p = Plan::default();
    if !p.need(have, 0..len.min(HEAD)) {
        return p;
    }
    match super::sniff(image) {
        Ok(Kind::Program) => program(image, have, &mut p),
        Ok(Kind::Data) => data(image, have, &mut p),
        // The bundled program is one flatbuffer with the program inside.
        // So are the bundled program and the ETDump.
        Ok(Kind::Bundled | Kind::Profile) => {
            p.need(have, 0..len);
        }
        Ok(Kind::Package) => package(image, have, &mut p),
        Err(_) => {}
    }
    p
}

fn program(image: &[u8], have: &Ranges, p: &mut Plan) {
    let len = image.len() as u64;
    let Ok(h) = PteHeader::parse(image) else {
        return;
    };
    if !p.need(have, 0..h.flatbuffer_len(len).min(len)) {
        return;
    }
    let Ok(file) = ProgramFile::parse(image) else {
        return;
    };
    for m in &file.methods {
        for d in &m.delegates {
            if let Some(span) = d.processed {
                p.payloads.push((d.id.show().into_owned(), span));
            }
        }
    }
}

fn data(image: &[u8], have: &Ranges, p: &mut Plan) {
    let len = image.len() as u64;
    if let Ok(h) = PtdHeader::parse(image)
        && p.need(have, 0..h.flatbuffer_len().min(len))
    {
        // Parsed for its own checks only; it reads nothing more.
        let _ = DataFile::parse(image);
    }
}

fn package(image: &[u8], have: &Ranges, p: &mut Plan) {
    let mut zip_ranges = Vec::new();
    let Some(members) = package::zip::plan(image, have, &mut zip_ranges) else {
        p.ranges.extend(zip_ranges);
        return;
    };
    for m in members.iter().filter(|m| m.method == 0) {
        let whole = m.data.offset..m.data.end();
        // Parsing checks the CRC-32 of members up to this size.
        if m.data.len <= package::CRC_CHECKED
            || m.name == PROGRAM_MEMBER
            || m.name == ALIASES_MEMBER
        {
            p.need(have, whole);
        } else if m.name == TENSORS_MEMBER {
            // The safetensors header: its length, then itself.
            let len_field = m.data.offset..m.data.offset + 8.min(m.data.len);
            if p.need(have, len_field.clone()) && m.data.len >= 8 {
                let at = len_field.start as usize;
                let n = u64::from_le_bytes(image[at..at + 8].try_into().unwrap_or_default());
                let end = m
                    .data
                    .offset
                    .saturating_add(8)
                    .saturating_add(n)
                    .min(m.data.end());
                p.need(have, m.data.offset..end);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the plan over the fixture `name` as a fetching source would,
    /// returning each round's requests and the image at the end.
    fn rounds(name: &str) -> (Vec<Vec<Range<u64>>>, Vec<u8>, Ranges) {
        let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
        let file = std::fs::read(path).unwrap();
        let mut image = vec![0u8; file.len()];
        let mut have = Ranges::default();
        let mut out = Vec::new();
        loop {
            let want: Vec<Range<u64>> = plan(&image, &have)
                .ranges
                .iter()
                .flat_map(|r| have.missing(r))
                .collect();
            if want.is_empty() {
                return (out, image, have);
            }
            for r in &want {
                let (a, b) = (r.start as usize, r.end as usize);
                image[a..b].copy_from_slice(&file[a..b]);
                have.insert(r.clone());
            }
            out.push(want);
            assert!(out.len() < 10, "{out:?}");
        }
    }

    #[test]
    fn a_program_needs_its_header_then_its_flatbuffer() {
        let (r, image, have) = rounds("mlp.pte");
        let fb = PteHeader::parse(&image).unwrap().flatbuffer_len(5408);
        assert_eq!(r, vec![vec![0..HEAD], vec![HEAD..fb]]);
        assert!(fb < 5408 && have.total() == fb);
        assert!(ProgramFile::parse(&image).is_ok());
    }

    #[test]
    fn a_delegated_program_lists_its_payloads() {
        let (_, image, have) = rounds("mv2_xnnpack.pte");
        let p = plan(&image, &have);
        assert_eq!(p.payloads.len(), 1);
        assert_eq!(p.payloads[0].0, "XnnpackBackend");
        assert!(!have.covers(&(p.payloads[0].1.offset..p.payloads[0].1.end())));
    }

    #[test]
    fn a_data_file_needs_its_header_and_flatbuffer_only() {
        let (r, image, _) = rounds("xnnpack_external.ptd");
        let fb = PtdHeader::parse(&image).unwrap().flatbuffer_len();
        assert_eq!(r, vec![vec![0..HEAD], vec![HEAD..fb]]);
        assert!(fb < 50432 / 10);
    }

    #[test]
    fn a_package_starts_from_its_end_record() {
        let (r, image, _) = rounds("mlp.ptn");
        assert_eq!(r[0], vec![0..HEAD]);
        assert_eq!(
            r[1],
            vec![HEAD..image.len() as u64],
            "small: its last 64 KiB"
        );
        assert!(super::super::PackageFile::parse(&image).is_ok());
    }

    #[test]
    fn ranges_merge_and_report_gaps() {
        let mut r = Ranges::default();
        r.insert(10..20);
        r.insert(30..40);
        assert_eq!(r.missing(&(0..50)), vec![0..10, 20..30, 40..50]);
        r.insert(20..30);
        assert_eq!(r.ranges(), std::slice::from_ref(&(10..40)));
        assert!(r.covers(&(12..40)));
        assert!(!r.covers(&(9..12)));
        r.insert(0..5);
        r.insert(3..11);
        assert_eq!(r.ranges(), std::slice::from_ref(&(0..40)));
        assert_eq!(r.total(), 40);
        assert!(r.missing(&(5..35)).is_empty());
    }
}
