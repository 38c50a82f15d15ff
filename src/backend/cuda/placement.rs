//! Where a backend keeps the proving key: the device-memory budget it answers to, and the
//! placement policy: the recorded constraints first (resident, or streamed a chunk of rows
//! at a time, with less room for them as long as the bases do not fit beside them), then the
//! bases with their shifted copies, the bases alone, or the bases streamed from pinned host
//! memory in the largest chunk that fits (see [`KeyPlacement`]).

use super::ffi::{from_cust, memory_info, DeviceVec, MsmScratch, G1, G2};
use super::key::{key_bytes, DeviceKey};
use super::msm::plan_window_bits;
use super::r1cs::{device_bytes, streamed_bytes, DeviceR1cs};
use super::{CudaBackend, DeviceScalars, KeyPlacement};
use crate::error::{Error, Result};
use crate::groth16::ProvingKey;

/// The device memory a backend may hold: all the device has, or the device's
/// [memory limit](CudaDevice::with_memory_limit).
#[derive(Debug, Clone, Copy)]
pub(super) struct Budget {
    pub(super) limit: Option<usize>,
    /// Free device memory before the backend allocated anything.
    pub(super) free_at_start: usize,
}

impl Budget {
    /// Whether `more` bytes fit beside what the backend holds: in the device's free memory,
    /// and within the limit.
    ///
    /// # Errors
    /// [`Error::DeviceOutOfMemory`] when they do not.
    pub(super) fn check(&self, more: usize) -> Result<()> {
        let free = memory_info()?.0;
        let held = self.free_at_start.saturating_sub(free);
        if more > free || self.limit.is_some_and(|limit| held + more > limit) {
            return Err(Error::DeviceOutOfMemory { requested: held + more });
        }
        Ok(())
    }
}

/// Fewest points per chunk of streamed bases: below this the chunks' sums would be mostly
/// window tails (a chunk's buckets, 2^(c−1) a window, outnumber its points). Refit with
/// `vs_peer --memory-limit GB`, which forces streaming.
const MIN_CHUNK: usize = 1 << 12;

/// Fewest entries per chunk of streamed recorded constraints: each chunk costs three staged
/// copies and a launch, so smaller ones would be many for little work each. Refit with the GPU test
/// `gpu_recorded_constraints_resident_or_streamed_give_the_cpus_h_and_msm_sums`, which
/// prints the products' device time resident and streamed in chunks of several sizes.
const MIN_R1CS_CHUNK: usize = 1 << 16;

/// How a backend holds the key's recorded constraints, tried in this order, most device
/// memory first: whichever fits and leaves room for the bases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Recording {
    Resident,
    /// In the largest power-of-two chunk that fits.
    Streamed,
    /// In the smallest power-of-two chunk, of at least [`MIN_R1CS_CHUNK`] entries, that
    /// takes the longest row.
    StreamedSmallest,
    /// Not at all: circuits are synthesized in full.
    Absent,
}

impl CudaBackend {
    /// Allocates everything a partition of `key` needs, then places its recorded constraints
    /// (see [`Recording`]) and its bases (see [`KeyPlacement`]).
    pub(super) fn hold(&mut self, key: &ProvingKey) -> Result<()> {
        if key.bases_released() {
            return Err(Error::InvalidKey("the key's bases were released: a backend is made from the whole key"));
        }
        self.domain(key.domain_size())?;
        self.scalars = Some(DeviceScalars {
            aux: DeviceVec::new(key.num_aux())?,
            a: DeviceVec::new(key.a_len())?,
            b: DeviceVec::new(key.b_len())?,
        });
        self.budget.check(0)?;
        let tries = match key.r1cs {
            Some(_) => &[Recording::Resident, Recording::Streamed, Recording::StreamedSmallest, Recording::Absent][..],
            None => &[Recording::Absent][..],
        };
        for (k, &recording) in tries.iter().enumerate() {
            self.r1cs = None;
            self.scratch = MsmScratch::default();
            if !self.hold_r1cs(key, recording)? {
                continue;
            }
            match self.place_bases(key) {
                Err(e @ Error::DeviceOutOfMemory { .. }) if k + 1 < tries.len() => {
                    log::info!("the key's bases do not fit beside its recorded constraints {recording:?} ({e})");
                }
                held => {
                    if recording == Recording::Absent && key.r1cs.is_some() {
                        log::warn!(
                            "the recorded constraints do not fit on the device: circuits are synthesized in full"
                        );
                    }
                    self.key = Some(held?);
                    break;
                }
            }
        }
        self.stream.synchronize().map_err(from_cust)
    }

