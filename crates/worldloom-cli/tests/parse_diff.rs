//! `worldloom parse` and `worldloom diff` on the committed samples.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn airplane(step: u32) -> PathBuf {
    repo().join(format!(
        "samples/android/settings_airplane-mode_trajectory/step_{step:02}.xml"
    ))
}

fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_worldloom"))
        .args(args)
        .output()
        .expect("run worldloom");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn diff_json(real: &Path, pred: &Path, prev: Option<&Path>, repr: &str) -> Value {
    let mut args = vec![
        "diff",
        "--real",
        real.to_str().expect("path"),
        "--pred",
        pred.to_str().expect("path"),
    ];
    if let Some(p) = prev {
        args.extend(["--prev", p.to_str().expect("path")]);
    }
    args.extend(["--representation", repr, "--json"]);
    let (code, out, err) = run(&args);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).expect("json")
}

/// The text inside the last `<predicted_observation>` of a sidecar line.
fn prediction(sidecar: &Path, step: u64) -> String {
    let text = std::fs::read_to_string(sidecar).expect("sidecar");
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).expect("line");
        if v["step"].as_u64() == Some(step) {
            let out = v["output"].as_str().expect("output");
            let start = out.rfind("<predicted_observation>").expect("open")
                + "<predicted_observation>".len();
            let end = out.rfind("</predicted_observation>").expect("close");
            return out[start..end].trim().to_string();
        }
    }
    panic!("no prediction for step {step}");
}

#[test]
fn parse_counts_nodes_and_prints_json() {
    let path = airplane(2);
    let text = std::fs::read_to_string(&path).expect("sample");
    let elements = text.matches("<node ").count() + 1; // + <hierarchy>
    let (code, out, err) = run(&[
        "parse",
        path.to_str().expect("path"),
        "--representation",
        "android-xml",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v["node_count"].as_u64(), Some(elements as u64));
    assert_eq!(v["tree"]["nodes"].as_array().map(Vec::len), Some(elements));
    assert_eq!(v["warnings"].as_array().map(Vec::len), Some(0));
    let (code, out, _) = run(&["parse", path.to_str().expect("path"), "-r", "android-xml"]);
    assert_eq!(code, 0);
    assert!(
        out.starts_with(&format!("{}: {elements} nodes", path.display())),
        "{out}"
    );
}

#[test]
fn parse_errors_name_file_line_and_column() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("bad.xml");
    std::fs::write(&bad, "<hierarchy>\n  <node text=\"x\">\n</hierarchy>\n").expect("write");
    let (code, _, err) = run(&["parse", bad.to_str().expect("path"), "-r", "android-xml"]);
    assert_ne!(code, 0);
    assert!(
        err.contains("bad.xml") && err.contains("line 3, column 1"),
        "{err}"
    );
    let failed = dir.path().join("failed.xml");
    std::fs::write(&failed, "ERROR: could not get idle state.\n").expect("write");
    let (code, _, err) = run(&["parse", failed.to_str().expect("path"), "-r", "android-xml"]);
    assert_ne!(code, 0);
    assert!(err.contains("failed capture"), "{err}");
    let (code, _, err) = run(&["parse", "no-such-file.xml", "-r", "html"]);
    assert_ne!(code, 0);
    assert!(err.contains("no-such-file.xml"), "{err}");
}

#[test]
fn diff_on_android_sample_gives_hand_checked_numbers() {
    // Step 1 → 2 turns Airplane mode on. Changes prev → real (11 items):
    // status-bar Wi-Fi icon becomes the plane icon (name, key, resource-id,
    // content-desc), the mobile icon goes (1), the Internet and Calls & SMS
    // summaries change (name + text attribute, 2 each), the switch turns on
    // (checked state + attribute, 2).
    let (prev, real) = (airplane(1), airplane(2));

    // Stale copy of the previous state: transition F1 0.
    let v = diff_json(&real, &prev, Some(&prev), "android-xml");
    assert_eq!(v["status"], "scored");
    assert_eq!(v["exact"], false);
    assert_eq!(v["transition_f1"], 0.0);
    assert_eq!(v["transition"]["real_changes"], 11);
    assert_eq!(v["transition"]["pred_changes"], 0);

    // Exactly right.
    let v = diff_json(&real, &real, Some(&prev), "android-xml");
    assert_eq!(v["exact"], true);
    assert_eq!(v["node_f1"], 1.0);
    assert_eq!(v["text_f1"], 1.0);
    assert_eq!(v["transition_f1"], 1.0);

    // The sample's near miss: everything but the switch. 9 of 11 changes:
    // transition F1 = 2·9 / (11 + 9) = 0.9.
    let dir = tempfile::tempdir().expect("tempdir");
    let pred = dir.path().join("pred.xml");
    let sidecar =
        repo().join("samples/android/settings_airplane-mode_trajectory/predictions.jsonl");
    std::fs::write(&pred, prediction(&sidecar, 2)).expect("write");
    let v = diff_json(&real, &pred, Some(&prev), "android-xml");
    assert_eq!(v["exact"], false);
    assert_eq!(v["node_f1"], 1.0);
    assert_eq!(v["text_f1"], 1.0);
    assert_eq!(v["transition"]["pred_changes"], 9);
    assert_eq!(v["transition"]["matched_changes"], 9);
    assert!((v["transition_f1"].as_f64().expect("f1") - 0.9).abs() < 1e-12);
    let checked = v["attributes"]
        .as_array()
        .expect("tallies")
        .iter()
        .find(|t| t["attribute"] == "checked")
        .expect("checked")
        .clone();
    assert_eq!(
        checked["compared"].as_u64().expect("n") - checked["correct"].as_u64().expect("n"),
        1
    );
    let summary = &v["nodes"]["summary"];
    assert_eq!(
        (
            summary["changed"].as_u64(),
            summary["added"].as_u64(),
            summary["removed"].as_u64()
        ),
        (Some(1), Some(0), Some(0))
    );
    let changed: Vec<&Value> = v["nodes"]["real"]
        .as_array()
        .expect("real")
        .iter()
        .filter(|s| s["status"] == "changed")
        .collect();
    assert_eq!(changed[0]["changes"][0]["field"], "state:checked");
    assert_eq!(changed[0]["changes"][0]["real"], "true");
    assert_eq!(changed[0]["changes"][0]["pred"], "false");
    let anchor = v["anchors"]
        .as_array()
        .expect("anchors")
        .iter()
        .find(|a| a["anchor"] == "checked_selected")
        .expect("anchor")
        .clone();
    assert_eq!(anchor["status"], "mismatched");

    // Step 2 → 3 is a no-op (scroll on a list that fits): predicting the
    // unchanged screen scores transition F1 1.
    let v = diff_json(
        &airplane(3),
        &airplane(2),
        Some(&airplane(2)),
        "android-xml",
    );
    assert_eq!(v["exact"], true);
    assert_eq!(v["transition_f1"], 1.0);
}

