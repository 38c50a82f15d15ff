//! The Prover's pipeline: the throttle's bound, failure isolation, no deadlock, no lost buffer,
//! steady state after prewarm, timings.

use std::time::{Duration, Instant};

use blstrs::Scalar;
use crossbeam_channel::Receiver;
use ff::Field;
use pinprove::backend::MsmSums;
use pinprove::backend::Witness;
use pinprove::backend::{Backend, CpuBackend};
use pinprove::{prepare_verifying_key, verify_proof, KeySource};
use pinprove::{Config, Error, PartitionTimings, PinnedPool, PoolConfig, Prover};

use crate::circuits::{Faulty, MimcChain};
use crate::support::{assert_balanced, chain, config, cpu, eventually_balanced, key, partition_bytes};

/// The CPU backend behind a gate: each partition waits for a token before its h stage.
struct Gated {
    inner: CpuBackend,
    gate: Receiver<()>,
}

impl Backend for Gated {
    fn name(&self) -> &'static str {
        "gated-cpu"
    }
    fn h(&mut self, w: &mut Witness, t: &mut PartitionTimings) -> pinprove::Result<()> {
        self.gate.recv().map_err(|_| Error::Backend("gate closed".into()))?;
        self.inner.h(w, t)
    }
    fn msm(&mut self, w: &Witness, t: &mut PartitionTimings) -> pinprove::Result<MsmSums> {
        self.inner.msm(w, t)
    }
}

#[test]
fn the_channel_bounds_partitions_in_flight_with_one_and_three_devices() {
    for devices in [1, 3] {
        let (threads, depth) = (2, 2);
        let key = key(6);
        let bytes = partition_bytes(&key);
        let (open, gate) = crossbeam_channel::unbounded();
        let factories: Vec<_> = (0..devices)
            .map(|_| {
                let gate = gate.clone();
                move |key: &KeySource| Ok(Gated { inner: CpuBackend::new(key.load()?)?, gate })
            })
            .collect();
        let prover =
            Prover::with_backends(key, config(threads, depth), PinnedPool::new(PoolConfig::default()), factories)
                .unwrap();
        let bound = prover.max_in_flight();
        assert_eq!(bound, threads + (depth + 1) * devices, "a queue of `depth` per device");

        let jobs = 4 * bound;
        let pending: Vec<_> = (0..jobs).map(|i| prover.submit(chain(6, i as u64), Scalar::ONE, Scalar::ONE)).collect();
        // With the proving threads held at the gate, the pipeline fills up to the bound and stops.
        let deadline = Instant::now() + Duration::from_secs(60);
        while prover.pool().stats().bytes_in_use < bound * bytes {
            assert!(Instant::now() < deadline, "pipeline never filled: {:?}", prover.pool().stats());
            std::thread::yield_now();
        }
        for _ in 0..jobs {
            open.send(()).unwrap();
        }
        let pvk = prepare_verifying_key(prover.verifying_key());
        for (i, p) in pending.into_iter().enumerate() {
            let proof = p.wait().unwrap();
            assert!(verify_proof(&pvk, &proof, &chain(6, i as u64).public_inputs()).unwrap());
        }
        let s = prover.pool().stats();
        assert_eq!(
            s.peak_bytes_in_use,
            bound * bytes,
            "the bound is never passed, and was reached ({devices} devices)"
        );
        assert_eq!((s.allocations, s.fallbacks), (6 * bound as u64, 0), "prewarm covered the bound");
        assert_balanced(&prover.pool().stats());
    }
}

