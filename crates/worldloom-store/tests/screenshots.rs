//! Screenshots in the workspace: bytes kept once per hash, given to states
//! with their import or as an undoable change, read back without decoding;
//! a screenshot whose bytes cannot be had leaves its state without one.

use std::path::Path;

use worldloom_core::action::ActionFormat;
use worldloom_core::screenshot::{self, Screenshot};
use worldloom_core::{Action, Domain, ImageType, NodeId, Observation, Representation, Trajectory};
use worldloom_store::{ScreenshotBytes, Workspace};

/// A PNG of `w`×`h` pixels of one colour (the core's fixture encoder).
fn png(w: u32, h: u32) -> Vec<u8> {
    worldloom_core::screenshot::solid_png(w, h, [200, 200, 200])
}

fn shot(dir: &Path, name: &str, bytes: &[u8]) -> Screenshot {
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("write");
    screenshot::probe(&path).expect("probe")
}

/// Three Android states: the first two show the same image, the third a
/// screenshot whose file is gone by the time it is stored.
fn trajectory(dir: &Path) -> Trajectory {
    let obs = || Some(Observation::new(Representation::AndroidXml, "<hierarchy/>"));
    let mut t = Trajectory::new("shots", Domain::Android, obs());
    let (_, a) = t
        .add_step(
            t.root(),
            Action::new("{}", ActionFormat::AndroidJson),
            obs(),
        )
        .expect("step");
    let (_, b) = t
        .add_step(a, Action::new("{}", ActionFormat::AndroidJson), obs())
        .expect("step");
    t.nodes[0].screenshot = Some(shot(dir, "a.png", &png(400, 800)));
    t.nodes[a.0 as usize].screenshot = Some(shot(dir, "same.png", &png(400, 800)));
    let gone = shot(dir, "gone.png", &png(10, 10));
    std::fs::remove_file(dir.join("gone.png")).expect("remove");
    t.nodes[b.0 as usize].screenshot = Some(gone);
    t
}

fn count(ws_path: &Path, table: &str) -> i64 {
    let conn = worldloom_store::rusqlite::Connection::open(ws_path).expect("raw");
    conn.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
        .expect("count")
}

#[test]
fn screenshots_are_kept_once_per_hash_and_read_back_as_imported() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("ws.worldloom");
    let mut ws = Workspace::open(&path).expect("open");
    let t = trajectory(dir.path());
    let key = ws.import_trajectory(&t, None).expect("import");
    let stored = ws.load_trajectory(key).expect("load").trajectory;
    let expected = Screenshot {
        file: None,
        ..t.nodes[0].screenshot.clone().expect("shot")
    };
    assert_eq!(stored.nodes[0].screenshot.as_ref(), Some(&expected));
    assert_eq!(stored.nodes[1].screenshot.as_ref(), Some(&expected));
    // The file went away before the import: no screenshot, the rest stored.
    assert_eq!(stored.nodes[2].screenshot, None);
    assert!(stored.nodes[2].real.is_some());
    assert_eq!(
        ws.node_screenshot(key, NodeId(1)).expect("shot"),
        Some(expected.clone())
    );
    assert_eq!(ws.node_screenshot(key, NodeId(2)).expect("shot"), None);
    assert_eq!(
        ws.screenshot_bytes(&expected.sha256).expect("bytes"),
        Some(ScreenshotBytes {
            media_type: ImageType::Png,
            bytes: png(400, 800)
        })
    );
    assert_eq!(ws.screenshot_bytes("00").expect("none"), None);
    // Imported again (another trajectory): still one copy of the bytes.
    ws.import_trajectory(&t, None).expect("again");
    drop(ws);
    assert_eq!(count(&path, "screenshots"), 1);
    assert_eq!(count(&path, "node_screenshots"), 4);
}

#[test]
fn a_screenshot_set_on_a_state_is_a_change_undo_takes_back() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut ws = Workspace::open(&dir.path().join("ws.worldloom")).expect("open");
    let mut t = trajectory(dir.path());
    for n in &mut t.nodes {
        n.screenshot = None;
    }
    let key = ws.import_trajectory(&t, None).expect("import");
    let new = shot(dir.path(), "new.png", &png(3, 4));
    ws.set_screenshot(key, NodeId(2), &new).expect("set");
    let got = ws
        .node_screenshot(key, NodeId(2))
        .expect("shot")
        .expect("set");
    assert_eq!((got.width_px, got.height_px, got.file), (3, 4, None));
    ws.undo().expect("undo");
    assert_eq!(ws.node_screenshot(key, NodeId(2)).expect("shot"), None);
    ws.redo().expect("redo");
    assert!(ws.node_screenshot(key, NodeId(2)).expect("shot").is_some());
    // Bytes that are not what was probed are refused, naming the file.
    let changed = shot(dir.path(), "changed.png", &png(5, 5));
    std::fs::write(dir.path().join("changed.png"), png(6, 6)).expect("rewrite");
    let err = ws
        .set_screenshot(key, NodeId(1), &changed)
        .expect_err("refused");
    assert!(err.to_string().contains("changed.png"), "{err}");
    assert!(ws.set_screenshot(key, NodeId(9), &new).is_err());
}

#[test]
fn a_version_6_workspace_gains_the_screenshot_tables() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("v6.worldloom");
    let t = trajectory(dir.path());
    drop(Workspace::open_to_version(&path, 6).expect("v6"));
    let conn = worldloom_store::rusqlite::Connection::open(&path).expect("raw");
    let tables: i64 = conn
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE name IN ('screenshots', 'node_screenshots')",
            [],
            |r| r.get(0),
        )
        .expect("tables");
    assert_eq!(tables, 0);
    drop(conn);
    let mut ws = Workspace::open(&path).expect("migrate");
    assert_eq!(
        ws.schema_version().expect("version"),
        worldloom_store::SCHEMA_VERSION
    );
    let key = ws.import_trajectory(&t, None).expect("import");
    assert!(ws.node_screenshot(key, NodeId(0)).expect("shot").is_some());
}
