#!/usr/bin/env python3
"""Builds the Qwen3.5-MoE parity fixtures of worldloom-engine.

Run by hand (not in CI), on the CPU, with the reference implementation:

    python3 -m venv .venv && .venv/bin/pip install torch transformers==5.24.0 safetensors
    .venv/bin/python scripts/make_qwen3_5_moe_fixtures.py

It writes to crates/worldloom-engine/tests/fixtures/qwen3_5_moe/:

- one tiny random checkpoint (hidden 64, 4 layers = 3 Gated DeltaNet + 1 gated
  attention, 8 experts top-2, vocab 320, f32), saved twice:
  - `flat_per_expert/`: flat ForCausalLM `config.json` (layer types from
    `full_attention_interval`, RoPE in `rope_parameters`), `model.` names,
    one tensor per expert, a single `model.safetensors`;
  - `nested_stacked_sharded/`: the released ForConditionalGeneration form
    (`text_config`, `vision_config`, explicit `layer_types`),
    `model.language_model.` names, stacked expert tensors, two shards with
    `model.safetensors.index.json`, plus `model.visual.*` and `mtp.*` tensors
    a text model must ignore;
- `reference.safetensors` and `reference.json`: the reference outputs of the
  `transformers` model (see `reference()`).

Every tensor is drawn from a seeded generator: default initialisation (zero
norm weights, tiny matrices) would hide mistakes such as using w instead of
1 + w in a zero-centred norm.
"""

import json
import shutil
from pathlib import Path

import safetensors.torch
import torch
import transformers
from transformers import Qwen3_5MoeForCausalLM, Qwen3_5MoeTextConfig

from fixture_configs import qwen3_5_moe_text_config

SEED = 20_260_601
OUT = Path(__file__).resolve().parent.parent / "crates/worldloom-engine/tests/fixtures/qwen3_5_moe"

TEXT_CONFIG = qwen3_5_moe_text_config(
    vocab_size=320, hidden_size=64, num_hidden_layers=4, full_attention_interval=4,
    head_dim=32, linear_head_dim=16, mrope_section=[2, 1, 1],
    num_experts=8, moe_intermediate_size=32, shared_expert_intermediate_size=48,
)

PROMPT_TOKENS = 20
LONG_TOKENS = 150  # three 64-token chunks of the DeltaNet prefill
GREEDY_TOKENS = 8
# Cached feeding of the prompt: a 8-token prefill, a 6-token chunk, then one
# token at a time.
CHUNK_PLAN = [8, 6, 1, 1, 1, 1, 1, 1]


def randomise(model: torch.nn.Module, generator: torch.Generator) -> None:
    """Overwrites every parameter with seeded random values of sensible scale."""
    with torch.no_grad():
        for name, param in model.named_parameters():
            shape = param.shape
            if name.endswith("A_log"):
                value = torch.randn(shape, generator=generator) * 0.5 - 1.0
            elif name.endswith("dt_bias"):
                value = torch.randn(shape, generator=generator) * 0.5
            elif name.endswith("conv1d.weight"):
                value = torch.randn(shape, generator=generator) * 0.5
            elif param.dim() == 1:
                # Norm weights: zero-centred ones become 1 + w, the gated
                # DeltaNet norm uses w as is.
                value = torch.randn(shape, generator=generator) * 0.3
                if name.endswith("linear_attn.norm.weight"):
                    value = value + 1.0
            elif name.endswith("embed_tokens.weight"):
                value = torch.randn(shape, generator=generator)
            else:
                fan_in = shape[-1]
                value = torch.randn(shape, generator=generator) * (1.5 / fan_in**0.5)
            param.copy_(value.to(param.dtype))


def per_expert(state: dict[str, torch.Tensor], intermediate: int) -> dict[str, torch.Tensor]:
    """Splits stacked expert tensors into `experts.{e}.{gate,up,down}_proj.weight`."""
    out = {}
    for name, tensor in state.items():
        if name.endswith("mlp.experts.gate_up_proj"):
            base = name[: -len("gate_up_proj")]
            for e in range(tensor.shape[0]):
                out[f"{base}{e}.gate_proj.weight"] = tensor[e, :intermediate].clone()
                out[f"{base}{e}.up_proj.weight"] = tensor[e, intermediate:].clone()
        elif name.endswith("mlp.experts.down_proj"):
            base = name[: -len("down_proj")]
            for e in range(tensor.shape[0]):
                out[f"{base}{e}.down_proj.weight"] = tensor[e].clone()
        else:
            out[name] = tensor.clone()
    return out


def write_flat(state: dict[str, torch.Tensor], config: Qwen3_5MoeTextConfig, directory: Path) -> None:
    directory.mkdir(parents=True)
    cfg = config.to_dict()
    cfg["architectures"] = ["Qwen3_5MoeForCausalLM"]
    cfg.pop("layer_types", None)  # exercise full_attention_interval
    (directory / "config.json").write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    tensors = per_expert(state, TEXT_CONFIG["moe_intermediate_size"])
    safetensors.torch.save_file(tensors, directory / "model.safetensors", metadata={"format": "pt"})


