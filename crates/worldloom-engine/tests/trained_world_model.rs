//! Speculative decoding on `assets/tiny-trained-world-model`, a small
//! Qwen3.5-MoE trained on synthetic environments (its output follows the
//! current observation, so drafts hold): the greedy output is the same
//! token for token with the observation drafter, prompt lookup, and drafts
//! forced wrong at every position, and the observation drafter saves most
//! forwards on a held-out Android row.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use worldloom_core::{ChatMessage, ChatRole};
use worldloom_engine::draft::Drafter;
use worldloom_engine::loading::{LoadOptions, load_model};
use worldloom_engine::local::{DrafterFactory, Drafting};
use worldloom_engine::{
    EngineEvent, GenerationParams, GenerationStats, LocalEngine, LocalEngineOptions,
    PredictRequest, WorldModel,
};

fn model_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/tiny-trained-world-model")
}

/// Turn 2 of the first held-out Android trajectory, as the AgentWorldBench
/// evaluation asks for it: system, turn 1's prompt and observation, turn
/// 2's prompt; the current observation is turn 1's.
fn android_turn_2() -> PredictRequest {
    let rows = std::fs::read_to_string(model_dir().join("heldout/android_test.jsonl"))
        .expect("held-out rows");
    let row: serde_json::Value = rows
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("row"))
        .find(|r| r["turn_idx"] == 2)
        .expect("a turn-2 row");
    let text = |v: &serde_json::Value| v.as_str().expect("text").to_owned();
    let messages = vec![
        ChatMessage::new(ChatRole::System, text(&row["system_str"])),
        ChatMessage::new(ChatRole::User, text(&row["prompt"][0])),
        ChatMessage::new(ChatRole::Assistant, text(&row["response"][0])),
        ChatMessage::new(ChatRole::User, text(&row["prompt"][1])),
    ];
    let params = GenerationParams {
        temperature: 0.0,
        max_new_tokens: 400,
        ..GenerationParams::default()
    };
    let mut request = PredictRequest::new(messages, params);
    request.current_observation = Some(
        text(&row["response"][0])
            .trim_start_matches("**Environment Observation:**\n")
            .to_owned(),
    );
    request
}

fn run(drafting: Drafting) -> (Vec<u32>, GenerationStats) {
    let dir = model_dir();
    let model = load_model(&dir, &LoadOptions::default()).expect("model loads");
    let options = LocalEngineOptions {
        drafting,
        ..LocalEngineOptions::default()
    };
    let engine = LocalEngine::from_dir(model, &dir, options).expect("engine");
    let stream = engine.predict(android_turn_2()).expect("accepted");
    let mut ids = Vec::new();
    loop {
        match stream
            .events
            .recv_timeout(Duration::from_secs(300))
            .expect("event")
        {
            EngineEvent::Token(token) => ids.push(token.id.expect("ids")),
            EngineEvent::Done { stats, .. } => return (ids, stats),
            EngineEvent::Error { error } => panic!("{error}"),
            _ => {}
        }
    }
}

/// Proposes the reference's next tokens, each one changed: every draft is
/// rejected at its first token.
struct AlwaysWrong(Vec<u32>);

impl Drafter for AlwaysWrong {
    fn draft(&mut self, output: &[u32], max: usize) -> Vec<u32> {
        let at = output.len();
        (at..self.0.len().min(at + max))
            .map(|i| self.0[i] ^ 1)
            .collect()
    }

    fn accepted(&mut self, _proposed: usize, _accepted: usize) {}
}

#[test]
fn drafting_never_changes_the_trained_models_greedy_output_and_saves_forwards() {
    let (reference, plain) = run(Drafting::Off);
    assert!(reference.len() >= 40, "{} tokens", reference.len());
    assert_eq!(plain.drafted_tokens, 0);

    let (ids, stats) = run(Drafting::Observation);
    assert_eq!(ids, reference, "observation drafter");
    // The answer copies most of the current screen: most tokens come from
    // drafts, at least 2 a forward.
    assert!(
        stats.accepted_tokens * 2 >= stats.completion_tokens,
        "{stats:?}"
    );
    assert!(
        stats.decode_forwards * 2 <= stats.completion_tokens,
        "{stats:?}"
    );

    let (ids, stats) = run(Drafting::PromptLookup);
    assert_eq!(ids, reference, "prompt lookup");
    assert!(stats.drafted_tokens > 0, "{stats:?}");

    let wrong = reference.clone();
    let make: DrafterFactory = Arc::new(move |_prompt: &[u32], _observation: &[u32]| {
        Box::new(AlwaysWrong(wrong.clone())) as Box<dyn Drafter>
    });
    let (ids, stats) = run(Drafting::Custom(make));
    assert_eq!(ids, reference, "drafts rejected at every position");
    assert_eq!(stats.accepted_tokens, 0, "{stats:?}");
    assert!(stats.drafted_tokens > 0, "{stats:?}");
}
