#!/usr/bin/env python3
"""Builds assets/tiny-world-model/: a tiny Qwen3.5-MoE checkpoint with random
weights and a real byte-level BPE tokenizer and chat template.

The weights are random, so the model writes gibberish; the directory exists to
exercise the full local path (tokenizer, chat template, model, sampling,
streaming, snapshots) end to end in tests, in a few hundred kilobytes.

Requirements (PyPI): numpy, safetensors, tokenizers.
    python3 -m pip install numpy safetensors tokenizers
    python3 scripts/make_tiny_world_model.py [OUT_DIR]

Everything is seeded: running it twice gives the same files.
"""

import json
import random
import sys
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from tokenizers import AddedToken

from fixture_configs import qwen_tokenizer_config

SEED = 20261129
VOCAB_SIZE = 1024

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
# Reasoning tags are added tokens that decoding keeps (not "special"), as in
# the Qwen vocabularies, so a streaming detokeniser sees them as text.
THINK_TOKENS = ["<think>", "</think>"]

CONFIG = {
    "architectures": ["Qwen3_5MoeForCausalLM"],
    "model_type": "qwen3_5_moe_text",
    "vocab_size": None,  # filled with the tokenizer's size
    "hidden_size": 32,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "linear_num_key_heads": 2,
    "linear_num_value_heads": 4,
    "linear_key_head_dim": 8,
    "linear_value_head_dim": 8,
    "linear_conv_kernel_dim": 4,
    "num_experts": 4,
    "num_experts_per_tok": 2,
    "moe_intermediate_size": 16,
    "shared_expert_intermediate_size": 16,
    "rms_norm_eps": 1e-6,
    "hidden_act": "silu",
    "attention_bias": False,
    "tie_word_embeddings": False,
    "full_attention_interval": 4,
    "layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention"],
    "rope_parameters": {
        "rope_type": "default",
        "rope_theta": 10000000.0,
        "partial_rotary_factor": 0.25,
    },
    "max_position_embeddings": 4096,
    "torch_dtype": "float32",
    "eos_token_id": None,  # filled with <|im_end|>'s id
    "bos_token_id": None,
}

CHAT_TEMPLATE = """\
{#- Worldloom tiny world model: ChatML turns, optional reasoning block. -#}
{%- for message in messages %}
    {%- if message.role not in ["system", "user", "assistant"] %}
        {{- raise_exception("unsupported role: " ~ message.role) }}
    {%- endif %}
    {%- set text = message.content %}
    {%- if message.role == "assistant" and "</think>" in text %}
        {#- History keeps answers only: reasoning of earlier turns is dropped. -#}
        {%- set text = text.split("</think>")[-1].lstrip("\\n") %}
    {%- endif %}
    {{- "<|im_start|>" ~ message.role ~ "\\n" ~ text ~ "<|im_end|>\\n" }}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- "<|im_start|>assistant\\n" }}
    {%- if enable_thinking is defined and enable_thinking is false %}
        {{- "<think>\\n\\n</think>\\n\\n" }}
    {%- else %}
        {{- "<think>\\n" }}
    {%- endif %}
{%- endif %}
"""

README = """\
# tiny-world-model

A tiny checkpoint of Worldloom's own making, in the Hugging Face layout of a
`qwen3_5_moe` (Qwen3.5-MoE, flat ForCausalLM form) model directory:

| file | what |
|---|---|
| `config.json` | hidden 32, 4 layers (3 Gated DeltaNet + 1 gated attention), 4 experts top-2, vocab = tokenizer size |
| `model.safetensors` | **random** f32 weights (seeded), Hugging Face tensor names |
| `tokenizer.json` | a byte-level BPE of {vocab} tokens trained on generated sample text |
| `tokenizer_config.json` | special tokens and the tokenizer class |
| `chat_template.jinja` | a ChatML-style template: system/user/assistant turns, generation prompt, `enable_thinking` opening `<think>` |
| `generation_config.json` | sampling defaults (temperature 0.6, top-p 0.95, top-k 20) and end-of-turn ids |

The weights are random: the model's output is gibberish. The directory exists
to exercise the whole local path (tokenizer, chat template, model, sampling,
streaming, state snapshots) end to end, for example:

    worldloom step samples/web/agentlab_larkmail-reply_6steps.json --turn 1 --model assets/tiny-world-model

Regenerate (seeded, so the files come out the same) with:

    python3 -m pip install numpy safetensors tokenizers
    python3 scripts/make_tiny_world_model.py
"""


