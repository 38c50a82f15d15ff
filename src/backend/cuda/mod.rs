//! The CUDA backend: the h stage on an NVIDIA GPU, fed from pinned pool buffers.
//!
//! One [`CudaBackend`] per proving thread owns a stream, the kernels and the device buffers of
//! its domain size (allocated once per size, then reused). Per partition: async H2D of a/b/c
//! (pinned buffers go straight to the DMA engine, pageable ones through two pinned staging
//! chunks), iNTT and coset shift, coset NTT, (a·b − c)/Z, coset iNTT (`cuda/ntt/ntt.cuh`), and
//! h back to the host buffer of a. Every copy is guarded by an `InFlight` that waits for the
//! stream, so buffers return to the pool only after the GPU is done with them. The MSMs run on
//! the CPU backend for now. Timings come from CUDA events.

mod ffi;

pub use ffi::PinnedAllocator;

use std::sync::Arc;
use std::time::{Duration, Instant};

use cust::context::{Context, CurrentContext};
use cust::device::Device;
use cust::event::{Event, EventFlags};
use cust::stream::{Stream, StreamFlags};
use parking_lot::Mutex;

use self::ffi::{from_cust, DeviceScalars, Kernels, PowerTables, Staging, Twiddles};
use super::{Backend, CpuBackend};
use crate::domain::Roots;
use crate::error::{Error, Result};
use crate::groth16::prover::MsmSums;
use crate::groth16::ProvingKey;
use crate::pipeline::{Config, Prover};
use crate::pool::PinnedPool;
use crate::synth::Witness;
use crate::timings::{NttSteps, PartitionTimings};
use blstrs::Scalar;

/// An opened CUDA device: its primary context and the lock its proving threads share.
#[derive(Debug, Clone)]
pub struct CudaDevice {
    id: u32,
    ctx: Context,
    /// Held by a backend while it uses the device (the source system's GPU mutex).
    lock: Arc<Mutex<()>>,
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
        let ctx = Context::new(Device::get_device(id).map_err(no_device)?).map_err(from_cust)?;
        Ok(CudaDevice { id, ctx, lock: Arc::new(Mutex::new(())) })
    }

    /// The device ordinal.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The device's name, e.g. "NVIDIA H200".
    ///
    /// # Errors
    /// [`Error::Cuda`] when the driver fails.
    pub fn name(&self) -> Result<String> {
        Device::get_device(self.id).and_then(|d| d.name()).map_err(from_cust)
    }

    /// The allocator that makes a [`PinnedPool`] page-locked.
    pub fn pinned_allocator(&self) -> PinnedAllocator {
        PinnedAllocator { ctx: self.ctx.clone() }
    }

    /// A backend on this device, for the calling thread (the context becomes current here).
    ///
    /// # Errors
    /// [`Error::Cuda`] when the context, stream, kernels or staging buffers cannot be made.
    pub fn backend(&self) -> Result<CudaBackend> {
        CurrentContext::set_current(&self.ctx).map_err(from_cust)?;
        let event = || Event::new(EventFlags::DEFAULT).map_err(from_cust);
        Ok(CudaBackend {
            kernels: Kernels::load()?,
            stream: Stream::new(StreamFlags::NON_BLOCKING, None).map_err(from_cust)?,
            staging: Staging::new()?,
            events: [event()?, event()?, event()?, event()?, event()?, event()?, event()?],
            domain: None,
            lock: Arc::clone(&self.lock),
            cpu: CpuBackend::new(),
            _ctx: self.ctx.clone(),
        })
    }

    /// A factory for [`Prover::with_backends`]: builds the backend on its proving thread.
    pub fn backend_factory(&self) -> impl FnOnce(&ProvingKey) -> Result<CudaBackend> + Send + 'static {
        let device = self.clone();
        move |_| device.backend()
    }
}

/// A prover with one proving thread per device in `devices`, over a pinned pool.
///
/// # Errors
/// [`Error::NoDevice`] for a missing device, [`Error::Config`] for an empty list, and
/// [`Prover::with_backends`]'s errors.
pub fn prover(key: impl Into<Arc<ProvingKey>>, config: Config, devices: &[u32]) -> Result<Prover> {
    let devices = devices.iter().map(|&id| CudaDevice::open(id)).collect::<Result<Vec<_>>>()?;
    let first = devices.first().ok_or(Error::Config("at least one CUDA device is needed"))?;
    let pool = PinnedPool::with_allocator(config.pool, first.pinned_allocator());
    Prover::with_backends(key, config, pool, devices.iter().map(CudaDevice::backend_factory).collect())
}

