//! Runtime tests against small mock models and the tiny checkpoint's real
//! tokenizer and chat template.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use candle_core::{Device, Tensor};
use worldloom_core::{ChatMessage, ChatRole};

use super::*;

fn tiny_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/tiny-world-model")
}

fn tiny_tokenizer() -> Tokenizer {
    Tokenizer::from_dir(&tiny_dir()).expect("tiny tokenizer")
}

/// A mock model's rule: the logits after `state` (every token read so far,
/// the newest `fed` last), `vocab` long.
trait MockRule: Send + 'static {
    fn vocab(&self) -> usize;
    fn logits(&self, fed: &[u32], state: &[u32]) -> Vec<f32>;
}

/// A [`CausalLm`] whose state is the token ids it has read and whose logits
/// come from a [`MockRule`].
struct Mock<R>(R);

impl<R: MockRule> CausalLm for Mock<R> {
    type State = Vec<u32>;
    type Checkpoint = usize;

    fn checkpoint(state: &Vec<u32>) -> usize {
        state.len()
    }

    fn rewind(state: &mut Vec<u32>, checkpoint: usize) {
        state.truncate(checkpoint);
    }

    fn new_state(&self) -> candle_core::Result<Vec<u32>> {
        Ok(Vec::new())
    }

    fn forward(&self, input_ids: &[u32], state: &mut Vec<u32>) -> candle_core::Result<Tensor> {
        state.extend_from_slice(input_ids);
        let logits = self.0.logits(input_ids, state);
        let n = logits.len();
        Tensor::from_vec(logits, n, &Device::Cpu)
    }

    fn state_len(state: &Vec<u32>) -> usize {
        state.len()
    }

    fn state_size_bytes(state: &Vec<u32>) -> usize {
        state.len() * 4
    }

    fn vocab_size(&self) -> usize {
        self.0.vocab()
    }
}

/// Deterministic logits from a hash of every token seen; counts fed tokens.
struct HashLm {
    vocab: usize,
    fed_tokens: Arc<AtomicUsize>,
}

impl MockRule for HashLm {
    fn vocab(&self) -> usize {
        self.vocab
    }

    fn logits(&self, fed: &[u32], state: &[u32]) -> Vec<f32> {
        self.fed_tokens.fetch_add(fed.len(), Ordering::SeqCst);
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for &t in state {
            h = (h ^ u64::from(t)).wrapping_mul(0x0100_0000_01b3);
        }
        (0..self.vocab as u64)
            .map(|i| {
                let x =
                    (h ^ i.wrapping_mul(0x9e37_79b9_7f4a_7c15)).wrapping_mul(0xff51_afd7_ed55_8ccd);
                (x >> 40) as f32 / (1u64 << 24) as f32 * 8.0
            })
            .collect()
    }
}

/// A [`HashLm`] of `vocab` logits counting into `fed_tokens`.
fn hash_lm(vocab: usize, fed_tokens: Arc<AtomicUsize>) -> Mock<HashLm> {
    Mock(HashLm { vocab, fed_tokens })
}

/// Emits `script` greedily after the last `anchor` token of what it has
/// read (skipping `skip` tokens after it), then `end` forever. Decode
/// steps (one-token forwards) first wait for a permit when `gate` is set.
struct ScriptedLm {
    vocab: usize,
    anchor: u32,
    skip: usize,
    script: Vec<u32>,
    end: u32,
    gate: Option<Mutex<std::sync::mpsc::Receiver<()>>>,
}

impl MockRule for ScriptedLm {
    fn vocab(&self) -> usize {
        self.vocab
    }

    fn logits(&self, fed: &[u32], state: &[u32]) -> Vec<f32> {
        if fed.len() == 1
            && let Some(gate) = &self.gate
        {
            let _ = gate
                .lock()
                .map(|rx| rx.recv_timeout(Duration::from_secs(10)));
        }
        let next = match state.iter().rposition(|&t| t == self.anchor) {
            Some(pos) => {
                let seen = state.len() - pos - 1;
                seen.checked_sub(self.skip)
                    .and_then(|i| self.script.get(i).copied())
                    .unwrap_or(self.end)
            }
            None => self.end,
        };
        let mut logits = vec![0.0f32; self.vocab];
        logits[next as usize] = 20.0;
        logits
    }
}

