//! What the proving thread runs on each partition, behind one trait, so the pipeline never
//! names a backend: the CPU backend here is the reference; the CUDA backend implements the same
//! trait.

mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;

pub use cpu::CpuBackend;

use crate::error::Result;
use crate::groth16::prover::MsmSums;
use crate::groth16::ProvingKey;
use crate::synth::Witness;
use crate::timings::PartitionTimings;

/// The heavy stages of one partition, driven by one proving thread that owns the backend
/// (for a GPU: its context, streams and device memory).
///
/// The proving thread calls [`h`](Self::h) and then [`msm`](Self::msm) for the same witness,
/// so a backend may keep h on its device between the two. Each stage adds its durations to
/// `t`. A backend is built on its proving thread, so it need not be `Send`.
pub trait Backend {
    /// A short name for logs and reports.
    fn name(&self) -> &'static str;

    /// The h stage: from a/b/c (length m) to the coefficients of h = (a·b − c)/Z. Host-side,
    /// `witness.abc.a[..m-1]` holds h afterwards, or the backend keeps h for `msm`.
    ///
    /// # Errors
    /// [`Error::Backend`](crate::Error::Backend) when the device fails.
    fn h(&mut self, key: &ProvingKey, witness: &mut Witness, t: &mut PartitionTimings) -> Result<()>;

    /// The five MSMs of the partition (H, L, A, B in G1, B in G2).
    ///
    /// # Errors
    /// [`Error::Backend`](crate::Error::Backend) when the device fails.
    fn msm(&mut self, key: &ProvingKey, witness: &Witness, t: &mut PartitionTimings) -> Result<MsmSums>;
}
