//! Names holding characters that are no text: bidi controls (which make a
//! terminal show a name in another order), noncharacters (U+FFFE, U+FFFF,
//! which XML does not allow) and control characters. Text output shows
//! them escaped; every XML the report writes stays well-formed and holds
//! none of them.

use crate::common;
use crate::writer;

use common::*;
use quick_xml::events::Event;

/// Bidi controls, noncharacters and controls, each with the escape text
/// output shows for it.
const HIDDEN: [(char, &str); 16] = [
    ('\u{061c}', "\\u{61c}"),
    ('\u{200e}', "\\u{200e}"),
    ('\u{200f}', "\\u{200f}"),
    ('\u{202a}', "\\u{202a}"),
    ('\u{202b}', "\\u{202b}"),
    ('\u{202c}', "\\u{202c}"),
    ('\u{202d}', "\\u{202d}"),
    ('\u{202e}', "\\u{202e}"),
    ('\u{2066}', "\\u{2066}"),
    ('\u{2067}', "\\u{2067}"),
    ('\u{2068}', "\\u{2068}"),
    ('\u{2069}', "\\u{2069}"),
    ('\u{fdd0}', "\\u{fdd0}"),
    ('\u{fffe}', "\\u{fffe}"),
    ('\u{ffff}', "\\u{ffff}"),
    ('\u{1}', "\\x01"),
];

/// The named-data keys of the test program: one per hidden character, and
/// the classic spoof (`evil<RLO>txt.exe`, which a terminal shows as
/// `evilexe.txt`).
fn keys() -> Vec<String> {
    let mut keys: Vec<String> = HIDDEN
        .iter()
        .enumerate()
        .map(|(i, (c, _))| format!("k{i}{c}end"))
        .collect();
    keys.push("evil\u{202e}txt.exe".to_owned());
    keys
}

/// The test program: the keys as named data, and a method named with a
/// bidi override and a noncharacter.
fn program_bytes() -> Vec<u8> {
    writer::Program {
        named: keys()
            .into_iter()
            .enumerate()
            .map(|(i, k)| (k, vec![i as u8; 64 + i].into()))
            .collect(),
        methods: vec![writer::Method {
            name: "fwd\u{202e}\u{fffe}".to_owned(),
            ..writer::Method::default()
        }],
        ..writer::Program::default()
    }
    .to_bytes()
}

fn program(dir: &std::path::Path) -> String {
    write_file(dir, "hidden.pte", &program_bytes())
        .to_str()
        .unwrap()
        .to_owned()
}

/// Whether `c` may appear in XML 1.0 text (the `Char` production) and is
/// not a bidi control, which would reorder what a browser shows.
fn shown_plainly(c: char) -> bool {
    let u = c as u32;
    let xml_char =
        matches!(u, 0x9 | 0xa | 0xd | 0x20..=0xd7ff | 0xe000..=0xfffd | 0x10000..=0x10ffff);
    xml_char && !HIDDEN.iter().any(|(h, _)| *h == c)
}

/// Asserts `text` shows no hidden character raw.
fn none_raw(what: &str, text: &str) {
    let bad: Vec<char> = text
        .chars()
        .filter(|c| HIDDEN.iter().any(|(h, _)| h == c))
        .collect();
    assert!(bad.is_empty(), "{what} shows {bad:?} raw:\n{text}");
}

/// Asserts `text` shows every key, each hidden character escaped.
fn escaped_in_text(what: &str, text: &str) {
    none_raw(what, text);
    for (_, shown) in HIDDEN {
        assert!(
            text.contains(&format!("{shown}end")),
            "{what} lacks {shown}:\n{text}"
        );
    }
    assert!(text.contains("evil\\u{202e}txt.exe"), "{what}:\n{text}");
}