fn engine<M: CausalLm>(model: M) -> LocalEngine<M> {
    LocalEngine::from_dir(model, &tiny_dir(), LocalEngineOptions::default()).expect("engine starts")
}

fn scripted(
    output: &str,
    gate: Option<std::sync::mpsc::Receiver<()>>,
) -> LocalEngine<Mock<ScriptedLm>> {
    let tok = tiny_tokenizer();
    let model = ScriptedLm {
        vocab: tok.vocab_size(),
        // the generation prompt ends `<think>` `\n`
        anchor: tok.token_id("<think>").expect("think id"),
        skip: 1,
        script: tok.encode(output).expect("encodes"),
        end: tok.token_id("<|im_end|>").expect("im_end id"),
        gate: gate.map(Mutex::new),
    };
    engine(Mock(model))
}

fn chat(turns: usize) -> Vec<ChatMessage> {
    let mut messages = vec![ChatMessage::new(
        ChatRole::System,
        "You simulate a Linux terminal.",
    )];
    for t in 0..turns {
        if t > 0 {
            messages.push(ChatMessage::new(
                ChatRole::Assistant,
                format!("<predicted_observation>\nfile{t}.txt\n</predicted_observation>"),
            ));
        }
        messages.push(ChatMessage::new(ChatRole::User, format!("$ ls dir{t}")));
    }
    messages
}

fn greedy() -> GenerationParams {
    GenerationParams {
        temperature: 0.0,
        max_new_tokens: 64,
        ..GenerationParams::default()
    }
}

#[derive(Debug, Default)]
struct Collected {
    reasoning: String,
    observation: String,
    /// The answer of the finished output (text after the think block).
    content: String,
    /// The streamed answer deltas.
    answer: String,
    output: Option<worldloom_core::ModelOutput>,
    ids: Vec<u32>,
    /// The token texts, concatenated.
    texts: String,
    logprobs: Vec<f32>,
    order: Vec<&'static str>,
    stats: Option<GenerationStats>,
    error: Option<EngineError>,
}

fn collect(stream: PredictionStream) -> Collected {
    let mut c = Collected::default();
    while let Ok(event) = stream.events.recv_timeout(Duration::from_secs(30)) {
        match event {
            EngineEvent::Reasoning { text } => {
                c.reasoning.push_str(&text);
                c.order.push("reasoning");
            }
            EngineEvent::Observation { text } => {
                c.observation.push_str(&text);
                c.order.push("content");
            }
            EngineEvent::Answer { text } => {
                c.answer.push_str(&text);
                c.order.push("content");
            }
            EngineEvent::Token(token) => {
                c.ids
                    .push(token.id.expect("local engines report token ids"));
                c.texts.push_str(&token.text);
                c.logprobs.extend(token.logprob);
            }
            EngineEvent::Done { stats, output } => {
                assert_eq!(c.answer, output.answer, "streamed answer");
                c.content = output.answer.clone();
                c.output = Some(output);
                c.stats = Some(stats);
                break;
            }
            EngineEvent::Error { error } => {
                c.error = Some(error);
                break;
            }
        }
    }
    c
}

fn run<M: CausalLm>(
    engine: &LocalEngine<M>,
    messages: Vec<ChatMessage>,
    params: GenerationParams,
) -> Collected {
    collect(
        engine
            .predict(PredictRequest::new(messages, params))
            .expect("accepted"),
    )
}

const OUTPUT: &str = "plan: list dir 한국어\n</think>\n\n<predicted_observation>\nnotes.txt 😀\n</predicted_observation>\ntrailing words";