    /// The bases with their shifted copies, else alone, else streamed (see [`KeyPlacement`]).
    fn place_bases(&mut self, key: &ProvingKey) -> Result<DeviceKey> {
        let held = match self.resident_key(key, true) {
            Err(e @ Error::DeviceOutOfMemory { .. }) => {
                log::info!("the key's shifted bases and their scratch do not fit ({e}): the bases alone");
                self.scratch = MsmScratch::default(); // free the shifted plans' room
                self.resident_key(key, false)
            }
            held => held,
        };
        match held {
            Err(e @ Error::DeviceOutOfMemory { .. }) => {
                log::info!("the key's bases and whole-MSM scratch do not fit ({e}): streaming the bases");
                self.stream_key(key)
            }
            held => held,
        }
    }

    /// The key's recorded constraints held as `recording` says, when it fits: whether they
    /// are (always, for [`Recording::Absent`]).
    fn hold_r1cs(&mut self, key: &ProvingKey, recording: Recording) -> Result<bool> {
        let Some(r1cs) = &key.r1cs else { return Ok(recording == Recording::Absent) };
        if recording == Recording::Absent {
            return Ok(true);
        }
        if recording == Recording::Resident {
            let upload = self
                .budget
                .check(device_bytes(r1cs))
                .and_then(|()| DeviceR1cs::resident(r1cs, &self.stream, &self.staging));
            return match upload {
                Ok(held) => {
                    self.r1cs = Some(held);
                    Ok(true)
                }
                Err(Error::DeviceOutOfMemory { .. }) => Ok(false),
                Err(e) => Err(e),
            };
        }
        // The chunks' sizes: powers of two from the smallest that takes the longest row (at
        // least MIN_R1CS_CHUNK) to under the largest matrix's entries (a chunk that large is
        // the whole matrix); streamed, tried largest first; smallest, only the smallest.
        let smallest = MIN_R1CS_CHUNK.max(r1cs.longest_row().next_power_of_two());
        let largest = r1cs.entries().into_iter().max().unwrap_or(0);
        let mut chunks: Vec<usize> = std::iter::successors(Some(smallest), |n| Some(n * 2))
            .take_while(|&n| n == smallest || n < largest)
            .collect();
        match recording {
            Recording::Streamed => chunks.reverse(),
            _ => chunks.truncate(1),
        }
        for entries in chunks {
            let streamed = self
                .budget
                .check(streamed_bytes(r1cs, entries))
                .and_then(|()| DeviceR1cs::streamed(r1cs, entries, &self.stream, &self.staging));
            match streamed {
                Ok(Some(held)) => {
                    self.r1cs = Some(held);
                    return Ok(true);
                }
                // No row is longer than these chunks: only memory stops them.
                Ok(None) | Err(Error::DeviceOutOfMemory { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(false)
    }

    /// The key's bases on the device, `shifted` or not, with scratch for whole MSMs.
    fn resident_key(&mut self, key: &ProvingKey, shifted: bool) -> Result<DeviceKey> {
        let lengths = g1_msm_lengths(key);
        let placement = if shifted { KeyPlacement::Shifted } else { KeyPlacement::Resident };
        self.reserve_scratch(key, placement)?;
        self.budget.check(key_bytes(key, lengths, shifted))?;
        DeviceKey::resident(key, lengths, shifted, &self.msm, &self.stream, &self.staging)
    }

    /// Streamed bases in the largest power-of-two chunk (at least MIN_CHUNK) whose buffers
    /// and scratch fit.
    fn stream_key(&mut self, key: &ProvingKey) -> Result<DeviceKey> {
        let longest = g1_msm_lengths(key).into_iter().max().unwrap_or(0);
        let mut chunk = longest.next_power_of_two() / 2;
        loop {
            self.scratch = MsmScratch::default(); // free the last try's
            let budget = self.budget;
            let attempt = self
                .reserve_scratch(key, KeyPlacement::Streamed { chunk })
                .and_then(|()| DeviceKey::streamed(key, chunk, || budget.check(0)));
            match attempt {
                Err(Error::DeviceOutOfMemory { .. }) if chunk > MIN_CHUNK => chunk /= 2,
                attempt => return attempt,
            }
        }
    }

    /// MSM scratch for every MSM of `key` with its bases placed so.
    fn reserve_scratch(&mut self, key: &ProvingKey, placement: KeyPlacement) -> Result<()> {
        let shifted = placement == KeyPlacement::Shifted;
        let chunk = match placement {
            KeyPlacement::Streamed { chunk } => chunk,
            _ => usize::MAX,
        };
        let lengths = g1_msm_lengths(key).map(|len| len.min(chunk));
        for n in lengths {
            self.scratch.reserve::<G1>(n, plan_window_bits(n, shifted), shifted)?;
        }
        let b = lengths[3]; // the B scalars, for G2 too
        self.scratch.reserve::<G2>(b, plan_window_bits(b, shifted), shifted)?;
        self.budget.check(0)
    }
}

/// Points of the four G1 MSMs of `key`: H (the domain less one), L, A, B.
pub(super) fn g1_msm_lengths(key: &ProvingKey) -> [usize; 4] {
    [key.domain_size() - 1, key.num_aux(), key.a_len(), key.b_len()]
}
