//! The `Prover`: rayon synthesis workers feeding ONE proving (GPU) thread per backend through a
//! bounded crossbeam channel, whose capacity (`max_gpu_queue_depth` per device) is the dispatch
//! throttle.
//!
//! ```text
//! submit ─► synthesis pool: checkout buffers ─► synthesize into them ─► send(Partition)
//!                                           bounded channel (send blocks when full)
//!           proving thread: h stage ─► MSMs ─► buffers back
//!           compute pool: assemble the proof ─► verify it ─► reply to the job
//! ```
//! A worker blocked in `send` keeps its partition, so at most
//! `synthesis_threads + (max_gpu_queue_depth + 1) × proving threads` partitions hold buffers at
//! any time, and that is also the pool's steady-state size.
//!
//! No thread the prover waits on belongs to its callers: synthesis runs on the prover's own
//! pool, and so do the CPU kernels and the proofs' assembly and verification (its compute
//! pool). Callers may call `prove` from every worker of rayon's global pool (proving stacks
//! do) without starving the proving thread.
//!
//! Nothing is lost on any path: every job is answered exactly once (an unanswered job's
//! [`Reply`] answers [`Error::PipelineClosed`] when dropped), and a partition's buffers are
//! back in the pool before its job is answered. A failing or panicking circuit answers its own
//! job. A backend that returns an error fails that partition only, unless the error is a
//! [device fault](Error::is_device_fault) (a driver error, a panic): then the device is taken out
//! of service (logged, and counted in [`Prover::failed_devices`]), since a device in an unknown
//! state cannot be trusted with the next partition. Its partition goes back to the other
//! devices through a retry channel when the backend [leaves the witness
//! intact](Backend::leaves_witness_intact) (a GPU backend works on its own copies), and is
//! answered with the fault otherwise: no job is lost, and none is proved twice, since a job's
//! answer is given once, by the device that proves it. When no device is left the prover is
//! [failed](Prover::is_failed): the last proving thread stays behind only to answer every queued
//! and later job with [`Error::PipelineClosed`] (a bounded crossbeam channel keeps queued
//! messages, and their buffers, when its receivers go away; see crossbeam-rs/crossbeam#1102).
//!
//! The proving threads stop when told to (the `stop` channel), not when the job channel
//! empties, since a partition may still come back from a failing device: `shutdown` waits until
//! every job is answered before telling them.

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bellpepper_core::Circuit;
use blstrs::Scalar;
use crossbeam_channel::{select, Receiver, RecvTimeoutError, SendError, Sender, TryRecvError};
use ff::Field;
use parking_lot::{Condvar, Mutex};
use rand_core::OsRng;

use crate::backend::{Backend, CpuBackend};
use crate::error::{Error, Result};
use crate::groth16::{
    prepare_verifying_key,
    prover::{assemble, MsmSums},
    verify_proof, PreparedVerifyingKey, Proof, ProvingKey,
};
use crate::pool::{PinnedPool, PoolConfig};
use crate::synth::{partition_bytes, synthesize, witness_buffer_bytes, Witness};
use crate::timings::PartitionTimings;

/// Most threads of either of a prover's pools (synthesis, compute).
pub const MAX_THREADS: usize = 1024;
/// Most partitions the channel may hold (each holds a partition's buffers).
pub const MAX_QUEUE_DEPTH: usize = 1024;

