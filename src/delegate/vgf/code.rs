//! `code.txt` of a VGF payload: the modules, the model's inputs and
//! outputs, then a line per segment with what it binds, and a line per
//! resource.
//!
//! ```text
//! # VGF 0.5.0 (Vulkan headers 0): 1 module, 1 segment, 5 resources, 3 constants (CONST00)
//! segment 0: GRAPH graph_segment_0 module 0 inputs %3:f32[1,16]@0.0 -> outputs %4:f32[1,8]@0.1 constants %0:f32[32,1,1,16] %1:f32[32] %2:f32[8,1,1,32]
//! ```
//! A resource is `%<resource index>:<format>[dims]`, a binding `@set.binding`.

use std::fmt::Write;

use super::{Payload, category, module_type, tables, vulkan};

/// Most items shown of one list on a line: a segment may bind thousands of
/// constants, and a line must not grow with them.
const MAX_SHOWN: usize = 16;

/// `%i:fmt[dims]` of resource `i`, `%i:?` when there is no such resource.
pub fn resource(p: &Payload<'_>, i: u32) -> String {
    let Some(r) = p.resource(i) else {
        return format!("%{i}:?");
    };
    let dims: Vec<i64> = r
        .description()
        .map(|d| super::dims(d.shape()))
        .unwrap_or_default();
    format!(
        "%{i}:{}{}",
        vulkan::short(r.vk_format()),
        bounded(&dims, ",")
    )
}

fn bounded<T: ToString>(items: &[T], sep: &str) -> String {
    let shown: Vec<String> = items.iter().take(MAX_SHOWN).map(T::to_string).collect();
    let more = if items.len() > MAX_SHOWN {
        format!("{sep}… {} in all", items.len())
    } else {
        String::new()
    };
    format!("[{}{more}]", shown.join(sep))
}

fn list(out: &mut String, items: Vec<String>) {
    if items.is_empty() {
        out.push_str(" none");
    }
    let n = items.len();
    for s in items.into_iter().take(MAX_SHOWN) {
        out.push(' ');
        out.push_str(&s);
    }
    if n > MAX_SHOWN {
        let _ = write!(out, " … {n} in all");
    }
}

fn plural(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// The text of `code.txt`.
pub fn render(p: &Payload<'_>) -> String {
    let h = &p.header;
    let mut out = String::new();
    let modules = p.module_list();
    let segments = p.segments();
    let layout = match p.constants.as_ref().map(|c| c.0) {
        Some(super::constants::Kind::Raw) => " (CONST00)",
        Some(super::constants::Kind::Flatbuffer) => " (ConstantSection)",
        None => "",
    };
    let _ = writeln!(
        out,
        "# VGF {}.{}.{} (Vulkan headers {}): {}, {}, {}, {}{layout}",
        h.version[0],
        h.version[1],
        h.version[2],
        h.vk_header_version,
        plural(modules.len(), "module"),
        plural(segments.len(), "segment"),
        plural(p.resource_count(), "resource"),
        plural(p.constant_list().len(), "constant"),
    );
    for (i, m) in modules.iter().enumerate() {
        let (kind, _) = tables::code_kind(*m);
        let size = tables::code_span(p.bytes, *m).map_or(0, |(s, _)| s.len);
        let _ = writeln!(
            out,
            "module {i}: {} {:?} entry {:?} {kind} {size} bytes",
            module_type(m.type_()),
            m.name().unwrap_or(""),
            m.entry_point().unwrap_or(""),
        );
    }
    if let Some(s) = p.sequence {
        for (what, slots, names) in [
            ("inputs", s.inputs(), s.input_names()),
            ("outputs", s.outputs(), s.output_names()),
        ] {
            out.push_str(what);
            out.push(':');
            let names: Vec<&str> = names.map(|n| n.iter().collect()).unwrap_or_default();
            let items = slots
                .into_iter()
                .flatten()
                .enumerate()
                .map(|(k, b)| {
                    let name = names.get(k).copied().unwrap_or("");
                    format!(
                        "{}={}@{}",
                        crate::delegate::tosa::code::shown(name),
                        resource(p, b.mrt_index()),
                        b.binding()
                    )
                })
                .collect();
            list(&mut out, items);
            out.push('\n');
        }
    }
    for (i, s) in segments.iter().enumerate() {
        let _ = write!(
            out,
            "segment {i}: {} {:?} module {}",
            module_type(s.type_()),
            s.name().unwrap_or(""),
            s.module_index()
        );
        // The descriptor set of each binding, for `@set.binding`.
        let mut sets = std::collections::HashMap::new();
        for (k, d) in s.set_infos().into_iter().flatten().enumerate() {
            let set = if d.set_index() == u32::MAX {
                k as u64
            } else {
                u64::from(d.set_index())
            };
            for b in d.bindings().into_iter().flatten() {
                sets.entry((b.binding(), b.mrt_index())).or_insert(set);
            }
        }
        for (what, slots) in [(" inputs", s.inputs()), (" -> outputs", s.outputs())] {
            out.push_str(what);
            let items = slots
                .into_iter()
                .flatten()
                .map(|b| {
                    let set = sets
                        .get(&(b.binding(), b.mrt_index()))
                        .map_or_else(|| "?".to_owned(), u64::to_string);
                    format!("{}@{set}.{}", resource(p, b.mrt_index()), b.binding())
                })
                .collect();
            list(&mut out, items);
        }
        out.push_str(" constants");
        let items = s
            .constants()
            .into_iter()
            .flatten()
            .map(|c| match p.constant_list().get(c as usize) {
                Some(k) => resource(p, k.mrt_index),
                None => format!("constant{c}:?"),
            })
            .collect();
        list(&mut out, items);
        if let Some(d) = s.dispatch_shape() {
            let d: Vec<u32> = d.iter().collect();
            let _ = write!(out, " dispatch={}", bounded(&d, ","));
        }
        let pushes = s.push_constant_ranges().map_or(0, |r| r.len());
        if pushes > 0 {
            let _ = write!(out, " push_constant_ranges={pushes}");
        }
        out.push('\n');
    }
    for (i, r) in p
        .resources
        .and_then(|r| r.mrt_entry())
        .into_iter()
        .flatten()
        .enumerate()
    {
        let _ = write!(
            out,
            "resource {}: {} {}",
            resource(p, i as u32),
            category(r.category()),
            vulkan::descriptor_type(r.vk_descriptor_type())
        );
        if r.alias_group_id() != u32::MAX {
            let _ = write!(out, " alias_group={}", r.alias_group_id());
        }
        out.push('\n');
    }
    out
}
