//! The model directory's tokenizer (`tokenizer.json`, Hugging Face
//! `tokenizers` format) and streaming detokenisation.
//!
//! Built on the `tokenizers` crate with its C-free regex backend
//! (`fancy-regex`), so it compiles everywhere the engine does.
//!
//! A GGUF file's `tokenizer.ggml.*` metadata builds the same tokenizer
//! ([`Tokenizer::from_gguf_metadata`], see [`gguf`]), so a lone `.gguf` is
//! enough.
//!
//! Byte-level BPE vocabularies (Qwen's among them) split one multi-byte UTF-8
//! character over several tokens. [`StreamDecoder`] turns generated ids into
//! text pieces as they arrive and never emits a piece that ends inside such a
//! character: it waits for the token that completes it.

use std::path::{Path, PathBuf};

pub mod gguf;

/// Errors of loading or running a tokenizer.
#[derive(Debug, thiserror::Error)]
pub enum TokenizerError {
    /// `tokenizer.json` could not be read or parsed.
    #[error("cannot load tokenizer {path}: {message}")]
    Load {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// A GGUF file's tokenizer metadata is missing a key, has a key of the
    /// wrong type, or describes a tokenizer this engine cannot build.
    #[error("{path}: metadata `{key}`: {message}")]
    Metadata {
        /// The GGUF file.
        path: PathBuf,
        /// The metadata key (`tokenizer.ggml.tokens`…).
        key: String,
        /// What is wrong.
        message: String,
    },
    /// Encoding or decoding failed.
    #[error("tokenizer {path}: {message}")]
    Run {
        /// The file the tokenizer came from.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
}

/// A tokenizer loaded from a model directory's `tokenizer.json` or built from
/// a GGUF file's metadata.
pub struct Tokenizer {
    inner: tokenizers::Tokenizer,
    path: PathBuf,
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer")
            .field("path", &self.path)
            .field("vocab_size", &self.vocab_size())
            .finish()
    }
}

impl Tokenizer {
    /// Loads `dir/tokenizer.json`.
    ///
    /// # Errors
    /// [`TokenizerError::Load`] naming the file when it is missing or not a
    /// valid `tokenizers` JSON file.
    pub fn from_dir(dir: &Path) -> Result<Self, TokenizerError> {
        Self::from_file(&dir.join("tokenizer.json"))
    }

    /// Loads a `tokenizer.json` file.
    ///
    /// # Errors
    /// [`TokenizerError::Load`] naming the file.
    pub fn from_file(path: &Path) -> Result<Self, TokenizerError> {
        let bytes = std::fs::read(path).map_err(|e| TokenizerError::Load {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        let inner =
            tokenizers::Tokenizer::from_bytes(&bytes).map_err(|e| TokenizerError::Load {
                path: path.to_path_buf(),
                message: e.to_string(),
            })?;
        Ok(Self {
            inner,
            path: path.to_path_buf(),
        })
    }

    /// The file this tokenizer was loaded from (`tokenizer.json`, or the
    /// `.gguf` whose metadata built it).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Number of ids, added tokens included.
    pub fn vocab_size(&self) -> usize {
        self.inner.get_vocab_size(true)
    }

    /// The id of a token string (a special or added token such as
    /// `<|im_end|>`, or a vocabulary entry), if it exists.
    pub fn token_id(&self, token: &str) -> Option<u32> {
        self.inner.token_to_id(token)
    }

    /// Ids of the added tokens marked `special` in `tokenizer.json`
    /// (`<|im_end|>`, `<|endoftext|>`…), sorted.
    pub fn special_ids(&self) -> Vec<u32> {
        let mut ids: Vec<u32> = self
            .inner
            .get_added_tokens_decoder()
            .into_iter()
            .filter(|(_, t)| t.special)
            .map(|(id, _)| id)
            .collect();
        ids.sort_unstable();
        ids
    }

    /// The vocabulary string of an id (byte-level form for BPE entries).
    pub fn id_to_token(&self, id: u32) -> Option<String> {
        self.inner.id_to_token(id)
    }

    /// Encodes text that already carries its special tokens (a rendered chat
    /// template): special-token strings in `text` become their ids and no
    /// further special tokens are added.
    ///
    /// # Errors
    /// [`TokenizerError::Run`] when the tokenizer fails.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, TokenizerError> {
        let encoding = self
            .inner
            .encode(text, false)
            .map_err(|e| self.run_error(e))?;
        Ok(encoding.get_ids().to_vec())
    }

    /// Decodes ids to text; special tokens are kept as their strings unless
    /// `skip_special_tokens`.
    ///
    /// # Errors
    /// [`TokenizerError::Run`] when an id is outside the vocabulary.
    pub fn decode(&self, ids: &[u32], skip_special_tokens: bool) -> Result<String, TokenizerError> {
        self.inner
            .decode(ids, skip_special_tokens)
            .map_err(|e| self.run_error(e))
    }

    fn run_error(&self, e: impl std::fmt::Display) -> TokenizerError {
        TokenizerError::Run {
            path: self.path.clone(),
            message: e.to_string(),
        }
    }
}

/// Incremental detokeniser: feed generated ids one at a time, get the text
/// they add.
///
/// A piece is returned only once it is valid text: while the ids seen so far
/// end inside a multi-byte UTF-8 character (the decoded text ends in
/// U+FFFD), [`StreamDecoder::step`] returns `None` and keeps the ids until
/// the character completes. Concatenating every returned piece gives the
/// same text as decoding all ids at once. Uses the `tokenizers` crate's
/// prefix/offset stream decoding (`step_decode_stream`); special tokens are
/// kept as text (`skip_special_tokens = false`) so the reasoning tags stay
/// visible.
#[derive(Debug, Clone, Default)]
pub struct StreamDecoder {
    ids: Vec<u32>,
    prefix: String,
    prefix_index: usize,
}

impl StreamDecoder {
    /// A decoder at the start of a generation.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one id; returns the new text it completes, if any.
    ///
    /// # Errors
    /// [`TokenizerError::Run`] when the id is outside the vocabulary.
    pub fn step(
        &mut self,
        tokenizer: &Tokenizer,
        id: u32,
    ) -> Result<Option<String>, TokenizerError> {
        tokenizers::tokenizer::step_decode_stream(
            &tokenizer.inner,
            vec![id],
            false,
            &mut self.ids,
            &mut self.prefix,
            &mut self.prefix_index,
        )
        .map_err(|e| tokenizer.run_error(e))
    }

