//! The placement policy of a key on a device, within the device memory the backend may take
//! ([`Budget`]): the recorded constraints first (resident, or streamed a chunk of rows at a
//! time, with less room for them as long as the bases do not fit beside them), then the
//! bases with their shifted copies, the H MSM's alone with theirs (a copy per window, else
//! fewer), the bases alone (their MSMs sorted whole, or a chunk at a time), or the bases
//! streamed from pinned host memory in the largest chunk that fits (see [`KeyPlacement`]).

use std::cell::OnceCell;
use std::sync::Arc;

use super::{g1_msm_lengths, key_bytes, shift_for, DeviceKey, HostKey, KeyPlacement};
use crate::backend::cuda::device::Gpu;
use crate::backend::cuda::ffi::memory_info;
use crate::backend::cuda::ffi::msm::{G1, G2};
use crate::backend::cuda::msm::{check_sort_limits, copies_by_cost, window_bits, MsmScratch};
use crate::backend::cuda::r1cs::{device_bytes, streamed_bytes, DeviceR1cs};
use crate::error::{Error, Result};
use crate::r1cs::{R1cs, Recording as RecordingSource};

/// Fewest points per chunk of streamed bases: below this the chunks' sums would be mostly
/// window tails (a chunk's buckets, 2^(c−1) per window, outnumber its points). Refit with
/// `vs_peer --memory-limit GB`, which forces streaming.
const MIN_STREAMED_CHUNK: usize = 1 << 12;

/// Fewest entries per chunk of streamed recorded constraints: each chunk costs three staged
/// copies and a launch, so smaller ones would be many for little work each. Refit with the
/// GPU test `gpu_recorded_constraints_resident_or_streamed_give_the_cpus_h_and_msm_sums`,
/// which prints the products' device time resident and streamed in chunks of several sizes.
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

/// What a backend holds of a key: its bases, its recorded constraints when they fit, and
/// the MSM scratch its placement needs.
#[derive(Debug)]
pub(crate) struct HeldKey {
    pub(crate) bases: DeviceKey,
    pub(crate) r1cs: Option<DeviceR1cs>,
    pub(crate) scratch: MsmScratch,
    /// The witness's MSMs' (L, A, B) own scratch for their splits, when the bases are
    /// resident and sorted whole and it fits beside them: they are then split on the side
    /// stream while the H MSM's plan and sums run on the kernels' stream.
    pub(crate) witness_scratch: Option<MsmScratch>,
    /// The device memory it takes.
    pub(crate) witness_scratch_bytes: usize,
}

/// Places `key`'s recorded constraints (see [`Recording`]) and its bases (see
/// [`KeyPlacement`]) on `gpu`'s device, beside what the backend already holds.
///
/// # Errors
/// [`Error::DeviceOutOfMemory`] when not even streamed bases fit; [`Error::Cuda`].
pub(crate) fn place(gpu: &Gpu, key: HostKey<'_>) -> Result<HeldKey> {
    let source = key.r1cs();
    let tries = match source {
        Some(_) => &[Recording::Resident, Recording::Streamed, Recording::StreamedSmallest, Recording::Absent][..],
        None => &[Recording::Absent][..],
    };
    // A recording's file read whole, once, if its matrices must be streamed from the host.
    let loaded = OnceCell::new();
    for (k, &recording) in tries.iter().enumerate() {
        let Some(r1cs) = hold_r1cs(gpu, (source.as_ref(), &loaded), recording)? else { continue };
        let mut scratch = MsmScratch::default();
        match place_bases(gpu, key, &mut scratch) {
            Err(e @ Error::DeviceOutOfMemory { .. }) if k + 1 < tries.len() => {
                log::info!("the key's bases do not fit beside its recorded constraints {recording:?} ({e})");
            }
            bases => {
                if recording == Recording::Absent && source.is_some() {
                    log::warn!("the recorded constraints do not fit on the device: circuits are synthesized in full");
                }
                let bases = bases?;
                let (witness_scratch, witness_scratch_bytes) = match witness_scratch(gpu, key, bases.placement())? {
                    Some((witness, bytes)) => (Some(witness), bytes),
                    None => (None, 0),
                };
                return Ok(HeldKey { bases, r1cs, scratch, witness_scratch, witness_scratch_bytes });
            }
        }
    }
    unreachable!("the last try, without recorded constraints, returns")
}

