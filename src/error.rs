//! The crate's single error type.
//!
//! Every failure a caller can cause or meet (bad input, a circuit that fails or panics, a pool
//! too small, a pipeline that went away) is a variant with the data needed to act on it. Panics
//! are kept for broken internal invariants only.

use bellpepper_core::SynthesisError;

/// Everything that can go wrong in pinprove.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A request can never be served by the pool: it is larger than the pool's byte cap.
    #[error("pool cap of {capacity} bytes is smaller than the {requested} bytes requested")]
    PoolTooSmall {
        /// Bytes asked for (for a/b/c: all three together).
        requested: usize,
        /// The pool's configured cap.
        capacity: usize,
    },
    /// Host memory could not be had at all: not from the pool and not from the heap fallback.
    #[error("could not allocate {requested} bytes of host memory")]
    OutOfMemory {
        /// Bytes asked for.
        requested: usize,
    },
    /// An input does not have the size the proving key (or another input) says it must.
    #[error("{what}: expected {expected}, got {got}")]
    Shape {
        /// What was measured.
        what: &'static str,
        /// The size required.
        expected: usize,
        /// The size found.
        got: usize,
    },
    /// A proving key breaks an invariant the prover relies on.
    #[error("invalid proving key: {0}")]
    InvalidKey(&'static str),
    /// A configuration value is unusable (for example zero synthesis threads); the message
    /// names the setting and, where it is a bound, the numbers.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// A thread of the prover (a proving thread, or a pool's worker) could not be started.
    #[error("could not start a thread: {0}")]
    Spawn(#[source] std::io::Error),
    /// `prove` was given no circuits.
    #[error("empty batch: no circuits to prove")]
    EmptyBatch,
    /// The circuit enforced no constraints of its own.
    #[error("circuit has no constraints")]
    NoConstraints,
    /// The circuit's `synthesize` returned an error.
    #[error("synthesis failed: {0}")]
    Synthesis(#[from] SynthesisError),
    /// A user circuit panicked during synthesis; the message is kept when it was a string.
    #[error("worker panicked: {0}")]
    WorkerPanicked(String),
    /// The backend panicked on this job's partition; its device was taken out of service (see
    /// [`Prover`](crate::Prover)). The message is kept when it was a string.
    #[error("backend panicked: {0}")]
    BackendPanicked(String),
    /// The proof did not verify against the key's verifying key and the job's public inputs:
    /// the circuit's constraints differ from the key's, or its witness does not satisfy them.
    #[error("the proof of job {job} does not verify: {}", proof_invalid_cause(*recorded))]
    ProofInvalid {
        /// The job's submission number.
        job: u64,
        /// Whether the key has recorded constraints ([`R1cs`](crate::R1cs)), which the
        /// circuit may not match although its counts do.
        recorded: bool,
    },
    /// The proving thread is gone (it failed or the prover was dropped); the job was not proved.
    #[error("pipeline closed: the proving thread is no longer running")]
    PipelineClosed,
    /// Bytes that do not decode to what they should: a truncated or corrupted proof or
    /// parameter file, a point off its curve or outside its subgroup.
    #[error("{what} at byte {offset}: {reason}")]
    Decode {
        /// What was being read, e.g. `proof point B` or `b_g2[17]`.
        what: String,
        /// Offset of the item in the input.
        offset: u64,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// Reading or writing a parameter file failed below the format: the reader or writer
    /// itself returned an error (a file cut short is [`Error::Decode`]).
    #[error("parameter file I/O: {0}")]
    Io(#[from] std::io::Error),
    /// A CUDA driver call failed.
    #[error("CUDA error {code}: {msg}")]
    Cuda {
        /// The driver's `CUresult`.
        code: i32,
        /// The driver's description.
        msg: String,
    },
    /// Device memory ran out: the device (or the memory limit it was opened with,
    /// `CudaDevice::with_memory_limit`) cannot hold what was asked for: a partition's buffers,
    /// an MSM's scratch, the kernels or a stream. Not a [device fault](Error::is_device_fault):
    /// the device stays in service.
    #[error("device out of memory: {requested} bytes requested")]
    DeviceOutOfMemory {
        /// Bytes asked for; under a memory limit, all the backend would hold; 0 when the
        /// driver did not say.
        requested: usize,
    },
    /// A size the device's kernels cannot take (their grids and 32-bit indices): a key whose
    /// MSMs or domain are too large for the kernels, found when the backend is made.
    #[error("{what}: {got} exceeds the kernels' limit of {limit}")]
    DeviceLimit {
        /// What is too large.
        what: &'static str,
        /// The most the kernels take.
        limit: usize,
        /// What was asked for.
        got: usize,
    },
    /// A file's digest is not the one it was expected to have: not the file a manifest
    /// describes (filecoin-proofs' `parameters.json`), or damaged.
    #[error("the file's digest is {got}, not the expected {expected}: another file, or a damaged one")]
    Digest {
        /// The digest asked for.
        expected: String,
        /// The file's, as many hex digits as the expected one has.
        got: String,
    },
    /// There is no CUDA device with this ordinal (or no CUDA device at all).
    #[error("no CUDA device {id}")]
    NoDevice {
        /// The ordinal asked for.
        id: u32,
    },
    /// The backend (CPU kernels or GPU) failed on a partition.
    #[error("backend failed: {0}")]
    Backend(String),
}

/// `Result` with [`Error`].
pub type Result<T> = core::result::Result<T, Error>;

impl Error {
    /// Whether the error says the device itself failed (a driver error, a backend panic),
    /// rather than the one partition: the prover then takes that device out of service.
    pub fn is_device_fault(&self) -> bool {
        matches!(self, Error::Cuda { .. } | Error::BackendPanicked(_))
    }

    /// [`Error::Shape`] for the first of `checks` (what, expected, got) whose counts differ.
    pub(crate) fn first_shape_mismatch(checks: impl IntoIterator<Item = (&'static str, usize, usize)>) -> Result<()> {
        match checks.into_iter().find(|(_, expected, got)| expected != got) {
            Some((what, expected, got)) => Err(Error::Shape { what, expected, got }),
            None => Ok(()),
        }
    }

    /// The message of a `catch_unwind` payload, when it was a string.
    pub(crate) fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
        match payload.downcast::<String>() {
            Ok(s) => *s,
            Err(payload) => match payload.downcast::<&'static str>() {
                Ok(s) => (*s).to_owned(),
                Err(_) => "non-string panic payload".to_owned(),
            },
        }
    }
}

/// What a proof that does not verify tells: the circuit against the key, or against the key's
/// recording when it has one.
fn proof_invalid_cause(recorded: bool) -> &'static str {
    if recorded {
        "the circuit's constraints differ from the key's recorded constraints (a recording of another \
         circuit, or a circuit changed since it was recorded), or its witness is unsatisfied"
    } else {
        "the circuit does not match the key or its witness is unsatisfied"
    }
}
