//! Helpers every test module of the suite uses.

use pinprove::{generate_random_parameters, KeySource, ProvingKey};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use pinprove::backend::MsmSums;
use pinprove::backend::Witness;
use pinprove::backend::{Backend, CpuBackend};
use pinprove::{Config, Error, PartitionTimings, PinnedPool, PoolStats};

use crate::circuits::MimcChain;

/// The benchmark chain filling a 2^lg_m domain, with its output public.
pub(crate) fn chain(lg_m: u32, x0: u64) -> MimcChain {
    MimcChain::new(x0, &MimcChain::constants(MimcChain::rounds_for_domain(lg_m)))
}

/// A key (our setup) for `chain(lg_m, _)`.
pub(crate) fn key(lg_m: u32) -> ProvingKey {
    generate_random_parameters(chain(lg_m, 0), &mut rand::thread_rng()).unwrap()
}

/// Default settings with the given synthesis threads and queue depth.
pub(crate) fn config(threads: usize, depth: usize) -> Config {
    Config { synthesis_threads: threads, queue_depth_per_device: depth, ..Config::default() }
}

/// A CPU backend for `key`, as a factory of `Prover::with_backends`.
pub(crate) fn cpu(key: &KeySource) -> pinprove::Result<CpuBackend> {
    CpuBackend::new(key.load()?)
}

/// Bytes of the pool buffers one partition of `key` holds (a zero-length buffer takes 1 byte).
pub(crate) fn partition_bytes(key: &ProvingKey) -> usize {
    pinprove::internal::partition_bytes(key, false).unwrap()
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

/// A device that faults on its `fault_at`-th partition (1-based), before its inner backend
/// sees it, with a driver error or (`panic`) a panic; it notes the job of every proof it
/// completes in `proved`. A partition another device faulted on (in `faulted`, shared by
/// the devices of one `faulty_devices`) neither counts nor faults: the fault is the
/// device's, and a partition's second fault would be blamed on the partition.
pub(crate) struct FaultyDevice<B> {
    inner: B,
    seen: usize,
    fault_at: Option<usize>,
    panic: bool,
    proved: Arc<Mutex<Vec<u64>>>,
    faulted: Arc<Mutex<Vec<u64>>>,
}

impl<B: Backend> Backend for FaultyDevice<B> {
    fn name(&self) -> &'static str {
        "faulty-device"
    }
    fn leaves_witness_intact(&self) -> bool {
        true // it faults before its inner backend runs
    }
    fn h(&mut self, w: &mut Witness, t: &mut PartitionTimings) -> pinprove::Result<()> {
        if self.faulted.lock().contains(&t.job) {
            return self.inner.h(w, t);
        }
        self.seen += 1;
        if self.fault_at == Some(self.seen) {
            self.faulted.lock().push(t.job);
            assert!(!self.panic, "injected backend panic");
            return Err(Error::Cuda { code: 700, msg: "injected illegal address".into() });
        }
        self.inner.h(w, t)
    }
    fn msm(&mut self, w: &Witness, t: &mut PartitionTimings) -> pinprove::Result<MsmSums> {
        let sums = self.inner.msm(w, t)?;
        self.proved.lock().push(t.job);
        Ok(sums)
    }
}

pub(crate) type DeviceFactory<B> = Box<dyn FnOnce(&KeySource) -> pinprove::Result<FaultyDevice<B>> + Send>;

/// One factory per `(fault_at, panic)`, each wrapping a backend `make` builds.
pub(crate) fn faulty_devices<B, F>(
    make: F,
    faults: &[(Option<usize>, bool)],
    proved: &Arc<Mutex<Vec<u64>>>,
) -> Vec<DeviceFactory<B>>
where
    B: Backend + 'static,
    F: Fn(&KeySource) -> pinprove::Result<B> + Clone + Send + 'static,
{
    let faulted = Arc::new(Mutex::new(Vec::new()));
    faults
        .iter()
        .map(|&(fault_at, panic)| {
            let (proved, faulted, make) = (Arc::clone(proved), Arc::clone(&faulted), make.clone());
            Box::new(move |key: &KeySource| {
                Ok(FaultyDevice { inner: make(key)?, seen: 0, fault_at, panic, proved, faulted })
            }) as DeviceFactory<B>
        })
        .collect()
}
