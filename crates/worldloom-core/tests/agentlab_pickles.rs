//! AgentLab result folders (`step_N.pkl.gz` pickles) read by the restricted
//! unpickler: observations load, unknown classes become inert records, and
//! bad or hostile pickles give errors naming the file without running
//! anything. The fixtures are written by
//! `tests/fixtures/agentlab/make_fixtures.py` (see the ignored test below).

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use worldloom_core::formats::pickle;
use worldloom_core::{
    ImportOptions, InputFormat, NodeId, Representation, StepErrorKind, detect_format, import_path,
};

/// The file the hostile pickle's command would create.
const MARKER: &str = "/tmp/worldloom-hostile-pickle-ran";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/agentlab")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read dir") {
        let p = e.expect("entry").path();
        std::fs::copy(&p, to.join(p.file_name().expect("name"))).expect("copy");
    }
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(bytes).expect("gzip");
    enc.finish().expect("gzip")
}

fn screenshot_record() -> Value {
    json!({
        "__class__": "numpy.ndarray (class not available)",
        "args": [[0], {"__bytes__": 1}],
        "state": [1, [4, 4, 3], {
            "__class__": "numpy.dtype (class not available)",
            "args": ["u1", false, true],
            "state": [3, "|", null, null, null, -1, -1, 0]
        }, false, {"__bytes__": 48}]
    })
}

/// Everything the `exp_blue-mug` fixture must import as.
fn check_blue_mug(dir: &Path) {
    assert_eq!(detect_format(dir).expect("detects"), InputFormat::Agentlab);
    let imported = import_path(dir, &ImportOptions::default()).expect("imports");
    assert!(imported.warnings.is_empty(), "{:?}", imported.warnings);
    assert_eq!(imported.trajectories.len(), 1);
    let t = &imported.trajectories[0];
    assert_eq!(t.id, "exp_blue-mug");
    assert_eq!(t.source.format, "agentlab");
    assert_eq!(t.source.path.as_deref(), Some("exp_blue-mug"));
    assert_eq!(t.goal.as_deref(), Some("Add the blue mug to the cart"));
    let main = t.main_path();
    assert_eq!(main.nodes.len(), 3);
    let actions: Vec<&str> = main
        .edges
        .iter()
        .map(|e| t.edges[e.0 as usize].action.raw.as_str())
        .collect();
    assert_eq!(actions, vec!["click('21')", "click('12')"]);
    assert_eq!(
        t.edges[0].extra.get("think"),
        Some(&json!("The blue mug has an Add button."))
    );

    let obs = |n: u32| {
        t.node(NodeId(n))
            .and_then(|n| n.real.as_ref())
            .expect("observation")
    };
    let first = obs(0);
    assert_eq!(first.representation, Representation::Axtree);
    assert_eq!(
        first.text,
        "RootWebArea 'Mugs', focused\n\t[12] link 'Cart'\n\t[21] button 'Add blue mug'"
    );
    assert_eq!(
        first.view(Representation::Html),
        Some("<body><a bid=\"12\">Cart</a><button bid=\"21\">Add blue mug</button></body>")
    );
    assert_eq!(
        first.metadata.url.as_deref(),
        Some("http://shop.example/mugs")
    );
    assert_eq!(first.metadata.title.as_deref(), Some("Mugs"));
    assert_eq!(first.metadata.focused_bid.as_deref(), Some("21"));
    assert_eq!(
        first.metadata.extra.get("open_pages_urls"),
        Some(&json!(["http://shop.example/mugs"]))
    );
    assert!(first.error.is_none());
    let last = obs(2);
    assert_eq!(
        last.metadata.url.as_deref(),
        Some("http://shop.example/cart")
    );
    assert_eq!(last.metadata.title.as_deref(), Some("Cart"));
    let error = last.error.as_ref().expect("error");
    assert_eq!(
        (error.kind, error.message.as_str()),
        (StepErrorKind::Action, "TimeoutError: click took too long")
    );

    let extra = |n: u32| &t.node(NodeId(n)).expect("node").extra;
    for n in 0..3 {
        // Screenshots: their files' names, and NumPy arrays as inert records
        // (the same from protocols 4, 2 and 5), never decoded.
        assert_eq!(
            extra(n).get("screenshot_path"),
            Some(&json!(format!("screenshot_step_{n}.png")))
        );
        assert_eq!(
            extra(n).get("screenshot"),
            Some(&screenshot_record()),
            "step {n}"
        );
        // The file itself becomes the state's screenshot: a 1×1 PNG, its
        // size from the header, its bytes hashed, the file named.
        let shot = t
            .node(NodeId(n))
            .and_then(|node| node.screenshot.as_ref())
            .expect("screenshot");
        let file = dir.join(format!("screenshot_step_{n}.png"));
        let bytes = std::fs::read(&file).expect("png");
        assert_eq!(
            (shot.media_type, shot.width_px, shot.height_px),
            (worldloom_core::ImageType::Png, 1, 1)
        );
        assert_eq!(shot.byte_length, bytes.len() as u64);
        assert_eq!(shot.sha256, worldloom_core::screenshot::sha256_hex(&bytes));
        assert_eq!(
            shot.file.as_deref(),
            Some(file.display().to_string().as_str())
        );
        assert!(!extra(n).contains_key("dom_object"));
        assert!(!extra(n).contains_key("axtree_object"));
    }
    assert_eq!(extra(2).get("reward"), Some(&json!(1.0)));
    assert_eq!(extra(2).get("terminated"), Some(&json!(true)));
    // A class from a module that exists nowhere: an inert record.
    assert_eq!(
        extra(1).get("task_info"),
        Some(&json!({"note": {
            "__class__": "worldloom_fixture_module_that_does_not_exist.rewards.RewardNote (class not available)",
            "state": {"kind": "partial", "value": 0.5}
        }}))
    );
    // A `__reduce__` calling os.system: a record holding the command.
    assert_eq!(
        extra(2).get("task_info"),
        Some(&json!({"check": {
            "__class__": "posix.system (class not available)",
            "args": [format!("touch {MARKER}")]
        }}))
    );

    let exp_args = &t.extra["exp_args"];
    assert_eq!(
        exp_args["__class__"],
        json!("agentlab.experiments.loop.ExpArgs (class not available)")
    );
    assert_eq!(
        exp_args["state"]["env_args"],
        json!({
            "__class__": "agentlab.experiments.loop.EnvArgs (class not available)",
            "state": {"task_name": "shop.blue-mug", "task_seed": 7, "max_steps": 10}
        })
    );
    assert_eq!(t.extra["summary_info"]["cum_reward"], json!(1.0));
}

