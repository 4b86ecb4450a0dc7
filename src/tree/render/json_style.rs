//! The layout of ptefs's JSON files: a `serde_json` formatter.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::ser::{Formatter, Serializer};

/// Writes `v` to `out` in the style of [`super::json`].
pub(crate) fn write(out: impl Write, v: &impl Serialize) -> serde_json::Result<()> {
    v.serialize(&mut Serializer::with_formatter(out, Style::default()))
}

/// Counts bytes and keeps none.
pub(crate) struct Counter(pub usize);

impl Write for Counter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Objects indented by two spaces per level, one member per line; arrays
/// inline, with `, ` between elements.
#[derive(Default)]
struct Style {
    /// Nesting of objects.
    depth: usize,
    /// Per open object: whether it has a member yet.
    members: Vec<bool>,
}

impl Style {
    fn indent<W: ?Sized + Write>(&self, w: &mut W) -> io::Result<()> {
        w.write_all(b"\n")?;
        for _ in 0..self.depth {
            w.write_all(b"  ")?;
        }
        Ok(())
    }
}

impl Formatter for Style {
    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b"[")
    }

    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b"]")
    }

    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if first { Ok(()) } else { w.write_all(b", ") }
    }

    fn end_array_value<W: ?Sized + Write>(&mut self, _: &mut W) -> io::Result<()> {
        Ok(())
    }

    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.depth += 1;
        self.members.push(false);
        w.write_all(b"{")
    }

    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.depth -= 1;
        if self.members.pop().unwrap_or(false) {
            self.indent(w)?;
        }
        w.write_all(b"}")
    }

    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if let Some(m) = self.members.last_mut() {
            *m = true;
        }
        if !first {
            w.write_all(b",")?;
        }
        self.indent(w)
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }

    fn end_object_value<W: ?Sized + Write>(&mut self, _: &mut W) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn objects_are_one_member_per_line_and_arrays_inline() {
        let v = json!({"a": [1, 2, 3], "b": {}, "c": [{"x": 1}, {"y": [true]}], "d": []});
        let text = String::from_utf8(super::super::json(&v).unwrap().into_vec()).unwrap();
        assert_eq!(
            text,
            "{\n  \"a\": [1, 2, 3],\n  \"b\": {},\n  \"c\": [{\n    \"x\": 1\n  }, {\n    \"y\": [true]\n  }],\n  \"d\": []\n}\n"
        );
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, v);
    }
}
