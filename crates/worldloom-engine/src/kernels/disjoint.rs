//! An output buffer's pointer shared by parallel tasks that each write a
//! disjoint set of its elements (tile columns of a matmul's output), where
//! the sets are strided and so cannot be handed out as `&mut` sub-slices;
//! and the one way the kernels run their tasks, on the pool or on the
//! calling thread ([`run_tasks`], [`run_chunks`], [`PARALLEL_MIN_MACS`]).
//!
//! Allowed `unsafe`: the `Send`/`Sync` impls. Holding or copying the
//! wrapper is harmless; every write through [`DisjointOut::get`] is an
//! `unsafe` block at its use that states why its elements are its own.
#![allow(unsafe_code)]

/// `out.as_mut_ptr()` of a buffer that outlives the tasks using it.
pub(crate) struct DisjointOut<T>(*mut T);

impl<T> Clone for DisjointOut<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for DisjointOut<T> {}

// SAFETY: the pointer is only dereferenced in `unsafe` blocks whose callers
// write elements no other task touches while the buffer is borrowed.
unsafe impl<T: Send> Send for DisjointOut<T> {}
// SAFETY: as for `Send`: shared copies write disjoint elements.
unsafe impl<T: Send> Sync for DisjointOut<T> {}

impl<T> DisjointOut<T> {
    /// The pointer of `out`, for tasks that write disjoint elements of it.
    pub(crate) fn new(out: &mut [T]) -> Self {
        Self(out.as_mut_ptr())
    }

    /// The pointer (a method, so closures capture the whole `Sync`
    /// wrapper rather than its field).
    pub(crate) fn get(self) -> *mut T {
        self.0
    }
}

/// Work below this many multiply-adds (m · n · k of a product, or its
/// equivalent) runs on the calling thread: waking the pool costs more than
/// it does (a 128 × 128 projection of one row is ~2 µs of work).
pub(crate) const PARALLEL_MIN_MACS: usize = 1 << 18;

/// Runs `task((i, chunk))` for the `chunk`-long pieces of `out` in order:
/// on the rayon pool when `parallel`, else on the calling thread.
pub(crate) fn run_chunks<T: Send>(
    out: &mut [T],
    chunk: usize,
    parallel: bool,
    task: impl Fn((usize, &mut [T])) + Sync + Send,
) {
    if parallel {
        use rayon::prelude::*;
        out.par_chunks_mut(chunk).enumerate().for_each(task);
    } else {
        out.chunks_mut(chunk).enumerate().for_each(task);
    }
}

/// Runs `task(t)` for t in `0..tasks`: on the rayon pool when `parallel`,
/// else in order on the calling thread (a product too small to pay for
/// waking the pool, or a caller already inside a pool task).
pub(crate) fn run_tasks(tasks: usize, parallel: bool, task: impl Fn(usize) + Sync + Send) {
    if parallel {
        use rayon::prelude::*;
        (0..tasks).into_par_iter().for_each(task);
    } else {
        (0..tasks).for_each(task);
    }
}

/// Runs `work` for a model on `device`: on a thread of rayon's pool, the
/// pool [`run_tasks`] and [`run_chunks`] split work over, when `device` is
/// the CPU and the calling thread is not already one of the pool's; else
/// on the calling thread (other devices keep the thread whose context
/// they were made current on). Returns what `work` returns.
///
/// A parallel region opened from outside the pool hands its whole job to
/// the pool's threads and blocks the caller on a lock until they finish:
/// a wake of each worker and a sleep and wake of the caller for every
/// product, norm or attention call of a forward. Opened from inside, the
/// caller keeps a share of the work and the others steal the rest. A
/// model forward on the CPU runs through here so that the whole forward
/// pays that hand-over once: on the bundled 2.6M-parameter trained model
/// (many small ops a token) greedy decode went from 3.4 to 3.1 s and
/// drafted decode from 2.9 to 2.2 s on a 2-core machine
/// (docs/engine.md, "CPU speed").
///
/// A pool thread waiting inside one such job for its stolen pieces may
/// pick up another queued job meanwhile — another engine's whole forward,
/// where several run in one process — and finish it before resuming: the
/// outputs are unchanged (no lock is held across a forward), the waiting
/// one's latency is not.
pub(crate) fn on_pool<R: Send>(device: &candle_core::Device, work: impl FnOnce() -> R + Send) -> R {
    if !device.is_cpu() || rayon::current_thread_index().is_some() {
        work()
    } else {
        rayon::scope(|_| work())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_runs_on_a_pool_thread_and_its_regions_from_there() {
        assert_eq!(rayon::current_thread_index(), None, "the test thread");
        let cpu = candle_core::Device::Cpu;
        let (outer, inner) = on_pool(&cpu, || {
            let inner: Vec<Option<usize>> = {
                use rayon::prelude::*;
                (0..4)
                    .into_par_iter()
                    .map(|_| rayon::current_thread_index())
                    .collect()
            };
            (rayon::current_thread_index(), inner)
        });
        assert!(outer.is_some(), "on_pool ran its work on the caller");
        // A region opened from inside: its caller runs the leftmost piece.
        assert_eq!(inner[0], outer, "{inner:?}");
        assert!(inner.iter().all(Option::is_some), "{inner:?}");
        // Already on the pool: the work runs where it is.
        let nested = on_pool(&cpu, || {
            let here = rayon::current_thread_index();
            (here, on_pool(&cpu, rayon::current_thread_index))
        });
        assert!(nested.0.is_some());
        assert_eq!(nested.0, nested.1);
    }
}
