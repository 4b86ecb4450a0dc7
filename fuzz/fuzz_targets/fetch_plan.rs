//! Any bytes: run the fetch plan as a remote source does (from an image
//! of zeros, fetching what it asks for until it asks for nothing new). It
//! must converge, ask only for bytes inside the file, and the tree built
//! from the fetched bytes must equal the tree built from all of them (or
//! both must fail alike): parsing reads nothing the plan left out.
#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;
use ptefs::format::Ranges;
use ptefs::tree::{Content, ROOT, Tree, fetch_plan};

fn shape(t: &Tree) -> BTreeMap<String, String> {
    t.walk(ROOT)
        .map(|(path, ino)| {
            let what = match t.file(ino) {
                None => "dir".to_owned(),
                Some(f) => match &*f.content {
                    Content::Generated(b) => format!("{b:?}"),
                    Content::Source { span, .. } => format!("{span:?}"),
                    Content::Prefixed { prefix, span, .. } => format!("{prefix:?} {span:?}"),
                    Content::Widened { prefix, span, .. } => format!("widened {prefix:?} {span:?}"),
                    // Rendered from the bytes each tree was built from: the
                    // planned image and the whole file must render alike.
                    Content::Lazy(l) => format!("{:?}", l.rendered()),
                    // Its header names every part, and so stands for them.
                    Content::Assembled(a) => format!("assembled {:?}", a.header()),
                },
            };
            (path, what)
        })
        .collect()
}

fuzz_target!(|bytes: &[u8]| {
    let len = bytes.len() as u64;
    let mut image = vec![0u8; bytes.len()];
    let mut have = Ranges::default();
    let mut rounds = 0;
    loop {
        let want: Vec<_> = fetch_plan(&image, &have)
            .into_iter()
            .inspect(|r| assert!(r.start <= r.end && r.end <= len, "{r:?} of {len} bytes"))
            .flat_map(|r| have.missing(&r))
            .collect();
        if want.is_empty() {
            break;
        }
        rounds += 1;
        assert!(rounds < 64, "the plan does not converge");
        for r in want {
            let (a, b) = (r.start as usize, r.end as usize);
            image[a..b].copy_from_slice(&bytes[a..b]);
            have.insert(r);
        }
    }
    match (Tree::from_bytes("f", bytes), Tree::from_bytes("f", &image)) {
        (Ok(a), Ok(b)) => {
            assert_eq!(shape(&a), shape(&b));
            assert_eq!(a.warnings, b.warnings);
        }
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
        (a, b) => panic!("whole {:?}, planned {:?}", a.is_ok(), b.is_ok()),
    }
});