#[test]
fn reasoning_then_content_stop_after_observation() {
    let e = scripted(OUTPUT, None);
    let c = run(&e, chat(1), greedy());
    let stats = c.stats.expect("done");
    assert_eq!(c.error, None);
    assert_eq!(c.reasoning, "plan: list dir 한국어\n");
    assert_eq!(
        c.content,
        "<predicted_observation>\nnotes.txt 😀\n</predicted_observation>"
    );
    assert_eq!(stats.stop_reason, Some(StopReason::ObservationClosed));
    let first_content = c
        .order
        .iter()
        .position(|k| *k == "content")
        .expect("content");
    assert!(c.order[..first_content].iter().all(|k| *k == "reasoning"));
    assert!(c.order[first_content..].iter().all(|k| *k == "content"));
    // the generated ids decode to exactly the reasoning, the tag and the content
    let text = tiny_tokenizer().decode(&c.ids, false).expect("decodes");
    assert!(
        text.starts_with("plan: list dir 한국어\n</think>\n\n<predicted_observation>"),
        "{text}"
    );
    assert_eq!(stats.completion_tokens, c.ids.len());
    assert_eq!(stats.prompt_tokens, stats.prompt_tokens_computed);
    // the token texts are the decoded text; the parser split it
    assert_eq!(c.texts, text);
    assert_eq!(c.observation, "notes.txt 😀");
    let output = c.output.expect("output");
    assert_eq!(output.parsed.status, worldloom_core::OutputStatus::Ok);
    assert_eq!(output.parsed.observation.as_deref(), Some("notes.txt 😀"));
    assert_eq!(output.parsed.reasoning, "plan: list dir 한국어");
    assert_eq!(
        output.raw,
        "plan: list dir 한국어\n</think>\n\n<predicted_observation>\nnotes.txt 😀\n</predicted_observation>"
    );
}

#[test]
fn end_of_turn_token_ends_generation_when_observation_stop_is_off() {
    let e = scripted(OUTPUT, None);
    let params = GenerationParams {
        stop_after_observation: false,
        ..greedy()
    };
    let c = run(&e, chat(1), params);
    let stats = c.stats.expect("done");
    assert_eq!(stats.stop_reason, Some(StopReason::EndOfTurn));
    assert_eq!(
        c.content,
        "<predicted_observation>\nnotes.txt 😀\n</predicted_observation>\ntrailing words"
    );
    let tok = tiny_tokenizer();
    assert_eq!(c.ids.len(), tok.encode(OUTPUT).expect("encodes").len() + 1);
    assert_eq!(c.ids.last().copied(), tok.token_id("<|im_end|>"));
}

#[test]
fn stop_strings_cut_the_output_before_them() {
    let e = scripted(OUTPUT, None);
    // A run with one stop string, which ends it.
    let stopped_by = |stop: &str| {
        let params = GenerationParams {
            stop: vec![stop.into()],
            ..greedy()
        };
        let c = run(&e, chat(1), params);
        let reason = c.stats.as_ref().expect("done").stop_reason;
        assert_eq!(reason, Some(StopReason::StopString), "{stop}");
        c
    };
    let c = stopped_by("txt");
    assert_eq!(c.content, "<predicted_observation>\nnotes.");
    // a stop string inside the reasoning ends it there
    let c = stopped_by("list");
    assert_eq!((c.reasoning.as_str(), c.content.as_str()), ("plan: ", ""));
}

#[test]
fn max_new_tokens_bounds_the_output() {
    let e = scripted(OUTPUT, None);
    let params = GenerationParams {
        max_new_tokens: 3,
        logprobs: true,
        ..greedy()
    };
    let c = run(&e, chat(1), params);
    let stats = c.stats.expect("done");
    assert_eq!(stats.stop_reason, Some(StopReason::MaxTokens));
    assert_eq!(
        (stats.completion_tokens, c.ids.len(), c.logprobs.len()),
        (3, 3, 3)
    );
    assert!(
        c.logprobs.iter().all(|&lp| lp <= 0.0 && lp > -1e-3),
        "{:?}",
        c.logprobs
    );
    let tok = tiny_tokenizer();
    assert_eq!(
        c.reasoning,
        tok.decode(&tok.encode(OUTPUT).expect("encodes")[..3], false)
            .expect("decodes")
    );
    // Cut inside reasoning by the limit: truncated, no observation.
    let output = c.output.as_ref().expect("output");
    assert_eq!(
        output.parsed.status,
        worldloom_core::OutputStatus::Truncated
    );
    assert_eq!(output.parsed.observation, None);
    assert_eq!(output.parsed.reasoning, c.reasoning.trim());
    let c = run(
        &e,
        chat(1),
        GenerationParams {
            max_new_tokens: 0,
            ..greedy()
        },
    );
    assert_eq!(c.stats.expect("done").completion_tokens, 0);
}

