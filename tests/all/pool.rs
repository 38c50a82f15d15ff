//! PinnedPool and PinnedAbcBuffers: best fit, true-size return, all-or-nothing checkout,
//! shrink order, capped fallback, concurrency, steady state.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use pinprove::{Error, HeapAllocator, HostAllocator, PinnedAbcBuffers, PinnedPool, PoolConfig};

/// Heap memory that records every free and fails the k-th allocation (1-based), if set.
#[derive(Debug, Default)]
struct Recorder {
    allocs: AtomicUsize,
    fail_at: Option<usize>,
    freed: Mutex<Vec<usize>>,
}

/// A handle the test keeps while the pool owns another.
#[derive(Debug, Clone, Default)]
struct TestAllocator(Arc<Recorder>);

impl std::ops::Deref for TestAllocator {
    type Target = Recorder;
    fn deref(&self) -> &Recorder {
        &self.0
    }
}

// SAFETY: delegates to HeapAllocator, which upholds the contract.
unsafe impl HostAllocator for TestAllocator {
    fn alloc(&self, bytes: usize) -> Option<NonNull<u8>> {
        let k = self.allocs.fetch_add(1, Ordering::SeqCst) + 1;
        if self.fail_at == Some(k) {
            return None;
        }
        HeapAllocator.alloc(bytes)
    }
    unsafe fn free(&self, ptr: NonNull<u8>, bytes: usize) {
        self.freed.lock().push(bytes);
        // SAFETY: forwarded caller duties; the block came from HeapAllocator.alloc(bytes).
        unsafe { HeapAllocator.free(ptr, bytes) }
    }
    fn is_pinned(&self) -> bool {
        true // stands in for a pinning allocator
    }
}

fn pool(max_bytes: usize) -> PinnedPool {
    PinnedPool::new(PoolConfig { max_bytes, max_waste: 0.5 })
}

#[test]
fn best_fit_takes_the_smallest_buffer_that_fits_within_the_waste_cap() {
    let pool = pool(1 << 20);
    for bytes in [4000, 1000, 2000] {
        pool.prewarm(1, bytes).unwrap();
    }
    let b = pool.checkout(1500).unwrap();
    assert_eq!(b.capacity(), 2000, "smallest that fits");
    let c = pool.checkout(900).unwrap();
    assert_eq!(c.capacity(), 1000);
    // Only the 4000-byte buffer is free: it would waste 3000 > 0.5 × 1000, so a new one is made.
    let d = pool.checkout(1000).unwrap();
    assert_eq!(d.capacity(), 1000);
    let s = pool.stats();
    assert_eq!((s.allocations, s.reuses, s.free_buffers), (4, 2, 1));
}

#[test]
fn buffers_return_under_their_true_capacity() {
    let pool = pool(1 << 20);
    pool.prewarm(1, 2000).unwrap();
    drop(pool.checkout(1500).unwrap());
    // Back as a 2000-byte buffer: a 2000-byte request reuses it.
    let again = pool.checkout(2000).unwrap();
    assert_eq!(again.capacity(), 2000);
    let s = pool.stats();
    assert_eq!((s.allocations, s.reuses, s.checkins), (1, 2, 1));
    assert_eq!(s.bytes_in_use, 2000);
}

#[test]
fn abc_checkout_is_all_or_nothing_when_the_cap_is_reached() {
    let n = 100; // scalars per buffer
    let bytes = n * 32;
    let pool = pool(4 * bytes);
    let first = PinnedAbcBuffers::checkout(&pool, n).unwrap();
    assert!(!first.is_fallback());
    // One more buffer would fit under the cap, three would not: all three fall back.
    let second = PinnedAbcBuffers::checkout(&pool, n).unwrap();
    assert!(second.is_fallback() && !second.a.is_pinned());
    let s = pool.stats();
    assert_eq!(s.bytes_in_use, 3 * bytes, "no pooled buffer held by the failed triple");
    assert_eq!(s.bytes_held, 3 * bytes);
    assert_eq!(s.fallbacks, 3);
    assert_eq!(s.fallback_bytes_in_use, 3 * bytes);
    drop((first, second));
    let s = pool.stats();
    assert_eq!((s.checkouts, s.checkins, s.fallback_bytes_in_use), (6, 6, 0));
}

