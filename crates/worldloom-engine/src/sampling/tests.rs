//! Tests of the sampler.

use super::*;

fn ln(p: &[f32]) -> Vec<f32> {
    p.iter().map(|x| x.ln()).collect()
}

#[test]
fn greedy_is_argmax_with_model_logprob() {
    let logits = [0.5, 3.0, -1.0, 3.0, 2.9];
    let mut s = Sampler::new(0.0, 20, 0.95, 7).expect("valid");
    let t = s.sample(&logits).expect("samples");
    assert_eq!(t.id, 1, "first of the tied maxima");
    let z: f32 = logits.iter().map(|x| x.exp()).sum();
    assert!((t.logprob - (3.0f32.exp() / z).ln()).abs() < 1e-6);
    assert_eq!(t.sampling_logprob, 0.0);
    assert_eq!(
        argmax(&[f32::NAN, -2.0, f32::NEG_INFINITY]).expect("finite"),
        1
    );
    assert!(argmax(&[f32::NAN]).is_err());
}

#[test]
fn top_k_keeps_the_k_largest_renormalised() {
    // probabilities 0.4 0.3 0.2 0.1 → top-2 keeps 0.4 and 0.3 → 4/7, 3/7
    let logits = ln(&[0.1, 0.4, 0.2, 0.3]);
    let d = candidate_distribution(&logits, 1.0, 2, 1.0).expect("distribution");
    assert_eq!(d.iter().map(|x| x.0).collect::<Vec<_>>(), vec![1, 3]);
    assert!((d[0].1 - 4.0 / 7.0).abs() < 1e-6);
    assert!((d[1].1 - 3.0 / 7.0).abs() < 1e-6);
}

#[test]
fn top_p_keeps_the_smallest_set_reaching_the_mass() {
    let logits = ln(&[0.05, 0.5, 0.15, 0.3]);
    // 0.5 < 0.7, 0.5 + 0.3 = 0.8 ≥ 0.7 → {1, 3}, renormalised 0.625 / 0.375
    let d = candidate_distribution(&logits, 1.0, 0, 0.7).expect("distribution");
    assert_eq!(d.iter().map(|x| x.0).collect::<Vec<_>>(), vec![1, 3]);
    assert!((d[0].1 - 0.625).abs() < 1e-6);
    assert!((d[1].1 - 0.375).abs() < 1e-6);
    // 0.85 needs the third token: {1, 3, 2}
    let d = candidate_distribution(&logits, 1.0, 0, 0.85).expect("distribution");
    assert_eq!(d.len(), 3);
    assert!((d[2].1 - 0.15 / 0.95).abs() < 1e-6);
    // a tiny top_p still keeps the most likely token
    let d = candidate_distribution(&logits, 1.0, 0, 0.01).expect("distribution");
    assert_eq!(d, vec![(1, 1.0)]);
}

#[test]
fn temperature_scales_before_filtering() {
    // logits 0, ln 3: at temperature 1 → 0.25 / 0.75; at temperature 2 → 1 : √3
    let logits = [0.0, 3.0f32.ln()];
    let d = candidate_distribution(&logits, 2.0, 0, 1.0).expect("distribution");
    let s3 = 3.0f32.sqrt();
    assert_eq!(d[0].0, 1);
    assert!((d[0].1 - s3 / (1.0 + s3)).abs() < 1e-6);
    assert!((d[1].1 - 1.0 / (1.0 + s3)).abs() < 1e-6);
}

#[test]
fn seeded_sampling_is_reproducible_and_follows_the_distribution() {
    let logits = ln(&[0.1, 0.6, 0.3]);
    let draw = |seed| {
        let mut s = Sampler::new(1.0, 0, 1.0, seed).expect("valid");
        (0..2000)
            .map(|_| s.sample(&logits).expect("samples").id)
            .collect::<Vec<_>>()
    };
    let a = draw(42);
    assert_eq!(a, draw(42));
    assert_ne!(a, draw(43));
    let share = |id| a.iter().filter(|&&x| x == id).count() as f32 / a.len() as f32;
    assert!((share(1) - 0.6).abs() < 0.05, "{}", share(1));
    assert!((share(2) - 0.3).abs() < 0.05, "{}", share(2));
    assert!((share(0) - 0.1).abs() < 0.04, "{}", share(0));
}

