//! A key's points decoded on the device from its parameter file's bytes
//! (`cuda/key/decode.cuh`): the host reads the file a batch at a time and uploads each batch
//! as it is, and the device decodes and checks its points as [`Check::OnCurve`] does, into
//! the bases' room, or into a device batch copied back to pinned host memory for streamed
//! bases. The host decodes no point but the first one the device refuses, for the error's
//! reason; so a host of few or slow cores loads a key at the pace of its file, not of its
//! decode. The reading thread only reads: the pool copies each batch into one of a few pinned
//! batches, from which the DMA engine takes it.
//!
//! [`Check::OnCurve`]: crate::Check::OnCurve

use crossbeam_channel::{Receiver, Sender};
use cust::stream::Stream;

use super::super::ffi::msm::{Group, MsmKernels};
use super::super::ffi::{download, read, upload_at, DeviceVec, HostPinned, Staging};
use crate::error::Result;
use crate::groth16::{KeyFile, RawBatch};

/// Pinned host batches: one filling, one uploading, and one spare, so that the copy of a
/// batch never waits for the upload of the one before.
const PINNED_BATCHES: usize = 3;

/// A batch of the file's bytes in pinned host memory.
#[derive(Debug)]
pub(crate) struct Pinned {
    bytes: HostPinned<u8>,
    len: usize,
}

impl std::ops::Deref for Pinned {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// The room for the batches of a file's points on their way to the device.
#[derive(Debug)]
pub(crate) struct DeviceDecode {
    /// A batch of the file's bytes on the device.
    raw: DeviceVec<u8>,
    /// The index of the batch's first refused point, inverted; 0 when none is.
    bad: DeviceVec<u32>,
    /// The pinned batches not in use.
    free: (Sender<HostPinned<u8>>, Receiver<HostPinned<u8>>),
}

impl DeviceDecode {
    /// Room for the largest batch (of G2 points), on the device and pinned (the context must
    /// be current).
    pub(crate) fn new() -> Result<Self> {
        let free = crossbeam_channel::bounded(PINNED_BATCHES);
        for _ in 0..PINNED_BATCHES {
            free.0.send(HostPinned::zeroed(RawBatch::MOST_BYTES)?).expect("room for every batch");
        }
        Ok(DeviceDecode { raw: DeviceVec::new(RawBatch::MOST_BYTES)?, bad: DeviceVec::new(1)?, free })
    }

    /// Reads `file`'s points ([`KeyFile::read_raw`]), each batch handed to `each` in a pinned
    /// batch, which goes back to the spares however `each` ends.
    ///
    /// # Errors
    /// As [`KeyFile::read_raw`]; what `each` returns.
    pub(crate) fn read(&self, file: &KeyFile, mut each: impl FnMut(&RawBatch<Pinned>) -> Result<()>) -> Result<()> {
        let keep = |batch: &[u8]| {
            let mut bytes = self.free.1.recv().expect("the spares' sender lives in self");
            bytes[..batch.len()].copy_from_slice(batch);
            Ok(Pinned { bytes, len: batch.len() })
        };
        file.read_raw(keep, |batch| {
            let done = each(&batch);
            self.free.0.send(batch.bytes.bytes).expect("the spares' receiver lives in self");
            done
        })
    }

    /// Decodes `batch`, points of group `G`, into `out` from point `at` on, and waits.
    ///
    /// # Errors
    /// [`Error::Decode`](crate::Error::Decode) naming the batch's first refused point and why;
    /// [`Error::Cuda`](crate::Error::Cuda).
    pub(crate) fn decode<G: Group>(
        &self,
        batch: &RawBatch<Pinned>,
        (out, at): (&DeviceVec<G::Affine>, usize),
        kernels: &MsmKernels,
        (stream, staging): (&Stream, &Staging),
    ) -> Result<()> {
        self.bad.zero(1, stream)?;
        let upload = upload_at(stream, staging, &batch.bytes, true, (&self.raw, 0))?;
        kernels.decode::<G>(stream, &self.raw, batch.points(), (out, at), &self.bad)?;
        upload.wait()?;
        match read(stream, &self.bad, 0)? {
            0 => Ok(()),
            bad => Err(batch.refused(!bad as usize)),
        }
    }

    /// Decodes `batch`, points of group `G`, through the device batch `out` into `host`, the
    /// batch's points in pinned host memory, and waits.
    ///
    /// # Errors
    /// As [`decode`](Self::decode).
    pub(crate) fn decode_to_host<G: Group>(
        &self,
        batch: &RawBatch<Pinned>,
        (out, host): (&DeviceVec<G::Affine>, &mut [G::Affine]),
        kernels: &MsmKernels,
        (stream, staging): (&Stream, &Staging),
    ) -> Result<()> {
        self.decode::<G>(batch, (out, 0), kernels, (stream, staging))?;
        download(stream, staging, out, host, true)?.wait()
    }
}
