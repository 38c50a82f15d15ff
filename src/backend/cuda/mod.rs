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
mod key;
mod msm;
mod ntt;
mod r1cs;

pub use device::{CudaDevice, DeviceReport};
pub use ffi::PinnedAllocator;
pub use key::KeyPlacement;
pub use msm::{shifted_window_bits, window_bits};
pub use ntt::Transform;

use std::sync::Arc;
use std::time::{Duration, Instant};

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cust::context::{Context, CurrentContext};
use cust::event::{Event, EventFlags};
use cust::stream::{Stream, StreamFlags};
use group::Group as _;
use parking_lot::Mutex;

use self::ffi::{
    download, from_cust, mark, memory_info, upload, wait_for, DeviceVec, Fatbin, MsmKernels, MsmScratch, NttKernels,
    Plan, R1csKernels, Staging,
};
use self::ffi::{Group, G1, G2};
use self::key::{key_bytes, Bases, DeviceBases, DeviceKey};
use self::msm::{combine, plan_window_bits};
use self::ntt::DeviceDomain;
use self::r1cs::{device_bytes, DeviceR1cs};
use super::Backend;
use crate::error::{Error, Result};
use crate::groth16::prover::MsmSums;
use crate::groth16::ProvingKey;
use crate::synth::{Evaluated, Witness};
use crate::timings::{MsmSteps, NttSteps, PartitionTimings};

/// G1 bases of an MSM on the device, plain or with shifted copies, for
/// [`CudaBackend::msm_g1`] (the proving key's own are uploaded by [`CudaDevice::backend`]).
#[derive(Debug)]
pub struct G1Bases(DeviceBases<G1Affine>);

/// G2 bases on the device, plain or with shifted copies, for [`CudaBackend::msm_g2`].
#[derive(Debug)]
pub struct G2Bases(DeviceBases<G2Affine>);

/// How [`CudaBackend::upload_g1_bases`] and `upload_g2_bases` lay bases out on the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BasesLayout {
    /// As they are: an MSM sums a set of buckets a window.
    Plain,
    /// Followed by their shifted copies for MSMs of `window` bits (`None`: the pipeline's
    /// choice for as many scalars as bases, [`shifted_window_bits`]), as
    /// [`KeyPlacement::Shifted`] holds a key's.
    Shifted {
        /// Bits per window, 2..=24.
        window: Option<u32>,
    },
}

/// Device times of one MSM run alone (from [`CudaBackend::msm_g1`] and `msm_g2`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MsmRun {
    /// Copying the scalars to the device.
    pub h2d: Duration,
    /// Sorting the digits into buckets (with the one readback of the fullest bucket).
    pub plan: Duration,
    /// Summing the buckets and windows on the device.
    pub sums: Duration,
}

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

/// The device memory a backend may hold: all the device has, or the device's
/// [memory limit](CudaDevice::with_memory_limit).
#[derive(Debug, Clone, Copy)]
struct Budget {
    limit: Option<usize>,
    /// Free device memory before the backend allocated anything.
    free_at_start: usize,
}

impl Budget {
    /// Whether `more` bytes fit beside what the backend holds: in the device's free memory,
    /// and within the limit.
    ///
    /// # Errors
    /// [`Error::DeviceOutOfMemory`] when they do not.
    fn check(&self, more: usize) -> Result<()> {
        let free = memory_info()?.0;
        let held = self.free_at_start.saturating_sub(free);
        if more > free || self.limit.is_some_and(|limit| held + more > limit) {
            return Err(Error::DeviceOutOfMemory { requested: held + more });
        }
        Ok(())
    }
}

