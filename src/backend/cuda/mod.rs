//! The CUDA backend: the whole proof on an NVIDIA GPU, fed from pinned pool buffers.
//!
//! One [`CudaBackend`] per proving thread owns a stream, the kernels, the proving key's bases
//! (uploaded once, resident: `key.rs`), the key's recorded constraints when it has them
//! (`r1cs.rs`) and the device buffers of its partitions (allocated once, reused). Per
//! partition: async H2D of a/b/c, then of the aux, A and B scalars on a second stream while
//! the h stage (`ntt.rs`) runs; or, for a witness-only partition, H2D of the input and the
//! aux alone, from which a, b, c and the A and B scalars are computed on the device (pinned
//! buffers go straight to the DMA engine, pageable ones through two pinned staging chunks);
//! the h stage leaves h on the device; the five MSMs (`msm.rs`), G2 included, on the device;
//! the host only adds up each MSM's window sums (the pipeline assembles the proof on its
//! compute pool). Every copy is guarded by an `InFlight` that waits for the stream, so
//! buffers return to the pool only after the GPU is done with them. Timings come from CUDA
//! events.
//!
//! Layers: `device.rs` (the device, its context and lock), `key.rs`, `r1cs.rs`, `ntt.rs`, `msm.rs`, and
//! `ffi/`, the only raw driver calls and kernel launches. Data flows one way: the pipeline
//! drives this backend through [`Backend`]; nothing here knows the pipeline.
//!
//! ```no_run
//! use pinprove::backend::cuda::CudaDevice;
//! use pinprove::{Config, Prover, ProvingKey};
//!
//! fn gpu_prover(key: ProvingKey) -> pinprove::Result<Prover> {
//!     let config = Config::default();
//!     let devices = [CudaDevice::open(0)?, CudaDevice::open(1)?]; // one proving thread each
//!     let pool = devices[0].pinned_pool(config.pool); // page-locked, portable to every device
//!     Prover::with_backends(key, config, pool, devices.iter().map(CudaDevice::backend_factory).collect())
//! }
//! ```

mod device;
mod ffi;
/// The launch geometry of `cuda/geometry.h`, which build.rs turns into these constants: the
/// kernels and their launchers read one declaration. Values only nvcc reads (blocks per
/// multiprocessor) are here too, unused.
#[allow(dead_code)]
pub(crate) mod geometry {
    include!(concat!(env!("OUT_DIR"), "/geometry.rs"));
}
pub(crate) mod hooks;
mod key;
pub(crate) mod msm;
pub(crate) mod ntt;
mod placement;
mod plan;
mod r1cs;
mod schedule;

pub use device::{CudaDevice, DeviceReport};
pub use ffi::PinnedAllocator;
pub use key::KeyPlacement;

use std::sync::Arc;
use std::time::{Duration, Instant};

use blstrs::{G1Projective, G2Projective, Scalar};
use cust::context::{Context, CurrentContext};
use cust::event::{Event, EventFlags};
use cust::stream::{Stream, StreamFlags};
use parking_lot::Mutex;

use self::ffi::{
    from_cust, mark, memory_info, upload, wait_for, DeviceVec, Fatbin, MsmKernels, MsmScratch, NttKernels,
};
use self::ffi::{R1csKernels, Staging, G1, G2};
use self::key::{key_bytes, DeviceKey};
use self::ntt::DeviceDomain;
use self::placement::{g1_msm_lengths, Budget};
use self::r1cs::DeviceR1cs;
use self::schedule::Msms;
use super::Backend;
use crate::error::{Error, Result};
use crate::groth16::MsmSums;
use crate::groth16::ProvingKey;
use crate::synth::{Evaluated, Witness};
use crate::timings::{MsmSteps, NttSteps, PartitionTimings};

/// The scalars of a partition's L, A and B MSMs on the device.
#[derive(Debug)]
struct DeviceScalars {
    aux: DeviceVec<Scalar>,
    a: DeviceVec<Scalar>,
    b: DeviceVec<Scalar>,
}

/// Most windows of any MSM (2-bit windows), so one output buffer serves them all.
const MAX_WINDOWS: usize = 128;

