//! Screenshots: importers that see image files give their states a
//! screenshot (size from the header, bytes hashed, never decoded); files
//! that are not images, or too large, are warned about by name and the
//! import goes on; native files carry them in a sidecar folder.

use std::path::Path;

use serde_json::json;
use worldloom_core::screenshot::{self, MAX_SCREENSHOT_BYTES};
use worldloom_core::{
    ImageType, ImportOptions, InputFormat, NodeId, TrajectoryFile, detect_format, import_path,
};

/// A PNG of `w`×`h` pixels of one colour (the core's fixture encoder).
fn png(w: u32, h: u32) -> Vec<u8> {
    worldloom_core::screenshot::solid_png(w, h, [200, 200, 200])
}

/// A JPEG's start, one APP0 segment and a SOF0 frame header for `w`×`h`.
fn jpeg(w: u16, h: u16) -> Vec<u8> {
    let mut b = vec![
        0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x04, 0, 0, 0xFF, 0xC0, 0x00, 0x11, 8,
    ];
    b.extend(h.to_be_bytes());
    b.extend(w.to_be_bytes());
    b.extend([3, 0xFF, 0xD9]);
    b
}

const DUMP: &str = r#"<?xml version="1.0" encoding="UTF-8"?><hierarchy rotation="0"><node bounds="[0,0][400,800]" class="android.widget.FrameLayout" text=""><node bounds="[40,80][200,160]" class="android.widget.Button" text="OK" /></node></hierarchy>"#;

fn android_folder(dir: &Path) {
    std::fs::create_dir_all(dir).expect("dir");
    for i in 0..3 {
        std::fs::write(dir.join(format!("step_0{i}.xml")), DUMP).expect("xml");
    }
    std::fs::write(
        dir.join("actions.jsonl"),
        "{\"step\": 0, \"action\": {\"action_type\": \"click\", \"x\": 120, \"y\": 120}}\n{\"step\": 1, \"action\": {\"action_type\": \"navigate_back\"}}\n{\"step\": 2, \"action\": null}\n",
    )
    .expect("actions");
    std::fs::write(dir.join("step_00.png"), png(400, 800)).expect("png");
    std::fs::write(dir.join("step_01.jpg"), jpeg(200, 400)).expect("jpg");
    // Not an image: the state keeps no screenshot, the import goes on.
    std::fs::write(dir.join("step_02.png"), "<html>not a picture</html>").expect("bad");
}

#[test]
fn android_folder_screenshots_fill_their_states_and_a_bad_one_is_named() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path().join("run");
    android_folder(&dir);
    assert_eq!(
        detect_format(&dir).expect("detects"),
        InputFormat::AndroidDumps
    );
    let imported = import_path(&dir, &ImportOptions::default()).expect("imports");
    let t = &imported.trajectories[0];
    let shot = |n: u32| t.node(NodeId(n)).expect("node").screenshot.clone();
    let first = shot(0).expect("step 0 screenshot");
    let bytes = png(400, 800);
    assert_eq!(
        (
            first.media_type,
            first.width_px,
            first.height_px,
            first.byte_length
        ),
        (ImageType::Png, 400, 800, bytes.len() as u64)
    );
    assert_eq!(first.sha256, screenshot::sha256_hex(&bytes));
    assert_eq!(
        first.file.as_deref(),
        Some(dir.join("step_00.png").display().to_string().as_str())
    );
    let second = shot(1).expect("step 1 screenshot");
    assert_eq!(
        (second.media_type, second.width_px, second.height_px),
        (ImageType::Jpeg, 200, 400)
    );
    assert_eq!(shot(2), None);
    let messages: Vec<String> = imported.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(messages.len(), 1, "{messages:?}");
    let bad = dir.join("step_02.png").display().to_string();
    assert!(
        messages[0].starts_with(&bad) && messages[0].contains("not a PNG or JPEG image"),
        "{messages:?}"
    );
}

#[test]
fn osworld_folder_screenshot_and_an_oversized_file_is_refused_by_name() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path().join("os");
    std::fs::create_dir_all(&dir).expect("dir");
    for i in 0..2 {
        std::fs::write(
            dir.join(format!("step_0{i}.xml")),
            "<desktop-frame><application name=\"gedit\" /></desktop-frame>",
        )
        .expect("xml");
    }
    std::fs::write(
        dir.join("actions.jsonl"),
        "{\"step\": 0, \"action\": \"pyautogui.click(10, 10)\"}\n",
    )
    .expect("a");
    std::fs::write(dir.join("step_00.png"), png(1920, 1080)).expect("png");
    // A file over the limit (sparse: nothing is written) is refused before
    // anything of it is read.
    let big = std::fs::File::create(dir.join("step_01.png")).expect("big");
    big.set_len(MAX_SCREENSHOT_BYTES + 1).expect("len");
    let imported = import_path(&dir, &ImportOptions::default()).expect("imports");
    let t = &imported.trajectories[0];
    assert_eq!(t.source.format, "osworld");
    let root = t.nodes[0].screenshot.as_ref().expect("root screenshot");
    assert_eq!((root.width_px, root.height_px), (1920, 1080));
    assert_eq!(t.nodes[1].screenshot, None);
    assert_eq!(imported.warnings.len(), 1, "{:?}", imported.warnings);
    let w = imported.warnings[0].to_string();
    assert!(
        w.contains("step_01.png") && w.contains("over the screenshot limit of 16777216 bytes"),
        "{w}"
    );
}