/// Fewest points per chunk of streamed bases: below this the chunks' sums would be mostly
/// window tails.
const MIN_CHUNK: usize = 1 << 12;

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
            ntt: NttKernels::new(&fatbin)?,
            msm: MsmKernels::new(&fatbin)?,
            r1cs_kernels: R1csKernels::new(&fatbin)?,
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
            report.key_upload = held.setup_time();
            report.backend_bytes = backend.budget.free_at_start.saturating_sub(free);
            report.memory_used = total - free;
            report.memory_total = total;
        }
        Ok(backend)
    }

    /// Allocates everything a partition of `key` needs, then places its bases (see
    /// [`KeyPlacement`]).
    fn hold(&mut self, key: &ProvingKey) -> Result<()> {
        self.domain(key.domain_size())?;
        self.scalars = Some(DeviceScalars {
            aux: DeviceVec::new(key.num_aux())?,
            a: DeviceVec::new(key.a.len())?,
            b: DeviceVec::new(key.b_g1.len())?,
        });
        self.budget.check(0)?;
        self.hold_r1cs(key)?;
        let held = match self.resident_key(key, true) {
            Err(e @ Error::DeviceOutOfMemory { .. }) => {
                log::info!("the key's shifted bases and their scratch do not fit ({e}): the bases alone");
                self.scratch = MsmScratch::default(); // free the shifted plans' room
                self.resident_key(key, false)
            }
            held => held,
        };
        let held = match held {
            Ok(held) => held,
            Err(e @ Error::DeviceOutOfMemory { .. }) => {
                log::info!("the key's bases and whole-MSM scratch do not fit ({e}): streaming the bases");
                self.stream_key(key)?
            }
            Err(e) => return Err(e),
        };
        self.key = Some(held);
        self.stream.synchronize().map_err(from_cust)
    }

    /// The key's recorded constraints on the device, before its bases, when it has them and
    /// they fit; otherwise this backend does not evaluate them and its prover synthesizes in
    /// full.
    fn hold_r1cs(&mut self, key: &ProvingKey) -> Result<()> {
        let Some(r1cs) = &key.r1cs else { return Ok(()) };
        let upload =
            self.budget.check(device_bytes(r1cs)).and_then(|()| DeviceR1cs::upload(r1cs, &self.stream, &self.staging));
        match upload {
            Ok(held) => self.r1cs = Some(held),
            Err(e @ Error::DeviceOutOfMemory { .. }) => {
                log::warn!("the recorded constraints do not fit on the device ({e}): circuits are synthesized in full");
            }
            Err(e) => return Err(e),
        }
        Ok(())
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

    fn domain(&mut self, m: usize) -> Result<&DeviceDomain> {
        if self.domain.as_ref().is_none_or(|d| d.size() != m) {
            self.domain = None; // free the old size first
            self.domain = Some(DeviceDomain::new(&self.ntt, m, &self.stream)?);
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
            let expected = v.len().next_power_of_two();
            return Err(Error::Shape { what: "transform length (a power of two)", expected, got: v.len() });
        }
        self.domain(v.len())?;
        let Self { ntt, stream, staging, marks: events, domain, .. } = self;
        let d = domain.as_mut().expect("made above");
        upload(stream, staging, v, false, &d.abc[0])?.wait()?;
        events[0].record(stream).map_err(from_cust)?;
        d.transform(ntt, stream, 0, transform)?;
        events[1].record(stream).map_err(from_cust)?;
        download(stream, staging, &d.abc[0], v, false)?.wait()?;
        elapsed(&events[0], &events[1])
    }

    /// Device time of copying `src` to the device (pinned memory goes by DMA directly, pageable
    /// memory as the driver does it, through its bounce buffer). For bandwidth reports.
    ///
    /// # Errors
    /// [`Error::Cuda`] on a device failure.
    pub fn time_h2d(&mut self, src: &[Scalar]) -> Result<Duration> {
        self.domain(src.len().next_power_of_two())?;
        let Self { stream, staging, marks: events, domain, .. } = self;
        let x = &domain.as_ref().expect("made above").abc[0];
        events[0].record(stream).map_err(from_cust)?;
        // Direct even for pageable memory: this measures the driver's own path.
        upload(stream, staging, src, true, x)?.wait()?;
        events[1].record(stream).map_err(from_cust)?;
        stream.synchronize().map_err(from_cust)?;
        elapsed(&events[0], &events[1])
    }

    /// Copies the h coefficients of the last partition (which stay on the device for the H
    /// MSM) into `dst`, for checks against the CPU.
    ///
    /// # Errors
    /// [`Error::Shape`] if no partition of `dst.len() + 1` was proved; [`Error::Cuda`].
    pub fn download_h(&mut self, dst: &mut [Scalar]) -> Result<()> {
        let Self { stream, staging, domain, .. } = self;
        let d = domain.as_ref().filter(|d| d.size() == dst.len() + 1);
        let d = d.ok_or(Error::Shape { what: "h length + 1 (the domain size)", expected: 0, got: dst.len() + 1 })?;
        download(stream, staging, &d.abc[0], dst, false)?.wait()
    }

    /// Uploads G1 bases for [`msm_g1`](Self::msm_g1), laid out as `layout` says.
    ///
    /// # Errors
    /// [`Error::Shape`] if a shifted window is not in 2..=24; [`Error::DeviceOutOfMemory`],
    /// [`Error::Cuda`].
    pub fn upload_g1_bases(&mut self, bases: &[G1Affine], layout: BasesLayout) -> Result<G1Bases> {
        self.upload_bases::<G1>(bases, layout).map(G1Bases)
    }

    /// Uploads G2 bases for [`msm_g2`](Self::msm_g2); as [`upload_g1_bases`](Self::upload_g1_bases).
    ///
    /// # Errors
    /// As [`upload_g1_bases`](Self::upload_g1_bases).
    pub fn upload_g2_bases(&mut self, bases: &[G2Affine], layout: BasesLayout) -> Result<G2Bases> {
        self.upload_bases::<G2>(bases, layout).map(G2Bases)
    }

    fn upload_bases<G: Group>(&mut self, bases: &[G::Affine], layout: BasesLayout) -> Result<DeviceBases<G::Affine>> {
        let choice = shifted_window_bits(bases.len());
        let shifted = match layout {
            BasesLayout::Plain => None,
            BasesLayout::Shifted { window } => Some(window.unwrap_or(choice)),
        };
        if let Some(c) = shifted {
            check_window(c, true, choice)?;
        }
        DeviceBases::upload::<G>(bases, shifted, &self.msm, &self.stream, &self.staging)
    }

    /// Σ scalarsᵢ·basesᵢ in G1 on the device, with `window` bits per window (`None`: the
    /// pipeline's choice, [`window_bits`], or the bits shifted bases were made for), and its
    /// device times.
    ///
    /// # Errors
    /// [`Error::Shape`] if there are more scalars than bases, or `window` is not in 2..=21
    /// (plain bases) or not the bits of shifted ones; [`Error::DeviceOutOfMemory`],
    /// [`Error::Cuda`].
    pub fn msm_g1(
        &mut self,
        bases: &G1Bases,
        scalars: &[Scalar],
        window: Option<u32>,
    ) -> Result<(G1Projective, MsmRun)> {
        self.msm_alone::<G1>(&bases.0, scalars, window)
    }

    /// Σ scalarsᵢ·basesᵢ in G2 on the device; as [`msm_g1`](Self::msm_g1).
    ///
    /// # Errors
    /// As [`msm_g1`](Self::msm_g1).
    pub fn msm_g2(
        &mut self,
        bases: &G2Bases,
        scalars: &[Scalar],
        window: Option<u32>,
    ) -> Result<(G2Projective, MsmRun)> {
        self.msm_alone::<G2>(&bases.0, scalars, window)
    }

    fn msm_alone<C: Group>(
        &mut self,
        bases: &DeviceBases<C::Affine>,
        scalars: &[Scalar],
        window: Option<u32>,
    ) -> Result<(C::Projective, MsmRun)> {
        let n = scalars.len();
        if n > bases.n {
            return Err(Error::Shape { what: "MSM scalars (at most the bases)", expected: bases.n, got: n });
        }
        let (planned, shifted) = bases.plan_for(n);
        let c = window.unwrap_or(planned);
        match shifted {
            Some(_) if c != planned => {
                return Err(Error::Shape {
                    what: "MSM window bits (those of the shifted bases)",
                    expected: planned as usize,
                    got: c as usize,
                });
            }
            Some(_) => {}
            None => check_window(c, false, planned)?,
        }
        self.scratch.reserve::<C>(n, c, shifted.is_some())?;
        let device_scalars = DeviceVec::<Scalar>::new(n)?;
        let sums = DeviceVec::<C::Projective>::new(MAX_WINDOWS)?;
        let Self { msm, stream, copies, staging, marks: ev, scratch, .. } = self;
        ev[0].record(stream).map_err(from_cust)?;
        upload(stream, staging, scalars, false, &device_scalars)?.wait()?;
        ev[1].record(stream).map_err(from_cust)?;
        let msms = Msms { kernels: msm, stream, copies, staging, scratch };
        let plan = msms.plan(&device_scalars, 0..n, (c, shifted))?;
        ev[2].record(stream).map_err(from_cust)?;
        let sum = msms.sum::<C>(&plan, &bases.points, &sums)?;
        ev[3].record(stream).map_err(from_cust)?;
        let run =
            MsmRun { h2d: elapsed(&ev[0], &ev[1])?, plan: elapsed(&ev[1], &ev[2])?, sums: elapsed(&ev[2], &ev[3])? };
        Ok((sum, run))
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

/// What the MSMs of a backend run with.
struct Msms<'a> {
    kernels: &'a MsmKernels,
    stream: &'a Stream,
    copies: &'a Stream,
    staging: &'a Staging,
    scratch: &'a MsmScratch,
}

impl Msms<'_> {
    /// A plan of `scalars[range]` in windows of (c, shifted) ([`DeviceBases::plan_for`]).
    fn plan(
        &self,
        scalars: &DeviceVec<Scalar>,
        range: std::ops::Range<usize>,
        (c, shifted): (u32, Option<usize>),
    ) -> Result<Plan> {
        self.kernels.plan(self.stream, self.scratch, scalars, range, c, shifted)
    }

    /// Σ over `plan`'s buckets of `bases` (on the device), via the bucket sets' sums in `sums`.
    fn sum<G: Group>(
        &self,
        plan: &Plan,
        bases: &DeviceVec<G::Affine>,
        sums: &DeviceVec<G::Projective>,
    ) -> Result<G::Projective> {
        self.kernels.window_sums::<G>(self.stream, self.scratch, plan, bases, sums)?;
        let mut host = vec![G::Projective::identity(); plan.sets()];
        download(self.stream, self.staging, sums, &mut host, true)?.wait()?;
        Ok(match plan.shifted {
            Some(_) => host[0], // the windows were shifted into one set
            None => combine::<G>(&host, plan.c),
        })
    }

    /// Σ scalarsᵢ·basesᵢ for i < n. Resident bases take one plan (or `reuse`, the plan of the
    /// same scalars for another group, when it fits these bases), which is returned for the
    /// next group. Streamed bases
    /// go chunk by chunk through their two slots: chunk j+1 is copied while chunk j is
    /// summed, and chunk j+2 into j's slot once j's sums are back on the host.
    fn msm<G: Group>(
        &self,
        scalars: &DeviceVec<Scalar>,
        n: usize,
        bases: Bases<'_, G::Affine>,
        sums: &DeviceVec<G::Projective>,
        reuse: Option<Plan>,
    ) -> Result<(G::Projective, Option<Plan>)> {
        let (host, slots) = match bases {
            Bases::Resident(bases) => {
                let (c, shifted) = bases.plan_for(n);
                let plan = match reuse {
                    Some(plan) if plan.serves(n, c, shifted) => plan,
                    _ => self.plan(scalars, 0..n, (c, shifted))?,
                };
                return Ok((self.sum::<G>(&plan, &bases.points, sums)?, Some(plan)));
            }
            Bases::Streamed { host, slots } => (host, slots),
        };
        let chunk = slots[0].len();
        let c = window_bits(chunk.min(n));
        let chunks: Vec<_> = (0..n).step_by(chunk).map(|start| start..n.min(start + chunk)).collect();
        let mut in_flight = Vec::with_capacity(chunks.len());
        // Enqueues the copy of chunk j into its slot; returns the mark its sums wait for.
        let mut copy = |j: usize| -> Result<_> {
            let range = chunks[j].clone();
            in_flight.push(upload(self.copies, self.staging, &host[range], true, &slots[j % 2])?);
            mark(self.copies)
        };
        let mut copied: std::collections::VecDeque<_> =
            (0..chunks.len().min(2)).map(&mut copy).collect::<Result<_>>()?;
        let mut total = G::Projective::identity();
        for (j, range) in chunks.iter().enumerate() {
            wait_for(self.stream, copied.pop_front().expect("chunk j was copied"))?;
            let plan = self.plan(scalars, range.clone(), (c, None))?;
            total += self.sum::<G>(&plan, &slots[j % 2], sums)?; // waits: slot j % 2 is free after
            if j + 2 < chunks.len() {
                copied.push_back(copy(j + 2)?);
            }
        }
        in_flight.into_iter().try_for_each(ffi::InFlight::wait)?;
        Ok((total, None))
    }
}