/// A transform of one vector, as [`Domain`](crate::domain::Domain) has them on the CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transform {
    /// Coefficients to evaluations.
    Ntt,
    /// Evaluations to coefficients.
    Intt,
    /// Coefficients to evaluations on the coset gH.
    CosetNtt,
    /// Evaluations on gH to coefficients.
    CosetIntt,
}

/// Device buffers and tables of one domain size.
#[derive(Debug)]
struct DeviceDomain {
    roots: Roots,
    abc: [DeviceScalars; 3],
    omega: Twiddles,
    omega_inv: Twiddles,
    g: PowerTables,
    g_inv: PowerTables,
    ones: PowerTables,
}

impl DeviceDomain {
    fn new(m: usize) -> Result<Self> {
        let roots = Roots::new(m)?;
        let m = 1usize << roots.lg_m;
        Ok(DeviceDomain {
            abc: [DeviceScalars::new(m)?, DeviceScalars::new(m)?, DeviceScalars::new(m)?],
            omega: Twiddles::new(roots.omega, m)?,
            omega_inv: Twiddles::new(roots.omega_inv, m)?,
            g: PowerTables::new(Roots::g(), m)?,
            g_inv: PowerTables::new(Roots::g_inv(), m)?,
            ones: PowerTables::new(Scalar::from(1), m)?,
            roots,
        })
    }
}

/// The h stage on a CUDA device; see the module docs.
#[derive(Debug)]
pub struct CudaBackend {
    kernels: Kernels,
    stream: Stream,
    staging: Staging,
    /// start, H2D done, iNTT done, coset NTT done, quotient done, coset iNTT done, D2H done.
    events: [Event; 7],
    domain: Option<DeviceDomain>,
    lock: Arc<Mutex<()>>,
    cpu: CpuBackend,
    /// Keeps the primary context retained while the backend lives.
    _ctx: Context,
}

impl CudaBackend {
    fn domain(&mut self, m: usize) -> Result<&DeviceDomain> {
        if self.domain.as_ref().is_none_or(|d| d.abc[0].len() != m) {
            self.domain = None; // free the old size first
            self.domain = Some(DeviceDomain::new(m)?);
        }
        Ok(self.domain.as_ref().expect("just made"))
    }

    /// Runs one transform of `v` (length a power of two) on the device, in place, and returns
    /// the device time of the transform alone (copies excluded). For tests and reports; the
    /// pipeline uses [`Backend::h`].
    ///
    /// # Errors
    /// [`Error::Shape`] if `v.len()` is not a power of two; [`Error::Cuda`] on a device failure.
    pub fn transform(&mut self, v: &mut [Scalar], transform: Transform) -> Result<Duration> {
        if !v.len().is_power_of_two() {
            return Err(Error::Shape {
                what: "transform length (a power of two)",
                expected: v.len().next_power_of_two(),
                got: v.len(),
            });
        }
        self.domain(v.len())?;
        let Self { kernels: k, stream, staging, events, domain, .. } = self;
        let d = domain.as_ref().expect("made above");
        let x = &d.abc[0];
        ffi::upload(stream, staging, v, false, x)?.wait()?;
        events[0].record(stream).map_err(from_cust)?;
        match transform {
            Transform::Ntt => k.ntt(stream, x, &d.omega)?,
            Transform::Intt => {
                k.ntt(stream, x, &d.omega_inv)?;
                k.scale_by_powers(stream, x, &d.ones, d.roots.m_inv)?;
            }
            Transform::CosetNtt => {
                k.scale_by_powers(stream, x, &d.g, Scalar::from(1))?;
                k.ntt(stream, x, &d.omega)?;
            }
            Transform::CosetIntt => {
                k.ntt(stream, x, &d.omega_inv)?;
                k.scale_by_powers(stream, x, &d.g_inv, d.roots.m_inv)?;
            }
        }
        events[1].record(stream).map_err(from_cust)?;
        ffi::download(stream, staging, x, v, false)?.wait()?;
        elapsed(&events[0], &events[1])
    }

