//! Next-token sampling: repetition, presence and frequency penalties,
//! temperature, min-p, top-k, top-p (nucleus), seeded, greedy at
//! temperature 0; and the sampling defaults of a model directory.
//!
//! The order follows vLLM's sampler: the penalties change the raw logits
//! (over the tokens this sampler generated so far: `repetition_penalty`
//! divides a positive logit and multiplies a negative one, then
//! `frequency_penalty × count` and `presence_penalty` are subtracted); the
//! logits are divided by the temperature; tokens whose probability is below
//! `min_p` times the largest are dropped; all but the `top_k` largest are
//! dropped; then the smallest set of the most likely remaining tokens whose
//! probability mass reaches `top_p` is kept (always at least one token), and
//! the survivors are renormalised. Ties in top-k and the nucleus are broken
//! towards the lower id. Greedy decoding takes the argmax of the penalised
//! logits.

use std::collections::HashMap;
use std::path::Path;

use candle_core::Tensor;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::kernels::fused::{Candidates, sample_candidates};
use crate::world_model::GenerationParams;

/// Most candidates [`Sampler::sample_tensor`] and [`top_logprobs_tensor`]
/// select on the logits' device (one block-wide selection round per
/// candidate); a larger top-k copies the logits to the host instead.
pub const DEVICE_SAMPLING_MAX_K: usize = 64;

/// Errors of sampling and of reading sampling defaults.
#[derive(Debug, thiserror::Error)]
pub enum SamplingError {
    /// A parameter is out of range.
    #[error("invalid sampling parameter `{field}`: {message}")]
    InvalidParam {
        /// The parameter (`temperature`, `top_p`…).
        field: &'static str,
        /// Why it is invalid.
        message: String,
    },
    /// The logits are empty or contain no finite value.
    #[error("cannot sample: {0}")]
    BadLogits(String),
    /// `generation_config.json` is unreadable or malformed.
    #[error("{path}: {message}")]
    Config {
        /// The file.
        path: String,
        /// What is wrong (field and reason).
        message: String,
    },
}

/// A sampled token.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SampledToken {
    /// The token id.
    pub id: u32,
    /// Natural-log probability of `id` under the model's own distribution
    /// (softmax of the raw logits, temperature 1, no truncation), the value
    /// OpenAI-compatible servers report as `logprob`.
    pub logprob: f32,
    /// Natural-log probability of `id` under the distribution it was drawn
    /// from (after temperature, top-k and top-p); `0.0` for greedy decoding.
    pub sampling_logprob: f32,
}

/// Penalties on tokens already generated (vLLM semantics); the default
/// changes nothing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Penalties {
    /// Subtracted once from the logit of every generated token.
    pub presence: f32,
    /// Subtracted from a token's logit once per time it was generated.
    pub frequency: f32,
    /// Divides a positive logit of a generated token, multiplies a negative
    /// one; `1` is neutral.
    pub repetition: f32,
}

impl Default for Penalties {
    fn default() -> Self {
        Self {
            presence: 0.0,
            frequency: 0.0,
            repetition: 1.0,
        }
    }
}

impl Penalties {
    /// Whether these penalties change nothing.
    pub fn is_neutral(&self) -> bool {
        self.presence == 0.0 && self.frequency == 0.0 && self.repetition == 1.0
    }

    /// The penalised copy of `logits`, given how often each token id was
    /// generated (`counts`, id → count ≥ 1).
    pub fn apply(&self, logits: &[f32], counts: &HashMap<u32, u32>) -> Vec<f32> {
        let mut out = logits.to_vec();
        for (&id, &count) in counts {
            let Some(x) = out.get_mut(id as usize) else {
                continue;
            };
            if self.repetition != 1.0 {
                *x = if *x > 0.0 {
                    *x / self.repetition
                } else {
                    *x * self.repetition
                };
            }
            *x -= self.frequency * count as f32 + self.presence;
        }
        out
    }
}

/// Penalties, temperature, min-p, top-k, top-p and a seeded random
/// generator (ChaCha8, so a seed gives the same tokens on every platform).
///
/// The sampler remembers the tokens it returned, for the penalties: use one
/// sampler per generation.
#[derive(Debug, Clone)]
pub struct Sampler {
    temperature: f32,
    top_k: usize,
    top_p: f32,
    min_p: f32,
    penalties: Penalties,
    counts: HashMap<u32, u32>,
    rng: ChaCha8Rng,
}

impl Sampler {
    /// A sampler. `temperature` 0 is greedy; `top_k` 0 and `top_p` 1 disable
    /// those filters.
    ///
    /// # Errors
    /// [`SamplingError::InvalidParam`] for a negative or non-finite
    /// temperature, or `top_p` outside (0, 1].
    pub fn new(
        temperature: f32,
        top_k: usize,
        top_p: f32,
        seed: u64,
    ) -> Result<Self, SamplingError> {
        if !temperature.is_finite() || temperature < 0.0 {
            return Err(SamplingError::InvalidParam {
                field: "temperature",
                message: format!("{temperature} (must be a finite number ≥ 0)"),
            });
        }
        if !(top_p > 0.0 && top_p <= 1.0) {
            return Err(SamplingError::InvalidParam {
                field: "top_p",
                message: format!("{top_p} (must be in (0, 1])"),
            });
        }
        Ok(Self {
            temperature,
            top_k,
            top_p,
            min_p: 0.0,
            penalties: Penalties::default(),
            counts: HashMap::new(),
            rng: ChaCha8Rng::seed_from_u64(seed),
        })
    }

