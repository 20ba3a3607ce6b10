#!/usr/bin/env python3
"""Builds the GGUF fixtures of worldloom-engine with llama.cpp as the instrument.

Run by hand through scripts/make_gguf_fixtures.sh (which finds llama.cpp and
the Python environment); never in CI, and no test needs llama.cpp. It writes
crates/worldloom-engine/tests/fixtures/gguf/:

- `tokenizer/`: the Hugging Face tokenizer of the fixture checkpoints
  (`tokenizer.json`, `tokenizer_config.json`, `chat_template.jinja`): a byte-level
  BPE of 320 ids trained here on a fixed text, laid out like Qwen3.5's own
  (NFC, the Qwen3.5 split regex, byte-level, ChatML and think tokens);
- `small-flat-{bf16,q8_0,q4_k_m}.gguf`, `small-nested-f32.gguf`: the tiny
  Qwen3.5-MoE checkpoint of `../qwen3_5_moe/` (flat ForCausalLM config with
  per-expert tensors; nested ForConditionalGeneration config with stacked,
  sharded experts), with the tokenizer above beside it, converted by
  llama.cpp's own `convert_hf_to_gguf.py` to BF16 (F32 for the nested form) and quantized by
  `llama-quantize` to Q8_0 and Q4_K_M (rows narrower than 256 fall back to
  Q5_0 / Q5_1 / Q8_0 / F16 there: see each JSON's `tensor_types`);
- `wide-q4_k_m.gguf`: a checkpoint with every quantized row 256 wide (hidden 256,
  one Gated DeltaNet + one attention layer, 4 experts top-2, expert width
  256), made here from a seeded generator (not committed as safetensors),
  so Q4_K_M really stores Q4_K / Q6_K blocks; `wide-q5_k_m.gguf`: that file
  requantized by `llama-quantize --allow-requantize … Q5_K_M` (Q5_K / Q6_K
  blocks of the same values);
- `tiny-world-bf16.gguf`: `assets/tiny-world-model` converted to BF16 (a
  GPT-2-style pre-tokenizer, vocabulary 1024);
- beside each `X.gguf` a reference `X.json`: for two prompts (the 20 random
  ids of `../qwen3_5_moe/reference.json`, and a ChatML prompt), 24 greedy ids,
  the raw logits of the last prompt position (full vector) and the two best
  logits at every step (the greedy margin), read through llama.cpp's API by
  `scripts/gguf_reference_logits.cpp` (flash attention off, f32 K/V cache,
  2 threads, no weight repacking); llama-server's greedy ids for the same
  prompts as a cross-check, and its rendering of a chat through the file's
  template.

The pre-tokenizer of these tokenizers is unknown to the converter's hash
table, so the converter runs with `get_vocab_base_pre` answering the type the
tokenizer was built with (`qwen35`, or `gpt-2` for the tiny world model).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np

from fixture_configs import qwen3_5_moe_text_config, qwen_tokenizer_config

ROOT = Path(__file__).resolve().parent.parent
ENGINE_FIXTURES = ROOT / "crates/worldloom-engine/tests/fixtures"
SMALL = ENGINE_FIXTURES / "qwen3_5_moe"
TINY_WORLD = ROOT / "assets/tiny-world-model"
OUT = ENGINE_FIXTURES / "gguf"

SEED = 20_261_201
GREEDY_TOKENS = 24
VOCAB = 320

# The Qwen3.5 tokenizer.json split regex (llama.cpp's `qwen35` pre-tokenizer).
QWEN35_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}"
    r"| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
ADDED_TOKENS = ["<think>", "</think>", "<tool_call>", "</tool_call>"]

TRAINING_TEXT = """\
The world model predicts the next observation of an agent's environment.
Given the history of states and actions, it writes what the screen shows next.
<html><body><div id="main"><button class="primary">Submit</button></div></body></html>
[12] button 'Search' focused: True
[13] link 'Sign in' url: https://example.com/login?next=%2Fhome
def step(state, action):
    for i in range(10):
        if action == "click":
            return state.observe(i)
    return None
{"role": "assistant", "content": "The page now lists 3 results."}
Numbers: 0 1 2 3 4 5 6 7 8 9 10 42 2026 3.14159
Unicode: café naïve Grüße Ελληνικά русский 日本語 中文 한국어 😀 ✅
Tabs\tand  double  spaces,   runs    of     spaces.
I've been told it's there; they're sure we'll see what you'd do.
Combining marks (letters without a precomposed form): """ + " x\u0301" * 40 + """
"""


# --------------------------------------------------------------------------
# tokenizer


def write_tokenizer(directory: Path) -> None:
    """Trains the fixture tokenizer (320 ids) and writes its HF files."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(ignore_merges=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN35_SPLIT), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    n_added = len(SPECIAL_TOKENS) + len(ADDED_TOKENS)
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB - n_added,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator([TRAINING_TEXT] * 4, trainer)
    if tok.get_vocab_size() != VOCAB - n_added:
        sys.exit(f"trained {tok.get_vocab_size()} ids, expected {VOCAB - n_added}")
    from tokenizers import AddedToken

    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS])
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in ADDED_TOKENS])
    assert tok.get_vocab_size() == VOCAB

    directory.mkdir(parents=True, exist_ok=True)
    # Pretty JSON, stable across runs.
    data = json.loads(tok.to_str())
    (directory / "tokenizer.json").write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    config = qwen_tokenizer_config(4096)
    (directory / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n")
    shutil.copy(TINY_WORLD / "chat_template.jinja", directory / "chat_template.jinja")


# --------------------------------------------------------------------------
# checkpoints


WIDE = qwen3_5_moe_text_config(
    vocab_size=VOCAB, hidden_size=256, num_hidden_layers=2, full_attention_interval=2,
    head_dim=64, linear_head_dim=64, mrope_section=[4, 2, 2], attention_bias=False,
    num_experts=4, moe_intermediate_size=256, shared_expert_intermediate_size=256,
)


def write_wide(directory: Path) -> None:
    """Writes the wide checkpoint (flat ForCausalLM form, per-expert tensors, f32)."""
    import safetensors.numpy

    rng = np.random.default_rng(SEED)
    c = WIDE
    h = c["hidden_size"]

    def mat(rows: int, cols: int) -> np.ndarray:
        return (rng.standard_normal((rows, cols)) * (1.5 / cols**0.5)).astype(np.float32)

    def vec(n: int, scale: float = 0.3, offset: float = 0.0) -> np.ndarray:
        return (rng.standard_normal(n) * scale + offset).astype(np.float32)

    t: dict[str, np.ndarray] = {}
    t["model.embed_tokens.weight"] = rng.standard_normal((c["vocab_size"], h)).astype(np.float32)
    key_dim = c["linear_num_key_heads"] * c["linear_key_head_dim"]
    value_dim = c["linear_num_value_heads"] * c["linear_value_head_dim"]
    n_v = c["linear_num_value_heads"]
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        t[p + "input_layernorm.weight"] = vec(h)
        t[p + "post_attention_layernorm.weight"] = vec(h)
        if (i + 1) % c["full_attention_interval"] != 0:
            a = p + "linear_attn."
            conv = 2 * key_dim + value_dim
            t[a + "in_proj_qkv.weight"] = mat(conv, h)
            t[a + "in_proj_z.weight"] = mat(value_dim, h)
            t[a + "in_proj_a.weight"] = mat(n_v, h)
            t[a + "in_proj_b.weight"] = mat(n_v, h)
            t[a + "conv1d.weight"] = (rng.standard_normal((conv, 1, c["linear_conv_kernel_dim"])) * 0.5).astype(np.float32)
            t[a + "A_log"] = vec(n_v, 0.5, -1.0)
            t[a + "dt_bias"] = vec(n_v, 0.5)
            t[a + "norm.weight"] = vec(c["linear_value_head_dim"], 0.3, 1.0)
            t[a + "out_proj.weight"] = mat(h, value_dim)
        else:
            a = p + "self_attn."
            hd = c["head_dim"]
            t[a + "q_proj.weight"] = mat(c["num_attention_heads"] * hd * 2, h)
            t[a + "k_proj.weight"] = mat(c["num_key_value_heads"] * hd, h)
            t[a + "v_proj.weight"] = mat(c["num_key_value_heads"] * hd, h)
            t[a + "o_proj.weight"] = mat(h, c["num_attention_heads"] * hd)
            t[a + "q_norm.weight"] = vec(hd)
            t[a + "k_norm.weight"] = vec(hd)
        m = p + "mlp."
        t[m + "gate.weight"] = mat(c["num_experts"], h)
        inter = c["moe_intermediate_size"]
        for e in range(c["num_experts"]):
            t[m + f"experts.{e}.gate_proj.weight"] = mat(inter, h)
            t[m + f"experts.{e}.up_proj.weight"] = mat(inter, h)
            t[m + f"experts.{e}.down_proj.weight"] = mat(h, inter)
        shared = c["shared_expert_intermediate_size"]
        t[m + "shared_expert.gate_proj.weight"] = mat(shared, h)
        t[m + "shared_expert.up_proj.weight"] = mat(shared, h)
        t[m + "shared_expert.down_proj.weight"] = mat(h, shared)
        t[m + "shared_expert_gate.weight"] = mat(1, h)
    t["model.norm.weight"] = vec(h)
    t["lm_head.weight"] = mat(c["vocab_size"], h)

    directory.mkdir(parents=True)
    config = dict(c)
    config["architectures"] = ["Qwen3_5MoeForCausalLM"]
    config["model_type"] = "qwen3_5_moe_text"
    (directory / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    safetensors.numpy.save_file(t, str(directory / "model.safetensors"), metadata={"format": "pt"})


def stage(src: Path, dst: Path, tokenizer: Path | None) -> Path:
    """Copies a checkpoint into the work folder, with the fixture tokenizer beside it."""
    shutil.copytree(src, dst)
    if tokenizer is not None:
        for f in tokenizer.iterdir():
            shutil.copy(f, dst / f.name)
    return dst


# --------------------------------------------------------------------------
# llama.cpp


def convert(src: Path, python: str, checkpoint: Path, out: Path, pre: str, outtype: str = "bf16") -> None:
    """Runs llama.cpp's convert_hf_to_gguf.py with the pre-tokenizer type fixed."""
    runner = (
        "import sys; sys.path.insert(0, sys.argv[1]); sys.argv = sys.argv[2:];"
        "import convert_hf_to_gguf as c; from conversion import base;"
        f"base.TextModel.get_vocab_base_pre = lambda self, tokenizer: {pre!r};"
        "c.main()"
    )
    cmd = [python, "-c", runner, str(src), "convert_hf_to_gguf.py", str(checkpoint),
           "--outtype", outtype, "--outfile", str(out), "--no-mtp"]
    run(cmd, cwd=src)


def quantize(bin_dir: Path, src: Path, dst: Path, kind: str, requantize: bool = False) -> None:
    run([str(bin_dir / "llama-quantize")] + (["--allow-requantize"] if requantize else [])
        + [str(src), str(dst), kind])


def run(cmd: list[str], cwd: Path | None = None) -> None:
    print("+", " ".join(cmd[:2] if cmd[1] == "-c" else cmd), flush=True)
    proc = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        sys.exit(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stdout[-4000:]}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(port: int, path: str, body: dict) -> dict:
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=300) as resp:
        return json.loads(resp.read())


def server_version(bin_dir: Path) -> str:
    proc = subprocess.run([str(bin_dir / "llama-server"), "--version"], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    lines = [l.strip() for l in proc.stdout.splitlines() if l.startswith("version") or l.startswith("built")]
    return "; ".join(lines)


# --no-repack (and use_extra_bufts = false in the driver): on CPUs that report AMX, a native llama.cpp build
# puts Q8_0 / k-quant weights in AMX tile buffers, which died with SIGILL on our (virtualised) machines;
# the plain CPU kernels compute the same dot products.
SERVER_FLAGS = ["--no-repack", "-fa", "off", "-ctk", "f32", "-ctv", "f32", "-c", "1024", "-np", "1", "-t", "2",
                "--jinja", "--no-warmup"]


def build_driver(src: Path, bin_dir: Path, work: Path) -> Path:
    """Compiles scripts/gguf_reference_logits.cpp against the given llama.cpp build."""
    exe = work / "gguf_reference_logits"
    run(["g++", "-O2", "-std=c++17", f"-I{src / 'include'}", f"-I{src / 'ggml/include'}",
         str(ROOT / "scripts/gguf_reference_logits.cpp"), "-o", str(exe), f"-L{bin_dir}",
         "-lllama", "-lggml", "-lggml-base", f"-Wl,-rpath,{bin_dir}"])
    return exe


def driver_logits(driver: Path, gguf: Path, ids: list[int]) -> dict:
    proc = subprocess.run([str(driver), str(gguf), str(GREEDY_TOKENS), ",".join(map(str, ids))],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        sys.exit(f"gguf_reference_logits failed on {gguf}: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout)


def references(bin_dir: Path, driver: Path, gguf: Path, prompts: dict[str, list[int]],
               chat: list[dict], eog_ids: list[int]) -> dict:
    """Collects the reference outputs of one GGUF: logits through the driver,
    the greedy cross-check and the chat rendering through llama-server."""
    port = free_port()
    log = open(gguf.with_suffix(".server.log"), "w")
    server = subprocess.Popen(
        [str(bin_dir / "llama-server"), "-m", str(gguf), "--host", "127.0.0.1", "--port", str(port)]
        + SERVER_FLAGS,
        stdout=log, stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.time() + 120
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as r:
                    if r.status == 200:
                        break
            except Exception:
                pass
            if server.poll() is not None or time.time() > deadline:
                sys.exit(f"llama-server did not start on {gguf}: see {log.name}")
            time.sleep(0.5)

        out = {}
        for name, ids in prompts.items():
            d = driver_logits(driver, gguf, ids)
            logits = np.array(d["logits"], dtype=np.float64)
            greedy = d["greedy_ids"]
            assert logits.shape == (GREEDY_TOKENS, d["n_vocab"])
            assert greedy == [int(i) for i in logits.argmax(axis=1)]
            top2 = []
            for row in logits:
                order = np.argsort(-row, kind="stable")[:2]
                top2.append([[int(i), float(np.float32(row[i]))] for i in order])
            body = {
                "prompt": ids,
                "n_predict": GREEDY_TOKENS,
                "temperature": 0,
                "top_k": 1,
                "cache_prompt": False,
                "return_tokens": True,
                "ignore_eos": True,
            }
            server_ids = post(port, "/completion", body)["tokens"]
            agree = next((i for i, (a, b) in enumerate(zip(greedy, server_ids)) if a != b), len(greedy))
            if agree < len(greedy) and greedy[agree] not in eog_ids:
                sys.exit(f"{gguf.name} {name}: llama-server's greedy ids differ at {agree} "
                         f"without an end-of-generation token: {greedy} vs {server_ids}")
            out[name] = {
                "prompt_ids": ids,
                "greedy_ids": greedy,
                "last_position_logits": [float(np.float32(x)) for x in logits[0]],
                "top2_logits_per_step": top2,
                "server_greedy_ids": server_ids,
                "server_agrees_for": agree,
            }
        rendered = post(port, "/apply-template", {"messages": chat})["prompt"]
        return {"prompts": out, "chat_messages": chat, "chat_rendered_by_llama_server": rendered}
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


def gguf_summary(src: Path, path: Path) -> dict:
    sys.path.insert(0, str(src / "gguf-py"))
    import gguf  # noqa: E402

    reader = gguf.GGUFReader(str(path))
    types: dict[str, int] = {}
    for t in reader.tensors:
        types[t.tensor_type.name] = types.get(t.tensor_type.name, 0) + 1
    field = reader.fields.get("tokenizer.ggml.tokens")
    eog = []
    tokens = [bytes(field.parts[i]).decode("utf-8") for i in field.data] if field else []
    for i, tok in enumerate(tokens):
        if tok in ("<|endoftext|>", "<|im_end|>"):
            eog.append(i)
    return {"tensor_types": dict(sorted(types.items())), "n_vocab": len(tokens), "eog_ids": eog}


SOURCES = {
    "small-flat": "crates/worldloom-engine/tests/fixtures/qwen3_5_moe/flat_per_expert + gguf/tokenizer",
    "small-nested": "crates/worldloom-engine/tests/fixtures/qwen3_5_moe/nested_stacked_sharded + gguf/tokenizer",
    "wide": "scripts/make_gguf_fixtures.py write_wide (seeded, not committed) + gguf/tokenizer",
    "tiny-world": "assets/tiny-world-model, rope_parameters.mrope_section [1, 1, 0] added",
}


# --------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llama-bin", type=Path, required=True, help="folder with llama-quantize, llama-server")
    ap.add_argument("--llama-src", type=Path, required=True, help="llama.cpp source (convert_hf_to_gguf.py)")
    ap.add_argument("--work", type=Path, required=True, help="scratch folder (emptied)")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()

    work: Path = args.work
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    out: Path = args.out
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)

    tokenizer_dir = out / "tokenizer"
    write_tokenizer(tokenizer_dir)
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer_dir / "tokenizer.json"))
    tiny_tok = Tokenizer.from_file(str(TINY_WORLD / "tokenizer.json"))

    chat = [
        {"role": "system", "content": "You predict the next screen."},
        {"role": "user", "content": "Click 'Submit' on <div id=\"main\">."},
    ]

    def chat_ids(t) -> list[int]:
        text = "<|im_start|>system\nYou predict the next screen.<|im_end|>\n" \
               "<|im_start|>user\nClick 'Submit' on <div id=\"main\">.<|im_end|>\n" \
               "<|im_start|>assistant\n<think>\n"
        return t.encode(text, add_special_tokens=False).ids

    small_ref = json.loads((SMALL / "reference.json").read_text())
    small_prompts = {"random": small_ref["prompt_ids"], "chat": chat_ids(tok)}
    tiny_prompts = {"random": [int(x) for x in np.random.default_rng(SEED).integers(0, 1019, 20)],
                    "chat": chat_ids(tiny_tok)}

    staged = {
        "small-flat": (stage(SMALL / "flat_per_expert", work / "small-flat", tokenizer_dir), "qwen35"),
        "small-nested": (stage(SMALL / "nested_stacked_sharded", work / "small-nested", tokenizer_dir), "qwen35"),
        "tiny-world": (stage(TINY_WORLD, work / "tiny-world", None), "gpt-2"),
    }
    # The tiny world model's config has no mrope_section; the converter then writes its default
    # [11, 11, 10, 0], which llama.cpp refuses for a 4-dim rotary part (GGML_ASSERT sect_dims <= ne0).
    # For text all three position axes are equal, so the sections do not change the result.
    cfg_path = work / "tiny-world/config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["rope_parameters"].update({"mrope_section": [1, 1, 0], "mrope_interleaved": True})
    cfg_path.write_text(json.dumps(cfg, indent=2) + "\n")
    write_wide(work / "wide-src")
    staged["wide"] = (stage(work / "wide-src", work / "wide", tokenizer_dir), "qwen35")

    python = sys.executable
    plan = {
        "small-flat": (["BF16", "Q8_0", "Q4_K_M"], small_prompts, VOCAB),
        # Converted, the nested form's tensors are byte for byte the flat form's (only the metadata
        # differs: recurrent_layers), so it is kept once, in F32: with F32 weights llama.cpp computes
        # in f32 and matches the reference to ~1e-6, which the BF16 and quantized files cannot (llama.cpp
        # rounds the activations to bf16 / Q8 for those matrix products). The wide checkpoint keeps only
        # Q4_K_M (its Q8_0 would add 2.9 MB for what the small Q8_0 file already covers) and a Q5_K_M
        # file requantized from it (`--allow-requantize`: llama.cpp's Q5_K blocks of the Q4_K_M file's
        # values, made without a conversion of their own; see write_fixture).
        "small-nested": (["F32"], small_prompts, VOCAB),
        "wide": (["Q4_K_M", "Q5_K_M"], small_prompts, VOCAB),
        "tiny-world": (["BF16"], tiny_prompts, 1024),
    }
    version = server_version(args.llama_bin)
    driver = build_driver(args.llama_src, args.llama_bin, work)
    for name, (kinds, prompts, _vocab) in plan.items():
        checkpoint, pre = staged[name]
        bf16 = work / f"{name}-bf16.gguf"
        convert(args.llama_src, python, checkpoint, bf16, pre)
        for kind in kinds:
            target = out / f"{name}-{kind.lower()}.gguf"
            if kind == "BF16":
                shutil.copy(bf16, target)
            elif kind == "F32":
                convert(args.llama_src, python, checkpoint, target, pre, "f32")
            elif kind == "Q5_K_M":
                quantize(args.llama_bin, out / f"{name}-q4_k_m.gguf", target, kind, requantize=True)
            else:
                quantize(args.llama_bin, bf16, target, kind)
            write_fixture(args, version, driver, name, kind, pre, target, prompts, chat)
    print("done:", out)


def write_fixture(args, version: str, driver: Path, name: str, kind: str, pre: str, target: Path,
                  prompts: dict[str, list[int]], chat: list[dict]) -> None:
    """Writes the reference (`.json`) of one fixture GGUF `target`."""
    summary = gguf_summary(args.llama_src, target)
    ref = {
        "generator": "scripts/make_gguf_fixtures.sh (llama.cpp convert_hf_to_gguf.py, llama-quantize; "
                     "logits from scripts/gguf_reference_logits.cpp, greedy cross-check and chat "
                     "rendering from llama-server)",
        "llama_cpp": version,
        "source": SOURCES[name],
        "converter": {"outtype": "f32" if kind == "F32" else "bf16", "no_mtp": True, "tokenizer_pre": pre},
        "quantization": kind,
        "gguf_sha256": hashlib.sha256(target.read_bytes()).hexdigest(),
        "settings": "CPU, 2 threads, flash attention off, f32 K/V cache, prompt in one batch, "
                    "then one token per step; greedy = argmax of the raw logits (end-of-generation "
                    "ids included)",
        "server_flags": SERVER_FLAGS,
        "server_request": "temperature 0, top_k 1, ignore_eos (bans eog_ids, so server_greedy_ids "
                          "may leave greedy_ids at the first end-of-generation id: server_agrees_for)",
    }
    if kind == "Q5_K_M":
        ref["requantized_from"] = f"{name}-q4_k_m.gguf"
    ref.update(summary)
    ref.update(references(args.llama_bin, driver, target, prompts, chat, summary["eog_ids"]))
    target.with_suffix(".server.log").unlink()
    target.with_suffix(".json").write_text(json.dumps(ref, indent=1) + "\n")
    print(f"{target.name}: {target.stat().st_size} bytes", flush=True)


if __name__ == "__main__":
    main()
