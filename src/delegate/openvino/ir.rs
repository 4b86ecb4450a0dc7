//! The IR (OpenVINO's model XML) read into layers and edges: `<net>` holds
//! `<layers>` of `<layer id name type version>`, each with its `<data>`
//! attributes and `<input>`/`<output>` `<port>`s of `<dim>`s, and `<edges>`
//! of `<edge from-layer from-port to-layer to-port>`. Layers of nested
//! bodies (loops) and `rt_info` are left out.

use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};
use serde::Serialize;

/// A port of a layer.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Port {
    /// Port id.
    pub id: String,
    /// Precision (`FP32`), when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub precision: Option<String>,
    /// Tensor names, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub names: Option<String>,
    /// Dimensions as written (`-1` or ranges for dynamic ones).
    pub dims: Vec<String>,
}

/// A layer of the IR.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Layer {
    /// Layer id.
    pub id: String,
    /// Layer name.
    pub name: String,
    /// Operation type (`Const`, `MatMul`).
    #[serde(rename = "type")]
    pub kind: String,
    /// Operation set (`opset1`).
    pub version: String,
    /// The `<data>` attributes, in order.
    pub data: serde_json::Map<String, serde_json::Value>,
    /// Input ports.
    pub inputs: Vec<Port>,
    /// Output ports.
    pub outputs: Vec<Port>,
}

impl Layer {
    /// A `<data>` attribute.
    pub fn attr(&self, key: &str) -> Option<&str> {
        self.data.get(key).and_then(|v| v.as_str())
    }
}

/// An edge between two ports.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Edge {
    /// Producing layer id.
    pub from_layer: String,
    /// Its port.
    pub from_port: String,
    /// Consuming layer id.
    pub to_layer: String,
    /// Its port.
    pub to_port: String,
}

/// The IR's layers and edges.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Model {
    /// `<net name>`.
    pub name: String,
    /// `<net version>` (the IR version).
    pub version: String,
    /// Layers in document order.
    pub layers: Vec<Layer>,
    /// Edges in document order.
    pub edges: Vec<Edge>,
}

/// The attributes of `e` as (name, value) pairs.
fn attrs(e: &BytesStart<'_>) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for a in e.attributes() {
        let a = a.map_err(|err| err.to_string())?;
        let key = String::from_utf8_lossy(a.key.as_ref()).into_owned();
        let value = a
            .normalized_value(quick_xml::XmlVersion::Explicit1_0)
            .map_err(|err| err.to_string())?;
        out.push((key, value.into_owned()));
    }
    Ok(out)
}

fn get(attrs: &[(String, String)], key: &str) -> String {
    attrs
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.clone())
        .unwrap_or_default()
}

/// Where in the document the reader is, for a parse.
#[derive(Default)]
struct State {
    /// Element names from the root.
    path: Vec<String>,
    model: Model,
    /// The layer being read.
    layer: Option<Layer>,
    /// The port being read, and whether it is an output.
    port: Option<(Port, bool)>,
}

impl State {
    fn at(&self, tail: &[&str]) -> bool {
        self.path.len() >= tail.len()
            && self.path[self.path.len() - tail.len()..]
                .iter()
                .zip(tail)
                .all(|(a, b)| a == b)
    }

