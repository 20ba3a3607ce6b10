//! WebArena result traces: the render (`render_<task>.html`) and the JSON
//! trace, on fixtures written in the layout WebArena's runner writes.

use std::path::{Path, PathBuf};

use serde_json::json;
use worldloom_core::formats::webarena::{self, EmbeddedImage};
use worldloom_core::formats::{AGENT_REASONING, agent_reasoning};
use worldloom_core::{
    ActionFormat, ImportOptions, InputFormat, NodeId, Representation, Trajectory, detect_format,
    import_path,
};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/webarena")
        .join(name)
}

/// The fixture `name`, detected as WebArena and imported without warnings.
fn read(name: &str) -> Trajectory {
    let path = fixture(name);
    assert_eq!(
        detect_format(&path).expect("detects"),
        InputFormat::Webarena
    );
    let imported = import_path(&path, &ImportOptions::default()).expect("imports");
    assert!(imported.warnings.is_empty(), "{:?}", imported.warnings);
    imported.trajectories.into_iter().next().expect("one")
}

const INTENT: &str = "How many posts in Astronomy mention space exploration";

#[test]
fn a_render_imports_with_observations_urls_actions_and_reasoning() {
    let t = &read("render_27.html");
    assert_eq!(t.id, "render_27");
    assert_eq!(t.source.format, "webarena");
    assert_eq!(t.goal.as_deref(), Some(INTENT));
    assert_eq!(t.extra["config"]["task_id"], json!("27"));
    assert_eq!(
        t.extra["config"]["start_url"],
        json!("http://forum.example:9999")
    );

    // Four states, three turns; the final `stop` stays on the last state.
    assert_eq!((t.nodes.len(), t.edges.len()), (4, 3));
    let actions: Vec<&str> = t.edges.iter().map(|e| e.action.raw.as_str()).collect();
    assert_eq!(
        actions,
        ["click [12]", "none", "type [31] [space exploration] [1]"]
    );
    assert!(
        t.edges
            .iter()
            .all(|e| e.action.format == ActionFormat::Text)
    );
    let last = t.node(NodeId(3)).expect("last");
    assert_eq!(last.extra["final_action"], json!("stop [3]"));

    let first = t
        .node(NodeId(0))
        .and_then(|n| n.real.as_ref())
        .expect("obs");
    assert_eq!(first.representation, Representation::Axtree);
    assert_eq!(
        first.text,
        "Tab 0 (current): Quillboard\n\n[1] RootWebArea 'Quillboard' focused: True\n\t[12] link 'Forums'\n\t[13] link 'Wiki'"
    );
    assert_eq!(
        first.metadata.url.as_deref(),
        Some("http://forum.example:9999/")
    );
    // Unescaped `&` in the observation stays as written.
    let results = t
        .node(NodeId(3))
        .and_then(|n| n.real.as_ref())
        .expect("obs");
    assert!(
        results.text.ends_with("[41] link 'Q&A: probes'"),
        "{}",
        results.text
    );

    let click = &t.edges[0];
    assert_eq!(click.extra["element"], json!("Forums"));
    assert_eq!(
        click.extra["parsed_action"],
        json!("click [12] where [12] is Forums")
    );
    assert_eq!(
        agent_reasoning(click),
        Some(
            "Let's think step-by-step. The forums are listed behind the Forums link. In summary, the next action I will perform is"
        )
    );
    // An output that did not parse: action `none`, the output as reasoning,
    // and the runner's message on the next state.
    let none = &t.edges[1];
    assert_eq!(
        none.extra[AGENT_REASONING],
        json!("I should search the forum for the topic.")
    );
    let after = t.node(NodeId(2)).expect("state 2");
    assert!(
        after.extra["previous_action"]
            .as_str()
            .is_some_and(|p| p.starts_with("The previous prediction you issued was")),
        "{:?}",
        after.extra
    );
}

/// The fixture's images: a 1 × 1 PNG, as base64 in the render.
const PIXEL_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

