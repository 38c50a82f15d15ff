//! The `Prover`: rayon synthesis workers feeding ONE proving (GPU) thread per backend through a
//! bounded crossbeam channel, whose capacity (`queue_depth_per_device` per device) is the dispatch
//! throttle.
//!
//! ```text
//! submit ─► synthesis pool: checkout buffers ─► synthesize into them ─► send(Partition)
//!                                           bounded channel (send blocks when full)
//!           proving thread: h stage ─► MSMs ─► buffers back
//!           compute pool: assemble the proof ─► verify it ─► reply to the job
//! ```
//! A worker blocked in `send` keeps its partition, so at most
//! `synthesis_threads + (queue_depth_per_device + 1) × proving threads` partitions hold buffers at
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

mod config;
mod jobs;
mod proving;
mod synthesis;

pub use config::{Config, MAX_QUEUE_DEPTH, MAX_THREADS};
pub use jobs::PendingProof;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use bellpepper_core::Circuit;
use blstrs::Scalar;
use crossbeam_channel::{Receiver, Sender};
use ff::Field;
use rand_core::OsRng;

use self::jobs::{Partition, ProverState, Reply};
use self::proving::{proving_loop, ProvingContext};
use self::synthesis::SynthesisContext;
use crate::backend::{Backend, CpuBackend};
use crate::error::{Error, Result};
use crate::groth16::{prepare_verifying_key, KeyShape, KeySource, Proof, VerifyingKey};
use crate::pool::PinnedPool;
use crate::synth::{lengths_partition_bytes, witness_buffer_bytes};
use crate::timings::PartitionTimings;

/// Proves circuits of one proving key: synchronous to call, pipelined inside.
///
/// Ending a prover: [`shutdown`](Self::shutdown) finishes every job submitted and then stops;
/// [`abort`](Self::abort) answers every job not yet on a device [`Error::PipelineClosed`] at
/// once and waits only for the partitions on a device (those are answered with their proofs).
/// Dropping a prover aborts it. Circuits still being synthesized when a prover is aborted run
/// to their end on its synthesis threads (user code cannot be interrupted) and their buffers
/// then return to the pool; their jobs were already answered. A prover shared through an
/// `Arc` (`prove` takes `&self`, so many threads may call it) ends with its last handle:
/// once the others are dropped, `Arc::try_unwrap` gives it back for `shutdown`, as the second
/// example shows; dropping the last `Arc` aborts it.
///
/// # Examples
/// ```
/// use pinprove::{Circuit, Config, ConstraintSystem, Field, Prover, Scalar, SynthesisError};
/// use pinprove::{generate_random_parameters, prepare_verifying_key, verify_proof};
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
/// let key = generate_random_parameters(Square(Scalar::ZERO), &mut rand_core::OsRng)?;
/// let pvk = prepare_verifying_key(&key.vk);
/// let prover = Prover::new(key, Config { synthesis_threads: 2, ..Config::default() })?;
///
/// let xs = [Scalar::from(3), Scalar::from(4)];
/// let proofs = prover.prove(xs.iter().map(|x| Square(*x)).collect())?;
/// for (x, proof) in xs.iter().zip(proofs) {
///     assert!(verify_proof(&pvk, &proof?, &[x.square()])?);
/// }
/// let pool = prover.pool().stats();
/// assert_eq!(pool.checkouts, pool.checkins); // every buffer is back
/// prover.shutdown();
/// # Ok::<(), pinprove::Error>(())
/// ```
///
/// Shared by several threads, then shut down:
/// ```
/// # use pinprove::{Circuit, Config, ConstraintSystem, Field, Prover, Scalar, SynthesisError};
/// # struct Square(Scalar);
/// # impl Circuit<Scalar> for Square {
/// #     fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
/// #         let x = cs.alloc(|| "x", || Ok(self.0))?;
/// #         let y = cs.alloc_input(|| "y", || Ok(self.0.square()))?;
/// #         cs.enforce(|| "x*x=y", |lc| lc + x, |lc| lc + x, |lc| lc + y);
/// #         Ok(())
/// #     }
/// # }
/// use std::sync::Arc;
///
/// let key = pinprove::generate_random_parameters(Square(Scalar::ZERO), &mut pinprove::rand_core::OsRng)?;
/// let prover = Arc::new(Prover::new(key, Config { synthesis_threads: 2, ..Config::default() })?);
/// let callers: Vec<_> = (0..3u64)
///     .map(|i| {
///         let prover = Arc::clone(&prover);
///         std::thread::spawn(move || prover.prove(vec![Square(Scalar::from(i))]))
///     })
///     .collect();
/// for caller in callers {
///     assert!(caller.join().unwrap()?.remove(0).is_ok());
/// }
/// // The callers' handles are gone: this is the last one.
/// Arc::try_unwrap(prover).expect("no other handle").shutdown();
/// # Ok::<(), pinprove::Error>(())
/// ```
pub struct Prover {
    /// What it keeps of the key: its backends hold the bases.
    shape: Arc<KeyShape>,
    pool: PinnedPool,
    synthesis: rayon::ThreadPool,
    /// `Some` until the prover ends, which closes the channel by dropping it.
    jobs: Option<Sender<Partition>>,
    /// Dropped to tell the proving threads to stop: at once on an abort, once every job is
    /// answered on a shutdown.
    stop: Option<Sender<()>>,
    proving_threads: Vec<JoinHandle<()>>,
    backend: &'static str,
    shared: Arc<ProverState>,
    next_job: AtomicU64,
    max_in_flight: usize,
    /// Whether circuits are synthesized witness-only: the key has recorded constraints and
    /// every backend evaluates them.
    witness_only: bool,
    /// Bytes of one partition's pool buffers.
    partition_bytes: usize,
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

impl Prover {
    /// A prover on the CPU backend with a heap pool of `config.pool`; the backend's kernels run
    /// on the prover's compute pool.
    ///
    /// # Errors
    /// As [`with_backends`](Self::with_backends).
    pub fn new(key: impl Into<KeySource>, config: Config) -> Result<Self> {
        config.validate()?;
        let compute = Arc::new(thread_pool("pinprove-compute", config.compute_threads)?);
        let backend = Arc::clone(&compute);
        let factory = move |key: &KeySource| Ok(CpuBackend::with_pool(key.load()?, backend));
        Self::build(key.into(), config, PinnedPool::new(config.pool), vec![factory], compute)
    }

