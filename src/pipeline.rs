//! The `Prover`: rayon synthesis workers feeding ONE proving (GPU) thread per backend through a
//! bounded crossbeam channel, whose capacity `max_gpu_queue_depth` is the dispatch throttle.
//!
//! ```text
//! submit ─► synthesis pool: checkout a/b/c ─► synthesize into them ─► send(Partition)
//!                                           bounded channel (send blocks when full)
//!           proving thread: h stage ─► MSMs ─► assemble ─► buffers back ─► reply to the job
//! ```
//! A worker blocked in `send` keeps its partition, so at most
//! `synthesis_threads + max_gpu_queue_depth + proving threads` partitions hold buffers at any
//! time, and that is also the pool's steady-state size. Synthesis runs on its own thread
//! pool, never the global one that the CPU kernels use: workers blocked in `send` must not be
//! the threads the proving thread's parallel loops wait for.
//!
//! Nothing is lost on any path: a failing or panicking circuit answers its own job with an
//! error, its buffers are back in the pool before the answer is sent, and the other jobs go on.
//! A backend that returns an error fails that partition only. A backend that *panics* retires
//! its proving thread, since a device in an unknown state cannot be trusted with the next
//! partition; when no proving thread is left the prover is [failed](Prover::is_failed): the
//! last one stays behind only to answer every queued and later job with
//! [`Error::PipelineClosed`] (a bounded crossbeam channel keeps queued messages, and their
//! buffers, when its receivers go away; see crossbeam-rs/crossbeam#1102). A failed prover
//! does not restart: build a new one. Dropping a prover answers the jobs not yet proved with
//! `PipelineClosed` and waits only for the partitions already on a device.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use bellpepper_core::Circuit;
use blstrs::Scalar;
use crossbeam_channel::{Receiver, SendError, Sender};
use ff::Field;
use parking_lot::Mutex;
use rand_core::OsRng;

use crate::backend::{Backend, CpuBackend};
use crate::error::{Error, Result};
use crate::groth16::{prover::assemble, Proof, ProvingKey};
use crate::pool::{PinnedPool, PoolConfig};
use crate::synth::{synthesize, Witness};
use crate::timings::PartitionTimings;

/// Settings of a [`Prover`]. Library code reads no environment variables: everything is here.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Config {
    /// Threads of the prover's own synthesis pool (default: the machine's parallelism).
    pub synthesis_threads: usize,
    /// Capacity of the channel to the proving thread(s): synthesized partitions that may wait
    /// for the device. When full, workers block: the dispatch throttle. 0 is a rendezvous.
    pub max_gpu_queue_depth: usize,
    /// The a/b/c pool's limits (for [`Prover::new`]; [`Prover::with_backends`] takes a pool).
    pub pool: PoolConfig,
    /// a/b/c triples to allocate before the first job; `None`: as many as can be in flight
    /// ([`Prover::max_in_flight`]), as far as the pool's cap allows.
    pub prewarm_partitions: Option<usize>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            synthesis_threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            max_gpu_queue_depth: 2,
            pool: PoolConfig::default(),
            prewarm_partitions: None,
        }
    }
}

/// A synthesized circuit on its way to a proving thread.
struct Partition {
    witness: Witness,
    r: Scalar,
    s: Scalar,
    timings: PartitionTimings,
    sent_at: Instant,
    reply: Sender<Result<Proof>>,
}

impl Partition {
    /// Answers the job unproved; the buffers go back first.
    fn close(self) {
        let Partition { witness, reply, .. } = self;
        drop(witness);
        let _ = reply.send(Err(Error::PipelineClosed));
    }
}

/// What the prover's handle, its workers and its proving threads share.
#[derive(Debug, Default)]
struct Shared {
    timings: Mutex<Vec<PartitionTimings>>,
    /// Set by `Drop`: jobs not yet proved are answered `PipelineClosed`.
    closing: AtomicBool,
    /// Set when the last proving thread retired: nothing can be proved any more.
    failed: AtomicBool,
    /// Proving threads still serving.
    serving: AtomicUsize,
}

impl Shared {
    fn stopped(&self) -> bool {
        self.closing.load(Ordering::Acquire) || self.failed.load(Ordering::Acquire)
    }
}

/// The answer to one submitted job, to be waited for.
#[derive(Debug)]
pub struct PendingProof {
    job: u64,
    reply: Receiver<Result<Proof>>,
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
        self.reply.recv().unwrap_or(Err(Error::PipelineClosed))
    }
}

