//! Drafting tokens for speculative decoding, on token ids.
//!
//! A world model's output is mostly a copy of the current observation with
//! a few edits (the next page, tree or screen repeats most of the one
//! before, and the reasoning quotes it). A [`Drafter`] proposes the tokens
//! it expects next; the model verifies them and keeps the agreeing prefix
//! (speculative decoding with a deterministic draft: the output is the
//! model's own whatever the draft).
//!
//! - [`ObservationDrafter`] keeps a pointer into the current observation's
//!   tokens that follows the output: while the output copies, it proposes
//!   what comes next in the observation; after an edit it re-synchronises by
//!   finding the output's last few tokens again (the longest match; among
//!   equal ones the current observation first, nearest after the pointer,
//!   then the history's text, then the output itself). The draft length
//!   adapts to recent acceptance.
//! - [`NgramDrafter`] is the plain prompt-lookup baseline (as in vLLM's and
//!   llama.cpp's prompt-lookup decoding): the most recent earlier occurrence
//!   of the output's last n tokens (n from 3 down to 1) in the prompt and
//!   output, and the tokens that followed it, a fixed number of them.
//! - [`simulate`] measures a drafter against a known output as a perfect
//!   model would verify it: tokens per forward pass, drafted and accepted
//!   tokens (an upper bound on what a real model accepts).

use std::collections::HashMap;

/// Proposes the tokens that should follow an output.
pub trait Drafter {
    /// Up to `max` token ids to follow `output` (every token generated so
    /// far, in order; it only grows between calls of one generation).
    /// Empty when there is nothing to propose.
    fn draft(&mut self, output: &[u32], max: usize) -> Vec<u32>;

    /// How many of the last draft's `proposed` tokens the model accepted.
    fn accepted(&mut self, proposed: usize, accepted: usize);
}

/// How many trailing output tokens locate the output in a source when the
/// pointer is lost (tried from this many down to [`MIN_MATCH`]).
const MAX_MATCH: usize = 4;
/// The fewest trailing tokens a re-synchronisation accepts.
const MIN_MATCH: usize = 2;

/// Bounds on the adaptive draft length ([`DraftLength`]), tokens.
pub const MIN_DRAFT: usize = 2;
/// See [`MIN_DRAFT`].
pub const MAX_DRAFT: usize = 32;

/// The draft length that follows acceptance: 8 tokens at first, doubled
/// after a draft kept whole (at most [`MAX_DRAFT`]), back to one past what
/// was kept after a draft cut short (at least [`MIN_DRAFT`]). Long drafts
/// while the output copies, short ones after an edit, where a verifying
/// forward's extra positions would be thrown away (each costs: on the
/// real-width Q4_K_M bench a forward of 4 positions costs about 2 decode
/// steps, one of 17 about 5; docs/benchmarks.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DraftLength {
    k: usize,
}

impl Default for DraftLength {
    fn default() -> Self {
        Self { k: 8 }
    }
}

impl DraftLength {
    /// Tokens the next draft may propose.
    pub fn get(self) -> usize {
        self.k
    }

    /// Follows the verdict on the last draft: `accepted` of its `proposed`
    /// tokens kept.
    pub fn update(&mut self, proposed: usize, accepted: usize) {
        self.k = if proposed > 0 && accepted >= proposed {
            (self.k * 2).min(MAX_DRAFT)
        } else {
            (accepted + 1).clamp(MIN_DRAFT, MAX_DRAFT)
        };
    }
}

/// A token sequence with the positions of every [`MIN_MATCH`]-gram in it.
struct Source {
    tokens: Vec<u32>,
    /// Start positions of each pair of tokens, ascending.
    pairs: HashMap<(u32, u32), Vec<usize>>,
}

impl Source {
    fn new(tokens: Vec<u32>) -> Self {
        let mut pairs: HashMap<(u32, u32), Vec<usize>> = HashMap::new();
        for (i, w) in tokens.windows(2).enumerate() {
            pairs.entry((w[0], w[1])).or_default().push(i);
        }
        Self { tokens, pairs }
    }

    /// Appends one token (the output grows), indexing its pair.
    fn push(&mut self, token: u32) {
        if let Some(&last) = self.tokens.last() {
            let at = self.tokens.len() - 1;
            self.pairs.entry((last, token)).or_default().push(at);
        }
        self.tokens.push(token);
    }

