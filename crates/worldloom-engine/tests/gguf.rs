//! GGUF models: the tiny checkpoints written to GGUF by our own writer
//! (`qwen3_5_moe::gguf::write_gguf`, llama.cpp's names, transforms and
//! metadata) and read back through the GGUF loader, compared with the
//! safetensors path; split files; metadata → config; bad files.
//!
//! Files are written to a temporary directory inside each test; nothing
//! here needs llama.cpp.

use std::path::{Path, PathBuf};

use candle_core::quantized::GgmlDType;
use candle_core::quantized::gguf_file::{self, Content};
use candle_core::{DType, Device, Tensor};
use worldloom_core::{ChatMessage, ChatRole};
use worldloom_engine::CausalLm;
use worldloom_engine::chat_template::RenderOptions;
use worldloom_engine::loading::{LoadError, LoadOptions, load_model, read_config};
use worldloom_engine::local_model::{
    TokenizerSource, load_local_model, load_tokenizer, tokenizer_source,
};
use worldloom_engine::qwen3_5_moe::gguf::{
    Qwen35MoeGguf, WriteOptions, config_from_gguf, write_gguf,
};
use worldloom_engine::qwen3_5_moe::{Config, Qwen3_5Moe};
use worldloom_engine::weights::GgufFile;

/// Safetensors (f32) vs F32 GGUF, max abs logit difference: f32 rounding
/// (the norms pass through 1 + w and back, `A_log` through −exp and log,
/// and the DeltaNet value heads run in llama.cpp's tiled order, which
/// changes the summation order of `out_proj`).
const F32_TOLERANCE: f32 = 2e-5;
/// Safetensors loaded in bf16 vs BF16 GGUF loaded in bf16: the same bf16
/// matrices; the F32-kept vectors round to bf16 after the +1/−1 and
/// exp/log round trips, and bf16 activations amplify the f32 summation
/// differences. Max abs logit difference relative to the largest logit.
const BF16_RELATIVE_TOLERANCE: f32 = 2e-2;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/qwen3_5_moe")
}

fn tiny_world_model() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/tiny-world-model")
}

const VARIANTS: [&str; 2] = ["flat_per_expert", "nested_stacked_sharded"];

fn prompt() -> Vec<u32> {
    let meta: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures().join("reference.json")).expect("reference.json"),
    )
    .expect("json");
    meta["prompt_ids"]
        .as_array()
        .expect("prompt_ids")
        .iter()
        .map(|v| v.as_u64().expect("id") as u32)
        .collect()
}

fn options(dtype: Option<DType>) -> LoadOptions {
    LoadOptions {
        dtype,
        skip_memory_check: true,
        ..LoadOptions::default()
    }
}

fn write(dir: &Path, out: &Path, dtype: GgmlDType) {
    write_gguf(
        dir,
        out,
        WriteOptions {
            dtype,
            max_tensors_per_file: None,
        },
    )
    .unwrap_or_else(|e| panic!("writing {}: {e}", out.display()));
}

fn last_logits(model: &Qwen3_5Moe, ids: &[u32]) -> Tensor {
    let mut state = model.new_state().expect("state");
    model.forward(ids, &mut state).expect("forward")
}

fn max_abs(t: &Tensor) -> f32 {
    t.abs()
        .and_then(|t| t.max(0))
        .and_then(|t| t.to_scalar::<f32>())
        .expect("max")
}

fn max_abs_diff(a: &Tensor, b: &Tensor) -> f32 {
    max_abs(&(a - b).expect("diff"))
}

fn greedy(model: &Qwen3_5Moe, ids: &[u32], n: usize) -> Vec<u32> {
    let mut state = model.new_state().expect("state");
    let mut logits = model.forward(ids, &mut state).expect("prefill");
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let next = logits
            .argmax(0)
            .and_then(|t| t.to_scalar::<u32>())
            .expect("argmax");
        out.push(next);
        logits = model.forward(&[next], &mut state).expect("decode");
    }
    out
}