/// Events of one partition, recorded in this order on the kernels' stream (but
/// `scalars_h2d`, on the copy stream).
#[derive(Debug)]
struct PartitionEvents {
    start: Event,
    /// After a, b, c's copies (or, witness-only, the input's and the aux').
    h2d: Event,
    /// After the recorded constraints' products and gathers (at `h2d` without them).
    constraints: Event,
    /// After each step of the h stage.
    ntt: [Event; 4],
    /// After each MSM.
    msm: [Event; 5],
    /// After the MSMs' scalars' copies, beside the h stage (not witness-only).
    scalars_h2d: Event,
}

impl PartitionEvents {
    fn new() -> Result<Self> {
        let event = || Event::new(EventFlags::DEFAULT).map_err(from_cust);
        let ntt = [event()?, event()?, event()?, event()?];
        let msm = [event()?, event()?, event()?, event()?, event()?];
        Ok(PartitionEvents { start: event()?, h2d: event()?, constraints: event()?, ntt, msm, scalars_h2d: event()? })
    }
}

/// The whole proof on a CUDA device; see the module docs. A backend serves one proving key,
/// the one it was made with ([`CudaDevice::backend`]) or, for a bare backend, the first it
/// is given.
#[derive(Debug)]
pub struct CudaBackend {
    ntt: NttKernels,
    msm: MsmKernels,
    r1cs_kernels: R1csKernels,
    stream: Stream,
    /// Copies of streamed bases, beside the kernels on `stream`.
    copies: Stream,
    staging: Staging,
    budget: Budget,
    events: PartitionEvents,
    /// Marks of the single transforms, copies and MSMs the bench hooks time.
    marks: [Event; 4],
    /// Recorded when the backend was made: partitions' device intervals are measured from it.
    epoch: Event,
    domain: Option<DeviceDomain>,
    key: Option<DeviceKey>,
    scalars: Option<DeviceScalars>,
    /// The key's recorded constraints, when it has them and they fit.
    r1cs: Option<DeviceR1cs>,
    scratch: MsmScratch,
    /// Window sums of a G1 MSM and of the G2 one: each MSM downloads its sums before the
    /// next one starts, so the four G1 MSMs share one buffer.
    g1_sums: DeviceVec<G1Projective>,
    g2_sums: DeviceVec<G2Projective>,
    lock: Arc<Mutex<()>>,
    // The last fields: the module, and the context, outlive every buffer above.
    _fatbin: Fatbin,
    _ctx: Context,
}

impl CudaBackend {
    fn new(device: &CudaDevice, key: Option<&ProvingKey>) -> Result<Self> {
        CurrentContext::set_current(&device.ctx).map_err(from_cust)?;
        let budget = Budget { limit: device.memory_limit, free_at_start: memory_info()?.0 };
        let fatbin = Fatbin::load()?;
        let event = || Event::new(EventFlags::DEFAULT).map_err(from_cust);
        let stream = Stream::new(StreamFlags::NON_BLOCKING, None).map_err(from_cust)?;
        let copies = Stream::new(StreamFlags::NON_BLOCKING, None).map_err(from_cust)?;
        let epoch = event()?;
        epoch.record(&stream).map_err(from_cust)?;
        let mut backend = CudaBackend {
            ntt: NttKernels::new(&fatbin, "")?,
            msm: MsmKernels::new(&fatbin)?,
            r1cs_kernels: R1csKernels::new(&fatbin, "")?,
            staging: Staging::new()?,
            events: PartitionEvents::new()?,
            marks: [event()?, event()?, event()?, event()?],
            epoch,
            domain: None,
            key: None,
            scalars: None,
            r1cs: None,
            scratch: MsmScratch::default(),
            g1_sums: DeviceVec::new(MAX_WINDOWS)?,
            g2_sums: DeviceVec::new(MAX_WINDOWS)?,
            lock: Arc::clone(&device.lock),
            stream,
            copies,
            budget,
            _fatbin: fatbin,
            _ctx: device.ctx.clone(),
        };
        if let Some(key) = key {
            backend.hold(key)?;
            let (free, total) = memory_info()?;
            let mut report = device.report.lock();
            let held = backend.key.as_ref().expect("just placed");
            let shifted = held.placement() == KeyPlacement::Shifted;
            report.key_bytes = key_bytes(key, g1_msm_lengths(key), false);
            report.shifted_bytes = if shifted { key_bytes(key, g1_msm_lengths(key), true) } else { 0 };
            report.key_placement = held.placement();
            report.r1cs_bytes = backend.r1cs.as_ref().map_or(0, DeviceR1cs::bytes);
            report.r1cs_chunk = backend.r1cs.as_ref().and_then(DeviceR1cs::chunk_entries);
            report.key_upload = held.setup_time();
            report.backend_bytes = backend.budget.free_at_start.saturating_sub(free);
            report.memory_used = total - free;
            report.memory_total = total;
        }
        Ok(backend)
    }

