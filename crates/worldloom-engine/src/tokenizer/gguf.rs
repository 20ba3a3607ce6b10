//! The tokenizer of a GGUF file, from its `tokenizer.ggml.*` metadata.
//!
//! llama.cpp's `convert_hf_to_gguf.py` stores a Hugging Face byte-level BPE
//! tokenizer (Qwen's, GPT-2's) as:
//!
//! | key | type | content |
//! |---|---|---|
//! | `tokenizer.ggml.model` | string | `gpt2` (byte-level BPE; the only model read here) |
//! | `tokenizer.ggml.pre` | string | the pre-tokenizer: `qwen35`, `qwen2`, `gpt-2`… |
//! | `tokenizer.ggml.tokens` | string array | every id's token, in byte-level form (`Ġ` for a space) |
//! | `tokenizer.ggml.token_type` | i32 array | 1 normal, 3 control (special added token), 4 user-defined (added token), 5 unused (padding `[PADn]`), 2 unknown, 6 byte |
//! | `tokenizer.ggml.merges` | string array | BPE merges in rank order, `"left right"` |
//! | `tokenizer.ggml.{bos,eos,padding}_token_id` | u32 | special ids, when the checkpoint has them |
//! | `tokenizer.chat_template` | string | the Jinja chat template (see [`crate::chat_template`]) |
//!
//! [`Tokenizer::from_gguf_metadata`] rebuilds the Hugging Face tokenizer
//! from these: normal tokens form the BPE vocabulary with the merges;
//! control and user-defined tokens become added tokens (special and not
//! special, matched before the BPE like `tokenizer.json`'s `added_tokens`);
//! unused padding ids are left out (the Hugging Face tokenizer has no such
//! ids either). The pre-tokenizer follows `tokenizer.ggml.pre` as llama.cpp
//! does (`src/llama-vocab.cpp`), written in the form of the original
//! `tokenizer.json`:
//!
//! | `pre` | normalizer | pre-tokenizer |
//! |---|---|---|
//! | `qwen35` | NFC | split on Qwen3.5's regex (letters with combining marks), then byte-level |
//! | `qwen2`, `deepseek-r1-qwen`, `megrez` | NFC | split on Qwen2's regex, then byte-level |
//! | `gpt-2` | none | byte-level with GPT-2's regex |
//!
//! Any other `model` or `pre` value is refused with an error naming the key.
//!
//! [`gguf_tokenizer_metadata`] goes the other way, as the converter does: a
//! model directory's `tokenizer.json`, `tokenizer_config.json`,
//! `config.json` and chat template to these keys, so that a GGUF file we
//! write carries its tokenizer (llama.cpp's server refuses files without
//! one).
//! The tests (`tests/gguf_tokenizer.rs`) check, on GGUF files written by
//! llama.cpp's converter, that the result encodes like the checkpoint's own
//! `tokenizer.json` and decodes back.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use candle_core::quantized::gguf_file::Value;
use serde_json::json;

use super::{Tokenizer, TokenizerError};

/// Qwen2's split regex, as in its `tokenizer.json`.
const QWEN2_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
/// Qwen3.5's split regex, as in its `tokenizer.json` (letters may carry
/// combining marks, `\p{M}`).
const QWEN35_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// llama.cpp's token types (`tokenizer.ggml.token_type`).
mod token_type {
    pub const NORMAL: i32 = 1;
    pub const UNKNOWN: i32 = 2;
    pub const CONTROL: i32 = 3;
    pub const USER_DEFINED: i32 = 4;
    pub const UNUSED: i32 = 5;
    pub const BYTE: i32 = 6;
}

/// The special token ids a GGUF file names (`tokenizer.ggml.*_token_id`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GgufSpecialIds {
    /// `tokenizer.ggml.bos_token_id`.
    pub bos: Option<u32>,
    /// `tokenizer.ggml.eos_token_id`: the end of a turn for chat models.
    pub eos: Option<u32>,
    /// `tokenizer.ggml.padding_token_id`.
    pub padding: Option<u32>,
}