#[test]
fn sampled_logprobs_are_reported_under_both_distributions() {
    let logits = ln(&[0.5, 0.3, 0.2]);
    let mut s = Sampler::new(1.0, 2, 1.0, 1).expect("valid");
    for _ in 0..50 {
        let t = s.sample(&logits).expect("samples");
        assert!(t.id < 2, "top-2 excludes id 2");
        let model_p = [0.5f32, 0.3][t.id as usize];
        let sampling_p = [0.5f32 / 0.8, 0.3 / 0.8][t.id as usize];
        assert!((t.logprob - model_p.ln()).abs() < 1e-5);
        assert!((t.sampling_logprob - sampling_p.ln()).abs() < 1e-5);
    }
}

#[test]
fn invalid_parameters_are_refused() {
    assert!(Sampler::new(-0.1, 0, 1.0, 0).is_err());
    assert!(Sampler::new(f32::NAN, 0, 1.0, 0).is_err());
    assert!(Sampler::new(1.0, 0, 0.0, 0).is_err());
    assert!(Sampler::new(1.0, 0, 1.5, 0).is_err());
    let mut s = Sampler::new(1.0, 0, 1.0, 0).expect("valid");
    assert!(matches!(s.sample(&[]), Err(SamplingError::BadLogits(_))));
}

