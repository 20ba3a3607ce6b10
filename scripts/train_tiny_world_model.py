#!/usr/bin/env python3
"""Trains assets/tiny-trained-world-model/: a small Qwen3.5-MoE world model
taught on the synthetic environments of `synthetic_worlds.py`.

What it does, in order (everything seeded):

1. draws training trajectories from the three simulators (terminal shell,
   Android screens, web sign-up form) and held-out ones from other seeds;
2. renders each training example exactly as Worldloom's local engine asks:
   the model directory's chat template over the AgentWorldBench messages
   (system, earlier turns as user prompt + `**Environment Observation:**`
   answer, the current turn's prompt), then the generation prompt
   (`<think>\\n`, or the closed empty block when thinking is off), then the
   answer: one sentence of reasoning, `</think>`, and the observation inside
   `<predicted_observation>` tags;
3. trains a byte-level BPE tokenizer on that text (the chat template's
   special tokens kept as added tokens);
4. trains a `transformers` `Qwen3_5MoeForCausalLM` (hybrid layers: Gated
   DeltaNet and gated full attention; routed experts plus the shared
   expert) with the loss on every assistant message (the history's
   observations and the answer);
5. writes the model directory in the flat Hugging Face layout (one tensor
   per expert, f32) and the held-out rows as `heldout/*_test.jsonl`.

Requirements: its own virtual environment (never the product's):

    python3 -m venv .venv-train
    .venv-train/bin/pip install torch transformers==5.24.0 safetensors tokenizers
    .venv-train/bin/python scripts/train_tiny_world_model.py --steps 3000 --stop-after 2000 --out /tmp/stage1
    .venv-train/bin/python scripts/train_tiny_world_model.py --init /tmp/stage1 --steps 3000 --lr 1.5e-3 --warmup 50

(the two stages the committed weights came from: about 30 and 45 minutes on
2 CPU cores; `--minutes` stops a stage early). Seeded; torch's CPU kernels
are not bit-reproducible across machines, so a retrained model is close to,
not identical with, the committed one.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from pathlib import Path

import safetensors.torch
import torch
from tokenizers import Regex, Tokenizer, pre_tokenizers
from transformers import Qwen3_5MoeForCausalLM, Qwen3_5MoeTextConfig

import synthetic_worlds as worlds
from fixture_configs import qwen_tokenizer_config
from make_qwen3_5_moe_fixtures import per_expert
from make_tiny_world_model import CHAT_TEMPLATE, SPECIAL_TOKENS, THINK_TOKENS, train_bpe

SEED = 20261206
VOCAB_SIZE = 2048
TRAIN_TRAJECTORIES = 12_000  # per domain
HELDOUT_TRAJECTORIES = 12  # per domain, committed with the model

MODEL = dict(
    hidden_size=128,
    num_hidden_layers=4,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=32,
    linear_num_key_heads=2,
    linear_num_value_heads=4,
    linear_key_head_dim=32,
    linear_value_head_dim=32,
    linear_conv_kernel_dim=4,
    num_experts=8,
    num_experts_per_tok=2,
    moe_intermediate_size=128,
    shared_expert_intermediate_size=128,
    full_attention_interval=2,
    rms_norm_eps=1e-6,
    hidden_act="silu",
    max_position_embeddings=4096,
    tie_word_embeddings=False,
    rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25},
)


README = """\
# tiny-trained-world-model

A small world model of Worldloom's own training, in the Hugging Face layout of
a `qwen3_5_moe` (Qwen3.5-MoE, flat ForCausalLM form) model directory. It was
trained on trajectories of three small deterministic simulators
(`scripts/synthetic_worlds.py`): a shell over a virtual file system
(terminal), Android settings and messaging screens as uiautomator XML, and a
web sign-up form as a BrowserGym accessibility tree. Its prompts are the
AgentWorldBench layout; it answers with one sentence of reasoning and the
next observation in `<predicted_observation>` tags.

| file | what |
|---|---|
| `config.json` | hidden {hidden}, {layers} layers (Gated DeltaNet and gated attention alternating), {experts} experts top-{top} plus the shared expert, vocab {vocab}; {params} parameters |
| `model.safetensors` | f32 weights (two training stages, below; the last ran {steps} steps of {batch} examples, loss of its last batch {loss:.3f}) |
| `tokenizer.json` | a byte-level BPE of {vocab} tokens trained on the synthetic text (words with their leading space as pre-tokens) |
| `tokenizer_config.json`, `chat_template.jinja`, `generation_config.json` | as in `assets/tiny-world-model` |
| `heldout/*_test.jsonl` | held-out AgentWorldBench rows from seeds the training never drew |

It knows only its three toy environments: on anything else it writes
plausible-looking nonsense. Try it:

    worldloom eval --data assets/tiny-trained-world-model/heldout --engine local \\
        --model-dir assets/tiny-trained-world-model --temperature 0 --output heldout.predictions.jsonl
    worldloom score heldout.predictions.jsonl