/// The key's recorded constraints (`source`, its file read whole into `loaded` when it must
/// be streamed) held as `recording` says, when they fit: `Some` with them (with `None` for
/// [`Recording::Absent`]), `None` when they do not fit.
fn hold_r1cs(
    gpu: &Gpu,
    (source, loaded): (Option<&RecordingSource>, &OnceCell<Arc<R1cs>>),
    recording: Recording,
) -> Result<Option<Option<DeviceR1cs>>> {
    let source = match (source, recording) {
        (None, Recording::Absent) | (Some(_), Recording::Absent) => return Ok(Some(None)),
        (None, _) => return Ok(None),
        (Some(source), _) => source,
    };
    if recording == Recording::Resident {
        let (stream, staging) = (&gpu.stream, &gpu.staging);
        let held = gpu.budget.check(device_bytes(&source.sizes())).and_then(|()| match source {
            RecordingSource::Memory(r1cs) => DeviceR1cs::resident(r1cs, stream, staging),
            RecordingSource::File(file) => DeviceR1cs::resident_from_file(file, stream, staging),
        });
        return match held {
            Ok(held) => Ok(Some(Some(held))),
            Err(Error::DeviceOutOfMemory { .. }) => Ok(None),
            Err(e) => Err(e),
        };
    }
    let r1cs = match loaded.get() {
        Some(r1cs) => r1cs,
        None => {
            let r1cs = source.load()?;
            loaded.get_or_init(|| r1cs)
        }
    };
    for entries in streamed_chunks(r1cs, recording) {
        let streamed = gpu
            .budget
            .check(streamed_bytes(&r1cs.sizes(), entries))
            .and_then(|()| DeviceR1cs::streamed(r1cs, entries, &gpu.stream, &gpu.staging));
        match streamed {
            Ok(Some(held)) => return Ok(Some(Some(held))),
            // No row is longer than these chunks: only memory stops them.
            Ok(None) | Err(Error::DeviceOutOfMemory { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(None)
}

/// The chunks' sizes to try for streamed recorded constraints: powers of two from the
/// smallest that takes the longest row (at least MIN_R1CS_CHUNK) to under the largest
/// matrix's entries (a chunk that large is the whole matrix); largest first for
/// [`Recording::Streamed`], the smallest alone for [`Recording::StreamedSmallest`].
fn streamed_chunks(r1cs: &Arc<R1cs>, recording: Recording) -> Vec<usize> {
    let smallest = MIN_R1CS_CHUNK.max(r1cs.longest_row().next_power_of_two());
    let largest = r1cs.entries().into_iter().max().unwrap_or(0);
    let mut chunks: Vec<usize> =
        std::iter::successors(Some(smallest), |n| Some(n * 2)).take_while(|&n| n == smallest || n < largest).collect();
    match recording {
        Recording::Streamed => chunks.reverse(),
        _ => chunks.truncate(1),
    }
    chunks
}

/// The bases with their shifted copies, else the H MSM's alone with theirs (as many copies as
/// fit, cheapest first: [`copies_by_cost`]), else the bases alone (sorted whole, else in
/// chunks), else streamed (see [`KeyPlacement`]), with the scratch their MSMs need in
/// `scratch`. The H MSM's copies are taken only with room for the witness's MSMs' own
/// scratch ([`witness_scratch`]) beside them: the witness's MSMs beside H's saved more at
/// 2^27 (58 ms a partition, 1126.7 to 1068.1) than the copies save of H's.
///
/// # Errors
/// [`Error::DeviceOutOfMemory`] when not even streamed bases fit.
fn place_bases(gpu: &Gpu, key: HostKey<'_>, scratch: &mut MsmScratch) -> Result<DeviceKey> {
    let mut held = resident_key(gpu, key, KeyPlacement::Shifted, scratch, 0);
    // Room for the witness's scratch and as much again free (`witness_scratch`); none: the
    // H MSM's copies are not taken.
    let beside = match &held {
        Ok(_) => None,
        Err(_) => match reserve_witness(key) {
            Ok((_, bytes)) => Some(2 * bytes),
            Err(Error::DeviceOutOfMemory { .. }) => None,
            Err(e) => return Err(e),
        },
    };
    let h_points = g1_msm_lengths(&key.shape())[0];
    let shifted_h = beside.into_iter().flat_map(|beside| {
        copies_by_cost(h_points).into_iter().map(move |copies| (KeyPlacement::ShiftedH { copies }, beside))
    });
    for (fewer, beside) in shifted_h.chain([(KeyPlacement::Resident, 0)]) {
        match held {
            Err(e @ (Error::DeviceOutOfMemory { .. } | Error::DeviceLimit { .. })) => {
                log::info!("the key's bases and their scratch do not fit ({e}): placing them {fewer:?}");
                *scratch = MsmScratch::default(); // free the last try's plans' room
                held = resident_key(gpu, key, fewer, scratch, beside);
            }
            _ => break,
        }
    }
    let held = match held {
        Err(e @ (Error::DeviceOutOfMemory { .. } | Error::DeviceLimit { .. })) => {
            log::info!("the key's bases and whole-MSM scratch do not fit ({e}): the MSMs sorted in chunks");
            resident_in_chunks(gpu, key, scratch)
        }
        held => held,
    };
    match held {
        Err(e @ Error::DeviceOutOfMemory { .. }) => {
            log::info!("the key's bases and a chunk's scratch do not fit ({e}): streaming the bases");
            stream_key(gpu, key, scratch)
        }
        held => held,
    }
}

/// The key's bases on the device, shifted as `placement` (Shifted, ShiftedH or Resident)
/// says, with scratch for whole MSMs, when they fit with `beside` bytes more.
fn resident_key(
    gpu: &Gpu,
    key: HostKey<'_>,
    placement: KeyPlacement,
    scratch: &mut MsmScratch,
    beside: usize,
) -> Result<DeviceKey> {
    let lengths = g1_msm_lengths(&key.shape());
    for q in 0..4 {
        let (c, copies) = plan_of(placement, lengths, q);
        check_sort_limits(lengths[q], c, copies)?;
    }
    reserve_scratch(gpu, key, placement, scratch)?;
    gpu.budget.check(key_bytes(key.points(), lengths, placement) + beside)?;
    DeviceKey::resident(key, lengths, placement, &gpu.msm, (&gpu.stream, &gpu.staging))
}

/// The key's bases on the device with scratch for sorts of the largest chunk that fits
/// beside them ([`largest_chunk`]).
fn resident_in_chunks(gpu: &Gpu, key: HostKey<'_>, scratch: &mut MsmScratch) -> Result<DeviceKey> {
    let lengths = g1_msm_lengths(&key.shape());
    let bases = key_bytes(key.points(), lengths, KeyPlacement::Resident);
    *scratch = MsmScratch::default();
    gpu.budget.check(bases)?; // not even the bases alone: no chunk helps
    let placement = largest_chunk(lengths.into_iter().max().unwrap_or(0), |chunk| {
        *scratch = MsmScratch::default(); // free the last try's
        let placement = KeyPlacement::ResidentInChunks { chunk };
        reserve_scratch(gpu, key, placement, scratch)?;
        gpu.budget.check(bases).map(|()| placement)
    })?;
    DeviceKey::resident(key, lengths, placement, &gpu.msm, (&gpu.stream, &gpu.staging))
}

/// Streamed bases in the largest chunk whose buffers and scratch fit ([`largest_chunk`]).
fn stream_key(gpu: &Gpu, key: HostKey<'_>, scratch: &mut MsmScratch) -> Result<DeviceKey> {
    largest_chunk(g1_msm_lengths(&key.shape()).into_iter().max().unwrap_or(0), |chunk| {
        *scratch = MsmScratch::default(); // free the last try's
        reserve_scratch(gpu, key, KeyPlacement::Streamed { chunk }, scratch)?;
        DeviceKey::streamed(key, chunk, || gpu.budget.check(0), &gpu.msm, (&gpu.stream, &gpu.staging))
    })
}

/// `fits(chunk)` for the largest power-of-two chunk of points below `longest` that the sorts
/// take ([`check_sort_limits`]) and `fits` does not refuse for memory, halving while above
/// MIN_STREAMED_CHUNK; the last refusal when none fits; any other error at once.
fn largest_chunk<T>(longest: usize, mut fits: impl FnMut(usize) -> Result<T>) -> Result<T> {
    let mut chunk = (longest.next_power_of_two() / 2).max(1);
    while chunk > 1 && check_sort_limits(chunk, window_bits(chunk), None).is_err() {
        chunk /= 2;
    }
    loop {
        match fits(chunk) {
            Err(Error::DeviceOutOfMemory { .. }) if chunk > MIN_STREAMED_CHUNK => chunk /= 2,
            fitted => return fitted,
        }
    }
}

/// The witness's MSMs' own scratch (see [`HeldKey::witness_scratch`]) for bases placed so:
/// the split's rooms for L, A and B, when the bases are resident and sorted whole and it fits
/// with as much again left free. It is the one optional buffer, so it keeps clear of a full
/// device: the driver sizes the kernels' local memory at their first launch, and a backend
/// that left it none would fail its first partition. Returns it with the device memory it
/// takes.
///
/// # Errors
/// [`Error::Cuda`]; not [`Error::DeviceOutOfMemory`], which gives `None`.
fn witness_scratch(gpu: &Gpu, key: HostKey<'_>, placement: KeyPlacement) -> Result<Option<(MsmScratch, usize)>> {
    if !matches!(placement, KeyPlacement::Shifted | KeyPlacement::ShiftedH { .. } | KeyPlacement::Resident) {
        return Ok(None);
    }
    let reserved = reserve_witness(key).and_then(|(scratch, bytes)| gpu.budget.check(bytes).map(|()| (scratch, bytes)));
    match reserved {
        Ok(held) => Ok(Some(held)),
        Err(e @ Error::DeviceOutOfMemory { .. }) => {
            log::info!("no room for the witness's MSMs' own scratch ({e}): they follow the H MSM");
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// The witness's MSMs' own scratch for `key` (see [`HeldKey::witness_scratch`]), with the
/// device memory it takes.
///
/// # Errors
/// [`Error::DeviceOutOfMemory`] when it does not fit; [`Error::Cuda`].
fn reserve_witness(key: HostKey<'_>) -> Result<(MsmScratch, usize)> {
    let (mut scratch, free) = (MsmScratch::default(), memory_info()?.0);
    reserve_witness_splits(&mut scratch, key, usize::MAX)?;
    Ok((scratch, free.saturating_sub(memory_info()?.0)))
}

/// MSM scratch for every MSM of `key` with its bases placed so (the sorts of a chunk's
/// points, when they are sorted in chunks), and the split's rooms for the witness's MSMs (L,
/// A and B; `msm/split.rs`), which split resident bases whole and streamed ones a chunk at a
/// time.
fn reserve_scratch(gpu: &Gpu, key: HostKey<'_>, placement: KeyPlacement, scratch: &mut MsmScratch) -> Result<()> {
    let (chunk, split) = match placement {
        KeyPlacement::Streamed { chunk } => (chunk, chunk),
        KeyPlacement::ResidentInChunks { chunk } => (chunk, usize::MAX),
        KeyPlacement::Shifted | KeyPlacement::ShiftedH { .. } | KeyPlacement::Resident => (usize::MAX, usize::MAX),
    };
    let lengths = g1_msm_lengths(&key.shape()).map(|len| len.min(chunk));
    for q in 0..4 {
        let (c, copies) = plan_of(placement, lengths, q);
        scratch.reserve::<G1>(lengths[q], c, copies)?;
    }
    let (c, copies) = plan_of(placement, lengths, 3); // the B scalars', for G2 too
    scratch.reserve::<G2>(lengths[3], c, copies)?;
    reserve_witness_splits(scratch, key, split)?;
    gpu.budget.check(0)
}

/// The window bits and shifted copies of the plans of G1 MSM `q` (H, L, A, B) of
/// `msm_lengths[q]` points over bases placed so.
fn plan_of(placement: KeyPlacement, msm_lengths: [usize; 4], q: usize) -> (u32, Option<usize>) {
    match shift_for(placement, msm_lengths, q) {
        Some(shift) => (shift.c, Some(shift.copies)),
        None => (window_bits(msm_lengths[q]), None),
    }
}

/// The split's rooms in `scratch` for the witness's MSMs of `key` (L, A and B in G1, B in
/// G2), each split `most` points at a time at most.
fn reserve_witness_splits(scratch: &mut MsmScratch, key: HostKey<'_>, most: usize) -> Result<()> {
    let [_, l, a, b] = g1_msm_lengths(&key.shape());
    scratch.reserve_split::<G1>(l.max(a).max(b).min(most))?;
    scratch.reserve_split::<G2>(b.min(most))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused<T>() -> Result<T> {
        Err(Error::DeviceOutOfMemory { requested: 0 })
    }

    #[test]
    fn the_largest_chunk_that_fits_is_taken_halving_down_to_the_least() {
        // The chunks tried by a search whose `fits` takes chunks up to `most`, and its answer.
        let search = |most: usize| {
            let mut tried = Vec::new();
            let found = largest_chunk(1 << 20, |chunk| {
                tried.push(chunk);
                if chunk <= most {
                    Ok(chunk)
                } else {
                    refused()
                }
            });
            (found, tried)
        };
        let (found, tried) = search(1 << 16);
        assert_eq!((found.unwrap(), tried), (1 << 16, vec![1 << 19, 1 << 18, 1 << 17, 1 << 16]));
        // None fits: the refusal at the least chunk, no smaller one tried.
        let (found, tried) = search(0);
        assert!(matches!(found, Err(Error::DeviceOutOfMemory { .. })));
        assert_eq!(tried.last(), Some(&MIN_STREAMED_CHUNK));
        // A small MSM's one chunk, below the least; another error ends the search at once.
        assert_eq!(largest_chunk(1000, Ok).unwrap(), 512);
        let mut calls = 0;
        let other = largest_chunk(1 << 20, |_| -> Result<()> {
            calls += 1;
            Err(Error::Config("no".into()))
        });
        assert!(matches!(other, Err(Error::Config(_))) && calls == 1);
        // Chunks the sorts cannot take (2^32 entries and more) are not offered.
        let first = largest_chunk(1 << 32, Ok).unwrap();
        assert!(check_sort_limits(first, window_bits(first), None).is_ok());
        assert!(check_sort_limits(first * 2, window_bits(first * 2), None).is_err(), "{first}");
    }
}
