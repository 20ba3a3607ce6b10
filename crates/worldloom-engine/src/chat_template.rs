//! The model directory's own chat template, rendered with MiniJinja.
//!
//! Hugging Face model directories carry their prompt format as a Jinja
//! template: `chat_template.jinja` (current files) or the `chat_template`
//! field of `tokenizer_config.json` (older files; a string, or a list of
//! `{name, template}` of which `default` is used). Rendering follows
//! `transformers`' `apply_chat_template`: Jinja with `trim_blocks` and
//! `lstrip_blocks`, Python string methods (`minijinja-contrib`'s pycompat:
//! `startswith`, `split`, `lstrip`…), a `raise_exception(message)` function,
//! and the variables `messages` (list of `{role, content}`),
//! `add_generation_prompt`, `enable_thinking`, `bos_token` and `eos_token`.
//!
//! A GGUF file carries the same template in its `tokenizer.chat_template`
//! metadata ([`ChatTemplate::from_gguf_metadata`]).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use candle_core::quantized::gguf_file::Value as GgufValue;
use minijinja::{Environment, ErrorKind, UndefinedBehavior, Value, context};
use worldloom_core::ChatMessage;

const TEMPLATE_NAME: &str = "chat_template";

/// Errors of loading or rendering a chat template; each names the file (and
/// the template line when known).
#[derive(Debug, thiserror::Error)]
pub enum ChatTemplateError {
    /// The directory has neither `chat_template.jinja` nor a `chat_template`
    /// in `tokenizer_config.json`.
    #[error(
        "no chat template in {dir}: expected chat_template.jinja or a `chat_template` field in tokenizer_config.json"
    )]
    Missing {
        /// The model directory.
        dir: PathBuf,
    },
    /// A GGUF file has no `tokenizer.chat_template` in its metadata.
    #[error("no chat template in {path}: expected a `tokenizer.chat_template` metadata string")]
    MissingInGguf {
        /// The GGUF file.
        path: PathBuf,
    },
    /// A file could not be read or is not valid JSON / has a malformed field.
    #[error("{path}: {message}")]
    Read {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The template has a syntax error, or failed while rendering (for
    /// example through `raise_exception`).
    #[error("{source_name}{}: {message}", line.map(|l| format!(":{l}")).unwrap_or_default())]
    Template {
        /// Where the template came from (file, and field for
        /// `tokenizer_config.json`).
        source_name: String,
        /// 1-based line within the template text, when known.
        line: Option<usize>,
        /// What went wrong.
        message: String,
    },
}

/// Switches passed to the template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RenderOptions {
    /// Append the header of the assistant's next turn (`add_generation_prompt`).
    pub add_generation_prompt: bool,
    /// `enable_thinking`: Qwen3.5 templates open a think block in the
    /// generation prompt when true and write an empty one when false.
    pub enable_thinking: bool,
}

impl Default for RenderOptions {
    fn default() -> Self {
        Self {
            add_generation_prompt: true,
            enable_thinking: true,
        }
    }
}

/// A compiled chat template.
pub struct ChatTemplate {
    env: Environment<'static>,
    source_name: String,
    bos_token: Option<String>,
    eos_token: Option<String>,
}

impl std::fmt::Debug for ChatTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatTemplate")
            .field("source_name", &self.source_name)
            .finish()
    }
}

impl ChatTemplate {
    /// Loads the template of a model directory: `chat_template.jinja` when
    /// present, else `tokenizer_config.json`'s `chat_template`. `bos_token`
    /// and `eos_token` come from `tokenizer_config.json` when it has them.
    ///
    /// # Errors
    /// [`ChatTemplateError::Missing`] when neither exists;
    /// [`ChatTemplateError::Read`] for unreadable or malformed files;
    /// [`ChatTemplateError::Template`] for a syntax error (file and line).
    pub fn from_dir(dir: &Path) -> Result<Self, ChatTemplateError> {
        let config_path = dir.join("tokenizer_config.json");
        let config: Option<serde_json::Value> = match std::fs::read_to_string(&config_path) {
            Ok(text) => Some(
                serde_json::from_str(&text).map_err(|e| ChatTemplateError::Read {
                    path: config_path.clone(),
                    message: e.to_string(),
                })?,
            ),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                return Err(ChatTemplateError::Read {
                    path: config_path,
                    message: e.to_string(),
                });
            }
        };
        let special = |field: &str| -> Option<String> {
            match config.as_ref()?.get(field)? {
                serde_json::Value::String(s) => Some(s.clone()),
                // AddedToken form: {"content": "<|im_end|>", ...}
                serde_json::Value::Object(o) => o.get("content")?.as_str().map(str::to_string),
                _ => None,
            }
        };
        let (bos_token, eos_token) = (special("bos_token"), special("eos_token"));

