//! The tokenizer and chat template built from a GGUF file's metadata agree
//! with the Hugging Face files of the checkpoint the file was converted from.
//!
//! The GGUF files under `tests/fixtures/gguf/` were written by llama.cpp's own
//! `convert_hf_to_gguf.py` (`scripts/make_gguf_fixtures.sh`):
//! `small-*-bf16.gguf` from the tiny Qwen3.5-MoE checkpoints with the
//! tokenizer of `fixtures/gguf/tokenizer/` (Qwen3.5 layout: NFC, the `qwen35`
//! split regex, byte-level BPE, 320 ids), `tiny-world-bf16.gguf` from
//! `assets/tiny-world-model` (GPT-2 byte-level regex, 1024 ids). The real
//! Qwen3.5 `tokenizer.json` is not in the repository (it comes with the
//! model's weights), so these two tokenizers stand for it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use candle_core::quantized::gguf_file::{Content, Value};
use worldloom_core::{ChatMessage, ChatRole};
use worldloom_engine::chat_template::{ChatTemplate, RenderOptions};
use worldloom_engine::tokenizer::Tokenizer;
use worldloom_engine::tokenizer::gguf::{GgufSpecialIds, gguf_tokenizer_metadata};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gguf")
}

fn tiny_world_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/tiny-world-model")
}

/// (GGUF file, the Hugging Face folder of the checkpoint it came from).
fn cases() -> Vec<(PathBuf, PathBuf)> {
    vec![
        (
            fixtures().join("small-flat-bf16.gguf"),
            fixtures().join("tokenizer"),
        ),
        (
            fixtures().join("small-nested-f32.gguf"),
            fixtures().join("tokenizer"),
        ),
        (fixtures().join("tiny-world-bf16.gguf"), tiny_world_dir()),
    ]
}

fn metadata(path: &Path) -> HashMap<String, Value> {
    let mut file = std::fs::File::open(path).expect("fixture opens");
    Content::read(&mut file)
        .expect("GGUF header reads")
        .metadata
}

const TEXTS: &[&str] = &[
    "Hello world",
    "The world model predicts the next observation.",
    "I've been told it's there; THEY'RE sure we'LL see what you'd do.",
    "Numbers: 0 1 2 3 42 2026 3.14159 1,000,000 -7e-3",
    "café naïve Grüße Ελληνικά русский 日本語 中文 한국어",
    "emoji 😀✅🦙 and ZWJ 😶\u{200d}🌫\u{fe0f}",
    // Combining acute accent: NFC folds it into é before the split.
    "cafe\u{301} e\u{301}",
    // A letter with a combining mark that has no precomposed form: one
    // pre-token under Qwen3.5's regex (`[\p{L}\p{M}]+`), two under Qwen2's.
    "x\u{301} and x\u{301}x\u{301}, q\u{303}",
    "Tabs\tand  double  spaces,   runs    of     spaces.\n\n\n  \n \t\n",
    "   leading and trailing   ",
    "def step(state, action):\n    for i in range(10):\n        return {\"k\": [1, 2]}\n",
    "<html><body><div id=\"main\"><button class='primary'>Submit</button></div></body></html>",
    "[12] button 'Search' focused: True\n[13] link 'Sign in' url: https://example.com/?q=%2F",
    "<|im_start|>system\nYou predict.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\nok\n</think>\n\nfine<|im_end|><|endoftext|>",
    "a<think>b</think>c<|im_end|>d",
    "",
];

#[test]
fn metadata_tokenizer_encodes_and_decodes_like_tokenizer_json() {
    for (gguf, hf_dir) in cases() {
        let at = gguf.display();
        let meta = metadata(&gguf);
        let ours = Tokenizer::from_gguf_metadata(&meta, &gguf).expect("tokenizer from metadata");
        let hf = Tokenizer::from_dir(&hf_dir).expect("tokenizer.json");
        assert_eq!(ours.path(), gguf.as_path());
        assert_eq!(ours.vocab_size(), hf.vocab_size(), "{at}: vocabulary size");
        for id in 0..hf.vocab_size() as u32 {
            assert_eq!(ours.id_to_token(id), hf.id_to_token(id), "{at}: id {id}");
        }
        assert_eq!(ours.special_ids(), hf.special_ids(), "{at}");
        for text in TEXTS {
            let ids = ours.encode(text).expect("encodes");
            let expected = hf.encode(text).expect("tokenizer.json encodes");
            assert_eq!(ids, expected, "{at}: {text:?}");
            let back = ours.decode(&ids, false).expect("decodes");
            assert_eq!(back, hf.decode(&ids, false).expect("decodes"), "{at}");
            // Every text is NFC already except the one with `e` + U+0301.
            if !text.contains("e\u{301}") {
                assert_eq!(&back, text, "{at}: round trip");
            }
            assert_eq!(
                ours.decode(&ids, true).expect("decodes"),
                hf.decode(&ids, true).expect("decodes"),
                "{at}: without special tokens"
            );
        }
        // The tokenizers differ from a plain byte split: merges are used.
        let hello = ours.encode("The world model").expect("encodes");
        assert!(hello.len() < "The world model".len(), "{hello:?}");
    }
}