#[test]
fn an_agentlab_result_folder_imports_with_inert_records() {
    let _ = std::fs::remove_file(MARKER);
    check_blue_mug(&fixtures().join("exp_blue-mug"));
    assert!(
        !Path::new(MARKER).exists(),
        "the hostile pickle's command ran"
    );
    // Given by hand, `--format agentlab` reads the folder too.
    let forced = ImportOptions {
        format: InputFormat::Agentlab,
        ..ImportOptions::default()
    };
    let t = import_path(&fixtures().join("exp_blue-mug"), &forced).expect("imports");
    assert_eq!(t.trajectories[0].nodes.len(), 3);
}

#[test]
fn a_hostile_pickle_is_an_inert_record_and_its_command_never_runs() {
    let _ = std::fs::remove_file(MARKER);
    let dir = fixtures().join("exp_hostile");
    let err = import_path(&dir, &ImportOptions::default()).expect_err("not a step");
    let msg = err.to_string();
    assert!(
        msg.contains("exp_hostile/step_0.pkl.gz")
            && msg.contains("not an AgentLab step")
            && msg.contains("posix.system (class not available)"),
        "{msg}"
    );
    let file = std::fs::File::open(dir.join("step_0.pkl.gz")).expect("open");
    let p = pickle::load_reader(file, &pickle::Limits::default()).expect("reads");
    assert_eq!(
        p.to_json(p.root()).expect("json"),
        json!({"__class__": "posix.system (class not available)",
               "args": [format!("touch {MARKER}")]})
    );
    assert!(
        !Path::new(MARKER).exists(),
        "the hostile pickle's command ran"
    );
}