/// Settings of a [`Prover`]. Library code reads no environment variables: everything is here.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Config {
    /// Threads of the prover's own synthesis pool, 1..=[`MAX_THREADS`] (default: the machine's
    /// parallelism).
    pub synthesis_threads: usize,
    /// Threads of the prover's own compute pool, 1..=[`MAX_THREADS`]: the CPU backend's
    /// kernels and proof verification run there (default: the machine's parallelism).
    pub compute_threads: usize,
    /// Synthesized partitions that may wait for each device, 0..=[`MAX_QUEUE_DEPTH`]: the
    /// channel to the proving threads holds this many per proving thread. When it is full,
    /// workers block: the dispatch throttle. 0 is a rendezvous.
    pub max_gpu_queue_depth: usize,
    /// The pool's limits (for [`Prover::new`]; [`Prover::with_backends`] takes a pool).
    pub pool: PoolConfig,
    /// Partitions' buffers to allocate before the first job, at most
    /// [`max_in_flight`](Prover::max_in_flight); `None`: that many, as far as the pool's cap
    /// allows.
    pub prewarm_partitions: Option<usize>,
    /// Verify every proof against the key's verifying key before answering its job (default
    /// `true`), so that a circuit that does not match the key, or an unsatisfied witness, is
    /// [`Error::ProofInvalid`] rather than a bad proof. It runs on the compute pool, never on
    /// the proving thread, and costs one pairing check per proof (its time is
    /// [`PartitionTimings::verify`]). Turn it off only when the caller verifies anyway.
    pub verify_proofs: bool,
}

impl Default for Config {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Config {
            synthesis_threads: cores,
            compute_threads: cores,
            max_gpu_queue_depth: 2,
            pool: PoolConfig::default(),
            prewarm_partitions: None,
            verify_proofs: true,
        }
    }
}

impl Config {
    /// Checks every setting against its documented range.
    ///
    /// # Errors
    /// [`Error::Config`] naming the first setting out of range.
    pub fn validate(&self) -> Result<()> {
        if !(1..=MAX_THREADS).contains(&self.synthesis_threads) {
            return Err(Error::Config("synthesis_threads must be in 1..=MAX_THREADS (1024)"));
        }
        if !(1..=MAX_THREADS).contains(&self.compute_threads) {
            return Err(Error::Config("compute_threads must be in 1..=MAX_THREADS (1024)"));
        }
        if self.max_gpu_queue_depth > MAX_QUEUE_DEPTH {
            return Err(Error::Config("max_gpu_queue_depth must be at most MAX_QUEUE_DEPTH (1024)"));
        }
        self.pool.validate()
    }
}

/// A job's answer, owed exactly once. While the job is queued or in synthesis the answer's
/// sender sits in the prover's registry, so that an abort can answer it at once; a proving
/// thread [claims](Reply::claim) it when the partition goes to the device. Dropped unanswered,
/// it answers [`Error::PipelineClosed`].
struct Reply {
    job: u64,
    /// `Some` once claimed out of the registry.
    claimed: Option<Sender<Result<Proof>>>,
    shared: Arc<Shared>,
}

impl Reply {
    /// Takes the sender out of the registry; `None` when the job was already answered.
    fn claim(mut self) -> Option<Self> {
        let sender = self.shared.pending.lock().remove(&self.job)?;
        self.claimed = Some(sender);
        Some(self)
    }

    fn answer(mut self, result: Result<Proof>) {
        self.send(result);
    }

    /// Puts a claimed sender back in the registry: the job goes back in line unanswered.
    fn unclaim(mut self) -> Self {
        if let Some(sender) = self.claimed.take() {
            self.shared.pending.lock().insert(self.job, sender);
        }
        self
    }

    fn send(&mut self, result: Result<Proof>) {
        let sender = self.claimed.take().or_else(|| self.shared.pending.lock().remove(&self.job));
        if let Some(sender) = sender {
            let _ = sender.send(result); // the caller may have dropped its PendingProof
            self.shared.answered();
        }
    }
}

impl Drop for Reply {
    fn drop(&mut self) {
        self.send(Err(Error::PipelineClosed));
    }
}

/// A synthesized circuit on its way to a proving thread.
struct Partition {
    witness: Witness,
    r: Scalar,
    s: Scalar,
    timings: PartitionTimings,
    sent_at: Instant,
    reply: Reply,
}

impl Partition {
    /// Answers the job unproved; the buffers go back first.
    fn close(self) {
        let Partition { witness, reply, .. } = self;
        drop(witness);
        reply.answer(Err(Error::PipelineClosed));
    }
}

