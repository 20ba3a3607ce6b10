//! Golden API responses for the front end's tests that need a fixed reply
//! as input (`ui/src/mocks/golden/`; the others run against `worldloom
//! serve`), so that nothing in TypeScript re-implements the observation
//! parsers, the tree diff or the fidelity metrics.
//!
//! - `<fixture id>.json`: each dev fixture (`ui/src/mocks/fixtures/*.json`)
//!   imported as a native trajectory and read through the commands:
//!   `get_trajectory`, the recorded branch (`get_branch`), and `get_turn` of
//!   every state with its default prediction (key `"<node>"`) and with each
//!   prediction (key `"<node>/<prediction>"`).
//! - `trees.json`: the `worldloom-obs` tree of each observation snippet the
//!   UI tests use (name → representation, text, tree).
//! - `runs.json`: the AgentWorldBench sample with two runs over it (the
//!   official judged output and `worldloom eval`'s copy baseline, written by
//!   `common::write_run_files`): `list_runs`, each run's dashboard and rows,
//!   their comparison, a search, their drift by turn, and the trajectory and turn of every row.
//!
//! The committed files must equal what this build writes (volatile fields,
//! the import time and the temporary source path, are fixed). Regenerate
//! with `WORLDLOOM_UPDATE_GOLDEN=1 cargo test -p worldloom-api --test golden`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};
use worldloom_api::types::*;
use worldloom_api::{Studio, commands};

#[allow(dead_code)] // the shared helpers this file does not call
mod common;

fn mocks_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ui/src/mocks")
}

/// A fixture observation (`{views: [{name, representation, text}], meta}`)
/// as a native observation: the first view is the main text.
fn observation(o: &Value) -> Value {
    let views = o["views"].as_array().expect("views");
    let main = &views[0];
    let mut out = json!({ "representation": main["representation"], "text": main["text"] });
    if views.len() > 1 {
        out["views"] = views[1..]
            .iter()
            .map(|v| json!({ "name": v["name"], "representation": v["representation"], "text": v["text"] }))
            .collect();
    }
    if let Some(meta) = o.get("meta").and_then(Value::as_object)
        && !meta.is_empty()
    {
        out["metadata"] = Value::Object(meta.clone());
    }
    out
}

/// A fixture prediction as a native one. Only its first view is kept (a
/// stored prediction has one text); judge scores go where `worldloom judge`
/// puts them (the prediction's extra fields, `judge_model` for the judge).
fn prediction(p: &Value, id: usize) -> Value {
    let main = &p["views"][0];
    let mut out = json!({
        "id": id,
        "engine": p["engine"],
        "context": "teacher-forced",
        "raw_output": main["text"],
        "observation": main["text"],
        "status": "ok",
        "representation": main["representation"],
    });
    if let Some(seed) = p.get("seed") {
        out["seed"] = seed.clone();
    }
    if let Some(r) = p.get("reasoning") {
        out["reasoning_content"] = r.clone();
    }
    if let Some(judge) = p.get("judge").and_then(Value::as_object) {
        let mut extra = Map::new();
        for (k, v) in judge {
            let key = if k == "judge" {
                "judge_model"
            } else {
                k.as_str()
            };
            extra.insert(key.to_owned(), v.clone());
        }
        out["extra"] = Value::Object(extra);
    }
    out
}

/// One fixture as a native trajectory file (`worldloom-core` `native`).
fn native_file(f: &Value) -> Value {
    let action_format = match f["domain"].as_str() {
        Some("web") => "browsergym",
        Some("os") => "pyautogui",
        Some("android") => "android-json",
        Some("terminal") => "shell",
        _ => "text",
    };
    let mut nodes = vec![json!({ "id": 0, "real": observation(&f["initial"]) })];
    let mut edges = Vec::new();
    for (i, t) in f["turns"].as_array().expect("turns").iter().enumerate() {
        let mut node = json!({ "id": i + 1, "parent_edge": i, "real": observation(&t["real"]) });
        let preds = t["predictions"].as_array().expect("predictions");
        if !preds.is_empty() {
            node["predictions"] = preds
                .iter()
                .enumerate()
                .map(|(k, p)| prediction(p, k))
                .collect();
        }
        nodes.push(node);
        edges.push(json!({
            "id": i, "from": i, "to": i + 1,
            "action": { "raw": t["action"], "format": action_format },
        }));
    }
    json!({
        "format": "worldloom-trajectory",
        "version": 1,
        "trajectories": [{
            "id": f["id"],
            "domain": f["domain"],
            "source": { "format": "native" },
            "goal": f["goal"],
            "nodes": nodes,
            "edges": edges,
        }],
    })
}

