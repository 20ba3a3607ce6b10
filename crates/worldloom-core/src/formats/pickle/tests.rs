//! Tests of the restricted unpickler.

use super::*;

fn json_of(data: &[u8]) -> Value {
    let p = load(data, &Limits::default()).expect("loads");
    p.to_json(p.root()).expect("json")
}

#[test]
fn protocol_2_values_and_a_shared_list() {
    // pickle.dumps({"a": [1, 2], "b": None}, protocol=2) with the list
    // referenced twice: {"a": l, "b": l}, l = [1, 2].
    let data =
        b"\x80\x02}q\x00(X\x01\x00\x00\x00aq\x01]q\x02(K\x01K\x02eX\x01\x00\x00\x00bq\x03h\x02u.";
    assert_eq!(json_of(data), serde_json::json!({"a": [1, 2], "b": [1, 2]}));
}

#[test]
fn errors_name_offset_and_opcode() {
    let err = load(b"\x80\x04\xff", &Limits::default()).expect_err("bad");
    assert_eq!((err.offset, err.opcode), (Some(2), Some(0xff)));
    assert!(
        err.to_string()
            .starts_with("byte 2, opcode unknown (0xff): not a pickle opcode"),
        "{err}"
    );
    let err = load(b"\x80\x04X\xff\x00\x00\x00ab", &Limits::default()).expect_err("cut");
    assert_eq!(
        err.to_string(),
        "byte 2, opcode BINUNICODE (0x58): a length of 255 bytes runs past the end (2 left)"
    );
    let err = load(b"\x80\x04N", &Limits::default()).expect_err("no stop");
    assert!(err.message.contains("without a STOP"), "{err}");
    let err = load(b"\x80\x04Q.", &Limits::default()).expect_err("persid");
    assert!(err.message.contains("persistent id"), "{err}");
}

#[test]
fn memo_stack_and_output_caps_hold() {
    let small = Limits {
        max_stack: 4,
        ..Limits::default()
    };
    let err = load(b"NNNNNN.", &small).expect_err("stack");
    assert!(err.message.contains("stack grows past 4"), "{err}");
    let small = Limits {
        max_memo: 2,
        ..Limits::default()
    };
    let err = load(b"N\x94\x94\x94.", &small).expect_err("memo");
    assert!(err.message.contains("memo grows past 2"), "{err}");
    // A list that holds itself: l = [l].
    let p = load(b"]\x94h\x00a.", &Limits::default()).expect("loads");
    let j = p.to_json(p.root()).expect("json");
    assert_eq!(j, serde_json::json!([{"__recursive__": true}]));
    // 20 levels of [x, x] doubling: 2^20 leaves, past a small cap.
    let mut data = b"N".to_vec();
    for _ in 0..20 {
        data.extend_from_slice(b"2\x86");
    }
    data.push(b'.');
    let tight = Limits {
        max_output: 100_000,
        ..Limits::default()
    };
    let p = load(&data, &tight).expect("loads");
    let err = p.to_json(p.root()).expect_err("budget");
    assert!(err.message.contains("larger than 100000"), "{err}");
}