/// Parses `doc` as XML (tags nested and closed, attributes quoted,
/// references known) and checks every character of its text, attribute
/// values and character references is allowed and shown plainly. Returns
/// the text it holds, references resolved.
fn well_formed(what: &str, doc: &str) -> String {
    for (i, c) in doc.char_indices() {
        assert!(shown_plainly(c), "{what}: {c:?} at byte {i}");
    }
    let mut reader = quick_xml::Reader::from_str(doc);
    reader.config_mut().check_end_names = true;
    let mut text = String::new();
    loop {
        let event = reader.read_event().unwrap_or_else(|e| {
            panic!(
                "{what}: not well-formed at {}: {e}",
                reader.buffer_position()
            )
        });
        match event {
            Event::Start(e) | Event::Empty(e) => {
                for a in e.attributes().with_checks(true) {
                    let a = a.unwrap_or_else(|err| panic!("{what}: attribute: {err}"));
                    let v = a
                        .normalized_value(quick_xml::XmlVersion::Explicit1_0)
                        .unwrap();
                    if let Some(c) = v.chars().find(|c| !shown_plainly(*c)) {
                        panic!("{what}: attribute holds {c:?}");
                    }
                    text.push_str(&v);
                    text.push('\n');
                }
            }
            Event::Text(t) => text.push_str(&t.decode().unwrap()),
            Event::CData(t) => text.push_str(&t.decode().unwrap()),
            Event::GeneralRef(r) => match r.resolve_char_ref().unwrap() {
                Some(c) => {
                    assert!(shown_plainly(c), "{what}: reference to {c:?}");
                    text.push(c);
                }
                None => {
                    let name = r.decode().unwrap();
                    let c = match &*name {
                        "amp" => '&',
                        "lt" => '<',
                        "gt" => '>',
                        "quot" => '"',
                        "apos" => '\'',
                        _ => panic!("{what}: unknown entity &{name};"),
                    };
                    text.push(c);
                }
            },
            Event::Eof => break,
            _ => {}
        }
    }
    text
}

#[test]
fn hidden_characters_are_escaped_in_text_output() {
    let dir = tempfile::tempdir().unwrap();
    let p = program(dir.path());
    escaped_in_text("ls named", &ptefs_stdout(["ls", &p, "named"]));
    escaped_in_text("ls -R", &ptefs_stdout(["ls", "-R", &p]));
    for args in [["ls", "methods"], ["inspect", ""], ["report", ""]] {
        let args: Vec<&str> = [args[0], &p, args[1]]
            .into_iter()
            .filter(|a| !a.is_empty())
            .collect();
        let text = ptefs_stdout(&args);
        none_raw(args[0], &text);
        assert!(text.contains("fwd\\u{202e}\\u{fffe}"), "{text}");
    }
    // JSON keeps each name exact.
    let index = ptefs_json(["cat", &p, "named/index.json"]);
    let got: Vec<&str> = index
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["key"].as_str().unwrap())
        .collect();
    assert_eq!(got, keys());
}

#[test]
fn report_svg_and_html_are_well_formed_xml_with_names_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let p = program(dir.path());
    let svg = ptefs_stdout(["cat", &p, "report/treemap.svg"]);
    let text = well_formed("treemap.svg", &svg);
    // The names are there, written as text output writes them.
    assert!(text.contains("evil\\u{202e}txt.exe"), "{text}");
    assert!(text.contains("k13\\u{fffe}end"), "{text}");
    let page = dir.path().join("report.html");
    ptefs_stdout(["report", &p, "-o", page.to_str().unwrap()]);
    let html = std::fs::read_to_string(&page).unwrap();
    let text = well_formed("report.html", &html);
    assert!(text.contains("evil\\u{202e}txt.exe"), "{text}");
    assert!(text.contains("k14\\u{ffff}end"), "{text}");
}

/// The check itself: a raw U+FFFE, a control character, a bidi control and
/// an unclosed tag are each caught.
#[test]
fn the_well_formedness_check_rejects_what_it_should() {
    for doc in [
        "<a>x\u{fffe}</a>",
        "<a>x\u{1}</a>",
        "<a>&#xffff;</a>",
        "<a t=\"\u{202e}\"/>",
        "<a t=\"&#xfffe;\"/>",
        "<a><meta charset=\"utf-8\"></a>",
        "<a>&nbsp;</a>",
    ] {
        let r = std::panic::catch_unwind(|| well_formed("doc", doc));
        assert!(r.is_err(), "{doc:?} passed");
    }
    assert_eq!(
        well_formed("doc", "<a t=\"&quot;\">x &amp; y</a>"),
        "\"\nx & y"
    );
}

/// The fuzz and mutation seed for these names.
#[test]
fn stored_seed_matches_its_generator() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fuzz-regressions/hidden-characters.pte");
    if std::env::var_os("PTEFS_WRITE_SEEDS").is_some() {
        std::fs::write(&path, program_bytes()).unwrap();
    }
    assert!(
        std::fs::read(&path).unwrap() == program_bytes(),
        "stale seed"
    );
}