    /// Device time of copying `src` to the device (pinned memory goes by DMA directly, pageable
    /// memory as the driver does it, through its bounce buffer). For bandwidth reports.
    ///
    /// # Errors
    /// [`Error::Cuda`] on a device failure.
    pub fn time_h2d(&mut self, src: &[Scalar]) -> Result<Duration> {
        let m = src.len().next_power_of_two();
        self.domain(m)?;
        let Self { stream, staging, events, domain, .. } = self;
        let x = &domain.as_ref().expect("made above").abc[0];
        events[0].record(stream).map_err(from_cust)?;
        // Direct even for pageable memory: this measures the driver's own path.
        ffi::upload(stream, staging, src, true, x)?.wait()?;
        events[1].record(stream).map_err(from_cust)?;
        stream.synchronize().map_err(from_cust)?;
        elapsed(&events[0], &events[1])
    }
}

fn elapsed(start: &Event, end: &Event) -> Result<Duration> {
    let ms = end.elapsed_time_f32(start).map_err(from_cust)?;
    Ok(Duration::from_secs_f64(f64::from(ms) / 1e3))
}

impl Backend for CudaBackend {
    fn name(&self) -> &'static str {
        "cuda"
    }

    fn h(&mut self, key: &ProvingKey, w: &mut Witness, t: &mut PartitionTimings) -> Result<()> {
        let m = key.domain_size();
        let lock = Arc::clone(&self.lock);
        let waited = Instant::now();
        let _device = lock.lock();
        t.gpu_lock_wait += waited.elapsed();
        let held = Instant::now();

        self.domain(m)?;
        let Self { kernels: k, stream, staging, events: ev, domain, .. } = self;
        let d = domain.as_ref().expect("made above");
        let pinned = w.abc.is_pinned();
        let [da, db, dc] = &d.abc;
        ev[0].record(stream).map_err(from_cust)?;
        let uploads = [
            ffi::upload(stream, staging, &w.abc.a, pinned, da)?,
            ffi::upload(stream, staging, &w.abc.b, pinned, db)?,
            ffi::upload(stream, staging, &w.abc.c, pinned, dc)?,
        ];
        ev[1].record(stream).map_err(from_cust)?;
        for x in &d.abc {
            k.ntt(stream, x, &d.omega_inv)?;
            k.scale_by_powers(stream, x, &d.g, d.roots.m_inv)?; // coefficients, shifted to gH
        }
        ev[2].record(stream).map_err(from_cust)?;
        for x in &d.abc {
            k.ntt(stream, x, &d.omega)?;
        }
        ev[3].record(stream).map_err(from_cust)?;
        k.quotient(stream, [da, db, dc], d.roots.z_inv_on_coset)?;
        ev[4].record(stream).map_err(from_cust)?;
        k.ntt(stream, da, &d.omega_inv)?;
        k.scale_by_powers(stream, da, &d.g_inv, d.roots.m_inv)?;
        ev[5].record(stream).map_err(from_cust)?;
        // The uploads must be complete before a's host buffer is overwritten by h.
        uploads.into_iter().try_for_each(ffi::InFlight::wait)?;
        ffi::download(stream, staging, da, &mut w.abc.a, pinned)?.wait()?;
        ev[6].record(stream).map_err(from_cust)?;
        stream.synchronize().map_err(from_cust)?;

        t.h2d += elapsed(&ev[0], &ev[1])?;
        let steps = NttSteps {
            intt: elapsed(&ev[1], &ev[2])?,
            coset_ntt: elapsed(&ev[2], &ev[3])?,
            quotient: elapsed(&ev[3], &ev[4])?,
            coset_intt: elapsed(&ev[4], &ev[5])?,
        };
        t.ntt += steps.total();
        t.ntt_steps = steps;
        t.d2h += elapsed(&ev[5], &ev[6])?;
        t.gpu_lock_held += held.elapsed();
        Ok(())
    }

    fn msm(&mut self, key: &ProvingKey, w: &Witness, t: &mut PartitionTimings) -> Result<MsmSums> {
        self.cpu.msm(key, w, t)
    }
}

impl Drop for CudaBackend {
    fn drop(&mut self) {
        if let Err(e) = self.stream.synchronize() {
            log::error!("CUDA stream failed at shutdown: {e}");
        }
    }
}
