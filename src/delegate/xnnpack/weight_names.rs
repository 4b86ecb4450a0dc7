//! Names of constant values: the layer (node index and operator) and role
//! of the first node that uses each, which stay the same when the bytes
//! (and so the sha256 named-data keys) change; and how each weight's
//! stored layout relates to PyTorch's.

use std::collections::HashMap;

use serde::Serialize;

use super::graph::Value;
use super::nodes::{Field, Node};

/// A node using a constant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Use {
    /// Node index.
    pub node: usize,
    /// Operator (`conv2d`).
    pub op: String,
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

/// The nodes using each constant value (by position in `values`), in
/// node order.
pub fn users(
    nodes: &[Node],
    values: &[Value<'_>],
    by_id: &HashMap<u32, usize>,
) -> HashMap<usize, Vec<Use>> {
    let mut users: HashMap<usize, Vec<Use>> = HashMap::new();
    for n in nodes {
        for (role, id) in n.inputs() {
            if let Some(&v) = by_id.get(&id)
                && values[v].tensor.constant_buffer_idx() != 0
            {
                users.entry(v).or_default().push(Use {
                    node: n.index,
                    op: n.short.clone(),
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
    let width = node_count.saturating_sub(1).max(999).to_string().len();
    match first {
        Some(u) => {
            let layer = format!("{:0width$}-{}", u.node, u.op);
            (format!("{layer}.{}", u.role), Some(layer), u.role)
        }
        None => (format!("unused.{id}"), None, "unused"),
    }
}

/// How the first user stores the weight, compared with PyTorch.
pub fn layout(u: &Use, nodes: &[Node]) -> Option<Layout> {
    let l = |stored, pytorch| Some(Layout { stored, pytorch });
    match (u.op.as_str(), u.role) {
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
            op: "conv2d".into(),
            role: "filter",
        };
        assert_eq!(name(Some(&u), 67, 5).0, "012-conv2d.filter");
        assert_eq!(name(Some(&u), 12000, 5).0, "00012-conv2d.filter");
        assert_eq!(name(None, 67, 5), ("unused.5".to_owned(), None, "unused"));
    }
}
