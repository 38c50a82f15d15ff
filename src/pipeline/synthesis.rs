//! The synthesis task of one job, on the prover's synthesis pool: checkout, synthesize,
//! send to the proving threads (blocking while the channel is full: the dispatch throttle),
//! or answer the job when it fails.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Instant;

use bellpepper_core::Circuit;
use blstrs::Scalar;
use crossbeam_channel::{SendError, Sender};

use super::jobs::{Partition, ProverState, Reply};
use crate::error::Error;
use crate::groth16::KeyShape;
use crate::pool::PinnedPool;
use crate::synth::{synthesize_into, synthesize_witness_to};
use crate::timings::PartitionTimings;

/// What a synthesis task needs, cloned per job.
pub(super) struct SynthesisContext {
    pub(super) shape: Arc<KeyShape>,
    pub(super) pool: PinnedPool,
    pub(super) shared: Arc<ProverState>,
    pub(super) jobs: Sender<Partition>,
    /// Synthesize the witness alone (the backends evaluate the key's recorded constraints).
    pub(super) witness_only: bool,
}

impl SynthesisContext {
    /// Synthesizes `circuit` and sends the partition to the proving threads, or answers the job.
    pub(super) fn run<C: Circuit<Scalar>>(self, circuit: C, r: Scalar, s: Scalar, reply: Reply) {
        if self.shared.stopped() {
            return reply.answer(Err(Error::PipelineClosed));
        }
        let start = Instant::now();
        let synthesis_worker = rayon::current_thread_index().unwrap_or(0);
        let synthesized = catch_unwind(AssertUnwindSafe(|| match (&self.shape.recording, self.witness_only) {
            (Some(recording), true) => synthesize_witness_to(circuit, recording, &self.pool),
            _ => synthesize_into(circuit, &self.shape, &self.pool),
        }));
        let witness = match synthesized {
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
            witness_bytes: witness.host_bytes(),
            ..Default::default()
        };
        let partition = Partition { witness, r, s, timings, sent_at: Instant::now(), reply, device_faults: 0 };
        if let Err(SendError(partition)) = self.jobs.send(partition) {
            partition.close();
        }
    }
}
