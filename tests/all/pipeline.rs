//! The Prover's pipeline: the throttle's bound, failure isolation, no deadlock, no lost buffer,
//! steady state after prewarm, timings.

use std::time::{Duration, Instant};

use blstrs::Scalar;
use crossbeam_channel::Receiver;
use ff::Field;
use pinprove::backend::{Backend, CpuBackend};
use pinprove::groth16::prover::MsmSums;
use pinprove::groth16::{prepare_verifying_key, verify_proof, ProvingKey};
use pinprove::synth::Witness;
use pinprove::{Config, Error, PartitionTimings, PinnedPool, PoolConfig, Prover};

use crate::circuits::{Faulty, MimcChain};
use crate::support::{assert_balanced, chain, config, key};

/// The CPU backend behind a gate: each partition waits for a token before its h stage.
struct Gated {
    inner: CpuBackend,
    gate: Receiver<()>,
}

impl Backend for Gated {
    fn name(&self) -> &'static str {
        "gated-cpu"
    }
    fn h(&mut self, key: &ProvingKey, w: &mut Witness, t: &mut PartitionTimings) -> pinprove::Result<()> {
        self.gate.recv().map_err(|_| Error::Backend("gate closed".into()))?;
        self.inner.h(key, w, t)
    }
    fn msm(&mut self, key: &ProvingKey, w: &Witness, t: &mut PartitionTimings) -> pinprove::Result<MsmSums> {
        self.inner.msm(key, w, t)
    }
}

#[test]
fn the_channel_bounds_partitions_in_flight() {
    let (threads, depth) = (2, 2);
    let key = key(6);
    let bytes = key.abc_buffer_bytes();
    let (open, gate) = crossbeam_channel::unbounded();
    let factory = move |_: &ProvingKey| Ok(Gated { inner: CpuBackend::new(), gate });
    let prover =
        Prover::with_backends(key, config(threads, depth), PinnedPool::new(PoolConfig::default()), vec![factory])
            .unwrap();
    let bound = prover.max_in_flight();
    assert_eq!(bound, threads + depth + 1);

    let jobs = 4 * bound;
    let pending: Vec<_> = (0..jobs).map(|i| prover.submit(chain(6, i as u64), Scalar::ONE, Scalar::ONE)).collect();
    // With the proving thread held at the gate, the pipeline fills up to the bound and stops.
    let deadline = Instant::now() + Duration::from_secs(60);
    while prover.pool().stats().bytes_in_use < 3 * bound * bytes {
        assert!(Instant::now() < deadline, "pipeline never filled: {:?}", prover.pool().stats());
        std::thread::yield_now();
    }
    for _ in 0..jobs {
        open.send(()).unwrap();
    }
    let pvk = prepare_verifying_key(&prover.key().vk);
    for (i, p) in pending.into_iter().enumerate() {
        let proof = p.wait().unwrap();
        assert!(verify_proof(&pvk, &proof, &chain(6, i as u64).public_inputs()).unwrap());
    }
    let s = prover.pool().stats();
    assert_eq!(
        s.peak_bytes_in_use,
        3 * bound * bytes,
        "threads + depth + 1 partitions at most, and the bound was reached"
    );
    assert_eq!((s.allocations, s.fallbacks), (3 * bound as u64, 0), "prewarm covered the bound");
    assert_balanced(&prover.pool().stats());
}

#[test]
fn failing_and_panicking_circuits_answer_their_own_jobs_and_the_rest_prove() {
    let prover = Prover::new(key(6), config(2, 1)).unwrap();
    let pvk = prepare_verifying_key(&prover.key().vk);
    let batch: Vec<Faulty> = (0..9)
        .map(|i| match i % 3 {
            0 => Faulty::Good(chain(6, i)),
            1 => Faulty::Error(chain(6, i)),
            _ => Faulty::Panic(chain(6, i)),
        })
        .collect();
    let results = prover.prove(batch).unwrap();
    for (i, r) in results.into_iter().enumerate() {
        match (i % 3, r) {
            (0, Ok(proof)) => assert!(verify_proof(&pvk, &proof, &chain(6, i as u64).public_inputs()).unwrap()),
            (1, Err(Error::Synthesis(bellpepper_core::SynthesisError::AssignmentMissing))) => {}
            (2, Err(Error::WorkerPanicked(msg))) => assert_eq!(msg, "circuit bug"),
            (_, other) => panic!("job {i}: unexpected {other:?}"),
        }
    }
    assert_balanced(&prover.pool().stats());
    // The pipeline keeps serving.
    let again = prover.prove(vec![chain(6, 100)]).unwrap();
    assert!(verify_proof(&pvk, again[0].as_ref().unwrap(), &chain(6, 100).public_inputs()).unwrap());
    assert_balanced(&prover.pool().stats());
}

