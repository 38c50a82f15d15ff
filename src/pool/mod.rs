//! `PinnedPool`: page-locked host buffers, allocated rarely and reused forever.
//!
//! Pinning memory is slow (about 3 s for 4 GiB on the H200 host) and serialises in the driver,
//! while copying from pageable memory runs at a seventh of PCIe line rate. So a/b/c buffers come
//! from this pool: allocated up front ([`PinnedPool::prewarm`]) and then reused.
//!
//! - Checkout is best fit: the smallest free buffer that fits, but never one wasting more than
//!   [`PoolConfig::max_waste`] of the request, so a tiny request cannot pin down a huge buffer.
//! - A buffer goes back on `Drop` under its true capacity, not the size that was asked for.
//! - [`PinnedPool::checkout_many`] takes several buffers all-or-nothing, so two partitions can
//!   never each hold part of what they need and wait on each other.
//! - The pool never holds more than [`PoolConfig::max_bytes`]. When it cannot serve a request
//!   (cap reached, or the allocator failed) it falls back to ordinary heap memory: counted in
//!   [`PoolStats::fallbacks`] and logged with one `warn!` per episode, never silent.
//! - Pool memory replaces heap a/b/c vectors: it is not an addition to be charged to any other
//!   memory budget.

mod raw;
mod typed;

pub use raw::{HeapAllocator, HostAllocator, BLOCK_ALIGN};
pub use typed::{Element, PinnedAbcBuffers, PinnedVec};

use std::collections::BTreeMap;
use std::fmt;
use std::ptr::NonNull;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use raw::Block;

use crate::error::{Error, Result};

/// Limits of a [`PinnedPool`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PoolConfig {
    /// Most bytes the pool holds at once, free and checked-out buffers together. A request
    /// larger than this can never be served and is an error ([`Error::PoolTooSmall`]).
    pub max_bytes: usize,
    /// A free buffer of capacity `cap` may serve a request of `r` bytes only if
    /// `cap - r <= r * max_waste`. `0.0` means exact sizes only.
    pub max_waste: f64,
}

impl PoolConfig {
    /// Checks the limits: `max_waste` a finite number ≥ 0.
    ///
    /// # Errors
    /// [`Error::Config`] naming the bad limit.
    pub fn validate(&self) -> Result<()> {
        if !(self.max_waste.is_finite() && self.max_waste >= 0.0) {
            return Err(Error::Config("pool max_waste must be a finite number >= 0".into()));
        }
        Ok(())
    }
}

impl Default for PoolConfig {
    /// 32 GiB cap, and up to 50% waste per reuse.
    fn default() -> Self {
        PoolConfig { max_bytes: 32 << 30, max_waste: 0.5 }
    }
}

/// Counters of a pool, read at any time with [`PinnedPool::stats`].
///
/// Every buffer handed out is one `checkout`, served by a `reuse`, a new `allocation` or a heap
/// `fallback`; every buffer given back is one `checkin`. With nothing checked out,
/// `checkouts == checkins`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Buffers handed out (`allocations + reuses + fallbacks`, counting prewarm out).
    pub checkouts: u64,
    /// Buffers given back, pooled or fallback.
    pub checkins: u64,
    /// Blocks newly allocated from the pool's allocator, prewarm included.
    pub allocations: u64,
    /// Checkouts served from the free list.
    pub reuses: u64,
    /// Checkouts served from the heap because the pool could not serve them.
    pub fallbacks: u64,
    /// Blocks given back to the allocator (by `shrink`, eviction, or dropping the pool).
    pub frees: u64,
    /// Bytes the pool holds now (free and checked out).
    pub bytes_held: usize,
    /// Highest `bytes_held` so far.
    pub peak_bytes_held: usize,
    /// Bytes of pool buffers checked out now.
    pub bytes_in_use: usize,
    /// Highest `bytes_in_use` so far.
    pub peak_bytes_in_use: usize,
    /// Bytes of heap fallback buffers checked out now.
    pub fallback_bytes_in_use: usize,
    /// Highest `bytes_in_use + fallback_bytes_in_use` so far: the most host memory a/b/c took.
    pub peak_bytes_checked_out: usize,
    /// Buffers on the free list now.
    pub free_buffers: usize,
    /// Wall time spent in the allocator's `alloc` (pinning, for a pinning allocator).
    pub alloc_time: Duration,
    /// Wall time spent in the allocator's `free`.
    pub free_time: Duration,
}

