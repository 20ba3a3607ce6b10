//! Names both ways, value transforms, metadata.

use super::metadata::key;
use super::*;
use crate::weights::gguf::{dtype_bytes, dtype_name};

/// Every mapped name converts both ways; names outside the text model
/// have none.
#[test]
fn names_round_trip() {
    for m in TENSORS.iter() {
        let hf = format!("model.layers.7.{}", m.hf);
        let (gguf, _) = gguf_name(&hf).expect("mapped");
        assert_eq!(gguf, format!("blk.7.{}", m.gguf));
        assert_eq!(hf_name(&gguf).map(|(n, _)| n), Some(hf.clone()));
        let released = format!("model.language_model.layers.7.{}", m.hf);
        assert_eq!(gguf_name(&released).map(|(n, _)| n), Some(gguf));
    }
    assert_eq!(
        gguf_name("lm_head.weight").map(|(n, _)| n).as_deref(),
        Some("output.weight")
    );
    assert_eq!(
        gguf_name("model.norm.weight").map(|(n, _)| n).as_deref(),
        Some("output_norm.weight")
    );
    assert!(gguf_name("model.layers.0.self_attn.qkv_proj.weight").is_none());
    assert!(gguf_name("model.visual.blocks.0.attn.qkv.weight").is_none());
    assert_eq!(dtype_name(GgmlDType::Q4K), "Q4_K");
    assert_eq!(dtype_bytes(GgmlDType::Q8_0, 64), 68);
}

/// Value transforms and the value-head reordering invert exactly.
#[test]
fn transforms_invert() -> candle_core::Result<()> {
    let cfg = Config::from_json(
        r#"{"vocab_size": 8, "hidden_size": 4, "num_hidden_layers": 1,
            "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4,
            "linear_num_key_heads": 2, "linear_num_value_heads": 6,
            "linear_key_head_dim": 2, "linear_value_head_dim": 2,
            "num_experts": 2, "num_experts_per_tok": 1, "moe_intermediate_size": 4}"#,
    )
    .map_err(|e| candle_core::Error::Msg(e.to_string()))?;
    let dev = Device::Cpu;
    for m in TENSORS.iter() {
        let shape: Vec<usize> = match m.v_order {
            VOrder::QkvRows => vec![2 * 2 * 2 + 12, 3],
            VOrder::Rows => vec![12, 3],
            VOrder::HeadRows => vec![6],
            VOrder::Cols => vec![3, 12],
            VOrder::None => vec![5],
        };
        let x = Tensor::rand(0.1f32, 0.9, shape.as_slice(), &dev)?;
        let file = to_file_values(&x, m, &cfg, &shape)?;
        let back = from_file_values(&file, m, &cfg, &shape, true)?;
        let diff = (x - &back)?
            .abs()?
            .flatten_all()?
            .max(0)?
            .to_scalar::<f32>()?;
        assert!(diff < 1e-6, "{}: {diff}", m.hf);
    }
    // Grouped [k0v0 k0v1 k0v2 k1v0 k1v1 k1v2] → tiled [k0v0 k1v0 k0v1 …].
    let heads = Tensor::new(&[0f32, 1., 2., 3., 4., 5.], &dev)?;
    let tiled = reorder_v_heads(&heads, VOrder::HeadRows, &cfg, true)?;
    assert_eq!(tiled.to_vec1::<f32>()?, vec![0., 3., 1., 4., 2., 5.]);
    Ok(())
}

/// The rope sections written without `mrope_section` sum to the rotary
/// pairs (within what llama.cpp's rope takes), whatever the head width.
#[test]
fn rope_sections_fit_the_rotary_dims() -> Result<(), LoadError> {
    assert_eq!(default_rope_sections(64), vec![11, 11, 10]);
    assert_eq!(default_rope_sections(4), vec![1, 1, 0]);
    assert_eq!(default_rope_sections(8), vec![2, 1, 1]);
    assert_eq!(default_rope_sections(2), vec![1, 0, 0]);
    let config = |head_dim: usize, sections: &str| {
        Config::from_json(&format!(
            r#"{{"vocab_size": 8, "hidden_size": 4, "num_hidden_layers": 1,
                "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": {head_dim},
                "linear_num_key_heads": 2, "linear_num_value_heads": 2,
                "linear_key_head_dim": 2, "linear_value_head_dim": 2,
                "num_experts": 2, "num_experts_per_tok": 1, "moe_intermediate_size": 4,
                "rope_parameters": {{"rope_type": "default", "rope_theta": 1e7,
                                     "partial_rotary_factor": 0.25 {sections}}}}}"#
        ))
        .map_err(|e| LoadError::InvalidConfig {
            path: "config.json".into(),
            field: "test".into(),
            message: e.to_string(),
        })
    };
    let written = |cfg: &Config| -> Result<Vec<i32>, LoadError> {
        let meta = gguf_metadata(cfg, "t", GgmlDType::F32)?;
        let Some((_, Value::Array(v))) = meta
            .iter()
            .find(|(k, _)| k == &key("rope.dimension_sections"))
        else {
            panic!("no rope sections written");
        };
        Ok(v.iter()
            .map(|x| match x {
                Value::I32(i) => *i,
                other => panic!("section {other:?}"),
            })
            .collect())
    };
    // The tiny world model's 16-wide heads: 4 rotary dims, 2 pairs.
    assert_eq!(written(&config(16, "")?)?, vec![1, 1, 0, 0]);
    // The released model's 256-wide heads: 64 rotary dims.
    assert_eq!(written(&config(256, "")?)?, vec![11, 11, 10, 0]);
    // Sections the config gives are written as given.
    assert_eq!(
        written(&config(16, r#", "mrope_section": [2, 0, 0]"#)?)?,
        vec![2, 0, 0, 0]
    );
    Ok(())
}
