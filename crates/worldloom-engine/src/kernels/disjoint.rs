//! An output buffer's pointer shared by parallel tasks that each write a
//! disjoint set of its elements (tile columns of a matmul's output), where
//! the sets are strided and so cannot be handed out as `&mut` sub-slices.
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