    /// This sampler with `min_p` filtering.
    ///
    /// # Errors
    /// [`SamplingError::InvalidParam`] when `min_p` is outside [0, 1].
    pub fn with_min_p(mut self, min_p: f32) -> Result<Self, SamplingError> {
        if !(0.0..=1.0).contains(&min_p) {
            return Err(SamplingError::InvalidParam {
                field: "min_p",
                message: format!("{min_p} (must be in [0, 1])"),
            });
        }
        self.min_p = min_p;
        Ok(self)
    }

    /// This sampler with penalties on the tokens it generates.
    ///
    /// # Errors
    /// [`SamplingError::InvalidParam`] when a penalty is not finite or
    /// `repetition` is not > 0.
    pub fn with_penalties(mut self, penalties: Penalties) -> Result<Self, SamplingError> {
        for (field, x) in [
            ("presence_penalty", penalties.presence),
            ("frequency_penalty", penalties.frequency),
        ] {
            if !x.is_finite() {
                return Err(SamplingError::InvalidParam {
                    field,
                    message: format!("{x} (must be a finite number)"),
                });
            }
        }
        if !(penalties.repetition.is_finite() && penalties.repetition > 0.0) {
            return Err(SamplingError::InvalidParam {
                field: "repetition_penalty",
                message: format!("{} (must be > 0)", penalties.repetition),
            });
        }
        self.penalties = penalties;
        Ok(self)
    }

    /// A sampler for a request's parameters (temperature, top-k, top-p,
    /// min-p, penalties, seed).
    ///
    /// # Errors
    /// As [`Sampler::new`], [`Sampler::with_min_p`] and
    /// [`Sampler::with_penalties`].
    pub fn from_params(params: &GenerationParams) -> Result<Self, SamplingError> {
        Self::new(params.temperature, params.top_k, params.top_p, params.seed)?
            .with_min_p(params.min_p)?
            .with_penalties(Penalties {
                presence: params.presence_penalty,
                frequency: params.frequency_penalty,
                repetition: params.repetition_penalty,
            })
    }

    /// Whether this sampler decodes greedily (temperature 0).
    pub fn is_greedy(&self) -> bool {
        self.temperature == 0.0
    }

    /// Picks the next token from last-position logits (`[vocab]`).
    ///
    /// # Errors
    /// [`SamplingError::BadLogits`] when `logits` is empty or has no finite
    /// value.
    ///
    /// The returned token counts as generated for the penalties of later
    /// calls.
    pub fn sample(&mut self, logits: &[f32]) -> Result<SampledToken, SamplingError> {
        let token = self.pick(logits)?;
        *self.counts.entry(token.id).or_insert(0) += 1;
        Ok(token)
    }

    /// The distribution the next token would be drawn from (see
    /// [`candidate_distribution`]), penalties and min-p included; `None`
    /// for greedy decoding.
    ///
    /// # Errors
    /// [`SamplingError::BadLogits`] as [`Sampler::sample`].
    pub fn distribution(&self, logits: &[f32]) -> Result<Option<Vec<(u32, f32)>>, SamplingError> {
        if self.is_greedy() {
            return Ok(None);
        }
        let penalised = self.penalised(logits);
        filtered_distribution(
            &penalised,
            self.temperature,
            self.min_p,
            self.top_k,
            self.top_p,
        )
        .map(Some)
    }

    /// As [`Sampler::sample`], from logits `[vocab]` f32 on any device,
    /// with the same tokens for the same seed. Off the CPU, greedy
    /// decoding and sampling with a top-k of at most
    /// [`DEVICE_SAMPLING_MAX_K`] select
    /// the candidates where the logits are (on a GPU: two kernels) and copy
    /// back only them and the log-softmax normaliser (`3k + 2` values);
    /// penalties over generated tokens, top-k 0 (whole-vocabulary top-p)
    /// and larger top-k copy the logits to the host and call
    /// [`Sampler::sample`]. The reported `logprob` is computed from a
    /// normaliser summed in f32 on a GPU (f64 on the host), so it may
    /// differ from [`Sampler::sample`]'s in the last digits.
    ///
    /// # Errors
    /// [`SamplingError::BadLogits`] for logits that are not an f32 vector
    /// or have no finite value.
    pub fn sample_tensor(&mut self, logits: &Tensor) -> Result<SampledToken, SamplingError> {
        // On the CPU the host path is the faster one (no copy to speak of,
        // a partial sort instead of k selection passes).
        self.sample_selected(logits, !logits.device().is_cpu())
    }

    /// [`Sampler::sample_tensor`], selecting candidates with the fused op
    /// wherever the logits are when `select` (tests run it on the CPU).
    fn sample_selected(
        &mut self,
        logits: &Tensor,
        select: bool,
    ) -> Result<SampledToken, SamplingError> {
        let Some((k, temperature)) = self.device_selection().filter(|_| select) else {
            let host: Vec<f32> = logits.to_vec1().map_err(bad_logits)?;
            return self.sample(&host);
        };
        let candidates = sample_candidates(logits, k, temperature).map_err(bad_logits)?;
        let token = self.pick_candidates(&candidates)?;
        *self.counts.entry(token.id).or_insert(0) += 1;
        Ok(token)
    }

    /// The selection [`Sampler::sample_tensor`] can make on the device:
    /// (candidates, temperature they are ranked by), or `None`.
    fn device_selection(&self) -> Option<(usize, f32)> {
        if !(self.penalties.is_neutral() || self.counts.is_empty()) {
            return None;
        }
        if self.is_greedy() {
            Some((1, 1.0))
        } else if self.top_k > 0 && self.top_k <= DEVICE_SAMPLING_MAX_K {
            Some((self.top_k, self.temperature))
        } else {
            None
        }
    }