    fn open(&mut self, name: &str, a: Vec<(String, String)>) {
        let depth = self.path.len() + 1;
        match name {
            "net" if depth == 1 => {
                self.model.name = get(&a, "name");
                self.model.version = get(&a, "version");
            }
            // Top-level layers only (`net/layers/layer`), not those of a
            // loop's body.
            "layer" if depth == 3 && self.at(&["net", "layers"]) => {
                self.layer = Some(Layer {
                    id: get(&a, "id"),
                    name: get(&a, "name"),
                    kind: get(&a, "type"),
                    version: get(&a, "version"),
                    ..Layer::default()
                });
            }
            "data" if depth == 4 && self.at(&["layers", "layer"]) => {
                if let Some(l) = &mut self.layer {
                    for (k, v) in a {
                        l.data.insert(k, serde_json::Value::String(v));
                    }
                }
            }
            "port" if depth == 5 && self.layer.is_some() => {
                let output = self.at(&["layer", "output"]);
                if output || self.at(&["layer", "input"]) {
                    let port = Port {
                        id: get(&a, "id"),
                        precision: a
                            .iter()
                            .find(|(k, _)| k == "precision")
                            .map(|(_, v)| v.clone()),
                        names: a.iter().find(|(k, _)| k == "names").map(|(_, v)| v.clone()),
                        dims: Vec::new(),
                    };
                    self.port = Some((port, output));
                }
            }
            "edge" if depth == 3 && self.at(&["net", "edges"]) => {
                self.model.edges.push(Edge {
                    from_layer: get(&a, "from-layer"),
                    from_port: get(&a, "from-port"),
                    to_layer: get(&a, "to-layer"),
                    to_port: get(&a, "to-port"),
                });
            }
            _ => {}
        }
        self.path.push(name.to_owned());
    }

    fn close(&mut self) {
        let depth = self.path.len();
        let name = self.path.pop().unwrap_or_default();
        match name.as_str() {
            "layer" if depth == 3 => {
                if let Some(l) = self.layer.take() {
                    self.model.layers.push(l);
                }
            }
            "port" if depth == 5 => {
                if let (Some(l), Some((p, output))) = (&mut self.layer, self.port.take()) {
                    if output {
                        l.outputs.push(p);
                    } else {
                        l.inputs.push(p);
                    }
                }
            }
            _ => {}
        }
    }

    fn text(&mut self, t: &[u8]) {
        if self.path.last().map(String::as_str) == Some("dim")
            && let Some((p, _)) = &mut self.port
        {
            p.dims.push(String::from_utf8_lossy(t).trim().to_owned());
        }
    }
}

/// Reads `xml` (the decoded IR). Errors give the byte position in it.
pub fn parse(xml: &[u8]) -> Result<Model, String> {
    let mut reader = Reader::from_reader(xml);
    let mut st = State::default();
    let err = |pos: u64, e: String| format!("model.xml at byte {pos}: {e}");
    loop {
        let pos = reader.buffer_position();
        let ev = reader.read_event().map_err(|e| err(pos, e.to_string()))?;
        match ev {
            Event::Start(e) => {
                let a = attrs(&e).map_err(|m| err(pos, m))?;
                st.open(&String::from_utf8_lossy(e.local_name().as_ref()), a);
            }
            Event::Empty(e) => {
                let a = attrs(&e).map_err(|m| err(pos, m))?;
                st.open(&String::from_utf8_lossy(e.local_name().as_ref()), a);
                st.close();
            }
            Event::End(_) => st.close(),
            Event::Text(t) => st.text(&t),
            Event::Eof => break,
            _ => {}
        }
    }
    if !st.path.is_empty() {
        return Err(err(
            reader.buffer_position(),
            format!("the document ends inside <{}>", st.path.join("><")),
        ));
    }
    if st.model.version.is_empty() && st.model.layers.is_empty() {
        return Err(err(0, "no <net> element with layers".to_owned()));
    }
    Ok(st.model)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layers_ports_and_edges_are_read() {
        let xml = br#"<?xml version="1.0"?>
<net name="m" version="11"><layers>
<layer id="1" name="w" type="Const" version="opset1"><data element_type="f32" shape="2" offset="0" size="8"/>
<output><port id="0" precision="FP32"><dim>2</dim></port></output></layer>
</layers><edges><edge from-layer="1" from-port="0" to-layer="2" to-port="1"/></edges></net>"#;
        let m = parse(xml).unwrap();
        assert_eq!(m.layers.len(), 1);
        assert_eq!(m.layers[0].attr("size"), Some("8"));
        assert_eq!(m.layers[0].outputs[0].dims, ["2"]);
        assert_eq!(m.edges[0].to_port, "1");
        let e = parse(b"<net version=\"11\"><layers><layer></net>").unwrap_err();
        assert!(e.starts_with("model.xml at byte"), "{e}");
    }
}
