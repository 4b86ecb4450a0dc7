//! Names of constant values: the layer (node index and operator) and role
//! of the first node that uses each, which stay the same when the bytes
//! (and so the sha256 named-data keys) change; and how each weight's
//! stored layout relates to PyTorch's.

use serde::Serialize;

use super::graph::{ById, Value};
use super::nodes::{Field, Node};

/// A node using a constant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Use {
    /// Node index.
    pub node: usize,
    /// Operator (`conv2d`).
    pub op: &'static str,
    /// Role (`filter`, `bias`, `input1`).
    pub role: &'static str,
}

/// How a weight is stored compared with the PyTorch tensor it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Layout {
    /// Dimension letters as stored (`OHWI`).
    pub stored: &'static str,
    /// Dimension letters of the PyTorch parameter (`OIHW`).
    pub pytorch: &'static str,
}

/// The nodes using each value (by position in `values`; none for values
/// that are not constants), in node order.
pub fn users(nodes: &[Node], values: &[Value<'_>], by_id: &ById) -> Vec<Vec<Use>> {
    let mut users = vec![Vec::new(); values.len()];
    for n in nodes {
        for (role, id) in n.inputs() {
            if let Some(&v) = by_id.get(&id)
                && values[v].tensor.constant_buffer_idx() != 0
            {
                users[v].push(Use {
                    node: n.index,
                    op: n.short,
                    role,
                });
            }
        }
    }
    users
}

/// File stem, layer and role of a value whose first user is `first`, in a
/// graph of `node_count` nodes: `012-conv2d.filter`, or `unused.<id>`.
/// Node indices have at least three digits, so names sort in node order.
pub fn name(
    first: Option<&Use>,
    node_count: usize,
    id: u32,
) -> (String, Option<String>, &'static str) {
    let width = node_count.saturating_sub(1).max(999).ilog10() as usize + 1;
    match first {
        Some(u) => {
            let layer = format!("{:0width$}-{}", u.node, u.op);
            let mut stem = String::with_capacity(layer.len() + 1 + u.role.len());
            stem.push_str(&layer);
            stem.push('.');
            stem.push_str(u.role);
            (stem, Some(layer), u.role)
        }
        None => (format!("unused.{id}"), None, "unused"),
    }
}

/// How the first user stores the weight, compared with PyTorch.
pub fn layout(u: &Use, nodes: &[Node]) -> Option<Layout> {
    let l = |stored, pytorch| Some(Layout { stored, pytorch });
    match (u.op, u.role) {
        ("conv2d", "filter") => l("OHWI", "OIHW"),
        ("depthwise_conv2d", "filter") => l("1HWO", "O1HW"),
        ("conv_transpose2d", "filter") => l("OHWI", "IOHW"),
        ("fully_connected", "filter") => {
            let transposed = nodes
                .get(u.node)
                .and_then(|n| n.fields.iter().find(|(f, _)| *f == "flags"))
                .is_some_and(|(_, f)| matches!(f, Field::U32(x) if x & 1 != 0));
            if transposed {
                l("IO", "OI")
            } else {
                l("OI", "OI")
            }
        }
        (_, "bias") => l("O", "O"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_sort_in_node_order() {
        let u = Use {
            node: 12,
            op: "conv2d",
            role: "filter",
        };
        assert_eq!(name(Some(&u), 67, 5).0, "012-conv2d.filter");
        assert_eq!(name(Some(&u), 12000, 5).0, "00012-conv2d.filter");
        assert_eq!(name(None, 67, 5), ("unused.5".to_owned(), None, "unused"));
    }
}
