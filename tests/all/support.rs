//! Helpers every test module of the suite uses.

use pinprove::groth16::{generator, ProvingKey};
use pinprove::{Config, PoolStats};

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
    pinprove::synth::witness_buffer_bytes(key).unwrap().iter().map(|b| (*b).max(1)).sum()
}

/// Every buffer checked out has come back, pooled and fallback alike.
pub(crate) fn assert_balanced(s: &PoolStats) {
    assert_eq!(s.checkouts, s.checkins, "every buffer back: {s:?}");
    assert_eq!((s.bytes_in_use, s.fallback_bytes_in_use), (0, 0), "{s:?}");
}