#[test]
fn generation_config_overrides_the_model_card_defaults() {
    let c =
        GenerationConfig::from_json(r#"{"temperature": 0.7, "top_k": 40, "eos_token_id": [5, 9]}"#)
            .expect("parses");
    let p = c.default_params();
    assert_eq!((p.temperature, p.top_p, p.top_k), (0.7, 0.95, 40));
    assert_eq!(c.eos_token_ids, vec![5, 9]);
    let greedy =
        GenerationConfig::from_json(r#"{"do_sample": false, "eos_token_id": 3}"#).expect("parses");
    assert_eq!(greedy.default_params().temperature, 0.0);
    assert_eq!(greedy.eos_token_ids, vec![3]);
    let err = GenerationConfig::from_json(r#"{"top_k": "many"}"#).expect_err("bad field");
    assert!(err.contains("top_k"), "{err}");
    let missing =
        GenerationConfig::from_dir(Path::new("/nonexistent")).expect("missing file is fine");
    assert_eq!(missing.default_params(), GenerationParams::default());
}

#[test]
fn tiny_model_generation_config_is_read() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/tiny-world-model");
    let c = GenerationConfig::from_dir(&dir).expect("reads");
    assert_eq!(c.temperature, Some(0.6));
    assert_eq!(c.top_k, Some(20));
    assert_eq!(c.eos_token_ids, vec![1021, 1019]);
}

#[test]
fn penalties_change_the_distribution_over_generated_tokens() {
    // probabilities 0.5 0.3 0.2; token 0 generated twice, token 2 once
    let logits = ln(&[0.5, 0.3, 0.2]);
    let mut counts = HashMap::new();
    counts.insert(0u32, 2u32);
    counts.insert(2u32, 1u32);
    let p = Penalties {
        presence: 0.5,
        frequency: 0.25,
        repetition: 1.0,
    };
    let out = p.apply(&logits, &counts);
    assert!((out[0] - (logits[0] - 0.5 - 0.5)).abs() < 1e-6);
    assert_eq!(out[1], logits[1]);
    assert!((out[2] - (logits[2] - 0.5 - 0.25)).abs() < 1e-6);
    // repetition: a positive logit is divided, a negative one multiplied
    let r = Penalties {
        repetition: 2.0,
        ..Penalties::default()
    };
    let out = r.apply(&[3.0, -1.0, 1.0], &HashMap::from([(0, 1), (1, 1)]));
    assert_eq!(out, vec![1.5, -2.0, 1.0]);

    // Through the sampler: greedy picks 0 first, then the penalty moves it
    // below token 1 (0.5 → e^-1.5·… < 0.3 after a 1.0 presence penalty).
    let mut s = Sampler::new(0.0, 0, 1.0, 1)
        .expect("valid")
        .with_penalties(Penalties {
            presence: 1.0,
            ..Penalties::default()
        })
        .expect("valid");
    assert_eq!(s.sample(&logits).expect("samples").id, 0);
    let second = s.sample(&logits).expect("samples");
    assert_eq!(second.id, 1);
    // the reported logprob stays the model's own
    assert!((second.logprob - 0.3f32.ln()).abs() < 1e-5);
    // and the sampling distribution reflects the penalty
    let mut t = Sampler::new(1.0, 0, 1.0, 1)
        .expect("valid")
        .with_penalties(Penalties {
            frequency: 1.0,
            ..Penalties::default()
        })
        .expect("valid");
    let before = t.distribution(&logits).expect("ok").expect("sampled");
    assert!((before[0].1 - 0.5).abs() < 1e-6);
    let first = t.sample(&logits).expect("samples").id;
    let after = t.distribution(&logits).expect("ok").expect("sampled");
    let p_first = after.iter().find(|x| x.0 == first).expect("kept").1;
    let p_before = before.iter().find(|x| x.0 == first).expect("kept").1;
    assert!(p_first < p_before, "{p_first} < {p_before}");
    assert!(
        Sampler::new(1.0, 0, 1.0, 1)
            .expect("valid")
            .with_penalties(Penalties {
                repetition: 0.0,
                ..Penalties::default()
            })
            .is_err()
    );
}

#[test]
fn min_p_drops_tokens_below_a_fraction_of_the_best() {
    // 0.5 0.3 0.15 0.05; min_p 0.25 → threshold 0.125 keeps 0, 1, 2
    let logits = ln(&[0.5, 0.3, 0.15, 0.05]);
    let d = filtered_distribution(&logits, 1.0, 0.25, 0, 1.0).expect("distribution");
    assert_eq!(d.iter().map(|x| x.0).collect::<Vec<_>>(), vec![0, 1, 2]);
    assert!((d[0].1 - 0.5 / 0.95).abs() < 1e-5);
    let d = filtered_distribution(&logits, 1.0, 0.7, 0, 1.0).expect("distribution");
    assert_eq!(d, vec![(0, 1.0)]);
    assert!(
        Sampler::new(1.0, 0, 1.0, 1)
            .expect("valid")
            .with_min_p(1.5)
            .is_err()
    );
}

#[test]
fn top_logprobs_are_the_model_distribution_s_best() {
    let logits = ln(&[0.1, 0.4, 0.2, 0.3]);
    let top = top_logprobs(&logits, 2).expect("finite");
    assert_eq!(top.iter().map(|x| x.0).collect::<Vec<_>>(), vec![1, 3]);
    assert!((top[0].1 - 0.4f32.ln()).abs() < 1e-5);
    assert!((top[1].1 - 0.3f32.ln()).abs() < 1e-5);
    assert_eq!(top_logprobs(&logits, 9).expect("finite").len(), 4);
    assert!(top_logprobs(&logits, 0).expect("finite").is_empty());
}

/// Selecting the top k before sorting gives exactly the list a full
/// sort gives (same ids, same order, same probabilities, ties towards
/// the lower id), with min-p and top-p on top.
#[test]
fn partial_selection_equals_a_full_sort() {
    let mut seed = 0x9e37_79b9_u64;
    let logits: Vec<f32> = (0..5000)
        .map(|i| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            if i % 97 == 0 {
                f32::NEG_INFINITY
            } else {
                // Coarse values: many exact ties.
                (seed % 400) as f32 / 40.0 - 5.0
            }
        })
        .collect();
    let full_sort = |temperature: f32, min_p: f32, top_k: usize, top_p: f32| {
        let mut order: Vec<(u32, f32)> = logits
            .iter()
            .enumerate()
            .filter(|(_, x)| x.is_finite())
            .map(|(i, &x)| (i as u32, x / temperature))
            .collect();
        order.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        if min_p > 0.0 {
            let floor = order[0].1 + min_p.ln();
            order.retain(|&(_, x)| x >= floor);
        }
        if top_k > 0 && top_k < order.len() {
            order.truncate(top_k);
        }
        // The top-p tail over a sorted list is shared; what this
        // reference checks is the ranking and cutting before it.
        top_p_renormalised(&order, top_p)
    };
    for &(temperature, min_p, top_k, top_p) in &[
        (1.0, 0.0, 20, 0.95),
        (0.7, 0.0, 1, 1.0),
        (1.3, 0.05, 50, 0.9),
        (1.0, 0.0, 4999, 1.0),
        (0.6, 0.0, 0, 0.8),
    ] {
        let got =
            filtered_distribution(&logits, temperature, min_p, top_k, top_p).expect("distribution");
        assert_eq!(got, full_sort(temperature, min_p, top_k, top_p));
    }
}

/// Logits with ties, non-finite values and a spread of magnitudes.
fn awkward_logits(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|i| match i % 97 {
            3 => f32::NEG_INFINITY,
            5 => f32::NAN,
            7 => f32::INFINITY,
            11 | 13 => 4.25, // ties among the best
            _ => (rng.random::<f32>() - 0.5) * 12.0,
        })
        .collect()
}

