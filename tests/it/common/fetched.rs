//! A file as a remote source holds it after following its fetch plan
//! (zeros where nothing was fetched), and the tree's shape to compare the
//! trees built from it and from the whole file.

use std::collections::BTreeMap;
use std::ops::Range;

use ptefs::format::Ranges;
use ptefs::tree::{Content, ROOT, Tree, fetch_plan};

use super::sha256;

/// The image the plan fetches of `bytes`: its ranges, zeros elsewhere.
pub fn planned(bytes: &[u8]) -> Vec<u8> {
    let mut image = vec![0u8; bytes.len()];
    let mut have = Ranges::default();
    for _ in 0..64 {
        let want: Vec<Range<u64>> = fetch_plan(&image, &have)
            .iter()
            .map(|r| r.start.min(r.end)..r.end.min(bytes.len() as u64))
            .flat_map(|r| have.missing(&r))
            .collect();
        if want.is_empty() {
            return image;
        }
        for r in want {
            let (a, b) = (r.start as usize, r.end as usize);
            image[a..b].copy_from_slice(&bytes[a..b]);
            have.insert(r);
        }
    }
    panic!("the plan does not converge")
}

/// Every path under `under` with what it holds: generated or rendered
/// bytes by hash, source bytes by where they are.
pub fn shape(t: &Tree, under: &str) -> BTreeMap<String, String> {
    t.walk(ROOT)
        .filter(|(path, _)| path.starts_with(under))
        .map(|(path, ino)| {
            let what = match t.file(ino) {
                None => "dir".to_owned(),
                Some(f) => match &*f.content {
                    Content::Generated(b) => format!("generated {}", sha256(b)),
                    Content::Source { span, .. } => format!("source {span:?}"),
                    Content::Prefixed { prefix, span, .. } => {
                        format!("prefixed {} {span:?}", sha256(prefix))
                    }
                    Content::Widened { prefix, span, .. } => {
                        format!("widened {} {span:?}", sha256(prefix))
                    }
                    Content::Lazy(l) => format!("lazy {}", sha256(&l.rendered())),
                    Content::Assembled(a) => format!("assembled {}", sha256(a.header())),
                },
            };
            (path, what)
        })
        .collect()
}

/// Checks that `bytes` builds the same folder `under` from its planned
/// image as from all of it; returns the image.
pub fn same_from_plan(bytes: &[u8], under: &str) -> Vec<u8> {
    let image = planned(bytes);
    let whole = Tree::from_bytes("f.pte", bytes).unwrap();
    let part = Tree::from_bytes("f.pte", &image).unwrap();
    let (w, p) = (shape(&whole, under), shape(&part, under));
    assert!(w.len() > 1, "nothing under {under}");
    assert_eq!(w, p, "{under}");
    assert_eq!(whole.warnings, part.warnings);
    image
}