/// What the prover's handle, its workers and its proving threads share.
struct Shared {
    /// When the prover was made: the origin of the timings' `synthesis_start` and
    /// `proving_start`.
    epoch: Instant,
    timings: Mutex<Vec<PartitionTimings>>,
    /// The answer senders of jobs not yet answered nor claimed by a proving thread.
    pending: Mutex<HashMap<u64, Sender<Result<Proof>>>>,
    /// Jobs submitted and not yet answered, for `shutdown` to wait on.
    unanswered: Mutex<usize>,
    all_answered: Condvar,
    /// Set by `abort`: jobs not yet on a device are answered `PipelineClosed`.
    closing: AtomicBool,
    /// Set when the last proving thread retired: nothing can be proved any more.
    failed: AtomicBool,
    /// Proving threads still serving: a thread leaves service only after a device fault.
    serving: AtomicUsize,
}

impl Shared {
    fn new(proving_threads: usize) -> Self {
        Shared {
            epoch: Instant::now(),
            timings: Mutex::default(),
            pending: Mutex::default(),
            unanswered: Mutex::default(),
            all_answered: Condvar::new(),
            closing: AtomicBool::default(),
            failed: AtomicBool::default(),
            serving: AtomicUsize::new(proving_threads),
        }
    }

    fn stopped(&self) -> bool {
        self.closing.load(Ordering::Acquire) || self.failed.load(Ordering::Acquire)
    }

    fn answered(&self) {
        let mut unanswered = self.unanswered.lock();
        *unanswered -= 1;
        if *unanswered == 0 {
            self.all_answered.notify_all();
        }
    }

    /// Answers every job still in the registry with `PipelineClosed`.
    fn close_pending(&self) {
        let senders: Vec<_> = self.pending.lock().drain().map(|(_, sender)| sender).collect();
        for sender in senders {
            let _ = sender.send(Err(Error::PipelineClosed));
            self.answered();
        }
    }
}

/// The answer to one submitted job, to be waited for.
#[derive(Debug)]
pub struct PendingProof {
    job: u64,
    answer: Receiver<Result<Proof>>,
}

impl PendingProof {
    /// The job's submission number.
    pub fn job(&self) -> u64 {
        self.job
    }

    /// Blocks until the job is proved or has failed.
    ///
    /// # Errors
    /// The job's own error, or [`Error::PipelineClosed`] if it was dropped unanswered.
    pub fn wait(self) -> Result<Proof> {
        self.answer.recv().unwrap_or(Err(Error::PipelineClosed))
    }

    /// The answer if it is there, else `Err(self)` to try again later; never blocks.
    pub fn try_wait(self) -> std::result::Result<Result<Proof>, Self> {
        match self.answer.try_recv() {
            Ok(answer) => Ok(answer),
            Err(TryRecvError::Disconnected) => Ok(Err(Error::PipelineClosed)),
            Err(TryRecvError::Empty) => Err(self),
        }
    }

    /// Waits at most `timeout` for the answer; `Err(self)` if it has not come.
    pub fn wait_timeout(self, timeout: Duration) -> std::result::Result<Result<Proof>, Self> {
        match self.answer.recv_timeout(timeout) {
            Ok(answer) => Ok(answer),
            Err(RecvTimeoutError::Disconnected) => Ok(Err(Error::PipelineClosed)),
            Err(RecvTimeoutError::Timeout) => Err(self),
        }
    }
}