/// Proves circuits of one proving key: synchronous to call, pipelined inside.
///
/// # Examples
/// ```
/// use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
/// use blstrs::Scalar;
/// use ff::Field;
/// use pinprove::{groth16, Config, Prover};
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
/// assert_eq!(pool.checkouts, pool.checkins); // every a/b/c buffer is back
/// # Ok::<(), pinprove::Error>(())
/// ```
pub struct Prover {
    key: Arc<ProvingKey>,
    pool: PinnedPool,
    synthesis: rayon::ThreadPool,
    /// `Some` until drop, which closes the channel by dropping it.
    jobs: Option<Sender<Partition>>,
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

impl Prover {
    /// A prover on the CPU backend with a heap pool of `config.pool`.
    ///
    /// # Errors
    /// As [`with_backends`](Self::with_backends).
    pub fn new(key: impl Into<Arc<ProvingKey>>, config: Config) -> Result<Self> {
        let factory = |_: &ProvingKey| Ok(CpuBackend::new());
        Self::with_backends(key, config, PinnedPool::new(config.pool), vec![factory])
    }

    /// A prover with one proving thread per factory (one per device), sharing one channel.
    /// Each factory runs on its own proving thread, so a backend's device context is made and
    /// used on one thread only. a/b/c buffers come from `pool`, prewarmed here.
    ///
    /// # Errors
    /// [`Error::InvalidKey`] for a malformed key; [`Error::Config`] for zero threads or no
    /// factory; the first error a factory returns.
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
        let key = key.into();
        key.validate()?;
        if config.synthesis_threads == 0 {
            return Err(Error::Config("synthesis_threads must be at least 1"));
        }
        if factories.is_empty() {
            return Err(Error::Config("at least one backend is needed"));
        }
        let max_in_flight = config.synthesis_threads + config.max_gpu_queue_depth + factories.len();
        prewarm(&pool, &key, config.prewarm_partitions.unwrap_or(max_in_flight));

        let (jobs, queue) = crossbeam_channel::bounded::<Partition>(config.max_gpu_queue_depth);
        let shared = Arc::new(Shared { serving: AtomicUsize::new(factories.len()), ..Shared::default() });
        let mut proving_threads = Vec::with_capacity(factories.len());
        let mut backend = "";
        for (i, factory) in factories.into_iter().enumerate() {
            let (started, start_result) = crossbeam_channel::bounded(1);
            let (key, queue, shared) = (Arc::clone(&key), queue.clone(), Arc::clone(&shared));
            let thread = std::thread::Builder::new()
                .name(format!("pinprove-gpu-{i}"))
                .spawn(move || match factory(&key) {
                    Ok(backend) => {
                        let _ = started.send(Ok(backend.name()));
                        proving_loop(backend, &key, &queue, &shared);
                    }
                    Err(e) => {
                        let _ = started.send(Err(e));
                    }
                })
                .map_err(|_| Error::Config("could not spawn a proving thread"))?;
            proving_threads.push(thread);
            // On an error, dropping `jobs` below ends the threads already started.
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
            proving_threads,
            backend,
            shared,
            next_job: AtomicU64::new(0),
            max_in_flight,
        })
    }

    /// Proves each circuit with fresh random r, s; answers in submission order.
    ///
    /// # Errors
    /// [`Error::EmptyBatch`] for no circuits; each job's own failure is its entry's `Err`.
    pub fn prove<C>(&self, circuits: Vec<C>) -> Result<Vec<Result<Proof>>>
    where
        C: Circuit<Scalar> + Send + 'static,
    {
        let jobs = circuits.into_iter().map(|c| (c, Scalar::random(OsRng), Scalar::random(OsRng))).collect();
        self.prove_with_randomness(jobs)
    }

    /// Proves each `(circuit, r, s)` with the given blinding factors (deterministic proofs, as
    /// bellperson's `create_proof(circuit, params, r, s)`); answers in submission order.
    ///
    /// # Errors
    /// [`Error::EmptyBatch`] for no jobs; each job's own failure is its entry's `Err`.
    pub fn prove_with_randomness<C>(&self, jobs: Vec<(C, Scalar, Scalar)>) -> Result<Vec<Result<Proof>>>
    where
        C: Circuit<Scalar> + Send + 'static,
    {
        if jobs.is_empty() {
            return Err(Error::EmptyBatch);
        }
        let pending: Vec<PendingProof> = jobs.into_iter().map(|(c, r, s)| self.submit(c, r, s)).collect();
        Ok(pending.into_iter().map(PendingProof::wait).collect())
    }

    /// Queues one job and returns at once; the streaming form of [`prove`](Self::prove).
    pub fn submit<C>(&self, circuit: C, r: Scalar, s: Scalar) -> PendingProof
    where
        C: Circuit<Scalar> + Send + 'static,
    {
        let job = self.next_job.fetch_add(1, Ordering::Relaxed);
        let (reply, answer) = crossbeam_channel::bounded(1);
        let jobs = self.jobs.clone().expect("the channel lives as long as the prover");
        let (key, pool, shared) = (Arc::clone(&self.key), self.pool.clone(), Arc::clone(&self.shared));
        self.synthesis.spawn(move || {
            if shared.stopped() {
                return drop(reply.send(Err(Error::PipelineClosed)));
            }
            let start = Instant::now();
            let witness = match catch_unwind(AssertUnwindSafe(|| synthesize(circuit, &key, &pool))) {
                Ok(Ok(witness)) => witness,
                // The witness, if any, was dropped while unwinding: its buffers are back.
                Ok(Err(e)) => return drop(reply.send(Err(e))),
                Err(panic) => return drop(reply.send(Err(Error::from_panic(panic)))),
            };
            let timings = PartitionTimings {
                job,
                synthesis: start.elapsed(),
                pinned: witness.abc.is_pinned(),
                ..Default::default()
            };
            let partition = Partition { witness, r, s, timings, sent_at: Instant::now(), reply };
            if let Err(SendError(partition)) = jobs.send(partition) {
                partition.close();
            }
        });
        PendingProof { job, reply: answer }
    }

    /// Timings of the partitions proved since the last call, in completion order.
    pub fn take_timings(&self) -> Vec<PartitionTimings> {
        std::mem::take(&mut *self.shared.timings.lock())
    }

    /// Whether every proving thread has retired after a backend panic: every job is now
    /// answered [`Error::PipelineClosed`], and a new prover is needed.
    pub fn is_failed(&self) -> bool {
        self.shared.failed.load(Ordering::Acquire)
    }

    /// The a/b/c pool, for its [`stats`](PinnedPool::stats) or [`shrink`](PinnedPool::shrink).
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

    /// Most partitions that can hold a/b/c buffers at once: synthesis threads + queue depth +
    /// proving threads.
    pub fn max_in_flight(&self) -> usize {
        self.max_in_flight
    }
}

