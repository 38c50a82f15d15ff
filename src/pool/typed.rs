//! Typed views of pool buffers: [`PinnedVec`] and [`PinnedAbcBuffers`], the a/b/c evaluation
//! vectors of one partition.
//!
//! Synthesis writes each constraint's ⟨A,z⟩, ⟨B,z⟩, ⟨C,z⟩ straight into these, so the heap
//! vectors a prover would otherwise grow are never made, and the GPU reads the same memory.
#![allow(unsafe_code)]

use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::{fmt, mem, slice};

use blstrs::Scalar;

use super::{PinnedBuf, PinnedPool, BLOCK_ALIGN};
use crate::error::{Error, Result};

mod sealed {
    pub trait Sealed {}
    impl Sealed for blstrs::Scalar {}
    impl Sealed for u64 {}
    impl Sealed for u32 {}
}

/// Plain-old-data element types that may be laid over pool memory.
///
/// # Safety
/// `Self` is `Copy`, has no `Drop`, an alignment that divides [`BLOCK_ALIGN`], and any value
/// written as `Self` reads back as a valid `Self`. Sealed: implemented for
/// [`blstrs::Scalar`] (`repr(transparent)` over blst's `[u64; 4]`), and for `u64` and `u32`
/// (a packed witness's bitmaps and ranks).
pub unsafe trait Element: sealed::Sealed + Copy + Send + Sync + 'static {}

// SAFETY: `Scalar` is `repr(transparent)` over `blst_fr { l: [u64; 4] }`: Copy, no Drop,
// 8-byte aligned (asserted below).
unsafe impl Element for Scalar {}
// SAFETY: integers: Copy, no Drop, every bit pattern valid, alignment 8 and 4.
unsafe impl Element for u64 {}
// SAFETY: as for u64.
unsafe impl Element for u32 {}

const _: () = assert!(mem::size_of::<Scalar>() == 32);
const _: () = assert!(BLOCK_ALIGN % mem::align_of::<Scalar>() == 0);

/// A vector of `T` with a fixed capacity, stored in a [`PinnedBuf`]. Like a `Vec` that can
/// never reallocate: pushing past the capacity is refused, not grown.
pub struct PinnedVec<T: Element> {
    /// Invariant: holds at least `capacity * size_of::<T>()` bytes.
    buf: PinnedBuf,
    /// Invariant: `len <= capacity`, and elements `..len` are initialised.
    len: usize,
    capacity: usize,
    _element: PhantomData<T>,
}

impl<T: Element> PinnedVec<T> {
    /// An empty vector over `buf`, holding as many `T` as fit.
    pub fn new(buf: PinnedBuf) -> Self {
        let capacity = buf.capacity() / mem::size_of::<T>();
        PinnedVec { buf, len: 0, capacity, _element: PhantomData }
    }

    /// Checks out a buffer for `capacity` elements.
    ///
    /// # Errors
    /// As [`PinnedPool::checkout`].
    pub fn checkout(pool: &PinnedPool, capacity: usize) -> Result<Self> {
        Ok(Self::new(pool.checkout(bytes_for::<T>(capacity, pool)?)?))
    }

    /// How many elements fit.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Appends `value`, or hands it back when the vector is full.
    pub fn push_within_capacity(&mut self, value: T) -> std::result::Result<(), T> {
        if self.len == self.capacity {
            return Err(value);
        }
        // SAFETY: `len < capacity`, so the slot lies inside the buffer (field invariant), is
        // aligned (BLOCK_ALIGN-aligned start, `Element` alignment divides it) and unaliased
        // (we hold `&mut self`).
        unsafe { self.buf.as_mut_ptr().cast::<T>().add(self.len).write(value) };
        self.len += 1;
        Ok(())
    }

    /// Appends every item of `values`.
    ///
    /// # Errors
    /// [`Error::Shape`] if they do not all fit; those that fit are kept.
    pub fn extend_within_capacity(&mut self, values: impl IntoIterator<Item = T>) -> Result<()> {
        let mut values = values.into_iter();
        for value in values.by_ref() {
            if self.push_within_capacity(value).is_err() {
                let got = self.len + 1 + values.count();
                return Err(Error::Shape { what: "pinned vector length", expected: self.capacity, got });
            }
        }
        Ok(())
    }

    /// Sets the length to `new_len`, writing `value` into new slots.
    ///
    /// # Errors
    /// [`Error::Shape`] if `new_len` exceeds the capacity.
    pub fn resize(&mut self, new_len: usize, value: T) -> Result<()> {
        if new_len > self.capacity {
            return Err(Error::Shape { what: "pinned vector length", expected: self.capacity, got: new_len });
        }
        while self.len < new_len {
            self.push_within_capacity(value).map_err(|_| ()).expect("checked against capacity");
        }
        self.len = new_len;
        Ok(())
    }

    /// The buffer underneath (for DMA: its pointer, and whether it is pinned).
    pub fn buffer(&self) -> &PinnedBuf {
        &self.buf
    }

    /// Whether the memory is page-locked.
    pub fn is_pinned(&self) -> bool {
        self.buf.is_pinned()
    }
}

impl<T: Element> Deref for PinnedVec<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: elements `..len` are initialised and inside the buffer (field invariants).
        unsafe { slice::from_raw_parts(self.buf.non_null().as_ptr().cast::<T>(), self.len) }
    }
}

impl<T: Element> DerefMut for PinnedVec<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`; `&mut self` makes the view unique.
        unsafe { slice::from_raw_parts_mut(self.buf.as_mut_ptr().cast::<T>(), self.len) }
    }
}

impl<T: Element> fmt::Debug for PinnedVec<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PinnedVec")
            .field("len", &self.len)
            .field("capacity", &self.capacity)
            .field("buf", &self.buf)
            .finish()
    }
}

/// Bytes of `len` elements; a length no pool could hold is the pool's [`Error::PoolTooSmall`].
fn bytes_for<T>(len: usize, pool: &PinnedPool) -> Result<usize> {
    len.checked_mul(mem::size_of::<T>())
        .ok_or(Error::PoolTooSmall { requested: usize::MAX, capacity: pool.config().max_bytes })
}

/// The a, b and c vectors of one partition, checked out together: all three or none.
#[derive(Debug)]
pub struct PinnedAbcBuffers {
    /// ⟨A,z⟩ per constraint; after the h stage, the h coefficients.
    pub a: PinnedVec<Scalar>,
    /// ⟨B,z⟩ per constraint.
    pub b: PinnedVec<Scalar>,
    /// ⟨C,z⟩ per constraint.
    pub c: PinnedVec<Scalar>,
}

impl PinnedAbcBuffers {
    /// Checks out three buffers of `n` scalars each, all-or-nothing.
    ///
    /// # Errors
    /// [`Error::PoolTooSmall`] when the three together exceed the pool's cap;
    /// [`Error::OutOfMemory`] when not even the heap fallback can serve them.
    pub fn checkout(pool: &PinnedPool, n: usize) -> Result<Self> {
        let bytes = bytes_for::<Scalar>(n, pool)?;
        let [a, b, c] = pool.checkout_many([bytes; 3])?;
        Ok(PinnedAbcBuffers { a: PinnedVec::new(a), b: PinnedVec::new(b), c: PinnedVec::new(c) })
    }

    /// Whether all three are page-locked (they are either all pinned or all fallback).
    pub fn is_pinned(&self) -> bool {
        self.a.is_pinned() && self.b.is_pinned() && self.c.is_pinned()
    }

    /// Whether these came from the heap fallback.
    pub fn is_fallback(&self) -> bool {
        self.a.buffer().is_fallback()
    }
}
