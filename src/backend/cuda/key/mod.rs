//! The proving key as a backend holds it: its bases on the device with their shifted copies,
//! on the device as they are, or in page-locked host memory streamed through two device
//! chunks per group (see [`KeyPlacement`]), and its recorded constraints; `placement.rs`
//! decides which, within the device memory the backend may take, and `decode.rs` decodes a
//! file's points on the device.

mod decode;
mod placement;

use decode::DeviceDecode;
pub(crate) use placement::{place, HeldKey};

use std::time::{Duration, Instant};

use blstrs::{G1Affine, G2Affine};
use cust::stream::Stream;

use super::ffi::msm::{MsmKernels, G1, G2};
use super::ffi::{DeviceVec, HostPinned, Staging};
use super::msm::{copies, Bases, DeviceBases, Shift};
use crate::error::Result;
use crate::groth16::{KeyFile, KeyShape, ProvingKey, RawBatch};
use crate::r1cs::Recording;

/// The key a backend is made from: in host memory, or in its parameter file, whose points
/// go straight to the device (or to pinned host memory when streamed), never whole through
/// pageable host memory.
#[derive(Debug, Clone, Copy)]
pub(crate) enum HostKey<'a> {
    Memory(&'a ProvingKey),
    File(&'a KeyFile),
}

impl<'a> HostKey<'a> {
    pub(crate) fn shape(&self) -> KeyShape {
        match self {
            HostKey::Memory(key) => key.shape(),
            HostKey::File(file) => file.shape(),
        }
    }

    /// Points of h, l, a, b_g1 and b_g2.
    pub(crate) fn points(&self) -> [usize; 5] {
        match self {
            HostKey::Memory(key) => key.points(),
            HostKey::File(file) => file.lengths(),
        }
    }

    /// The key's recording, in memory or its file.
    pub(crate) fn r1cs(&self) -> Option<Recording> {
        match self {
            HostKey::Memory(key) => key.r1cs.clone().map(Recording::Memory),
            HostKey::File(file) => file.r1cs().cloned(),
        }
    }
}

/// Where a backend keeps the proving key's bases, decided when the backend is made
/// ([`CudaDevice::backend`](super::CudaDevice::backend)), the first that fits in the device
/// memory (or in [`CudaDevice::with_memory_limit`](super::CudaDevice::with_memory_limit))
/// beside a partition's buffers and the MSM scratch: shifted, the H MSM's alone shifted (a
/// copy per window, else fewer, cheapest first), resident, resident and sorted in chunks, or
/// streamed in the largest power-of-two chunk whose two buffers and scratch fit. The proofs
/// are the same either way, bit for bit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KeyPlacement {
    /// Every base on the device with its shifted copies, 2^(offset of window w)·P for each
    /// window w of the MSM's plan (`cuda/msm/shift.cuh`), made on the device once: the
    /// windows then share one set of buckets, so the MSMs take wider windows and fewer of
    /// them ([`shifted_window_bits`](super::msm::shifted_window_bits): 12 copies at 2^24 points).
    Shifted,
    /// Every base on the device, the H MSM's with `copies` shifted copies, the witness's (L,
    /// A, B) as they are: when the copies of every base do not fit (a 2^26 key on an H200).
    /// The H MSM's scalars are dense in every circuit, and its copies a quarter of the G1
    /// ones; a bit-heavy witness's MSMs are split by value, only their few others planned.
    /// A copy per window when they fit (12 at 2^26), else fewer, each serving a group of
    /// windows that sum into sets of buckets of their own
    /// ([`copies_window_bits`](super::msm::copies_window_bits): 2 to 6 at 2^27).
    ShiftedH {
        /// Copies of the H MSM's bases, the bases included.
        copies: usize,
    },
    /// Every base on the device, uploaded once and read by every partition.
    #[default]
    Resident,
    /// Every base on the device, the MSMs sorted `chunk` points at a time: the scratch of a
    /// whole MSM's sort does not fit beside the bases, a chunk's does (an 80 GB device at
    /// Filecoin's 2^27, whose 48 GB key and its partition's buffers leave a few GB).
    ResidentInChunks {
        /// Points per sort.
        chunk: usize,
    },
    /// Every base in page-locked host memory, copied to the device `chunk` points at a time
    /// for each MSM, the copy of the next chunk overlapping the sums of this one (for the
    /// witness's MSMs, split by value chunk by chunk).
    Streamed {
        /// Points per chunk.
        chunk: usize,
    },
}

