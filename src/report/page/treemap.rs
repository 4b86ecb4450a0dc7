//! The squarified treemap (Bruls, Huizing and van Wijk) of the size tree,
//! as an inline `<svg class="treemap">`: every node a `<rect>` whose area
//! is proportional to its bytes (no padding, so a group's rectangle is
//! exactly the union of its children's), carrying `data-bytes` and a
//! `<title>` with its path, size and share.

use std::fmt::Write;

use super::esc;
use crate::report::summary::SizeNode;
use crate::report::summary::text::human;

/// Width and height of the drawing, in SVG units.
pub const WIDTH: f64 = 1200.0;
/// Height.
pub const HEIGHT: f64 = 640.0;

/// How rectangles are outlined.
const STYLE: &str = "rect{stroke:#fff;stroke-width:.3}rect.g{stroke:#333;stroke-width:1}";

/// Leaves drawn at most; smaller ones are merged per group into one
/// "N smaller items" leaf.
pub const MAX_LEAVES: usize = 2000;

#[derive(Clone, Copy)]
struct Rect {
    x: f64,
    y: f64,
    w: f64,
    h: f64,
}

/// The size tree with at most about [`MAX_LEAVES`] leaves, and how many
/// leaves were merged.
pub fn capped(root: &SizeNode) -> (SizeNode, usize) {
    let mut sizes: Vec<u64> = root.leaves().iter().map(|l| l.bytes).collect();
    if sizes.len() <= MAX_LEAVES {
        return (root.clone(), 0);
    }
    sizes.sort_unstable_by(|a, b| b.cmp(a));
    // The largest leaves are drawn, ties in tree order, up to the cap.
    let threshold = sizes[MAX_LEAVES - 1];
    let mut merged = 0;
    let mut budget = MAX_LEAVES;
    let node = prune(root, threshold, &mut budget, &mut merged);
    (node, merged)
}

fn prune(n: &SizeNode, t: u64, budget: &mut usize, merged: &mut usize) -> SizeNode {
    if n.children.is_empty() {
        *budget = budget.saturating_sub(1);
        return n.clone();
    }
    let mut kept = Vec::new();
    let (mut small, mut count) = (0u64, 0usize);
    for c in &n.children {
        let leaves = if c.children.is_empty() {
            1
        } else {
            c.leaves().len()
        };
        if c.bytes < t || *budget == 0 {
            small += c.bytes;
            count += leaves;
        } else {
            kept.push(prune(c, t, budget, merged));
        }
    }
    if count > 0 {
        *merged += count;
        kept.push(SizeNode {
            name: format!("{count} smaller items of {}", n.name).into(),
            kind: "other",
            bytes: small,
            path: None,
            children: Vec::new(),
        });
    }
    SizeNode {
        children: kept,
        ..n.clone()
    }
}

/// The `<svg class="treemap">` of `root` (already capped).
pub fn svg(root: &SizeNode) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg class=\"treemap\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" \
         width=\"{WIDTH}\" height=\"{HEIGHT}\"><style>{STYLE}</style>"
    );
    let total = root.bytes;
    draw(
        &mut s,
        root,
        Rect {
            x: 0.0,
            y: 0.0,
            w: WIDTH,
            h: HEIGHT,
        },
        total,
        0,
        "",
    );
    s.push_str("</svg>");
    s
}

/// A colour per store, stable across runs.
fn hue(name: &str) -> u32 {
    name.bytes().fold(2166136261u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(16777619)
    }) % 360
}