    /// A prover with one proving thread per factory (one per device), sharing one channel.
    /// Each factory runs on its own proving thread, all at once (devices load their keys side
    /// by side), so a backend's device context is made and used on one thread only, and is given the key (or its file, [`KeyFile`](crate::KeyFile)), of which it
    /// keeps what it needs (a device copies the bases and the recording's matrices); the
    /// prover keeps no more than the key's shape (its verifying key, its counts and its
    /// recording's), so a key handed over without a clone kept is freed on the host when no
    /// backend holds it. Buffers come from `pool`, prewarmed here.
    ///
    /// # Errors
    /// [`Error::InvalidKey`] for a malformed key; [`Error::Config`] for a setting out of range
    /// (see [`Config`]), no factory, a pool cap that cannot hold one partition, or
    /// [`Config::require_witness_only`] unmet; the error
    /// of the first factory (in order) that fails. Every proving thread has ended, and the
    /// backends made are dropped, when an error is returned.
    pub fn with_backends<B, F>(
        key: impl Into<KeySource>,
        config: Config,
        pool: PinnedPool,
        factories: Vec<F>,
    ) -> Result<Self>
    where
        B: Backend + 'static,
        F: FnOnce(&KeySource) -> Result<B> + Send + 'static,
    {
        config.validate()?;
        let compute = Arc::new(thread_pool("pinprove-compute", config.compute_threads)?);
        Self::build(key.into(), config, pool, factories, compute)
    }