/// F32 GGUF files of both checkpoint forms give the safetensors path's
/// last-position logits to f32 rounding and the same greedy tokens.
#[test]
fn f32_gguf_matches_safetensors() {
    let tmp = tempfile::tempdir().expect("tmp");
    let ids = prompt();
    for variant in VARIANTS {
        let dir = fixtures().join(variant);
        let out = tmp.path().join(format!("{variant}-f32.gguf"));
        write(&dir, &out, GgmlDType::F32);
        let st = load_model(&dir, &options(Some(DType::F32))).expect("safetensors");
        let gg = load_model(&out, &options(None)).expect("gguf");
        assert_eq!(gg.dtype(), DType::F32, "{variant}: stored dtype");
        let (a, b) = (last_logits(&st, &ids), last_logits(&gg, &ids));
        assert!(max_abs(&a) > 0.5, "{variant}: logits are not trivial");
        let diff = max_abs_diff(&a, &b);
        assert!(
            diff <= F32_TOLERANCE,
            "{variant}: f32 logits differ by {diff}"
        );
        assert_eq!(greedy(&st, &ids, 12), greedy(&gg, &ids, 12), "{variant}");
    }
}

/// A BF16 GGUF file (computing in bf16) stays within the documented
/// tolerance of the safetensors path in bf16, with the same greedy tokens.
#[test]
fn bf16_gguf_matches_safetensors_in_bf16() {
    let tmp = tempfile::tempdir().expect("tmp");
    let ids = prompt();
    for variant in VARIANTS {
        let dir = fixtures().join(variant);
        let out = tmp.path().join(format!("{variant}-bf16.gguf"));
        write(&dir, &out, GgmlDType::BF16);
        let st = load_model(&dir, &options(Some(DType::BF16))).expect("safetensors");
        let gg = load_model(&out, &options(None)).expect("gguf");
        assert_eq!(gg.dtype(), DType::BF16, "{variant}: stored dtype");
        let (a, b) = (last_logits(&st, &ids), last_logits(&gg, &ids));
        let relative = max_abs_diff(&a, &b) / max_abs(&a);
        assert!(
            relative <= BF16_RELATIVE_TOLERANCE,
            "{variant}: bf16 logits differ by {relative} of the largest"
        );
        assert_eq!(greedy(&st, &ids, 8), greedy(&gg, &ids, 8), "{variant}");
    }
}

/// Q8_0 gives f32's greedy tokens from the fixture prompt. Its logits move
/// more than a quantization error suggests because the random tiny
/// checkpoint amplifies weight errors (bf16 weights alone move them 3.4 %
/// of the largest, f16 0.4 %, Q8_0 weights dequantized 32 %), so the bound
/// is loose. A K-quant request on these 64-wide rows falls back (Q5_0, or
/// Q8_0 for 32-wide rows) and still loads and runs.
#[test]
fn quantized_gguf_stays_close_to_f32() {
    let tmp = tempfile::tempdir().expect("tmp");
    let ids = prompt();
    for variant in VARIANTS {
        let dir = fixtures().join(variant);
        let st = load_model(&dir, &options(Some(DType::F32))).expect("safetensors");
        let want = last_logits(&st, &ids);
        let out = tmp.path().join(format!("{variant}-q8_0.gguf"));
        write(&dir, &out, GgmlDType::Q8_0);
        let gg = load_model(&out, &options(None)).expect("gguf");
        let relative = max_abs_diff(&last_logits(&gg, &ids), &want) / max_abs(&want);
        assert!(
            relative <= 0.4,
            "{variant}: Q8_0 logits differ by {relative}"
        );
        assert_eq!(greedy(&gg, &ids, 8), greedy(&st, &ids, 8), "{variant}");
    }
    let dir = fixtures().join("flat_per_expert");
    let out = tmp.path().join("q4_k.gguf");
    let summary = write_gguf(
        &dir,
        &out,
        WriteOptions {
            dtype: GgmlDType::Q4K,
            max_tensors_per_file: None,
        },
    )
    .expect("write");
    let type_of = |name: &str| {
        summary
            .tensors
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, t)| *t)
            .expect(name)
    };
    assert_eq!(type_of("blk.0.attn_qkv.weight"), GgmlDType::Q5_0);
    assert_eq!(type_of("blk.0.ffn_down_exps.weight"), GgmlDType::Q8_0);
    assert_eq!(type_of("blk.0.attn_norm.weight"), GgmlDType::F32);
    assert_eq!(type_of("blk.0.ffn_gate_inp.weight"), GgmlDType::F32);
    let gg = load_model(&out, &options(None)).expect("gguf");
    let logits = last_logits(&gg, &ids);
    assert!(max_abs(&logits).is_finite() && max_abs(&logits) > 0.1);
}

