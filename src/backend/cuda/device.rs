//! An opened CUDA device: its context, the lock its proving threads share, the pinning
//! allocator of its pool, and what its backends report about it.

use std::sync::Arc;
use std::time::Duration;

use cust::context::Context;
use cust::device::Device;
use parking_lot::Mutex;

use super::ffi::{from_cust, PinnedAllocator};
use super::{CudaBackend, KeyPlacement};
use crate::error::{Error, Result};
use crate::groth16::ProvingKey;
use crate::pool::{PinnedPool, PoolConfig};

/// What a device's backend reports once it holds the key: read with [`CudaDevice::report`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeviceReport {
    /// The device's name, e.g. "NVIDIA H200".
    pub name: String,
    /// Bytes of the proving key's bases.
    pub key_bytes: usize,
    /// Where the backend keeps them.
    pub key_placement: KeyPlacement,
    /// Bytes of the bases and their shifted copies on the device (placement
    /// [`Shifted`](KeyPlacement::Shifted); otherwise zero).
    pub shifted_bytes: usize,
    /// Wall time of uploading them (from pinned staging chunks) and making their shifted
    /// copies or, streamed, of pinning their host copy.
    pub key_upload: Duration,
    /// Bytes of the key's recorded constraints on the device (zero without them, or when
    /// they did not fit and circuits are synthesized in full).
    pub r1cs_bytes: usize,
    /// Entries (and rows) of a chunk of the recorded constraints' matrices when they are
    /// streamed, copied up a chunk at a time each partition because they did not fit on the
    /// device whole; `None` when they are resident (or absent).
    pub r1cs_chunk: Option<usize>,
    /// Device memory the backend holds: the partition buffers, the MSM scratch and the
    /// bases on the device (with their shifted copies) or the chunks streamed ones go
    /// through.
    pub backend_bytes: usize,
    /// Device memory in use once the backend is made (all of it, other processes' included).
    pub memory_used: usize,
    /// The device's memory.
    pub memory_total: usize,
}

/// An opened CUDA device: its primary context and the lock its proving threads share.
#[derive(Debug, Clone)]
pub struct CudaDevice {
    id: u32,
    pub(super) ctx: Context,
    /// Held by a backend while it uses the device, so that proving threads sharing a device
    /// take turns.
    pub(super) lock: Arc<Mutex<()>>,
    pub(super) report: Arc<Mutex<DeviceReport>>,
    /// Most device memory one backend may hold (`None`: what the device has).
    pub(super) memory_limit: Option<usize>,
}

impl CudaDevice {
    /// Opens device `id` (its primary context).
    ///
    /// # Errors
    /// [`Error::NoDevice`] when there is no such device (or no CUDA device at all);
    /// [`Error::Cuda`] when the driver fails otherwise.
    pub fn open(id: u32) -> Result<Self> {
        let no_device = |e: cust::error::CudaError| match e {
            cust::error::CudaError::NoDevice | cust::error::CudaError::InvalidDevice => Error::NoDevice { id },
            e => from_cust(e),
        };
        cust::init(cust::CudaFlags::empty()).map_err(no_device)?;
        if id >= Device::num_devices().map_err(no_device)? {
            return Err(Error::NoDevice { id });
        }
        let device = Device::get_device(id).map_err(no_device)?;
        let ctx = Context::new(device).map_err(from_cust)?;
        let name = device.name().map_err(from_cust)?;
        let report = Arc::new(Mutex::new(DeviceReport { name, ..DeviceReport::default() }));
        Ok(CudaDevice { id, ctx, lock: Arc::new(Mutex::new(())), report, memory_limit: None })
    }

    /// This device with at most `bytes` of its memory for each backend made from it (the
    /// device is shared with other work, or to try other placements): a key whose shifted
    /// bases do not fit beside a partition's buffers is [resident](KeyPlacement::Resident),
    /// one whose bases do not fit is [streamed](KeyPlacement::Streamed), and a backend
    /// whose partition buffers alone do not fit is refused with
    /// [`Error::DeviceOutOfMemory`].
    pub fn with_memory_limit(mut self, bytes: usize) -> Self {
        self.memory_limit = Some(bytes);
        self
    }

    /// The device ordinal.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The device's name, e.g. "NVIDIA H200".
    pub fn name(&self) -> String {
        self.report.lock().name.clone()
    }

    /// What the last backend made on this device reported (empty until one holds a key).
    pub fn report(&self) -> DeviceReport {
        self.report.lock().clone()
    }

    /// The allocator that makes a [`PinnedPool`] page-locked.
    pub fn pinned_allocator(&self) -> PinnedAllocator {
        PinnedAllocator { ctx: self.ctx.clone() }
    }

    /// A pool of page-locked buffers (portable to every device) with `config`'s limits.
    pub fn pinned_pool(&self, config: PoolConfig) -> PinnedPool {
        PinnedPool::with_allocator(config, self.pinned_allocator())
    }

    /// A backend on this device for the calling thread (the context becomes current here),
    /// with `key`'s bases uploaded and resident, and every buffer a partition of it needs.
    ///
    /// # Errors
    /// [`Error::DeviceOutOfMemory`] when the key and its working memory do not fit;
    /// [`Error::Cuda`] when the context, stream, kernels or staging buffers cannot be made.
    pub fn backend(&self, key: &ProvingKey) -> Result<CudaBackend> {
        CudaBackend::new(self, Some(key))
    }

    /// A backend with no key, for transforms, MSMs of given bases and bandwidth reports.
    ///
    /// # Errors
    /// As [`backend`](Self::backend).
    pub fn bare_backend(&self) -> Result<CudaBackend> {
        CudaBackend::new(self, None)
    }

    /// A factory for [`Prover::with_backends`](crate::Prover::with_backends): builds the
    /// backend, and uploads the key, on its proving thread.
    pub fn backend_factory(&self) -> impl FnOnce(&ProvingKey) -> Result<CudaBackend> + Send + 'static {
        let device = self.clone();
        move |key| device.backend(key)
    }
}