impl KeyPlacement {
    /// Whether the bases of G1 MSM `q` (H, L, A, B, in this order; B's in G2 with B's)
    /// are on the device with their shifted copies.
    pub(crate) fn shifted(self, q: usize) -> bool {
        match self {
            KeyPlacement::Shifted => true,
            KeyPlacement::ShiftedH { .. } => q == 0,
            KeyPlacement::Resident | KeyPlacement::ResidentInChunks { .. } | KeyPlacement::Streamed { .. } => false,
        }
    }
}

/// The bases of the five MSMs of a [`ProvingKey`].
#[derive(Debug)]
pub(crate) enum DeviceKey {
    Resident {
        g1: [DeviceBases<G1Affine>; 4],
        b_g2: DeviceBases<G2Affine>,
        /// Which are shifted, and the points per sort when sorted a chunk at a time.
        placement: KeyPlacement,
        upload: Duration,
    },
    Streamed {
        g1: [HostPinned<G1Affine>; 4],
        b_g2: HostPinned<G2Affine>,
        g1_slots: [DeviceVec<G1Affine>; 2],
        g2_slots: [DeviceVec<G2Affine>; 2],
        pinning: Duration,
    },
}

impl DeviceKey {
    /// Uploads `key`'s bases as `placement` (resident, shifted or not, or sorted in chunks)
    /// says: the shifted ones with their copies for the MSMs of `msm_lengths` (H, L, A, B)
    /// scalars (the stream is synchronised before this returns), plain ones' MSMs sorted a
    /// chunk of points at a time when in chunks.
    pub(crate) fn resident(
        key: HostKey<'_>,
        msm_lengths: [usize; 4],
        placement: KeyPlacement,
        kernels: &MsmKernels,
        (stream, staging): (&Stream, &Staging),
    ) -> Result<Self> {
        let start = Instant::now();
        let shift = |q| shift_for(placement, msm_lengths, q);
        let (g1, b_g2) = match key {
            HostKey::Memory(key) => {
                let g1 = |host: &[G1Affine], q| DeviceBases::upload::<G1>(host, shift(q), kernels, stream, staging);
                let g1 = [g1(&key.h, 0)?, g1(&key.l, 1)?, g1(&key.a, 2)?, g1(&key.b_g1, 3)?];
                // The B scalars' plan serves G1 and G2 alike: the same window bits.
                (g1, DeviceBases::upload::<G2>(&key.b_g2, shift(3), kernels, stream, staging)?)
            }
            HostKey::File(file) => {
                let [ph, pl, pa, pb, pb2] = file.lengths();
                let alloc = |points, q| DeviceBases::alloc(points, shift(q));
                let g1 = [alloc(ph, 0)?, alloc(pl, 1)?, alloc(pa, 2)?, alloc(pb, 3)?];
                let b_g2 = DeviceBases::alloc(pb2, shift(3))?;
                if file.raw_points() {
                    let decode = DeviceDecode::new()?;
                    decode.read(file, |batch| match batch.query {
                        4 => decode.decode::<G2>(batch, (&b_g2.points, batch.first), kernels, (stream, staging)),
                        q => decode.decode::<G1>(batch, (&g1[q].points, batch.first), kernels, (stream, staging)),
                    })?;
                } else {
                    file.read_points(
                        |q, first, batch| g1[q].fill(first, batch, stream, staging),
                        |first, batch| b_g2.fill(first, batch, stream, staging),
                    )?;
                }
                for bases in &g1 {
                    bases.shift_copies::<G1>(kernels, stream)?;
                }
                b_g2.shift_copies::<G2>(kernels, stream)?;
                (g1, b_g2)
            }
        };
        let (g1, b_g2) = match placement {
            KeyPlacement::ResidentInChunks { chunk } => {
                (g1.map(|bases| bases.in_plans_of(chunk)), b_g2.in_plans_of(chunk))
            }
            _ => (g1, b_g2),
        };
        Ok(DeviceKey::Resident { g1, b_g2, placement, upload: start.elapsed() })
    }