impl PoolStats {
    /// Buffers checked out and not yet returned.
    pub fn outstanding(&self) -> u64 {
        self.checkouts - self.checkins
    }
}

/// A thread-safe pool of host buffers; cloning gives another handle to the same pool.
///
/// # Examples
/// ```
/// use pinprove::{PinnedPool, PoolConfig};
///
/// let pool = PinnedPool::new(PoolConfig { max_bytes: 1 << 20, ..PoolConfig::default() });
/// pool.prewarm(2, 4096)?;
/// {
///     let buf = pool.checkout(3000)?; // best fit: one of the 4096-byte buffers
///     assert_eq!(buf.capacity(), 4096);
/// } // dropped: back on the free list
/// let stats = pool.stats();
/// assert_eq!((stats.allocations, stats.reuses, stats.checkins), (2, 1, 1));
/// # Ok::<(), pinprove::Error>(())
/// ```
#[derive(Clone)]
pub struct PinnedPool {
    inner: Arc<Inner>,
}

struct Inner {
    allocator: Arc<dyn HostAllocator>,
    /// Where fallbacks come from when the pool cannot serve.
    heap: Arc<dyn HostAllocator>,
    config: PoolConfig,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Free blocks by true capacity: `range(r..)` finds the best fit.
    free: BTreeMap<usize, Vec<Block>>,
    free_bytes: usize,
    stats: PoolStats,
    /// Set while checkouts fall back; the first fallback of an episode logs, a pooled checkout
    /// ends the episode.
    falling_back: bool,
}

impl fmt::Debug for PinnedPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PinnedPool")
            .field("allocator", &self.inner.allocator)
            .field("config", &self.inner.config)
            .field("stats", &self.stats())
            .finish()
    }
}

impl PinnedPool {
    /// A pool of ordinary heap memory: the CPU backend's pool, with the same reuse behaviour.
    pub fn new(config: PoolConfig) -> Self {
        Self::with_allocator(config, HeapAllocator)
    }

    /// A pool over `allocator` (for example the CUDA backend's pinning allocator).
    pub fn with_allocator(config: PoolConfig, allocator: impl HostAllocator + 'static) -> Self {
        PinnedPool {
            inner: Arc::new(Inner {
                allocator: Arc::new(allocator),
                heap: Arc::new(HeapAllocator),
                config,
                state: Mutex::new(State::default()),
            }),
        }
    }

    /// The pool's limits.
    pub fn config(&self) -> PoolConfig {
        self.inner.config
    }