#[test]
fn diff_text_output_lists_metrics() {
    let (code, out, err) = run(&[
        "diff",
        "--real",
        airplane(2).to_str().expect("path"),
        "--pred",
        airplane(1).to_str().expect("path"),
        "--prev",
        airplane(1).to_str().expect("path"),
        "-r",
        "android-xml",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("exact: false"));
    assert!(out.contains("transition_f1: 0.0000"));
    assert!(out.contains("anchor package: Matched"));
}

#[test]
fn diff_on_web_sample_axtree() {
    let path = repo().join("samples/web/agentlab_quillpost-profile-settings_6steps.json");
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("sample")).expect("json");
    let steps = v["steps"].as_array().expect("steps");
    let dir = tempfile::tempdir().expect("tempdir");
    let write = |name: &str, i: usize| {
        let p = dir.path().join(name);
        std::fs::write(&p, steps[i]["axtree_txt"].as_str().expect("axtree")).expect("write");
        p
    };
    // Every step against itself is exact; a stale copy after a real change
    // scores transition F1 0.
    for i in 1..steps.len() {
        let prev = write("prev.txt", i - 1);
        let real = write("real.txt", i);
        let same = diff_json(&real, &real, Some(&prev), "axtree");
        assert_eq!(same["exact"], true);
        assert_eq!(same["transition_f1"], 1.0);
        let stale = diff_json(&real, &prev, Some(&prev), "axtree");
        let changed = steps[i]["axtree_txt"] != steps[i - 1]["axtree_txt"];
        assert_eq!(
            stale["transition_f1"],
            if changed { 0.0 } else { 1.0 },
            "step {i}"
        );
    }
}

#[test]
fn diff_on_os_sample_counts_a_wrong_window_title_once() {
    // Thunar step 0 → 1 opens Documents. The sample's prediction gets the
    // new folder right but titles the window "user - Thunar" instead of
    // "Documents - Thunar". OS trees have no path keys, so the frame is one
    // changed node and its 51 descendants still align: node F1 = 51/52.
    let dir = repo().join("samples/os/thunar_rename_trajectory");
    let tmp = tempfile::tempdir().expect("tempdir");
    let pred = tmp.path().join("pred.xml");
    std::fs::write(&pred, prediction(&dir.join("predictions.jsonl"), 1)).expect("write");
    let v = diff_json(
        &dir.join("step_01.xml"),
        &pred,
        Some(&dir.join("step_00.xml")),
        "os-xml",
    );
    assert_eq!(v["status"], "scored");
    assert_eq!(v["nodes"]["summary"]["changed"], 1);
    assert_eq!(v["nodes"]["summary"]["unchanged"], 51);
    assert_eq!(v["nodes"]["summary"]["added"], 0);
    assert_eq!(v["nodes"]["summary"]["removed"], 0);
    assert!((v["node_f1"].as_f64().expect("f1") - 51.0 / 52.0).abs() < 1e-12);
    // 27 real change items; the prediction has all but the title's two
    // (name + name attribute): 2·25 / (27 + 25).
    assert_eq!(v["transition"]["real_changes"], 27);
    assert_eq!(v["transition"]["pred_changes"], 25);
    assert_eq!(v["transition"]["matched_changes"], 25);
    assert!((v["transition_f1"].as_f64().expect("f1") - 50.0 / 52.0).abs() < 1e-12);
}