    /// The length of the longest suffix of `tail` (at least [`MIN_MATCH`]
    /// tokens, at most [`MAX_MATCH`]) that occurs in this source with a
    /// token after it, and the position just after that occurrence; among
    /// equally long ones the first at or after `near`, else the last before
    /// it. `None` when no suffix of [`MIN_MATCH`] tokens occurs.
    fn locate(&self, tail: &[u32], near: usize) -> Option<(usize, usize)> {
        let longest = tail.len().min(MAX_MATCH);
        for n in (MIN_MATCH..=longest).rev() {
            let suffix = &tail[tail.len() - n..];
            // Candidates: where the suffix's last pair starts, shifted back.
            let last_pair = (suffix[n - 2], suffix[n - 1]);
            // Every suffix ends with this pair: none occurs without it.
            let starts = self.pairs.get(&last_pair)?;
            let ends = starts.iter().filter_map(|&p| {
                let start = (p + 2).checked_sub(n)?;
                let end = p + 2;
                (end < self.tokens.len() && self.tokens[start..end] == *suffix).then_some(end)
            });
            let (mut after, mut before) = (None, None);
            for end in ends {
                if end >= near {
                    after = Some(end);
                    break;
                }
                before = Some(end);
            }
            if let Some(end) = after.or(before) {
                return Some((n, end));
            }
        }
        None
    }
}

/// Drafts from the aligned position in the current observation (see the
/// module documentation).
pub struct ObservationDrafter {
    /// The current observation first, then the history's text, then the
    /// output so far (the last source, grown as it is followed).
    sources: Vec<Source>,
    /// Where the output is aligned: (source, position of the next token).
    pointer: Option<(usize, usize)>,
    /// The last place the pointer was, kept while it is lost: a
    /// re-synchronisation looks nearest after it.
    anchor: (usize, usize),
    /// How much of the output the pointer has followed.
    followed: usize,
    /// A position in the current observation's tokens whose token, once
    /// the output writes it while the pointer is lost, puts the pointer
    /// just after it ([`Start::After`]); used once.
    marker: Option<usize>,
    /// The next draft's length.
    k: DraftLength,
}

/// Where an [`ObservationDrafter`]'s pointer starts in the current
/// observation's tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// At this position: the output begins with the token there.
    At(usize),
    /// Lost until the output writes the token at this position (a marker
    /// the output writes once, such as the reasoning's close), then just
    /// after it; before that, a re-synchronisation on matching tokens may
    /// place it as usual.
    After(usize),
    /// Lost: placed by the first re-synchronisation.
    Lost,
}

impl ObservationDrafter {
    /// A drafter for one generation: `observation` is the current
    /// observation's tokens (the state the action applies to), `history`
    /// the earlier text worth copying from (previous observations, the
    /// prompt), most useful first. The pointer starts at the observation's
    /// first token.
    pub fn new(observation: Vec<u32>, history: Vec<Vec<u32>>) -> Self {
        let mut sources = vec![Source::new(observation)];
        sources.extend(history.into_iter().map(Source::new));
        sources.push(Source::new(Vec::new()));
        Self {
            pointer: Some((0, 0)),
            anchor: (0, 0),
            sources,
            followed: 0,
            marker: None,
            k: DraftLength::default(),
        }
    }

    /// Starts the pointer as `start` says instead of at the current
    /// observation's first token (an answer that reasons before it gives
    /// the observation starts [`Start::After`] the reasoning's close).
    /// Positions past the end are taken as the end.
    pub fn starting_at(mut self, start: Start) -> Self {
        let len = self.sources[0].tokens.len();
        self.pointer = None;
        self.marker = None;
        match start {
            Start::At(p) => {
                self.pointer = Some((0, p.min(len)));
                self.anchor = (0, p.min(len));
            }
            Start::After(p) => self.marker = Some(p),
            Start::Lost => {}
        }
        self
    }

    /// The output so far, as a source.
    fn output_source(&mut self) -> &mut Source {
        self.sources
            .last_mut()
            .expect("the output is always a source")
    }

