//! A job's life outside the proving loop: its answer, owed exactly once ([`Reply`], the
//! registry in [`ProverState`]), the [`PendingProof`] its caller waits on, and the [`Partition`]
//! that carries its witness to a proving thread.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use blstrs::Scalar;
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TryRecvError};
use parking_lot::{Condvar, Mutex};

use crate::error::{Error, Result};
use crate::groth16::Proof;
use crate::synth::Witness;
use crate::timings::PartitionTimings;

/// A job's answer, owed exactly once. While the job is queued or in synthesis the answer's
/// sender sits in the prover's registry, so that an abort can answer it at once; a proving
/// thread [claims](Reply::claim) it when the partition goes to the device. Dropped unanswered,
/// it answers [`Error::PipelineClosed`].
pub(super) struct Reply {
    pub(super) job: u64,
    /// `Some` once claimed out of the registry.
    claimed: Option<Sender<Result<Proof>>>,
    shared: Arc<ProverState>,
}

impl Reply {
    /// An unclaimed reply: the job's sender is in `shared`'s registry.
    pub(super) fn new(job: u64, shared: Arc<ProverState>) -> Self {
        Reply { job, claimed: None, shared }
    }

    /// Takes the sender out of the registry; `None` when the job was already answered.
    pub(super) fn claim(mut self) -> Option<Self> {
        let sender = self.shared.pending.lock().remove(&self.job)?;
        self.claimed = Some(sender);
        Some(self)
    }

    pub(super) fn answer(mut self, result: Result<Proof>) {
        self.send(result);
    }

    /// Puts a claimed sender back in the registry: the job goes back in line unanswered.
    pub(super) fn unclaim(mut self) -> Self {
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
pub(super) struct Partition {
    pub(super) witness: Witness,
    pub(super) r: Scalar,
    pub(super) s: Scalar,
    pub(super) timings: PartitionTimings,
    pub(super) sent_at: Instant,
    pub(super) reply: Reply,
    /// Device faults it met (on devices it was given back from).
    pub(super) device_faults: u32,
}

impl Partition {
    /// Answers the job unproved; the buffers go back first.
    pub(super) fn close(self) {
        let Partition { witness, reply, .. } = self;
        drop(witness);
        reply.answer(Err(Error::PipelineClosed));
    }
}

/// What the prover's handle, its workers and its proving threads share.
pub(super) struct ProverState {
    /// When the prover was made: the origin of the timings' `synthesis_start` and
    /// `proving_start`.
    pub(super) epoch: Instant,
    pub(super) timings: Mutex<Vec<PartitionTimings>>,
    /// The answer senders of jobs not yet answered nor claimed by a proving thread.
    pub(super) pending: Mutex<HashMap<u64, Sender<Result<Proof>>>>,
    /// Jobs submitted and not yet answered, for `shutdown` to wait on.
    pub(super) unanswered: Mutex<usize>,
    pub(super) all_answered: Condvar,
    /// Set by `abort`: jobs not yet on a device are answered `PipelineClosed`.
    pub(super) closing: AtomicBool,
    /// Set when the last proving thread retired: nothing can be proved any more.
    pub(super) failed: AtomicBool,
    /// Proving threads still serving: a thread leaves service only after a device fault.
    pub(super) serving: AtomicUsize,
}

impl ProverState {
    pub(super) fn new(proving_threads: usize) -> Self {
        ProverState {
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

    pub(super) fn stopped(&self) -> bool {
        self.closing.load(Ordering::Acquire) || self.failed.load(Ordering::Acquire)
    }

    pub(super) fn answered(&self) {
        let mut unanswered = self.unanswered.lock();
        *unanswered -= 1;
        if *unanswered == 0 {
            self.all_answered.notify_all();
        }
    }

    /// Answers every job still in the registry with `PipelineClosed`.
    pub(super) fn close_pending(&self) {
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
    pub(super) job: u64,
    answer: Receiver<Result<Proof>>,
}

impl PendingProof {
    pub(super) fn new(job: u64, answer: Receiver<Result<Proof>>) -> Self {
        PendingProof { job, answer }
    }

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