#[test]
fn agentlab_step_json_names_its_screenshot_beside_it() {
    let tmp = tempfile::tempdir().expect("tmp");
    let path = tmp.path().join("steps.json");
    std::fs::write(tmp.path().join("screenshot_step_0.png"), png(1280, 720)).expect("png");
    let steps = json!([
        {"axtree_txt": "RootWebArea 'A'", "action": "click('1')",
         "screenshot_path": "/home/someone/results/screenshot_step_0.png"},
        {"axtree_txt": "RootWebArea 'B'", "action": null, "screenshot_path": "screenshot_step_1.png"}
    ]);
    std::fs::write(&path, steps.to_string()).expect("json");
    let imported = import_path(&path, &ImportOptions::default()).expect("imports");
    let t = &imported.trajectories[0];
    // Recorded on another machine: found by its name beside the file.
    let shot = t.nodes[0].screenshot.as_ref().expect("screenshot");
    assert_eq!((shot.width_px, shot.height_px), (1280, 720));
    // Named but absent: no screenshot, and no warning per step.
    assert_eq!(t.nodes[1].screenshot, None);
    assert!(imported.warnings.is_empty(), "{:?}", imported.warnings);
}

#[test]
fn native_files_carry_screenshots_in_a_sidecar_folder_and_read_them_back() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path().join("run");
    android_folder(&dir);
    let mut trajectories = import_path(&dir, &ImportOptions::default())
        .expect("imports")
        .trajectories;
    let out = tmp.path().join("out").join("run.worldloom.json");
    std::fs::create_dir_all(out.parent().expect("parent")).expect("out dir");
    worldloom_core::native::write_screenshots(&out, &mut trajectories, screenshot::bytes_of)
        .expect("sidecar");
    TrajectoryFile::new(trajectories.clone())
        .write(&out)
        .expect("native");
    let sha = screenshot::sha256_hex(&png(400, 800));
    let sidecar = tmp.path().join("out").join("run.worldloom.screenshots");
    assert_eq!(
        std::fs::read(sidecar.join(format!("{sha}.png"))).expect("copied"),
        png(400, 800)
    );
    assert_eq!(
        trajectories[0].nodes[0]
            .screenshot
            .as_ref()
            .and_then(|s| s.file.as_deref()),
        Some(format!("run.worldloom.screenshots/{sha}.png").as_str())
    );
    // Read back: the same screenshots, their files in the sidecar folder.
    let back = import_path(&out, &ImportOptions::default()).expect("reads");
    assert!(back.warnings.is_empty(), "{:?}", back.warnings);
    for (a, b) in trajectories[0]
        .nodes
        .iter()
        .zip(&back.trajectories[0].nodes)
    {
        let strip = |s: &Option<screenshot::Screenshot>| {
            s.clone().map(|mut s| {
                s.file = None;
                s
            })
        };
        assert_eq!(strip(&a.screenshot), strip(&b.screenshot), "state {}", a.id);
    }
    assert_eq!(
        back.trajectories[0].nodes[1]
            .screenshot
            .as_ref()
            .map(|s| s.media_type),
        Some(ImageType::Jpeg)
    );
}

#[test]
fn a_native_file_cannot_point_a_screenshot_outside_its_folder() {
    let tmp = tempfile::tempdir().expect("tmp");
    std::fs::write(tmp.path().join("outside.png"), png(2, 2)).expect("png");
    let inner = tmp.path().join("inner");
    std::fs::create_dir_all(&inner).expect("dir");
    std::fs::write(inner.join("mine.png"), png(3, 5)).expect("png");
    let outside = tmp.path().join("outside.png").display().to_string();
    let file = json!({"format": "worldloom-trajectory", "version": 1, "trajectories": [{
        "id": "t", "domain": "android", "source": {"format": "native"},
        "nodes": [
            {"id": 0, "screenshot": {"file": "../outside.png"}},
            {"id": 1, "parent_edge": 0, "screenshot": {"file": outside}},
            {"id": 2, "parent_edge": 1, "screenshot": {"file": "mine.png"}}
        ],
        "edges": [
            {"id": 0, "from": 0, "to": 1, "action": {"raw": "a", "format": "text"}},
            {"id": 1, "from": 1, "to": 2, "action": {"raw": "b", "format": "text"}}
        ]
    }]});
    let path = inner.join("t.json");
    std::fs::write(&path, file.to_string()).expect("write");
    let imported = import_path(&path, &ImportOptions::default()).expect("imports");
    let t = &imported.trajectories[0];
    assert_eq!(t.nodes[0].screenshot, None);
    assert_eq!(t.nodes[1].screenshot, None);
    // A hand-written reference with only `file`: the rest read from it.
    let shot = t.nodes[2].screenshot.as_ref().expect("kept");
    assert_eq!(
        (shot.width_px, shot.height_px, shot.sha256.len()),
        (3, 5, 64)
    );
    let w: Vec<String> = imported.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(w.len(), 2, "{w:?}");
    assert!(
        w[0].contains("`../outside.png` is not a path inside the file's folder"),
        "{w:?}"
    );
    assert!(
        w[1].contains("is not a path inside the file's folder"),
        "{w:?}"
    );
}