impl GgufSpecialIds {
    /// Reads the ids; absent keys give `None`.
    ///
    /// # Errors
    /// [`TokenizerError::Metadata`] naming `path` and the key when one is
    /// present but not an unsigned integer.
    pub fn from_gguf_metadata(
        metadata: &HashMap<String, Value>,
        path: &Path,
    ) -> Result<Self, TokenizerError> {
        let id = |key: &str| -> Result<Option<u32>, TokenizerError> {
            match metadata.get(key) {
                None => Ok(None),
                Some(v) => integer(v)
                    .and_then(|n| u32::try_from(n).ok())
                    .map(Some)
                    .ok_or_else(|| meta_error(path, key, "expected a token id")),
            }
        };
        Ok(Self {
            bos: id("tokenizer.ggml.bos_token_id")?,
            eos: id("tokenizer.ggml.eos_token_id")?,
            padding: id("tokenizer.ggml.padding_token_id")?,
        })
    }
}

impl Tokenizer {
    /// Builds the tokenizer a GGUF file describes in its metadata (the
    /// `metadata` map of `candle_core::quantized::gguf_file::Content`);
    /// `path` is the file, named in errors and returned by
    /// [`Tokenizer::path`]. See the documentation of [`crate::tokenizer::gguf`] for the
    /// keys and how they map.
    ///
    /// # Errors
    /// [`TokenizerError::Metadata`] naming the file and key when a key is
    /// missing or of the wrong type, `tokenizer.ggml.model` is not `gpt2`,
    /// `tokenizer.ggml.pre` is not a supported pre-tokenizer, the token and
    /// type lists differ in length, or a merge names a token that is not in
    /// the vocabulary.
    pub fn from_gguf_metadata(
        metadata: &HashMap<String, Value>,
        path: &Path,
    ) -> Result<Self, TokenizerError> {
        let string = |key: &str| -> Result<&str, TokenizerError> {
            metadata
                .get(key)
                .ok_or_else(|| meta_error(path, key, "missing"))?
                .to_string()
                .map(String::as_str)
                .map_err(|_| meta_error(path, key, "expected a string"))
        };
        let model = string("tokenizer.ggml.model")?;
        if model != "gpt2" {
            return Err(meta_error(
                path,
                "tokenizer.ggml.model",
                &format!("`{model}` is not supported (only `gpt2`, byte-level BPE)"),
            ));
        }
        let pre = match metadata.get("tokenizer.ggml.pre") {
            Some(_) => string("tokenizer.ggml.pre")?,
            None => "gpt-2",
        };
        let (normalizer, pre_tokenizer) = pre_tokenizer(pre).ok_or_else(|| {
            meta_error(
                path,
                "tokenizer.ggml.pre",
                &format!(
                    "pre-tokenizer `{pre}` is not supported (supported: qwen35, qwen2, deepseek-r1-qwen, megrez, gpt-2)"
                ),
            )
        })?;

        let tokens = string_array(metadata, path, "tokenizer.ggml.tokens")?;
        let types: Vec<i32> = match metadata.get("tokenizer.ggml.token_type") {
            None => vec![token_type::NORMAL; tokens.len()],
            Some(v) => v
                .to_vec()
                .map_err(|_| meta_error(path, "tokenizer.ggml.token_type", "expected an array"))?
                .iter()
                .map(|t| integer(t).and_then(|n| i32::try_from(n).ok()))
                .collect::<Option<_>>()
                .ok_or_else(|| {
                    meta_error(path, "tokenizer.ggml.token_type", "expected integers")
                })?,
        };
        if types.len() != tokens.len() {
            return Err(meta_error(
                path,
                "tokenizer.ggml.token_type",
                &format!(
                    "{} types for {} tokens (tokenizer.ggml.tokens)",
                    types.len(),
                    tokens.len()
                ),
            ));
        }
        let merges = match metadata.get("tokenizer.ggml.merges") {
            None => Vec::new(),
            Some(_) => string_array(metadata, path, "tokenizer.ggml.merges")?,
        };

        let mut vocab = serde_json::Map::new();
        let mut added = Vec::new();
        for (id, (token, &kind)) in tokens.iter().zip(&types).enumerate() {
            match kind {
                token_type::NORMAL | token_type::BYTE | token_type::UNKNOWN => {
                    vocab.insert((*token).to_string(), json!(id));
                }
                token_type::CONTROL | token_type::USER_DEFINED => added.push(json!({
                    "id": id,
                    "content": token,
                    "single_word": false,
                    "lstrip": false,
                    "rstrip": false,
                    "normalized": false,
                    "special": kind == token_type::CONTROL,
                })),
                token_type::UNUSED => {}
                other => {
                    return Err(meta_error(
                        path,
                        "tokenizer.ggml.token_type",
                        &format!("id {id}: unknown token type {other}"),
                    ));
                }
            }
        }
        let merges = merges
            .iter()
            .enumerate()
            .map(|(rank, merge)| {
                // As llama.cpp: the separator is the first space after the
                // first character.
                let split = merge
                    .char_indices()
                    .skip(1)
                    .find(|&(_, c)| c == ' ')
                    .map(|(i, _)| i);
                let (left, right) = match split {
                    Some(i) => (&merge[..i], &merge[i + 1..]),
                    None => {
                        return Err(meta_error(
                            path,
                            "tokenizer.ggml.merges",
                            &format!("merge {rank} `{merge}` has no space"),
                        ));
                    }
                };
                for part in [left, right] {
                    if !vocab.contains_key(part) {
                        return Err(meta_error(
                            path,
                            "tokenizer.ggml.merges",
                            &format!("merge {rank} `{merge}`: `{part}` is not a vocabulary token"),
                        ));
                    }
                }
                Ok(json!([left, right]))
            })
            .collect::<Result<Vec<_>, _>>()?;

        let spec = json!({
            "version": "1.0",
            "truncation": null,
            "padding": null,
            "added_tokens": added,
            "normalizer": normalizer,
            "pre_tokenizer": pre_tokenizer,
            "post_processor": null,
            "decoder": {
                "type": "ByteLevel",
                "add_prefix_space": false,
                "trim_offsets": false,
                "use_regex": false,
            },
            "model": {
                "type": "BPE",
                "dropout": null,
                "unk_token": null,
                "continuing_subword_prefix": null,
                "end_of_word_suffix": null,
                "fuse_unk": false,
                "byte_fallback": false,
                "ignore_merges": false,
                "vocab": vocab,
                "merges": merges,
            },
        });
        let inner = tokenizers::Tokenizer::from_bytes(spec.to_string().as_bytes())
            .map_err(|e| meta_error(path, "tokenizer.ggml.tokens", &e.to_string()))?;
        Ok(Self {
            inner,
            path: path.to_path_buf(),
        })
    }
}

