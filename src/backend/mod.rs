//! What the proving thread runs on each partition, behind one trait, so the pipeline never
//! names a backend: the CPU backend here is the reference; the CUDA backend implements the same
//! trait.

mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;

pub use crate::groth16::MsmSums;
pub use crate::msm::Census;
pub use crate::synth::{Assignment, Evaluated, PackedAux, Witness};
pub use cpu::CpuBackend;

use crate::error::Result;
use crate::timings::PartitionTimings;

/// The heavy stages of one partition, driven by one proving thread that owns the backend
/// (for a GPU: its context, streams and device memory).
///
/// A backend is made for one proving key, by the factory the prover calls on its proving
/// thread ([`Prover::with_backends`](crate::Prover::with_backends)), and keeps what it needs
/// of the key (a device copies the bases, the CPU backend holds the key), so a backend need
/// not be `Send`. The proving thread calls [`h`](Self::h) and then [`msm`](Self::msm) for
/// the same witness, so a backend may keep h on its device between the two. Each stage adds
/// its durations to `t`.
pub trait Backend {
    /// A short name for logs and reports.
    fn name(&self) -> &'static str;

    /// The h stage: from a/b/c (length m; evaluated by synthesis, or by the backend from the
    /// key's recorded constraints) to the coefficients of h = (a·b − c)/Z, which the backend
    /// keeps for `msm`.
    ///
    /// # Errors
    /// [`Error::Backend`](crate::Error::Backend) when the partition fails;
    /// [`Error::Cuda`](crate::Error::Cuda) or a panic when the device does.
    fn h(&mut self, witness: &mut Witness, t: &mut PartitionTimings) -> Result<()>;

    /// Whether a partition this backend failed on still holds the witness as synthesis wrote
    /// it, so that another device can prove it after a [device
    /// fault](crate::Error::is_device_fault). True for a device backend, whose h stage works on
    /// its own copies of a/b/c; false (the default) for one that computes h in place.
    fn leaves_witness_intact(&self) -> bool {
        false
    }

    /// Whether this backend evaluates its key's [recorded constraints](crate::R1cs) itself,
    /// so that partitions may carry the witness alone ([`Assignment::Packed`]). A
    /// prover synthesizes in full unless its key has a recording and every backend does.
    fn evaluates_recorded_constraints(&self) -> bool {
        false
    }

    /// The five MSMs of the partition (H, L, A, B in G1, B in G2).
    ///
    /// # Errors
    /// [`Error::Backend`](crate::Error::Backend) when the partition fails;
    /// [`Error::Cuda`](crate::Error::Cuda) or a panic when the device does.
    fn msm(&mut self, witness: &Witness, t: &mut PartitionTimings) -> Result<MsmSums>;
}
