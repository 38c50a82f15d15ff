//! Helpers every test module of the suite uses.

use pinprove::groth16::{generator, ProvingKey};
use std::time::{Duration, Instant};

use pinprove::{Config, PinnedPool, PoolStats};

use crate::circuits::MimcChain;

/// The benchmark chain filling a 2^lg_m domain, with its output public.
pub(crate) fn chain(lg_m: u32, x0: u64) -> MimcChain {
    MimcChain::new(x0, &MimcChain::constants(MimcChain::rounds_for_domain(lg_m)))
}

/// A key (our setup) for `chain(lg_m, _)`.
pub(crate) fn key(lg_m: u32) -> ProvingKey {
    generator::generate_random_parameters(chain(lg_m, 0), &mut rand::thread_rng()).unwrap()
}

/// Default settings with the given synthesis threads and queue depth.
pub(crate) fn config(threads: usize, depth: usize) -> Config {
    Config { synthesis_threads: threads, max_gpu_queue_depth: depth, ..Config::default() }
}

/// Bytes of the pool buffers one partition of `key` holds (a zero-length buffer takes 1 byte).
pub(crate) fn partition_bytes(key: &ProvingKey) -> usize {
    pinprove::synth::partition_bytes(key).unwrap()
}

/// Polls until every buffer is back (circuits aborted mid-synthesis return theirs when they
/// end), then checks the books balance.
pub(crate) fn eventually_balanced(pool: &PinnedPool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while pool.stats().outstanding() > 0 {
        assert!(Instant::now() < deadline, "buffers never came back: {:?}", pool.stats());
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_balanced(&pool.stats());
}

/// Every buffer checked out has come back, pooled and fallback alike.
pub(crate) fn assert_balanced(s: &PoolStats) {
    assert_eq!(s.checkouts, s.checkins, "every buffer back: {s:?}");
    assert_eq!((s.bytes_in_use, s.fallback_bytes_in_use), (0, 0), "{s:?}");
}