/// The `tokenizer.*` metadata llama.cpp's `convert_hf_to_gguf.py` writes for
/// the byte-level BPE tokenizer of model directory `dir`, for a model of
/// `vocab_size` ids:
/// - `tokenizer.ggml.model` `gpt2`; `tokenizer.ggml.pre` `qwen35`, `qwen2`
///   or `gpt-2`, recognised from `tokenizer.json`'s pre-tokenizer;
/// - `tokens` / `token_type` for every id below `vocab_size`: added tokens
///   marked `special` (or spelled `<|…|>`) are control (3), other added
///   tokens user-defined (4), vocabulary entries normal (1), ids without a
///   token `[PADn]`, unused (5);
/// - `merges` as `"left right"`;
/// - `bos` / `eos` / `padding_token_id` from `tokenizer_config.json`'s
///   `bos_token` / `eos_token` / `pad_token`, else `config.json`'s
///   `*_token_id`; `add_bos_token` / `add_eos_token` when
///   `tokenizer_config.json` sets them;
/// - `tokenizer.chat_template` from `chat_template.jinja`, else
///   `tokenizer_config.json`'s `chat_template` (its `default` entry when a
///   list), when there is one.
///
/// # Errors
/// [`TokenizerError::Load`] naming the file when `tokenizer.json` (or a
/// present `tokenizer_config.json` / `config.json` / `chat_template.jinja`)
/// cannot be read or parsed, is not a byte-level BPE, has a pre-tokenizer
/// llama.cpp has no type for, or holds an id at or above `vocab_size`.
pub fn gguf_tokenizer_metadata(
    dir: &Path,
    vocab_size: usize,
) -> Result<Vec<(String, Value)>, TokenizerError> {
    let tokenizer_path = dir.join("tokenizer.json");
    let json =
        read_json(&tokenizer_path)?.ok_or_else(|| load_error(&tokenizer_path, "file not found"))?;
    let model = &json["model"];
    if model["type"].as_str() != Some("BPE") {
        return Err(load_error(
            &tokenizer_path,
            "field `model.type`: only BPE tokenizers can be written to GGUF",
        ));
    }
    let pre = pre_name(&json["pre_tokenizer"]).ok_or_else(|| {
        load_error(
            &tokenizer_path,
            "field `pre_tokenizer`: not one llama.cpp has a type for (byte-level with the GPT-2, Qwen2 or Qwen3.5 split)",
        )
    })?;

    // id → (token, type)
    let mut entries: Vec<Option<(String, i32)>> = vec![None; vocab_size];
    let mut place = |id: u64, token: &str, kind: i32| -> Result<(), TokenizerError> {
        let slot = entries.get_mut(id as usize).ok_or_else(|| {
            load_error(
                &tokenizer_path,
                &format!("token `{token}` has id {id}, not below the model's {vocab_size} ids"),
            )
        })?;
        *slot = Some((token.to_string(), kind));
        Ok(())
    };
    let vocab = model["vocab"]
        .as_object()
        .ok_or_else(|| load_error(&tokenizer_path, "field `model.vocab`: expected an object"))?;
    for (token, id) in vocab {
        let id = id.as_u64().ok_or_else(|| {
            load_error(
                &tokenizer_path,
                &format!("field `model.vocab`: `{token}` has no integer id"),
            )
        })?;
        place(id, token, token_type::NORMAL)?;
    }
    let mut added_by_content = HashMap::new();
    for added in json["added_tokens"].as_array().into_iter().flatten() {
        let (Some(id), Some(content)) = (added["id"].as_u64(), added["content"].as_str()) else {
            return Err(load_error(
                &tokenizer_path,
                "field `added_tokens`: an entry lacks `id` or `content`",
            ));
        };
        let special = added["special"].as_bool().unwrap_or(false) || looks_special(content);
        let kind = if special {
            token_type::CONTROL
        } else {
            token_type::USER_DEFINED
        };
        place(id, content, kind)?;
        added_by_content.insert(content.to_string(), id);
    }
    let (tokens, types): (Vec<Value>, Vec<Value>) = entries
        .into_iter()
        .enumerate()
        .map(|(id, entry)| match entry {
            Some((token, kind)) => (Value::String(token), Value::I32(kind)),
            None => (
                Value::String(format!("[PAD{id}]")),
                Value::I32(token_type::UNUSED),
            ),
        })
        .unzip();
    let merges = model["merges"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| match m {
            serde_json::Value::String(s) => Ok(Value::String(s.clone())),
            serde_json::Value::Array(pair) => match (pair.first(), pair.get(1)) {
                (Some(serde_json::Value::String(a)), Some(serde_json::Value::String(b))) => {
                    Ok(Value::String(format!("{a} {b}")))
                }
                _ => Err(load_error(
                    &tokenizer_path,
                    "field `model.merges`: expected pairs of strings",
                )),
            },
            _ => Err(load_error(
                &tokenizer_path,
                "field `model.merges`: expected strings or pairs",
            )),
        })
        .collect::<Result<Vec<_>, _>>()?;

    let mut out = vec![
        (
            "tokenizer.ggml.model".to_string(),
            Value::String("gpt2".into()),
        ),
        ("tokenizer.ggml.pre".to_string(), Value::String(pre.into())),
        ("tokenizer.ggml.tokens".to_string(), Value::Array(tokens)),
        ("tokenizer.ggml.token_type".to_string(), Value::Array(types)),
        ("tokenizer.ggml.merges".to_string(), Value::Array(merges)),
    ];

    let config_path = dir.join("tokenizer_config.json");
    let config = read_json(&config_path)?;
    let model_config = read_json(&dir.join("config.json"))?;
    for (field, key) in [
        ("bos", "tokenizer.ggml.bos_token_id"),
        ("eos", "tokenizer.ggml.eos_token_id"),
        ("pad", "tokenizer.ggml.padding_token_id"),
    ] {
        let named = config
            .as_ref()
            .and_then(|c| match &c[format!("{field}_token")] {
                serde_json::Value::String(s) => Some(s.clone()),
                serde_json::Value::Object(o) => o.get("content")?.as_str().map(str::to_string),
                _ => None,
            });
        let id = match named {
            Some(token) => added_by_content
                .get(&token)
                .copied()
                .or_else(|| vocab.get(&token).and_then(serde_json::Value::as_u64)),
            None => model_config
                .as_ref()
                .and_then(|c| c[format!("{field}_token_id")].as_u64()),
        };
        if let Some(id) = id {
            out.push((key.to_string(), Value::U32(id as u32)));
        }
    }
    for field in ["add_bos_token", "add_eos_token"] {
        if let Some(flag) = config.as_ref().and_then(|c| c[field].as_bool()) {
            out.push((format!("tokenizer.ggml.{field}"), Value::Bool(flag)));
        }
    }
    let jinja_path = dir.join("chat_template.jinja");
    let template = match std::fs::read_to_string(&jinja_path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            config.as_ref().and_then(|c| match &c["chat_template"] {
                serde_json::Value::String(s) => Some(s.clone()),
                serde_json::Value::Array(items) => items
                    .iter()
                    .find(|t| t["name"].as_str() == Some("default"))
                    .and_then(|t| t["template"].as_str())
                    .map(str::to_string),
                _ => None,
            })
        }
        Err(e) => return Err(load_error(&jinja_path, &e.to_string())),
    };
    if let Some(template) = template {
        out.push((
            "tokenizer.chat_template".to_string(),
            Value::String(template),
        ));
    }
    Ok(out)
}