/// A quantized model's state snapshots continue as a fresh run does.
#[test]
fn quantized_snapshot_then_continue_equals_from_scratch() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out = tmp.path().join("q8.gguf");
    write(&fixtures().join("flat_per_expert"), &out, GgmlDType::Q8_0);
    let model = load_model(&out, &options(None)).expect("gguf");
    let ids: Vec<u32> = (0..40).map(|i| (i * 37 + 5) % 320).collect();
    let (prefix, rest) = ids.split_at(25);
    let expected = last_logits(&model, &ids);
    let mut state = model.new_state().expect("state");
    model.forward(prefix, &mut state).expect("prefix");
    let snapshot = state.clone();
    model.forward(&[1, 2, 3], &mut state).expect("diverge");
    let mut restored = snapshot;
    let got = model.forward(rest, &mut restored).expect("continue");
    let diff = max_abs_diff(&got, &expected);
    assert!(diff <= 1e-4, "snapshot continuation: {diff}");
}

/// A model split into parts loads from its first part and gives the
/// single file's logits exactly; a later part or a missing part is
/// refused by name.
#[test]
fn split_files_load_from_the_first_part() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = fixtures().join("flat_per_expert");
    let single = tmp.path().join("single.gguf");
    write(&dir, &single, GgmlDType::Q8_0);
    let summary = write_gguf(
        &dir,
        &tmp.path().join("split.gguf"),
        WriteOptions {
            dtype: GgmlDType::Q8_0,
            max_tensors_per_file: Some(30),
        },
    )
    .expect("split write");
    assert!(summary.files.len() >= 3, "{:?}", summary.files);
    let first = tmp
        .path()
        .join(format!("split-00001-of-{:05}.gguf", summary.files.len()));
    assert_eq!(summary.files[0], first);
    let ids = prompt();
    let a = last_logits(&load_model(&single, &options(None)).expect("single"), &ids);
    let b = last_logits(&load_model(&first, &options(None)).expect("split"), &ids);
    assert_eq!(max_abs_diff(&a, &b), 0.0);

    let Err(err) = GgufFile::open(&summary.files[1]) else {
        panic!("second part refused");
    };
    assert!(err.to_string().contains("open the first part"), "{err}");
    std::fs::remove_file(&summary.files[2]).expect("remove");
    let Err(err) = GgufFile::open(&first) else {
        panic!("missing part");
    };
    assert!(
        err.to_string()
            .contains(&summary.files[2].display().to_string()),
        "{err}"
    );
}

/// The metadata written for a config reads back as that config (value
/// heads marked tiled; RoPE settings normalised).
#[test]
fn metadata_round_trips_to_the_config() {
    let tmp = tempfile::tempdir().expect("tmp");
    for variant in VARIANTS {
        let dir = fixtures().join(variant);
        let out = tmp.path().join(format!("{variant}.gguf"));
        write(&dir, &out, GgmlDType::F32);
        let want = read_config(&dir).expect("config.json");
        let got = config_from_gguf(&GgufFile::open(&out).expect("open")).expect("config");
        assert!(got.linear_value_heads_tiled);
        let normalise = |c: &Config| {
            let mut c = c.clone();
            c.linear_value_heads_tiled = false;
            c.layer_types = Some(
                (0..c.num_hidden_layers)
                    .map(|i| format!("{:?}", c.layer_kind(i)))
                    .collect(),
            );
            c.rope_parameters = None;
            c.rope_theta = Some(c.rope_theta());
            c.partial_rotary_factor = Some(c.partial_rotary_factor());
            c.eos_token_id = None;
            c.full_attention_interval = 0;
            c
        };
        assert_eq!(normalise(&got), normalise(&want), "{variant}");
        assert_eq!(got.param_counts(), want.param_counts(), "{variant}");
        // `read_config` on a GGUF path reads the metadata.
        assert_eq!(read_config(&out).expect("read_config"), got);
    }
}