/// An engine scripted to write "word " far beyond any test's patience,
/// each decode step waiting for a permit from `gate`, and its prediction
/// of `chat(1)` already started.
fn start_gated_endless(
    gate: std::sync::mpsc::Receiver<()>,
) -> (LocalEngine<Mock<ScriptedLm>>, PredictionStream) {
    let e = scripted(&"word ".repeat(200), Some(gate));
    let params = GenerationParams {
        stop_after_observation: false,
        max_new_tokens: 10_000,
        ..greedy()
    };
    let stream = e
        .predict(PredictRequest::new(chat(1), params))
        .expect("accepted");
    (e, stream)
}

#[test]
fn cancellation_stops_at_the_next_token() {
    let (permits, gate) = std::sync::mpsc::channel();
    let (e, stream) = start_gated_endless(gate);
    let mut tokens = 0;
    let mut stats = None;
    while let Ok(event) = stream.events.recv_timeout(Duration::from_secs(30)) {
        match event {
            EngineEvent::Token(_) => {
                tokens += 1;
                if tokens == 2 {
                    // the engine now waits inside its third model call
                    stream.cancel.cancel();
                }
                permits.send(()).expect("engine alive");
            }
            EngineEvent::Done { stats: s, .. } => {
                stats = Some(s);
                break;
            }
            EngineEvent::Error { error } => panic!("{error}"),
            _ => {}
        }
    }
    let stats = stats.expect("done");
    assert_eq!(stats.stop_reason, Some(StopReason::Cancelled));
    assert_eq!((stats.completion_tokens, tokens), (2, 2));
    // the engine serves the next request
    let c = run(
        &e,
        chat(1),
        GenerationParams {
            max_new_tokens: 1,
            ..greedy()
        },
    );
    assert_eq!(c.stats.expect("done").completion_tokens, 1);
}

#[test]
fn cancelling_before_start_reports_cancelled() {
    // Every decode step waits for a permit, so however the threads are
    // scheduled the engine cannot run ahead of the cancellation: it is set
    // before any permit exists (the first token comes from the prefill; at
    // most one decode step can be under way when the permits go away).
    let (permits, gate) = std::sync::mpsc::channel::<()>();
    let (_engine, stream) = start_gated_endless(gate);
    stream.cancel.cancel();
    drop(permits);
    let c = collect(stream);
    let stats = c.stats.expect("done");
    assert_eq!(stats.stop_reason, Some(StopReason::Cancelled));
    assert!(stats.completion_tokens <= 2, "{stats:?}");
}

