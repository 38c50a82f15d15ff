//! The settings of a [`Prover`](crate::Prover), and their ranges.

use crate::error::{Error, Result};
use crate::pool::PoolConfig;

/// Most threads of either of a prover's pools (synthesis, compute).
pub const MAX_THREADS: usize = 1024;
/// Most partitions the channel may hold (each holds a partition's buffers).
pub const MAX_QUEUE_DEPTH: usize = 1024;

/// Settings of a [`Prover`](crate::Prover). Library code reads no environment variables:
/// everything is here.
///
/// The threads a prover runs: `synthesis_threads` (circuits), `compute_threads` (the CPU
/// backend's h stage, the start of its five MSMs, each of which runs on blst's own pool of
/// one thread per core, and every proof's assembly and verification) and one proving thread
/// per device. The defaults give both pools every core. On a GPU prover the busy threads are
/// the synthesis threads and the proving threads: the compute pool only assembles and
/// verifies (about 2 ms per proof) and its threads sleep otherwise. On the CPU prover
/// synthesis and proving overlap by design (the pipeline) and share the cores; a smaller
/// compute pool measured slower there (`examples/prove`, 2 cores, 2^14: one compute thread
/// 2.07 and 2.09 proofs/s, two 2.11, 2.18 and 2.19).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Config {
    /// Threads of the prover's own synthesis pool, 1..=[`MAX_THREADS`] (default: the machine's
    /// parallelism).
    pub synthesis_threads: usize,
    /// Threads of the prover's own compute pool, 1..=[`MAX_THREADS`]: the CPU backend's
    /// kernels, and the proofs' assembly and verification (default: the machine's
    /// parallelism).
    pub compute_threads: usize,
    /// Synthesized partitions that may wait for each device, 0..=[`MAX_QUEUE_DEPTH`]: the
    /// channel to the proving threads holds this many per proving thread. When it is full,
    /// workers block: the dispatch throttle. 0 is a rendezvous.
    pub queue_depth_per_device: usize,
    /// The pool's limits (for [`Prover::new`](crate::Prover::new);
    /// [`Prover::with_backends`](crate::Prover::with_backends) takes a pool).
    pub pool: crate::PoolConfig,
    /// Partitions' buffers to allocate before the first job, at most
    /// [`max_in_flight`](crate::Prover::max_in_flight); `None`: that many, as far as the pool's
    /// cap allows.
    pub prewarm_partitions: Option<usize>,
    /// Verify every proof against the key's verifying key before answering its job (default
    /// `true`), so that a circuit that does not match the key, or an unsatisfied witness, is
    /// [`Error::ProofInvalid`] rather than a bad proof. It runs on the compute pool, never on
    /// the proving thread, and costs one pairing check per proof (its time is
    /// [`PartitionTimings::verify`](crate::PartitionTimings::verify)). Turn it off only when
    /// the caller verifies anyway.
    pub verify_proofs: bool,
    /// Refuse to start ([`Error::Config`](crate::Error::Config)) unless every partition can be
    /// proven witness-only: the key has [recorded constraints](crate::R1cs) and every backend
    /// evaluates them (a device does when they fit beside the key's bases, streamed or not).
    /// Default `false`: a prover that cannot synthesizes every circuit in full, logged and
    /// told by [`Prover::is_witness_only`](crate::Prover::is_witness_only); at Filecoin's
    /// sizes that holds hundreds of times the host memory a partition held witness-only.
    pub require_witness_only: bool,
}

impl Default for Config {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Config {
            synthesis_threads: cores,
            compute_threads: cores,
            queue_depth_per_device: 2,
            pool: PoolConfig::default(),
            prewarm_partitions: None,
            verify_proofs: true,
            require_witness_only: false,
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
            return Err(Error::Config("synthesis_threads must be in 1..=MAX_THREADS (1024)".into()));
        }
        if !(1..=MAX_THREADS).contains(&self.compute_threads) {
            return Err(Error::Config("compute_threads must be in 1..=MAX_THREADS (1024)".into()));
        }
        if self.queue_depth_per_device > MAX_QUEUE_DEPTH {
            return Err(Error::Config("queue_depth_per_device must be at most MAX_QUEUE_DEPTH (1024)".into()));
        }
        self.pool.validate()
    }
}
