//! GGUF files written by llama.cpp's converter and quantizer, run by our
//! engine, against llama.cpp's own outputs on the same files
//! (`tests/fixtures/gguf/*.json`, made by `scripts/make_gguf_fixtures.sh`;
//! see docs/engine.md, "GGUF fixtures"). Nothing here runs llama.cpp.
//!
//! Each reference holds, for two prompts, llama.cpp's 24 greedy ids, its
//! full logits at the last prompt position and its two best logits at every
//! step. The model is fed the prompt, then llama.cpp's greedy ids one at a
//! time (teacher forcing), and compared at every step.
//!
//! With F32 weights llama.cpp computes in f32, and so do we: the file must
//! give llama.cpp's logits to 1e-4 at every step and its 24 greedy ids, fed
//! or free-running (measured: 1e-5). This is the check that we read the
//! converter's names, transforms and head orders exactly.
//!
//! With BF16, Q8_0 or k-quant weights llama.cpp rounds the activations to
//! bf16 / 8 bits for each matrix product; we compute in f32 (BF16) or
//! quantize activations as candle does. On these tiny random MoE models
//! a rounding difference sometimes swaps an expert at one token, which
//! moves that step's logits by up to 4.7 (the `transformers` reference,
//! run in f32 on the same bf16 weights, differs from llama.cpp's BF16
//! logits at exactly the same steps and by the same amounts as we do). So
//! those files are held to documented bounds, set above what we measured
//! (in brackets, worst file):
//! - the last prompt position's whole logit vector: max abs difference
//!   ≤ 0.2 for BF16 [0.150] and Q8_0 [0.129], ≤ 0.25 for Q4_K_M [0.153];
//!   the mistakes a reader can make move it by 0.5–6;
//! - the two best logits of each step: within 0.1 (BF16) [93.8% of steps]
//!   or 0.25 (Q8_0 [100%], Q4_K_M [89.6%]) on at least 90% (BF16, Q8_0)
//!   or 85% (Q4_K_M) of the 48 steps;
//! - the argmax is llama.cpp's greedy id on at least 20 of the 24 steps of
//!   each prompt (measured 20–24; the 256-wide Q4_K_M file, where Q4_K and
//!   Q6_K really hold the weights: 23 and 23, missing only at near-ties of
//!   0.014 and 0.024; its Q5_K_M requantization, held to the Q4_K_M
//!   bounds: 24 and 24, last position within 0.055, every step within
//!   0.25).

use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use worldloom_engine::CausalLm;
use worldloom_engine::loading::{LoadOptions, load_model};
use worldloom_engine::qwen3_5_moe::Qwen3_5Moe;

/// Bounds of one weight type (see the module documentation).
struct Bounds {
    /// Max abs difference over the last prompt position's logits.
    first_position: f32,
    /// Max abs difference at llama.cpp's two best ids of a step…
    step: f32,
    /// …on at least this fraction of all steps.
    steps_within: f32,
    /// Teacher-forced argmax equal to llama.cpp's greedy id on at least
    /// this many steps of each prompt.
    greedy_agree: usize,
    /// Our own greedy ids (not teacher-forced) must be llama.cpp's.
    free_running: bool,
}

const F32: Bounds = Bounds {
    first_position: 1e-4,
    step: 1e-4,
    steps_within: 1.0,
    greedy_agree: 24,
    free_running: true,
};
const BF16: Bounds = Bounds {
    first_position: 0.2,
    step: 0.1,
    steps_within: 0.9,
    greedy_agree: 20,
    free_running: false,
};
const Q8_0: Bounds = Bounds {
    first_position: 0.2,
    step: 0.25,
    steps_within: 0.9,
    greedy_agree: 20,
    free_running: false,
};
const Q4_K_M: Bounds = Bounds {
    first_position: 0.25,
    step: 0.25,
    steps_within: 0.85,
    greedy_agree: 20,
    free_running: false,
};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gguf")
}

struct Prompt {
    name: String,
    prompt_ids: Vec<u32>,
    greedy_ids: Vec<u32>,
    last_position_logits: Vec<f32>,
    top2: Vec<[(u32, f32); 2]>,
}

fn reference(stem: &str) -> Vec<Prompt> {
    let path = fixtures().join(format!("{stem}.json"));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("reference")).expect("json");
    let ids = |v: &serde_json::Value| -> Vec<u32> {
        v.as_array()
            .expect("ids")
            .iter()
            .map(|x| x.as_u64().expect("id") as u32)
            .collect()
    };
    json["prompts"]
        .as_object()
        .expect("prompts")
        .iter()
        .map(|(name, p)| Prompt {
            name: name.clone(),
            prompt_ids: ids(&p["prompt_ids"]),
            greedy_ids: ids(&p["greedy_ids"]),
            last_position_logits: p["last_position_logits"]
                .as_array()
                .expect("logits")
                .iter()
                .map(|x| x.as_f64().expect("logit") as f32)
                .collect(),
            top2: p["top2_logits_per_step"]
                .as_array()
                .expect("top2")
                .iter()
                .map(|step| {
                    let pair = |i: usize| {
                        (
                            step[i][0].as_u64().expect("id") as u32,
                            step[i][1].as_f64().expect("logit") as f32,
                        )
                    };
                    [pair(0), pair(1)]
                })
                .collect(),
        })
        .collect()
}