#[test]
fn snapshots_reuse_turn_prefixes() {
    let fed = Arc::new(AtomicUsize::new(0));
    let e = engine(hash_lm(1024, Arc::clone(&fed)));
    let tok = tiny_tokenizer();
    let template = ChatTemplate::from_dir(&tiny_dir()).expect("template");
    let prefix_tokens = |messages: &[ChatMessage]| {
        let text = template
            .render(
                messages,
                RenderOptions {
                    add_generation_prompt: false,
                    enable_thinking: true,
                },
            )
            .expect("renders");
        tok.encode(&text).expect("encodes").len()
    };
    let params = GenerationParams {
        max_new_tokens: 4,
        ..greedy()
    };

    // turn 1: nothing cached
    let first = run(&e, chat(1), params.clone()).stats.expect("done");
    assert_eq!(first.prompt_tokens_computed, first.prompt_tokens);
    // turn 2 after turn 1: only the assistant observation, the new action and the generation prompt
    let two = chat(2);
    let second = run(&e, two.clone(), params.clone()).stats.expect("done");
    let reused = prefix_tokens(&two[..2]);
    assert_eq!(second.prompt_tokens_computed, second.prompt_tokens - reused);
    // turn 3: reuses through the end of turn 2's action
    let three = chat(3);
    let third = run(&e, three.clone(), params.clone()).stats.expect("done");
    assert_eq!(
        third.prompt_tokens_computed,
        third.prompt_tokens - prefix_tokens(&three[..4])
    );
    // branch at turn 2 with a different action: reuses through turn 1's observation
    let mut branch = chat(2);
    branch[3] = ChatMessage::new(ChatRole::User, "$ cat other.txt");
    let branched = run(&e, branch, params.clone()).stats.expect("done");
    assert_eq!(
        branched.prompt_tokens_computed,
        branched.prompt_tokens - prefix_tokens(&three[..3])
    );
    // the same request again: the whole prompt and its logits come from the cache
    let before = fed.load(Ordering::SeqCst);
    let again = run(&e, three.clone(), params.clone());
    let again_stats = again.stats.expect("done");
    assert_eq!(again_stats.prompt_tokens_computed, 0);
    // the model read only the decode tokens (completion − 1 forwards)
    assert_eq!(
        fed.load(Ordering::SeqCst) - before,
        again_stats.completion_tokens - 1
    );

    // reuse changes nothing in the output: a fresh engine gives the same tokens
    let fresh = engine(hash_lm(1024, Arc::default()));
    let scratch = run(&fresh, three, params);
    assert_eq!(
        scratch.stats.expect("done").prompt_tokens_computed,
        third.prompt_tokens
    );
    assert_eq!(scratch.ids, again.ids);
}

#[test]
fn sampling_is_seeded() {
    let e = engine(hash_lm(1024, Arc::default()));
    let params = |seed| GenerationParams {
        temperature: 1.0,
        top_k: 0,
        top_p: 1.0,
        seed,
        max_new_tokens: 12,
        stop_after_observation: false,
        ..GenerationParams::default()
    };
    let a = run(&e, chat(2), params(5)).ids;
    assert_eq!(a.len(), 12);
    assert_eq!(a, run(&e, chat(2), params(5)).ids);
    assert_ne!(a, run(&e, chat(2), params(6)).ids);
}

#[test]
fn bad_requests_are_refused_or_reported() {
    let e = engine(hash_lm(1024, Arc::default()));
    assert!(matches!(
        e.predict(PredictRequest::new(Vec::new(), greedy())),
        Err(EngineError::InvalidRequest(_))
    ));
    let bad = GenerationParams {
        top_p: 0.0,
        ..greedy()
    };
    let err = e
        .predict(PredictRequest::new(chat(1), bad))
        .expect_err("refused");
    assert!(err.to_string().contains("top_p"), "{err}");
    // a template error arrives as an Error event naming the template
    let tok = tiny_tokenizer();
    let template = ChatTemplate::from_source("broken.jinja", "{{ raise_exception('no') }}".into())
        .expect("compiles");
    let e = LocalEngine::new(
        hash_lm(1024, Arc::default()),
        tok,
        template,
        &GenerationConfig::default(),
        LocalEngineOptions::default(),
    )
    .expect("starts");
    let c = run(&e, chat(1), greedy());
    match c.error {
        Some(EngineError::InvalidRequest(message)) => {
            assert!(message.contains("broken.jinja:1"), "{message}")
        }
        other => panic!("expected an invalid-request error, got {other:?}"),
    }
    // a model with fewer logits than the tokenizer has ids is refused at setup
    let small = LocalEngine::from_dir(
        hash_lm(10, Arc::default()),
        &tiny_dir(),
        LocalEngineOptions::default(),
    );
    assert!(matches!(small, Err(EngineError::Setup(_))));
}

#[test]
fn defaults_and_end_of_turn_ids_come_from_the_directory() {
    let e = engine(hash_lm(1024, Arc::default()));
    assert_eq!(e.end_of_turn_ids(), &[1021, 1019]);
    let p = e.default_params();
    assert_eq!((p.temperature, p.top_p, p.top_k), (0.6, 0.95, 20));
}

