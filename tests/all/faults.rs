//! Reliability under injected faults: allocation failures, backend errors and panics, failing,
//! panicking and slow circuits, a prover dropped mid-batch, a soak with random faults, and
//! memory pressure. In every case each job gets an answer, the pool balances, nothing hangs.

use std::collections::BTreeSet;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bellpepper_core::SynthesisError;
use blstrs::Scalar;
use ff::Field;
use pinprove::backend::MsmSums;
use pinprove::backend::Witness;
use pinprove::backend::{Backend, CpuBackend};
use pinprove::{prepare_verifying_key, verify_proof, KeySource, PreparedVerifyingKey, ProvingKey};
use pinprove::{Config, Error, HeapAllocator, HostAllocator, PartitionTimings, PinnedPool, PoolConfig, Prover};
use rand::{Rng, SeedableRng};

use crate::circuits::Faulty;
use crate::support::{assert_balanced, chain, config, cpu, eventually_balanced, faulty_devices, key, partition_bytes};

fn setup(lg_m: u32) -> (ProvingKey, PreparedVerifyingKey) {
    let key = key(lg_m);
    let pvk = prepare_verifying_key(&key.vk);
    (key, pvk)
}

/// Injected panics are expected here: keep their messages (and backtraces) out of the log.
pub(crate) fn quiet_injected_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let msg = info.payload().downcast_ref::<&str>().copied().unwrap_or("");
            if !["circuit bug", "injected backend panic"].contains(&msg) {
                default(info);
            }
        }));
    });
}

fn assert_proves(prover: &Prover, pvk: &PreparedVerifyingKey, lg_m: u32, x0s: std::ops::Range<u64>) {
    let results = prover.prove(x0s.clone().map(|x| chain(lg_m, x)).collect()).unwrap();
    for (x0, r) in x0s.zip(results) {
        assert!(verify_proof(pvk, &r.unwrap(), &chain(lg_m, x0).public_inputs()).unwrap());
    }
}

/// Heap memory whose allocations fail whenever `fail(k)` holds for the 1-based call number k.
#[derive(Debug, Clone)]
struct FailingAllocator {
    calls: Arc<AtomicUsize>,
    fail: fn(usize) -> bool,
}

// SAFETY: delegates to HeapAllocator, which upholds the contract.
unsafe impl HostAllocator for FailingAllocator {
    fn alloc(&self, bytes: usize) -> Option<NonNull<u8>> {
        let k = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        if (self.fail)(k) {
            return None;
        }
        HeapAllocator.alloc(bytes)
    }
    unsafe fn free(&self, ptr: NonNull<u8>, bytes: usize) {
        // SAFETY: forwarded caller duties; the block came from HeapAllocator.alloc(bytes).
        unsafe { HeapAllocator.free(ptr, bytes) }
    }
    fn is_pinned(&self) -> bool {
        true
    }
}

/// The CPU backend with faults: `Err` for jobs in `errors`, a panic for jobs in `panics`;
/// with `intact`, it says it leaves the witness intact, as a device backend does (it faults
/// before the CPU backend touches the witness).
struct FaultyBackend {
    inner: CpuBackend,
    errors: BTreeSet<u64>,
    panics: BTreeSet<u64>,
    intact: bool,
}

impl Backend for FaultyBackend {
    fn name(&self) -> &'static str {
        "faulty-cpu"
    }
    fn leaves_witness_intact(&self) -> bool {
        self.intact
    }
    fn h(&mut self, w: &mut Witness, t: &mut PartitionTimings) -> pinprove::Result<()> {
        if self.errors.contains(&t.job) {
            return Err(Error::Backend(format!("injected device fault at job {}", t.job)));
        }
        assert!(!self.panics.contains(&t.job), "injected backend panic");
        self.inner.h(w, t)
    }
    fn msm(&mut self, w: &Witness, t: &mut PartitionTimings) -> pinprove::Result<MsmSums> {
        self.inner.msm(w, t)
    }
}

fn faulty(
    errors: &[u64],
    panics: &[u64],
) -> impl FnOnce(&KeySource) -> pinprove::Result<FaultyBackend> + Send + 'static {
    let (errors, panics) = (errors.iter().copied().collect(), panics.iter().copied().collect());
    move |key| Ok(FaultyBackend { inner: CpuBackend::new(key.load()?)?, errors, panics, intact: false })
}

