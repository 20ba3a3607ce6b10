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