Retrain (about 75 minutes on 2 CPU cores; torch and transformers in their
own virtual environment, never the product's). These weights came from two
stages: 2,000 steps of a 3,000-step schedule (the model learns the screens'
structure but not yet to copy their content), then 3,000 more steps from
there with a fresh schedule (copying appears):

    python3 -m venv .venv-train
    .venv-train/bin/pip install torch transformers==5.24.0 safetensors tokenizers
    .venv-train/bin/python scripts/train_tiny_world_model.py --steps 3000 --stop-after 2000 --out /tmp/stage1
    .venv-train/bin/python scripts/train_tiny_world_model.py --init /tmp/stage1 --steps 3000 --lr 1.5e-3 --warmup 50
"""


def chat(messages: list[tuple[str, str]]) -> str:
    """The chat template's rendering of `messages` (role, content), without
    the generation prompt. Mirrors `CHAT_TEMPLATE`: ChatML turns."""
    return "".join(f"<|im_start|>{role}\n{content}<|im_end|>\n" for role, content in messages)


def example(t: worlds.Trajectory, k: int, thinking: bool) -> tuple[str, list[tuple[int, int]]]:
    """The text of turn k's training example and the character spans the
    loss is taken on (each assistant message's content and its end token)."""
    rows = worlds.rows(t, 0)
    row = rows[k - 1]
    text = f"<|im_start|>system\n{row['system_str']}<|im_end|>\n"
    spans = []
    for j in range(1, k):
        text += f"<|im_start|>user\n{row['prompt'][j - 1]}<|im_end|>\n<|im_start|>assistant\n"
        start = len(text)
        text += row["response"][j - 1] + "<|im_end|>"
        spans.append((start, len(text)))
        text += "\n"
    text += f"<|im_start|>user\n{row['prompt'][k - 1]}<|im_end|>\n<|im_start|>assistant\n"
    text += "<think>\n" if thinking else "<think>\n\n</think>\n\n"
    start = len(text)
    text += worlds.answer(t, k, thinking) + "<|im_end|>"
    spans.append((start, len(text)))
    return text, spans


def train_tokenizer(texts: list[str]) -> Tokenizer:
    # The special tokens are cut out of the training text: they are added
    # tokens, never merged with their neighbours.
    pieces = []
    for text in texts:
        for marker in SPECIAL_TOKENS + THINK_TOKENS:
            text = text.replace(marker, "\n")
        pieces.append(text)
    # Words with their leading space (and runs of white space) are the
    # pre-tokens, so that frequent markup (`resource-id="android:id/title"`,
    # `clickable,`) can become one token; bytes are mapped as byte-level BPE.
    words = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(r" ?[^\s]+|\s+"), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    return train_bpe(pieces, VOCAB_SIZE, words)


def encode(tokenizer: Tokenizer, text: str, spans: list[tuple[int, int]]) -> tuple[list[int], list[bool]]:
    """Token ids of `text` and, per token, whether its loss counts (the
    token starts inside one of `spans`)."""
    enc = tokenizer.encode(text, add_special_tokens=False)
    keep = [any(a <= start < b for a, b in spans) for start, _ in enc.offsets]
    return enc.ids, keep


def write_model(out: Path, model: Qwen3_5MoeForCausalLM, tokenizer: Tokenizer, config: dict, trained: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "README.md").write_text(README.format(
        hidden=config["hidden_size"], layers=config["num_hidden_layers"], experts=config["num_experts"],
        top=config["num_experts_per_tok"], vocab=config["vocab_size"],
        params=sum(p.numel() for p in model.parameters()), **trained))
    tokenizer.save(str(out / "tokenizer.json"))
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    (out / "chat_template.jinja").write_text(CHAT_TEMPLATE)
    tokenizer_config = qwen_tokenizer_config(config["max_position_embeddings"])
    (out / "tokenizer_config.json").write_text(json.dumps(tokenizer_config, indent=2) + "\n")
    end, text_end = config["eos_token_id"], config["bos_token_id"]
    generation_config = {
        "do_sample": True,
        "temperature": 0.6,
        "top_p": 0.95,
        "top_k": 20,
        "eos_token_id": [end, text_end],
        "pad_token_id": text_end,
    }
    (out / "generation_config.json").write_text(json.dumps(generation_config, indent=2) + "\n")
    state = {k: v.detach().float().contiguous() for k, v in model.state_dict().items()}
    tensors = per_expert(state, config["moe_intermediate_size"])
    safetensors.torch.save_file(tensors, out / "model.safetensors", metadata={"format": "pt"})


def stacked(tensors: dict[str, torch.Tensor], experts: int) -> dict[str, torch.Tensor]:
    """The inverse of `per_expert`: `experts.{e}.{gate,up,down}_proj.weight`
    back into the stacked `experts.gate_up_proj` / `experts.down_proj`."""
    out = {}
    for name, tensor in tensors.items():
        if ".mlp.experts." not in name:
            out[name] = tensor
    bases = sorted({n.split("experts.")[0] + "experts." for n in tensors if ".mlp.experts." in n})
    for base in bases:
        gate_up = [torch.cat([tensors[f"{base}{e}.gate_proj.weight"], tensors[f"{base}{e}.up_proj.weight"]]) for e in range(experts)]
        out[base + "gate_up_proj"] = torch.stack(gate_up)
        out[base + "down_proj"] = torch.stack([tensors[f"{base}{e}.down_proj.weight"] for e in range(experts)])
    return out


def write_heldout(out: Path) -> None:
    folder = out / "heldout"
    folder.mkdir(parents=True, exist_ok=True)
    for domain in worlds.GENERATORS:
        with open(folder / f"{domain}_test.jsonl", "w", encoding="utf-8") as f:
            held = worlds.trajectories(domain, SEED + 1, HELDOUT_TRAJECTORIES)
            for i, t in enumerate(held):
                for row in worlds.rows(t, 7_000_000 + 1000 * list(worlds.GENERATORS).index(domain) + i):
                    f.write(json.dumps(row, ensure_ascii=False) + "\n")


def main() -> None:
    root = Path(__file__).resolve().parent.parent
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=root / "assets" / "tiny-trained-world-model")
    parser.add_argument("--steps", type=int, default=9000)
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--init", type=Path, help="continue from this model directory (its tokenizer and weights)")
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--stop-after", type=int, help="stop after this many steps (the schedule still spans --steps)")
    args = parser.parse_args()
    torch.manual_seed(SEED)
    torch.set_num_threads(args.threads)
    rng = random.Random(SEED)

    train = [t for d in worlds.GENERATORS for t in worlds.trajectories(d, SEED, TRAIN_TRAJECTORIES)]
    rng.shuffle(train)
    if args.init:
        rng.seed(f"{SEED}:{args.init}")
        tokenizer = Tokenizer.from_file(str(args.init / "tokenizer.json"))
    else:
        tokenizer = train_tokenizer([example(t, len(t.turns), True)[0] for t in train[:6000]])
    vocab = tokenizer.get_vocab_size(with_added_tokens=True)
    ids = {t: tokenizer.token_to_id(t) for t in SPECIAL_TOKENS + THINK_TOKENS}

    config = dict(MODEL, vocab_size=vocab, eos_token_id=ids["<|im_end|>"], bos_token_id=ids["<|endoftext|>"])
    hf_config = Qwen3_5MoeTextConfig(**config)
    model = Qwen3_5MoeForCausalLM(hf_config)
    if args.init:
        saved = safetensors.torch.load_file(args.init / "model.safetensors")
        model.load_state_dict(stacked(saved, config["num_experts"]))
    file_config = hf_config.to_dict()
    file_config.update(architectures=["Qwen3_5MoeForCausalLM"], model_type="qwen3_5_moe_text", torch_dtype="float32")
    params = sum(p.numel() for p in model.parameters())
    print(f"vocab {vocab}, {params} parameters, special ids {ids}", flush=True)

    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01, betas=(0.9, 0.95))
    warmup = args.warmup

    def lr_at(step: int) -> float:
        if step < warmup:
            return args.lr * (step + 1) / warmup
        progress = (step - warmup) / max(1, args.steps - warmup)
        return args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))

    started = time.time()
    model.train()
    for step in range(args.steps):
        batch = []
        for _ in range(args.batch):
            t = rng.choice(train)
            k = rng.randint(1, len(t.turns))
            batch.append(encode(tokenizer, *example(t, k, rng.random() < 0.9)))
        width = max(len(x) for x, _ in batch)
        input_ids = torch.full((len(batch), width), ids["<|endoftext|>"], dtype=torch.long)
        labels = torch.full((len(batch), width), -100, dtype=torch.long)
        for i, (x, keep) in enumerate(batch):
            input_ids[i, : len(x)] = torch.tensor(x)
            labels[i, : len(x)] = torch.tensor([v if k else -100 for v, k in zip(x, keep)])
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step)
        loss = model(input_ids=input_ids, labels=labels).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        minutes = (time.time() - started) / 60
        if step % 50 == 0:
            print(f"step {step} loss {loss.item():.4f} lr {lr_at(step):.2e} width {width} {minutes:.1f} min", flush=True)
        trained = {"steps": step + 1, "batch": args.batch, "loss": loss.item()}
        if step % 500 == 499:
            write_model(args.out, model, tokenizer, file_config, trained)
        if minutes > args.minutes:
            print(f"stopping at step {step}: {args.minutes} minutes", flush=True)
            break
        if args.stop_after is not None and step + 1 >= args.stop_after:
            print(f"stopping after step {step}", flush=True)
            break

    model.eval()
    write_model(args.out, model, tokenizer, file_config, trained)
    write_heldout(args.out)
    print(f"wrote {args.out}", flush=True)


if __name__ == "__main__":
    main()
