//! OpenVINO's CPU plugin stores the IR of an exported model XOR-ed with a
//! fixed 12-byte key (not for secrecy: the key is in the plugin). The key
//! below is what turns the stored bytes of the fixtures back into the
//! `<?xml` document the plugin reads; an IR stored plainly is taken as is.

/// The repeating key.
const KEY: [u8; 12] = [
    0x30, 0x60, 0x70, 0x02, 0x04, 0x08, 0x3F, 0x6F, 0x72, 0x74, 0x78, 0x7F,
];

/// What every IR starts with.
const XML: &[u8] = b"<?xml";

/// `stored` with the key applied (the operation is its own inverse).
pub fn apply(stored: &[u8]) -> Vec<u8> {
    stored
        .iter()
        .zip(KEY.iter().cycle())
        .map(|(b, k)| b ^ k)
        .collect()
}

/// The IR's XML from its stored bytes, and whether they were obfuscated;
/// `None` when neither reading starts like XML.
pub fn decode(stored: &[u8]) -> Option<(Vec<u8>, bool)> {
    if stored.starts_with(XML) {
        return Some((stored.to_vec(), false));
    }
    let plain = apply(stored);
    plain.starts_with(XML).then_some((plain, true))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_plain_text_is_kept() {
        let xml = b"<?xml version=\"1.0\"?><net/>".to_vec();
        assert_eq!(decode(&apply(&xml)), Some((xml.clone(), true)));
        assert_eq!(decode(&xml), Some((xml, false)));
        assert_eq!(decode(b"junk"), None);
    }
}