    /// Text of ids that were fed but have not completed a character yet
    /// (decoded lossily, U+FFFD for the incomplete bytes); empty when
    /// nothing is pending. Use at the end of a generation cut inside a
    /// character.
    ///
    /// # Errors
    /// [`TokenizerError::Run`] when decoding fails.
    pub fn pending_text(&self, tokenizer: &Tokenizer) -> Result<String, TokenizerError> {
        if self.ids.is_empty() {
            return Ok(String::new());
        }
        let text = tokenizer.decode(&self.ids, false)?;
        Ok(text
            .get(self.prefix.len()..)
            .unwrap_or_default()
            .to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn tiny_dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/tiny-world-model")
    }

    fn tiny() -> Tokenizer {
        Tokenizer::from_dir(&tiny_dir()).expect("tiny tokenizer loads")
    }

    #[test]
    fn special_tokens_encode_to_single_ids() {
        let tok = tiny();
        let ids = tok
            .encode("<|im_start|>user\nhi<|im_end|>")
            .expect("encodes");
        assert_eq!(ids.first().copied(), tok.token_id("<|im_start|>"));
        assert_eq!(ids.last().copied(), tok.token_id("<|im_end|>"));
        assert_eq!(
            tok.decode(&ids, false).expect("decodes"),
            "<|im_start|>user\nhi<|im_end|>"
        );
        assert_eq!(tok.decode(&ids, true).expect("decodes"), "user\nhi");
        assert_eq!(tok.vocab_size(), 1024);
    }

    #[test]
    fn stream_decoding_never_splits_a_character() {
        let tok = tiny();
        // Characters absent from the training text: byte-level tokens, several per character.
        let text = "ok 한국어 😀 done <think>x</think>";
        let ids = tok.encode(text).expect("encodes");
        assert!(
            ids.len() > text.chars().count() / 2,
            "multi-byte characters split over tokens"
        );
        let mut decoder = StreamDecoder::new();
        let mut pieces = Vec::new();
        let mut nones = 0;
        for &id in &ids {
            match decoder.step(&tok, id).expect("step") {
                Some(piece) => {
                    assert!(
                        !piece.contains('\u{FFFD}'),
                        "piece {piece:?} holds a broken character"
                    );
                    pieces.push(piece);
                }
                None => nones += 1,
            }
        }
        assert!(
            nones >= 2,
            "incomplete characters were held back ({nones} times)"
        );
        assert_eq!(pieces.concat(), text);
        assert_eq!(decoder.pending_text(&tok).expect("pending"), "");
    }

    #[test]
    fn pending_text_reports_an_unfinished_character() {
        let tok = tiny();
        let ids = tok.encode("😀").expect("encodes");
        assert!(ids.len() >= 2);
        let mut decoder = StreamDecoder::new();
        assert_eq!(decoder.step(&tok, ids[0]).expect("step"), None);
        assert!(
            decoder
                .pending_text(&tok)
                .expect("pending")
                .contains('\u{FFFD}')
        );
    }

    #[test]
    fn missing_file_error_names_it() {
        let err = Tokenizer::from_dir(Path::new("/nonexistent/model")).expect_err("must fail");
        assert!(
            err.to_string()
                .contains("/nonexistent/model/tokenizer.json"),
            "{err}"
        );
    }
}