#[test]
fn failing_and_panicking_circuits_answer_their_own_jobs_and_the_rest_prove() {
    let prover = Prover::new(key(6), config(2, 1)).unwrap();
    let pvk = prepare_verifying_key(prover.verifying_key());
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
fn bad_configuration_is_refused() {
    assert!(matches!(Prover::new(key(4), config(0, 1)), Err(Error::Config(_))));
    let mut bad = key(4);
    bad.h.pop();
    assert!(matches!(Prover::new(bad, config(1, 1)), Err(Error::InvalidKey(_))));
    let failing = |_: &KeySource| -> pinprove::Result<CpuBackend> { Err(Error::Backend("no device".into())) };
    let r = Prover::with_backends(key(4), config(1, 1), PinnedPool::new(PoolConfig::default()), vec![failing]);
    assert!(matches!(r, Err(Error::Backend(m)) if m == "no device"));
}

#[test]
fn steady_state_after_prewarm_100_partitions_allocate_nothing_and_report_timings() {
    let prover = Prover::new(key(6), config(2, 2)).unwrap();
    let warm = prover.pool().stats();
    assert_eq!(warm.allocations, 6 * prover.max_in_flight() as u64, "prewarmed the in-flight bound");
    let results = prover.prove((0..100).map(|i| chain(6, i)).collect()).unwrap();
    assert!(results.iter().all(Result::is_ok));
    let s = prover.pool().stats();
    assert_eq!(s.allocations, warm.allocations, "no allocation after prewarm");
    assert_eq!((s.reuses, s.fallbacks), (600, 0));
    assert_balanced(&prover.pool().stats());

    let timings = prover.take_timings();
    assert_eq!(timings.len(), 100);
    let mut jobs: Vec<u64> = timings.iter().map(|t| t.job).collect();
    jobs.sort();
    assert_eq!(jobs, (0..100).collect::<Vec<_>>());
    for t in &timings {
        assert!(t.synthesis > Duration::ZERO && t.ntt > Duration::ZERO && t.msm > Duration::ZERO, "{t:?}");
        assert!(t.proving >= t.ntt + t.msm, "busy covers the stages: {t:?}");
        assert_eq!((t.h2d, t.h2d_bytes), (Duration::ZERO, 0), "the CPU backend copies nothing");
        assert!(t.witness_bytes >= prover.partition_bytes(), "the witness held its buffers: {t:?}");
    }
    assert!(prover.take_timings().is_empty(), "taken");
}

/// Runs `pipeline::child_prove_from_every_global_pool_worker` in a child process whose global
/// rayon pool has `threads` workers, and fails if it does not pass within two minutes.
fn prove_from_global_pool_in_child(threads: usize) {
    use std::process::{Command, Stdio};
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "pipeline::child_prove_from_every_global_pool_worker", "--include-ignored"])
        .args(["--test-threads", "1"])
        .env("RAYON_NUM_THREADS", threads.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("deadlock: prove from every worker of a {threads}-thread global pool did not finish in 120 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success() && stdout.contains("1 passed"), "{threads} threads: {stdout}");
}

#[test]
fn prove_from_every_worker_of_the_global_pool_finishes_on_1_2_and_8_threads() {
    for threads in [1, 2, 8] {
        prove_from_global_pool_in_child(threads);
    }
}

#[test]
#[ignore = "run in a child process (with RAYON_NUM_THREADS set) by the test above"]
fn child_prove_from_every_global_pool_worker() {
    let prover = Prover::new(key(8), config(2, 1)).unwrap();
    let pvk = prepare_verifying_key(prover.verifying_key());
    // Every global worker is blocked in `prove` at once: none is left for the prover.
    let proofs = rayon::broadcast(|ctx| {
        let x0 = ctx.index() as u64;
        (x0, prover.prove(vec![chain(8, x0)]).unwrap().remove(0).unwrap())
    });
    assert_eq!(proofs.len(), rayon::current_num_threads());
    for (x0, proof) in proofs {
        assert!(verify_proof(&pvk, &proof, &chain(8, x0).public_inputs()).unwrap());
    }
}

/// x·x = y for public y. `twice` enforces it a second time: the same variables in the same
/// places and still inside the key's domain, so every shape check passes, but the constraint
/// system is not the key's. `lie` assigns y = x² + 1, a witness that does not satisfy it.
#[derive(Clone, Copy)]
struct Square {
    x: Scalar,
    twice: bool,
    lie: bool,
}

impl Square {
    fn y(&self) -> Scalar {
        self.x.square() + if self.lie { Scalar::ONE } else { Scalar::ZERO }
    }
}

impl bellpepper_core::Circuit<Scalar> for Square {
    fn synthesize<CS: bellpepper_core::ConstraintSystem<Scalar>>(
        self,
        cs: &mut CS,
    ) -> Result<(), bellpepper_core::SynthesisError> {
        let x = cs.alloc(|| "x", || Ok(self.x))?;
        let y = cs.alloc_input(|| "y", || Ok(self.y()))?;
        for _ in 0..1 + usize::from(self.twice) {
            cs.enforce(|| "x*x=y", |lc| lc + x, |lc| lc + x, |lc| lc + y);
        }
        Ok(())
    }
}

#[test]
fn proofs_that_do_not_verify_are_errors_unless_verification_is_off() {
    let honest = Square { x: Scalar::from(3), twice: false, lie: false };
    let key = pinprove::generate_random_parameters(honest, &mut rand::thread_rng()).unwrap();
    let pvk = prepare_verifying_key(&key.vk);
    let twice = Square { twice: true, ..honest };
    let lie = Square { lie: true, ..honest };

    let prover = Prover::new(key.clone(), config(2, 1)).unwrap();
    let results = prover.prove(vec![honest, twice, lie]).unwrap();
    assert!(verify_proof(&pvk, results[0].as_ref().unwrap(), &[honest.y()]).unwrap());
    assert!(matches!(results[1], Err(Error::ProofInvalid { job: 1, recorded: false })), "{:?}", results[1]);
    assert!(matches!(results[2], Err(Error::ProofInvalid { job: 2, recorded: false })), "{:?}", results[2]);
    let timings = prover.take_timings();
    assert!(timings.iter().all(|t| t.verify > Duration::ZERO), "verification is timed: {timings:?}");
    assert!(timings.iter().all(|t| t.assemble > Duration::ZERO), "assembly is timed: {timings:?}");
    assert_balanced(&prover.pool().stats());

    // Opted out, the same jobs prove: the caller is trusted to verify.
    let unchecked = Prover::new(key, Config { verify_proofs: false, ..config(2, 1) }).unwrap();
    let results = unchecked.prove(vec![twice, lie]).unwrap();
    assert!(!verify_proof(&pvk, results[0].as_ref().unwrap(), &[twice.y()]).unwrap());
    assert!(!verify_proof(&pvk, results[1].as_ref().unwrap(), &[lie.y()]).unwrap());
    let timings = unchecked.take_timings();
    assert!(timings.iter().all(|t| t.verify == Duration::ZERO && t.assemble > Duration::ZERO), "{timings:?}");
}

/// A chain that waits at a gate before synthesizing: a circuit still running when the test
/// wants it to be.
struct Gate {
    chain: MimcChain,
    open: Receiver<()>,
}

impl bellpepper_core::Circuit<Scalar> for Gate {
    fn synthesize<CS: bellpepper_core::ConstraintSystem<Scalar>>(
        self,
        cs: &mut CS,
    ) -> Result<(), bellpepper_core::SynthesisError> {
        let _ = self.open.recv(); // a message or a dropped sender opens it
        bellpepper_core::Circuit::synthesize(self.chain, cs)
    }
}

/// Runs `f` on another thread; fails the test if it has not returned within a minute.
fn within_a_minute<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (done, result) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || done.send(f()).unwrap());
    result.recv_timeout(Duration::from_secs(60)).unwrap_or_else(|_| panic!("{what} hung"))
}