/// Proves circuits of one proving key: synchronous to call, pipelined inside.
///
/// Ending a prover: [`shutdown`](Self::shutdown) finishes every job submitted and then stops;
/// [`abort`](Self::abort) answers every job not yet on a device [`Error::PipelineClosed`] at
/// once and waits only for the partitions on a device (those are answered with their proofs).
/// Dropping a prover aborts it. Circuits still being synthesized when a prover is aborted run
/// to their end on its synthesis threads (user code cannot be interrupted) and their buffers
/// then return to the pool; their jobs were already answered.
///
/// # Examples
/// ```
/// use pinprove::{groth16, Circuit, Config, ConstraintSystem, Field, Prover, Scalar, SynthesisError};
///
/// /// Knows x with x² = y, for public y.
/// struct Square(Scalar);
/// impl Circuit<Scalar> for Square {
///     fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
///         let x = cs.alloc(|| "x", || Ok(self.0))?;
///         let y = cs.alloc_input(|| "y", || Ok(self.0.square()))?;
///         cs.enforce(|| "x*x=y", |lc| lc + x, |lc| lc + x, |lc| lc + y);
///         Ok(())
///     }
/// }
///
/// let key = groth16::generator::generate_random_parameters(Square(Scalar::ZERO), &mut rand_core::OsRng)?;
/// let pvk = groth16::prepare_verifying_key(&key.vk);
/// let prover = Prover::new(key, Config { synthesis_threads: 2, ..Config::default() })?;
///
/// let xs = [Scalar::from(3), Scalar::from(4)];
/// let proofs = prover.prove(xs.iter().map(|x| Square(*x)).collect())?;
/// for (x, proof) in xs.iter().zip(proofs) {
///     assert!(groth16::verify_proof(&pvk, &proof?, &[x.square()])?);
/// }
/// let pool = prover.pool().stats();
/// assert_eq!(pool.checkouts, pool.checkins); // every buffer is back
/// prover.shutdown();
/// # Ok::<(), pinprove::Error>(())
/// ```
pub struct Prover {
    key: Arc<ProvingKey>,
    pool: PinnedPool,
    synthesis: rayon::ThreadPool,
    /// `Some` until the prover ends, which closes the channel by dropping it.
    jobs: Option<Sender<Partition>>,
    /// Dropped to tell the proving threads to stop: at once on an abort, once every job is
    /// answered on a shutdown.
    stop: Option<Sender<()>>,
    proving_threads: Vec<JoinHandle<()>>,
    backend: &'static str,
    shared: Arc<Shared>,
    next_job: AtomicU64,
    max_in_flight: usize,
}

impl std::fmt::Debug for Prover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prover")
            .field("backend", &self.backend)
            .field("proving_threads", &self.proving_threads.len())
            .field("max_in_flight", &self.max_in_flight)
            .field("pool", &self.pool)
            .finish()
    }
}

/// What every proving thread of a prover is given.
struct ProvingContext {
    key: Arc<ProvingKey>,
    /// `Some` when proofs are verified before they are returned.
    pvk: Option<Arc<PreparedVerifyingKey>>,
    compute: Arc<rayon::ThreadPool>,
    shared: Arc<Shared>,
    /// The synthesized partitions, and those a failing device gave back (unbounded, so giving
    /// one back never blocks), which go first.
    queue: Receiver<Partition>,
    retry: (Sender<Partition>, Receiver<Partition>),
    stop: Receiver<()>,
}

impl ProvingContext {
    /// The next partition to prove, or `None` once told to stop.
    fn next(&self, queue_open: &mut bool) -> Option<Partition> {
        loop {
            if let Ok(partition) = self.retry.1.try_recv() {
                return Some(partition);
            }
            if !*queue_open {
                return select! {
                    recv(self.retry.1) -> partition => partition.ok(),
                    recv(self.stop) -> _ => None,
                };
            }
            select! {
                recv(self.queue) -> partition => match partition {
                    Ok(partition) => return Some(partition),
                    Err(_) => *queue_open = false, // every synthesis sender is gone
                },
                recv(self.retry.1) -> partition => return partition.ok(),
                recv(self.stop) -> _ => return None,
            }
        }
    }

    /// Closes every partition still queued or given back.
    fn close_queued(&self) {
        while let Ok(partition) = self.retry.1.try_recv().or_else(|_| self.queue.try_recv()) {
            partition.close();
        }
    }
}

impl Prover {
    /// A prover on the CPU backend with a heap pool of `config.pool`; the backend's kernels run
    /// on the prover's compute pool.
    ///
    /// # Errors
    /// As [`with_backends`](Self::with_backends).
    pub fn new(key: impl Into<Arc<ProvingKey>>, config: Config) -> Result<Self> {
        config.validate()?;
        let compute = Arc::new(compute_pool(config.compute_threads)?);
        let backend = Arc::clone(&compute);
        let factory = move |_: &ProvingKey| Ok(CpuBackend::with_pool(backend));
        Self::build(key.into(), config, PinnedPool::new(config.pool), vec![factory], compute)
    }

