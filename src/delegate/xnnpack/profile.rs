//! XNNPACK's profiling events matched to the graph's nodes.
//!
//! ExecuTorch's XNNPACK profiler names each event after the XNNPACK
//! operator that ran (`Convolution (NHWC, F32) IGEMM`) and numbers
//! operators of one name in run order (`#1`, `#2`). XNNPACK makes one
//! operator per graph node, in node order, but picks the operator by what
//! the node computes: a 1×1 convolution runs as `Fully Connected (NC, F32)
//! GEMM`, a global average pooling as `Mean (ND)`. So the n-th event
//! of a call is the n-th node when there are as many of each and every
//! pair's kinds agree. Failing that, events and nodes are walked together
//! in order: an event goes on the next node of a kind it can run (nodes
//! XNNPACK elided are passed over, a few at most), and a `Clamp` that no
//! such node follows is the clamp XNNPACK adds after a node whose output
//! it bounds (an `add` with ReLU fused, which its binary operators cannot
//! do themselves). An event the walk cannot place is the n-th node of the
//! one node kind its name stands for, when their counts agree; failing
//! that, it is left unmatched.

use super::{graph, header, nodes};
use crate::delegate::{ProfileNode, ProfileNodes};

/// How a position match is described.
const BY_POSITION: &str = "position in node order; kinds agree";
/// How a kind match is described.
const BY_KIND: &str = "n-th node of its kind";
/// How a walk match is described.
const BY_ORDER: &str = "next node of its kind in node order";
/// How a clamp put on the node before it is described.
const BY_CLAMP: &str = "the clamp of the node before it";
/// How many nodes the walk passes over to find one an event can run.
const LOOKAHEAD: usize = 3;

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
    let walked = walk(shorts, ids);
    ids.iter()
        .zip(walked)
        .map(|(id, w)| {
            if let Some((i, how)) = w {
                return node(i, how);
            }
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

/// Events and nodes walked together in order (see the module's
/// description): for each event, its node and how it was placed.
fn walk(shorts: &[&str], ids: &[&str]) -> Vec<Option<(usize, &'static str)>> {
    let mut next = 0;
    let mut last: Option<usize> = None;
    ids.iter()
        .map(|id| {
            let k = kind(id);
            let ahead =
                (next..shorts.len().min(next + LOOKAHEAD + 1)).find(|&i| agrees(k, shorts[i]));
            match ahead {
                Some(i) => {
                    next = i + 1;
                    last = Some(i);
                    Some((i, BY_ORDER))
                }
                None if k.eq_ignore_ascii_case("clamp") => last.map(|i| (i, BY_CLAMP)),
                None => None,
            }
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
        assert_eq!(m[0].as_ref().unwrap().how, BY_ORDER);
        assert_eq!(m[1].as_ref().unwrap().index, 1);
    }

    #[test]
    fn a_walk_places_convolutions_and_the_clamps_after_adds() {
        // The XNNPACK ResNet-style fixture's nodes and events.
        let shorts = [
            "static_transpose",
            "conv2d",
            "max_pooling2d",
            "conv2d",
            "conv2d",
            "add",
            "conv2d",
            "conv2d",
            "add",
            "global_avg_pooling2d",
            "static_transpose",
            "static_reshape",
            "fully_connected",
        ];
        let ids = [
            "Transpose (ND, X32) #1",
            "Convolution (NHWC, F32) IGEMM #1",
            "Max Pooling (NHWC, F32) #1",
            "Convolution (NHWC, F32) IGEMM #2",
            "Convolution (NHWC, F32) IGEMM #3",
            "Add (ND) #1",
            "Clamp (NC) #1",
            "Convolution (NHWC, F32) IGEMM #4",
            "Convolution (NHWC, F32) IGEMM #5",
            "Add (ND) #2",
            "Clamp (NC) #2",
            "Mean (ND) Reduce2 #1",
            "Transpose (ND, X32) #2",
            "Static Reshape (NC) #1",
            "Fully Connected (NC, F32) GEMM #1",
        ];
        let m: Vec<(usize, &str)> = matched(&shorts, &ids)
            .into_iter()
            .map(|n| {
                let n = n.unwrap();
                (n.index, n.how)
            })
            .collect();
        let want = [0, 1, 2, 3, 4, 5, 5, 6, 7, 8, 8, 9, 10, 11, 12];
        assert_eq!(m.iter().map(|x| x.0).collect::<Vec<_>>(), want);
        assert_eq!(m[6].1, BY_CLAMP);
        assert_eq!(m[7].1, BY_ORDER);
    }
}