#[test]
fn abc_checkout_is_all_or_nothing_when_an_allocation_fails() {
    let pool = PinnedPool::with_allocator(
        PoolConfig::default(),
        TestAllocator(Arc::new(Recorder { fail_at: Some(2), ..Default::default() })),
    );
    let abc = PinnedAbcBuffers::checkout(&pool, 64).unwrap();
    assert!(abc.is_fallback(), "2nd of 3 allocations failed: all three from the heap");
    let s = pool.stats();
    // The one block that was pinned stays in the pool, free; the missing bytes were unreserved.
    assert_eq!((s.allocations, s.fallbacks, s.bytes_in_use, s.free_buffers), (1, 3, 0, 1));
    assert_eq!(s.bytes_held, 64 * 32);
    drop(abc);
    // The next triple is pinned: it reuses that block and allocates two more.
    let abc = PinnedAbcBuffers::checkout(&pool, 64).unwrap();
    assert!(abc.is_pinned());
    let s = pool.stats();
    assert_eq!((s.allocations, s.reuses, s.checkouts, s.checkins), (3, 1, 6, 3));
}

#[test]
fn typed_access_writes_through_to_the_buffers() {
    use blstrs::Scalar;
    let pool = pool(1 << 20);
    let mut abc = PinnedAbcBuffers::checkout(&pool, 4).unwrap();
    for i in 0..4u64 {
        abc.a.push_within_capacity(Scalar::from(i)).unwrap();
    }
    assert!(abc.a.push_within_capacity(Scalar::from(9)).is_err(), "full at capacity 4");
    abc.a[2] = Scalar::from(42);
    let addr = abc.a.buffer().as_ptr() as usize;
    assert_eq!(&abc.a[..], &[0, 1, 42, 3].map(Scalar::from));
    assert_eq!(abc.a.as_ptr() as usize, addr, "slices are views of the pool buffer, not copies");
    abc.b.resize(3, Scalar::from(5)).unwrap();
    assert_eq!(&abc.b[..], &[Scalar::from(5); 3]);
    assert!(matches!(abc.c.resize(5, Scalar::from(0)), Err(Error::Shape { expected: 4, got: 5, .. })));
}

#[test]
fn shrink_frees_idle_buffers_largest_first() {
    let alloc = TestAllocator::default();
    let pool = PinnedPool::with_allocator(PoolConfig::default(), alloc.clone());
    for bytes in [1000, 3000, 2000, 4000] {
        pool.prewarm(1, bytes).unwrap();
    }
    let busy = pool.checkout(2000).unwrap();
    assert_eq!(pool.shrink(3500), 4000);
    assert_eq!(pool.shrink(3001), 3000 + 1000, "2000 is checked out, so 1000 goes next");
    assert_eq!(*alloc.freed.lock(), vec![4000, 3000, 1000]);
    assert_eq!(pool.shrink(1), 0, "nothing idle left");
    drop(busy);
    let s = pool.stats();
    assert_eq!((s.bytes_held, s.frees, s.free_buffers), (2000, 3, 1));
}

#[test]
fn cap_reached_falls_back_to_heap_counted_and_logged_once_per_episode() {
    let bytes = 4096;
    warnings_mentioning(""); // installs the capturing logger before anything warns
    let pool = pool(2 * bytes + 7); // a cap no other test uses: its log lines are ours
    let held = [pool.checkout(bytes).unwrap(), pool.checkout(bytes).unwrap()];
    let f1 = pool.checkout(bytes).unwrap();
    let f2 = pool.checkout(bytes).unwrap();
    assert!(f1.is_fallback() && f2.is_fallback() && !f1.is_pinned());
    assert_eq!(pool.stats().fallbacks, 2);
    assert_eq!(warnings_mentioning(&format!("of {} bytes held", 2 * bytes + 7)), 1, "one warning for the episode");
    drop(held);
    drop(pool.checkout(bytes).unwrap()); // pooled again: the episode ends
    drop(pool.checkout(bytes).unwrap());
    let [x, y] = [pool.checkout(bytes).unwrap(), pool.checkout(bytes).unwrap()];
    let f3 = pool.checkout(bytes).unwrap();
    assert!(f3.is_fallback());
    assert_eq!(warnings_mentioning(&format!("of {} bytes held", 2 * bytes + 7)), 2, "a new episode warns again");
    drop((x, y, f1, f2, f3));
    let s = pool.stats();
    assert_eq!((s.fallbacks, s.checkouts, s.checkins, s.fallback_bytes_in_use), (3, 9, 9, 0));
}

#[test]
fn a_request_over_the_cap_is_an_error_not_a_fallback() {
    let pool = pool(10_000);
    assert!(matches!(pool.checkout(10_001), Err(Error::PoolTooSmall { requested: 10_001, capacity: 10_000 })));
    assert!(matches!(PinnedAbcBuffers::checkout(&pool, 200), Err(Error::PoolTooSmall { requested: 19_200, .. })));
    assert!(matches!(pool.prewarm(3, 4000), Err(Error::PoolTooSmall { .. })));
    assert_eq!(pool.stats().checkouts, 0);
}

