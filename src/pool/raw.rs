//! Raw host allocations: the one place pool memory is allocated and freed.
//!
//! A [`HostAllocator`] hands out large, aligned, uninitialised blocks. The heap allocator here
//! serves the CPU backend and the pool's exhaustion fallback; the CUDA backend adds a pinning
//! allocator (`cuMemHostAlloc`) behind the same trait, so the pool never names a backend.
#![allow(unsafe_code)]

use std::alloc::Layout;
use std::fmt;
use std::ptr::NonNull;
use std::sync::Arc;

/// Alignment of every block: a cache line, so no two buffers share one and any field element
/// type (8-byte aligned) can be laid over a block.
pub const BLOCK_ALIGN: usize = 64;

/// A source of large host memory blocks for [`PinnedPool`](super::PinnedPool).
///
/// # Safety
/// Implementors promise that a successful [`alloc`](Self::alloc) returns a block of at least
/// `bytes` bytes, aligned to [`BLOCK_ALIGN`], not overlapping any other live block, that stays
/// valid until passed to [`free`](Self::free).
pub unsafe trait HostAllocator: Send + Sync + fmt::Debug {
    /// Allocates `bytes` (> 0) uninitialised bytes; `None` when the memory cannot be had.
    fn alloc(&self, bytes: usize) -> Option<NonNull<u8>>;

    /// Frees a block.
    ///
    /// # Safety
    /// - `ptr` came from `self.alloc(bytes)` with the same `bytes`, and is freed only once.
    /// - Nothing reads or writes the block afterwards; for pinned memory that includes DMA:
    ///   every copy from the block has completed.
    unsafe fn free(&self, ptr: NonNull<u8>, bytes: usize);

    /// Whether blocks are page-locked, so the GPU can DMA from them at line rate.
    fn is_pinned(&self) -> bool;
}

/// Ordinary heap memory from the global allocator, [`BLOCK_ALIGN`]-aligned. Not pinned.
#[derive(Debug, Default, Clone, Copy)]
pub struct HeapAllocator;

impl HeapAllocator {
    fn layout(bytes: usize) -> Option<Layout> {
        Layout::from_size_align(bytes, BLOCK_ALIGN).ok()
    }
}

// SAFETY: blocks come from the global allocator with a layout of `bytes` bytes and
// `BLOCK_ALIGN` alignment; the global allocator never hands out overlapping live blocks.
unsafe impl HostAllocator for HeapAllocator {
    fn alloc(&self, bytes: usize) -> Option<NonNull<u8>> {
        debug_assert!(bytes > 0, "zero-byte block requested");
        let layout = Self::layout(bytes)?;
        // SAFETY: `layout` has a non-zero size (checked by the pool, asserted above).
        NonNull::new(unsafe { std::alloc::alloc(layout) })
    }

    unsafe fn free(&self, ptr: NonNull<u8>, bytes: usize) {
        let layout = Self::layout(bytes).expect("layout was valid when the block was allocated");
        // SAFETY: the caller guarantees `ptr` came from `alloc(bytes)`, i.e. from the global
        // allocator with this very layout, and is freed once.
        unsafe { std::alloc::dealloc(ptr.as_ptr(), layout) }
    }

    fn is_pinned(&self) -> bool {
        false
    }
}

/// An owned allocation that the allocator which made it frees on drop, so a block can be
/// neither leaked, nor freed twice, nor freed by the wrong allocator.
///
/// The pool drops a block only while no `PinnedBuf` holds it, and buffers come back only after
/// the copies that read them have completed; so no DMA touches a block being freed.
#[derive(Debug)]
pub(crate) struct Block {
    pub(crate) ptr: NonNull<u8>,
    /// True capacity in bytes.
    pub(crate) capacity: usize,
    allocator: Arc<dyn HostAllocator>,
}

impl Block {
    /// `bytes` (> 0) from `allocator`, or `None` when it has none to give.
    pub(crate) fn alloc(allocator: &Arc<dyn HostAllocator>, bytes: usize) -> Option<Block> {
        let ptr = allocator.alloc(bytes)?;
        debug_assert!(ptr.as_ptr() as usize % BLOCK_ALIGN == 0, "block {ptr:p} not {BLOCK_ALIGN}-aligned");
        Some(Block { ptr, capacity: bytes, allocator: Arc::clone(allocator) })
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `allocator.alloc(capacity)` (the only constructor), this
        // block is its only owner so it is freed once, and no copy is in flight (type docs).
        unsafe { self.allocator.free(self.ptr, self.capacity) }
    }
}

// SAFETY: a `Block` is the unique owner of its memory (the allocator contract promises no
// overlap) and its allocator is Send + Sync, so moving it to, or sharing it with, another
// thread is like doing so with a `Box<[u8]>`.
unsafe impl Send for Block {}
// SAFETY: as above; `&Block` only exposes the pointer value, not the memory.
unsafe impl Sync for Block {}
