//! `worldloom model generate` on the tiny Qwen3.5-MoE fixture: token ids in,
//! ids and last-position logits out, equal to the `transformers` reference.

use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::{Command, Output};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../worldloom-engine/tests/fixtures/qwen3_5_moe")
}

/// `worldloom model <args…>`.
fn worldloom_model<I: IntoIterator<Item: AsRef<OsStr>>>(args: I) -> Output {
    Command::new(env!("CARGO_BIN_EXE_worldloom"))
        .arg("model")
        .args(args)
        .output()
        .expect("run worldloom")
}

/// The JSON output of `out`, which must be a success.
fn json_output(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("json output")
}

/// The error output of `out`, which must be a failure.
fn error_output(out: &Output) -> String {
    assert!(!out.status.success());
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn reference() -> (Vec<u32>, Vec<u32>, Vec<f32>) {
    let meta: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures().join("reference.json")).expect("reference.json"),
    )
    .expect("json");
    let ids = |k: &str| -> Vec<u32> {
        meta[k]
            .as_array()
            .expect("array")
            .iter()
            .map(|v| v.as_u64().expect("id") as u32)
            .collect()
    };
    let tensors = candle_core::safetensors::load(
        fixtures().join("reference.safetensors"),
        &candle_core::Device::Cpu,
    )
    .expect("reference.safetensors");
    let full = &tensors["logits_full"];
    let rows = full.dim(0).expect("rows");
    let last: Vec<f32> = full
        .get(rows - 1)
        .and_then(|t| t.to_vec1())
        .expect("last row");
    (ids("prompt_ids"), ids("greedy_ids"), last)
}

#[test]
fn generate_json_matches_reference_without_tokenizer() {
    let (prompt, greedy, last_logits) = reference();
    let ids: Vec<String> = prompt.iter().map(u32::to_string).collect();
    for variant in ["flat_per_expert", "nested_stacked_sharded"] {
        let dir = fixtures().join(variant);
        assert!(!dir.join("tokenizer.json").exists());
        let ids = ids.join(",");
        let dir = dir.to_str().expect("utf-8");
        let json = json_output(&worldloom_model([
            "generate",
            "--model",
            dir,
            "--ids",
            &ids,
            "--max-new-tokens",
            "8",
            "--greedy",
            "--json",
        ]));
        let generated: Vec<u32> = json["generated_ids"]
            .as_array()
            .expect("generated_ids")
            .iter()
            .map(|v| v.as_u64().expect("id") as u32)
            .collect();
        assert_eq!(generated, greedy, "{variant}");
        let logits: Vec<f64> = json["prompt_last_logits"]
            .as_array()
            .expect("prompt_last_logits")
            .iter()
            .map(|v| v.as_f64().expect("logit"))
            .collect();
        assert_eq!(logits.len(), last_logits.len());
        let diff = logits
            .iter()
            .zip(&last_logits)
            .map(|(a, b)| (a - f64::from(*b)).abs())
            .fold(0.0, f64::max);
        assert!(diff <= 1e-4, "{variant}: max abs diff {diff}");
    }
}

#[test]
fn generate_reports_bad_model_dir_and_ids() {
    let generate = |model: &str, ids: &str| {
        error_output(&worldloom_model([
            "generate", "--model", model, "--ids", ids, "--greedy",
        ]))
    };
    let err = generate("/nonexistent-model", "1");
    assert!(err.contains("/nonexistent-model/config.json"), "{err}");

    let flat = fixtures().join("flat_per_expert");
    let err = generate(flat.to_str().expect("utf-8"), "1,99999");
    assert!(
        err.contains("99999") && err.contains("vocabulary of 320"),
        "{err}"
    );
}

#[test]
fn info_json_reports_counts_and_memory() {
    let dir = fixtures().join("nested_stacked_sharded");
    let json = json_output(&worldloom_model([
        OsStr::new("info"),
        OsStr::new("--json"),
        dir.as_os_str(),
    ]));
    // 320·64 embed + 320·64 lm_head + norms + 3 DeltaNet + 1 attention + 4 MoE layers.
    assert_eq!(json["parameters_total"], 362_440);
    assert_eq!(json["parameters_active_per_token"], 214_984);
    assert_eq!(json["layer_kinds"][3], "full_attention");
    assert_eq!(json["stored_dtype"], "f32");
    assert_eq!(json["memory"].as_array().expect("rows").len(), 3);
}

/// `model info` reports the CPU kernels this machine runs, and the tile cap
/// moves the quantized path and prefill attention together.
#[test]
fn info_reports_the_cpu_kernels_under_the_tile_cap() {
    let dir = fixtures().join("nested_stacked_sharded");
    let info = |cap: &str| {
        json_output(
            &Command::new(env!("CARGO_BIN_EXE_worldloom"))
                .env("WORLDLOOM_CPU_TILES", cap)
                .args([
                    OsStr::new("model"),
                    OsStr::new("info"),
                    OsStr::new("--json"),
                ])
                .arg(&dir)
                .output()
                .expect("run worldloom"),
        )["cpu_kernels"]
            .clone()
    };
    let off = info("off");
    assert_eq!(off["quantized"], serde_json::Value::Null, "{off}");
    assert_eq!(off["prefill_attention"], serde_json::Value::Null, "{off}");
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        if has!("avx2") && has!("fma") && has!("f16c") {
            let avx2 = info("avx2");
            assert_eq!(avx2["quantized"], "avx2", "{avx2}");
            assert_eq!(avx2["prefill_attention"], "avx2", "{avx2}");
        }
        if has!("avx512f") && has!("avx512bw") && has!("avx512vnni") {
            let best = info("");
            assert_eq!(best["quantized"], "avx512vnni", "{best}");
            assert_eq!(best["prefill_attention"], "avx512", "{best}");
        }
    }
}