/// Rewrites `from` into `to` with the metadata changed by `edit` and the
/// tensors for which `keep` is true.
fn rewrite(
    from: &Path,
    to: &Path,
    edit: impl Fn(&mut Vec<(String, gguf_file::Value)>),
    keep: impl Fn(&str) -> bool,
) {
    let mut file = std::fs::File::open(from).expect("open");
    let content = Content::read(&mut file).expect("read");
    let mut metadata: Vec<(String, gguf_file::Value)> = content
        .metadata
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    edit(&mut metadata);
    let mut names: Vec<&String> = content.tensor_infos.keys().collect();
    names.sort();
    let tensors: Vec<(String, _)> = names
        .into_iter()
        .filter(|n| keep(n))
        .map(|n| {
            (
                n.clone(),
                content.tensor(&mut file, n, &Device::Cpu).expect("tensor"),
            )
        })
        .collect();
    let meta: Vec<(&str, &gguf_file::Value)> =
        metadata.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let refs: Vec<(&str, _)> = tensors.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let mut out = std::fs::File::create(to).expect("create");
    gguf_file::write(&mut out, &meta, &refs).expect("write");
}

fn load_error(path: &Path) -> LoadError {
    load_model(path, &options(None)).expect_err("load fails")
}

/// Truncated files, another architecture, a missing key and a missing
/// tensor are refused with errors naming the file and the tensor or key.
#[test]
fn bad_files_are_named() {
    let tmp = tempfile::tempdir().expect("tmp");
    let good = tmp.path().join("good.gguf");
    write(&fixtures().join("flat_per_expert"), &good, GgmlDType::Q8_0);

    let truncated = tmp.path().join("truncated.gguf");
    let bytes = std::fs::read(&good).expect("read");
    std::fs::write(&truncated, &bytes[..bytes.len() - 1000]).expect("write");
    let message = load_error(&truncated).to_string();
    assert!(
        message.contains("truncated.gguf") && message.contains("truncated?"),
        "{message}"
    );
    assert!(message.contains("tensor `"), "{message}");

    let garbage = tmp.path().join("garbage.gguf");
    std::fs::write(&garbage, b"not a gguf file at all").expect("write");
    let message = load_error(&garbage).to_string();
    assert!(message.contains("garbage.gguf"), "{message}");

    let llama = tmp.path().join("llama.gguf");
    rewrite(
        &good,
        &llama,
        |m| {
            for (k, v) in m.iter_mut() {
                if k == "general.architecture" {
                    *v = gguf_file::Value::String("llama".into());
                }
            }
        },
        |_| true,
    );
    let message = load_error(&llama).to_string();
    assert!(
        message.contains("llama.gguf")
            && message.contains("general.architecture")
            && message.contains("`llama` is not supported"),
        "{message}"
    );

    let no_key = tmp.path().join("no_key.gguf");
    rewrite(
        &good,
        &no_key,
        |m| m.retain(|(k, _)| k != "qwen35moe.expert_count"),
        |_| true,
    );
    let message = load_error(&no_key).to_string();
    assert!(
        message.contains("no_key.gguf") && message.contains("qwen35moe.expert_count"),
        "{message}"
    );

    let no_tensor = tmp.path().join("no_tensor.gguf");
    rewrite(&good, &no_tensor, |_| {}, |n| n != "blk.1.ssm_a");
    let message = load_error(&no_tensor).to_string();
    assert!(
        message.contains("no_tensor.gguf")
            && message.contains("blk.1.ssm_a")
            && message.contains("model.layers.1.linear_attn.A_log"),
        "{message}"
    );
}

/// The memory estimate of a quantized file counts its quantized bytes.
#[test]
fn memory_estimate_follows_the_tensor_types() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = fixtures().join("flat_per_expert");
    let (f32_path, q8_path) = (tmp.path().join("a.gguf"), tmp.path().join("b.gguf"));
    write(&dir, &f32_path, GgmlDType::F32);
    write(&dir, &q8_path, GgmlDType::Q8_0);
    let f32_file = Qwen35MoeGguf::open(&f32_path).expect("f32");
    let q8_file = Qwen35MoeGguf::open(&q8_path).expect("q8");
    let (a, b) = (
        f32_file.weight_bytes(DType::F32),
        q8_file.weight_bytes(DType::F32),
    );
    let params = f32_file.config().param_counts().total;
    assert_eq!(a, params * 4, "f32 weights are 4 bytes per parameter");
    // Q8_0 is 34 bytes per 32 values; the F32-kept vectors stay 4.
    assert!(b < a * 3 / 10, "q8_0 {b} vs f32 {a}");
}