#[test]
fn metadata_special_ids_name_the_chat_tokens() {
    for (gguf, hf_dir) in cases() {
        let at = gguf.display();
        let meta = metadata(&gguf);
        let hf = Tokenizer::from_dir(&hf_dir).expect("tokenizer.json");
        let ids = GgufSpecialIds::from_gguf_metadata(&meta, &gguf).expect("ids");
        assert_eq!(ids.eos, hf.token_id("<|im_end|>"), "{at}");
        assert_eq!(ids.padding, hf.token_id("<|endoftext|>"), "{at}");
    }
}

#[test]
fn metadata_chat_template_renders_like_the_checkpoint_files() {
    let chat = vec![
        ChatMessage::new(ChatRole::System, "You simulate a terminal."),
        ChatMessage::new(ChatRole::User, "$ pwd"),
        ChatMessage::new(
            ChatRole::Assistant,
            "<think>\nhome\n</think>\n\n<predicted_observation>/home/u</predicted_observation>",
        ),
        ChatMessage::new(ChatRole::User, "$ ls"),
    ];
    for (gguf, hf_dir) in cases() {
        let at = gguf.display();
        let meta = metadata(&gguf);
        let ours = ChatTemplate::from_gguf_metadata(&meta, &gguf).expect("template from metadata");
        let theirs = ChatTemplate::from_dir(&hf_dir).expect("template from files");
        for options in [
            RenderOptions::default(),
            RenderOptions {
                add_generation_prompt: true,
                enable_thinking: false,
            },
            RenderOptions {
                add_generation_prompt: false,
                enable_thinking: true,
            },
        ] {
            let text = ours.render(&chat, options).expect("renders");
            assert_eq!(
                text,
                theirs.render(&chat, options).expect("renders"),
                "{at}"
            );
            assert!(text.starts_with("<|im_start|>system\nYou simulate a terminal.<|im_end|>\n"));
        }
        // The prompt tokenizes the same through both tokenizers too.
        let text = ours
            .render(&chat, RenderOptions::default())
            .expect("renders");
        let from_meta = Tokenizer::from_gguf_metadata(&meta, &gguf).expect("tokenizer");
        let from_json = Tokenizer::from_dir(&hf_dir).expect("tokenizer.json");
        assert_eq!(
            from_meta.encode(&text).expect("encodes"),
            from_json.encode(&text).expect("encodes")
        );
    }
}

#[test]
fn written_tokenizer_metadata_equals_the_converters() {
    // (GGUF written by llama.cpp's converter, the directory it converted, vocab size)
    for (gguf, hf_dir, vocab) in [
        (
            fixtures().join("small-flat-bf16.gguf"),
            fixtures().join("tokenizer"),
            320,
        ),
        (
            fixtures().join("tiny-world-bf16.gguf"),
            tiny_world_dir(),
            1024,
        ),
    ] {
        let at = gguf.display();
        let converter = metadata(&gguf);
        let ours: HashMap<String, Value> = gguf_tokenizer_metadata(&hf_dir, vocab)
            .expect("metadata")
            .into_iter()
            .collect();
        let mut keys: Vec<&String> = converter
            .keys()
            .filter(|k| k.starts_with("tokenizer."))
            .collect();
        keys.sort();
        let mut our_keys: Vec<&String> = ours.keys().collect();
        our_keys.sort();
        assert_eq!(our_keys, keys, "{at}");
        for key in keys {
            assert_eq!(
                format!("{:?}", ours[key]),
                format!("{:?}", converter[key]),
                "{at}: {key}"
            );
        }
        // And it reads back into the same tokenizer.
        let back = Tokenizer::from_gguf_metadata(&ours, &gguf).expect("tokenizer");
        let hf = Tokenizer::from_dir(&hf_dir).expect("tokenizer.json");
        for text in TEXTS {
            assert_eq!(
                back.encode(text).expect("encodes"),
                hf.encode(text).expect("encodes")
            );
        }
    }
}

#[test]
fn written_tokenizer_metadata_errors_name_the_file() {
    let tmp = tempfile::tempdir().expect("tmp");
    let err = gguf_tokenizer_metadata(tmp.path(), 10).expect_err("no tokenizer.json");
    assert!(err.to_string().contains("tokenizer.json"), "{err}");
    // The tiny world model's 1024 ids do not fit a 320-id model.
    let err = gguf_tokenizer_metadata(&tiny_world_dir(), 320).expect_err("ids too large");
    assert!(
        err.to_string().contains("not below the model's 320 ids"),
        "{err}"
    );
    std::fs::write(
        tmp.path().join("tokenizer.json"),
        r#"{"model": {"type": "WordPiece", "vocab": {}}, "pre_tokenizer": null}"#,
    )
    .expect("write");
    let err = gguf_tokenizer_metadata(tmp.path(), 10).expect_err("not BPE");
    assert!(err.to_string().contains("only BPE"), "{err}");
}
