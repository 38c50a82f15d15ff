//! Per-partition timings, the pipeline's measure of where time goes.
//!
//! The synthesis workers fill the first fields, the proving thread the wait and busy times
//! (after the source system's barrier_wait_ms and mutex_held_ms), and the backend its stages.

use std::time::Duration;

/// Where one partition's time went. Stages a backend does not have stay zero (the CPU
/// backend has no host-to-device copy).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PartitionTimings {
    /// Submission order of the job, from 0 per prover.
    pub job: u64,
    /// Checkout of a/b/c plus the circuit's synthesis, on a synthesis thread.
    pub synthesis: Duration,
    /// From the end of synthesis to the proving thread taking the partition; includes the time
    /// the worker was blocked by the dispatch throttle (a full channel).
    pub queue_wait: Duration,
    /// How long the proving thread sat idle waiting for this partition (the source system's
    /// barrier_wait): time the device had no work.
    pub input_wait: Duration,
    /// Host-to-device copies of a/b/c.
    pub h2d: Duration,
    /// The h stage: NTTs and the pointwise (a·b − c)/Z.
    pub ntt: Duration,
    /// The multi-scalar multiplications.
    pub msm: Duration,
    /// Wall time the proving thread spent on this partition, all stages and checkin included.
    pub gpu_busy: Duration,
    /// Whether a/b/c were pinned (false for the CPU backend's heap pool and for fallbacks).
    pub pinned: bool,
}

impl PartitionTimings {
    /// Sums of each duration over `timings`, with `job` set to the number of partitions.
    pub fn total<'a>(timings: impl IntoIterator<Item = &'a PartitionTimings>) -> PartitionTimings {
        timings.into_iter().fold(PartitionTimings::default(), |acc, t| PartitionTimings {
            job: acc.job + 1,
            synthesis: acc.synthesis + t.synthesis,
            queue_wait: acc.queue_wait + t.queue_wait,
            input_wait: acc.input_wait + t.input_wait,
            h2d: acc.h2d + t.h2d,
            ntt: acc.ntt + t.ntt,
            msm: acc.msm + t.msm,
            gpu_busy: acc.gpu_busy + t.gpu_busy,
            pinned: acc.pinned || t.pinned,
        })
    }
}
