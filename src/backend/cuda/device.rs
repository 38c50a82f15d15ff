//! An opened CUDA device: its context, the lock its proving threads share, the pinning
//! allocator of its pool, and what its backends report about it; and one proving thread's
//! hold on it ([`Gpu`]): the context current, the kernels, the streams, the staging chunks
//! and the memory the backend may take.

use std::sync::Arc;
use std::time::Duration;

use cust::context::{Context, CurrentContext};
use cust::device::Device;
use cust::stream::{Stream, StreamFlags};
use parking_lot::Mutex;

use super::ffi::msm::MsmKernels;
use super::ffi::ntt::NttKernels;
use super::ffi::r1cs::R1csKernels;
use super::ffi::{from_cust, memory_info, Fatbin, PinnedAllocator, Staging};
use super::key::HostKey;
use super::{CudaBackend, KeyPlacement};
use crate::error::{Error, Result};
use crate::groth16::{KeySource, ProvingKey};
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
    /// Bytes of the bases and their shifted copies on the device (placements
    /// [`Shifted`](KeyPlacement::Shifted) and [`ShiftedH`](KeyPlacement::ShiftedH); otherwise
    /// zero).
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
    /// Of those, the witness's MSMs' (L, A, B) own scratch, with which they run beside the
    /// H MSM on a stream of their own: held when the bases are resident and sorted whole,
    /// and it fits beside them; zero otherwise (they follow the H MSM).
    pub witness_scratch_bytes: usize,
    /// Of those, a partition's buffers: a, b and c (the A and B scalars go into b and c
    /// after the h stage), the domain's twiddle and power tables, and the aux.
    pub partition_bytes: usize,
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
    /// bases do not fit beside a partition's buffers has [only the H MSM's
    /// shifted](KeyPlacement::ShiftedH) or is [resident](KeyPlacement::Resident), one whose
    /// bases fit but not a whole MSM's sort beside them is [resident, sorted in
    /// chunks](KeyPlacement::ResidentInChunks), one whose bases do not fit is
    /// [streamed](KeyPlacement::Streamed), and a backend whose partition buffers alone do not
    /// fit is refused with [`Error::DeviceOutOfMemory`].
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
        PinnedAllocator::new(self.ctx.clone())
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
        CudaBackend::new(self, HostKey::Memory(key))
    }

    /// As [`backend`](Self::backend), the key from `source`: a parameter file's points go
    /// from the file to the device (or, streamed, to page-locked host memory) a batch at a
    /// time, never whole through pageable host memory.
    ///
    /// # Errors
    /// As [`backend`](Self::backend), and as [`KeyFile::read`](crate::KeyFile::read) for the file's.
    pub fn backend_from(&self, source: &KeySource) -> Result<CudaBackend> {
        match source {
            KeySource::Memory(key) => CudaBackend::new(self, HostKey::Memory(key)),
            KeySource::File(file) => CudaBackend::new(self, HostKey::File(file)),
        }
    }

    /// A factory for [`Prover::with_backends`](crate::Prover::with_backends): builds the
    /// backend, and uploads the key, on its proving thread.
    pub fn backend_factory(&self) -> impl FnOnce(&KeySource) -> Result<CudaBackend> + Send + 'static {
        let device = self.clone();
        move |source| device.backend_from(source)
    }
}

/// One proving thread's hold on a device: its context, made current on this thread, the
/// kernels loaded into it, a stream for the kernels and one for copies beside them, the
/// pinned staging chunks, and the device memory the backend may take. The module and the
/// context are its last fields: they outlive the streams and chunks, and its owner drops its
/// device buffers before it.
#[derive(Debug)]
pub(crate) struct Gpu {
    pub(crate) ntt: NttKernels,
    pub(crate) msm: MsmKernels,
    pub(crate) r1cs: R1csKernels,
    /// The kernels' stream.
    pub(crate) stream: Stream,
    /// The witness's MSMs (L, A, B) beside the H MSM's, when they have scratch of their own
    /// ([`HeldKey::witness_scratch`](super::key::HeldKey)); first in line for the device's
    /// blocks, so that theirs go between the H MSM's long kernels.
    pub(crate) side: Stream,
    /// Copies beside the kernels: the MSMs' scalars during the h stage, streamed bases.
    pub(crate) copies: Stream,
    pub(crate) staging: Staging,
    pub(crate) budget: Budget,
    _fatbin: Fatbin,
    _ctx: Context,
}

impl Gpu {
    /// Makes `device`'s context current on this thread and loads the kernels.
    ///
    /// # Errors
    /// [`Error::Cuda`] when the context, streams, kernels or staging chunks cannot be made.
    pub(crate) fn open(device: &CudaDevice) -> Result<Self> {
        CurrentContext::set_current(&device.ctx).map_err(from_cust)?;
        let budget = Budget { limit: device.memory_limit, free_at_start: memory_info()?.0 };
        let fatbin = Fatbin::load()?;
        Ok(Gpu {
            ntt: NttKernels::new(&fatbin)?,
            msm: MsmKernels::new(&fatbin)?,
            r1cs: R1csKernels::new(&fatbin)?,
            stream: Stream::new(StreamFlags::NON_BLOCKING, None).map_err(from_cust)?,
            side: Stream::new(StreamFlags::NON_BLOCKING, Some(SIDE_PRIORITY)).map_err(from_cust)?,
            copies: Stream::new(StreamFlags::NON_BLOCKING, None).map_err(from_cust)?,
            staging: Staging::new()?,
            budget,
            _fatbin: fatbin,
            _ctx: device.ctx.clone(),
        })
    }

    /// Waits for the kernels' streams before the owner's device buffers are freed (its
    /// `Drop`): a kernel may still be reading them.
    pub(crate) fn finish(&self) {
        for stream in [&self.stream, &self.side] {
            if let Err(e) = stream.synchronize() {
                log::error!("CUDA stream failed at shutdown: {e}");
            }
        }
    }
}

/// The side stream's priority: CUDA's lower numbers go first (0 is the default; devices
/// clamp it to their range, which on Hopper reaches −5).
const SIDE_PRIORITY: i32 = -1;

/// The device memory a backend may hold: all the device has, or the device's
/// [memory limit](crate::backend::cuda::CudaDevice::with_memory_limit).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Budget {
    pub(crate) limit: Option<usize>,
    /// Free device memory before the backend allocated anything.
    pub(crate) free_at_start: usize,
}

impl Budget {
    /// Whether `more` bytes fit beside what the backend holds: in the device's free memory,
    /// and within the limit.
    ///
    /// # Errors
    /// [`Error::DeviceOutOfMemory`] when they do not.
    pub(crate) fn check(&self, more: usize) -> Result<()> {
        let free = memory_info()?.0;
        let held = self.free_at_start.saturating_sub(free);
        if more > free || self.limit.is_some_and(|limit| held + more > limit) {
            return Err(Error::DeviceOutOfMemory { requested: held + more });
        }
        Ok(())
    }
}
