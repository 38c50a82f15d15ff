//! The proving key on the device: every base uploaded once per backend, through pinned
//! staging chunks, and resident for every partition after.

use std::time::{Duration, Instant};

use blstrs::{G1Affine, G2Affine};
use cust::stream::Stream;

use super::ffi::{upload, DeviceVec, HostElem, Staging};
use crate::error::Result;
use crate::groth16::ProvingKey;

/// The bases of the five MSMs of a [`ProvingKey`], on the device.
#[derive(Debug)]
pub(crate) struct DeviceKey {
    pub(crate) h: DeviceVec<G1Affine>,
    pub(crate) l: DeviceVec<G1Affine>,
    pub(crate) a: DeviceVec<G1Affine>,
    pub(crate) b_g1: DeviceVec<G1Affine>,
    pub(crate) b_g2: DeviceVec<G2Affine>,
    /// Bytes on the device.
    pub(crate) bytes: usize,
    /// Wall time of the upload.
    pub(crate) upload: Duration,
}

impl DeviceKey {
    /// Uploads `key`'s bases (the stream is synchronised before this returns).
    pub(crate) fn upload(key: &ProvingKey, stream: &Stream, staging: &Staging) -> Result<Self> {
        let start = Instant::now();
        let device_key = DeviceKey {
            h: copy(&key.h, stream, staging)?,
            l: copy(&key.l, stream, staging)?,
            a: copy(&key.a, stream, staging)?,
            b_g1: copy(&key.b_g1, stream, staging)?,
            b_g2: copy(&key.b_g2, stream, staging)?,
            bytes: [&key.h, &key.l, &key.a, &key.b_g1]
                .iter()
                .map(|q| std::mem::size_of_val(q.as_slice()))
                .sum::<usize>()
                + std::mem::size_of_val(key.b_g2.as_slice()),
            upload: Duration::ZERO,
        };
        Ok(DeviceKey { upload: start.elapsed(), ..device_key })
    }
}

fn copy<T: HostElem>(host: &[T], stream: &Stream, staging: &Staging) -> Result<DeviceVec<T>> {
    let device = DeviceVec::new(host.len())?;
    // The key's vectors are pageable: through the pinned chunks, whose copy overlaps the DMA.
    upload(stream, staging, host, false, &device)?.wait()?;
    Ok(device)
}