    /// Follows the output tokens not yet seen; re-synchronises at the end
    /// when the pointer fell off.
    fn follow(&mut self, output: &[u32]) {
        if output.len() < self.followed {
            // A new generation reused the drafter: start over.
            self.followed = 0;
            *self.output_source() = Source::new(Vec::new());
        }
        for (i, &token) in output.iter().enumerate().skip(self.followed) {
            self.pointer = match self.pointer {
                Some((s, p)) if self.sources[s].tokens.get(p) == Some(&token) => Some((s, p + 1)),
                _ => None,
            };
            if self.pointer.is_none()
                && let Some(m) = self.marker
                && self.sources[0].tokens.get(m) == Some(&token)
            {
                self.pointer = Some((0, m + 1));
                self.marker = None;
            }
            if let Some(at) = self.pointer {
                self.anchor = at;
            }
            debug_assert_eq!(self.sources.last().map(|o| o.tokens.len()), Some(i));
            self.output_source().push(token);
        }
        self.followed = output.len();
        let lost = match self.pointer {
            None => true,
            Some((s, p)) => p >= self.sources[s].tokens.len(),
        };
        if lost {
            self.resync(output);
        }
    }

    /// Points at the token after the output's last few tokens' longest
    /// earlier occurrence: in the current observation (nearest after where
    /// the pointer last was), the history, or the output itself (its most
    /// recent occurrence); among equally long matches the first source in
    /// that order wins. `None` when none has them.
    fn resync(&mut self, output: &[u32]) {
        if output.len() < MIN_MATCH {
            self.pointer = None;
            return;
        }
        let tail = &output[output.len().saturating_sub(MAX_MATCH)..];
        let (anchor_source, anchor) = self.anchor;
        let mut best: Option<(usize, usize, usize)> = None; // (length, source, end)
        let output_at = self.sources.len() - 1;
        for (s, source) in self.sources.iter().enumerate() {
            let near = if s == anchor_source {
                anchor
            } else if s == output_at {
                usize::MAX
            } else {
                0
            };
            if let Some((n, end)) = source.locate(tail, near)
                && best.is_none_or(|(longest, _, _)| n > longest)
            {
                best = Some((n, s, end));
            }
        }
        self.pointer = best.map(|(_, s, end)| (s, end));
        if let Some(at) = self.pointer {
            self.anchor = at;
        }
    }
}

impl Drafter for ObservationDrafter {
    fn draft(&mut self, output: &[u32], max: usize) -> Vec<u32> {
        self.follow(output);
        let want = self.k.get().min(max);
        match self.pointer {
            Some((s, p)) => {
                let tokens = &self.sources[s].tokens;
                tokens[p..tokens.len().min(p + want)].to_vec()
            }
            None => Vec::new(),
        }
    }

    fn accepted(&mut self, proposed: usize, accepted: usize) {
        self.k.update(proposed, accepted);
    }
}

/// Prompt-lookup drafting: the tokens after the most recent earlier
/// occurrence of the output's last n tokens in prompt + output (n from
/// `max_n` down to 1), `k` of them.
pub struct NgramDrafter {
    prompt: Vec<u32>,
    max_n: usize,
    k: usize,
}

impl NgramDrafter {
    /// A drafter over `prompt` (every token before the output) proposing
    /// `k` tokens after a match of at most `max_n` tokens (vLLM's defaults
    /// are of this order: `k` 4–5, `max_n` 3–4).
    pub fn new(prompt: Vec<u32>, max_n: usize, k: usize) -> Self {
        Self {
            prompt,
            max_n: max_n.max(1),
            k,
        }
    }
}

impl Drafter for NgramDrafter {
    fn draft(&mut self, output: &[u32], max: usize) -> Vec<u32> {
        let text: Vec<u32> = self.prompt.iter().chain(output).copied().collect();
        let len = text.len();
        let want = self.k.min(max);
        for n in (1..=self.max_n.min(len.saturating_sub(1))).rev() {
            let suffix = &text[len - n..];
            // The most recent occurrence that ends before the suffix itself.
            let found = (0..len - n)
                .rev()
                .find(|&start| text[start..start + n] == *suffix);
            if let Some(start) = found {
                let from = start + n;
                return text[from..len.min(from + want)].to_vec();
            }
        }
        Vec::new()
    }

    fn accepted(&mut self, _proposed: usize, _accepted: usize) {}
}

/// What [`simulate`] counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DraftStats {
    /// Tokens of the output.
    pub tokens: usize,
    /// Forward passes a perfect verifier needs (each yields the accepted
    /// draft tokens plus one of its own).
    pub forwards: usize,
    /// Tokens proposed.
    pub drafted: usize,
    /// Tokens accepted.
    pub accepted: usize,
}

