//! Actions as executed: an AgentLab step whose recorded action is the
//! agent's whole answer imports as the code BrowserGym ran, with the rest
//! kept as the agent's reasoning.

use serde_json::json;
use worldloom_core::formats::agentlab::{RECORDED_ACTION, executed_action};
use worldloom_core::formats::{AGENT_REASONING, agent_reasoning};
use worldloom_core::{ImportOptions, ParsedAction, import_path};

const ANSWER: &str = "The search box is filled. The search button is bid 123, so I will click it.\n\n```click('123')```";

#[test]
fn the_fenced_block_is_the_action_and_the_rest_the_reasoning() {
    let e = executed_action(ANSWER).expect("a block");
    assert_eq!(e.code, "click('123')");
    assert_eq!(
        e.reasoning,
        "The search box is filled. The search button is bid 123, so I will click it."
    );
    // A language tag on the fence is not code; the last block that parses wins.
    let tagged = "First ```note``` then\n```python\nfill('7', 'lamp')\n```\nDone.";
    let e = executed_action(tagged).expect("a block");
    assert_eq!(e.code, "fill('7', 'lamp')");
    assert_eq!(e.reasoning, "First ```note``` then\n\nDone.");
    // Already an action, or no block that parses: kept as written.
    assert_eq!(executed_action("click('12')"), None);
    assert_eq!(executed_action("I am not sure what to do."), None);
    assert_eq!(executed_action("Try ```the blue one``` next."), None);
}

#[test]
fn an_agentlab_answer_recorded_as_the_action_imports_as_executed() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("kb-search.json");
    let steps = json!([
        {"axtree_txt": "[112] searchbox 'Search'\n[123] button 'Search'", "url": "http://kb.example/", "goal": "Find the water usage", "action": ANSWER},
        {"axtree_txt": "[200] heading '10 results'", "url": "http://kb.example/?q=water", "action": "Reading the results.\n```scroll(0, 200)```", "think": "kept as recorded"},
        {"axtree_txt": "[300] link 'Article 81'", "url": "http://kb.example/?q=water", "action": "I cannot tell; no action."},
        {"axtree_txt": "", "action": null}
    ]);
    std::fs::write(&path, steps.to_string()).expect("write");
    let imported = import_path(&path, &ImportOptions::default()).expect("imports");
    let t = &imported.trajectories[0];
    assert_eq!(t.edges.len(), 3);

    let first = &t.edges[0];
    assert_eq!(first.action.raw, "click('123')");
    let Some(ParsedAction::Browsergym { calls }) = &first.action.parsed else {
        panic!("not parsed: {:?}", first.action)
    };
    assert_eq!(
        (calls[0].function.as_str(), &calls[0].args),
        ("click", &vec![json!("123")])
    );
    assert_eq!(
        agent_reasoning(first),
        Some("The search box is filled. The search button is bid 123, so I will click it.")
    );
    assert_eq!(first.extra[RECORDED_ACTION], json!(ANSWER));

    // A recorded `think` stays the reasoning.
    let second = &t.edges[1];
    assert_eq!(second.action.raw, "scroll(0, 200)");
    assert_eq!(second.extra[AGENT_REASONING], json!("kept as recorded"));

    // No block to run: the answer is kept as the action (malformed).
    let third = &t.edges[2];
    assert_eq!(third.action.raw, "I cannot tell; no action.");
    assert!(third.action.problem().is_some());
    assert_eq!(agent_reasoning(third), None);
    assert!(!third.extra.contains_key(RECORDED_ACTION));
}