    fn domain(&mut self, m: usize) -> Result<&DeviceDomain> {
        if self.domain.as_ref().is_none_or(|d| d.size() != m) {
            self.domain = None; // free the old size first
            self.domain = Some(DeviceDomain::new(&self.ntt, m, &self.stream)?);
        }
        Ok(self.domain.as_ref().expect("just made"))
    }
}

/// Where a partition's a, b, c come from.
#[derive(Clone, Copy)]
enum Source<'a> {
    /// Synthesis evaluated them (and the A and B scalars): copied up.
    Evaluated(&'a Evaluated),
    /// Computed on the device from the witness and the key's recorded constraints.
    Recorded(&'a DeviceR1cs),
}

fn elapsed(start: &Event, end: &Event) -> Result<Duration> {
    let ms = end.elapsed_time_f32(start).map_err(from_cust)?;
    Ok(Duration::from_secs_f64(f64::from(ms.max(0.0)) / 1e3))
}

impl Backend for CudaBackend {
    fn name(&self) -> &'static str {
        "cuda"
    }

    /// The witness is only read: it is copied to the device.
    fn leaves_witness_intact(&self) -> bool {
        true
    }

    /// Once the key is held: its bases are on the device, or in the backend's own pinned
    /// copy when they are streamed.
    fn holds_bases(&self) -> bool {
        self.key.is_some()
    }

    /// When the key's recorded constraints are held: products and gathers on the device.
    fn evaluates_recorded_constraints(&self) -> bool {
        self.r1cs.is_some()
    }

    fn h(&mut self, key: &ProvingKey, w: &mut Witness, t: &mut PartitionTimings) -> Result<()> {
        let lock = Arc::clone(&self.lock);
        let waited = Instant::now();
        let _device = lock.lock();
        t.gpu_lock_wait += waited.elapsed();
        let held = Instant::now();
        if self.key.is_none() {
            self.hold(key)?;
        }
        self.domain(key.domain_size())?;
        let m = key.domain_size();
        let Self { ntt, r1cs_kernels, stream, copies, staging, events: ev, domain, scalars, r1cs, .. } = self;
        let d = domain.as_mut().expect("made above");
        let s = scalars.as_ref().expect("made with the key");
        let source = match (&w.evaluated, r1cs.as_ref()) {
            (Some(e), _) => Source::Evaluated(e),
            (None, Some(r)) => Source::Recorded(r),
            (None, None) => {
                return Err(Error::Backend("a witness-only partition, no recorded constraints held".into()))
            }
        };
        ev.start.record(stream).map_err(from_cust)?;
        // Pinned buffers go by DMA directly; fallback (pageable) ones through the staging
        // chunks. First what the h stage reads, on its stream: a, b and c, or, witness-only,
        // the input and the aux (the L MSM's scalars), from which a, b, c and the A and B
        // scalars are computed here.
        let mut in_flight = Vec::with_capacity(6);
        match source {
            Source::Evaluated(e) => {
                for (src, dst) in [&e.abc.a, &e.abc.b, &e.abc.c].into_iter().zip(&d.abc) {
                    in_flight.push(upload(stream, staging, src, src.is_pinned(), dst)?);
                }
            }
            Source::Recorded(r) => {
                in_flight.push(upload(stream, staging, &w.input, false, &r.input)?);
                in_flight.push(upload(stream, staging, &w.aux, w.aux.is_pinned(), &s.aux)?);
            }
        }
        ev.h2d.record(stream).map_err(from_cust)?;
        if let Source::Recorded(r) = source {
            r.evaluate(r1cs_kernels, stream, staging, &s.aux, (&d.abc, m), [&s.a, &s.b])?;
        }
        ev.constraints.record(stream).map_err(from_cust)?;
        let abc_ready = mark(stream)?;
        d.h(ntt, stream, &ev.ntt)?;
        if let Source::Evaluated(e) = source {
            // The MSMs' scalars on the copy stream while the h stage runs, after a, b, c (one
            // copy at a time, at the whole bandwidth): `msm`'s stream waits for them.
            wait_for(copies, abc_ready)?;
            for (src, dst) in [(&w.aux, &s.aux), (&e.a_scalars, &s.a), (&e.b_scalars, &s.b)] {
                in_flight.push(upload(copies, staging, src, src.is_pinned(), dst)?);
            }
            ev.scalars_h2d.record(copies).map_err(from_cust)?;
            wait_for(stream, mark(copies)?)?;
        }
        // The copies read the witness's buffers: they are done before these can go back to
        // the pool.
        in_flight.into_iter().try_for_each(ffi::InFlight::wait)?;
        t.h2d += match source {
            Source::Recorded(_) => elapsed(&ev.start, &ev.h2d)?,
            Source::Evaluated(_) => elapsed(&ev.start, &ev.scalars_h2d)?,
        };
        t.constraints += elapsed(&ev.h2d, &ev.constraints)?;
        let n = &ev.ntt;
        let steps = NttSteps {
            intt: elapsed(&ev.constraints, &n[0])?,
            coset_ntt: elapsed(&n[0], &n[1])?,
            quotient: elapsed(&n[1], &n[2])?,
            coset_intt: elapsed(&n[2], &n[3])?,
        };
        t.ntt += steps.total();
        t.ntt_steps = steps;
        t.gpu_lock_held += held.elapsed();
        Ok(())
    }

    fn msm(&mut self, key: &ProvingKey, _: &Witness, t: &mut PartitionTimings) -> Result<MsmSums> {
        let lock = Arc::clone(&self.lock);
        let waited = Instant::now();
        let _device = lock.lock();
        t.gpu_lock_wait += waited.elapsed();
        let held = Instant::now();
        let Self {
            msm,
            stream,
            copies,
            events: ev,
            epoch,
            domain,
            key: device_key,
            scalars,
            scratch,
            g1_sums,
            g2_sums,
            staging,
            ..
        } = self;
        let (d, k) = (domain.as_ref().expect("made by h"), device_key.as_ref().expect("held since h"));
        let s = scalars.as_ref().expect("made with the key");
        let m = &ev.msm;
        let msms = Msms { kernels: msm, stream, copies, staging, scratch };
        let [h, l, a, b_g1] = k.g1();
        let (h, _) = msms.msm::<G1>(&d.abc[0], key.domain_size() - 1, h, g1_sums, None)?;
        m[0].record(stream).map_err(from_cust)?;
        let (l, _) = msms.msm::<G1>(&s.aux, key.num_aux(), l, g1_sums, None)?;
        m[1].record(stream).map_err(from_cust)?;
        let (a, _) = msms.msm::<G1>(&s.a, key.a_len(), a, g1_sums, None)?;
        m[2].record(stream).map_err(from_cust)?;
        let (b_g1, plan) = msms.msm::<G1>(&s.b, key.b_len(), b_g1, g1_sums, None)?;
        m[3].record(stream).map_err(from_cust)?;
        let (b_g2, _) = msms.msm::<G2>(&s.b, key.b_len(), k.b_g2(), g2_sums, plan)?;
        m[4].record(stream).map_err(from_cust)?;
        let result = MsmSums { h, l, a, b_g1, b_g2 };
        let steps = MsmSteps {
            h: elapsed(&ev.ntt[3], &m[0])?,
            l: elapsed(&m[0], &m[1])?,
            a: elapsed(&m[1], &m[2])?,
            b_g1: elapsed(&m[2], &m[3])?,
            b_g2: elapsed(&m[3], &m[4])?,
        };
        t.msm += steps.total();
        t.msm_steps = steps;
        t.device_start = elapsed(epoch, &ev.start)?;
        t.device_end = elapsed(epoch, &m[4])?;
        t.gpu_lock_held += held.elapsed();
        Ok(result)
    }
}

impl Drop for CudaBackend {
    fn drop(&mut self) {
        if let Err(e) = self.stream.synchronize() {
            log::error!("CUDA stream failed at shutdown: {e}");
        }
    }
}
