//! Folders of trajectories: a folder that is not itself a trajectory but
//! holds trajectory files and folders, at any depth (`samples/`).

use std::path::Path;

use worldloom_core::formats::collection;
use worldloom_core::{ImportOptions, import_path};

fn samples() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples")
}

#[test]
fn the_samples_folder_imports_every_trajectory_it_holds() {
    let listed = collection::items(&samples()).expect("listed");
    let names: Vec<String> = listed
        .trajectories
        .iter()
        .map(|p| {
            p.strip_prefix(samples())
                .expect("under samples")
                .display()
                .to_string()
        })
        .collect();
    // Folders of trajectories are walked; README.md and tools/*.py are
    // passed over without a line; sidecars are read with their trajectory.
    assert_eq!(
        names,
        [
            "agentworldbench/agentworldbench_sample.jsonl",
            "android/harbor-messenger_send_trajectory",
            "android/pinecone-notes_new-note_trajectory",
            "android/settings_airplane-mode_trajectory",
            "os/pluma_edit-menu_trajectory",
            "os/power-manager_toggle_trajectory",
            "os/thunar_rename_trajectory",
            "web/agentlab_larkmail-reply_6steps.json",
            "web/agentlab_quillpost-profile-settings_6steps.json",
            "web/agentlab_tidewell-shop_add-to-cart_8steps.json",
        ]
    );
    assert!(listed.skipped.is_empty(), "{:?}", listed.skipped);

    let imported = import_path(&samples(), &ImportOptions::default()).expect("imports");
    // Seven AgentWorldBench trajectories (one per domain), three of each GUI
    // folder and three AgentLab files.
    assert_eq!(imported.trajectories.len(), 16);
    assert!(imported.warnings.is_empty(), "{:?}", imported.warnings);
}

#[test]
fn an_item_that_does_not_import_is_one_line_and_the_others_import() {
    let dir = tempfile::tempdir().expect("dir");
    let web = dir.path().join("web");
    std::fs::create_dir(&web).expect("web");
    std::fs::copy(
        samples().join("web/agentlab_larkmail-reply_6steps.json"),
        web.join("good.json"),
    )
    .expect("copy");
    std::fs::write(web.join("broken.json"), "[{\"axtree_txt\": 3}]").expect("broken");
    std::fs::write(web.join("notes.txt"), "shopping list").expect("notes");
    std::fs::write(web.join("README.md"), "# runs").expect("readme");

    let imported = import_path(dir.path(), &ImportOptions::default()).expect("imports");
    assert_eq!(imported.trajectories.len(), 1);
    assert_eq!(imported.trajectories[0].id, "good");
    let lines: Vec<String> = imported.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines[0].contains("broken.json: not imported: ")
            && lines[0].contains("steps[0].axtree_txt"),
        "{lines:?}"
    );
    assert!(
        lines[1].contains("notes.txt: skipped: ") && lines[1].contains("unrecognised input"),
        "{lines:?}"
    );
}

#[test]
fn a_folder_where_nothing_imports_says_why_for_each_item() {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(dir.path().join("a.json"), "{\"format\": 7").expect("a");
    let err = import_path(dir.path(), &ImportOptions::default())
        .expect_err("nothing imports")
        .to_string();
    assert!(
        err.contains("no trajectory in this folder imported"),
        "{err}"
    );
    assert!(err.contains("a.json"), "{err}");

    let empty = tempfile::tempdir().expect("empty");
    let err = import_path(empty.path(), &ImportOptions::default())
        .expect_err("empty")
        .to_string();
    assert!(err.contains("no step_NN.xml"), "{err}");
}
