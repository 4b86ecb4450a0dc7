//! `graph.dot` files for Graphviz: a program method's instruction graph
//! ([`program`]) and a package method's graph ([`package`]), drawn alike:
//! calls as nodes, tensors as edges labelled with their type and shape.

pub mod package;
pub mod program;

pub use crate::escape::dot_quote as quote;

#[cfg(test)]
mod tests {
    use super::quote;

    #[test]
    fn quotes_what_dot_would_misread() {
        assert_eq!(quote("a\"b\\c\nd\r"), "\"a\\\"b\\\\c\\nd\"");
    }
}