#[test]
fn bad_pickles_give_errors_naming_file_offset_and_opcode() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path().join("exp");
    copy_dir(&fixtures().join("exp_blue-mug"), &dir);
    let step1 = dir.join("step_1.pkl.gz");
    let good = std::fs::read(&step1).expect("read");
    let err_of = |bytes: &[u8]| {
        std::fs::write(&step1, bytes).expect("write");
        import_path(&dir, &ImportOptions::default())
            .expect_err("bad pickle")
            .to_string()
    };

    // A gzip stream cut in half.
    let msg = err_of(&good[..good.len() / 2]);
    assert!(
        msg.starts_with(&format!("{}: not a readable pickle: ", step1.display()))
            && msg.contains("the gzip stream does not decompress"),
        "{msg}"
    );
    // An opcode that does not exist.
    let msg = err_of(&gzip(b"\x80\x04\xff."));
    assert_eq!(
        msg,
        format!(
            "{}: not a readable pickle: byte 2, opcode unknown (0xff): not a pickle opcode (a corrupt or non-pickle file?)",
            step1.display()
        )
    );
    // A pickle cut short inside a string.
    let msg = err_of(&gzip(b"\x80\x04\x8c\x10abc"));
    assert!(
        msg.contains("byte 2, opcode SHORT_BINUNICODE (0x8c): a length of 16 bytes runs past the end (3 left)"),
        "{msg}"
    );
    // A pickle that ends without STOP.
    let msg = err_of(&gzip(b"\x80\x04N"));
    assert!(
        msg.contains("byte 3: the pickle ends without a STOP opcode"),
        "{msg}"
    );
    // Not gzip, not a pickle.
    let msg = err_of(b"hello");
    assert!(
        msg.contains("byte 0, opcode BINGET (0x68): memo entry 101 was never stored"),
        "{msg}"
    );
    // A step whose observation text is not a string names the field.
    let msg = err_of(&gzip(
        b"\x80\x04}\x94(\x8c\x03obs\x94}\x94\x8c\x03url\x94K\x07s\x8c\x06action\x94Nu.",
    ));
    assert!(
        msg.contains("step_1.pkl.gz: field `obs.url`: expected a string, found 7"),
        "{msg}"
    );
    std::fs::write(&step1, &good).expect("restore");
    assert!(import_path(&dir, &ImportOptions::default()).is_ok());
}

#[test]
fn decompression_and_memo_stay_within_their_caps() {
    // 1 MiB of zeros gzips to about 1 KiB; the reader stops at its cap.
    let bomb = gzip(&vec![0u8; 1 << 20]);
    let limits = pickle::Limits {
        max_bytes: 64 << 10,
        ..pickle::Limits::default()
    };
    let err = pickle::load_reader(bomb.as_slice(), &limits).expect_err("too big");
    assert_eq!(
        err.to_string(),
        "the pickle is larger than 65536 bytes once decompressed, the most this reader holds"
    );
    // A memo flooded past its cap.
    let mut data = b"\x80\x04N".to_vec();
    data.extend(std::iter::repeat_n(0x94u8, 20));
    data.push(b'.');
    let limits = pickle::Limits {
        max_memo: 16,
        ..pickle::Limits::default()
    };
    let err = pickle::load(&data, &limits).expect_err("memo");
    assert_eq!(
        err.to_string(),
        "byte 19, opcode MEMOIZE (0x94): the memo grows past 16 entries, the most this reader holds"
    );
}

/// Regenerates the fixtures with Python's `pickle` into a temporary folder
/// and checks them as the committed ones. Needs `python3`; run with
/// `cargo test -p worldloom-core --test agentlab_pickles -- --ignored`.
/// To refresh the committed fixtures, run `python3 make_fixtures.py` in
/// `tests/fixtures/agentlab`.
#[test]
#[ignore = "needs python3"]
fn regenerated_fixtures_import_the_same() {
    let _ = std::fs::remove_file(MARKER);
    let tmp = tempfile::tempdir().expect("tmp");
    let status = std::process::Command::new("python3")
        .arg(fixtures().join("make_fixtures.py"))
        .arg(tmp.path())
        .status()
        .expect("python3 runs");
    assert!(status.success());
    check_blue_mug(&tmp.path().join("exp_blue-mug"));
    assert!(import_path(&tmp.path().join("exp_hostile"), &ImportOptions::default()).is_err());
    assert!(
        !Path::new(MARKER).exists(),
        "the hostile pickle's command ran"
    );
}
