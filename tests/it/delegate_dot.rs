//! `graph.dot` of decoded delegates: it renders with Graphviz, draws one
//! node per operator, and every edge into an operator carries a value that
//! operator reads (checked against the delegate's own `graph.json`).

use crate::common;

use common::*;
use serde_json::Value;

const XNNPACK: &str = "methods/forward/delegates/0-XnnpackBackend/xnnpack";

/// `(from, to, value id)` of each edge line.
fn edges(text: &str) -> Vec<(String, String, u32)> {
    text.lines()
        .filter_map(|l| {
            let (from, rest) = l.trim().split_once(" -> ")?;
            let (to, label) = rest.split_once(" [label=\"%")?;
            let v = label.split(' ').next()?.parse().ok()?;
            Some((from.to_owned(), to.to_owned(), v))
        })
        .collect()
}

/// Every value id a node of `graph.json` names in a field ending `_id`.
fn ids_of(node: &Value) -> Vec<u32> {
    let Some(fields) = node["xnode_union"].as_object() else {
        return Vec::new();
    };
    fields
        .iter()
        .filter(|(k, _)| k.ends_with("_id"))
        .filter_map(|(_, v)| v.as_u64().map(|v| v as u32))
        .collect()
}

#[test]
fn xnnpack_graph_dot_draws_each_node_and_what_it_reads() {
    for (model, v) in xnnpack::fixtures() {
        let text = read(&v, &format!("{XNNPACK}/graph.dot"));
        dot_svg(model, &text);
        let text = String::from_utf8(text).unwrap();
        let graph = json(&v, &format!("{XNNPACK}/graph.json"));
        let nodes = graph["xnodes"].as_array().unwrap();
        let drawn = text
            .lines()
            .filter(|l| l.contains("[shape=ellipse"))
            .count();
        assert_eq!(drawn, nodes.len(), "{model}");
        let outputs: Vec<u32> = graph["output_ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap() as u32)
            .collect();
        let all = edges(&text);
        assert!(!all.is_empty(), "{model}");
        for (from, to, value) in all {
            if to == "outputs" {
                assert!(
                    outputs.contains(&value),
                    "{model}: {from} -> outputs %{value}"
                );
                continue;
            }
            let i: usize = to.strip_prefix('n').unwrap().parse().unwrap();
            assert!(
                ids_of(&nodes[i]).contains(&value),
                "{model}: {from} -> {to} carries %{value}, which node {i} does not name"
            );
        }
    }
}

#[test]
fn vulkan_graph_dot_draws_each_call() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz-seeds/vulkan.pte");
    let v = view_of(&[path], &[]);
    let dir = "methods/forward/delegates/0-VulkanBackend/vulkan";
    let text = read(&v, &format!("{dir}/graph.dot"));
    dot_svg("vulkan.pte", &text);
    let text = String::from_utf8(text).unwrap();
    let graph = json(&v, &format!("{dir}/graph.json"));
    let chain = graph["chain"].as_array().unwrap();
    let drawn = text
        .lines()
        .filter(|l| l.contains("[shape=ellipse"))
        .count();
    assert_eq!(drawn, chain.len());
    for (_, to, value) in edges(&text) {
        if to == "outputs" {
            assert!(
                graph["output_ids"]
                    .as_array()
                    .unwrap()
                    .contains(&value.into())
            );
            continue;
        }
        let i: usize = to.strip_prefix('n').unwrap().parse().unwrap();
        assert!(chain[i]["args"].as_array().unwrap().contains(&value.into()));
    }
}