/// The llama.cpp pre-tokenizer type of a `tokenizer.json` pre-tokenizer.
fn pre_name(pre: &serde_json::Value) -> Option<&'static str> {
    match pre["type"].as_str()? {
        "ByteLevel" if pre["use_regex"].as_bool() == Some(true) => Some("gpt-2"),
        "Sequence" => {
            let parts = pre["pretokenizers"].as_array()?;
            let [split, byte_level] = parts.as_slice() else {
                return None;
            };
            if split["type"].as_str() != Some("Split")
                || byte_level["type"].as_str() != Some("ByteLevel")
                || byte_level["use_regex"].as_bool() == Some(true)
            {
                return None;
            }
            match split["pattern"]["Regex"].as_str()? {
                QWEN35_SPLIT => Some("qwen35"),
                QWEN2_SPLIT => Some("qwen2"),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The converter's rule for added tokens that ought to be control tokens.
fn looks_special(token: &str) -> bool {
    matches!(token, "<pad>" | "<mask>" | "<2mass>" | "[@BOS@]")
        || (token.starts_with("<|") && token.ends_with("|>"))
        || (token.starts_with("<\u{ff5c}") && token.ends_with("\u{ff5c}>"))
        || (token.starts_with("<unused") && token.ends_with('>'))
}

/// Reads a JSON file; `None` when it does not exist.
fn read_json(path: &Path) -> Result<Option<serde_json::Value>, TokenizerError> {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| load_error(path, &e.to_string())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(load_error(path, &e.to_string())),
    }
}

fn load_error(path: &Path, message: &str) -> TokenizerError {
    TokenizerError::Load {
        path: PathBuf::from(path),
        message: message.to_string(),
    }
}

/// The `tokenizer.json` normalizer and pre-tokenizer of a `pre` value.
fn pre_tokenizer(pre: &str) -> Option<(serde_json::Value, serde_json::Value)> {
    let split = |regex: &str| {
        (
            json!({"type": "NFC"}),
            json!({
                "type": "Sequence",
                "pretokenizers": [
                    {
                        "type": "Split",
                        "pattern": {"Regex": regex},
                        "behavior": "Isolated",
                        "invert": false,
                    },
                    {
                        "type": "ByteLevel",
                        "add_prefix_space": false,
                        "trim_offsets": false,
                        "use_regex": false,
                    },
                ],
            }),
        )
    };
    match pre {
        "qwen35" => Some(split(QWEN35_SPLIT)),
        "qwen2" | "deepseek-r1-qwen" | "megrez" => Some(split(QWEN2_SPLIT)),
        "gpt-2" => Some((
            serde_json::Value::Null,
            json!({
                "type": "ByteLevel",
                "add_prefix_space": false,
                "trim_offsets": true,
                "use_regex": true,
            }),
        )),
        _ => None,
    }
}

fn string_array<'a>(
    metadata: &'a HashMap<String, Value>,
    path: &Path,
    key: &str,
) -> Result<Vec<&'a str>, TokenizerError> {
    metadata
        .get(key)
        .ok_or_else(|| meta_error(path, key, "missing"))?
        .to_vec()
        .map_err(|_| meta_error(path, key, "expected an array of strings"))?
        .iter()
        .enumerate()
        .map(|(i, v)| {
            v.to_string()
                .map(String::as_str)
                .map_err(|_| meta_error(path, key, &format!("item {i} is not a string")))
        })
        .collect()
}