    /// A prover with one proving thread per factory (one per device), sharing one channel.
    /// Each factory runs on its own proving thread, so a backend's device context is made and
    /// used on one thread only. Buffers come from `pool`, prewarmed here.
    ///
    /// # Errors
    /// [`Error::InvalidKey`] for a malformed key; [`Error::Config`] for a setting out of range
    /// (see [`Config`]), no factory, or a pool cap that cannot hold one partition; the first
    /// error a factory returns.
    pub fn with_backends<B, F>(
        key: impl Into<Arc<ProvingKey>>,
        config: Config,
        pool: PinnedPool,
        factories: Vec<F>,
    ) -> Result<Self>
    where
        B: Backend + 'static,
        F: FnOnce(&ProvingKey) -> Result<B> + Send + 'static,
    {
        config.validate()?;
        let compute = Arc::new(compute_pool(config.compute_threads)?);
        Self::build(key.into(), config, pool, factories, compute)
    }

    fn build<B, F>(
        key: Arc<ProvingKey>,
        config: Config,
        pool: PinnedPool,
        factories: Vec<F>,
        compute: Arc<rayon::ThreadPool>,
    ) -> Result<Self>
    where
        B: Backend + 'static,
        F: FnOnce(&ProvingKey) -> Result<B> + Send + 'static,
    {
        key.validate()?;
        pool.config().validate()?;
        if factories.is_empty() {
            return Err(Error::Config("at least one backend is needed"));
        }
        if factories.len() > MAX_THREADS {
            return Err(Error::Config("at most MAX_THREADS (1024) backends"));
        }
        let partition = partition_bytes(&key)?;
        if partition > pool.config().max_bytes {
            return Err(Error::Config("the pool's cap (max_bytes) cannot hold the buffers of one partition"));
        }
        let devices = factories.len();
        let max_in_flight = config.synthesis_threads + (config.max_gpu_queue_depth + 1) * devices;
        let prewarm_partitions = config.prewarm_partitions.unwrap_or(max_in_flight);
        if prewarm_partitions > max_in_flight {
            return Err(Error::Config("prewarm_partitions must be at most the in-flight bound"));
        }
        prewarm(&pool, witness_buffer_bytes(&key)?, partition, prewarm_partitions);

        let (jobs, queue) = crossbeam_channel::bounded::<Partition>(config.max_gpu_queue_depth * devices);
        let retry = crossbeam_channel::unbounded::<Partition>();
        let (stop, stopped) = crossbeam_channel::bounded::<()>(0);
        let shared = Arc::new(Shared::new(factories.len()));
        let pvk = config.verify_proofs.then(|| Arc::new(prepare_verifying_key(&key.vk)));
        let mut proving_threads = Vec::with_capacity(factories.len());
        let mut backend = "";
        for (i, factory) in factories.into_iter().enumerate() {
            let (started, start_result) = crossbeam_channel::bounded(1);
            let ctx = ProvingContext {
                key: Arc::clone(&key),
                pvk: pvk.clone(),
                compute: Arc::clone(&compute),
                shared: Arc::clone(&shared),
                queue: queue.clone(),
                retry: retry.clone(),
                stop: stopped.clone(),
            };
            let thread = std::thread::Builder::new()
                .name(format!("pinprove-prover-{i}"))
                .spawn(move || match factory(&ctx.key) {
                    Ok(backend) => {
                        let _ = started.send(Ok(backend.name()));
                        proving_loop(backend, i, &ctx);
                    }
                    Err(e) => {
                        let _ = started.send(Err(e));
                    }
                })
                .map_err(|_| Error::Config("could not spawn a proving thread"))?;
            proving_threads.push(thread);
            // On an error, dropping `stop` below ends the threads already started.
            backend = start_result.recv().unwrap_or(Err(Error::PipelineClosed))?;
        }
        let synthesis = rayon::ThreadPoolBuilder::new()
            .num_threads(config.synthesis_threads)
            .thread_name(|i| format!("pinprove-synth-{i}"))
            .build()
            .map_err(|_| Error::Config("could not start the synthesis threads"))?;
        Ok(Prover {
            key,
            pool,
            synthesis,
            jobs: Some(jobs),
            stop: Some(stop),
            proving_threads,
            backend,
            shared,
            next_job: AtomicU64::new(0),
            max_in_flight,
        })
    }

