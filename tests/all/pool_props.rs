//! Property tests of the pool (proptest): under random sizes, caps, orders of checkout and
//! checkin, `shrink` and threads, buffers never overlap, every buffer comes back, and the
//! statistics balance.

use proptest::prelude::*;

use pinprove::{PinnedBuf, PinnedPool, PoolConfig, PoolStats};

/// One step of a single-threaded run.
#[derive(Debug, Clone)]
enum Op {
    /// Check out one buffer of this many bytes.
    Checkout(usize),
    /// Check out three at once (a partition's a/b/c), all-or-nothing.
    CheckoutThree(usize, usize, usize),
    /// Give back the held buffer at this index (modulo those held).
    Checkin(usize),
    /// Free this many idle bytes.
    Shrink(usize),
}

fn op() -> impl Strategy<Value = Op> {
    let size = 0usize..(1 << 16);
    prop_oneof![
        4 => size.clone().prop_map(Op::Checkout),
        2 => (size.clone(), size.clone(), size).prop_map(|(a, b, c)| Op::CheckoutThree(a, b, c)),
        4 => any::<usize>().prop_map(Op::Checkin),
        1 => (0usize..(1 << 18)).prop_map(Op::Shrink),
    ]
}

/// Held buffers do not overlap, each is as large as asked, and the books match what is held.
fn check_held(held: &[(PinnedBuf, usize)], s: &PoolStats) -> Result<(), TestCaseError> {
    let mut ranges: Vec<(usize, usize)> = held.iter().map(|(b, _)| (b.as_ptr() as usize, b.capacity())).collect();
    ranges.sort();
    for w in ranges.windows(2) {
        prop_assert!(w[0].0 + w[0].1 <= w[1].0, "buffers overlap: {:?}", w);
    }
    for (buf, asked) in held {
        prop_assert!(buf.capacity() >= (*asked).max(1), "{} bytes for a request of {asked}", buf.capacity());
    }
    prop_assert_eq!(s.outstanding(), held.len() as u64);
    let (pooled, fallback): (Vec<_>, Vec<_>) = held.iter().partition(|(b, _)| !b.is_fallback());
    prop_assert_eq!(s.bytes_in_use, pooled.iter().map(|(b, _)| b.capacity()).sum::<usize>());
    prop_assert_eq!(s.fallback_bytes_in_use, fallback.iter().map(|(b, _)| b.capacity()).sum::<usize>());
    prop_assert!(s.bytes_held <= s.peak_bytes_held && s.bytes_in_use <= s.bytes_held);
    prop_assert_eq!(s.checkouts, s.allocations + s.reuses + s.fallbacks);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn buffers_never_overlap_every_one_comes_back_and_the_books_balance(
        cap in (1usize << 12)..(1 << 20),
        max_waste in 0.0f64..4.0,
        ops in proptest::collection::vec(op(), 1..80),
    ) {
        let pool = PinnedPool::new(PoolConfig { max_bytes: cap, max_waste });
        let mut held: Vec<(PinnedBuf, usize)> = Vec::new();
        for op in ops {
            match op {
                Op::Checkout(n) => match pool.checkout(n) {
                    Ok(buf) => held.push((buf, n)),
                    Err(e) => prop_assert!(n > cap, "checkout of {n} under a cap of {cap}: {e}"),
                },
                Op::CheckoutThree(a, b, c) => match pool.checkout_many([a, b, c]) {
                    Ok(bufs) => {
                        let fallbacks = bufs.iter().filter(|b| b.is_fallback()).count();
                        prop_assert!(fallbacks == 0 || fallbacks == 3, "a partial hold: {fallbacks} of 3 fallback");
                        held.extend(bufs.into_iter().zip([a, b, c]));
                    }
                    Err(e) => prop_assert!(a.max(1) + b.max(1) + c.max(1) > cap, "three of {a}, {b}, {c}: {e}"),
                },
                Op::Checkin(i) if !held.is_empty() => drop(held.swap_remove(i % held.len())),
                Op::Checkin(_) => {}
                Op::Shrink(n) => {
                    let idle = pool.stats().bytes_held - pool.stats().bytes_in_use;
                    let freed = pool.shrink(n);
                    prop_assert!(freed <= idle && (freed >= n.min(idle) || pool.stats().free_buffers == 0));
                }
            }
            check_held(&held, &pool.stats())?;
        }
        drop(held);
        let s = pool.stats();
        prop_assert_eq!((s.outstanding(), s.bytes_in_use, s.fallback_bytes_in_use), (0, 0, 0));
        pool.shrink(usize::MAX);
        prop_assert_eq!((pool.stats().bytes_held, pool.stats().free_buffers), (0, 0));
    }

    #[test]
    fn threads_sharing_a_pool_get_disjoint_buffers_and_return_them_all(
        threads in 2usize..5,
        sizes in proptest::collection::vec(1usize..(1 << 14), 8..40),
        cap in (1usize << 14)..(1 << 18),
    ) {
        let pool = PinnedPool::new(PoolConfig { max_bytes: cap, ..PoolConfig::default() });
        std::thread::scope(|scope| {
            for t in 0..threads {
                let (pool, sizes) = (pool.clone(), &sizes);
                scope.spawn(move || {
                    let mut held = Vec::new();
                    for (i, &n) in sizes.iter().enumerate() {
                        let mut buf = pool.checkout(n).expect("every size is under the cap");
                        // A pattern of this thread's: another holder of the same bytes would
                        // overwrite it before it is read back.
                        let tag = (t * 31 + i) as u8;
                        // SAFETY: the buffer holds at least n bytes and is this thread's alone.
                        unsafe { std::ptr::write_bytes(buf.as_mut_ptr(), tag, n) };
                        held.push((buf, n, tag));
                        if i % 3 == 2 {
                            pool.shrink(n);
                        }
                        if held.len() > 4 {
                            let (buf, n, tag) = held.remove(0);
                            // SAFETY: as above; written above with n bytes.
                            let bytes = unsafe { std::slice::from_raw_parts(buf.as_ptr(), n) };
                            assert!(bytes.iter().all(|b| *b == tag), "thread {t}: another wrote its buffer");
                        }
                    }
                });
            }
        });
        let s = pool.stats();
        prop_assert_eq!((s.outstanding(), s.bytes_in_use, s.fallback_bytes_in_use), (0, 0, 0));
        prop_assert_eq!(s.checkouts, (threads * sizes.len()) as u64);
    }
}
