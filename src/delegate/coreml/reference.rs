//! A multi-method payload's reference (`CMJR`): the magic, then JSON
//! `{version, key, functionName}` naming the named-data entry that holds
//! the flattened directory shared by every method, and the model function
//! this method runs.

use serde::{Deserialize, Serialize};

use crate::format::{Error, Result};

/// The magic a reference payload starts with.
pub const MAGIC: &[u8; 4] = b"CMJR";

/// A reference to a model in named data.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct Reference {
    /// Format version (1).
    #[serde(default)]
    pub version: i64,
    /// The named-data key of the flattened directory.
    pub key: String,
    /// The model function this method runs.
    #[serde(rename = "functionName", default)]
    pub function_name: Option<String>,
}

/// True when `payload` is a reference.
pub fn is_reference(payload: &[u8]) -> bool {
    payload.starts_with(MAGIC)
}

/// Reads the reference JSON after the magic (trailing NULs allowed, as
/// C strings leave them).
pub fn parse(payload: &[u8]) -> Result<Reference> {
    let json = payload.get(MAGIC.len()..).unwrap_or_default();
    let end = json.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    let r: Reference = serde_json::from_slice(&json[..end]).map_err(|e| {
        Error::new(format!(
            "CMJR reference: JSON at payload offset 4 ({} bytes): {e}",
            end
        ))
    })?;
    if r.key.is_empty() {
        return Err(Error::new(
            "CMJR reference: JSON at payload offset 4: \"key\" is empty",
        ));
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_rejects() {
        let r = parse(br#"CMJR{"version": 1, "key": "k", "functionName": "forward"}"#).unwrap();
        assert_eq!(r.key, "k");
        assert_eq!(r.function_name.as_deref(), Some("forward"));
        let e = parse(b"CMJR{\"version\": 1").unwrap_err().to_string();
        assert!(e.contains("payload offset 4"), "{e}");
        let e = parse(br#"CMJR{"key": ""}"#).unwrap_err().to_string();
        assert!(e.contains("is empty"), "{e}");
    }
}
