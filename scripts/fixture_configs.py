"""Configuration files shared by the hand-run fixture scripts.

Imported by scripts/make_gguf_fixtures.py, scripts/make_qwen3_5_moe_fixtures.py
and scripts/make_tiny_world_model.py (run from any folder: Python puts the
script's own folder first on the import path). Standard library only, so each
script keeps its own requirements.
"""

from __future__ import annotations


def qwen3_5_moe_text_config(
    *,
    vocab_size: int,
    hidden_size: int,
    num_hidden_layers: int,
    head_dim: int,
    linear_head_dim: int,
    num_experts: int,
    moe_intermediate_size: int,
    shared_expert_intermediate_size: int,
    full_attention_interval: int,
    mrope_section: list[int],
    **more: object,
) -> dict:
    """A Qwen3.5-MoE text config (the `transformers` Qwen3_5MoeTextConfig
    keys) of a tiny test checkpoint.

    Every fixture has 4 query and 2 key/value attention heads, 2 key and 4
    value DeltaNet heads (`linear_head_dim` wide each, kernel 4), 2 experts per
    token, RMSNorm eps 1e-6, SiLU, 4096 positions, untied embeddings and
    rotary embeddings over a quarter of each head (theta 10000). `more` adds
    keys after `tie_word_embeddings`, before `rope_parameters`.
    """
    return dict(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        num_hidden_layers=num_hidden_layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=head_dim,
        linear_num_key_heads=2,
        linear_num_value_heads=4,
        linear_key_head_dim=linear_head_dim,
        linear_value_head_dim=linear_head_dim,
        linear_conv_kernel_dim=4,
        num_experts=num_experts,
        num_experts_per_tok=2,
        moe_intermediate_size=moe_intermediate_size,
        shared_expert_intermediate_size=shared_expert_intermediate_size,
        rms_norm_eps=1e-6,
        hidden_act="silu",
        max_position_embeddings=4096,
        full_attention_interval=full_attention_interval,
        tie_word_embeddings=False,
        **more,
        rope_parameters={
            "rope_type": "default",
            "rope_theta": 10000.0,
            "partial_rotary_factor": 0.25,
            "mrope_section": mrope_section,
            "mrope_interleaved": True,
        },
    )


def qwen_tokenizer_config(model_max_length: int) -> dict:
    """`tokenizer_config.json` of a Qwen-style byte-level BPE: ChatML's
    `<|im_end|>` ends a turn, `<|endoftext|>` pads, no BOS or UNK token."""
    return {
        "tokenizer_class": "Qwen2Tokenizer",
        "model_max_length": model_max_length,
        "bos_token": None,
        "eos_token": "<|im_end|>",
        "pad_token": "<|endoftext|>",
        "unk_token": None,
        "add_bos_token": False,
        "clean_up_tokenization_spaces": False,
        "errors": "replace",
        "split_special_tokens": False,
    }