#[test]
fn a_render_keeps_each_step_screenshot_from_its_data_url() {
    use base64::Engine as _;
    let text = std::fs::read_to_string(fixture("render_27.html")).expect("read");
    let trace = webarena::read_render(&text);
    assert_eq!(trace.config["intent"], json!(INTENT));
    let shots: Vec<Option<EmbeddedImage>> =
        trace.steps.iter().map(|s| s.screenshot.clone()).collect();
    let line_of = |n: usize| {
        text.lines()
            .enumerate()
            .filter(|(_, l)| l.starts_with("<img src='data:image/png;base64,"))
            .nth(n)
            .map(|(i, _)| i as u64 + 1)
            .expect("img line")
    };
    let shot = |line| {
        Some(EmbeddedImage {
            line,
            base64: PIXEL_PNG.into(),
        })
    };
    assert_eq!(
        shots,
        [shot(line_of(0)), None, shot(line_of(1)), shot(line_of(2))]
    );

    // Imported, steps 0, 2 and 3 show the decoded image; step 1 has none.
    let t = read("render_27.html");
    let png = base64::engine::general_purpose::STANDARD
        .decode(PIXEL_PNG)
        .expect("base64");
    let kept: Vec<Option<(u32, u32, u64, String)>> = t
        .nodes
        .iter()
        .map(|n| {
            n.screenshot
                .as_ref()
                .map(|s| (s.width_px, s.height_px, s.byte_length, s.sha256.clone()))
        })
        .collect();
    let pixel = Some((
        1,
        1,
        png.len() as u64,
        worldloom_core::screenshot::sha256_hex(&png),
    ));
    assert_eq!(kept, [pixel.clone(), None, pixel.clone(), pixel]);
    let first = t.nodes[0].screenshot.as_ref().expect("shot");
    assert_eq!(first.file, None);
    assert_eq!(worldloom_core::screenshot::bytes_of(first), Some(png));
}

#[test]
fn an_inline_image_that_cannot_be_kept_is_a_warning_naming_its_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = std::fs::read_to_string(fixture("render_27.html")).expect("read");
    // The first image is not base64, the second is base64 of text, not an image.
    let text =
        text.replacen(PIXEL_PNG, "%%%not-base64%%%", 1)
            .replacen(PIXEL_PNG, "aGVsbG8gd29ybGQ=", 1);
    let path = dir.path().join("render_27.html");
    std::fs::write(&path, &text).expect("write");
    let imported = import_path(&path, &ImportOptions::default()).expect("imports");
    let lines: Vec<usize> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.starts_with("<img src='data:"))
        .map(|(i, _)| i + 1)
        .collect();
    let warned: Vec<(Option<usize>, bool)> = imported
        .warnings
        .iter()
        .map(|w| (w.line, w.message.starts_with("screenshot not kept:")))
        .collect();
    assert_eq!(warned, [(Some(lines[0]), true), (Some(lines[1]), true)]);
    assert!(
        imported.warnings[0].message.contains("not base64"),
        "{:?}",
        imported.warnings
    );
    assert!(
        imported.warnings[1].message.contains("not a PNG or JPEG"),
        "{:?}",
        imported.warnings
    );
    let t = &imported.trajectories[0];
    let has: Vec<bool> = t.nodes.iter().map(|n| n.screenshot.is_some()).collect();
    assert_eq!(has, [false, false, false, true]);
}

#[test]
fn a_json_trace_imports_with_the_system_prompt_and_the_result() {
    let t = &read("trace_27.json");
    assert_eq!(t.goal.as_deref(), Some(INTENT));
    assert_eq!(t.extra["config"]["result"], json!("PASS"));
    assert!(
        t.system_prompt
            .as_deref()
            .is_some_and(|s| s.starts_with("You are an autonomous intelligent agent"))
    );
    let actions: Vec<&str> = t.edges.iter().map(|e| e.action.raw.as_str()).collect();
    assert_eq!(
        actions,
        ["click [12]", "none", "type [31] [space exploration] [1]"]
    );
    assert_eq!(
        t.node(NodeId(3)).expect("last").extra["final_action"],
        json!("stop [3]")
    );
    // The observation is the input's, without the URL, objective and
    // previous action, which go to their own places.
    let render =
        import_path(&fixture("render_27.html"), &ImportOptions::default()).expect("render");
    for (a, b) in t.nodes.iter().zip(&render.trajectories[0].nodes) {
        let (a, b) = (a.real.as_ref().expect("a"), b.real.as_ref().expect("b"));
        assert_eq!(a.text, b.text);
        assert_eq!(a.metadata.url, b.metadata.url);
    }
}

#[test]
fn a_json_trace_with_a_bad_field_names_it() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("trace.json");
    std::fs::write(
        &path,
        r#"[{"instruction": "x", "input": "OBSERVATION:\n[1] link 'a'\nURL: http://a/\nOBJECTIVE: o\nPREVIOUS ACTION: None", "output": "click [1]"},
            {"instruction": "x", "input": "OBSERVATION:\n[2] link 'b'", "output": 7}]"#,
    )
    .expect("write");
    let err = import_path(&path, &ImportOptions::default())
        .expect_err("bad field")
        .to_string();
    assert!(
        err.contains("trace.json") && err.contains("[1].output"),
        "{err}"
    );
}