    /// Allocates two device chunks of `chunk` points per group and, once `fits` agrees, pins
    /// a copy of `key`'s bases (a file's decoded on the device when it may be).
    pub(crate) fn streamed(
        key: HostKey<'_>,
        chunk: usize,
        fits: impl Fn() -> Result<()>,
        kernels: &MsmKernels,
        (stream, staging): (&Stream, &Staging),
    ) -> Result<Self> {
        let g1_slots = [DeviceVec::new(chunk)?, DeviceVec::new(chunk)?];
        let g2_slots = [DeviceVec::new(chunk)?, DeviceVec::new(chunk)?];
        fits()?;
        let start = Instant::now();
        let (g1, b_g2) = match key {
            HostKey::Memory(key) => {
                let g1 = [&key.h, &key.l, &key.a, &key.b_g1].map(|q| HostPinned::copy_of(q));
                let [h, l, a, b] = g1;
                ([h?, l?, a?, b?], HostPinned::copy_of(&key.b_g2)?)
            }
            HostKey::File(file) => {
                let [ph, pl, pa, pb, pb2] = file.lengths();
                let mut g1 = [
                    HostPinned::zeroed(ph)?,
                    HostPinned::zeroed(pl)?,
                    HostPinned::zeroed(pa)?,
                    HostPinned::zeroed(pb)?,
                ];
                let mut b_g2 = HostPinned::zeroed(pb2)?;
                match file.raw_points() {
                    true => pin_decoded(file, (&mut g1, &mut b_g2), kernels, (stream, staging))?,
                    false => file.read_points(
                        |q, first, batch| {
                            g1[q][first..first + batch.len()].copy_from_slice(batch);
                            Ok(())
                        },
                        |first, batch| {
                            b_g2[first..first + batch.len()].copy_from_slice(batch);
                            Ok(())
                        },
                    )?,
                }
                (g1, b_g2)
            }
        };
        Ok(DeviceKey::Streamed { g1, b_g2, g1_slots, g2_slots, pinning: start.elapsed() })
    }

    /// The G1 bases of H, L, A and B.
    pub(crate) fn g1(&self) -> [Bases<'_, G1Affine>; 4] {
        match self {
            DeviceKey::Resident { g1, .. } => g1.each_ref().map(Bases::Resident),
            DeviceKey::Streamed { g1, g1_slots, .. } => {
                g1.each_ref().map(|h| Bases::Streamed { host: h, slots: g1_slots })
            }
        }
    }

    /// The G2 bases of B.
    pub(crate) fn b_g2(&self) -> Bases<'_, G2Affine> {
        match self {
            DeviceKey::Resident { b_g2, .. } => Bases::Resident(b_g2),
            DeviceKey::Streamed { b_g2, g2_slots, .. } => Bases::Streamed { host: b_g2, slots: g2_slots },
        }
    }

    pub(crate) fn placement(&self) -> KeyPlacement {
        match self {
            DeviceKey::Resident { placement, .. } => *placement,
            DeviceKey::Streamed { g1_slots, .. } => KeyPlacement::Streamed { chunk: g1_slots[0].len() },
        }
    }

    /// Wall time of uploading the bases (and making their shifted copies), or of pinning
    /// their host copy.
    pub(crate) fn setup_time(&self) -> Duration {
        match self {
            DeviceKey::Resident { upload, .. } => *upload,
            DeviceKey::Streamed { pinning, .. } => *pinning,
        }
    }
}

/// Reads `file`'s points into their pinned host copies `g1` and `b_g2`, each batch decoded
/// on the device ([`DeviceDecode`]) and copied back.
fn pin_decoded(
    file: &KeyFile,
    (g1, b_g2): (&mut [HostPinned<G1Affine>; 4], &mut HostPinned<G2Affine>),
    kernels: &MsmKernels,
    copies: (&Stream, &Staging),
) -> Result<()> {
    let decode = DeviceDecode::new()?;
    let out = (DeviceVec::new(RawBatch::MOST_POINTS)?, DeviceVec::new(RawBatch::MOST_POINTS)?);
    decode.read(file, |batch| match batch.query {
        4 => {
            let host = &mut b_g2[batch.first..][..batch.points()];
            decode.decode_to_host::<G2>(batch, (&out.1, host), kernels, copies)
        }
        q => {
            let host = &mut g1[q][batch.first..][..batch.points()];
            decode.decode_to_host::<G1>(batch, (&out.0, host), kernels, copies)
        }
    })
}