def write_nested(state: dict[str, torch.Tensor], config: Qwen3_5MoeTextConfig, generator: torch.Generator, directory: Path) -> None:
    directory.mkdir(parents=True)
    text = config.to_dict()
    text["model_type"] = "qwen3_5_moe_text"
    cfg = {
        "architectures": ["Qwen3_5MoeForConditionalGeneration"],
        "model_type": "qwen3_5_moe",
        "text_config": text,
        "vision_config": {"model_type": "qwen3_5_moe", "depth": 1, "hidden_size": 16, "out_hidden_size": 64},
        "tie_word_embeddings": False,
        "image_token_id": 300,
        "video_token_id": 301,
    }
    (directory / "config.json").write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    renamed = {}
    for name, tensor in state.items():
        if name.startswith("model."):
            renamed["model.language_model." + name[len("model."):]] = tensor.clone()
        else:
            renamed[name] = tensor.clone()
    # Tensors of the vision tower and the multi-token-prediction head, which
    # a text-only model must not read.
    renamed["model.visual.patch_embed.proj.weight"] = torch.randn((16, 3, 2, 2, 2), generator=generator)
    renamed["mtp.fc.weight"] = torch.randn((64, 128), generator=generator)
    names = sorted(renamed)
    half = len(names) // 2
    shards = {"model-00001-of-00002.safetensors": names[:half], "model-00002-of-00002.safetensors": names[half:]}
    weight_map = {}
    total = 0
    for file, keys in shards.items():
        part = {k: renamed[k] for k in keys}
        safetensors.torch.save_file(part, directory / file, metadata={"format": "pt"})
        for k in keys:
            weight_map[k] = file
            total += renamed[k].numel() * renamed[k].element_size()
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (directory / "model.safetensors.index.json").write_text(json.dumps(index, indent=2, sort_keys=True) + "\n")


@torch.no_grad()
def reference(model: Qwen3_5MoeForCausalLM, generator: torch.Generator) -> tuple[dict, dict]:
    """Reference outputs.

    - `logits_full` [20, V]: one forward over the 20-token prompt.
    - `long_logits` [150, V]: one forward over a 150-token prompt (three
      chunks of the chunked DeltaNet prefill).
    - `chunked_logits` [8, V]: the prompt fed with a cache following
      CHUNK_PLAN, the last-position logits of each step.
    - `greedy_ids`: 8 tokens of `generate(do_sample=False)` after the prompt.
    - `logits_full_bf16` [20, V]: the same forward with the model in bf16.
    """
    vocab = TEXT_CONFIG["vocab_size"]
    prompt = torch.randint(0, vocab, (1, PROMPT_TOKENS), generator=generator)
    long_ids = torch.randint(0, vocab, (1, LONG_TOKENS), generator=generator)

    logits_full = model(prompt).logits[0].float()
    long_logits = model(long_ids).logits[0].float()

    cache = None
    chunked = []
    pos = 0
    for n in CHUNK_PLAN:
        out = model(prompt[:, pos : pos + n], past_key_values=cache, use_cache=True)
        cache = out.past_key_values
        chunked.append(out.logits[0, -1].float())
        pos += n
    assert pos == PROMPT_TOKENS
    chunked_logits = torch.stack(chunked)
    # The reference's cached path must itself agree with the full forward.
    ends = [sum(CHUNK_PLAN[: i + 1]) - 1 for i in range(len(CHUNK_PLAN))]
    drift = (chunked_logits - logits_full[ends]).abs().max().item()
    assert drift < 1e-4, f"reference cached path drifts by {drift}"

    generated = model.generate(
        prompt,
        attention_mask=torch.ones_like(prompt),
        max_new_tokens=GREEDY_TOKENS,
        min_new_tokens=GREEDY_TOKENS,
        do_sample=False,
        eos_token_id=None,
        pad_token_id=0,
    )
    greedy_ids = generated[0, PROMPT_TOKENS:].tolist()
    assert len(greedy_ids) == GREEDY_TOKENS

    bf16 = Qwen3_5MoeForCausalLM(model.config)
    bf16.load_state_dict(model.state_dict())
    bf16 = bf16.to(torch.bfloat16).eval()
    logits_full_bf16 = bf16(prompt).logits[0].float()

    tensors = {
        "logits_full": logits_full.contiguous(),
        "long_logits": long_logits.contiguous(),
        "chunked_logits": chunked_logits.contiguous(),
        "logits_full_bf16": logits_full_bf16.contiguous(),
    }
    meta = {
        "generator": f"scripts/make_qwen3_5_moe_fixtures.py (transformers {transformers.__version__}, torch {torch.__version__}, seed {SEED})",
        "prompt_ids": prompt[0].tolist(),
        "long_ids": long_ids[0].tolist(),
        "chunk_plan": CHUNK_PLAN,
        "greedy_ids": greedy_ids,
        "bf16_max_abs_diff_vs_f32": (logits_full_bf16 - logits_full).abs().max().item(),
    }
    return tensors, meta


def main() -> None:
    torch.manual_seed(SEED)
    generator = torch.Generator().manual_seed(SEED)
    config = Qwen3_5MoeTextConfig(**TEXT_CONFIG)
    config._attn_implementation = "eager"
    model = Qwen3_5MoeForCausalLM(config).eval()
    randomise(model, generator)
    state = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}

    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    write_flat(state, config, OUT / "flat_per_expert")
    write_nested(state, config, generator, OUT / "nested_stacked_sharded")

    # The per-expert checkpoint must load back into the reference unchanged.
    reloaded = Qwen3_5MoeForCausalLM.from_pretrained(OUT / "flat_per_expert", attn_implementation="eager").eval()
    probe = torch.arange(12).unsqueeze(0)
    with torch.no_grad():
        diff = (reloaded(probe).logits - model(probe).logits).abs().max().item()
    assert diff == 0.0, f"reloaded checkpoint differs by {diff}"

    tensors, meta = reference(model, generator)
    safetensors.torch.save_file(tensors, OUT / "reference.safetensors")
    (OUT / "reference.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(json.dumps({k: v for k, v in meta.items() if k != "long_ids"}))


if __name__ == "__main__":
    main()
