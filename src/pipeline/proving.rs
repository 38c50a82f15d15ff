//! The proving loop: one per device, on a thread of its own that owns the backend. It takes
//! one partition at a time (partitions a failing device gave back first), runs the h stage
//! and the MSMs, returns the buffers, and hands the proof's assembly and verification to the
//! compute pool so that the device can take the next partition at once.
//!
//! A device fault takes the device out of service (see the [module docs](super)); what the
//! loop does next is decided in one place, [`after_fault`].

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use crossbeam_channel::{select, Receiver, Sender};

use super::jobs::{Partition, ProverState, Reply};
use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::groth16::{assemble, verify_proof, KeyShape, MsmSums, PreparedVerifyingKey};
use crate::timings::PartitionTimings;

/// What every proving thread of a prover is given.
#[derive(Clone)]
pub(super) struct ProvingContext {
    /// What the prover keeps of its key: the verifying key assembles the proofs.
    pub(super) shape: Arc<KeyShape>,
    /// `Some` when proofs are verified before they are returned.
    pub(super) pvk: Option<Arc<PreparedVerifyingKey>>,
    pub(super) compute: Arc<rayon::ThreadPool>,
    pub(super) shared: Arc<ProverState>,
    /// The synthesized partitions, and those a failing device gave back (unbounded, so giving
    /// one back never blocks), which go first.
    pub(super) queue: Receiver<Partition>,
    pub(super) retry: (Sender<Partition>, Receiver<Partition>),
    pub(super) stop: Receiver<()>,
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

    /// Answers a job: an error at once; MSM sums on the compute pool, which assembles the
    /// proof and verifies it, so the device need not wait for the proof's scalar
    /// multiplications (0.65 ms on a 2-core CI machine; a 2^18 partition's device time is
    /// 19 ms on the H200).
    fn answer(
        &self,
        result: Result<MsmSums>,
        inputs: Vec<blstrs::Scalar>,
        (r, s): (blstrs::Scalar, blstrs::Scalar),
        mut t: PartitionTimings,
        reply: Reply,
    ) {
        let sums = match result {
            Ok(sums) => sums,
            Err(e) => {
                self.shared.timings.lock().push(t);
                return reply.answer(Err(e));
            }
        };
        let (shape, pvk, shared) = (Arc::clone(&self.shape), self.pvk.clone(), Arc::clone(&self.shared));
        self.compute.spawn(move || {
            let start = Instant::now();
            let proof = assemble(&shape.vk, &sums, r, s);
            t.assemble = start.elapsed();
            let verdict = pvk.map(|pvk| {
                let start = Instant::now();
                let valid = verify_proof(&pvk, &proof, &inputs);
                t.verify = start.elapsed();
                valid
            });
            let answer = match verdict {
                None | Some(Ok(true)) => Ok(proof), // unchecked when verification is off
                Some(Ok(false)) => Err(Error::ProofInvalid { job: t.job, recorded: shape.recording.is_some() }),
                Some(Err(e)) => Err(e),
            };
            shared.timings.lock().push(t);
            reply.answer(answer);
        });
    }

    /// Closes every partition still queued or given back.
    fn close_queued(&self) {
        while let Ok(partition) = self.retry.1.try_recv().or_else(|_| self.queue.try_recv()) {
            partition.close();
        }
    }
}

/// What a proving thread does after a partition's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    /// Take the next partition.
    Serve,
    /// Leave service and hand the partition, unanswered, to the devices left.
    GiveBack,
    /// Leave service, answering the partition with its error; `last` when no device is left.
    Retire { last: bool },
}

/// Device faults a partition may meet before it is answered with its error: after a fault
/// on one device, a second on another says that the partition (a circuit that trips the
/// backend), not the devices, is at fault; the device stays in service. So one bad
/// partition retires at most one device.
const PARTITION_DEVICE_FAULTS: u32 = 2;

/// The one decision a fault forces (see the module docs): a device fault takes this device
/// out of service, unless it is the partition's last allowed ([`PARTITION_DEVICE_FAULTS`]);
/// its partition goes to another device when there is one, the prover is not stopping, and
/// the backend left the witness as synthesis wrote it.
fn after_fault(
    result: &Result<MsmSums>,
    leaves_witness_intact: bool,
    earlier_faults: u32,
    shared: &ProverState,
) -> Next {
    if !result.as_ref().is_err_and(Error::is_device_fault) || earlier_faults + 1 >= PARTITION_DEVICE_FAULTS {
        return Next::Serve;
    }
    let left = shared.serving.fetch_sub(1, Ordering::AcqRel) - 1;
    if left > 0 && leaves_witness_intact && !shared.stopped() {
        Next::GiveBack
    } else {
        Next::Retire { last: left == 0 }
    }
}

/// The proving thread: one partition at a time until told to stop, or until its device
/// faults (see the module docs).
pub(super) fn proving_loop<B: Backend>(mut backend: B, device: usize, ctx: &ProvingContext) {
    let shared = &ctx.shared;
    let mut idle_since = Instant::now();
    let mut queue_open = true;
    let mut last = false;
    while let Some(partition) = ctx.next(&mut queue_open) {
        if shared.stopped() {
            partition.close();
            continue;
        }
        let Partition { mut witness, r, s, timings: synthesized, sent_at, reply, device_faults } = partition;
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
            backend.h(&mut witness, &mut t)?;
            backend.msm(&witness, &mut t)
        }))
        .unwrap_or_else(|panic| Err(Error::BackendPanicked(Error::panic_message(panic))));
        let next = after_fault(&result, backend.leaves_witness_intact(), device_faults, shared);
        if let (Err(e), Next::Serve, true) = (&result, next, device_faults > 0) {
            log::warn!(
                "job {} faulted on a second device ({e}): answered with its error; device {device} serves on",
                t.job
            );
        }
        if let (Err(e), true) = (&result, next != Next::Serve) {
            let left = shared.serving.load(Ordering::Acquire);
            let passed = if next == Next::GiveBack { ", which take its partition" } else { "" };
            log::error!(
                "device {device} ({}) out of service after a fault on job {}: {e}; {left} device(s) left{passed}",
                backend.name(),
                t.job,
            );
        }
        match next {
            Next::GiveBack => {
                let reply = reply.unclaim();
                let sent_at = Instant::now();
                let partition =
                    Partition { witness, r, s, timings: synthesized, sent_at, reply, device_faults: device_faults + 1 };
                // This context holds a receiver too: the send cannot fail.
                let _ = ctx.retry.0.send(partition);
                break;
            }
            Next::Serve | Next::Retire { .. } => {
                let inputs = witness.public_inputs().to_vec();
                // Buffers go back before the caller hears, so a finished batch sees a balanced pool.
                drop(witness);
                t.proving = start.elapsed();
                ctx.answer(result, inputs, (r, s), t, reply);
            }
        }
        if let Next::Retire { last: no_device_left } = next {
            last = no_device_left;
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