#[test]
fn abort_answers_every_job_at_once_even_with_circuits_stuck_in_synthesis() {
    let prover = Prover::new(key(6), config(2, 1)).unwrap();
    let pool = prover.pool().clone();
    let (open, gate) = crossbeam_channel::unbounded::<()>();
    let pending: Vec<_> = (0..6)
        .map(|i| prover.submit(Gate { chain: chain(6, i), open: gate.clone() }, Scalar::ONE, Scalar::ONE))
        .collect();
    within_a_minute("abort", move || prover.abort());
    // Two circuits are still stuck at the gate, yet every job has its answer.
    for p in pending {
        assert!(matches!(p.try_wait(), Ok(Err(Error::PipelineClosed))));
    }
    drop(open);
    eventually_balanced(&pool);
}

#[test]
fn dropping_a_prover_is_an_abort() {
    let prover = Prover::new(key(6), config(1, 1)).unwrap();
    let pool = prover.pool().clone();
    let (open, gate) = crossbeam_channel::unbounded::<()>();
    let stuck = prover.submit(Gate { chain: chain(6, 0), open: gate }, Scalar::ONE, Scalar::ONE);
    within_a_minute("drop", move || drop(prover));
    assert!(matches!(stuck.try_wait(), Ok(Err(Error::PipelineClosed))));
    drop(open);
    eventually_balanced(&pool);
}

