//! Types of the studio's engine (`engine.rs`): settings, endpoint keys,
//! status, model folders.

use super::*;

/// Compute dtype of a local model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "lowercase")]
pub enum ModelDtype {
    /// 32-bit float.
    F32,
    /// bfloat16.
    Bf16,
    /// IEEE half precision.
    F16,
}

/// Speculative decoding of a local engine (`worldloom-engine`
/// `local::Drafting`): which drafter proposes tokens for the model to
/// verify. The output is the same in every mode; only speed differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum DraftMode {
    /// One token a forward.
    Off,
    /// Drafted from the aligned position in the current observation.
    Observation,
    /// Prompt lookup: after the latest match of the last tokens in the
    /// prompt.
    PromptLookup,
}

/// Which engine steps the world model. Saved per workspace (no secrets: an
/// endpoint's API key is read from the named environment variable or the OS
/// keyring when the engine is created).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EngineSettings {
    /// A baseline that needs no weights (`copy`: the current state
    /// unchanged, `worldloom-engine` `CopyEngine`).
    Baseline {
        /// The baseline's name (`copy`).
        name: String,
    },
    /// A Hugging Face model directory run in-process (`LocalEngine` over
    /// Qwen3.5-MoE).
    Local {
        /// The model directory on the back end's machine.
        model_dir: String,
        /// `cpu`, `cuda`, `cuda:N`, `metal`.
        device: String,
        /// Compute dtype.
        dtype: ModelDtype,
        /// Speculative decoding. Absent or `null`: `observation` (settings
        /// saved before this field load with drafting on).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        draft: Option<DraftMode>,
    },
    /// An OpenAI-compatible chat-completions endpoint.
    Openai {
        /// Base URL, e.g. `http://127.0.0.1:8000/v1`.
        base_url: String,
        /// The served model name.
        model: String,
        /// The environment variable holding the API key (`null`: no key).
        api_key_env: Option<String>,
        /// Step deadline in seconds: a step against this endpoint that has
        /// not finished by then ends with an error naming the limit, even
        /// when the endpoint keeps trickling bytes. Absent or `null`: none.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        step_deadline_s: Option<u32>,
        /// Where the API key comes from. Absent or `null`: `env` (the
        /// variable named by `api_key_env`), so settings saved before this
        /// field load as before.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        key_source: Option<KeySource>,
        /// The OS keyring account (service `worldloom`) holding the key when
        /// `key_source` is `keyring`. Absent, `null` or blank: the base URL
        /// as given. Only the account name is saved, never the key.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        keyring_account: Option<String>,
    },
}

/// Where an OpenAI-compatible endpoint's API key is read from when the
/// engine is created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum KeySource {
    /// The environment variable named by `api_key_env` (`null`: no key).
    #[default]
    Env,
    /// The OS keyring (Secret Service, macOS Keychain, Windows Credential
    /// Manager), service `worldloom`, account `keyring_account` or the base
    /// URL.
    Keyring,
}

/// `set_endpoint_key` request: stores an API key in the OS keyring.
#[derive(Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct SetEndpointKeyRequest {
    /// The keyring account (service `worldloom`): the endpoint's base URL or
    /// a name of the user's choosing. Must not be blank.
    pub account: String,
    /// The API key. Never echoed back, logged or written to the workspace;
    /// empty deletes the stored key.
    pub key: String,
}

impl std::fmt::Debug for SetEndpointKeyRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SetEndpointKeyRequest")
            .field("account", &self.account)
            .field("key", &"<redacted>")
            .finish()
    }
}

/// `endpoint_key_status` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct EndpointKeyStatusRequest {
    /// The keyring account (service `worldloom`).
    pub account: String,
}

/// Whether the OS keyring holds a key for an account (the key itself is never
/// returned).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct EndpointKeyStatus {
    /// The keyring account asked about.
    pub account: String,
    /// Whether a non-empty key is stored.
    pub stored: bool,
}

/// Generation parameters (`worldloom-engine` `GenerationParams`); defaults
/// from the Qwen-AgentWorld model card.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct GenerationParamsView {
    /// Softmax temperature; 0 is greedy.
    pub temperature: f64,
    /// Nucleus mass in (0, 1].
    pub top_p: f64,
    /// Keep the k most likely tokens; 0 keeps all.
    pub top_k: u32,
    /// Sampler seed, a u64 as a decimal string.
    pub seed: String,
    /// Upper bound on generated tokens.
    pub max_new_tokens: u32,
    /// Let the model reason before answering (`enable_thinking`).
    pub enable_thinking: bool,
    /// Ask for per-token log-probabilities.
    pub logprobs: bool,
    /// Stop right after the observation block closes.
    pub stop_after_observation: bool,
}

/// The workspace's engine and whether it is ready.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct EngineStatus {
    /// The saved settings (`null` only when none could be read).
    pub settings: Option<EngineSettings>,
    /// The saved generation parameters.
    pub params: GenerationParamsView,
    /// Whether an engine instance is loaded and can step now.
    pub ready: bool,
    /// The engine's provenance name (`copy`, `local:DIR`, `openai:MODEL`).
    pub name: Option<String>,
    /// A human description (`Qwen3.5-MoE 35B-A3B on cuda:0, bf16`).
    pub description: Option<String>,
    /// Why the engine could not be created, if it could not.
    pub error: Option<String>,
    /// Estimated device memory of a local model, bytes.
    #[ts(type = "number | null")]
    pub memory_estimate_bytes: Option<u64>,
}

/// `inspect_model_dir` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct InspectModelDirRequest {
    /// The model directory on the back end's machine.
    pub path: String,
}

/// Memory a model needs in one dtype.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct DtypeMemory {
    /// The dtype.
    pub dtype: ModelDtype,
    /// Weights, decode state for `context_tokens` tokens and scratch, bytes.
    #[ts(type = "number")]
    pub bytes: u64,
}

/// What a model directory holds, read before loading it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ModelDirInfo {
    /// The directory.
    pub path: String,
    /// `config.json` `model_type` (`qwen3_5_moe`).
    pub architecture: String,
    /// Parameters in total.
    #[ts(type = "number")]
    pub total_params: u64,
    /// Parameters active per token (routed experts counted `top_k` times).
    #[ts(type = "number")]
    pub active_params: u64,
    /// Estimated memory per dtype.
    pub memory: Vec<DtypeMemory>,
    /// The context length the estimates reserve decode state for, tokens.
    pub context_tokens: u32,
    /// Free memory on the CPU (or unified memory), bytes, when readable.
    #[ts(type = "number | null")]
    pub available_memory_bytes: Option<u64>,
    /// `tokenizer.json` is present (for a GGUF file: beside it, or else a
    /// tokenizer in its metadata).
    pub has_tokenizer: bool,
    /// A chat template is present (`chat_template.jinja` or in
    /// `tokenizer_config.json`; for a lone GGUF file
    /// `tokenizer.chat_template`).
    pub has_chat_template: bool,
    /// Devices this build can run on (`cpu`, `cuda:0`, `metal`).
    pub devices: Vec<String>,
}

/// `set_engine` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct SetEngineRequest {
    /// The engine.
    pub settings: EngineSettings,
    /// Generation parameters.
    pub params: GenerationParamsView,
}