/// Draws `n` in `r`; `group` is the name of the group holding it, whose
/// colour its leaves share.
fn draw(s: &mut String, n: &SizeNode, r: Rect, total: u64, depth: usize, group: &str) {
    if n.bytes == 0 {
        return;
    }
    let share = if total == 0 {
        0.0
    } else {
        n.bytes as f64 / total as f64 * 100.0
    };
    let label = n.path.as_deref().unwrap_or(&n.name);
    let title = format!(
        "{label}\n{} ({} bytes), {share:.2}%",
        human(n.bytes),
        n.bytes
    );
    let fill = if !n.children.is_empty() {
        "none".to_owned()
    } else if n.kind == "other" {
        "#d9d9d9".to_owned()
    } else {
        format!("hsl({},50%,{}%)", hue(group), 62 + (depth % 3) * 6)
    };
    // Strokes come from the page's (or the document's) style: groups are
    // outlined, leaves filled.
    let class = if n.children.is_empty() {
        ""
    } else {
        " class=\"g\""
    };
    let _ = write!(
        s,
        "<rect{class} x=\"{:.3}\" y=\"{:.3}\" width=\"{:.3}\" height=\"{:.3}\" data-bytes=\"{}\" \
         data-kind=\"{}\" fill=\"{fill}\"><title>{}</title></rect>",
        r.x,
        r.y,
        r.w,
        r.h,
        n.bytes,
        n.kind,
        esc(&title)
    );
    if n.children.is_empty() {
        if r.w > 60.0 && r.h > 14.0 {
            // The last part of the name says most in little room.
            let short = n.name.rsplit('/').next().unwrap_or(&n.name);
            let text: String = short.chars().take((r.w / 7.0) as usize).collect();
            let _ = write!(
                s,
                "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" pointer-events=\"none\">{}</text>",
                r.x + 3.0,
                r.y + 12.0,
                esc(&text)
            );
        }
        return;
    }
    let areas: Vec<f64> = n
        .children
        .iter()
        .map(|c| c.bytes as f64 / n.bytes as f64 * r.w * r.h)
        .collect();
    for (c, cr) in n.children.iter().zip(squarify(&areas, r)) {
        draw(s, c, cr, total, depth + 1, &n.name);
    }
}

/// The worst aspect ratio of a row of `areas` along a side of `side`.
fn worst(areas: &[f64], side: f64) -> f64 {
    let sum: f64 = areas.iter().sum();
    let (mut mx, mut mn) = (0f64, f64::INFINITY);
    for &a in areas {
        mx = mx.max(a);
        mn = mn.min(a);
    }
    if sum <= 0.0 || mn <= 0.0 {
        return f64::INFINITY;
    }
    let s2 = side * side;
    (s2 * mx / (sum * sum)).max(sum * sum / (s2 * mn))
}

/// Rectangles for `areas` (largest first) filling `r`.
fn squarify(areas: &[f64], r: Rect) -> Vec<Rect> {
    let mut out = Vec::with_capacity(areas.len());
    let mut rest = r;
    let mut i = 0;
    while i < areas.len() {
        let side = rest.w.min(rest.h);
        let mut j = i + 1;
        while j < areas.len() && worst(&areas[i..=j], side) <= worst(&areas[i..j], side) {
            j += 1;
        }
        let row = &areas[i..j];
        let sum: f64 = row.iter().sum();
        if rest.w >= rest.h {
            // A column on the left.
            let w = if rest.h > 0.0 { sum / rest.h } else { 0.0 };
            let mut y = rest.y;
            for &a in row {
                let h = if w > 0.0 { a / w } else { 0.0 };
                out.push(Rect { x: rest.x, y, w, h });
                y += h;
            }
            rest.x += w;
            rest.w = (rest.w - w).max(0.0);
        } else {
            // A row along the top.
            let h = if rest.w > 0.0 { sum / rest.w } else { 0.0 };
            let mut x = rest.x;
            for &a in row {
                let w = if h > 0.0 { a / h } else { 0.0 };
                out.push(Rect { x, y: rest.y, w, h });
                x += w;
            }
            rest.y += h;
            rest.h = (rest.h - h).max(0.0);
        }
        i = j;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn areas_are_kept() {
        let areas = [600.0, 300.0, 60.0, 30.0, 10.0];
        let r = Rect {
            x: 0.0,
            y: 0.0,
            w: 50.0,
            h: 20.0,
        };
        let rects = squarify(&areas, r);
        for (a, r) in areas.iter().zip(&rects) {
            assert!((r.w * r.h - a).abs() < 1e-9, "{a} vs {}", r.w * r.h);
            assert!(r.x >= -1e-9 && r.x + r.w <= 50.0 + 1e-9);
            assert!(r.y >= -1e-9 && r.y + r.h <= 20.0 + 1e-9);
        }
    }
}
