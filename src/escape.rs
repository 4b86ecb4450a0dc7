//! Names in text output (`ls`, `stat`, `inspect`, `diff`): escaped so that
//! a name from a file cannot break a line or send control sequences to a
//! terminal, or a DOT file's syntax. JSON output keeps names exact.

use std::borrow::Cow;
use std::fmt::Write;

/// `name` with backslashes and control characters written as C escapes
/// (`\n`, `\t`, `\x1b`, `\\`), as `ls --quoting-style=escape` shows them.
pub fn escape(name: &str) -> Cow<'_, str> {
    if !name.chars().any(|c| c.is_control() || c == '\\') {
        return Cow::Borrowed(name);
    }
    let mut out = String::with_capacity(name.len() + 8);
    for c in name.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() && (c as u32) < 0x100 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// `s` as a DOT double-quoted string, so that a name from a file cannot
/// end it. Newlines become `\n`, which DOT shows as line breaks; carriage
/// returns and NULs, which it would misread, are dropped, and other
/// control characters become spaces.
pub fn dot_quote(s: &str) -> String {
    let mut q = String::with_capacity(s.len() + 2);
    q.push('"');
    for c in s.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            '\n' => q.push_str("\\n"),
            '\r' | '\0' => {}
            c if c.is_control() => q.push(' '),
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(escape("fc1.weight"), "fc1.weight");
        assert_eq!(escape("a\nb"), "a\\nb");
        assert_eq!(escape("\x1b[31mred"), "\\x1b[31mred");
        assert_eq!(escape("back\\slash\t"), "back\\\\slash\\t");
        assert_eq!(escape("\u{85}next"), "\\x85next");
        assert_eq!(escape("ünïcode"), "ünïcode");
    }
}