/// Every command response the mock back end serves for one fixture.
fn fixture_golden(fixture: &Value) -> Value {
    let dir = tempfile::tempdir().expect("tempdir");
    let studio = Studio::open(&dir.path().join("ws.worldloom")).expect("open");
    let id = fixture["id"].as_str().expect("id");
    let path = dir.path().join(format!("{id}.json"));
    std::fs::write(&path, native_file(fixture).to_string()).expect("write native file");
    let imported = commands::import_files(
        &studio,
        ImportFilesRequest {
            paths: vec![path.display().to_string()],
        },
    )
    .expect("import");
    assert!(imported.failed.is_empty(), "{id}: {:?}", imported.failed);
    let tid = imported.imported[0].trajectory_id.clone();

    let mut trajectory = commands::get_trajectory(
        &studio,
        GetTrajectoryRequest {
            trajectory_id: tid.clone(),
        },
    )
    .expect("get_trajectory");
    trajectory.trajectory.source_path = Some(format!("{id}.json"));
    trajectory.trajectory.imported_at = "2026-01-01 00:00:00".into();
    let recorded = trajectory
        .branches
        .iter()
        .find(|b| b.recorded)
        .expect("recorded branch")
        .id
        .clone();
    let branch = commands::get_branch(
        &studio,
        GetBranchRequest {
            trajectory_id: tid.clone(),
            branch_id: recorded,
        },
    )
    .expect("get_branch");

    let mut turns = BTreeMap::new();
    for node in &trajectory.nodes {
        let turn = |prediction_id: Option<u32>| {
            commands::get_turn(
                &studio,
                GetTurnRequest {
                    trajectory_id: tid.clone(),
                    node_id: node.node_id,
                    prediction_id,
                },
            )
            .expect("get_turn")
        };
        let shown = turn(None);
        for p in &shown.predictions {
            turns.insert(format!("{}/{}", node.node_id, p.id), turn(Some(p.id)));
        }
        turns.insert(node.node_id.to_string(), shown);
    }
    json!({
        "fixture": id,
        "trajectory": trajectory,
        "branch": branch,
        "turns": turns,
    })
}

/// The observation snippets the UI tests parse, by name.
const SNIPPETS: &[(&str, Representation, &str)] = &[
    (
        "axtree-list",
        Representation::Axtree,
        "RootWebArea 'Page'\n\t[1] list ''\n\t\t[2] listitem 'a'\n\t\t[3] listitem 'b'\n\t[4] button 'Go', focused",
    ),
    (
        "axtree-link",
        Representation::Axtree,
        "RootWebArea 'P'\n\t[5] link 'Home', clickable, visible, url='https://x.example/'",
    ),
    (
        "html-link",
        Representation::Html,
        "<html><body><a bid=\"3\" id=\"home\" href=\"/h\" hidden>x</a></body></html>",
    ),
    (
        "html-bids",
        Representation::Html,
        "<html bid=\"1\"><body bid=\"2\"><p bid=\"3\">a</p><p bid=\"4\">b</p><img bid=\"5\" src=\"data:image/png;base64,AA\" alt=\"x\"></body></html>",
    ),
    (
        "html-plain",
        Representation::Html,
        "<html><body><div><span>x</span></div><p>y</p></body></html>",
    ),
];

fn trees_golden() -> Value {
    let mut out = Map::new();
    for (name, representation, text) in SNIPPETS {
        let parsed = worldloom_obs::parse(text, *representation).expect("snippet parses");
        out.insert(
            (*name).to_owned(),
            json!({ "representation": representation, "text": text, "tree": parsed.tree }),
        );
    }
    Value::Object(out)
}

/// Run summaries with their volatile fields fixed.
fn fixed_run(mut r: RunSummary) -> RunSummary {
    r.created_at = "2026-01-01T00:00:00.000Z".into();
    r.source_path = r.source_path.map(|p| {
        let path = std::path::Path::new(&p);
        let file = path
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        match path.parent().and_then(|d| d.file_name()) {
            Some(d) if d == "model-b" => format!("model-b/{file}"),
            _ => file,
        }
    });
    r
}