    /// [`Sampler::pick`] over the device's candidates: the same
    /// distribution (min-p, top-k and top-p only ever keep a prefix of the
    /// ranked logits, and the candidates are the top k of that ranking) and
    /// the same draw.
    fn pick_candidates(&mut self, c: &Candidates) -> Result<SampledToken, SamplingError> {
        let logprob = |id: u32| -> f32 {
            c.scaled
                .iter()
                .position(|&(i, _)| i == id)
                .map_or(f32::NEG_INFINITY, |at| {
                    (f64::from(c.raw[at] - c.max) - c.log_sum) as f32
                })
        };
        if self.is_greedy() {
            let id = c.scaled[0].0;
            return Ok(SampledToken {
                id,
                logprob: logprob(id),
                sampling_logprob: 0.0,
            });
        }
        let candidates =
            distribution_of_ranked(c.scaled.clone(), self.min_p, self.top_k, self.top_p);
        let chosen = self.draw(&candidates);
        Ok(SampledToken {
            id: chosen.0,
            logprob: logprob(chosen.0),
            sampling_logprob: chosen.1.ln(),
        })
    }

    /// One draw from a distribution (most likely first): the first
    /// candidate whose cumulative probability exceeds a uniform number.
    fn draw(&mut self, candidates: &[(u32, f32)]) -> (u32, f32) {
        let u: f32 = self.rng.random::<f32>();
        let mut cumulative = 0.0f32;
        let mut chosen = candidates[candidates.len() - 1];
        for &(id, p) in candidates {
            cumulative += p;
            if u < cumulative {
                chosen = (id, p);
                break;
            }
        }
        chosen
    }

    fn penalised<'a>(&self, logits: &'a [f32]) -> std::borrow::Cow<'a, [f32]> {
        if self.penalties.is_neutral() || self.counts.is_empty() {
            std::borrow::Cow::Borrowed(logits)
        } else {
            std::borrow::Cow::Owned(self.penalties.apply(logits, &self.counts))
        }
    }

    fn pick(&mut self, logits: &[f32]) -> Result<SampledToken, SamplingError> {
        // Only the chosen token's model log-probability is needed: the
        // normaliser once, no [vocab] vector (the same value log_softmax
        // gives for that token).
        let normaliser = LogNormaliser::of(logits)?;
        let penalised = self.penalised(logits);
        if self.is_greedy() {
            let id = argmax(&penalised)?;
            return Ok(SampledToken {
                id,
                logprob: normaliser.logprob(logits, id),
                sampling_logprob: 0.0,
            });
        }
        let candidates = filtered_distribution(
            &penalised,
            self.temperature,
            self.min_p,
            self.top_k,
            self.top_p,
        )?;
        let chosen = self.draw(&candidates);
        Ok(SampledToken {
            id: chosen.0,
            logprob: normaliser.logprob(logits, chosen.0),
            sampling_logprob: chosen.1.ln(),
        })
    }
}