#[test]
fn shutdown_finishes_every_submitted_job() {
    let prover = Prover::new(key(6), config(2, 1)).unwrap();
    let pvk = prepare_verifying_key(prover.verifying_key());
    let pool = prover.pool().clone();
    let pending: Vec<_> = (0..10).map(|i| prover.submit(chain(6, i), Scalar::ONE, Scalar::ONE)).collect();
    prover.shutdown();
    for (i, p) in pending.into_iter().enumerate() {
        let proof = p.try_wait().expect("answered before shutdown returned").unwrap();
        assert!(verify_proof(&pvk, &proof, &chain(6, i as u64).public_inputs()).unwrap());
    }
    assert_balanced(&pool.stats());
}

#[test]
fn try_wait_and_wait_timeout_do_not_block() {
    let prover = Prover::new(key(6), config(1, 1)).unwrap();
    let (open, gate) = crossbeam_channel::unbounded::<()>();
    let pending = prover.submit(Gate { chain: chain(6, 3), open: gate }, Scalar::ONE, Scalar::ONE);
    let pending = pending.try_wait().expect_err("not proved yet");
    let pending = pending.wait_timeout(Duration::from_millis(20)).expect_err("still not proved");
    open.send(()).unwrap();
    let proof = pending.wait_timeout(Duration::from_secs(60)).expect("proved within a minute").unwrap();
    let pvk = prepare_verifying_key(prover.verifying_key());
    assert!(verify_proof(&pvk, &proof, &chain(6, 3).public_inputs()).unwrap());
}

/// A circuit that borrows its chain: `prove` takes circuits that are not `'static`.
struct Borrowed<'a>(&'a MimcChain);

impl bellpepper_core::Circuit<Scalar> for Borrowed<'_> {
    fn synthesize<CS: bellpepper_core::ConstraintSystem<Scalar>>(
        self,
        cs: &mut CS,
    ) -> Result<(), bellpepper_core::SynthesisError> {
        bellpepper_core::Circuit::synthesize(self.0.clone(), cs)
    }
}

#[test]
fn circuits_may_borrow_their_data() {
    let prover = Prover::new(key(6), config(2, 1)).unwrap();
    let pvk = prepare_verifying_key(prover.verifying_key());
    let chains: Vec<MimcChain> = (0..4).map(|i| chain(6, i)).collect();
    let results = prover.prove(chains.iter().map(Borrowed).collect()).unwrap();
    for (c, r) in chains.iter().zip(results) {
        assert!(verify_proof(&pvk, &r.unwrap(), &c.public_inputs()).unwrap());
    }
}

#[test]
fn every_setting_out_of_range_is_refused_at_construction() {
    let key = key(6);
    let partition = partition_bytes(&key);
    let refused = |config: Config| matches!(Prover::new(key.clone(), config), Err(Error::Config(_)));
    let pool = |max_bytes, max_waste| PoolConfig { max_bytes, max_waste };
    assert!(refused(Config { pool: pool(partition - 1, 0.5), ..config(2, 1) }), "cap below one partition");
    // The message names the numbers: the partition's bytes, the in-flight bound.
    let e = Prover::new(key.clone(), Config { pool: pool(partition - 1, 0.5), ..config(2, 1) }).unwrap_err();
    let (e, in_flight) = (e.to_string(), 4); // 2 synthesis threads + (1 + 1) x 1 device
    assert!(e.contains(&format!("({partition} bytes)")) && e.contains(&format!("({in_flight}:")), "{e}");
    assert!(refused(Config { pool: pool(1 << 30, f64::NAN), ..config(2, 1) }));
    assert!(refused(Config { pool: pool(1 << 30, -0.1), ..config(2, 1) }));
    assert!(refused(Config { pool: pool(1 << 30, f64::INFINITY), ..config(2, 1) }));
    assert!(refused(config(0, 1)));
    assert!(refused(config(usize::MAX, 1)));
    assert!(refused(config(pinprove::MAX_THREADS + 1, 1)));
    assert!(refused(config(2, usize::MAX)));
    assert!(refused(Config { compute_threads: 0, ..config(2, 1) }));
    assert!(refused(Config { compute_threads: usize::MAX, ..config(2, 1) }));
    assert!(refused(Config { prewarm_partitions: Some(usize::MAX), ..config(2, 1) }));
    // The bounds themselves are accepted.
    assert!(Prover::new(key.clone(), Config { pool: pool(partition, 0.0), ..config(1, 0) }).is_ok());
    assert!(Prover::new(key, Config { prewarm_partitions: Some(0), ..config(2, pinprove::MAX_QUEUE_DEPTH) }).is_ok());
}