def sample_corpus(rng: random.Random) -> list[str]:
    """Generated text in the shapes a world model reads and writes."""
    words = (
        "the a an of to in is on for with file page button click type scroll open close "
        "search result results terminal output error command directory list user agent state "
        "observation action next previous menu settings save cancel submit login password name "
        "email message inbox reply send cart add item price total checkout window text field "
        "link image heading paragraph row column table tree node value label focused selected "
        "enabled visible hidden true false none yes no ok done ready loading"
    ).split()
    roles = ["button", "link", "textbox", "heading", "StaticText", "checkbox", "combobox", "menuitem"]
    tags = ["div", "span", "a", "button", "input", "li", "ul", "p", "h1", "h2", "form", "label"]
    commands = ["ls -la", "cat README.md", "pwd", "git status", "python3 main.py", "echo hello", "cd src"]
    extra = ["café", "naïve", "déjà vu", "Zürich", "東京", "数据", "🙂", "→", "—", "…", "ü", "ß"]

    def sentence(n: int) -> str:
        return " ".join(rng.choice(words) for _ in range(n))

    texts = []
    for _ in range(1500):
        kind = rng.randrange(6)
        if kind == 0:
            lines = [f"[{rng.randrange(1, 400)}] {rng.choice(roles)} '{sentence(rng.randrange(1, 4))}'"
                     for _ in range(rng.randrange(2, 8))]
            body = "\n".join(lines)
        elif kind == 1:
            t = rng.choice(tags)
            body = f'<{t} id="{rng.choice(words)}" class="{rng.choice(words)}">{sentence(4)}</{t}>'
        elif kind == 2:
            body = f"$ {rng.choice(commands)}\n{sentence(rng.randrange(3, 10))}\n"
        elif kind == 3:
            body = json.dumps({"tool": rng.choice(words), "result": sentence(5), "ok": rng.random() < 0.5})
        elif kind == 4:
            body = f"{sentence(8)} {rng.choice(extra)} {sentence(4)}."
        else:
            body = f'<node index="{rng.randrange(30)}" text="{sentence(2)}" resource-id="com.app:id/{rng.choice(words)}" bounds="[0,{rng.randrange(2000)}][1080,{rng.randrange(2400)}]"/>'
        reasoning = sentence(rng.randrange(5, 15))
        texts.append(
            f"<think>\n{reasoning}\n</think>\n\n<predicted_observation>\n{body}\n</predicted_observation>"
        )
        texts.append(f"Action: {sentence(6)}\nPredict the next observation.")
    return texts