        let jinja_path = dir.join("chat_template.jinja");
        let (source_name, source) = match std::fs::read_to_string(&jinja_path) {
            Ok(source) => (jinja_path.display().to_string(), source),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let source = match config.as_ref().and_then(|c| c.get("chat_template")) {
                    Some(serde_json::Value::String(s)) => s.clone(),
                    Some(serde_json::Value::Array(items)) => items
                        .iter()
                        .find(|t| t.get("name").and_then(|n| n.as_str()) == Some("default"))
                        .and_then(|t| t.get("template")?.as_str())
                        .map(str::to_string)
                        .ok_or_else(|| ChatTemplateError::Read {
                            path: config_path.clone(),
                            message: "field `chat_template`: the list has no entry named `default`"
                                .into(),
                        })?,
                    Some(other) => {
                        return Err(ChatTemplateError::Read {
                            path: config_path,
                            message: format!(
                                "field `chat_template`: expected a string, found {other}"
                            ),
                        });
                    }
                    None => {
                        return Err(ChatTemplateError::Missing {
                            dir: dir.to_path_buf(),
                        });
                    }
                };
                (
                    format!("{} (field `chat_template`)", config_path.display()),
                    source,
                )
            }
            Err(e) => {
                return Err(ChatTemplateError::Read {
                    path: jinja_path,
                    message: e.to_string(),
                });
            }
        };
        let mut template = Self::from_source(&source_name, source)?;
        template.bos_token = bos_token;
        template.eos_token = eos_token;
        Ok(template)
    }

    /// The template of a GGUF file: its `tokenizer.chat_template` metadata
    /// (the `metadata` map of `candle_core::quantized::gguf_file::Content`),
    /// as llama.cpp's converter copies it from the checkpoint's
    /// `chat_template.jinja` or `tokenizer_config.json`. `bos_token` and
    /// `eos_token` are the tokens (`tokenizer.ggml.tokens`) of
    /// `tokenizer.ggml.bos_token_id` and `eos_token_id` when present. `path`
    /// is the file, named in errors.
    ///
    /// # Errors
    /// [`ChatTemplateError::MissingInGguf`] when the key is absent;
    /// [`ChatTemplateError::Read`] when it or a special id has the wrong
    /// type; [`ChatTemplateError::Template`] for a syntax error (line within
    /// the template).
    pub fn from_gguf_metadata(
        metadata: &HashMap<String, GgufValue>,
        path: &Path,
    ) -> Result<Self, ChatTemplateError> {
        const KEY: &str = "tokenizer.chat_template";
        let read_error = |key: &str, message: &str| ChatTemplateError::Read {
            path: path.to_path_buf(),
            message: format!("metadata `{key}`: {message}"),
        };
        let source = metadata
            .get(KEY)
            .ok_or_else(|| ChatTemplateError::MissingInGguf {
                path: path.to_path_buf(),
            })?
            .to_string()
            .map_err(|_| read_error(KEY, "expected a string"))?
            .clone();
        let tokens = metadata
            .get("tokenizer.ggml.tokens")
            .and_then(|v| v.to_vec().ok());
        let special = |key: &str| -> Result<Option<String>, ChatTemplateError> {
            let Some(value) = metadata.get(key) else {
                return Ok(None);
            };
            let id = value
                .to_u32()
                .map_err(|_| read_error(key, "expected a token id"))?;
            let token = tokens
                .and_then(|t| t.get(id as usize))
                .and_then(|t| t.to_string().ok())
                .ok_or_else(|| {
                    read_error(key, &format!("id {id} is not in `tokenizer.ggml.tokens`"))
                })?;
            Ok(Some(token.clone()))
        };
        let bos_token = special("tokenizer.ggml.bos_token_id")?;
        let eos_token = special("tokenizer.ggml.eos_token_id")?;
        let mut template =
            Self::from_source(&format!("{} (metadata `{KEY}`)", path.display()), source)?;
        template.bos_token = bos_token;
        template.eos_token = eos_token;
        Ok(template)
    }

    /// Compiles template text; `source_name` names it in errors.
    ///
    /// # Errors
    /// [`ChatTemplateError::Template`] with the line of a syntax error.
    pub fn from_source(source_name: &str, source: String) -> Result<Self, ChatTemplateError> {
        let mut env = Environment::new();
        let syntax = minijinja::syntax::SyntaxConfig::builder()
            .trim_blocks(true)
            .lstrip_blocks(true)
            .build()
            .map_err(|e| template_error(source_name, &e))?;
        env.set_syntax(syntax);
        env.set_undefined_behavior(UndefinedBehavior::Lenient);
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        minijinja_contrib::add_to_environment(&mut env);
        env.add_function(
            "raise_exception",
            |message: String| -> Result<String, minijinja::Error> {
                Err(minijinja::Error::new(ErrorKind::InvalidOperation, message))
            },
        );
        env.add_template_owned(TEMPLATE_NAME, source)
            .map_err(|e| template_error(source_name, &e))?;
        Ok(Self {
            env,
            source_name: source_name.to_string(),
            bos_token: None,
            eos_token: None,
        })
    }

    /// Where the template came from (for messages).
    pub fn source_name(&self) -> &str {
        &self.source_name
    }

    /// Renders a chat to prompt text.
    ///
    /// # Errors
    /// [`ChatTemplateError::Template`] naming the template and line when
    /// rendering fails (an undefined function, `raise_exception`, a type
    /// error).
    pub fn render(
        &self,
        messages: &[ChatMessage],
        options: RenderOptions,
    ) -> Result<String, ChatTemplateError> {
        let messages: Vec<Value> = messages
            .iter()
            .map(|m| {
                let mut object = BTreeMap::new();
                object.insert("role", Value::from(role_name(m.role)));
                object.insert("content", Value::from(m.content.as_str()));
                Value::from(object)
            })
            .collect();
        let template = self
            .env
            .get_template(TEMPLATE_NAME)
            .map_err(|e| template_error(&self.source_name, &e))?;
        template
            .render(context! {
                messages => messages,
                add_generation_prompt => options.add_generation_prompt,
                enable_thinking => options.enable_thinking,
                bos_token => self.bos_token.clone().unwrap_or_default(),
                eos_token => self.eos_token.clone().unwrap_or_default(),
            })
            .map_err(|e| template_error(&self.source_name, &e))
    }
}

