//! What the API benchmarks share.

use std::time::Instant;

/// The median wall time of `n` calls of `f`, in milliseconds.
pub fn median_ms(n: usize, mut f: impl FnMut()) -> f64 {
    let mut times: Vec<f64> = (0..n)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}