    /// Whether pool buffers are page-locked (fallback buffers never are).
    pub fn is_pinned(&self) -> bool {
        self.inner.allocator.is_pinned()
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> PoolStats {
        let st = self.inner.state.lock();
        PoolStats { free_buffers: st.free.values().map(Vec::len).sum(), ..st.stats }
    }

    /// Allocates `count` buffers of `bytes` each onto the free list, before any work starts, so
    /// that the hot path only reuses.
    ///
    /// # Errors
    /// [`Error::PoolTooSmall`] if they would not fit under the cap next to what the pool holds
    /// (`requested` is what the pool would then hold); [`Error::OutOfMemory`] if the allocator
    /// fails (buffers already made stay in the pool).
    pub fn prewarm(&self, count: usize, bytes: usize) -> Result<()> {
        let bytes = bytes.max(1);
        let total = count.saturating_mul(bytes);
        {
            let mut st = self.inner.state.lock();
            let capacity = self.inner.config.max_bytes;
            if total > capacity - st.stats.bytes_held {
                return Err(Error::PoolTooSmall { requested: st.stats.bytes_held.saturating_add(total), capacity });
            }
            st.reserve(total);
        }
        for made in 0..count {
            let Some(block) = self.inner.allocate(bytes) else {
                let mut st = self.inner.state.lock();
                st.stats.bytes_held -= (count - made) * bytes;
                return Err(Error::OutOfMemory { requested: bytes });
            };
            self.inner.state.lock().push_free(block);
        }
        Ok(())
    }

    /// Frees idle buffers, largest first, until at least `bytes` are freed or none is left.
    /// Returns the bytes freed. Checked-out buffers are never touched.
    pub fn shrink(&self, bytes: usize) -> usize {
        let mut evicted = Vec::new();
        let mut freed = 0;
        {
            let mut st = self.inner.state.lock();
            while freed < bytes {
                let Some(block) = st.pop_largest_free() else { break };
                freed += block.capacity;
                evicted.push(block);
            }
        }
        self.inner.release(evicted);
        freed
    }

    /// Checks out one buffer of at least `bytes` bytes.
    ///
    /// # Errors
    /// As [`checkout_many`](Self::checkout_many).
    pub fn checkout(&self, bytes: usize) -> Result<PinnedBuf> {
        let [buf] = self.checkout_many([bytes])?;
        Ok(buf)
    }

    /// Checks out `N` buffers all-or-nothing: all from the pool, or (when the pool cannot serve
    /// all of them) all from the heap fallback. Never some of each, never a partial hold.
    ///
    /// # Errors
    /// [`Error::PoolTooSmall`] if the requests together exceed the pool's cap, so that they
    /// could never be served; [`Error::OutOfMemory`] if even the heap fallback fails.
    pub fn checkout_many<const N: usize>(&self, requests: [usize; N]) -> Result<[PinnedBuf; N]> {
        let requests = requests.map(|r| r.max(1));
        let total = requests.iter().fold(0usize, |acc, r| acc.saturating_add(*r));
        let capacity = self.inner.config.max_bytes;
        if total > capacity {
            return Err(Error::PoolTooSmall { requested: total, capacity });
        }
        match self.inner.take_pooled(&requests) {
            Some(blocks) => Ok(blocks.map(|block| PinnedBuf::new(block, Origin::Pool, &self.inner))),
            None => self.fallback(requests),
        }
    }

    fn fallback<const N: usize>(&self, requests: [usize; N]) -> Result<[PinnedBuf; N]> {
        let mut blocks = Vec::with_capacity(N);
        for &bytes in &requests {
            // On failure the blocks made so far are dropped, and so freed.
            blocks.push(Block::alloc(&self.inner.heap, bytes).ok_or(Error::OutOfMemory { requested: bytes })?);
        }
        {
            let mut st = self.inner.state.lock();
            st.stats.fallbacks += N as u64;
            st.stats.checkouts += N as u64;
            st.stats.fallback_bytes_in_use += requests.iter().sum::<usize>();
            st.note_peaks();
            if !st.falling_back {
                st.falling_back = true;
                // Only a pinned pool's fallback costs copy speed; a heap pool's costs reuse.
                let cost = if self.is_pinned() {
                    "pageable heap memory; host-to-device copies of these buffers will be slow"
                } else {
                    "fresh heap allocations, freed after use"
                };
                log::warn!(
                    "pool exhausted ({} of {} bytes held, {} in use): {requests:?} bytes come from {cost}",
                    st.stats.bytes_held,
                    self.inner.config.max_bytes,
                    st.stats.bytes_in_use,
                );
            }
        }
        let mut blocks = blocks.into_iter();
        Ok(std::array::from_fn(|_| {
            let block = blocks.next().expect("one block per request");
            PinnedBuf::new(block, Origin::Heap, &self.inner)
        }))
    }
}

impl Inner {
    /// Serves all `requests` from the pool, allocating what the free list lacks, or returns
    /// `None`, holding nothing, when the cap or the allocator says no.
    fn take_pooled<const N: usize>(&self, requests: &[usize; N]) -> Option<[Block; N]> {
        let cap = self.config.max_bytes;
        let mut taken: [Option<Block>; N] = std::array::from_fn(|_| None);
        let mut evicted = Vec::new();
        let reused;
        {
            let mut st = self.state.lock();
            for (slot, &r) in taken.iter_mut().zip(requests) {
                *slot = st.take_best_fit(r, self.config.max_waste);
            }
            reused = taken.iter().flatten().count() as u64;
            let missing = missing_bytes(requests, &taken);
            if missing > 0 {
                // Idle blocks of other sizes are freed to make room, but only if that suffices.
                let busy = st.stats.bytes_held - st.free_bytes;
                if busy + missing > cap {
                    for block in taken.into_iter().flatten() {
                        st.push_free(block);
                    }
                    return None;
                }
                while st.stats.bytes_held + missing > cap {
                    evicted.push(st.pop_largest_free().expect("idle bytes cover the shortfall"));
                }
                st.reserve(missing);
            }
        }
        self.release(evicted);

        for (slot, &r) in taken.iter_mut().zip(requests) {
            if slot.is_none() {
                *slot = self.allocate(r);
                if slot.is_none() {
                    break;
                }
            }
        }

        let mut st = self.state.lock();
        if taken.iter().any(Option::is_none) {
            // Unreserve what was never allocated; what was stays in the pool as free memory.
            st.stats.bytes_held -= missing_bytes(requests, &taken);
            for block in taken.into_iter().flatten() {
                st.push_free(block);
            }
            return None;
        }
        let blocks = taken.map(|t| t.expect("every request served"));
        st.stats.reuses += reused;
        st.stats.checkouts += N as u64;
        st.stats.bytes_in_use += blocks.iter().map(|b| b.capacity).sum::<usize>();
        st.note_peaks();
        st.falling_back = false;
        Some(blocks)
    }