#[test]
fn parser_handles_a_model_that_opens_think_itself() {
    let mut parser = OutputParser::new(false);
    let mut delta = worldloom_core::OutputDelta::default();
    let mut deltas = Vec::new();
    for chunk in [
        "\n<th",
        "ink>",
        "abc</th",
        "ink>\n",
        "\n<predicted_",
        "observation>x</predicted_observation>more",
    ] {
        let (d, taken) = parser.push_to_close(chunk);
        if d.observation_closed {
            assert_eq!(&chunk[taken..], "more");
        }
        deltas.push(d.clone());
        delta.extend(d);
    }
    assert!(delta.observation_closed);
    assert_eq!(delta.reasoning, "abc");
    assert_eq!(
        delta.answer,
        "<predicted_observation>x</predicted_observation>"
    );
    // no delta ever holds part of a tag
    assert!(deltas.iter().all(|d| {
        [&d.reasoning, &d.answer, &d.observation]
            .iter()
            .all(|t| !t.contains("</th") || t.contains("</think>"))
    }));
}

#[test]
fn stop_strings_hold_back_a_possible_start() {
    let mut s = StopStrings::new(&["STOP".into(), String::new()]);
    assert_eq!(s.push("hello ST"), ("hello ".to_owned(), false));
    assert_eq!(
        s.push("ill here STOP later"),
        ("STill here ".to_owned(), true)
    );
    assert_eq!(s.flush(), "");
    let mut s = StopStrings::new(&["STOP".into()]);
    assert_eq!(s.push("a S"), ("a ".to_owned(), false));
    assert_eq!(s.flush(), "S");
    assert!(opens_reasoning("<|im_start|>assistant\n<think>\n"));
    assert!(!opens_reasoning(
        "<|im_start|>assistant\n<think>\n\n</think>\n\n"
    ));
    assert!(!opens_reasoning("<|im_start|>assistant\n"));
}

#[test]
fn context_top_logprobs_and_stop_token_ids() {
    let e = scripted(OUTPUT, None);
    // The tiny model's config.json says max_position_embeddings 4096.
    assert_eq!(e.context_tokens(), Some(4096));
    let tok = tiny_tokenizer();
    let prompt = e
        .count_prompt_tokens(&chat(1), true)
        .expect("counts")
        .expect("renders");
    assert!(prompt > 5, "{prompt}");

    // Top alternatives: as many as asked, the sampled token first here.
    let params = GenerationParams {
        max_new_tokens: 4,
        logprobs: true,
        top_logprobs: 3,
        ..greedy()
    };
    let stream = e
        .predict(PredictRequest::new(chat(1), params))
        .expect("accepted");
    let mut tokens = Vec::new();
    while let Ok(event) = stream.events.recv_timeout(Duration::from_secs(30)) {
        match event {
            EngineEvent::Token(t) => tokens.push(t),
            EngineEvent::Done { .. } | EngineEvent::Error { .. } => break,
            _ => {}
        }
    }
    assert_eq!(tokens.len(), 4);
    for t in &tokens {
        assert_eq!(t.top.len(), 3);
        assert_eq!(t.top[0].id, t.id);
        assert_eq!(Some(t.top[0].logprob), t.logprob);
        assert!(t.top[1].logprob <= t.top[0].logprob);
    }

    // A stop token id ends generation like the end of turn.
    let script = tok.encode(OUTPUT).expect("encodes");
    let params = GenerationParams {
        stop_token_ids: vec![script[2]],
        ..greedy()
    };
    let c = run(&e, chat(1), params);
    let stats = c.stats.expect("done");
    assert_eq!(stats.stop_reason, Some(StopReason::EndOfTurn));
    assert_eq!(stats.completion_tokens, 3);

    // The refusal servers send, worded as vLLM's.
    assert_eq!(
        context_length_error(4096, prompt, 5000).to_string(),
        format!(
            "invalid request: This model's maximum context length is 4096 tokens. However, you requested {} tokens ({prompt} in the messages, 5000 in the completion). Please reduce the length of the messages or completion.",
            prompt + 5000
        )
    );
}