#[test]
fn a_failing_device_leaves_service_and_the_others_prove_its_jobs_once() {
    let (key, pvk) = setup(5);
    quiet_injected_panics();
    let proved = Arc::default();
    // Four devices: one faults (driver error) on its 2nd partition, one panics on its 3rd.
    let factories = faulty_devices(cpu, &[(None, false), (Some(2), false), (None, false), (Some(3), true)], &proved);
    let prover = Prover::with_backends(key, config(3, 2), PinnedPool::new(PoolConfig::default()), factories).unwrap();
    let mut devices_used = BTreeSet::new();
    for batch in 0..3u64 {
        let jobs = batch * 12..batch * 12 + 12;
        let results = prover.prove(jobs.clone().map(|x| chain(5, x)).collect()).unwrap();
        for (x0, r) in jobs.zip(results) {
            let proof = r.unwrap_or_else(|e| panic!("job {x0}: {e}"));
            assert!(verify_proof(&pvk, &proof, &chain(5, x0).public_inputs()).unwrap(), "job {x0}");
        }
        devices_used.extend(prover.take_timings().iter().map(|t| t.device));
        assert_balanced(&prover.pool().stats());
    }
    assert_eq!(prover.failed_devices(), 2);
    assert!(!prover.is_failed());
    let mut proved = proved.lock().clone();
    proved.sort_unstable();
    assert_eq!(proved, (0..36).collect::<Vec<u64>>(), "every job proved exactly once");
    assert!(devices_used.contains(&0) && devices_used.contains(&2), "{devices_used:?}");
    prover.shutdown();
}

#[test]
fn when_the_last_device_fails_its_job_gets_the_fault_and_the_rest_are_closed() {
    let (key, pvk) = setup(5);
    let proved = Arc::default();
    let pool = PinnedPool::new(PoolConfig::default());
    let factories = faulty_devices(cpu, &[(Some(2), false)], &proved);
    let prover = Prover::with_backends(key, config(1, 0), pool.clone(), factories).unwrap();
    let results = prover.prove((0..5).map(|x| chain(5, x)).collect()).unwrap();
    assert!(verify_proof(&pvk, results[0].as_ref().unwrap(), &chain(5, 0).public_inputs()).unwrap());
    assert!(matches!(&results[1], Err(e @ Error::Cuda { code: 700, .. }) if e.is_device_fault()), "{:?}", results[1]);
    assert!(results[2..].iter().all(|r| matches!(r, Err(Error::PipelineClosed))), "{results:?}");
    assert!(prover.is_failed());
    assert_eq!(prover.failed_devices(), 1);
    assert_balanced(&pool.stats());
    prover.shutdown();
    assert_balanced(&pool.stats());
}

#[test]
fn pinned_allocation_failures_fall_back_and_every_job_proves() {
    let (key, pvk) = setup(6);
    // Every third allocation fails: prewarm stops early, later checkouts fall back.
    let alloc = FailingAllocator { calls: Arc::default(), fail: |k| k % 3 == 0 };
    let pool = PinnedPool::with_allocator(PoolConfig::default(), alloc);
    let prover = Prover::with_backends(key, config(2, 2), pool, vec![cpu]).unwrap();
    assert_eq!(prover.pool().stats().allocations, 2, "prewarm stopped at the 3rd allocation");
    for batch in 0..3 {
        assert_proves(&prover, &pvk, 6, batch * 20..batch * 20 + 20);
        assert_balanced(&prover.pool().stats());
    }
    let s = prover.pool().stats();
    assert!(s.fallbacks > 0 && s.allocations > 2, "{s:?}");
}

#[test]
fn a_backend_error_fails_its_partition_and_a_panic_retires_the_proving_thread() {
    let (key, pvk) = setup(5);
    quiet_injected_panics();
    // One synthesis thread and a rendezvous channel: jobs reach the backend in order.
    let pool = PinnedPool::new(PoolConfig::default());
    let prover = Prover::with_backends(key, config(1, 0), pool.clone(), vec![faulty(&[1], &[2])]).unwrap();
    let results = prover.prove((0..6).map(|i| chain(5, i)).collect()).unwrap();
    assert!(verify_proof(&pvk, results[0].as_ref().unwrap(), &chain(5, 0).public_inputs()).unwrap());
    assert!(matches!(&results[1], Err(Error::Backend(m)) if m == "injected device fault at job 1"));
    assert!(matches!(&results[2], Err(Error::BackendPanicked(m)) if m == "injected backend panic"));
    for r in &results[3..] {
        assert!(matches!(r, Err(Error::PipelineClosed)), "{r:?}");
    }
    assert!(prover.is_failed());
    // A failed prover answers at once, and loses nothing.
    let later = prover.prove((0..4).map(|i| chain(5, i)).collect()).unwrap();
    assert!(later.iter().all(|r| matches!(r, Err(Error::PipelineClosed))));
    assert_balanced(&pool.stats());
    drop(prover);
    assert_balanced(&pool.stats());
}