    /// One block from the allocator, timed. Outside the lock: pinning can take seconds.
    fn allocate(&self, bytes: usize) -> Option<Block> {
        let start = Instant::now();
        let block = Block::alloc(&self.allocator, bytes);
        let elapsed = start.elapsed();
        let mut st = self.state.lock();
        st.stats.alloc_time += elapsed;
        st.stats.allocations += u64::from(block.is_some());
        block
    }

    /// Frees blocks already taken off the books, outside the lock, timed.
    fn release(&self, blocks: Vec<Block>) {
        if blocks.is_empty() {
            return;
        }
        let start = Instant::now();
        let count = blocks.len() as u64;
        drop(blocks); // each block frees itself
        let mut st = self.state.lock();
        st.stats.frees += count;
        st.stats.free_time += start.elapsed();
    }
}

impl State {
    fn take_best_fit(&mut self, bytes: usize, max_waste: f64) -> Option<Block> {
        let limit = bytes.saturating_add((bytes as f64 * max_waste) as usize);
        let (&cap, list) = self.free.range_mut(bytes..=limit).next()?;
        let block = list.pop().expect("free lists are never left empty");
        if list.is_empty() {
            self.free.remove(&cap);
        }
        self.free_bytes -= cap;
        Some(block)
    }

    fn note_peaks(&mut self) {
        let s = &mut self.stats;
        s.peak_bytes_in_use = s.peak_bytes_in_use.max(s.bytes_in_use);
        s.peak_bytes_checked_out = s.peak_bytes_checked_out.max(s.bytes_in_use + s.fallback_bytes_in_use);
    }