fn load(stem: &str) -> Qwen3_5Moe {
    load_model(
        &fixtures().join(format!("{stem}.gguf")),
        &LoadOptions {
            device: Device::Cpu,
            dtype: Some(DType::F32),
            context_tokens: 256,
            skip_memory_check: true,
        },
    )
    .expect("GGUF loads")
}

fn to_vec(logits: &Tensor) -> Vec<f32> {
    logits
        .to_dtype(DType::F32)
        .expect("f32")
        .flatten_all()
        .expect("flat")
        .to_vec1()
        .expect("vec")
}

fn argmax(v: &[f32]) -> u32 {
    let mut best = 0;
    for (i, &x) in v.iter().enumerate() {
        if x > v[best] {
            best = i;
        }
    }
    best as u32
}

/// Runs every prompt of one fixture against its bounds.
fn check(stem: &str, bounds: &Bounds) {
    let model = load(stem);
    let mut steps = 0usize;
    let mut within = 0usize;
    for p in reference(stem) {
        let mut state = model.new_state().expect("state");
        let mut logits = to_vec(&model.forward(&p.prompt_ids, &mut state).expect("prefill"));
        assert_eq!(
            logits.len(),
            p.last_position_logits.len(),
            "{stem}: vocabulary"
        );
        let full = logits
            .iter()
            .zip(&p.last_position_logits)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        assert!(
            full <= bounds.first_position,
            "{stem} {}: last-position logits differ by {full} (bound {})",
            p.name,
            bounds.first_position
        );
        let mut agree = 0;
        for (step, (&expected, top2)) in p.greedy_ids.iter().zip(&p.top2).enumerate() {
            let diff = top2
                .iter()
                .map(|&(id, value)| (logits[id as usize] - value).abs())
                .fold(0f32, f32::max);
            steps += 1;
            if diff <= bounds.step {
                within += 1;
            }
            if argmax(&logits) == expected {
                agree += 1;
            }
            if step + 1 < p.greedy_ids.len() {
                logits = to_vec(&model.forward(&[expected], &mut state).expect("decode"));
            }
        }
        assert!(
            agree >= bounds.greedy_agree,
            "{stem} {}: greedy id equal on {agree} of {} steps (bound {})",
            p.name,
            p.greedy_ids.len(),
            bounds.greedy_agree
        );
        if bounds.free_running {
            let mut state = model.new_state().expect("state");
            let mut logits = to_vec(&model.forward(&p.prompt_ids, &mut state).expect("prefill"));
            let mut ours = Vec::new();
            for _ in 0..p.greedy_ids.len() {
                let next = argmax(&logits);
                ours.push(next);
                logits = to_vec(&model.forward(&[next], &mut state).expect("decode"));
            }
            assert_eq!(
                ours, p.greedy_ids,
                "{stem} {}: free-running greedy ids",
                p.name
            );
        }
    }
    let fraction = within as f32 / steps as f32;
    assert!(
        fraction >= bounds.steps_within,
        "{stem}: {within} of {steps} steps within {} (bound {} of them)",
        bounds.step,
        bounds.steps_within
    );
}

#[test]
fn f32_file_gives_llama_cpp_logits_and_greedy_ids() {
    // The nested (ForConditionalGeneration) form, converted.
    check("small-nested-f32", &F32);
}

#[test]
fn bf16_files_stay_within_llama_cpp_bounds() {
    for stem in ["small-flat-bf16", "tiny-world-bf16"] {
        check(stem, &BF16);
    }
}

#[test]
fn q8_0_file_stays_within_llama_cpp_bounds() {
    check("small-flat-q8_0", &Q8_0);
}

#[test]
fn q4_k_m_files_stay_within_llama_cpp_bounds() {
    for stem in ["small-flat-q4_k_m", "wide-q4_k_m"] {
        check(stem, &Q4_K_M);
    }
}

/// llama.cpp's own Q5_K blocks (the wide Q4_K_M file requantized to
/// Q5_K_M), read by the Q5_K tile kernels, held to the Q4_K_M bounds.
#[test]
fn q5_k_m_file_stays_within_llama_cpp_bounds() {
    check("wide-q5_k_m", &Q4_K_M);
}