#[test]
fn with_two_proving_threads_one_retiring_leaves_the_other_serving() {
    let (key, pvk) = setup(5);
    let prover = Prover::with_backends(
        key,
        config(2, 1),
        PinnedPool::new(PoolConfig::default()),
        vec![faulty(&[], &[3]), faulty(&[], &[3])],
    )
    .unwrap();
    let results = prover.prove((0..12).map(|i| chain(5, i)).collect()).unwrap();
    assert!(matches!(&results[3], Err(Error::BackendPanicked(_))));
    for (i, r) in results.iter().enumerate().filter(|(i, _)| *i != 3) {
        assert!(verify_proof(&pvk, r.as_ref().unwrap(), &chain(5, i as u64).public_inputs()).unwrap(), "job {i}");
    }
    assert!(!prover.is_failed());
    assert_proves(&prover, &pvk, 5, 100..104);
    assert_balanced(&prover.pool().stats());
}

/// A partition that panics on every device (three, each leaving the witness intact, so the
/// partition is given back after a fault): the first device retires, the second answers the
/// job with its error and serves on; the other jobs prove.
#[test]
fn a_partition_that_faults_on_every_device_retires_at_most_one() {
    let (key, pvk) = setup(5);
    quiet_injected_panics();
    let device = || {
        move |key: &KeySource| {
            let (errors, panics) = (BTreeSet::new(), BTreeSet::from([3]));
            Ok(FaultyBackend { inner: CpuBackend::new(key.load()?)?, errors, panics, intact: true })
        }
    };
    let prover = Prover::with_backends(
        key,
        config(2, 1),
        PinnedPool::new(PoolConfig::default()),
        vec![device(), device(), device()],
    )
    .unwrap();
    let results = prover.prove((0..12).map(|i| chain(5, i)).collect()).unwrap();
    assert!(matches!(&results[3], Err(Error::BackendPanicked(_))), "{:?}", results[3]);
    for (i, r) in results.iter().enumerate().filter(|(i, _)| *i != 3) {
        assert!(verify_proof(&pvk, r.as_ref().unwrap(), &chain(5, i as u64).public_inputs()).unwrap(), "job {i}");
    }
    assert_eq!(prover.failed_devices(), 1, "the partition's second fault is its own");
    assert!(!prover.is_failed());
    assert_proves(&prover, &pvk, 5, 100..104);
    assert_balanced(&prover.pool().stats());
}

#[test]
fn a_slow_circuit_delays_only_itself() {
    let (key, pvk) = setup(8);
    let prover = Prover::new(key, config(2, 1)).unwrap();
    let batch: Vec<Faulty> =
        (0..8).map(|i| if i == 1 { Faulty::Slow(chain(8, i)) } else { Faulty::Good(chain(8, i)) }).collect();
    let results = prover.prove(batch).unwrap();
    for (i, r) in results.into_iter().enumerate() {
        assert!(verify_proof(&pvk, &r.unwrap(), &chain(8, i as u64).public_inputs()).unwrap());
    }
    let timings = prover.take_timings();
    let slow = timings.iter().find(|t| t.job == 1).unwrap().synthesis;
    let fast = timings.iter().filter(|t| t.job != 1).map(|t| t.synthesis).min().unwrap();
    assert!(slow > fast, "the slow circuit's synthesis ({slow:?}) took longer than the fastest ({fast:?})");
    assert_balanced(&prover.pool().stats());
}

#[test]
fn dropping_a_prover_mid_batch_answers_every_job_and_returns_every_buffer() {
    let (key, _) = setup(8);
    let pool = PinnedPool::new(PoolConfig::default());
    let prover = Prover::with_backends(key, config(2, 2), pool.clone(), vec![cpu]).unwrap();
    let pending: Vec<_> = (0..40).map(|i| prover.submit(chain(8, i), Scalar::ONE, Scalar::ONE)).collect();
    let mut pending = pending.into_iter();
    pending.next().unwrap().wait().unwrap(); // the pipeline is running
    drop(prover);
    // Circuits mid-synthesis run to their end and then give their buffers back.
    eventually_balanced(&pool);
    let (mut proved, mut closed) = (1, 0);
    for p in pending {
        match p.wait() {
            Ok(_) => proved += 1,
            Err(Error::PipelineClosed) => closed += 1,
            Err(e) => panic!("unexpected {e}"),
        }
    }
    assert_eq!(proved + closed, 40);
    assert!(closed > 0, "drop did not wait for the whole batch");
    assert_balanced(&pool.stats());
}

