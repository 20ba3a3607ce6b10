//! The local runtime on the real Qwen3.5-MoE code with the tiny checkpoint
//! of `assets/tiny-world-model` (random weights, real tokenizer and chat
//! template): state snapshots are exact, and the engine's reuse of them
//! changes nothing in the output.

use std::path::{Path, PathBuf};
use std::time::Duration;

use worldloom_core::{ChatMessage, ChatRole};
use worldloom_engine::chat_template::{ChatTemplate, RenderOptions};
use worldloom_engine::loading::{LoadOptions, load_model};
use worldloom_engine::qwen3_5_moe::Qwen3_5Moe;
use worldloom_engine::tokenizer::Tokenizer;
use worldloom_engine::{
    CausalLm, EngineEvent, GenerationParams, GenerationStats, LocalEngine, LocalEngineOptions,
    PredictRequest, StopReason, WorldModel,
};

/// Snapshot-then-continue vs from scratch, max abs logit difference in f32.
const SNAPSHOT_TOLERANCE: f32 = 1e-5;

fn tiny_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/tiny-world-model")
}

fn model() -> Qwen3_5Moe {
    load_model(&tiny_dir(), &LoadOptions::default()).expect("tiny model loads")
}

fn chat(turns: usize) -> Vec<ChatMessage> {
    let mut messages = vec![ChatMessage::new(
        ChatRole::System,
        "You are a world model of a Linux terminal. Predict the output of each command.",
    )];
    for t in 0..turns {
        if t > 0 {
            messages.push(ChatMessage::new(
                ChatRole::Assistant,
                format!(
                    "<predicted_observation>\nsrc/ README.md notes{t}.txt\n</predicted_observation>"
                ),
            ));
        }
        messages.push(ChatMessage::new(ChatRole::User, format!("$ ls -la dir{t}")));
    }
    messages
}

fn prompt_ids(messages: &[ChatMessage]) -> Vec<u32> {
    let template = ChatTemplate::from_dir(&tiny_dir()).expect("template");
    let tokenizer = Tokenizer::from_dir(&tiny_dir()).expect("tokenizer");
    let text = template
        .render(messages, RenderOptions::default())
        .expect("renders");
    tokenizer.encode(&text).expect("encodes")
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

fn logits(
    model: &Qwen3_5Moe,
    ids: &[u32],
    state: &mut <Qwen3_5Moe as CausalLm>::State,
) -> Vec<f32> {
    model
        .forward(ids, state)
        .and_then(|t| t.to_vec1::<f32>())
        .expect("forward")
}

#[test]
fn restoring_a_snapshot_and_feeding_the_rest_equals_recomputation() {
    let model = model();
    let prompt = prompt_ids(&chat(3));
    assert!(prompt.len() > 80, "prompt of {} tokens", prompt.len());
    let mut scratch = model.new_state().expect("state");
    let from_scratch = logits(&model, &prompt, &mut scratch);
    assert!(
        from_scratch.iter().any(|x| x.abs() > 0.1),
        "random weights give non-trivial logits"
    );

    for cut in [1, 17, prompt.len() / 2, prompt.len() - 1] {
        let mut state = model.new_state().expect("state");
        let _ = logits(&model, &prompt[..cut], &mut state);
        let snapshot = state.clone();
        assert_eq!(<Qwen3_5Moe as CausalLm>::state_len(&snapshot), cut);
        // disturb the original after the snapshot: the snapshot must not change
        let _ = logits(&model, &[3, 4, 5], &mut state);
        let mut restored = snapshot.clone();
        let resumed = logits(&model, &prompt[cut..], &mut restored);
        let diff = max_abs_diff(&from_scratch, &resumed);
        assert!(
            diff <= SNAPSHOT_TOLERANCE,
            "cut {cut}: max abs logit difference {diff}"
        );
        // the same again from the same snapshot: bit-identical
        let mut again = snapshot.clone();
        assert_eq!(
            resumed,
            logits(&model, &prompt[cut..], &mut again),
            "cut {cut}"
        );
        // token by token (decode path) after the snapshot
        let mut stepwise = snapshot;
        let mut last = Vec::new();
        for &id in &prompt[cut..] {
            last = logits(&model, &[id], &mut stepwise);
        }
        let diff = max_abs_diff(&from_scratch, &last);
        assert!(diff <= 1e-4, "cut {cut}: token-by-token difference {diff}");
    }
}

struct Run {
    ids: Vec<u32>,
    logprobs: Vec<f32>,
    text: String,
    stats: GenerationStats,
}

fn run(engine: &LocalEngine<Qwen3_5Moe>, messages: Vec<ChatMessage>) -> Run {
    let params = GenerationParams {
        temperature: 0.0,
        max_new_tokens: 12,
        logprobs: true,
        ..GenerationParams::default()
    };
    let stream = engine
        .predict(PredictRequest::new(messages, params))
        .expect("accepted");
    let (mut ids, mut logprobs, mut text) = (Vec::new(), Vec::new(), String::new());
    loop {
        match stream
            .events
            .recv_timeout(Duration::from_secs(120))
            .expect("event")
        {
            EngineEvent::Token(token) => {
                ids.push(token.id.expect("local engines report ids"));
                logprobs.push(token.logprob.expect("logprobs requested"));
                text.push_str(&token.text);
            }
            EngineEvent::Reasoning { .. }
            | EngineEvent::Answer { .. }
            | EngineEvent::Observation { .. } => {}
            EngineEvent::Done { stats, output } => {
                assert!(text.starts_with(&output.raw), "{text:?} {:?}", output.raw);
                return Run {
                    ids,
                    logprobs,
                    text,
                    stats,
                };
            }
            EngineEvent::Error { error } => panic!("{error}"),
        }
    }
}

#[test]
fn engine_reuse_of_snapshots_matches_a_fresh_engine() {
    let engine =
        LocalEngine::from_dir(model(), &tiny_dir(), LocalEngineOptions::default()).expect("engine");
    let turn2 = run(&engine, chat(2));
    assert_eq!(
        turn2.stats.prompt_tokens_computed,
        turn2.stats.prompt_tokens
    );
    let turn3 = run(&engine, chat(3));
    assert!(
        turn3.stats.prompt_tokens_computed < turn3.stats.prompt_tokens / 2,
        "turn 3 re-read {} of {} tokens",
        turn3.stats.prompt_tokens_computed,
        turn3.stats.prompt_tokens
    );
    let fresh =
        LocalEngine::from_dir(model(), &tiny_dir(), LocalEngineOptions::default()).expect("engine");
    let scratch = run(&fresh, chat(3));
    assert_eq!(
        scratch.stats.prompt_tokens_computed,
        scratch.stats.prompt_tokens
    );
    assert_eq!(turn3.ids, scratch.ids);
    assert_eq!(turn3.text, scratch.text);
    let diff = max_abs_diff(&turn3.logprobs, &scratch.logprobs);
    assert!(
        diff <= SNAPSHOT_TOLERANCE,
        "log-probability difference {diff}"
    );
    assert!(matches!(
        turn3.stats.stop_reason,
        Some(StopReason::MaxTokens | StopReason::EndOfTurn | StopReason::ObservationClosed)
    ));
    assert!(turn3.stats.completion_tokens >= 1 && turn3.stats.completion_tokens <= 12);
    assert_eq!(turn3.ids.len(), turn3.stats.completion_tokens);
}