/// Bytes of a key's bases (`points` of h, l, a, b_g1 and b_g2) placed so, with the copies of
/// those `placement` shifts for MSMs of `msm_lengths` (H, L, A, B) scalars: what
/// [`DeviceKey::resident`] allocates.
pub(crate) fn key_bytes(points: [usize; 5], msm_lengths: [usize; 4], placement: KeyPlacement) -> usize {
    let copies_for = |q| copies(shift_for(placement, msm_lengths, q));
    let g1 = std::mem::size_of::<G1Affine>();
    let bases: usize = points[..4].iter().enumerate().map(|(q, &p)| copies_for(q) * p * g1).sum();
    bases + copies_for(3) * points[4] * std::mem::size_of::<G2Affine>()
}

/// Points of the four G1 MSMs of `key`: H (the domain less one), L, A, B.
pub(crate) fn g1_msm_lengths(key: &KeyShape) -> [usize; 4] {
    [key.domain_size() - 1, key.num_aux(), key.a_len(), key.b_len()]
}

/// The shifted copies of the bases of G1 MSM `q` (H, L, A, B; B's in G2 with B's) when
/// placed so, for MSMs of `msm_lengths[q]` scalars (`None`: plain).
///
/// # Panics
/// If the H MSM's copies are a count no window takes ([`Shift::copies`]).
pub(crate) fn shift_for(placement: KeyPlacement, msm_lengths: [usize; 4], q: usize) -> Option<Shift> {
    let n = msm_lengths[q];
    match placement {
        KeyPlacement::ShiftedH { copies } if q == 0 => {
            Some(Shift::copies(n, copies).unwrap_or_else(|| panic!("{copies} copies of {n} bases")))
        }
        placement => placement.shifted(q).then(|| Shift::all(n)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_h_msms_bases_take_copies_when_it_alone_is_shifted() {
        // Points of h, l, a, b_g1, b_g2 and the MSMs' scalars, as a 2^20 circuit's key has them.
        let (points, lengths) =
            ([(1 << 20) - 1, 900_000, 1_000_000, 700_000, 700_000], [(1 << 20) - 1, 900_000, 1_000_000, 700_000]);
        let (g1, g2) = (std::mem::size_of::<G1Affine>(), std::mem::size_of::<G2Affine>());
        let plain = key_bytes(points, lengths, KeyPlacement::Resident);
        assert_eq!(plain, g1 * points[..4].iter().sum::<usize>() + g2 * points[4]);
        for p in [KeyPlacement::ResidentInChunks { chunk: 1 << 16 }, KeyPlacement::Streamed { chunk: 1 << 16 }] {
            assert_eq!(key_bytes(points, lengths, p), plain, "{p:?}");
        }
        let h_copies = copies(shift_for(KeyPlacement::Shifted, lengths, 0)) - 1;
        assert!(h_copies >= 10, "{h_copies}");
        let h_shifted = key_bytes(points, lengths, KeyPlacement::ShiftedH { copies: h_copies + 1 });
        assert_eq!(h_shifted, plain + h_copies * points[0] * g1);
        let fewer = key_bytes(points, lengths, KeyPlacement::ShiftedH { copies: 2 });
        assert_eq!(fewer, plain + points[0] * g1);
        let all = key_bytes(points, lengths, KeyPlacement::Shifted);
        assert!(all > h_shifted + 2 * (h_shifted - plain), "{all} {h_shifted} {plain}");
        let shifted = |p: KeyPlacement| (0..4).map(|q| p.shifted(q)).collect::<Vec<_>>();
        assert_eq!(shifted(KeyPlacement::ShiftedH { copies: 2 }), [true, false, false, false]);
        assert_eq!(shifted(KeyPlacement::Shifted), [true; 4]);
        assert_eq!(shifted(KeyPlacement::Resident), [false; 4]);
    }
}