impl Drop for Prover {
    /// Answers the jobs not yet proved with [`Error::PipelineClosed`], closes the channel and
    /// waits for the proving threads, which finish only the partitions already on a device.
    fn drop(&mut self) {
        self.shared.closing.store(true, Ordering::Release);
        self.jobs = None;
        for thread in self.proving_threads.drain(..) {
            if thread.join().is_err() {
                log::error!("a pinprove proving thread panicked");
            }
        }
    }
}

/// Allocates up to `partitions` a/b/c triples, as many as the pool's cap allows. A failing
/// allocation ends the prewarm with a warning, not the prover: checkouts fall back instead.
fn prewarm(pool: &PinnedPool, key: &ProvingKey, partitions: usize) {
    let bytes = key.abc_buffer_bytes();
    let fits = pool.config().max_bytes.saturating_sub(pool.stats().bytes_pinned) / (3 * bytes);
    if fits < partitions {
        log::warn!("pool cap allows prewarming {fits} of {partitions} a/b/c triples of {bytes} bytes");
    }
    if let Err(e) = pool.prewarm(3 * partitions.min(fits), bytes) {
        log::warn!("prewarm stopped at {} buffers: {e}", pool.stats().allocations);
    }
}

/// The proving thread: one partition at a time until every sender is gone, or until the
/// backend panics (see the module docs).
fn proving_loop<B: Backend>(mut backend: B, key: &ProvingKey, queue: &Receiver<Partition>, shared: &Shared) {
    let mut idle_since = Instant::now();
    let mut retired = false;
    for partition in queue.iter() {
        if shared.stopped() {
            partition.close();
            continue;
        }
        let Partition { mut witness, r, s, timings: mut t, sent_at, reply } = partition;
        let start = Instant::now();
        t.queue_wait = start - sent_at;
        t.input_wait = start - idle_since;
        let result = catch_unwind(AssertUnwindSafe(|| -> Result<Proof> {
            backend.h(key, &mut witness, &mut t)?;
            let sums = backend.msm(key, &witness, &mut t)?;
            Ok(assemble(&key.vk, &sums, r, s))
        }))
        .unwrap_or_else(|panic| {
            retired = true;
            Err(Error::from_panic(panic))
        });
        // Buffers go back before the caller hears, so a finished batch sees a balanced pool.
        drop(witness);
        t.gpu_busy = start.elapsed();
        shared.timings.lock().push(t);
        let _ = reply.send(result);
        if retired {
            break;
        }
        idle_since = Instant::now();
    }
    drop(backend);
    if retired {
        log::error!("a pinprove proving thread retired after its backend panicked");
        if shared.serving.fetch_sub(1, Ordering::AcqRel) == 1 {
            shared.failed.store(true, Ordering::Release);
            log::error!("no proving thread left: the prover has failed; queued and later jobs are closed");
            // Stay until every sender is gone, answering whatever still arrives.
            queue.iter().for_each(Partition::close);
        }
    }
}
