//! XNNPACK's profiling events matched to the graph's nodes.
//!
//! ExecuTorch's XNNPACK profiler names each event after the XNNPACK
//! operator that ran (`Convolution (NHWC, F32) IGEMM`) and numbers
//! operators of one name in run order (`#1`, `#2`). XNNPACK makes one
//! operator per graph node, in node order, but picks the operator by what
//! the node computes: a 1×1 convolution runs as `Fully Connected (NC, F32)
//! GEMM`, a global average pooling as `Mean (ND)`. So the n-th event
//! of a call is the n-th node when there are as many of each and every
//! pair's kinds agree; failing that, the n-th event of one name is the
//! n-th node of the one node kind that name stands for, when their counts
//! agree; failing that, the event is left unmatched.

use super::{graph, header, nodes};
use crate::delegate::{ProfileNode, ProfileNodes};

/// How a position match is described.
const BY_POSITION: &str = "position in node order; kinds agree";
/// How a kind match is described.
const BY_KIND: &str = "n-th node of its kind";

/// XNNPACK operator kinds whose node kinds differ in name: (the event's
/// operator kind, lower case, the node kinds it runs).
const KINDS: &[(&str, &[&str])] = &[
    ("convolution", &["conv2d", "depthwise_conv2d"]),
    ("deconvolution", &["conv_transpose2d"]),
    // A 1×1 convolution with stride 1 runs as a fully connected operator.
    ("fully connected", &["fully_connected", "conv2d"]),
    (
        "mean",
        &[
            "global_avg_pooling2d",
            "global_avg_pooling1d",
            "static_mean",
        ],
    ),
    ("sum", &["global_sum_pooling2d", "global_sum_pooling1d"]),
    (
        "copy",
        &[
            "static_reshape",
            "static_expand_dims",
            "copy",
            "concatenate2",
            "concatenate3",
            "concatenate4",
            "concatenate5",
            "static_slice",
        ],
    ),
    ("softmax", &["softmax"]),
    ("divide", &["div"]),
    ("constant pad", &["static_constant_pad"]),
    ("resize bilinear", &["static_resize_bilinear2d"]),
];

/// The operator kind of an event name: what precedes ` (` or ` #`.
fn kind(id: &str) -> &str {
    let end = [id.find(" ("), id.rfind(" #")]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(id.len());
    id[..end].trim()
}

/// The event name without its ` #n`, and n.
fn numbered(id: &str) -> (&str, Option<usize>) {
    match id.rsplit_once(" #") {
        Some((name, n)) => match n.parse() {
            Ok(n) => (name, Some(n)),
            Err(_) => (id, None),
        },
        None => (id, None),
    }
}

fn letters(s: &str) -> String {
    s.chars()
        .filter(char::is_ascii_alphabetic)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// Whether an operator of kind `kind` can run a node of kind `short`.
fn agrees(kind: &str, short: &str) -> bool {
    let k = kind.to_ascii_lowercase();
    if let Some((_, shorts)) = KINDS.iter().find(|(n, _)| *n == k) {
        return shorts.contains(&short);
    }
    // Otherwise the names agree when one contains the other, letters only
    // (`Static Reshape` and `static_reshape`, `Transpose` and
    // `static_transpose`, `Add` and `add`).
    let (k, s) = (letters(kind), letters(short));
    !k.is_empty() && !s.is_empty() && (s.contains(&k) || k.contains(&s))
}

/// Whether an operator name of kind `kind` stands for node kind `short`
/// alone, for matching by count: a kind of the table running one node
/// kind, or one whose name agrees.
fn strict(kind: &str, short: &str) -> bool {
    let k = kind.to_ascii_lowercase();
    if let Some((_, shorts)) = KINDS.iter().find(|(n, _)| *n == k) {
        // A kind running several node kinds cannot say which by count.
        return shorts.len() == 1 && shorts[0] == short;
    }
    agrees(kind, short)
}

/// The nodes the events `ids` (in the order recorded) timed, for a
/// payload whose graph reads; see the module's description.
pub fn nodes(payload: &[u8], ids: &[&str]) -> Option<ProfileNodes> {
    let h = header::parse(payload).ok()?;
    let g = graph::verify(payload, h.flatbuffer).ok()?;
    let shorts: Vec<&str> = g
        .xnodes()
        .iter()
        .flatten()
        .enumerate()
        .map(|(i, x)| nodes::read(i, x).short)
        .collect();
    Some(ProfileNodes {
        nodes: matched(&shorts, ids),
    })
}

/// [`nodes`] over the nodes' kinds.
fn matched(shorts: &[&str], ids: &[&str]) -> Vec<Option<ProfileNode>> {
    let node = |i: usize, how| {
        Some(ProfileNode {
            index: i,
            op: shorts[i].to_owned(),
            how,
        })
    };
    if ids.len() == shorts.len() && ids.iter().zip(shorts).all(|(id, s)| agrees(kind(id), s)) {
        return (0..ids.len()).map(|i| node(i, BY_POSITION)).collect();
    }
    ids.iter()
        .map(|id| {
            let (name, n) = numbered(id);
            let n = n?;
            let k = kind(id);
            let of_kind: Vec<usize> = (0..shorts.len())
                .filter(|&i| strict(k, shorts[i]))
                .collect();
            let named = ids.iter().filter(|x| numbered(x).0 == name).count();
            // Other names of the same kind (IGEMM and DWConv) share nodes:
            // only a kind with one operator name and as many nodes counts.
            let names_of_kind = ids.iter().filter(|x| kind(x) == k).count();
            (named == of_kind.len() && names_of_kind == named)
                .then(|| of_kind.get(n.checked_sub(1)?).copied())
                .flatten()
                .and_then(|i| node(i, BY_KIND))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_numbers() {
        assert_eq!(kind("Convolution (NHWC, F32) IGEMM #1"), "Convolution");
        assert_eq!(kind("Static Reshape (NC) #1"), "Static Reshape");
        assert_eq!(kind("Add #3"), "Add");
        assert_eq!(
            numbered("Transpose (ND, X32) #2"),
            ("Transpose (ND, X32)", Some(2))
        );
        assert!(agrees("Fully Connected", "conv2d"));
        assert!(agrees("Transpose", "static_transpose"));
        assert!(!agrees("Transpose", "conv2d"));
    }

    #[test]
    fn a_position_match_needs_every_kind_to_agree() {
        let shorts = ["static_transpose", "conv2d", "fully_connected"];
        let ids = [
            "Transpose (ND, X32) #1",
            "Fully Connected (NC, F32) GEMM #1",
            "Fully Connected (NC, F32) GEMM #2",
        ];
        let m = matched(&shorts, &ids);
        assert!(m.iter().all(|x| x.as_ref().unwrap().how == BY_POSITION));
        // One event fewer: the fully connected event could be either
        // node, so only the transpose is matched, by kind.
        let m = matched(&shorts, &ids[..2]);
        assert_eq!(m[0].as_ref().unwrap().index, 0);
        assert_eq!(m[0].as_ref().unwrap().how, BY_KIND);
        assert_eq!(m[1], None);
    }
}