/// `load_local_model` takes a GGUF file alone (tokenizer and chat template
/// from the metadata our writer copies from the directory) or with an HF
/// tokenizer beside it, and refuses by name a file with neither.
#[test]
fn local_model_loads_a_gguf_file() {
    let tmp = tempfile::tempdir().expect("tmp");
    let src = tiny_world_model();
    let out = tmp.path().join("tiny-q8_0.gguf");
    write(&src, &out, GgmlDType::Q8_0);
    assert_eq!(
        tokenizer_source(&out).expect("source"),
        TokenizerSource::GgufMetadata(out.clone())
    );
    let lone = load_local_model(&out, "cpu", None).expect("loads alone");
    assert_eq!(lone.name, "local:tiny-q8_0.gguf");
    assert!(lone.description.contains("Q8_0"), "{}", lone.description);

    // The written metadata holds the directory's tokenizer and template:
    // the same ids and the same rendered prompt.
    let (tok_gguf, template_gguf, generation_gguf) =
        load_tokenizer(&TokenizerSource::GgufMetadata(out.clone())).expect("from metadata");
    let (tok_dir, template_dir, generation_dir) =
        load_tokenizer(&TokenizerSource::Dir(src.clone())).expect("from directory");
    let messages = vec![
        ChatMessage::new(ChatRole::System, "You simulate a web page."),
        ChatMessage::new(ChatRole::User, "click [12] «Send» — ünïcode 😀 <|im_end|>"),
    ];
    let options = RenderOptions {
        add_generation_prompt: true,
        enable_thinking: false,
    };
    let text_gguf = template_gguf.render(&messages, options).expect("render");
    let text_dir = template_dir.render(&messages, options).expect("render");
    assert_eq!(text_gguf, text_dir);
    let ids = tok_dir.encode(&text_dir).expect("encode");
    assert_eq!(tok_gguf.encode(&text_gguf).expect("encode"), ids);
    assert_eq!(tok_gguf.decode(&ids, false).expect("decode"), text_dir);
    let end = tok_dir.token_id("<|im_end|>").expect("<|im_end|>");
    assert!(generation_gguf.eos_token_ids.contains(&end));
    assert!(
        generation_gguf
            .eos_token_ids
            .iter()
            .all(|id| generation_dir.eos_token_ids.contains(id)),
        "{generation_gguf:?} vs {generation_dir:?}"
    );

    // An HF tokenizer beside the file is used instead.
    for name in [
        "tokenizer.json",
        "tokenizer_config.json",
        "chat_template.jinja",
        "generation_config.json",
    ] {
        std::fs::copy(src.join(name), tmp.path().join(name)).expect("copy");
    }
    assert_eq!(
        tokenizer_source(&out).expect("source"),
        TokenizerSource::Dir(tmp.path().to_path_buf())
    );
    let local = load_local_model(&out, "cpu", None).expect("loads");
    assert_eq!(local.name, "local:tiny-q8_0.gguf");

    // A file written from a directory without a tokenizer has none: refused,
    // naming the file.
    let bare_src = tempfile::tempdir().expect("tmp");
    for name in ["config.json", "model.safetensors"] {
        std::fs::copy(src.join(name), bare_src.path().join(name)).expect("copy");
    }
    let bare_dir = tempfile::tempdir().expect("tmp");
    let bare = bare_dir.path().join("bare.gguf");
    write(bare_src.path(), &bare, GgmlDType::Q8_0);
    let err = load_local_model(&bare, "cpu", None).expect_err("no tokenizer");
    assert!(
        err.to_string().contains("no tokenizer beside")
            && err.to_string().contains("nor in its metadata")
            && err.to_string().contains("bare.gguf"),
        "{err}"
    );
}