#[test]
fn a_full_channel_with_the_cpu_backend_does_not_deadlock() {
    // Synthesis workers block in `send` while the proving thread's kernels use the global rayon
    // pool; were they the same pool, this would hang.
    let prover = Prover::new(key(7), config(2, 1)).unwrap();
    let results = prover.prove((0..12).map(|i| chain(7, i)).collect()).unwrap();
    assert!(results.iter().all(Result::is_ok));
    assert_balanced(&prover.pool().stats());
}

#[test]
fn bad_input_gets_typed_errors_and_loses_nothing() {
    let prover = Prover::new(key(6), config(2, 2)).unwrap();
    assert!(matches!(prover.prove(Vec::<MimcChain>::new()), Err(Error::EmptyBatch)));

    let empty = MimcChain { constants: MimcChain::constants(0), public_output: false, ..chain(6, 1) };
    let bigger = chain(7, 1);
    let smaller = chain(5, 1);
    let no_output = MimcChain { public_output: false, ..chain(6, 1) };
    let results = prover.prove(vec![empty, bigger, smaller, no_output, chain(6, 1)]).unwrap();
    assert!(matches!(results[0], Err(Error::NoConstraints)), "{:?}", results[0]);
    assert!(matches!(results[1], Err(Error::Shape { expected: 64, got: 128, .. })), "{:?}", results[1]);
    assert!(matches!(results[2], Err(Error::Shape { expected: 64, got: 32, .. })), "{:?}", results[2]);
    assert!(matches!(results[3], Err(Error::Shape { expected: 2, got: 1, .. })), "{:?}", results[3]);
    assert!(results[4].is_ok());
    assert_balanced(&prover.pool().stats());
}

#[test]
fn a_pool_cap_below_one_partition_is_an_error_for_each_job() {
    let key = key(6);
    let cap = 3 * key.abc_buffer_bytes() - 1;
    let cfg = Config { pool: PoolConfig { max_bytes: cap, ..PoolConfig::default() }, ..config(2, 1) };
    let prover = Prover::new(key, cfg).unwrap();
    let results = prover.prove((0..3).map(|i| chain(6, i)).collect()).unwrap();
    for r in results {
        assert!(matches!(r, Err(Error::PoolTooSmall { capacity, .. }) if capacity == cap), "{r:?}");
    }
    assert_balanced(&prover.pool().stats());
}

#[test]
fn bad_configuration_is_refused() {
    assert!(matches!(Prover::new(key(4), config(0, 1)), Err(Error::Config(_))));
    let mut bad = key(4);
    bad.h.pop();
    assert!(matches!(Prover::new(bad, config(1, 1)), Err(Error::InvalidKey(_))));
    let failing = |_: &ProvingKey| -> pinprove::Result<CpuBackend> { Err(Error::Backend("no device".into())) };
    let r = Prover::with_backends(key(4), config(1, 1), PinnedPool::new(PoolConfig::default()), vec![failing]);
    assert!(matches!(r, Err(Error::Backend(m)) if m == "no device"));
}

#[test]
fn steady_state_after_prewarm_100_partitions_allocate_nothing_and_report_timings() {
    let prover = Prover::new(key(6), config(2, 2)).unwrap();
    let warm = prover.pool().stats();
    assert_eq!(warm.allocations, 3 * prover.max_in_flight() as u64, "prewarmed the in-flight bound");
    let results = prover.prove((0..100).map(|i| chain(6, i)).collect()).unwrap();
    assert!(results.iter().all(Result::is_ok));
    let s = prover.pool().stats();
    assert_eq!(s.allocations, warm.allocations, "no allocation after prewarm");
    assert_eq!((s.reuses, s.fallbacks), (300, 0));
    assert_balanced(&prover.pool().stats());

    let timings = prover.take_timings();
    assert_eq!(timings.len(), 100);
    let mut jobs: Vec<u64> = timings.iter().map(|t| t.job).collect();
    jobs.sort();
    assert_eq!(jobs, (0..100).collect::<Vec<_>>());
    for t in &timings {
        assert!(t.synthesis > Duration::ZERO && t.ntt > Duration::ZERO && t.msm > Duration::ZERO, "{t:?}");
        assert!(t.gpu_busy >= t.ntt + t.msm, "busy covers the stages: {t:?}");
        assert_eq!(t.h2d, Duration::ZERO, "the CPU backend copies nothing");
    }
    assert!(prover.take_timings().is_empty(), "taken");
}
