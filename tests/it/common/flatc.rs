//! flatc's own rendering of a flatbuffer, to check graph.json against.

use std::path::Path;

use serde_json::Value;

use super::write_file;

/// flatc's JSON with bare `inf`, `-inf` and `nan` turned into strings.
pub fn flatc_json(text: &str) -> Value {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let fixed = match line.trim_end_matches(',').rsplit_once(": ") {
            Some((_, v)) if ["inf", "-inf", "nan", "+inf"].contains(&v) => {
                let v = v.trim_start_matches('+');
                line.replacen(
                    &format!(
                        ": {}",
                        line.trim_end_matches(',').rsplit_once(": ").unwrap().1
                    ),
                    &format!(": \"{v}\""),
                    1,
                )
            }
            // A list item on a line of its own.
            _ => match line.trim().trim_end_matches(',') {
                v @ ("inf" | "-inf" | "nan" | "+inf") => {
                    line.replacen(v, &format!("\"{}\"", v.trim_start_matches('+')), 1)
                }
                _ => line.to_owned(),
            },
        };
        out.push_str(&fixed);
        out.push('\n');
    }
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("flatc output: {e}"))
}

/// Equal JSON, numbers within flatc's printed precision.
pub fn same(a: &Value, b: &Value, at: &str) {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            // flatc prints floats with six decimals.
            assert!((x - y).abs() <= 5e-7 + 1e-6 * x.abs(), "{at}: {x} vs {y}");
        }
        (Value::Array(x), Value::Array(y)) => {
            assert_eq!(x.len(), y.len(), "{at}");
            for (i, (x, y)) in x.iter().zip(y).enumerate() {
                same(x, y, &format!("{at}[{i}]"));
            }
        }
        (Value::Object(x), Value::Object(y)) => {
            let xk: Vec<&String> = x.keys().collect();
            let yk: Vec<&String> = y.keys().collect();
            assert_eq!(xk, yk, "{at}: keys");
            for (k, xv) in x {
                same(xv, &y[k], &format!("{at}.{k}"));
            }
        }
        _ => assert_eq!(a, b, "{at}"),
    }
}

/// `flatc --json --strict-json --defaults-json` of `bytes` with `schema`.
pub fn flatc_print(flatc: &Path, schema: &Path, bytes: &[u8]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let fb = write_file(dir.path(), "graph.bin", bytes);
    let out = std::process::Command::new(flatc)
        .args([
            "--json",
            "--strict-json",
            "--defaults-json",
            "--raw-binary",
            "-o",
        ])
        .arg(dir.path())
        .arg(schema)
        .arg("--")
        .arg(&fb)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    flatc_json(&std::fs::read_to_string(dir.path().join("graph.json")).unwrap())
}
