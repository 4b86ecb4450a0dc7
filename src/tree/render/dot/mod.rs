//! `graph.dot` files for Graphviz: a program method's instruction graph
//! ([`program`]) and a package method's graph ([`package`]), drawn alike:
//! calls as nodes, tensors as edges labelled with their type and shape.

pub mod package;
pub mod program;

/// `s` as a DOT double-quoted string. Newlines become `\n`, which DOT
/// shows as line breaks; carriage returns and NULs, which it would misread,
/// are dropped.
pub fn quote(s: &str) -> String {
    let mut q = String::with_capacity(s.len() + 2);
    q.push('"');
    for c in s.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            '\n' => q.push_str("\\n"),
            '\r' | '\0' => {}
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

#[cfg(test)]
mod tests {
    use super::quote;

    #[test]
    fn quotes_what_dot_would_misread() {
        assert_eq!(quote("a\"b\\c\nd\r"), "\"a\\\"b\\\\c\\nd\"");
    }
}