#[test]
fn shrinking_under_a_cap_while_proving_never_exceeds_it_and_falls_back() {
    let (key, pvk) = setup(7);
    let cap = 2 * partition_bytes(&key); // the pipeline wants 2 + 2 + 1 partitions
    let cfg = Config { pool: PoolConfig { max_bytes: cap, ..PoolConfig::default() }, ..config(2, 2) };
    let prover = Prover::new(key, cfg).unwrap();
    let pool = prover.pool().clone();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let shrinker = {
        let (pool, stop) = (pool.clone(), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut freed = 0;
            while !stop.load(Ordering::Relaxed) {
                freed += pool.shrink(usize::MAX);
                std::thread::yield_now();
            }
            freed
        })
    };
    assert_proves(&prover, &pvk, 7, 0..30);
    stop.store(true, Ordering::Relaxed);
    let freed = shrinker.join().unwrap();
    let s = pool.stats();
    assert!(s.peak_bytes_held <= cap, "cap {cap} exceeded: {s:?}");
    assert!(s.fallbacks > 0 && freed > 0 && s.frees > 0, "{s:?}");
    assert_balanced(&s);
}

#[test]
fn soak_thousands_of_partitions_with_random_faults() {
    const BATCHES: u64 = if cfg!(miri) { 2 } else { 20 };
    const JOBS: u64 = 100;
    let (lg_m, threads, depth) = (3, 2, 2);
    quiet_injected_panics();
    let (key, pvk) = setup(lg_m);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2026);
    // The fault plan: per job, a circuit fault (error, panic) or a backend error, or none.
    let plan: Vec<u8> = (0..BATCHES * JOBS).map(|_| rng.gen_range(0..100)).collect();
    let backend_errors: Vec<u64> = (0..plan.len() as u64).filter(|&j| plan[j as usize] < 3).collect();
    let alloc = FailingAllocator { calls: Arc::default(), fail: |k| k % 7 == 0 };
    let pool = PinnedPool::with_allocator(PoolConfig::default(), alloc);
    let prover =
        Prover::with_backends(key, config(threads, depth), pool.clone(), vec![faulty(&backend_errors, &[])]).unwrap();
    let bound_bytes = prover.max_in_flight() * prover.partition_bytes();
    let mut counts = [0usize; 4]; // proved, circuit errors, circuit panics, backend errors
    for batch in 0..BATCHES {
        pool.shrink(usize::MAX / 2 * (batch % 2) as usize); // every other batch starts cold
        let jobs = batch * JOBS..(batch + 1) * JOBS;
        let circuits: Vec<Faulty> = jobs
            .clone()
            .map(|j| match plan[j as usize] {
                3..=5 => Faulty::Error(chain(lg_m, j)),
                6..=7 => Faulty::Panic(chain(lg_m, j)),
                _ => Faulty::Good(chain(lg_m, j)),
            })
            .collect();
        for (j, r) in jobs.zip(prover.prove(circuits).unwrap()) {
            match (plan[j as usize], r) {
                (0..=2, Err(Error::Backend(_))) => counts[3] += 1,
                (3..=5, Err(Error::Synthesis(SynthesisError::AssignmentMissing))) => counts[1] += 1,
                (6..=7, Err(Error::WorkerPanicked(_))) => counts[2] += 1,
                (8.., Ok(proof)) => {
                    if j % 17 == 0 {
                        assert!(verify_proof(&pvk, &proof, &chain(lg_m, j).public_inputs()).unwrap());
                    }
                    counts[0] += 1;
                }
                (p, r) => panic!("job {j} (plan {p}): unexpected {r:?}"),
            }
        }
        assert_balanced(&pool.stats());
    }
    let s = pool.stats();
    let peak_out = s.peak_bytes_checked_out;
    println!(
        "soak: {} partitions: {} proved, {} circuit errors, {} circuit panics, {} backend errors; \
         allocations {} (every 7th failed), fallbacks {}, peak bytes checked out {} <= bound {}; \
         checkouts {} = checkins {}",
        BATCHES * JOBS,
        counts[0],
        counts[1],
        counts[2],
        counts[3],
        s.allocations,
        s.fallbacks,
        peak_out,
        bound_bytes,
        s.checkouts,
        s.checkins
    );
    assert_eq!(counts.iter().sum::<usize>() as u64, BATCHES * JOBS);
    assert!(counts[1..].iter().all(|&c| c > 0) && s.fallbacks > 0, "every kind of fault happened");
    assert!(peak_out <= bound_bytes, "peak {peak_out} > bound {bound_bytes}");
}