    fn build<B, F>(
        key: KeySource,
        config: Config,
        pool: PinnedPool,
        factories: Vec<F>,
        compute: Arc<rayon::ThreadPool>,
    ) -> Result<Self>
    where
        B: Backend + 'static,
        F: FnOnce(&KeySource) -> Result<B> + Send + 'static,
    {
        let devices = factories.len();
        let (max_in_flight, prewarm_partitions) = check_setup(&key, &config, &pool, devices)?;
        let synthesis = thread_pool("pinprove-synth", config.synthesis_threads)?;
        let shape = Arc::new(key.shape());
        let (jobs, queue) = crossbeam_channel::bounded::<Partition>(config.queue_depth_per_device * devices);
        let (stop, stopped) = crossbeam_channel::bounded::<()>(0);
        let shared = Arc::new(ProverState::new(factories.len()));
        let ctx = ProvingContext {
            shape: Arc::clone(&shape),
            pvk: config.verify_proofs.then(|| Arc::new(prepare_verifying_key(&shape.vk))),
            compute,
            shared: Arc::clone(&shared),
            queue,
            retry: crossbeam_channel::unbounded::<Partition>(),
            stop: stopped,
        };
        let (proving_threads, made) = start_backends(factories, key, ctx);
        let made = match made {
            Ok(made) => made,
            Err(e) => return Err(stop_threads(proving_threads, (jobs, stop), e)),
        };
        let backend = made.first().map_or("", |m| m.name);
        let all_evaluate = made.iter().all(|m| m.evaluates_recorded_constraints);
        let witness_only = shape.recording.is_some() && all_evaluate;
        if shape.recording.is_some() && !witness_only {
            log::info!(
                "the {backend} backend does not evaluate recorded constraints: circuits are synthesized in full"
            );
        }
        if config.require_witness_only && !witness_only {
            let why = match made.iter().find(|m| !m.evaluates_recorded_constraints) {
                Some(m) if shape.recording.is_some() => format!(
                    "the {} backend does not evaluate the key's recorded constraints (a device holds them only \
                     where they fit beside the key: see its DeviceReport)",
                    m.name
                ),
                _ => "the key has no recorded constraints (ProvingKey::with_r1cs, KeyFile::with_r1cs_file)".to_owned(),
            };
            let e = Error::Config(format!("require_witness_only: {why}"));
            return Err(stop_threads(proving_threads, (jobs, stop), e));
        }
        let lengths = shape.partition_lengths();
        let sizes = witness_buffer_bytes(lengths, witness_only)
            .and_then(|buffers| Ok((lengths_partition_bytes(lengths, witness_only)?, buffers)));
        let (partition, buffers) = match sizes {
            Ok(sizes) => sizes,
            Err(e) => return Err(stop_threads(proving_threads, (jobs, stop), e)),
        };
        if partition > pool.config().max_bytes {
            let e = Error::Config(format!(
                "the pool's cap (max_bytes, {} bytes) cannot hold the buffers of one partition ({partition} bytes); \
                 to keep every partition in flight pinned ({max_in_flight}: synthesis_threads + \
                 (queue_depth_per_device + 1) x devices) it needs {} bytes",
                pool.config().max_bytes,
                partition.saturating_mul(max_in_flight),
            ));
            return Err(stop_threads(proving_threads, (jobs, stop), e));
        }
        prewarm(&pool, &buffers, partition, prewarm_partitions);
        Ok(Prover {
            shape,
            pool,
            synthesis,
            jobs: Some(jobs),
            stop: Some(stop),
            proving_threads,
            backend,
            shared,
            next_job: AtomicU64::new(0),
            max_in_flight,
            witness_only,
            partition_bytes: partition,
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
        (PendingProof::new(job, answer), Reply::new(job, Arc::clone(&self.shared)))
    }

    fn synthesis_context(&self) -> SynthesisContext {
        SynthesisContext {
            shape: Arc::clone(&self.shape),
            pool: self.pool.clone(),
            shared: Arc::clone(&self.shared),
            jobs: self.jobs.clone().expect("the channel lives until the prover ends"),
            witness_only: self.witness_only,
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

    /// The verifying key of the prover's proving key.
    pub fn verifying_key(&self) -> &VerifyingKey {
        &self.shape.vk
    }

    /// The backend's name.
    pub fn backend(&self) -> &'static str {
        self.backend
    }

    /// Whether circuits are synthesized witness-only, their constraints evaluated by the
    /// backends from the key's [recording](crate::R1cs): the key has one and every backend
    /// evaluates it ([`Backend::evaluates_recorded_constraints`]). Otherwise synthesis
    /// evaluates the constraints, as without a recording; the proofs are the same.
    pub fn is_witness_only(&self) -> bool {
        self.witness_only
    }

    /// Bytes of pool buffers one partition in flight holds: in full, its evaluations and
    /// witness; [witness-only](Self::is_witness_only), the least its packed aux holds (its
    /// bitmaps and one chunk of values; [`PartitionTimings::witness_bytes`] says what each
    /// partition held).
    pub fn partition_bytes(&self) -> usize {
        self.partition_bytes
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

/// Checks a prover's key, settings and pool for `devices` backends: the in-flight bound and
/// the partitions to prewarm.
///
/// # Errors
/// [`Error::InvalidKey`] for a malformed key; [`Error::Config`] for no backend or too many,
/// a pool setting out of range, or more partitions to prewarm than can be in flight.
fn check_setup(key: &KeySource, config: &Config, pool: &PinnedPool, devices: usize) -> Result<(usize, usize)> {
    key.validate()?;
    pool.config().validate()?;
    if devices == 0 {
        return Err(Error::Config("at least one backend is needed".into()));
    }
    if devices > MAX_THREADS {
        return Err(Error::Config("at most MAX_THREADS (1024) backends".into()));
    }
    let max_in_flight = config.synthesis_threads + (config.queue_depth_per_device + 1) * devices;
    let prewarm_partitions = config.prewarm_partitions.unwrap_or(max_in_flight);
    if prewarm_partitions > max_in_flight {
        return Err(Error::Config(format!(
            "prewarm_partitions ({prewarm_partitions}) must be at most the in-flight bound ({max_in_flight}: \
             synthesis_threads + (queue_depth_per_device + 1) x devices)"
        )));
    }
    Ok((max_in_flight, prewarm_partitions))
}

/// Starts a proving thread per factory, each making its backend from `key` at once (devices
/// load their keys side by side), and waits for every one to answer: the threads, and what
/// each made or the first error (a thread that could not be started included).
fn start_backends<B, F>(
    factories: Vec<F>,
    key: KeySource,
    ctx: ProvingContext,
) -> (Vec<JoinHandle<()>>, Result<Vec<Made>>)
where
    B: Backend + 'static,
    F: FnOnce(&KeySource) -> Result<B> + Send + 'static,
{
    let mut started = Vec::with_capacity(factories.len());
    let mut failed = None;
    for (i, factory) in factories.into_iter().enumerate() {
        match spawn_proving_thread(i, factory, key.clone(), ctx.clone()) {
            Ok(thread) => started.push(thread),
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
    }
    drop(key); // the backends hold what they need of it
    let made: Vec<_> = started.iter().map(|(_, made)| made.recv().unwrap_or(Err(Error::PipelineClosed))).collect();
    let threads = started.into_iter().map(|(thread, _)| thread).collect();
    match failed {
        Some(e) => (threads, Err(e)),
        None => (threads, made.into_iter().collect()),
    }
}

/// Ends the proving threads of a prover that will not be made (closing its channels, which
/// they wait on once their backend is made) and joins them; returns `e`, its error.
fn stop_threads(
    threads: impl IntoIterator<Item = JoinHandle<()>>,
    channels: (Sender<Partition>, Sender<()>),
    e: Error,
) -> Error {
    drop(channels);
    for thread in threads {
        if thread.join().is_err() {
            log::error!("a pinprove proving thread panicked");
        }
    }
    e
}

/// A rayon pool of `threads` threads named `name-0`, `name-1`, ….
fn thread_pool(name: &'static str, threads: usize) -> Result<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(move |i| format!("{name}-{i}"))
        .build()
        .map_err(|e| Error::Spawn(std::io::Error::other(e)))
}

/// What a factory made, as its proving thread reports it.
struct Made {
    name: &'static str,
    evaluates_recorded_constraints: bool,
}

/// Starts proving thread `i`, which makes its backend with `factory` from `key`, reports it
/// (or the factory's error) on the returned receiver, lets go of the key and proves.
fn spawn_proving_thread<B, F>(
    i: usize,
    factory: F,
    key: KeySource,
    ctx: ProvingContext,
) -> Result<(JoinHandle<()>, Receiver<Result<Made>>)>
where
    B: Backend + 'static,
    F: FnOnce(&KeySource) -> Result<B> + Send + 'static,
{
    let (started, made) = crossbeam_channel::bounded(1);
    let thread = std::thread::Builder::new()
        .name(format!("pinprove-prover-{i}"))
        .spawn(move || {
            let backend = factory(&key);
            drop(key);
            match backend {
                Ok(backend) => {
                    let name = backend.name();
                    let evaluates_recorded_constraints = backend.evaluates_recorded_constraints();
                    let _ = started.send(Ok(Made { name, evaluates_recorded_constraints }));
                    proving_loop(backend, i, &ctx);
                }
                Err(e) => {
                    let _ = started.send(Err(e));
                }
            }
        })
        .map_err(Error::Spawn)?;
    Ok((thread, made))
}

/// Allocates up to `partitions` partitions' buffers, as many as the pool's cap allows. A
/// failing allocation ends the prewarm with a warning, not the prover: checkouts fall back.
fn prewarm(pool: &PinnedPool, buffers: &[usize], partition: usize, partitions: usize) {
    let fits = pool.config().max_bytes.saturating_sub(pool.stats().bytes_held) / partition;
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
