use super::*;

fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/tests/fixtures/pickle/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn values_of_every_protocol_read_as_python_wrote_them() {
    let expected: serde_json::Value =
        serde_json::from_slice(&fixture("values.json")).expect("values.json");
    for proto in 2..=5 {
        let p = read(&fixture(&format!("values.p{proto}.pkl"))).expect("reads");
        assert_eq!(
            p.to_json(p.root).expect("json"),
            expected,
            "protocol {proto}"
        );
    }
}

#[test]
fn memo_references_share_one_object() {
    let p = read(&fixture("values.p2.pkl")).unwrap();
    let Obj::Dict(kv) = p.get(p.root) else {
        panic!("not a dict")
    };
    let shared = kv
        .iter()
        .find(|(k, _)| p.get(*k) == &Obj::Str("shared".into()))
        .map(|(_, v)| *v)
        .unwrap();
    let Obj::List(items) = p.get(shared) else {
        panic!("not a list")
    };
    assert_eq!(items[0], items[1]);
}

#[test]
fn ordered_dict_is_a_recorded_call_filled_as_a_dict() {
    let p = read(&fixture("ordered.pkl")).unwrap();
    assert_eq!(p.to_json(p.root).unwrap(), serde_json::json!({ "k": 1 }));
}

#[test]
fn unknown_globals_are_refused_by_name() {
    for (file, global) in [
        ("os_system.p2.pkl", "posix.system"),
        ("os_system.p4.pkl", "posix.system"),
        ("builtins_eval.p2.pkl", "builtins.eval"),
        ("builtins_eval.p4.pkl", "builtins.eval"),
    ] {
        let e = read(&fixture(file)).unwrap_err().to_string();
        assert!(
            e.contains(&format!("global {global} is not one")),
            "{file}: {e}"
        );
        assert!(e.contains("nothing is imported or run"), "{e}");
    }
    // The name as an attacker would write it by hand.
    let e = read(b"\x80\x02cos\nsystem\nX\x02\x00\x00\x00ls\x85R.")
        .unwrap_err()
        .to_string();
    assert!(e.contains("global os.system is not one"), "{e}");
    assert!(e.contains("byte 2"), "{e}");
}

#[test]
fn deep_and_cyclic_values_give_errors_not_overflows() {
    let p = read(&fixture("deep.pkl")).expect("the opcodes themselves read");
    let e = p.to_json(p.root).unwrap_err().to_string();
    assert!(e.contains("nested deeper than 128"), "{e}");
    let p = read(&fixture("cyclic.pkl")).unwrap();
    assert!(p.to_json(p.root).is_err());
}

#[test]
fn truncated_pickles_say_where() {
    let whole = fixture("values.p4.pkl");
    for len in 0..whole.len() {
        let e = read(&whole[..len]).unwrap_err().to_string();
        assert!(e.starts_with("pickle opcode at byte"), "{len}: {e}");
    }
}

#[test]
fn lengths_past_the_end_are_refused_before_allocating() {
    let e = read(b"\x80\x04\x8d\xff\xff\xff\xff\xff\xff\xff\x7f")
        .unwrap_err()
        .to_string();
    assert!(e.contains("needs 9223372036854775807 bytes"), "{e}");
}

#[test]
fn text_protocol_opcodes_are_refused() {
    let e = read(b"I1\n.").unwrap_err().to_string();
    assert!(e.contains("opcode 0x49"), "{e}");
}