/// Sampling from a logits tensor (the candidates selected by the fused
/// op where the logits are, here its CPU implementation) picks the
/// same tokens with the same seed as sampling from the host vector, for
/// greedy, temperature, top-k, top-p and min-p, and falls back to the
/// host path (same tokens) where it cannot select on the device.
#[test]
fn tensor_sampling_equals_host_sampling() {
    let configs: [(f32, usize, f32, f32, Penalties); 7] = [
        (0.0, 0, 1.0, 0.0, Penalties::default()),
        (0.6, 20, 0.95, 0.0, Penalties::default()),
        (1.0, 5, 1.0, 0.0, Penalties::default()),
        (1.3, 64, 0.5, 0.05, Penalties::default()),
        (0.7, 1, 1.0, 0.0, Penalties::default()),
        (0.8, 0, 0.9, 0.0, Penalties::default()),
        (
            0.9,
            20,
            0.9,
            0.0,
            Penalties {
                presence: 0.5,
                frequency: 0.2,
                repetition: 1.1,
            },
        ),
    ];
    for (c, &(temperature, top_k, top_p, min_p, penalties)) in configs.iter().enumerate() {
        let make = || {
            Sampler::new(temperature, top_k, top_p, 42 + c as u64)
                .and_then(|s| s.with_min_p(min_p))
                .and_then(|s| s.with_penalties(penalties))
                .expect("sampler")
        };
        let (mut host, mut device) = (make(), make());
        for step in 0..40 {
            let logits = awkward_logits(5000, step);
            let tensor = Tensor::new(logits.as_slice(), &candle_core::Device::Cpu).expect("tensor");
            let want = host.sample(&logits).expect("host");
            let got = device.sample_selected(&tensor, true).expect("tensor");
            assert_eq!(got.id, want.id, "config {c} step {step}");
            assert_eq!(got.sampling_logprob, want.sampling_logprob, "config {c}");
            assert!(
                (got.logprob - want.logprob).abs() <= 1e-5,
                "config {c} step {step}: {} vs {}",
                got.logprob,
                want.logprob
            );
        }
    }
    // Greedy picks the lower id of a tie among the best, skipping
    // NaN and +inf.
    let mut greedy = Sampler::new(0.0, 0, 1.0, 0).expect("greedy");
    let logits = Tensor::new(
        &[1.0f32, f32::NAN, 3.0, f32::INFINITY, 3.0],
        &candle_core::Device::Cpu,
    )
    .expect("tensor");
    assert_eq!(greedy.sample_selected(&logits, true).expect("sample").id, 2);
    let none =
        Tensor::new(&[f32::NAN, f32::NEG_INFINITY], &candle_core::Device::Cpu).expect("tensor");
    assert!(greedy.sample_selected(&none, true).is_err());
    assert!(greedy.sample_tensor(&none).is_err());
}

/// The top alternatives from a tensor are the host's, ids and order
/// exactly, log-probabilities to 1e-5.
#[test]
fn tensor_top_logprobs_equal_host_top_logprobs() {
    for n in [1, 5, 20, 64, 100] {
        let logits = awkward_logits(3000, n as u64);
        let tensor = Tensor::new(logits.as_slice(), &candle_core::Device::Cpu).expect("tensor");
        let want = top_logprobs(&logits, n).expect("host");
        let got = top_logprobs_selected(&tensor, n, true).expect("tensor");
        assert_eq!(top_logprobs_tensor(&tensor, n).expect("host"), want);
        assert_eq!(got.len(), want.len());
        for ((gi, gl), (wi, wl)) in got.iter().zip(&want) {
            assert_eq!(gi, wi, "n={n}");
            assert!((gl - wl).abs() <= 1e-5, "n={n}: {gl} vs {wl}");
        }
    }
}