def train_bpe(texts, vocab_size: int, pre_tokenizer) -> Tokenizer:
    """A byte-level BPE of `vocab_size` tokens in all, trained on `texts`
    after `pre_tokenizer`, with the chat template's special tokens (added,
    special) and the reasoning tags (added, kept when decoding)."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizer
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size - len(SPECIAL_TOKENS) - len(THINK_TOKENS),
        min_frequency=2,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)
    tokenizer.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS])
    tokenizer.add_tokens([AddedToken(t, special=False, normalized=False) for t in THINK_TOKENS])
    return tokenizer


def train_tokenizer(rng: random.Random) -> Tokenizer:
    return train_bpe(
        sample_corpus(rng), VOCAB_SIZE, pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    )


def random_weights(config: dict, np_rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Every tensor random (default initialisation would hide mistakes)."""
    h = config["hidden_size"]
    v = config["vocab_size"]
    nh, kvh, hd = config["num_attention_heads"], config["num_key_value_heads"], config["head_dim"]
    n_k, n_v = config["linear_num_key_heads"], config["linear_num_value_heads"]
    d_k, d_v = config["linear_key_head_dim"], config["linear_value_head_dim"]
    kernel = config["linear_conv_kernel_dim"]
    e, i, i_s = config["num_experts"], config["moe_intermediate_size"], config["shared_expert_intermediate_size"]
    conv_dim = 2 * n_k * d_k + n_v * d_v

    def mat(*shape, scale=None):
        fan_in = shape[-1]
        s = scale if scale is not None else 1.0 / np.sqrt(fan_in)
        return (np_rng.standard_normal(shape) * s).astype(np.float32)

    def norm(n):
        return (np_rng.standard_normal(n) * 0.1).astype(np.float32)

    w = {
        "model.embed_tokens.weight": mat(v, h, scale=1.0),
        "model.norm.weight": norm(h),
        "lm_head.weight": mat(v, h),
    }
    for layer, kind in enumerate(config["layer_types"]):
        p = f"model.layers.{layer}."
        w[p + "input_layernorm.weight"] = norm(h)
        w[p + "post_attention_layernorm.weight"] = norm(h)
        if kind == "full_attention":
            a = p + "self_attn."
            w[a + "q_proj.weight"] = mat(nh * hd * 2, h)
            w[a + "k_proj.weight"] = mat(kvh * hd, h)
            w[a + "v_proj.weight"] = mat(kvh * hd, h)
            w[a + "o_proj.weight"] = mat(h, nh * hd)
            w[a + "q_norm.weight"] = norm(hd)
            w[a + "k_norm.weight"] = norm(hd)
        else:
            a = p + "linear_attn."
            w[a + "in_proj_qkv.weight"] = mat(conv_dim, h)
            w[a + "in_proj_z.weight"] = mat(n_v * d_v, h)
            w[a + "in_proj_b.weight"] = mat(n_v, h)
            w[a + "in_proj_a.weight"] = mat(n_v, h)
            w[a + "conv1d.weight"] = mat(conv_dim, 1, kernel, scale=0.5)
            w[a + "A_log"] = (np_rng.uniform(-1.0, 1.0, n_v)).astype(np.float32)
            w[a + "dt_bias"] = (np_rng.standard_normal(n_v) * 0.5).astype(np.float32)
            w[a + "norm.weight"] = (1.0 + np_rng.standard_normal(d_v) * 0.1).astype(np.float32)
            w[a + "out_proj.weight"] = mat(h, n_v * d_v)
        m = p + "mlp."
        w[m + "gate.weight"] = mat(e, h)
        for x in range(e):
            w[m + f"experts.{x}.gate_proj.weight"] = mat(i, h)
            w[m + f"experts.{x}.up_proj.weight"] = mat(i, h)
            w[m + f"experts.{x}.down_proj.weight"] = mat(h, i)
        w[m + "shared_expert.gate_proj.weight"] = mat(i_s, h)
        w[m + "shared_expert.up_proj.weight"] = mat(i_s, h)
        w[m + "shared_expert.down_proj.weight"] = mat(h, i_s)
        w[m + "shared_expert_gate.weight"] = mat(1, h)
    return w


def main() -> None:
    root = Path(__file__).resolve().parent.parent
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else root / "assets" / "tiny-world-model"
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(SEED)

    tokenizer = train_tokenizer(rng)
    tokenizer.save(str(out / "tokenizer.json"))
    ids = {t: tokenizer.token_to_id(t) for t in SPECIAL_TOKENS + THINK_TOKENS}
    vocab = tokenizer.get_vocab_size(with_added_tokens=True)

    config = dict(CONFIG)
    config["vocab_size"] = vocab
    config["eos_token_id"] = ids["<|im_end|>"]
    config["bos_token_id"] = ids["<|endoftext|>"]
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")

    (out / "chat_template.jinja").write_text(CHAT_TEMPLATE)
    tokenizer_config = qwen_tokenizer_config(CONFIG["max_position_embeddings"])
    (out / "tokenizer_config.json").write_text(json.dumps(tokenizer_config, indent=2) + "\n")
    generation_config = {
        "do_sample": True,
        "temperature": 0.6,
        "top_p": 0.95,
        "top_k": 20,
        "eos_token_id": [ids["<|im_end|>"], ids["<|endoftext|>"]],
        "pad_token_id": ids["<|endoftext|>"],
    }
    (out / "generation_config.json").write_text(json.dumps(generation_config, indent=2) + "\n")

    weights = random_weights(config, np.random.default_rng(SEED))
    save_file(weights, str(out / "model.safetensors"), metadata={"format": "pt"})
    (out / "README.md").write_text(README.replace("{vocab}", str(vocab)))

    tag = tokenizer.encode("<predicted_observation>\n</predicted_observation>").tokens
    total = sum(a.size for a in weights.values())
    print(f"wrote {out}: vocab {vocab}, {total} parameters, special ids {ids}, tags -> {tag}")


if __name__ == "__main__":
    main()