/// Any GGUF integer as i64 (u64 above i64::MAX gives `None`).
fn integer(v: &Value) -> Option<i64> {
    match *v {
        Value::U8(n) => Some(n.into()),
        Value::I8(n) => Some(n.into()),
        Value::U16(n) => Some(n.into()),
        Value::I16(n) => Some(n.into()),
        Value::U32(n) => Some(n.into()),
        Value::I32(n) => Some(n.into()),
        Value::U64(n) => i64::try_from(n).ok(),
        Value::I64(n) => Some(n),
        _ => None,
    }
}

fn meta_error(path: &Path, key: &str, message: &str) -> TokenizerError {
    TokenizerError::Metadata {
        path: path.to_path_buf(),
        key: key.to_string(),
        message: message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Value {
        Value::Array(items.iter().map(|s| Value::String((*s).into())).collect())
    }

    /// A hand-made vocabulary: bytes `a`, `b`, `Ġ`, the merge `a b`, one
    /// control token, one user-defined token and one unused id.
    fn metadata() -> HashMap<String, Value> {
        HashMap::from([
            ("tokenizer.ggml.model".into(), Value::String("gpt2".into())),
            ("tokenizer.ggml.pre".into(), Value::String("qwen35".into())),
            (
                "tokenizer.ggml.tokens".into(),
                strings(&["a", "b", "Ġ", "ab", "<|im_end|>", "<think>", "[PAD6]"]),
            ),
            (
                "tokenizer.ggml.token_type".into(),
                Value::Array([1, 1, 1, 1, 3, 4, 5].map(Value::I32).to_vec()),
            ),
            ("tokenizer.ggml.merges".into(), strings(&["a b"])),
            ("tokenizer.ggml.eos_token_id".into(), Value::U32(4)),
        ])
    }

    #[test]
    fn builds_bpe_with_added_tokens() {
        let tok = Tokenizer::from_gguf_metadata(&metadata(), Path::new("m.gguf")).expect("builds");
        assert_eq!(tok.path(), Path::new("m.gguf"));
        assert_eq!(
            tok.encode("ab a<think>b<|im_end|>").expect("encodes"),
            vec![3, 2, 0, 5, 1, 4]
        );
        assert_eq!(tok.special_ids(), vec![4]);
        assert_eq!(tok.token_id("[PAD6]"), None, "unused ids are left out");
        assert_eq!(tok.vocab_size(), 6);
        assert_eq!(
            tok.decode(&[3, 2, 0, 5, 4], true).expect("decodes"),
            "ab a<think>"
        );
        let ids =
            GgufSpecialIds::from_gguf_metadata(&metadata(), Path::new("m.gguf")).expect("ids");
        assert_eq!(
            ids,
            GgufSpecialIds {
                bos: None,
                eos: Some(4),
                padding: None
            }
        );
    }

    #[test]
    fn errors_name_the_file_and_key() {
        let path = Path::new("/models/x.gguf");
        let check = |meta: HashMap<String, Value>, key: &str, needle: &str| {
            let err = Tokenizer::from_gguf_metadata(&meta, path).expect_err("must fail");
            let text = err.to_string();
            assert!(text.contains("/models/x.gguf"), "{text}");
            assert!(text.contains(&format!("`{key}`")), "{text}");
            assert!(text.contains(needle), "{text}");
        };

        let mut m = metadata();
        m.remove("tokenizer.ggml.tokens");
        check(m, "tokenizer.ggml.tokens", "missing");

        let mut m = metadata();
        m.insert("tokenizer.ggml.model".into(), Value::String("llama".into()));
        check(m, "tokenizer.ggml.model", "`llama` is not supported");

        let mut m = metadata();
        m.insert("tokenizer.ggml.pre".into(), Value::String("falcon".into()));
        check(m, "tokenizer.ggml.pre", "`falcon` is not supported");

        let mut m = metadata();
        m.insert(
            "tokenizer.ggml.token_type".into(),
            Value::Array(vec![Value::I32(1)]),
        );
        check(m, "tokenizer.ggml.token_type", "1 types for 7 tokens");

        let mut m = metadata();
        m.insert("tokenizer.ggml.merges".into(), strings(&["a c"]));
        check(m, "tokenizer.ggml.merges", "`c` is not a vocabulary token");

        let mut m = metadata();
        m.insert("tokenizer.ggml.tokens".into(), Value::U32(3));
        check(m, "tokenizer.ggml.tokens", "expected an array of strings");

        let mut m = metadata();
        m.insert("tokenizer.ggml.eos_token_id".into(), Value::F32(1.0));
        let err = GgufSpecialIds::from_gguf_metadata(&m, path).expect_err("must fail");
        assert!(
            err.to_string().contains("`tokenizer.ggml.eos_token_id`"),
            "{err}"
        );
    }
}