    /// Proves each circuit with fresh random r, s; answers in submission order. The circuits
    /// may borrow data (they need not be `'static`): this returns only once every one of them
    /// has been synthesized.
    ///
    /// # Errors
    /// [`Error::EmptyBatch`] for no circuits; each job's own failure is its entry's `Err`.
    pub fn prove<C>(&self, circuits: Vec<C>) -> Result<Vec<Result<Proof>>>
    where
        C: Circuit<Scalar> + Send,
    {
        let jobs = circuits.into_iter().map(|c| (c, Scalar::random(OsRng), Scalar::random(OsRng))).collect();
        self.prove_with_randomness(jobs)
    }

    /// Proves each `(circuit, r, s)` with the given blinding factors (deterministic proofs, as
    /// bellperson's `create_proof(circuit, params, r, s)`); answers in submission order. The
    /// circuits may borrow data, as in [`prove`](Self::prove).
    ///
    /// # Errors
    /// [`Error::EmptyBatch`] for no jobs; each job's own failure is its entry's `Err`.
    pub fn prove_with_randomness<C>(&self, jobs: Vec<(C, Scalar, Scalar)>) -> Result<Vec<Result<Proof>>>
    where
        C: Circuit<Scalar> + Send,
    {
        if jobs.is_empty() {
            return Err(Error::EmptyBatch);
        }
        let mut pending = Vec::with_capacity(jobs.len());
        // The scope ends when every circuit is synthesized, so they may borrow from the caller;
        // FIFO: circuits start in submission order.
        self.synthesis.scope_fifo(|scope| {
            for (circuit, r, s) in jobs {
                let (answer, reply) = self.register();
                pending.push(answer);
                let ctx = self.synthesis_context();
                scope.spawn_fifo(move |_| ctx.run(circuit, r, s, reply));
            }
        });
        Ok(pending.into_iter().map(PendingProof::wait).collect())
    }

    /// Queues one job and returns at once; the streaming form of [`prove`](Self::prove).
    pub fn submit<C>(&self, circuit: C, r: Scalar, s: Scalar) -> PendingProof
    where
        C: Circuit<Scalar> + Send + 'static,
    {
        let (answer, reply) = self.register();
        let ctx = self.synthesis_context();
        self.synthesis.spawn_fifo(move || ctx.run(circuit, r, s, reply));
        answer
    }

    /// A new job: its answer channel, registered until the job is answered.
    fn register(&self) -> (PendingProof, Reply) {
        let job = self.next_job.fetch_add(1, Ordering::Relaxed);
        let (sender, answer) = crossbeam_channel::bounded(1);
        *self.shared.unanswered.lock() += 1;
        self.shared.pending.lock().insert(job, sender);
        (PendingProof { job, answer }, Reply { job, claimed: None, shared: Arc::clone(&self.shared) })
    }

    fn synthesis_context(&self) -> SynthesisContext {
        SynthesisContext {
            key: Arc::clone(&self.key),
            pool: self.pool.clone(),
            shared: Arc::clone(&self.shared),
            jobs: self.jobs.clone().expect("the channel lives until the prover ends"),
        }
    }

    /// Timings of the partitions proved since the last call, in completion order.
    pub fn take_timings(&self) -> Vec<PartitionTimings> {
        std::mem::take(&mut *self.shared.timings.lock())
    }

    /// Whether every device has been taken out of service after a fault: every job is now
    /// answered [`Error::PipelineClosed`], and a new prover is needed.
    pub fn is_failed(&self) -> bool {
        self.shared.failed.load(Ordering::Acquire)
    }

    /// Devices (proving threads) taken out of service after a [device
    /// fault](Error::is_device_fault).
    pub fn failed_devices(&self) -> usize {
        self.proving_threads.len() - self.shared.serving.load(Ordering::Acquire)
    }

    /// The pool, for its [`stats`](PinnedPool::stats) or [`shrink`](PinnedPool::shrink).
    pub fn pool(&self) -> &PinnedPool {
        &self.pool
    }

