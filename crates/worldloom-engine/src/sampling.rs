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

/// What [`Sampler::judge_draft`] decided for a drafted token.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DraftVerdict {
    /// The drafted token is the one chosen here (with its log-probabilities,
    /// as [`Sampler::sample`] reports a token it draws).
    Kept(SampledToken),
    /// Greedy decoding chooses another token (the caller picks it).
    Rejected,
    /// Sampling rejected the draft and drew this token instead.
    Replaced(SampledToken),
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
        self.count(token.id);
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
        self.candidates(&self.penalised(logits)).map(Some)
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
        self.count(token.id);
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

    /// The distribution a draw is made from, given penalised logits:
    /// temperature, min-p, top-k and top-p applied.
    fn candidates(&self, penalised: &[f32]) -> Result<Vec<(u32, f32)>, SamplingError> {
        filtered_distribution(
            penalised,
            self.temperature,
            self.min_p,
            self.top_k,
            self.top_p,
        )
    }

    /// Counts `id` as generated (for the penalties).
    fn count(&mut self, id: u32) {
        *self.counts.entry(id).or_insert(0) += 1;
    }

    fn penalised<'a>(&self, logits: &'a [f32]) -> std::borrow::Cow<'a, [f32]> {
        if self.penalties.is_neutral() || self.counts.is_empty() {
            std::borrow::Cow::Borrowed(logits)
        } else {
            std::borrow::Cow::Owned(self.penalties.apply(logits, &self.counts))
        }
    }

    /// Speculative decoding's rule for one drafted token (a deterministic
    /// draft, for which the rule of Leviathan et al. and Chen et al., 2023,
    /// reduces to this), at a position whose logits are `logits`
    /// (`[vocab]` f32):
    /// - greedy: [`DraftVerdict::Kept`] when `drafted` is the argmax of the
    ///   penalised logits, else [`DraftVerdict::Rejected`] (the caller
    ///   chooses the token itself);
    /// - sampling: kept with probability p(`drafted`) under this sampler's
    ///   distribution (penalties, temperature, min-p, top-k, top-p), else
    ///   [`DraftVerdict::Replaced`] by a draw from that distribution with
    ///   `drafted` removed and renormalised, so that the token at this
    ///   position has exactly the distribution of [`Sampler::sample`].
    ///
    /// A kept or replacing token counts as generated (penalties).
    ///
    /// # Errors
    /// [`SamplingError::BadLogits`] as [`Sampler::sample`].
    pub fn judge_draft(
        &mut self,
        logits: &[f32],
        drafted: u32,
    ) -> Result<DraftVerdict, SamplingError> {
        // A chosen token with its model log-probability, as `pick` reports
        // it. The normaliser (Σ exp over the whole vocabulary in f64:
        // 1.3 ms a row at 248,320 logits on one core) is computed only
        // where a token is kept or drawn: a greedy rejection needs none,
        // and the caller's `sample` of that row computes its own.
        let scored = |id: u32, sampling_logprob: f32| -> Result<SampledToken, SamplingError> {
            Ok(SampledToken {
                id,
                logprob: LogNormaliser::of(logits)?.logprob(logits, id),
                sampling_logprob,
            })
        };
        let penalised = self.penalised(logits);
        if self.is_greedy() {
            if argmax(&penalised)? != drafted {
                return Ok(DraftVerdict::Rejected);
            }
            self.count(drafted);
            return Ok(DraftVerdict::Kept(scored(drafted, 0.0)?));
        }
        let candidates = self.candidates(&penalised)?;
        let p = candidates
            .iter()
            .find(|(id, _)| *id == drafted)
            .map_or(0.0, |&(_, p)| p);
        if self.rng.random::<f32>() < p {
            self.count(drafted);
            return Ok(DraftVerdict::Kept(scored(drafted, p.ln())?));
        }
        let mut residual: Vec<(u32, f32)> = candidates
            .into_iter()
            .filter(|(id, _)| *id != drafted)
            .collect();
        let rest: f32 = residual.iter().map(|&(_, q)| q).sum();
        if residual.is_empty() || rest <= 0.0 {
            return Err(SamplingError::BadLogits(
                "no token besides the drafted one has probability left".into(),
            ));
        }
        for (_, q) in &mut residual {
            *q /= rest;
        }
        let (id, q) = self.draw(&residual);
        self.count(id);
        Ok(DraftVerdict::Replaced(scored(id, q.ln())?))
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
        let candidates = self.candidates(&penalised)?;
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
    top_p_renormalised(&order, top_p)
}

/// Top-p over `order`, `(id, logit / temperature)` pairs most likely first
/// (not empty): the probabilities over `order`, the shortest prefix whose
/// mass reaches `top_p` (at least one token), renormalised to sum to 1.
fn top_p_renormalised(order: &[(u32, f32)], top_p: f32) -> Vec<(u32, f32)> {
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
mod tests;
