//! The proving key's bases as a backend holds them: resident on the device when they fit
//! beside a partition's buffers and the MSM scratch, otherwise in page-locked host memory,
//! streamed through two device chunks per group (see [`KeyPlacement`]).

use std::time::{Duration, Instant};

use blstrs::{G1Affine, G2Affine};
use cust::stream::Stream;

use super::ffi::{upload, DeviceVec, HostElem, HostPinned, Staging};
use crate::error::Result;
use crate::groth16::ProvingKey;

/// Where a backend keeps the proving key's bases, decided when the backend is made
/// ([`CudaDevice::backend`](super::CudaDevice::backend)): resident when the bases, a
/// partition's buffers and the MSM scratch for whole MSMs all fit in the device memory (or in
/// [`CudaDevice::with_memory_limit`](super::CudaDevice::with_memory_limit)); otherwise
/// streamed, in the largest power-of-two chunk whose two buffers and scratch fit. The proofs
/// are the same either way, bit for bit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KeyPlacement {
    /// Every base on the device, uploaded once and read by every partition.
    #[default]
    Resident,
    /// Every base in page-locked host memory, copied to the device `chunk` points at a time
    /// for each MSM, the copy of the next chunk overlapping the sums of this one.
    Streamed {
        /// Points per chunk.
        chunk: usize,
    },
}

/// One MSM's bases, as the kernels reach them.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Bases<'a, T: HostElem> {
    /// On the device.
    Resident(&'a DeviceVec<T>),
    /// In pinned host memory, copied through the two `slots` chunk by chunk.
    Streamed { host: &'a [T], slots: &'a [DeviceVec<T>; 2] },
}

/// The bases of the five MSMs of a [`ProvingKey`].
#[derive(Debug)]
pub(crate) enum DeviceKey {
    Resident {
        g1: [DeviceVec<G1Affine>; 4],
        b_g2: DeviceVec<G2Affine>,
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
    /// Uploads `key`'s bases (the stream is synchronised before this returns).
    pub(crate) fn resident(key: &ProvingKey, stream: &Stream, staging: &Staging) -> Result<Self> {
        let start = Instant::now();
        let g1 = [
            copy(&key.h, stream, staging)?,
            copy(&key.l, stream, staging)?,
            copy(&key.a, stream, staging)?,
            copy(&key.b_g1, stream, staging)?,
        ];
        let b_g2 = copy(&key.b_g2, stream, staging)?;
        Ok(DeviceKey::Resident { g1, b_g2, upload: start.elapsed() })
    }

    /// Allocates two device chunks of `chunk` points per group and, once `fits` agrees, pins
    /// a copy of `key`'s bases.
    pub(crate) fn streamed(key: &ProvingKey, chunk: usize, fits: impl Fn() -> Result<()>) -> Result<Self> {
        let g1_slots = [DeviceVec::new(chunk)?, DeviceVec::new(chunk)?];
        let g2_slots = [DeviceVec::new(chunk)?, DeviceVec::new(chunk)?];
        fits()?;
        let start = Instant::now();
        let g1 = [
            HostPinned::copy_of(&key.h)?,
            HostPinned::copy_of(&key.l)?,
            HostPinned::copy_of(&key.a)?,
            HostPinned::copy_of(&key.b_g1)?,
        ];
        let b_g2 = HostPinned::copy_of(&key.b_g2)?;
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
            DeviceKey::Resident { .. } => KeyPlacement::Resident,
            DeviceKey::Streamed { g1_slots, .. } => KeyPlacement::Streamed { chunk: g1_slots[0].len() },
        }
    }

    /// Wall time of uploading the bases, or of pinning their host copy.
    pub(crate) fn setup_time(&self) -> Duration {
        match self {
            DeviceKey::Resident { upload, .. } => *upload,
            DeviceKey::Streamed { pinning, .. } => *pinning,
        }
    }
}

/// Bytes of `key`'s bases.
pub(crate) fn key_bytes(key: &ProvingKey) -> usize {
    [&key.h, &key.l, &key.a, &key.b_g1].iter().map(|q| std::mem::size_of_val(q.as_slice())).sum::<usize>()
        + std::mem::size_of_val(key.b_g2.as_slice())
}

fn copy<T: HostElem>(host: &[T], stream: &Stream, staging: &Staging) -> Result<DeviceVec<T>> {
    let device = DeviceVec::new(host.len())?;
    // The key's vectors are pageable: through the pinned chunks, whose copy overlaps the DMA.
    upload(stream, staging, host, false, &device)?.wait()?;
    Ok(device)
}