    /// The proving key.
    pub fn key(&self) -> &ProvingKey {
        &self.key
    }

    /// The backend's name.
    pub fn backend(&self) -> &'static str {
        self.backend
    }

    /// Most partitions that can hold buffers at once: synthesis threads + (queue depth + 1) ×
    /// proving threads.
    pub fn max_in_flight(&self) -> usize {
        self.max_in_flight
    }

    /// Finishes every job submitted so far (each is answered), then stops the proving threads.
    pub fn shutdown(mut self) {
        self.end(false);
    }

    /// Answers every job not yet on a device with [`Error::PipelineClosed`] at once, then
    /// waits for the proving threads to finish the partitions on their devices and stop.
    pub fn abort(mut self) {
        self.end(true);
    }

    fn end(&mut self, abort: bool) {
        if self.jobs.is_none() {
            return; // already ended
        }
        if abort {
            self.shared.closing.store(true, Ordering::Release);
            self.shared.close_pending();
        }
        self.jobs = None;
        if !abort {
            // Every job answered, the last ones possibly by the compute pool (verification).
            let mut unanswered = self.shared.unanswered.lock();
            while *unanswered > 0 {
                self.shared.all_answered.wait(&mut unanswered);
            }
        }
        self.stop = None; // wakes the proving threads: they close what is still queued and exit
        for thread in self.proving_threads.drain(..) {
            if thread.join().is_err() {
                log::error!("a pinprove proving thread panicked");
            }
        }
    }
}

impl Drop for Prover {
    /// As [`abort`](Prover::abort).
    fn drop(&mut self) {
        self.end(true);
    }
}

fn compute_pool(threads: usize) -> Result<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("pinprove-compute-{i}"))
        .build()
        .map_err(|_| Error::Config("could not start the compute threads"))
}

/// Allocates up to `partitions` partitions' buffers, as many as the pool's cap allows. A
/// failing allocation ends the prewarm with a warning, not the prover: checkouts fall back.
fn prewarm(pool: &PinnedPool, buffers: [usize; 6], partition: usize, partitions: usize) {
    let fits = pool.config().max_bytes.saturating_sub(pool.stats().bytes_pinned) / partition;
    if fits < partitions {
        log::warn!("the pool's cap allows prewarming {fits} of {partitions} partitions of {partition} bytes");
    }
    let mut sizes = buffers.to_vec();
    sizes.sort_unstable();
    sizes.dedup();
    for bytes in sizes {
        let count = buffers.iter().filter(|b| **b == bytes).count() * partitions.min(fits);
        if let Err(e) = pool.prewarm(count, bytes) {
            log::warn!("prewarm stopped at {} buffers: {e}", pool.stats().allocations);
            return;
        }
    }
}

/// What a synthesis task needs, cloned per job.
struct SynthesisContext {
    key: Arc<ProvingKey>,
    pool: PinnedPool,
    shared: Arc<Shared>,
    jobs: Sender<Partition>,
}

impl SynthesisContext {
    /// Synthesizes `circuit` and sends the partition to the proving threads, or answers the job.
    fn run<C: Circuit<Scalar>>(self, circuit: C, r: Scalar, s: Scalar, reply: Reply) {
        if self.shared.stopped() {
            return reply.answer(Err(Error::PipelineClosed));
        }
        let start = Instant::now();
        let synthesis_worker = rayon::current_thread_index().unwrap_or(0);
        let witness = match catch_unwind(AssertUnwindSafe(|| synthesize(circuit, &self.key, &self.pool))) {
            Ok(Ok(witness)) => witness,
            // The witness, if any, was dropped while unwinding: its buffers are back.
            Ok(Err(e)) => return reply.answer(Err(e)),
            Err(panic) => return reply.answer(Err(Error::WorkerPanicked(Error::panic_message(panic)))),
        };
        let timings = PartitionTimings {
            job: reply.job,
            synthesis_worker,
            synthesis_start: start - self.shared.epoch,
            synthesis: start.elapsed(),
            pinned: witness.is_pinned(),
            ..Default::default()
        };
        let partition = Partition { witness, r, s, timings, sent_at: Instant::now(), reply };
        if let Err(SendError(partition)) = self.jobs.send(partition) {
            partition.close();
        }
    }
}

