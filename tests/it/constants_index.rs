//! `constants/index.json`: each constant buffer's file, the bytes it holds
//! (those of the largest tensor using the buffer) and its whole slot (to
//! the next buffer's offset, alignment padding included), checked against
//! flatc's own reading of each fixture.

use crate::common;

use common::*;
use serde_json::Value;

#[test]
fn every_buffer_gives_its_file_size_and_its_slot_size() {
    let mut padded = 0;
    for model in models().into_iter().filter(|m| m.ends_with(".pte")) {
        let Ok(text) = std::fs::read_to_string(fixture(&format!("flatc-json/{model}.json"))) else {
            continue;
        };
        let flatc: Value = serde_json::from_str(&text).unwrap();
        let Some(offsets) = flatc["constant_segment"]["offsets"].as_array() else {
            continue;
        };
        let offsets: Vec<u64> = offsets.iter().map(|o| o.as_u64().unwrap()).collect();
        let seg = flatc["constant_segment"]["segment_index"]
            .as_u64()
            .unwrap_or(0) as usize;
        let seg_size = flatc["segments"][seg]["size"].as_u64().unwrap();
        let v = view(&model);
        let index = json(&v, "constants/index.json");
        for e in index.as_array().unwrap() {
            let i = e["index"].as_u64().unwrap() as usize;
            let off = offsets[i];
            let next = offsets
                .iter()
                .copied()
                .filter(|&o| o > off)
                .min()
                .unwrap_or(seg_size);
            assert_eq!(e["slot_nbytes"], next - off, "{model} buffer {i}");
            let file = read(&v, &format!("constants/{}", e["name"].as_str().unwrap()));
            assert_eq!(e["nbytes"], file.len() as u64, "{model} buffer {i}");
            assert_eq!(
                e["padding"].as_u64().unwrap(),
                next - off - file.len() as u64,
                "{model} buffer {i}"
            );
            padded += usize::from(e["padding"].as_u64().unwrap() > 0);
        }
    }
    assert!(padded > 0, "some fixture has a padded buffer (dtypes.pte)");
}