/// Whether `c` window bits suit plans over plain or `shifted` bases.
///
/// # Errors
/// [`Error::Shape`] if not, with `choice` as the expected value.
fn check_window(c: u32, shifted: bool, choice: u32) -> Result<()> {
    if ffi::window_range(shifted).contains(&c) {
        return Ok(());
    }
    let what = if shifted { "MSM window bits over shifted bases (2..=24)" } else { "MSM window bits (2..=21)" };
    Err(Error::Shape { what, expected: choice as usize, got: c as usize })
}

/// Points of the four G1 MSMs of `key`: H (the domain less one), L, A, B.
fn g1_msm_lengths(key: &ProvingKey) -> [usize; 4] {
    [key.domain_size() - 1, key.num_aux(), key.a.len(), key.b_g1.len()]
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
            r.evaluate(r1cs_kernels, stream, &s.aux, (&d.abc, m), [&s.a, &s.b])?;
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
        let (a, _) = msms.msm::<G1>(&s.a, key.a.len(), a, g1_sums, None)?;
        m[2].record(stream).map_err(from_cust)?;
        let (b_g1, plan) = msms.msm::<G1>(&s.b, key.b_g1.len(), b_g1, g1_sums, None)?;
        m[3].record(stream).map_err(from_cust)?;
        let (b_g2, _) = msms.msm::<G2>(&s.b, key.b_g1.len(), k.b_g2(), g2_sums, plan)?;
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
