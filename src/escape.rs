//! Names in text output (`ls`, `stat`, `inspect`, `diff`): escaped so that
//! a name from a file cannot break a line, send control sequences to a
//! terminal, reorder what a terminal shows (bidi controls), or break a DOT
//! file's syntax. JSON output keeps names exact.

use std::borrow::Cow;
use std::fmt::Write;

/// Characters text output never shows raw: control characters, the
/// bidirectional controls (which make a terminal show text in an order
/// other than its own, so `evil\u{202e}txt.exe` reads as `evilexe.txt`),
/// and noncharacters (U+FFFE, U+FFFF and the rest), which are no text at
/// all and which XML does not allow.
pub fn is_hidden(c: char) -> bool {
    c.is_control() || is_bidi_control(c) || is_noncharacter(c)
}

/// The Unicode bidirectional formatting characters: ALM, LRM, RLM, the
/// embeddings and overrides (U+202A–U+202E) and the isolates
/// (U+2066–U+2069).
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// U+FDD0–U+FDEF and the last two code points of every plane.
fn is_noncharacter(c: char) -> bool {
    let u = c as u32;
    (0xfdd0..=0xfdef).contains(&u) || u & 0xfffe == 0xfffe
}

/// `name` with backslashes and the characters of [`is_hidden`] written as
/// C escapes (`\n`, `\t`, `\x1b`, `\\`, `\u{202e}`), as `ls
/// --quoting-style=escape` shows control characters.
pub fn escape(name: &str) -> Cow<'_, str> {
    if !name.chars().any(|c| is_hidden(c) || c == '\\') {
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
            c if is_hidden(c) => {
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
            c if is_hidden(c) => q.push(' '),
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

    #[test]
    fn bidi_controls_and_noncharacters_are_escaped() {
        assert_eq!(escape("evil\u{202e}txt.exe"), "evil\\u{202e}txt.exe");
        for (c, shown) in [
            ('\u{061c}', "\\u{61c}"),
            ('\u{200e}', "\\u{200e}"),
            ('\u{200f}', "\\u{200f}"),
            ('\u{202a}', "\\u{202a}"),
            ('\u{2066}', "\\u{2066}"),
            ('\u{2069}', "\\u{2069}"),
            ('\u{fdd0}', "\\u{fdd0}"),
            ('\u{fffe}', "\\u{fffe}"),
            ('\u{ffff}', "\\u{ffff}"),
            ('\u{10ffff}', "\\u{10ffff}"),
        ] {
            assert_eq!(escape(&format!("a{c}b")), format!("a{shown}b"));
        }
        // Neighbours that are ordinary text stay as they are.
        for c in [
            '\u{2029}',
            '\u{2065}',
            '\u{206a}',
            '\u{fffd}',
            '\u{fdcf}',
            '\u{1fffd}',
        ] {
            assert_eq!(escape(&c.to_string()), c.to_string());
        }
    }
}