#[test]
fn skip_special_tokens_leaves_them_out_of_the_text() {
    let e = scripted("ab<|im_start|>cd", None);
    let start = tiny_tokenizer().token_id("<|im_start|>").expect("id");
    let skipped = run(&e, chat(1), greedy());
    assert!(skipped.ids.contains(&start), "{:?}", skipped.ids);
    assert_eq!(skipped.texts, "abcd");
    let kept = run(
        &e,
        chat(1),
        GenerationParams {
            skip_special_tokens: false,
            ..greedy()
        },
    );
    assert_eq!(kept.texts, "ab<|im_start|>cd");
    assert_eq!(kept.ids, skipped.ids);
}

/// The same logits after any input: six tokens from `first` with logits
/// 2, 1, 0.5, 0, −0.5, −1, every other token −40.
struct ConstLm {
    vocab: usize,
    first: u32,
}

const CONST_LOGITS: [f32; 6] = [2.0, 1.0, 0.5, 0.0, -0.5, -1.0];

impl MockRule for ConstLm {
    fn vocab(&self) -> usize {
        self.vocab
    }

    fn logits(&self, _fed: &[u32], _state: &[u32]) -> Vec<f32> {
        let mut logits = vec![-40.0f32; self.vocab];
        for (i, &l) in CONST_LOGITS.iter().enumerate() {
            logits[self.first as usize + i] = l;
        }
        logits
    }
}

/// A drafter that always proposes `token`, `len` times.
struct Always {
    token: u32,
    len: usize,
}

impl crate::draft::Drafter for Always {
    fn draft(&mut self, _output: &[u32], max: usize) -> Vec<u32> {
        vec![self.token; self.len.min(max)]
    }

    fn accepted(&mut self, _proposed: usize, _accepted: usize) {}
}

#[test]
fn sampled_tokens_keep_their_distribution_when_drafts_are_judged() {
    let tok = tiny_tokenizer();
    let first = tok.token_id("a").expect("a");
    assert!((first as usize) + 6 <= tok.vocab_size());
    let model = || {
        Mock(ConstLm {
            vocab: tok.vocab_size(),
            first,
        })
    };
    let drafting = Drafting::Custom(Arc::new(move |_: &[u32], _: &[u32]| {
        Box::new(Always {
            token: first + 1,
            len: 3,
        }) as Box<dyn crate::draft::Drafter>
    }));
    let drafted = LocalEngine::from_dir(
        model(),
        &tiny_dir(),
        LocalEngineOptions {
            drafting,
            ..LocalEngineOptions::default()
        },
    )
    .expect("engine");
    let plain = engine(model());
    let params = |seed| GenerationParams {
        temperature: 1.0,
        top_k: 0,
        top_p: 1.0,
        seed,
        max_new_tokens: 4,
        stop_after_observation: false,
        ..GenerationParams::default()
    };
    // Tokens 2 to 4 of each output come from judged drafts (the first is
    // sampled from the prompt's logits).
    const RUNS: u64 = 600;
    let histogram = |e: &LocalEngine<Mock<ConstLm>>| {
        let mut counts = [0u64; 6];
        for seed in 0..RUNS {
            let ids = run(e, chat(1), params(seed)).ids;
            assert_eq!(ids.len(), 4, "{ids:?}");
            for &id in &ids[1..] {
                counts[(id - first) as usize] += 1;
            }
        }
        counts
    };
    let z: f64 = CONST_LOGITS.iter().map(|&l| f64::from(l).exp()).sum();
    let chi_square = |counts: [u64; 6]| -> f64 {
        let n = counts.iter().sum::<u64>() as f64;
        counts
            .iter()
            .zip(CONST_LOGITS)
            .map(|(&c, l)| {
                let expected = n * f64::from(l).exp() / z;
                (c as f64 - expected).powi(2) / expected
            })
            .sum()
    };
    // 5 degrees of freedom: 20.5 is the 0.999 quantile.
    let (with_counts, without_counts) = (histogram(&drafted), histogram(&plain));
    // The draws differ (drafts were judged, with their own use of the
    // seeded generator) but follow the same distribution.
    assert_ne!(with_counts, without_counts);
    let (with, without) = (chi_square(with_counts), chi_square(without_counts));
    assert!(with < 20.5, "with drafts: chi-square {with:.2}");
    assert!(without < 20.5, "without: chi-square {without:.2}");
    // Seeded runs with drafts are reproducible.
    assert_eq!(
        run(&drafted, chat(1), params(7)).ids,
        run(&drafted, chat(1), params(7)).ids
    );
}