/// The proving thread: one partition at a time until told to stop, or until its device
/// faults (see the module docs).
fn proving_loop<B: Backend>(mut backend: B, device: usize, ctx: &ProvingContext) {
    let shared = &ctx.shared;
    let mut idle_since = Instant::now();
    let mut queue_open = true;
    let (mut retired, mut last) = (false, false);
    while let Some(partition) = ctx.next(&mut queue_open) {
        if shared.stopped() {
            partition.close();
            continue;
        }
        let Partition { mut witness, r, s, timings: synthesized, sent_at, reply } = partition;
        let Some(reply) = reply.claim() else {
            continue; // answered by an abort meanwhile; the buffers go back here
        };
        let start = Instant::now();
        let mut t = synthesized;
        t.device = device;
        t.proving_start = start - shared.epoch;
        t.queue_wait = start - sent_at;
        t.input_wait = start - idle_since;
        let result = catch_unwind(AssertUnwindSafe(|| -> Result<MsmSums> {
            backend.h(&ctx.key, &mut witness, &mut t)?;
            backend.msm(&ctx.key, &witness, &mut t)
        }))
        .unwrap_or_else(|panic| Err(Error::BackendPanicked(Error::panic_message(panic))));
        if let Some(e) = result.as_ref().err().filter(|e| e.is_device_fault()) {
            let left = shared.serving.fetch_sub(1, Ordering::AcqRel) - 1;
            last = left == 0;
            let give_back = !last && backend.leaves_witness_intact() && !shared.stopped();
            log::error!(
                "device {device} ({}) out of service after a fault on job {}: {e}; {left} device(s) left{}",
                backend.name(),
                t.job,
                if give_back { ", which take its partition" } else { "" },
            );
            if give_back {
                let reply = reply.unclaim();
                let partition = Partition { witness, r, s, timings: synthesized, sent_at: Instant::now(), reply };
                // This context holds a receiver too: the send cannot fail.
                let _ = ctx.retry.0.send(partition);
                break;
            }
            retired = true;
        }
        let inputs = witness.public_inputs().to_vec();
        // Buffers go back before the caller hears, so a finished batch sees a balanced pool.
        drop(witness);
        t.gpu_busy = start.elapsed();
        match result {
            // The device is free: the next partition need not wait for the proof's scalar
            // multiplications (0.65 ms on a 2-core CI machine; a 2^18 partition's device time
            // is 19 ms on the H200).
            Ok(sums) => {
                let (key, pvk, shared) = (Arc::clone(&ctx.key), ctx.pvk.clone(), Arc::clone(shared));
                ctx.compute.spawn(move || {
                    let start = Instant::now();
                    let proof = assemble(&key.vk, &sums, r, s);
                    t.assemble = start.elapsed();
                    let verdict = pvk.map(|pvk| {
                        let start = Instant::now();
                        let valid = verify_proof(&pvk, &proof, &inputs);
                        t.verify = start.elapsed();
                        valid
                    });
                    let answer = match verdict {
                        None | Some(Ok(true)) => Ok(proof), // unchecked when verification is off
                        Some(Ok(false)) => Err(Error::ProofInvalid { job: t.job }),
                        Some(Err(e)) => Err(e),
                    };
                    shared.timings.lock().push(t);
                    reply.answer(answer);
                });
            }
            Err(e) => {
                shared.timings.lock().push(t);
                reply.answer(Err(e));
            }
        }
        if retired {
            break;
        }
        idle_since = Instant::now();
    }
    drop(backend);
    if last {
        shared.failed.store(true, Ordering::Release);
        log::error!("no device left: the prover has failed; queued and later jobs are closed");
        // Stay until told to stop, answering what arrives.
        while let Some(partition) = ctx.next(&mut queue_open) {
            partition.close();
        }
    }
    if shared.stopped() {
        // Aborted or failed: what is still queued is answered here, not left in the channels.
        ctx.close_queued();
    }
}
