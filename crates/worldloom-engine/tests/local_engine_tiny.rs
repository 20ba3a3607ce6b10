//! The local runtime on the real Qwen3.5-MoE code with the tiny checkpoint
//! of `assets/tiny-world-model` (random weights, real tokenizer and chat
//! template): state snapshots are exact, and the engine's reuse of them
//! changes nothing in the output; nor does speculative decoding, whether
//! its drafts are kept, cut short or rejected, and a rewound state equals
//! a fresh prefill.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use worldloom_core::{ChatMessage, ChatRole};
use worldloom_engine::chat_template::{ChatTemplate, RenderOptions};
use worldloom_engine::draft::Drafter;
use worldloom_engine::loading::{LoadOptions, load_model};
use worldloom_engine::local::{DrafterFactory, Drafting};
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
    run_request(engine, PredictRequest::new(messages, params))
}

fn run_request(engine: &LocalEngine<Qwen3_5Moe>, request: PredictRequest) -> Run {
    let stream = engine.predict(request).expect("accepted");
    let (mut ids, mut logprobs, mut text) = (Vec::new(), Vec::new(), String::new());
    loop {
        match stream
            .events
            .recv_timeout(Duration::from_secs(120))
            .expect("event")
        {
            EngineEvent::Token(token) => {
                ids.push(token.id.expect("local engines report ids"));
                logprobs.extend(token.logprob);
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

/// A drafter that proposes the reference output's next tokens, every
/// `wrong_every`-th position of the output (counted from 1) replaced by
/// another token (0: none), and counts what it proposed and what was kept.
struct Oracle {
    reference: Vec<u32>,
    wrong_every: usize,
    proposed: Arc<AtomicUsize>,
    kept: Arc<AtomicUsize>,
}

impl Drafter for Oracle {
    fn draft(&mut self, output: &[u32], max: usize) -> Vec<u32> {
        let at = output.len();
        let wrong = |i: usize| self.wrong_every > 0 && (i + 1).is_multiple_of(self.wrong_every);
        (at..self.reference.len().min(at + max))
            .map(|i| self.reference[i] ^ u32::from(wrong(i)))
            .collect()
    }

    fn accepted(&mut self, proposed: usize, accepted: usize) {
        self.proposed.fetch_add(proposed, Ordering::SeqCst);
        self.kept.fetch_add(accepted, Ordering::SeqCst);
    }
}

fn engine_drafting(drafting: Drafting) -> LocalEngine<Qwen3_5Moe> {
    let options = LocalEngineOptions {
        drafting,
        ..LocalEngineOptions::default()
    };
    LocalEngine::from_dir(model(), &tiny_dir(), options).expect("engine")
}

fn greedy_request() -> PredictRequest {
    let params = GenerationParams {
        temperature: 0.0,
        max_new_tokens: 48,
        enable_thinking: false,
        // Kept draft tokens report log-probabilities too (from their row of
        // the verifying forward).
        logprobs: true,
        top_logprobs: 2,
        ..GenerationParams::default()
    };
    let mut request = PredictRequest::new(chat(2), params);
    request.current_observation = Some("src/ README.md notes1.txt".into());
    request
}

#[test]
fn greedy_output_is_the_same_whether_drafts_are_kept_cut_or_rejected() {
    let reference = run_request(&engine_drafting(Drafting::Off), greedy_request());
    assert!(reference.ids.len() >= 8, "{:?}", reference.ids);
    // 0: every draft right (kept whole); 3: cut at every third token
    // (rewind and feed again); 1: every draft token wrong (rejected at once).
    for wrong_every in [0usize, 3, 1] {
        let proposed = Arc::new(AtomicUsize::new(0));
        let kept = Arc::new(AtomicUsize::new(0));
        let (p, k, ids) = (proposed.clone(), kept.clone(), reference.ids.clone());
        let make: DrafterFactory = Arc::new(move |_prompt: &[u32], _observation: &[u32]| {
            Box::new(Oracle {
                reference: ids.clone(),
                wrong_every,
                proposed: p.clone(),
                kept: k.clone(),
            }) as Box<dyn Drafter>
        });
        let drafted = run_request(&engine_drafting(Drafting::Custom(make)), greedy_request());
        assert_eq!(drafted.ids, reference.ids, "wrong every {wrong_every}");
        assert_eq!(drafted.text, reference.text);
        assert_eq!(drafted.stats.stop_reason, reference.stats.stop_reason);
        let diff = max_abs_diff(&drafted.logprobs, &reference.logprobs);
        assert_eq!(drafted.logprobs.len(), reference.logprobs.len());
        assert!(
            diff <= 1e-4,
            "wrong every {wrong_every}: logprob difference {diff}"
        );
        let (proposed, kept) = (proposed.load(Ordering::SeqCst), kept.load(Ordering::SeqCst));
        // The engine's figures are the drafter's.
        let stats = &drafted.stats;
        assert_eq!(
            (stats.drafted_tokens, stats.accepted_tokens),
            (proposed, kept)
        );
        assert_eq!(
            reference.stats.decode_forwards + 1,
            reference.stats.completion_tokens.max(1),
            "{:?}",
            reference.stats
        );
        if wrong_every == 0 {
            assert!(
                stats.decode_forwards * 2 <= stats.completion_tokens,
                "{stats:?}"
            );
        }
        match wrong_every {
            // All but the first token (sampled) and one a forward come from drafts.
            0 => assert!(
                kept * 2 >= reference.ids.len(),
                "kept {kept} of {}",
                reference.ids.len()
            ),
            1 => assert_eq!((kept, proposed > 0), (0, true)),
            _ => assert!(kept > 0 && kept < proposed, "kept {kept} of {proposed}"),
        }
    }
    for drafting in [Drafting::Observation, Drafting::PromptLookup] {
        let drafted = run_request(&engine_drafting(drafting.clone()), greedy_request());
        assert_eq!(drafted.ids, reference.ids, "{drafting:?}");
    }
}

#[test]
fn a_rewound_state_fed_the_kept_tokens_equals_a_fresh_prefill() {
    let model = model();
    let prompt = prompt_ids(&chat(2));
    let mut state = model.new_state().expect("state");
    logits(&model, &prompt, &mut state);
    let checkpoint = Qwen3_5Moe::checkpoint(&state);
    let draft = [prompt[3], prompt[4], prompt[5], prompt[6], prompt[7]];
    let rows = CausalLm::forward_all(&model, &draft, &mut state)
        .and_then(|t| t.to_vec2::<f32>())
        .expect("verify");
    assert_eq!(rows.len(), draft.len());
    Qwen3_5Moe::rewind(&mut state, checkpoint);
    assert_eq!(Qwen3_5Moe::state_len(&state), prompt.len());
    let kept = &draft[..2];
    let after = logits(&model, kept, &mut state);
    let mut fresh = model.new_state().expect("state");
    let want = logits(&model, &[prompt.as_slice(), kept].concat(), &mut fresh);
    let diff = max_abs_diff(&after, &want);
    assert!(diff <= SNAPSHOT_TOLERANCE, "rewound against fresh: {diff}");
    // The verifying forward's row 1 is the same distribution (other arithmetic).
    let diff = max_abs_diff(&rows[1], &want);
    assert!(diff <= 1e-4, "verify row against fresh: {diff}");
}

#[test]
fn a_state_rewound_within_a_draft_equals_a_fresh_prefill_of_the_kept_tokens() {
    let model = model();
    let prompt = prompt_ids(&chat(2));
    let draft = [prompt[3], prompt[4], prompt[5], prompt[6], prompt[7]];
    // A prompt read by `forward` (a prefill) keeps nothing to rewind within:
    // only a verifying `forward_all` does.
    let mut state = model.new_state().expect("state");
    let start = Qwen3_5Moe::checkpoint(&state);
    logits(&model, &prompt[..10], &mut state);
    assert!(!Qwen3_5Moe::rewind_within(&mut state, &start, 5).expect("rewind"));
    assert_eq!(Qwen3_5Moe::state_len(&state), 10);
    for keep in 0..=draft.len() {
        let mut state = model.new_state().expect("state");
        logits(&model, &prompt, &mut state);
        let checkpoint = Qwen3_5Moe::checkpoint(&state);
        CausalLm::forward_all(&model, &draft, &mut state).expect("verify");
        assert!(
            Qwen3_5Moe::rewind_within(&mut state, &checkpoint, keep).expect("rewind"),
            "keep {keep}"
        );
        assert_eq!(Qwen3_5Moe::state_len(&state), prompt.len() + keep);
        // The next token on the rewound state, against the same tokens
        // read from scratch: KV caches cut and recurrent states recomputed
        // right.
        let next = prompt[9];
        let after = logits(&model, &[next], &mut state);
        let mut fresh = model.new_state().expect("state");
        let tokens = [prompt.as_slice(), &draft[..keep], &[next]].concat();
        let want = logits(&model, &tokens, &mut fresh);
        let diff = max_abs_diff(&after, &want);
        assert!(diff <= 1e-5, "keep {keep}: rewound against fresh {diff}");
        // Once used (or after a one-token forward), the trail is gone.
        assert!(!Qwen3_5Moe::rewind_within(&mut state, &checkpoint, 0).expect("rewind"));
    }
}
