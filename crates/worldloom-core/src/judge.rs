//! AgentWorldBench's LLM judge, the parts every crate shares: the five
//! dimensions it scores and the scale its scores are reported on. Written
//! once here; the judge itself (`worldloom-eval::judge`), the score report
//! (`worldloom-eval::score`), a run's rows (`formats::run`), the store and
//! the studio's views and TypeScript bindings all take them from here.
//!
//! Source: the official evaluation script (`eval.py`, `judge` and `score`
//! steps): each dimension is an integer from 1 to 5; a mean is reported as
//! `(mean − 1) / 4 × 100`.

/// The judged dimensions, in the published order (integers
/// [`MIN_SCORE`]–[`MAX_SCORE`] each).
pub const DIMENSIONS: [&str; 5] = ["format", "factuality", "consistency", "realism", "quality"];

/// The lowest score of a dimension.
pub const MIN_SCORE: f64 = 1.0;

/// The highest score of a dimension.
pub const MAX_SCORE: f64 = 5.0;

/// A mean judge score (1–5) on AgentWorldBench's scale: `(mean − 1) / 4 ×
/// 100`, so 1 is 0 and 5 is 100.
pub fn scale(mean: f64) -> f64 {
    (mean - MIN_SCORE) / (MAX_SCORE - MIN_SCORE) * 100.0
}

/// Whether `score` is a dimension's score (within 1–5).
pub fn in_range(score: f64) -> bool {
    (MIN_SCORE..=MAX_SCORE).contains(&score)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scale_maps_one_to_zero_and_five_to_a_hundred() {
        assert_eq!(scale(1.0), 0.0);
        assert_eq!(scale(3.0), 50.0);
        assert_eq!(scale(5.0), 100.0);
        assert_eq!(scale(3.4), 60.0);
        assert!(in_range(1.0) && in_range(5.0));
        assert!(!in_range(0.0) && !in_range(5.5));
        assert_eq!(DIMENSIONS.len(), 5);
    }
}