/// The runs the mock back end serves: the sample dataset, the official
/// judged run (A) and the copy baseline (B).
fn runs_golden() -> Value {
    let dir = tempfile::tempdir().expect("tempdir");
    let studio = Studio::open(&dir.path().join("ws.worldloom")).expect("open");
    let [copy, _predictions, judged] = common::write_run_files(dir.path());
    let paths = vec![
        common::sample(common::AWB),
        judged.display().to_string(),
        copy.display().to_string(),
    ];
    let imported = commands::import_files(&studio, ImportFilesRequest { paths }).expect("import");
    assert!(imported.failed.is_empty(), "{:?}", imported.failed);
    let runs: Vec<RunSummary> = commands::list_runs(&studio, EmptyRequest::default())
        .expect("runs")
        .runs
        .into_iter()
        .map(fixed_run)
        .collect();
    let mut dashboards = Map::new();
    let mut rows = Map::new();
    let mut states = std::collections::BTreeSet::new();
    for r in &runs {
        let mut d = commands::get_run_dashboard(
            &studio,
            RunRequest {
                run_id: r.run_id.clone(),
            },
        )
        .expect("dashboard");
        d.run = fixed_run(d.run);
        dashboards.insert(r.run_id.clone(), json!(d));
        let list = commands::list_run_rows(&studio, common::all_rows(&r.run_id)).expect("rows");
        for row in &list.rows {
            states.insert((row.trajectory_id.clone(), row.node_id, row.prediction_id));
        }
        rows.insert(r.run_id.clone(), json!(list.rows));
    }
    let mut compare = commands::compare_runs(
        &studio,
        CompareRunsRequest {
            run_a: runs[0].run_id.clone(),
            run_b: runs[1].run_id.clone(),
            metric: Some(CompareMetric::TextF1),
            outcome: None,
            tie_margin: None,
            domain: None,
            offset: 0,
            limit: None,
        },
    )
    .expect("compare");
    compare.run_a = fixed_run(compare.run_a);
    compare.run_b = fixed_run(compare.run_b);
    let search = commands::search_runs(
        &studio,
        SearchRunsRequest {
            query: "element".into(),
            search_in: None,
            run_id: None,
            limit: None,
        },
    )
    .expect("search")
    .hits;
    let mut drift = commands::run_drift(
        &studio,
        RunDriftRequest {
            run_a: runs[0].run_id.clone(),
            run_b: Some(runs[1].run_id.clone()),
            metric: None,
        },
    )
    .expect("drift");
    for s in &mut drift.series {
        s.run = fixed_run(s.run.clone());
    }
    let mut trajectories = Map::new();
    let mut turns = Map::new();
    for (tid, node, prediction) in &states {
        if !trajectories.contains_key(tid) {
            let mut t = commands::get_trajectory(
                &studio,
                GetTrajectoryRequest {
                    trajectory_id: tid.clone(),
                },
            )
            .expect("trajectory");
            t.trajectory.source_path = Some("agentworldbench_sample.jsonl".into());
            t.trajectory.imported_at = "2026-01-01 00:00:00".into();
            trajectories.insert(tid.clone(), json!(t));
        }
        let turn = commands::get_turn(
            &studio,
            GetTurnRequest {
                trajectory_id: tid.clone(),
                node_id: *node,
                prediction_id: Some(*prediction),
            },
        )
        .expect("turn");
        turns.insert(format!("{tid}/{node}/{prediction}"), json!(turn));
    }
    json!({
        "runs": runs,
        "dashboards": dashboards,
        "rows": rows,
        "compare": compare,
        "search": { "query": "element", "hits": search },
        "drift": drift,
        "trajectories": trajectories,
        "turns": turns,
    })
}

/// Every golden file: name → content.
fn golden_files() -> BTreeMap<String, String> {
    let mut files = BTreeMap::new();
    let fixtures = mocks_dir().join("fixtures");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&fixtures)
        .expect("fixtures")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    names.sort();
    for path in names {
        let fixture: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).expect("read fixture"))
                .expect("fixture JSON");
        let name = format!("{}.json", fixture["id"].as_str().expect("id"));
        let text = serde_json::to_string(&fixture_golden(&fixture)).expect("serialise");
        files.insert(name, format!("{text}\n"));
    }
    let trees = serde_json::to_string_pretty(&trees_golden()).expect("serialise");
    files.insert("trees.json".into(), format!("{trees}\n"));
    let runs = serde_json::to_string(&runs_golden()).expect("serialise");
    files.insert("runs.json".into(), format!("{runs}\n"));
    files
}

#[test]
fn committed_golden_responses_match_the_api() {
    let dir = mocks_dir().join("golden");
    let files = golden_files();
    if std::env::var_os("WORLDLOOM_UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(&dir).expect("golden dir");
        for (name, text) in &files {
            std::fs::write(dir.join(name), text).expect("write golden file");
        }
    }
    for (name, text) in &files {
        let committed = std::fs::read_to_string(dir.join(name)).unwrap_or_default();
        assert!(
            &committed == text,
            "{} is out of date with the API; regenerate it with \
             `WORLDLOOM_UPDATE_GOLDEN=1 cargo test -p worldloom-api --test golden` and commit it",
            dir.join(name).display()
        );
    }
}

#[test]
fn every_fixture_state_has_a_turn_and_its_trees() {
    let files = golden_files();
    let web: Value = serde_json::from_str(&files["web-harbor-books.json"]).expect("JSON");
    // The initial state and three turns; node 1 has two predictions.
    let turns = web["turns"].as_object().expect("turns");
    let mut keys: Vec<&str> = turns.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, vec!["0", "1", "1/0", "1/1", "2", "2/0", "3", "3/0"]);
    let view = &turns["2"]["views"][0];
    assert_eq!(view["representation"], "axtree");
    assert!(
        view["real"]["tree"]["nodes"]
            .as_array()
            .expect("nodes")
            .len()
            > 10
    );
    assert!(view["diff"]["pairs"].as_array().expect("pairs").len() > 10);
}