impl DraftStats {
    /// Output tokens per forward pass (1.0 without drafting).
    pub fn tokens_per_forward(&self) -> f64 {
        if self.forwards == 0 {
            return 0.0;
        }
        self.tokens as f64 / self.forwards as f64
    }

    /// The share of the output's tokens that came from accepted drafts, in
    /// `[0, 1]`.
    pub fn drafted_share(&self) -> f64 {
        if self.tokens == 0 {
            return 0.0;
        }
        self.accepted as f64 / self.tokens as f64
    }
}

/// Drafts `output` as a perfect model would verify it: at each forward,
/// the drafter proposes up to `max_draft` tokens after what is generated,
/// the prefix agreeing with `output` is accepted and the model adds the
/// next token of `output` itself. Returns the counts.
pub fn simulate(drafter: &mut dyn Drafter, output: &[u32], max_draft: usize) -> DraftStats {
    let mut stats = DraftStats {
        tokens: output.len(),
        ..DraftStats::default()
    };
    let mut done = 0;
    while done < output.len() {
        let proposal = drafter.draft(&output[..done], max_draft);
        let rest = &output[done..];
        let agree = proposal
            .iter()
            .zip(rest)
            .take_while(|(a, b)| a == b)
            .count()
            // The model's own token must still come from this forward.
            .min(rest.len() - 1);
        drafter.accepted(proposal.len(), agree);
        stats.forwards += 1;
        stats.drafted += proposal.len();
        stats.accepted += agree;
        done += agree + 1;
    }
    stats
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(s: &str) -> Vec<u32> {
        s.split_whitespace()
            .map(|w| {
                w.bytes()
                    .fold(7u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)))
            })
            .collect()
    }

    #[test]
    fn a_copy_of_the_observation_is_drafted_whole() {
        let obs = ids("a b c d e f g h i j k l m n o p");
        let mut d = ObservationDrafter::new(obs.clone(), vec![]);
        let stats = simulate(&mut d, &obs, 32);
        // 16 tokens: the first forward drafts 8 (k starts at 8), all kept,
        // plus the model's own ninth; the second drafts the 7 left, of which
        // 6 are kept and the last is the model's own.
        assert_eq!(
            stats,
            DraftStats {
                tokens: 16,
                forwards: 2,
                drafted: 15,
                accepted: 14
            }
        );
    }

    #[test]
    fn after_an_edit_the_pointer_finds_the_observation_again() {
        let obs = ids("row1 a b row2 c d row3 e f row4 g h");
        // The real next state changes row2's text and keeps the rest.
        let next = ids("row1 a b row2 X Y d row3 e f row4 g h");
        let mut d = ObservationDrafter::new(obs.clone(), vec![]);
        let mut out = Vec::new();
        // Follow the output token by token and record each first drafted token.
        let mut firsts = Vec::new();
        for &t in &next {
            firsts.push(d.draft(&out, 4).first().copied());
            out.push(t);
        }
        // Aligned from the start; after "X Y" (no match) the pointer is lost,
        // and "Y d" does not occur either; once "d row3" is generated the
        // pointer is back and drafts "e".
        let want_after_d_row3 = ids("e")[0];
        let at = next
            .iter()
            .position(|&t| t == want_after_d_row3)
            .expect("e");
        assert_eq!(firsts[0], Some(obs[0]));
        assert_eq!(
            firsts[4],
            Some(ids("c")[0]),
            "still proposes the old text at the edit"
        );
        assert_eq!(firsts[at], Some(want_after_d_row3));
        assert_eq!(firsts[at + 1], Some(ids("f")[0]));
    }

    #[test]
    fn a_frame_drafts_once_the_reasoning_closes() {
        // The frame: the reasoning's close, the tags and the observation.
        let frame = ids("CLOSE BLANK OPEN NL a b c d NL SHUT");
        let none = Vec::<u32>::new();
        // Started after the close: nothing while the model reasons (its
        // tokens match no two of the frame's)...
        let mut d = ObservationDrafter::new(frame.clone(), vec![]).starting_at(Start::After(0));
        assert_eq!(d.draft(&ids("it"), 4), none);
        assert_eq!(d.draft(&ids("it turns NL"), 4), none);
        // ...then the close alone places it (one token, where a
        // re-synchronisation needs two): the tags and the observation
        // follow in one draft.
        assert_eq!(
            d.draft(&ids("it turns NL CLOSE"), 6),
            ids("BLANK OPEN NL a b c")
        );
        // Lost: only two matching tokens place it.
        let mut d = ObservationDrafter::new(frame.clone(), vec![]).starting_at(Start::Lost);
        assert_eq!(d.draft(&ids("it turns NL CLOSE"), 4), none);
        assert_eq!(d.draft(&ids("it turns NL CLOSE BLANK"), 2), ids("OPEN NL"));
        // At the opening tag (reasoning closed by the prompt): the first
        // draft is the frame from there.
        let mut d = ObservationDrafter::new(frame, vec![]).starting_at(Start::At(2));
        assert_eq!(d.draft(&[], 3), ids("OPEN NL a"));
    }

    #[test]
    fn resync_prefers_the_occurrence_after_the_pointer() {
        // "x y" occurs twice; after following into the second half, a
        // re-synchronisation picks the later one.
        let obs = ids("x y A B C x y D E F");
        let mut d = ObservationDrafter::new(obs, vec![]);
        let out = ids("x y A B C Q x y");
        let draft = d.draft(&out, 3);
        assert_eq!(draft, ids("D E F"));
    }

    #[test]
    fn the_history_is_searched_when_the_observation_has_no_match() {
        let obs = ids("p q r s");
        let history = vec![ids("older page: m n o t u v")];
        let mut d = ObservationDrafter::new(obs, history);
        let draft = d.draft(&ids("zz n o"), 3);
        assert_eq!(draft, ids("t u v"));
    }

    #[test]
    fn the_draft_length_adapts_to_acceptance() {
        let mut d = ObservationDrafter::new(
            ids("a b c d e f g h i j k l m n o p q r s t u v w x y z"),
            vec![],
        );
        assert_eq!(d.draft(&[], 64).len(), 8);
        d.accepted(8, 8);
        assert_eq!(d.draft(&[], 64).len(), 16);
        d.accepted(16, 3);
        assert_eq!(d.draft(&[], 64).len(), 4);
        d.accepted(4, 0);
        assert_eq!(d.draft(&[], 64).len(), MIN_DRAFT);
    }

    #[test]
    fn ngram_lookup_takes_the_most_recent_longest_match() {
        let prompt = ids("a b c 1 2 . a b d 3 4 . b c 5");
        let mut d = NgramDrafter::new(prompt, 3, 2);
        // "a b" last occurred before "d 3".
        assert_eq!(d.draft(&ids("a b"), 8), ids("d 3"));
        // "a b c" (three tokens) beats the more recent "b c".
        assert_eq!(d.draft(&ids("a b c"), 8), ids("1 2"));
        // Nothing to match: no draft.
        assert_eq!(d.draft(&ids("zz"), 8), Vec::<u32>::new());
    }

    #[test]
    fn the_aligned_drafter_beats_ngram_lookup_on_a_repeated_list() {
        // A list whose rows repeat a few values in no period: prompt lookup
        // continues after the most recent occurrence of the last tokens (often
        // another row), the pointer follows the list in order.
        let values = [0, 1, 0, 2, 1, 1, 0, 2, 2, 0, 1, 2];
        let rows: Vec<String> = values
            .iter()
            .map(|v| format!("item label v{v} end"))
            .collect();
        let obs = ids(&rows.join(" "));
        let mut aligned = ObservationDrafter::new(obs.clone(), vec![]);
        let mut ngram = NgramDrafter::new(obs.clone(), 3, 8);
        let a = simulate(&mut aligned, &obs, 32);
        let n = simulate(&mut ngram, &obs, 32);
        assert_eq!(a.forwards, 3, "{a:?}");
        assert!(
            a.forwards < n.forwards && a.accepted > n.accepted,
            "aligned {a:?} against n-gram {n:?}"
        );
        assert_eq!(a.tokens, n.tokens);
    }

    #[test]
    fn simulate_without_drafts_takes_one_forward_a_token() {
        struct Never;
        impl Drafter for Never {
            fn draft(&mut self, _: &[u32], _: usize) -> Vec<u32> {
                Vec::new()
            }
            fn accepted(&mut self, _: usize, _: usize) {}
        }
        let stats = simulate(&mut Never, &ids("a b c d e"), 8);
        assert_eq!((stats.forwards, stats.accepted, stats.drafted), (5, 0, 0));
        assert!((stats.tokens_per_forward() - 1.0).abs() < 1e-12);
    }
}