    fn pop_largest_free(&mut self) -> Option<Block> {
        let mut entry = self.free.last_entry()?;
        let block = entry.get_mut().pop().expect("free lists are never left empty");
        if entry.get().is_empty() {
            entry.remove();
        }
        self.free_bytes -= block.capacity;
        self.stats.bytes_held -= block.capacity;
        Some(block)
    }

    fn push_free(&mut self, block: Block) {
        self.free_bytes += block.capacity;
        self.free.entry(block.capacity).or_default().push(block);
    }

    /// Counts bytes about to be allocated against the cap before allocating them, so that
    /// concurrent checkouts cannot overshoot it together.
    fn reserve(&mut self, bytes: usize) {
        self.stats.bytes_held += bytes;
        self.stats.peak_bytes_held = self.stats.peak_bytes_held.max(self.stats.bytes_held);
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        let blocks: Vec<Block> = std::mem::take(&mut self.state.get_mut().free).into_values().flatten().collect();
        self.release(blocks);
    }
}

/// Bytes of the requests not (yet) served by a block.
fn missing_bytes<const N: usize>(requests: &[usize; N], taken: &[Option<Block>; N]) -> usize {
    requests.iter().zip(taken).filter(|(_, t)| t.is_none()).map(|(r, _)| r).sum()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    Pool,
    Heap,
}

/// A checked-out buffer of uninitialised bytes; returns to its pool (or, for a fallback
/// buffer, to the heap) on `Drop`.
///
/// It holds a handle to the pool, so it may outlive the `PinnedPool` it came from and cross to
/// the long-lived GPU thread. Typed, initialised access is [`PinnedVec`](crate::PinnedVec)'s job.
pub struct PinnedBuf {
    /// Invariant: a live block of `capacity` bytes owned by this buffer alone.
    block: Option<Block>,
    origin: Origin,
    pool: Arc<Inner>,
}

impl PinnedBuf {
    fn new(block: Block, origin: Origin, pool: &Arc<Inner>) -> Self {
        PinnedBuf { block: Some(block), origin, pool: Arc::clone(pool) }
    }

    fn block(&self) -> &Block {
        self.block.as_ref().expect("a PinnedBuf holds its block until dropped")
    }

    /// True capacity in bytes (at least what was asked for).
    pub fn capacity(&self) -> usize {
        self.block().capacity
    }

    /// Whether the memory is page-locked: a pool buffer over a pinning allocator.
    pub fn is_pinned(&self) -> bool {
        self.origin == Origin::Pool && self.pool.allocator.is_pinned()
    }

    /// Whether this is a heap fallback buffer, handed out because the pool was exhausted.
    pub fn is_fallback(&self) -> bool {
        self.origin == Origin::Heap
    }

    /// Start of the buffer, [`BLOCK_ALIGN`]-aligned. The bytes may be uninitialised.
    pub fn as_ptr(&self) -> *const u8 {
        self.block().ptr.as_ptr()
    }

    /// Start of the buffer, for writing. The bytes may be uninitialised.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.block().ptr.as_ptr()
    }

    pub(crate) fn non_null(&self) -> NonNull<u8> {
        self.block().ptr
    }
}

impl fmt::Debug for PinnedBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PinnedBuf")
            .field("ptr", &self.as_ptr())
            .field("capacity", &self.capacity())
            .field("pinned", &self.is_pinned())
            .field("fallback", &self.is_fallback())
            .finish()
    }
}

impl Drop for PinnedBuf {
    fn drop(&mut self) {
        let block = self.block.take().expect("dropped once");
        let capacity = block.capacity;
        match self.origin {
            Origin::Pool => {
                let mut st = self.pool.state.lock();
                st.stats.checkins += 1;
                st.stats.bytes_in_use -= capacity;
                st.push_free(block);
            }
            Origin::Heap => {
                drop(block); // frees it
                let mut st = self.pool.state.lock();
                st.stats.checkins += 1;
                st.stats.fallback_bytes_in_use -= capacity;
            }
        }
    }
}
