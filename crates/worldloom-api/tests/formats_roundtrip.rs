//! Trajectory formats through the workspace: each imported with the
//! studio's `import_files`, read back turn by turn with `get_turn`, and
//! exported (native and AgentWorldBench) with `export`; the native export
//! reads back to the same turns.

#[allow(dead_code)] // the shared helpers this file does not call
mod common;

use std::path::Path;

use serde_json::{Value, json};
use worldloom_api::{Studio, dispatch};
use worldloom_core::{ImportOptions, TrajectoryFile, import_path};

fn call(studio: &Studio, command: &str, request: Value) -> Value {
    dispatch(studio, command, request).unwrap_or_else(|e| panic!("{command}: {e:?}"))
}

/// Imports `path` (one trajectory) into `studio`; its workspace id.
fn import_one(studio: &Studio, path: &Path) -> String {
    let resp = call(
        studio,
        "import_files",
        json!({"paths": [path.display().to_string()]}),
    );
    assert_eq!(resp["failed"], json!([]), "{resp}");
    let imported = resp["imported"].as_array().expect("imported");
    assert_eq!(imported.len(), 1, "{resp}");
    imported[0]["trajectory_id"]
        .as_str()
        .expect("id")
        .to_owned()
}

fn turn(studio: &Studio, id: &str, node: u32) -> Value {
    call(
        studio,
        "get_turn",
        json!({"trajectory_id": id, "node_id": node}),
    )
}

/// Exports `id` as native and as AgentWorldBench rows; the native file's
/// actions and observations, read back by core, are those of `original`.
fn round_trip(studio: &Studio, id: &str, original: &Path, dir: &Path) {
    let native = call(
        studio,
        "export",
        json!({"trajectory_id": id, "format": "native"}),
    );
    let file = dir.join("exported.json");
    std::fs::write(&file, native["content"].as_str().expect("content")).expect("write");
    let back = TrajectoryFile::from_json_str(&file, native["content"].as_str().expect("text"))
        .expect("native reads back");
    let direct = import_path(original, &ImportOptions::default()).expect("imports");
    let (a, b) = (&back.trajectories[0], &direct.trajectories[0]);
    assert_eq!(a.edges.len(), b.edges.len());
    for (x, y) in a.edges.iter().zip(&b.edges) {
        assert_eq!(x.action, y.action);
        assert_eq!(x.extra, y.extra);
    }
    for (x, y) in a.nodes.iter().zip(&b.nodes) {
        assert_eq!(
            x.real.as_ref().map(|o| &o.text),
            y.real.as_ref().map(|o| &o.text)
        );
    }
    let rows = call(
        studio,
        "export",
        json!({"trajectory_id": id, "format": "agentworldbench"}),
    );
    assert_eq!(
        rows["content"].as_str().expect("rows").lines().count(),
        a.edges.len(),
        "one AgentWorldBench row per turn"
    );
}

#[test]
fn an_agentlab_answer_shows_the_executed_action_and_the_reasoning_beside_it() {
    let (dir, studio) = common::studio();
    let path = dir.path().join("kb-search.json");
    let steps = json!([
        {"axtree_txt": "[112] searchbox 'Search'\n[123] button 'Search'", "url": "http://kb.example/", "goal": "Find the water usage",
         "action": "The button is bid 123.\n\n```click('123')```"},
        {"axtree_txt": "[200] heading '10 results'", "url": "http://kb.example/?q=water", "action": null}
    ]);
    std::fs::write(&path, steps.to_string()).expect("write");
    let id = import_one(&studio, &path);
    let detail = turn(&studio, &id, 1);
    assert_eq!(detail["action"]["raw"], json!("click('123')"));
    assert_eq!(detail["action_reasoning"], json!("The button is bid 123."));
    assert_eq!(
        detail["action_target"],
        json!({"kind": "bid", "verb": "click", "bid": "123"})
    );
    round_trip(&studio, &id, &path, dir.path());
}

/// A fixture of `worldloom-core`'s tests.
fn core_fixture(rel: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../worldloom-core/tests/fixtures")
        .join(rel)
}

#[test]
fn a_webarena_render_and_trace_go_through_the_workspace_and_export() {
    let (dir, studio) = common::studio();
    for name in ["webarena/render_27.html", "webarena/trace_27.json"] {
        let path = core_fixture(name);
        let id = import_one(&studio, &path);
        let detail = turn(&studio, &id, 1);
        assert_eq!(detail["action"]["raw"], json!("click [12]"), "{name}");
        assert_eq!(
            detail["real_meta"]["url"],
            json!("http://forum.example:9999/forums")
        );
        round_trip(&studio, &id, &path, dir.path());
    }
}

#[test]
fn an_android_trace_folder_goes_through_the_workspace_and_export() {
    let (dir, studio) = common::studio();
    let path = core_fixture("android_trace/notes_27");
    let id = import_one(&studio, &path);
    let detail = turn(&studio, &id, 1);
    assert_eq!(
        detail["action_target"],
        json!({"kind": "point", "verb": "click", "x_px": 948.0, "y_px": 2220.0})
    );
    round_trip(&studio, &id, &path, dir.path());
}

#[test]
fn atif_runs_go_through_the_workspace_and_export() {
    let (dir, studio) = common::studio();
    for (name, action) in [
        (
            "atif/terminus_disk-usage.json",
            "du -h --max-depth=1 /srv/data | sort -h\n",
        ),
        (
            "atif/openhands_typo-fix.json",
            r#"{"name":"execute_bash","arguments":{"command":"grep -n Helo src/greet.py"}}"#,
        ),
    ] {
        let path = core_fixture(name);
        let id = import_one(&studio, &path);
        let detail = turn(&studio, &id, 1);
        assert_eq!(detail["action"]["raw"], json!(action), "{name}");
        assert!(detail["action_reasoning"].is_string(), "{name}: {detail}");
        round_trip(&studio, &id, &path, dir.path());
    }
}