/// The OpenAI / Hugging Face role string of a [`worldloom_core::ChatRole`].
pub fn role_name(role: worldloom_core::ChatRole) -> &'static str {
    match role {
        worldloom_core::ChatRole::System => "system",
        worldloom_core::ChatRole::User => "user",
        worldloom_core::ChatRole::Assistant => "assistant",
    }
}

fn template_error(source_name: &str, e: &minijinja::Error) -> ChatTemplateError {
    let mut message = match e.detail() {
        Some(detail) => format!("{}: {detail}", e.kind()),
        None => e.kind().to_string(),
    };
    // Errors raised inside a nested call keep the root cause in `source`.
    let mut cause = std::error::Error::source(e);
    while let Some(inner) = cause {
        message.push_str(&format!(" (caused by: {inner})"));
        cause = inner.source();
    }
    ChatTemplateError::Template {
        source_name: source_name.to_string(),
        line: e.line(),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use worldloom_core::ChatRole;

    fn tiny_dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/tiny-world-model")
    }

    fn chat() -> Vec<ChatMessage> {
        vec![
            ChatMessage::new(ChatRole::System, "You simulate a terminal."),
            ChatMessage::new(ChatRole::User, "$ pwd"),
            ChatMessage::new(
                ChatRole::Assistant,
                "<think>\nit is home\n</think>\n\n<predicted_observation>/home/u</predicted_observation>",
            ),
            ChatMessage::new(ChatRole::User, "$ ls"),
        ]
    }

    #[test]
    fn tiny_template_renders_the_exact_prompt() {
        let t = ChatTemplate::from_dir(&tiny_dir()).expect("loads");
        assert!(t.source_name().ends_with("chat_template.jinja"));
        let text = t
            .render(&chat(), RenderOptions::default())
            .expect("renders");
        assert_eq!(
            text,
            "<|im_start|>system\nYou simulate a terminal.<|im_end|>\n\
             <|im_start|>user\n$ pwd<|im_end|>\n\
             <|im_start|>assistant\n<predicted_observation>/home/u</predicted_observation><|im_end|>\n\
             <|im_start|>user\n$ ls<|im_end|>\n\
             <|im_start|>assistant\n<think>\n"
        );
        let off = t
            .render(
                &chat(),
                RenderOptions {
                    add_generation_prompt: true,
                    enable_thinking: false,
                },
            )
            .expect("renders");
        assert!(off.ends_with(
            "<|im_start|>user\n$ ls<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
        ));
        let no_prompt = t
            .render(
                &chat(),
                RenderOptions {
                    add_generation_prompt: false,
                    enable_thinking: true,
                },
            )
            .expect("renders");
        assert!(no_prompt.ends_with("$ ls<|im_end|>\n"));
    }

    #[test]
    fn tokenizer_config_field_and_python_methods_work() {
        let dir = tempfile::tempdir().expect("tempdir");
        let template = r#"{%- for m in messages[::-1] %}{% if m.content.startswith('$') %}[{{ m.content.split(' ')[-1].upper() }}]{% endif %}{% endfor %}
{{- eos_token }}{% if enable_thinking %}T{% endif %}"#;
        let config = serde_json::json!({
            "eos_token": {"content": "<|im_end|>", "special": true},
            "chat_template": [{"name": "tool_use", "template": "x"}, {"name": "default", "template": template}],
        });
        std::fs::write(dir.path().join("tokenizer_config.json"), config.to_string())
            .expect("write");
        let t = ChatTemplate::from_dir(dir.path()).expect("loads");
        assert!(
            t.source_name()
                .contains("tokenizer_config.json (field `chat_template`)")
        );
        let text = t
            .render(&chat(), RenderOptions::default())
            .expect("renders");
        assert_eq!(text, "[LS][PWD]<|im_end|>T");
    }

    #[test]
    fn errors_name_the_file_and_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("chat_template.jinja");
        std::fs::write(
            &path,
            "{% for m in messages %}\n{{ m.content }\n{% endfor %}",
        )
        .expect("write");
        let err = ChatTemplate::from_dir(dir.path()).expect_err("syntax error");
        let text = err.to_string();
        assert!(
            text.starts_with(&format!("{}:2:", path.display())),
            "{text}"
        );

        std::fs::write(
            &path,
            "ok\n{% if messages|length > 1 %}{{ raise_exception('only one message') }}{% endif %}",
        )
        .expect("write");
        let t = ChatTemplate::from_dir(dir.path()).expect("compiles");
        let err = t
            .render(&chat(), RenderOptions::default())
            .expect_err("raises");
        let text = err.to_string();
        assert!(text.contains("chat_template.jinja:2:"), "{text}");
        assert!(text.contains("only one message"), "{text}");

        let empty = tempfile::tempdir().expect("tempdir");
        assert!(matches!(
            ChatTemplate::from_dir(empty.path()),
            Err(ChatTemplateError::Missing { .. })
        ));
    }

    #[test]
    fn gguf_metadata_template_and_special_tokens() {
        let tokens = GgufValue::Array(
            ["<s>", "<|im_end|>"]
                .iter()
                .map(|t| GgufValue::String((*t).into()))
                .collect(),
        );
        let mut meta = HashMap::from([
            (
                "tokenizer.chat_template".to_string(),
                GgufValue::String(
                    "{{ bos_token }}|{{ messages[0].content }}|{{ eos_token }}".into(),
                ),
            ),
            ("tokenizer.ggml.tokens".to_string(), tokens),
            ("tokenizer.ggml.bos_token_id".to_string(), GgufValue::U32(0)),
            ("tokenizer.ggml.eos_token_id".to_string(), GgufValue::U32(1)),
        ]);
        let path = Path::new("/m/x.gguf");
        let template = ChatTemplate::from_gguf_metadata(&meta, path).expect("template");
        assert_eq!(
            template.source_name(),
            "/m/x.gguf (metadata `tokenizer.chat_template`)"
        );
        let text = template
            .render(
                &[ChatMessage::new(ChatRole::User, "hi")],
                RenderOptions::default(),
            )
            .expect("renders");
        assert_eq!(text, "<s>|hi|<|im_end|>");

        meta.insert("tokenizer.ggml.eos_token_id".into(), GgufValue::U32(7));
        let err = ChatTemplate::from_gguf_metadata(&meta, path).expect_err("bad id");
        assert!(
            err.to_string()
                .contains("/m/x.gguf: metadata `tokenizer.ggml.eos_token_id`: id 7"),
            "{err}"
        );
        meta.insert("tokenizer.chat_template".into(), GgufValue::U32(1));
        let err = ChatTemplate::from_gguf_metadata(&meta, path).expect_err("not a string");
        assert!(
            err.to_string()
                .contains("metadata `tokenizer.chat_template`: expected a string"),
            "{err}"
        );
        meta.remove("tokenizer.chat_template");
        let err = ChatTemplate::from_gguf_metadata(&meta, path).expect_err("missing");
        assert!(
            matches!(err, ChatTemplateError::MissingInGguf { .. }),
            "{err}"
        );
        assert!(err.to_string().contains("/m/x.gguf"), "{err}");
    }
}