#[test]
fn concurrent_checkouts_never_share_a_buffer_and_all_come_back() {
    let pool = pool(64 << 20);
    let threads: Vec<_> = (0..8u8)
        .map(|t| {
            let pool = pool.clone();
            std::thread::spawn(move || {
                for i in 0..400usize {
                    let bytes = 512 * (1 + (i * 7 + t as usize) % 5);
                    let mut bufs = [pool.checkout(bytes).unwrap(), pool.checkout(bytes / 2).unwrap()];
                    for b in &mut bufs {
                        // SAFETY: the buffer holds `capacity` bytes and is ours alone.
                        unsafe { b.as_mut_ptr().write_bytes(t, b.capacity()) };
                    }
                    std::thread::yield_now();
                    for b in &bufs {
                        // SAFETY: as above; all bytes were written just now.
                        let bytes = unsafe { std::slice::from_raw_parts(b.as_ptr(), b.capacity()) };
                        assert!(bytes.iter().all(|&x| x == t), "buffer handed to two threads");
                    }
                }
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    let s = pool.stats();
    assert_eq!(s.checkouts, 8 * 400 * 2);
    assert_eq!((s.outstanding(), s.bytes_in_use), (0, 0));
    assert!(s.reuses > s.allocations, "reuse dominates: {s:?}");
}

#[test]
fn live_buffers_never_overlap() {
    let pool = pool(64 << 20);
    pool.prewarm(10, 3000).unwrap();
    let bufs: Vec<_> = (1..40).map(|i| pool.checkout(i * 137).unwrap()).collect();
    let mut ranges: Vec<_> = bufs.iter().map(|b| (b.as_ptr() as usize, b.as_ptr() as usize + b.capacity())).collect();
    ranges.sort();
    assert!(ranges.windows(2).all(|w| w[0].1 <= w[1].0), "overlapping buffers");
    assert!(bufs.iter().all(|b| b.as_ptr() as usize % pinprove::BLOCK_ALIGN == 0));
}

#[test]
fn after_prewarm_100_partitions_allocate_nothing() {
    let n = 1 << 10;
    let pool = pool(1 << 30);
    pool.prewarm(3 * 2, n * 32).unwrap();
    let before = pool.stats();
    for _ in 0..100 {
        let (x, y) = (PinnedAbcBuffers::checkout(&pool, n).unwrap(), PinnedAbcBuffers::checkout(&pool, n).unwrap());
        assert!(!x.is_fallback() && !y.is_fallback());
    }
    let after = pool.stats();
    assert_eq!(after.allocations, before.allocations, "steady state: no new allocation");
    assert_eq!(after.reuses - before.reuses, 600);
    assert_eq!(after.peak_bytes_held, 6 * n * 32);
}

/// Counts warnings seen by this binary's logger whose text contains `needle`.
fn warnings_mentioning(needle: &str) -> usize {
    warnings_with(needle).len()
}

/// The warnings seen by this binary's logger whose text contains `needle`.
fn warnings_with(needle: &str) -> Vec<String> {
    static LOGGER: CapturingLogger = CapturingLogger(Mutex::new(Vec::new()));
    let _ = log::set_logger(&LOGGER).map(|()| log::set_max_level(log::LevelFilter::Warn));
    LOGGER.0.lock().iter().filter(|m| m.contains(needle)).cloned().collect()
}

#[test]
fn a_heap_pool_warns_about_reuse_not_about_copies() {
    let cap = 2 * 1000 + 13; // a cap no other test uses: its log lines are ours
    warnings_mentioning("");
    let pool = PinnedPool::new(PoolConfig { max_bytes: cap, max_waste: 0.5 });
    let held = [pool.checkout(1000).unwrap(), pool.checkout(1000).unwrap()];
    assert!(pool.checkout(1000).unwrap().is_fallback());
    let warnings = warnings_with(&format!("of {cap} bytes held"));
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("fresh heap allocations") && !warnings[0].contains("host-to-device"), "{warnings:?}");
    drop(held);
}

struct CapturingLogger(Mutex<Vec<String>>);

impl log::Log for CapturingLogger {
    fn enabled(&self, m: &log::Metadata<'_>) -> bool {
        m.level() <= log::Level::Warn
    }
    fn log(&self, r: &log::Record<'_>) {
        if self.enabled(r.metadata()) {
            self.0.lock().push(r.args().to_string());
        }
    }
    fn flush(&self) {}
}