#[test]
fn the_answer_frame_spells_the_tags_and_starts_where_the_answer_does() {
    use crate::draft::Start;
    // Characters as tokens: `</think>` takes eight.
    let chars = |text: &str| Ok::<_, ()>(text.chars().map(u32::from).collect::<Vec<u32>>());
    let spelled = |tokens: &[u32]| -> String {
        tokens
            .iter()
            .map(|&c| char::from_u32(c).unwrap_or('@'))
            .collect()
    };
    let reasoning = AnswerFrame::new("a.txt", true, chars).expect("frame");
    assert_eq!(
        spelled(&reasoning.tokens),
        "\n</think>\n\n<predicted_observation>\na.txt\n</predicted_observation>"
    );
    assert_eq!(reasoning.start, Start::Lost);
    let answer = AnswerFrame::new("a.txt", false, chars).expect("frame");
    assert_eq!(
        spelled(&answer.tokens),
        "<predicted_observation>\na.txt\n</predicted_observation>"
    );
    assert_eq!(answer.start, Start::At(0));
    // `</think>` as one token (id 0xE000, a private-use character here):
    // the pointer waits for it.
    let close = |text: &str| {
        if text == "</think>" {
            Ok(vec![0xE000])
        } else {
            chars(text)
        }
    };
    let reasoning = AnswerFrame::new("a.txt", true, close).expect("frame");
    assert_eq!(reasoning.tokens[0], 0xE000);
    assert_eq!(
        spelled(&reasoning.tokens[1..]),
        "\n\n<predicted_observation>\na.txt\n</predicted_observation>"
    );
    assert_eq!(reasoning.start, Start::After(0));
}

#[test]
fn the_drafter_is_given_the_observation_framed_as_the_prompt_leaves_the_answer() {
    let seen: Arc<Mutex<Vec<Vec<u32>>>> = Arc::default();
    let sink = Arc::clone(&seen);
    let drafting = Drafting::Custom(Arc::new(move |_: &[u32], frame: &[u32]| {
        sink.lock().expect("lock").push(frame.to_vec());
        Box::new(Always { token: 0, len: 0 }) as Box<dyn crate::draft::Drafter>
    }));
    let e = LocalEngine::from_dir(
        hash_lm(1024, Arc::default()),
        &tiny_dir(),
        LocalEngineOptions {
            drafting,
            ..LocalEngineOptions::default()
        },
    )
    .expect("engine");
    for enable_thinking in [true, false] {
        let mut request = PredictRequest::new(
            chat(1),
            GenerationParams {
                enable_thinking,
                max_new_tokens: 2,
                ..greedy()
            },
        );
        request.current_observation = Some("a.txt b.txt".into());
        let c = collect(e.predict(request).expect("accepted"));
        assert!(c.stats.is_some(), "{:?}", c.error);
    }
    let tok = tiny_tokenizer();
    let framed = |open| {
        AnswerFrame::new("a.txt b.txt", open, |t: &str| tok.encode(t))
            .expect("frame")
            .tokens
    };
    // The tiny tokenizer has `</think>` as one token: the frame opens
    // with it where the prompt leaves the reasoning open.
    let close = tok.token_id("</think>").expect("close id");
    assert_eq!(framed(true)[0], close);
    assert_eq!(
        &framed(true)[framed(true).len() - framed(false).len()..],
        framed(false)
    );
    assert_eq!(
        *seen.lock().expect("lock"),
        vec![framed(true), framed(false)]
    );
}