#[test]
fn the_proving_thread_is_named_for_what_it_is() {
    struct Named(CpuBackend, crossbeam_channel::Sender<String>);
    impl Backend for Named {
        fn name(&self) -> &'static str {
            "cpu"
        }
        fn h(&mut self, w: &mut Witness, t: &mut PartitionTimings) -> pinprove::Result<()> {
            let _ = self.1.send(std::thread::current().name().unwrap_or("").to_owned());
            self.0.h(w, t)
        }
        fn msm(&mut self, w: &Witness, t: &mut PartitionTimings) -> pinprove::Result<MsmSums> {
            self.0.msm(w, t)
        }
    }
    let (names, name) = crossbeam_channel::unbounded();
    let factory = move |key: &KeySource| Ok(Named(CpuBackend::new(key.load()?)?, names));
    let prover =
        Prover::with_backends(key(5), config(1, 1), PinnedPool::new(PoolConfig::default()), vec![factory]).unwrap();
    assert!(prover.prove(vec![chain(5, 1)]).unwrap()[0].is_ok());
    assert_eq!(name.recv().unwrap(), "pinprove-prover-0");
}

/// A prover makes its backends at once, one per proving thread: two factories that each wait
/// for the other to start are both made (made one after the other, the first would give up
/// waiting, and the prover would fail). When one factory fails, the prover answers its error
/// once every proving thread has ended, the other backend dropped.
#[test]
fn backends_are_made_at_once_and_a_failing_one_ends_every_thread() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let starts = [crossbeam_channel::unbounded::<()>(), crossbeam_channel::unbounded::<()>()];
    let meets = |i: usize| {
        let (mine, other) = (starts[i].0.clone(), starts[1 - i].1.clone());
        move |key: &KeySource| {
            mine.send(()).unwrap();
            // The other factory's start, while this one is still being made.
            match other.recv_timeout(Duration::from_secs(30)) {
                Ok(()) => cpu(key),
                Err(_) => Err(Error::Backend(format!("factory {i} waited alone"))),
            }
        }
    };
    let pool = PinnedPool::new(PoolConfig::default());
    let prover = Prover::with_backends(key(4), config(1, 1), pool, vec![meets(0), meets(1)]).unwrap();
    assert!(prover.prove(vec![chain(4, 1), chain(4, 2)]).unwrap().iter().all(Result::is_ok));
    prover.shutdown();

    /// A backend that counts its drops.
    struct Counted(CpuBackend, Arc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.1.fetch_add(1, Ordering::SeqCst);
        }
    }
    impl Backend for Counted {
        fn name(&self) -> &'static str {
            "counted"
        }
        fn h(&mut self, w: &mut Witness, t: &mut PartitionTimings) -> pinprove::Result<()> {
            self.0.h(w, t)
        }
        fn msm(&mut self, w: &Witness, t: &mut PartitionTimings) -> pinprove::Result<MsmSums> {
            self.0.msm(w, t)
        }
    }
    let dropped = Arc::new(AtomicUsize::new(0));
    let counted = |fail: bool| {
        let dropped = Arc::clone(&dropped);
        move |key: &KeySource| match fail {
            true => Err(Error::Backend("no device".into())),
            false => Ok(Counted(cpu(key)?, dropped)),
        }
    };
    let pool = PinnedPool::new(PoolConfig::default());
    let made = Prover::with_backends(key(4), config(1, 1), pool, vec![counted(false), counted(true), counted(false)]);
    assert!(matches!(made.err(), Some(Error::Backend(m)) if m == "no device"));
    assert_eq!(dropped.load(Ordering::SeqCst), 2, "both backends made were dropped before the error was answered");
}