/// The `n` most likely tokens under the model's own distribution (softmax
/// of `logits`, no temperature or truncation): `(id, natural-log
/// probability)`, most likely first, ties towards the lower id; fewer when
/// fewer logits are finite.
///
/// # Errors
/// [`SamplingError::BadLogits`] when there is no finite logit.
pub fn top_logprobs(logits: &[f32], n: usize) -> Result<Vec<(u32, f32)>, SamplingError> {
    let logprobs = log_softmax(logits)?;
    let mut finite: Vec<(u32, f32)> = logprobs
        .iter()
        .enumerate()
        .filter(|(_, x)| x.is_finite())
        .map(|(i, &x)| (i as u32, x))
        .collect();
    let order = |a: &(u32, f32), b: &(u32, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    if n == 0 {
        return Ok(Vec::new());
    }
    if n < finite.len() {
        finite.select_nth_unstable_by(n - 1, order);
        finite.truncate(n);
    }
    finite.sort_by(order);
    Ok(finite)
}

/// As [`top_logprobs`], from logits `[vocab]` f32 on any device: off the
/// CPU, for `n` up to [`DEVICE_SAMPLING_MAX_K`], only the `n` best and the normaliser
/// leave the device (the log-probabilities may differ from
/// [`top_logprobs`]'s in the last digits, see [`Sampler::sample_tensor`]);
/// otherwise the logits are copied to the host.
///
/// # Errors
/// [`SamplingError::BadLogits`] for logits that are not an f32 vector or
/// have no finite value.
pub fn top_logprobs_tensor(logits: &Tensor, n: usize) -> Result<Vec<(u32, f32)>, SamplingError> {
    if n == 0 {
        return Ok(Vec::new());
    }
    top_logprobs_selected(logits, n, !logits.device().is_cpu())
}

/// [`top_logprobs_tensor`], selecting with the fused op wherever the logits
/// are when `select`.
fn top_logprobs_selected(
    logits: &Tensor,
    n: usize,
    select: bool,
) -> Result<Vec<(u32, f32)>, SamplingError> {
    if n > DEVICE_SAMPLING_MAX_K || !select {
        let host: Vec<f32> = logits.to_vec1().map_err(bad_logits)?;
        return top_logprobs(&host, n);
    }
    let c = sample_candidates(logits, n, 1.0).map_err(bad_logits)?;
    Ok(c.scaled
        .iter()
        .zip(&c.raw)
        .map(|(&(id, _), &x)| (id, (f64::from(x - c.max) - c.log_sum) as f32))
        .collect())
}

fn bad_logits(e: candle_core::Error) -> SamplingError {
    SamplingError::BadLogits(e.to_string())
}

/// Index of the largest finite logit (the lowest index among ties).
///
/// # Errors
/// [`SamplingError::BadLogits`] when there is no finite logit.
pub fn argmax(logits: &[f32]) -> Result<u32, SamplingError> {
    let mut best: Option<(usize, f32)> = None;
    for (i, &x) in logits.iter().enumerate() {
        if x.is_nan() || x == f32::INFINITY {
            continue;
        }
        if best.is_none_or(|(_, b)| x > b) {
            best = Some((i, x));
        }
    }
    match best {
        Some((i, x)) if x.is_finite() => Ok(i as u32),
        _ => Err(SamplingError::BadLogits(format!(
            "no finite logit among {}",
            logits.len()
        ))),
    }
}

/// The max and the log of Σ exp(x − max) (in f64) over the finite logits:
/// what turns a logit into its log-probability.
#[derive(Debug, Clone, Copy)]
struct LogNormaliser {
    max: f32,
    log_sum: f64,
}

impl LogNormaliser {
    fn of(logits: &[f32]) -> Result<Self, SamplingError> {
        let max = logits
            .iter()
            .copied()
            .filter(|x| x.is_finite())
            .fold(f32::NEG_INFINITY, f32::max);
        if !max.is_finite() {
            return Err(SamplingError::BadLogits(format!(
                "no finite logit among {}",
                logits.len()
            )));
        }
        let sum: f64 = logits
            .iter()
            .filter(|x| x.is_finite())
            .map(|&x| f64::from(x - max).exp())
            .sum();
        Ok(Self {
            max,
            log_sum: sum.ln(),
        })
    }

    /// The log-probability of logit `x` (`-inf` when not finite).
    fn apply(&self, x: f32) -> f32 {
        if x.is_finite() {
            (f64::from(x - self.max) - self.log_sum) as f32
        } else {
            f32::NEG_INFINITY
        }
    }

    /// The log-probability of token `id` of `logits`.
    fn logprob(&self, logits: &[f32], id: u32) -> f32 {
        logits
            .get(id as usize)
            .map_or(f32::NEG_INFINITY, |&x| self.apply(x))
    }
}

/// Natural-log softmax of `logits` (`[vocab]` → `[vocab]`), computed stably
/// in f64 and returned as f32; non-finite logits get `-inf`.
///
/// # Errors
/// [`SamplingError::BadLogits`] when there is no finite logit.
pub fn log_softmax(logits: &[f32]) -> Result<Vec<f32>, SamplingError> {
    let normaliser = LogNormaliser::of(logits)?;
    Ok(logits.iter().map(|&x| normaliser.apply(x)).collect())
}

/// The distribution a token is drawn from: `(id, probability)` of the
/// tokens that survive temperature, top-k and top-p, most likely first
/// (ties: lower id first), probabilities summing to 1. `temperature` must be
/// > 0 (greedy decoding does not need a distribution).
///
/// # Errors
/// [`SamplingError::BadLogits`] when there is no finite logit;
/// [`SamplingError::InvalidParam`] when `temperature` ≤ 0.
pub fn candidate_distribution(
    logits: &[f32],
    temperature: f32,
    top_k: usize,
    top_p: f32,
) -> Result<Vec<(u32, f32)>, SamplingError> {
    filtered_distribution(logits, temperature, 0.0, top_k, top_p)
}

/// As [`candidate_distribution`], with min-p filtering after the
/// temperature: tokens whose probability is below `min_p` times the most
/// likely token's are dropped before top-k and top-p (`0` keeps all).
///
/// # Errors
/// As [`candidate_distribution`].
pub fn filtered_distribution(
    logits: &[f32],
    temperature: f32,
    min_p: f32,
    top_k: usize,
    top_p: f32,
) -> Result<Vec<(u32, f32)>, SamplingError> {
    if temperature.is_nan() || temperature <= 0.0 {
        return Err(SamplingError::InvalidParam {
            field: "temperature",
            message: format!("{temperature} (a distribution needs temperature > 0)"),
        });
    }
    let order: Vec<(u32, f32)> = logits
        .iter()
        .enumerate()
        .filter(|(_, x)| x.is_finite())
        .map(|(i, &x)| (i as u32, x / temperature))
        .collect();
    if order.is_empty() {
        return Err(SamplingError::BadLogits(format!(
            "no finite logit among {}",
            logits.len()
        )));
    }
    Ok(distribution_of_ranked(order, min_p, top_k, top_p))
}

/// The tail of [`filtered_distribution`] over `(id, logit / temperature)`
/// pairs of finite logits (not empty, any order): min-p, top-k, top-p,
/// renormalised. Also what [`Sampler::sample_tensor`] applies to the
/// device's candidates.
fn distribution_of_ranked(
    mut order: Vec<(u32, f32)>,
    min_p: f32,
    top_k: usize,
    top_p: f32,
) -> Vec<(u32, f32)> {
    // Most likely first, ties towards the lower id: a total order, so
    // filtering, then selecting the top k, then sorting only those gives
    // the same list as sorting everything first.
    let by_rank = |a: &(u32, f32), b: &(u32, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    if min_p > 0.0 {
        // p_i / p_max = exp(x_i - x_max) ≥ min_p
        let best = order
            .iter()
            .min_by(|a, b| by_rank(a, b))
            .map_or(f32::NEG_INFINITY, |&(_, x)| x);
        let floor = best + min_p.ln();
        order.retain(|&(_, x)| x >= floor);
    }
    if top_k > 0 && top_k < order.len() {
        order.select_nth_unstable_by(top_k - 1, by_rank);
        order.truncate(top_k);
    }
    order.sort_by(by_rank);
    let max = order[0].1;
    let weights: Vec<f64> = order
        .iter()
        .map(|&(_, x)| f64::from(x - max).exp())
        .collect();
    let total: f64 = weights.iter().sum();
    let mut kept = Vec::with_capacity(order.len());
    let mut mass_before = 0.0f64;
    for (&(id, _), &w) in order.iter().zip(&weights) {
        if !kept.is_empty() && mass_before >= f64::from(top_p) {
            break;
        }
        let p = w / total;
        kept.push((id, p));
        mass_before += p;
    }
    let kept_total: f64 = kept.iter().map(|&(_, p)| p).sum();
    kept.into_iter()
        .map(|(id, p)| (id, (p / kept_total) as f32))
        .collect()
}

/// The sampling-relevant fields of a model directory's
/// `generation_config.json` (Hugging Face `GenerationConfig`); absent fields
/// are `None`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GenerationConfig {
    /// `temperature`.
    pub temperature: Option<f32>,
    /// `top_p`.
    pub top_p: Option<f32>,
    /// `top_k`.
    pub top_k: Option<usize>,
    /// `do_sample`; `false` means greedy decoding in `transformers`.
    pub do_sample: Option<bool>,
    /// `max_new_tokens`.
    pub max_new_tokens: Option<usize>,
    /// `eos_token_id`, a number or a list of numbers in the file.
    pub eos_token_ids: Vec<u32>,
}

impl GenerationConfig {
    /// Reads `dir/generation_config.json`; a missing file gives the empty
    /// config (every field `None`).
    ///
    /// # Errors
    /// [`SamplingError::Config`] naming the file and field when the file is
    /// not JSON or a field has the wrong type.
    pub fn from_dir(dir: &Path) -> Result<Self, SamplingError> {
        let path = dir.join("generation_config.json");
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(e) => {
                return Err(SamplingError::Config {
                    path: path.display().to_string(),
                    message: e.to_string(),
                });
            }
        };
        Self::from_json(&text).map_err(|message| SamplingError::Config {
            path: path.display().to_string(),
            message,
        })
    }

    /// Parses the JSON text of a `generation_config.json`.
    ///
    /// # Errors
    /// A message naming the bad field (or the JSON error with line and
    /// column).
    pub fn from_json(text: &str) -> Result<Self, String> {
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let object = value.as_object().ok_or("expected a JSON object")?;
        let number = |field: &str| -> Result<Option<f64>, String> {
            match object.get(field) {
                None | Some(serde_json::Value::Null) => Ok(None),
                Some(v) => v
                    .as_f64()
                    .map(Some)
                    .ok_or(format!("field `{field}`: expected a number, found {v}")),
            }
        };
        let count = |field: &str| -> Result<Option<usize>, String> {
            match object.get(field) {
                None | Some(serde_json::Value::Null) => Ok(None),
                Some(v) => v.as_u64().map(|n| Some(n as usize)).ok_or(format!(
                    "field `{field}`: expected a non-negative integer, found {v}"
                )),
            }
        };
        let do_sample = match object.get("do_sample") {
            None | Some(serde_json::Value::Null) => None,
            Some(v) => Some(v.as_bool().ok_or(format!(
                "field `do_sample`: expected true or false, found {v}"
            ))?),
        };
        let eos_token_ids = match object.get("eos_token_id") {
            None | Some(serde_json::Value::Null) => Vec::new(),
            Some(serde_json::Value::Array(items)) => items
                .iter()
                .map(|v| {
                    v.as_u64()
                        .and_then(|n| u32::try_from(n).ok())
                        .ok_or(format!(
                            "field `eos_token_id`: expected token ids, found {v}"
                        ))
                })
                .collect::<Result<_, _>>()?,
            Some(v) => vec![
                v.as_u64()
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or(format!(
                        "field `eos_token_id`: expected a token id, found {v}"
                    ))?,
            ],
        };
        Ok(Self {
            temperature: number("temperature")?.map(|x| x as f32),
            top_p: number("top_p")?.map(|x| x as f32),
            top_k: count("top_k")?,
            do_sample,
            max_new_tokens: count("max_new_tokens")?,
            eos_token_ids,
        })
    }

    /// Default request parameters: the model card's
    /// ([`GenerationParams::default`]: temperature 0.6, top-p 0.95,
    /// top-k 20) overridden by every field this file sets;
    /// `do_sample: false` means temperature 0 (greedy).
    pub fn default_params(&self) -> GenerationParams {
        let mut params = GenerationParams::default();
        if let Some(t) = self.temperature {
            params.temperature = t;
        }
        if let Some(p) = self.top_p {
            params.top_p = p;
        }
        if let Some(k) = self.top_k {
            params.top_k = k;
        }
        if let Some(n) = self.max_new_tokens {
            params.max_new_tokens = n;
        }
        if self.do_sample == Some(false) {
            params.temperature = 0.0;
        }
        params
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ln(p: &[f32]) -> Vec<f32> {
        p.iter().map(|x| x.ln()).collect()
    }

    #[test]
    fn greedy_is_argmax_with_model_logprob() {
        let logits = [0.5, 3.0, -1.0, 3.0, 2.9];
        let mut s = Sampler::new(0.0, 20, 0.95, 7).expect("valid");
        let t = s.sample(&logits).expect("samples");
        assert_eq!(t.id, 1, "first of the tied maxima");
        let z: f32 = logits.iter().map(|x| x.exp()).sum();
        assert!((t.logprob - (3.0f32.exp() / z).ln()).abs() < 1e-6);
        assert_eq!(t.sampling_logprob, 0.0);
        assert_eq!(
            argmax(&[f32::NAN, -2.0, f32::NEG_INFINITY]).expect("finite"),
            1
        );
        assert!(argmax(&[f32::NAN]).is_err());
    }

    #[test]
    fn top_k_keeps_the_k_largest_renormalised() {
        // probabilities 0.4 0.3 0.2 0.1 → top-2 keeps 0.4 and 0.3 → 4/7, 3/7
        let logits = ln(&[0.1, 0.4, 0.2, 0.3]);
        let d = candidate_distribution(&logits, 1.0, 2, 1.0).expect("distribution");
        assert_eq!(d.iter().map(|x| x.0).collect::<Vec<_>>(), vec![1, 3]);
        assert!((d[0].1 - 4.0 / 7.0).abs() < 1e-6);
        assert!((d[1].1 - 3.0 / 7.0).abs() < 1e-6);
    }

    #[test]
    fn top_p_keeps_the_smallest_set_reaching_the_mass() {
        let logits = ln(&[0.05, 0.5, 0.15, 0.3]);
        // 0.5 < 0.7, 0.5 + 0.3 = 0.8 ≥ 0.7 → {1, 3}, renormalised 0.625 / 0.375
        let d = candidate_distribution(&logits, 1.0, 0, 0.7).expect("distribution");
        assert_eq!(d.iter().map(|x| x.0).collect::<Vec<_>>(), vec![1, 3]);
        assert!((d[0].1 - 0.625).abs() < 1e-6);
        assert!((d[1].1 - 0.375).abs() < 1e-6);
        // 0.85 needs the third token: {1, 3, 2}
        let d = candidate_distribution(&logits, 1.0, 0, 0.85).expect("distribution");
        assert_eq!(d.len(), 3);
        assert!((d[2].1 - 0.15 / 0.95).abs() < 1e-6);
        // a tiny top_p still keeps the most likely token
        let d = candidate_distribution(&logits, 1.0, 0, 0.01).expect("distribution");
        assert_eq!(d, vec![(1, 1.0)]);
    }

    #[test]
    fn temperature_scales_before_filtering() {
        // logits 0, ln 3: at temperature 1 → 0.25 / 0.75; at temperature 2 → 1 : √3
        let logits = [0.0, 3.0f32.ln()];
        let d = candidate_distribution(&logits, 2.0, 0, 1.0).expect("distribution");
        let s3 = 3.0f32.sqrt();
        assert_eq!(d[0].0, 1);
        assert!((d[0].1 - s3 / (1.0 + s3)).abs() < 1e-6);
        assert!((d[1].1 - 1.0 / (1.0 + s3)).abs() < 1e-6);
    }

    #[test]
    fn seeded_sampling_is_reproducible_and_follows_the_distribution() {
        let logits = ln(&[0.1, 0.6, 0.3]);
        let draw = |seed| {
            let mut s = Sampler::new(1.0, 0, 1.0, seed).expect("valid");
            (0..2000)
                .map(|_| s.sample(&logits).expect("samples").id)
                .collect::<Vec<_>>()
        };
        let a = draw(42);
        assert_eq!(a, draw(42));
        assert_ne!(a, draw(43));
        let share = |id| a.iter().filter(|&&x| x == id).count() as f32 / a.len() as f32;
        assert!((share(1) - 0.6).abs() < 0.05, "{}", share(1));
        assert!((share(2) - 0.3).abs() < 0.05, "{}", share(2));
        assert!((share(0) - 0.1).abs() < 0.04, "{}", share(0));
    }

    #[test]
    fn sampled_logprobs_are_reported_under_both_distributions() {
        let logits = ln(&[0.5, 0.3, 0.2]);
        let mut s = Sampler::new(1.0, 2, 1.0, 1).expect("valid");
        for _ in 0..50 {
            let t = s.sample(&logits).expect("samples");
            assert!(t.id < 2, "top-2 excludes id 2");
            let model_p = [0.5f32, 0.3][t.id as usize];
            let sampling_p = [0.5f32 / 0.8, 0.3 / 0.8][t.id as usize];
            assert!((t.logprob - model_p.ln()).abs() < 1e-5);
            assert!((t.sampling_logprob - sampling_p.ln()).abs() < 1e-5);
        }
    }

    #[test]
    fn invalid_parameters_are_refused() {
        assert!(Sampler::new(-0.1, 0, 1.0, 0).is_err());
        assert!(Sampler::new(f32::NAN, 0, 1.0, 0).is_err());
        assert!(Sampler::new(1.0, 0, 0.0, 0).is_err());
        assert!(Sampler::new(1.0, 0, 1.5, 0).is_err());
        let mut s = Sampler::new(1.0, 0, 1.0, 0).expect("valid");
        assert!(matches!(s.sample(&[]), Err(SamplingError::BadLogits(_))));
    }

    #[test]
    fn generation_config_overrides_the_model_card_defaults() {
        let c = GenerationConfig::from_json(
            r#"{"temperature": 0.7, "top_k": 40, "eos_token_id": [5, 9]}"#,
        )
        .expect("parses");
        let p = c.default_params();
        assert_eq!((p.temperature, p.top_p, p.top_k), (0.7, 0.95, 40));
        assert_eq!(c.eos_token_ids, vec![5, 9]);
        let greedy = GenerationConfig::from_json(r#"{"do_sample": false, "eos_token_id": 3}"#)
            .expect("parses");
        assert_eq!(greedy.default_params().temperature, 0.0);
        assert_eq!(greedy.eos_token_ids, vec![3]);
        let err = GenerationConfig::from_json(r#"{"top_k": "many"}"#).expect_err("bad field");
        assert!(err.contains("top_k"), "{err}");
        let missing =
            GenerationConfig::from_dir(Path::new("/nonexistent")).expect("missing file is fine");
        assert_eq!(missing.default_params(), GenerationParams::default());
    }

    #[test]
    fn tiny_model_generation_config_is_read() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/tiny-world-model");
        let c = GenerationConfig::from_dir(&dir).expect("reads");
        assert_eq!(c.temperature, Some(0.6));
        assert_eq!(c.top_k, Some(20));
        assert_eq!(c.eos_token_ids, vec![1021, 1019]);
    }

    #[test]
    fn penalties_change_the_distribution_over_generated_tokens() {
        // probabilities 0.5 0.3 0.2; token 0 generated twice, token 2 once
        let logits = ln(&[0.5, 0.3, 0.2]);
        let mut counts = HashMap::new();
        counts.insert(0u32, 2u32);
        counts.insert(2u32, 1u32);
        let p = Penalties {
            presence: 0.5,
            frequency: 0.25,
            repetition: 1.0,
        };
        let out = p.apply(&logits, &counts);
        assert!((out[0] - (logits[0] - 0.5 - 0.5)).abs() < 1e-6);
        assert_eq!(out[1], logits[1]);
        assert!((out[2] - (logits[2] - 0.5 - 0.25)).abs() < 1e-6);
        // repetition: a positive logit is divided, a negative one multiplied
        let r = Penalties {
            repetition: 2.0,
            ..Penalties::default()
        };
        let out = r.apply(&[3.0, -1.0, 1.0], &HashMap::from([(0, 1), (1, 1)]));
        assert_eq!(out, vec![1.5, -2.0, 1.0]);

        // Through the sampler: greedy picks 0 first, then the penalty moves it
        // below token 1 (0.5 → e^-1.5·… < 0.3 after a 1.0 presence penalty).
        let mut s = Sampler::new(0.0, 0, 1.0, 1)
            .expect("valid")
            .with_penalties(Penalties {
                presence: 1.0,
                ..Penalties::default()
            })
            .expect("valid");
        assert_eq!(s.sample(&logits).expect("samples").id, 0);
        let second = s.sample(&logits).expect("samples");
        assert_eq!(second.id, 1);
        // the reported logprob stays the model's own
        assert!((second.logprob - 0.3f32.ln()).abs() < 1e-5);
        // and the sampling distribution reflects the penalty
        let mut t = Sampler::new(1.0, 0, 1.0, 1)
            .expect("valid")
            .with_penalties(Penalties {
                frequency: 1.0,
                ..Penalties::default()
            })
            .expect("valid");
        let before = t.distribution(&logits).expect("ok").expect("sampled");
        assert!((before[0].1 - 0.5).abs() < 1e-6);
        let first = t.sample(&logits).expect("samples").id;
        let after = t.distribution(&logits).expect("ok").expect("sampled");
        let p_first = after.iter().find(|x| x.0 == first).expect("kept").1;
        let p_before = before.iter().find(|x| x.0 == first).expect("kept").1;
        assert!(p_first < p_before, "{p_first} < {p_before}");
        assert!(
            Sampler::new(1.0, 0, 1.0, 1)
                .expect("valid")
                .with_penalties(Penalties {
                    repetition: 0.0,
                    ..Penalties::default()
                })
                .is_err()
        );
    }

    #[test]
    fn min_p_drops_tokens_below_a_fraction_of_the_best() {
        // 0.5 0.3 0.15 0.05; min_p 0.25 → threshold 0.125 keeps 0, 1, 2
        let logits = ln(&[0.5, 0.3, 0.15, 0.05]);
        let d = filtered_distribution(&logits, 1.0, 0.25, 0, 1.0).expect("distribution");
        assert_eq!(d.iter().map(|x| x.0).collect::<Vec<_>>(), vec![0, 1, 2]);
        assert!((d[0].1 - 0.5 / 0.95).abs() < 1e-5);
        let d = filtered_distribution(&logits, 1.0, 0.7, 0, 1.0).expect("distribution");
        assert_eq!(d, vec![(0, 1.0)]);
        assert!(
            Sampler::new(1.0, 0, 1.0, 1)
                .expect("valid")
                .with_min_p(1.5)
                .is_err()
        );
    }

    #[test]
    fn top_logprobs_are_the_model_distribution_s_best() {
        let logits = ln(&[0.1, 0.4, 0.2, 0.3]);
        let top = top_logprobs(&logits, 2).expect("finite");
        assert_eq!(top.iter().map(|x| x.0).collect::<Vec<_>>(), vec![1, 3]);
        assert!((top[0].1 - 0.4f32.ln()).abs() < 1e-5);
        assert!((top[1].1 - 0.3f32.ln()).abs() < 1e-5);
        assert_eq!(top_logprobs(&logits, 9).expect("finite").len(), 4);
        assert!(top_logprobs(&logits, 0).expect("finite").is_empty());
    }

    /// Selecting the top k before sorting gives exactly the list a full
    /// sort gives (same ids, same order, same probabilities, ties towards
    /// the lower id), with min-p and top-p on top.
    #[test]
    fn partial_selection_equals_a_full_sort() {
        let mut seed = 0x9e37_79b9_u64;
        let logits: Vec<f32> = (0..5000)
            .map(|i| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                if i % 97 == 0 {
                    f32::NEG_INFINITY
                } else {
                    // Coarse values: many exact ties.
                    (seed % 400) as f32 / 40.0 - 5.0
                }
            })
            .collect();
        let full_sort = |temperature: f32, min_p: f32, top_k: usize, top_p: f32| {
            let mut order: Vec<(u32, f32)> = logits
                .iter()
                .enumerate()
                .filter(|(_, x)| x.is_finite())
                .map(|(i, &x)| (i as u32, x / temperature))
                .collect();
            order.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            if min_p > 0.0 {
                let floor = order[0].1 + min_p.ln();
                order.retain(|&(_, x)| x >= floor);
            }
            if top_k > 0 && top_k < order.len() {
                order.truncate(top_k);
            }
            let max = order[0].1;
            let weights: Vec<f64> = order
                .iter()
                .map(|&(_, x)| f64::from(x - max).exp())
                .collect();
            let total: f64 = weights.iter().sum();
            let mut kept = Vec::new();
            let mut mass = 0.0f64;
            for (&(id, _), &w) in order.iter().zip(&weights) {
                if !kept.is_empty() && mass >= f64::from(top_p) {
                    break;
                }
                kept.push((id, w / total));
                mass += w / total;
            }
            let kept_total: f64 = kept.iter().map(|&(_, p)| p).sum();
            kept.into_iter()
                .map(|(id, p)| (id, (p / kept_total) as f32))
                .collect::<Vec<_>>()
        };
        for &(temperature, min_p, top_k, top_p) in &[
            (1.0, 0.0, 20, 0.95),
            (0.7, 0.0, 1, 1.0),
            (1.3, 0.05, 50, 0.9),
            (1.0, 0.0, 4999, 1.0),
            (0.6, 0.0, 0, 0.8),
        ] {
            let got = filtered_distribution(&logits, temperature, min_p, top_k, top_p)
                .expect("distribution");
            assert_eq!(got, full_sort(temperature, min_p, top_k, top_p));
        }
    }

    /// Logits with ties, non-finite values and a spread of magnitudes.
    fn awkward_logits(n: usize, seed: u64) -> Vec<f32> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        (0..n)
            .map(|i| match i % 97 {
                3 => f32::NEG_INFINITY,
                5 => f32::NAN,
                7 => f32::INFINITY,
                11 | 13 => 4.25, // ties among the best
                _ => (rng.random::<f32>() - 0.5) * 12.0,
            })
            .collect()
    }

    /// Sampling from a logits tensor (the candidates selected by the fused
    /// op where the logits are, here its CPU implementation) picks the
    /// same tokens with the same seed as sampling from the host vector, for
    /// greedy, temperature, top-k, top-p and min-p, and falls back to the
    /// host path (same tokens) where it cannot select on the device.
    #[test]
    fn tensor_sampling_equals_host_sampling() {
        let configs: [(f32, usize, f32, f32, Penalties); 7] = [
            (0.0, 0, 1.0, 0.0, Penalties::default()),
            (0.6, 20, 0.95, 0.0, Penalties::default()),
            (1.0, 5, 1.0, 0.0, Penalties::default()),
            (1.3, 64, 0.5, 0.05, Penalties::default()),
            (0.7, 1, 1.0, 0.0, Penalties::default()),
            (0.8, 0, 0.9, 0.0, Penalties::default()),
            (
                0.9,
                20,
                0.9,
                0.0,
                Penalties {
                    presence: 0.5,
                    frequency: 0.2,
                    repetition: 1.1,
                },
            ),
        ];
        for (c, &(temperature, top_k, top_p, min_p, penalties)) in configs.iter().enumerate() {
            let make = || {
                Sampler::new(temperature, top_k, top_p, 42 + c as u64)
                    .and_then(|s| s.with_min_p(min_p))
                    .and_then(|s| s.with_penalties(penalties))
                    .expect("sampler")
            };
            let (mut host, mut device) = (make(), make());
            for step in 0..40 {
                let logits = awkward_logits(5000, step);
                let tensor =
                    Tensor::new(logits.as_slice(), &candle_core::Device::Cpu).expect("tensor");
                let want = host.sample(&logits).expect("host");
                let got = device.sample_selected(&tensor, true).expect("tensor");
                assert_eq!(got.id, want.id, "config {c} step {step}");
                assert_eq!(got.sampling_logprob, want.sampling_logprob, "config {c}");
                assert!(
                    (got.logprob - want.logprob).abs() <= 1e-5,
                    "config {c} step {step}: {} vs {}",
                    got.logprob,
                    want.logprob
                );
            }
        }
        // Greedy picks the lower id of a tie among the best, skipping
        // NaN and +inf.
        let mut greedy = Sampler::new(0.0, 0, 1.0, 0).expect("greedy");
        let logits = Tensor::new(
            &[1.0f32, f32::NAN, 3.0, f32::INFINITY, 3.0],
            &candle_core::Device::Cpu,
        )
        .expect("tensor");
        assert_eq!(greedy.sample_selected(&logits, true).expect("sample").id, 2);
        let none =
            Tensor::new(&[f32::NAN, f32::NEG_INFINITY], &candle_core::Device::Cpu).expect("tensor");
        assert!(greedy.sample_selected(&none, true).is_err());
        assert!(greedy.sample_tensor(&none).is_err());
    }

    /// The top alternatives from a tensor are the host's, ids and order
    /// exactly, log-probabilities to 1e-5.
    #[test]
    fn tensor_top_logprobs_equal_host_top_logprobs() {
        for n in [1, 5, 20, 64, 100] {
            let logits = awkward_logits(3000, n as u64);
            let tensor = Tensor::new(logits.as_slice(), &candle_core::Device::Cpu).expect("tensor");
            let want = top_logprobs(&logits, n).expect("host");
            let got = top_logprobs_selected(&tensor, n, true).expect("tensor");
            assert_eq!(top_logprobs_tensor(&tensor, n).expect("host"), want);
            assert_eq!(got.len(), want.len());
            for ((gi, gl), (wi, wl)) in got.iter().zip(&want) {
                assert_eq!(gi, wi, "n={n}");
                assert!((gl - wl).abs() <= 1e-5, "n={n}: {gl} vs {wl}");
            }
        }
    }
}
