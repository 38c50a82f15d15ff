//! The CUDA backend: the whole proof on an NVIDIA GPU, fed from pinned pool buffers.
//!
//! One [`CudaBackend`] per proving thread holds the device (`device.rs`: its context,
//! kernels, streams and staging chunks), the proving key as placed there (`key/`: its bases,
//! resident or streamed, and its recorded constraints, `r1cs.rs`), and the device buffers of
//! its partitions (`partition.rs`), all made once. Per partition: async H2D of a/b/c, then
//! of the aux on a second stream while the h stage (`ntt/`) runs, and of the A and B scalars
//! into b's and c's vectors, which the h stage leaves free, while the first MSMs run; or, for
//! a witness-only partition, H2D of the input and the aux alone, from which a, b, c and the A
//! and B scalars are computed on the device (pinned buffers go straight to the DMA engine,
//! pageable ones through two pinned staging chunks); the h stage leaves h on the device; the
//! five MSMs (`msm/`), G2 included, on the device; the host only adds up each MSM's window
//! sums (the pipeline assembles the proof on its compute pool). Every copy is guarded by an
//! `InFlight` that waits for the stream, so buffers return to the pool only after the GPU is
//! done with them. Timings come from CUDA events.
//!
//! The folders mirror `cuda/`: `ntt/`, `msm/` and `r1cs.rs` are safe code; `ffi/` holds the
//! only raw driver calls and the kernels' launches, and imports nothing from the rest of the
//! backend. Data flows one way: the pipeline drives this backend through [`Backend`];
//! nothing here knows the pipeline. `hooks.rs` times single kernels for the benches.
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
pub(crate) mod hooks;
mod key;
pub(crate) mod msm;
pub(crate) mod ntt;
mod partition;
mod r1cs;

pub use device::{CudaDevice, DeviceReport};
pub use ffi::PinnedAllocator;
pub use key::KeyPlacement;

use std::sync::Arc;
use std::time::Instant;

use blstrs::Scalar;
use cust::event::Event;
use parking_lot::Mutex;

use self::device::Gpu;
use self::ffi::msm::{G1, G2};
use self::ffi::{download, from_cust, mark, memory_info, upload, wait_for, DeviceVec, InFlight};
use self::key::{g1_msm_lengths, key_bytes, HeldKey, HostKey};
use self::msm::{Bases, Msms, Plan, Summing};
use self::ntt::DeviceDomain;
use self::partition::{event, AbcSource, DeviceScalars, PartitionEvents, WindowSums};
use self::r1cs::DeviceR1cs;
use super::Backend;
use crate::error::{Error, Result};
use crate::groth16::{MsmSums, ProvingKey};
use crate::synth::{Evaluated, Witness};
use crate::timings::PartitionTimings;

/// The whole proof on a CUDA device; see the module docs. A backend serves the proving key
/// it was made with ([`CudaDevice::backend`]), whose bases it keeps on the device (or
/// pinned, streamed); it holds nothing of the host's key.
#[derive(Debug)]
pub struct CudaBackend {
    /// The key's MSM lengths: H (the domain less one), L (the aux), A, B.
    lengths: [usize; 4],
    domain: DeviceDomain,
    scalars: DeviceScalars,
    held: HeldKey,
    sums: WindowSums,
    witness_sums: WindowSums,
    events: PartitionEvents,
    /// Recorded when the backend was made: partitions' device intervals are measured from it.
    epoch: Event,
    lock: Arc<Mutex<()>>,
    /// The last field: the device's streams, kernels and context outlive every buffer above.
    gpu: Gpu,
}

impl CudaBackend {
    /// A backend on `device` holding `key`: every buffer a partition needs, then the key's
    /// recorded constraints and bases placed as they fit; reported to the device.
    fn new(device: &CudaDevice, key: HostKey<'_>) -> Result<Self> {
        // Backends of one device are made one at a time (a prover makes its backends at
        // once): each measures what it holds by the device's free memory.
        let _placing = device.lock.lock();
        let lock = Arc::clone(&device.lock);
        let shape = key.shape();
        let m = shape.domain_size();
        if m > u32::MAX as usize {
            return Err(Error::DeviceLimit {
                what: "domain size (the kernels' 32-bit lengths)",
                limit: u32::MAX as usize,
                got: m,
            });
        }
        let gpu = Gpu::open(device)?;
        let epoch = event()?;
        epoch.record(&gpu.stream).map_err(from_cust)?;
        let domain = DeviceDomain::new(&gpu.ntt, m, &gpu.stream)?;
        let scalars = DeviceScalars::new(&shape, domain.size())?;
        let (sums, witness_sums, events) = (WindowSums::new()?, WindowSums::new()?, PartitionEvents::new()?);
        let partition_bytes = gpu.budget.free_at_start.saturating_sub(memory_info()?.0);
        gpu.budget.check(0)?;
        let held = key::place(&gpu, key)?;
        gpu.stream.synchronize().map_err(from_cust)?;
        let lengths = g1_msm_lengths(&shape);
        let backend = CudaBackend { lengths, domain, scalars, held, sums, witness_sums, events, epoch, lock, gpu };
        backend.report(device, key.points(), partition_bytes)?;
        Ok(backend)
    }

    /// Tells `device` where the key went and what the backend holds.
    /// `points` counts the key's bases (h, l, a, b_g1, b_g2); `partition_bytes` is what the
    /// partition's buffers took.
    fn report(&self, device: &CudaDevice, points: [usize; 5], partition_bytes: usize) -> Result<()> {
        let (free, total) = memory_info()?;
        let mut report = device.report.lock();
        let (bases, r1cs) = (&self.held.bases, self.held.r1cs.as_ref());
        let placement = bases.placement();
        report.key_bytes = key_bytes(points, self.lengths, KeyPlacement::Resident);
        report.shifted_bytes = if placement.shifted(0) { key_bytes(points, self.lengths, placement) } else { 0 };
        report.key_placement = placement;
        report.r1cs_bytes = r1cs.map_or(0, DeviceR1cs::bytes);
        report.r1cs_chunk = r1cs.and_then(DeviceR1cs::chunk_entries);
        report.key_upload = bases.setup_time();
        report.backend_bytes = self.gpu.budget.free_at_start.saturating_sub(free);
        report.partition_bytes = partition_bytes;
        report.witness_scratch_bytes = self.held.witness_scratch_bytes;
        report.memory_used = total - free;
        report.memory_total = total;
        Ok(())
    }

    /// The h stage of `w`, the device's lock held: the witness up, the recorded constraints'
    /// products when a, b, c are not evaluated, the transforms, and the aux up beside them;
    /// then the A and B scalars gathered into the vectors the h stage leaves free.
    fn h_stage(&mut self, w: &Witness, t: &mut PartitionTimings) -> Result<()> {
        let m = self.domain.size();
        let source = AbcSource::of(w, self.held.r1cs.is_some())?;
        let Self { gpu, domain, scalars, held, events: ev, .. } = self;
        ev.start.record(&gpu.stream).map_err(from_cust)?;
        let mut in_flight = upload_witness(gpu, source, w, &domain.abc, held.r1cs.as_mut())?;
        ev.h2d.record(&gpu.stream).map_err(from_cust)?;
        if let (AbcSource::Recorded(_), Some(r)) = (source, held.r1cs.as_mut()) {
            r.evaluate(&gpu.r1cs, (&gpu.stream, &gpu.staging), &scalars.aux, (&domain.abc, m))?;
        }
        ev.constraints.record(&gpu.stream).map_err(from_cust)?;
        let abc_ready = mark(&gpu.stream)?;
        domain.h(&gpu.ntt, &gpu.stream, &ev.ntt)?;
        if let (AbcSource::Recorded(_), Some(r)) = (source, held.r1cs.as_ref()) {
            r.gather(&gpu.r1cs, &gpu.stream, &scalars.aux, scalars.ab(&domain.abc))?;
        }
        ev.gathered.record(&gpu.stream).map_err(from_cust)?;
        if let AbcSource::Evaluated(e) = source {
            in_flight.push(upload_aux(gpu, e, scalars, abc_ready, &ev.scalars_h2d)?);
        }
        // The copies read the witness's buffers: they are done before these can go back to
        // the pool.
        in_flight.into_iter().try_for_each(InFlight::wait)?;
        t.h2d_bytes += source.h2d_bytes(w);
        ev.add_h_stage(source, t)
    }

    /// The five MSMs of `w`, the device's lock held; an evaluated partition's A and B scalars
    /// are copied up beside the first two. When the witness's MSMs (L, A, B) have split
    /// scratch of their own, each is split on the side stream while the H MSM's plan and
    /// sums run (its scatter is memory-bound, their sums compute-bound); those the split
    /// declines follow the H MSM.
    fn msms(&mut self, w: &Witness, t: &mut PartitionTimings) -> Result<MsmSums> {
        let [h_len, l_len, a_len, b_len] = self.lengths;
        let source = AbcSource::of(w, self.held.r1cs.is_some())?;
        let Self { gpu, domain, scalars: s, held, sums, witness_sums: ws, events: ev, epoch, .. } = self;
        let (stream, [sa, sb]) = (&gpu.stream, s.ab(&domain.abc));
        // A witness-only partition's scalars are variables of z, its aux packed.
        let [l_vars, a_vars, b_vars] = match (source, held.r1cs.as_ref()) {
            (AbcSource::Recorded(_), Some(r)) => r.scalar_vars().map(Some),
            _ => [None; 3],
        };
        let (l_scalars, a_scalars, b_scalars) = ((&s.aux, l_vars), (sa, a_vars), (sb, b_vars));
        let (in_flight, mut ab_ready) = match source {
            AbcSource::Evaluated(e) => {
                let (in_flight, ready) = upload_ab(gpu, e, [sa, sb], &ev.ab_h2d)?;
                (in_flight, Some(ready))
            }
            AbcSource::Recorded(_) => (vec![], None),
        };
        let msms = |stream, scratch| Msms {
            kernels: &gpu.msm,
            stream,
            copies: &gpu.copies,
            staging: &gpu.staging,
            scratch,
            split: true,
        };
        let main = msms(stream, &held.scratch);
        let ([h, l, a, b_g1], g2) = (held.bases.g1(), held.bases.b_g2());
        // The H MSM, started (its sum read after the side's splits) or done.
        let (h, side) = match (h, &held.witness_scratch) {
            (Bases::Resident(bases), Some(scratch)) if h_len <= bases.plan_points => {
                wait_for(&gpu.side, mark(stream)?)?; // the scalars are gathered
                let h = ev.around(0, stream, || main.start::<G1>(&domain.abc[0], h_len, bases, &sums.g1))?;
                (h, Some(msms(&gpu.side, scratch)))
            }
            _ => (
                ev.around(0, stream, || {
                    Ok(Summing::Done(main.msm::<G1>(&domain.abc[0], h_len, h, &sums.g1, None)?.0))
                })?,
                None,
            ),
        };
        let (mut l_side, mut a_side, mut b_g1_side, mut b_g2_side) = (None, None, None, None);
        if let Some(side) = side {
            let on = side.stream;
            l_side = ev.around(1, on, || side.split_resident::<G1>(l_scalars, l_len, l, &ws.g1))?;
            if let Some(ready) = ab_ready.take() {
                wait_for(on, ready)?;
            }
            a_side = ev.around(2, on, || side.split_resident::<G1>(a_scalars, a_len, a, &ws.g1))?;
            b_g1_side = ev.around(3, on, || side.split_resident::<G1>(b_scalars, b_len, b_g1, &ws.g1))?;
            b_g2_side = ev.around(4, on, || side.split_resident::<G2>(b_scalars, b_len, g2, &ws.g2))?;
            wait_for(stream, mark(on)?)?;
        }
        let h = main.sum_of::<G1>(h, &sums.g1)?;
        // The witness's MSMs not split beside it, one after another.
        let main = Msms { split: side.is_none(), ..main };
        let l = l_side.map_or_else(
            || ev.around(1, stream, || main.witness_msm::<G1>(l_scalars, l_len, l, &sums.g1, None)),
            split_beside,
        )?;
        if let Some(ready) = ab_ready {
            wait_for(stream, ready)?;
        }
        let a = a_side.map_or_else(
            || ev.around(2, stream, || main.witness_msm::<G1>(a_scalars, a_len, a, &sums.g1, None)),
            split_beside,
        )?;
        let b_g1 = b_g1_side.map_or_else(
            || ev.around(3, stream, || main.witness_msm::<G1>(b_scalars, b_len, b_g1, &sums.g1, None)),
            split_beside,
        )?;
        let plan = b_g1.1; // the B scalars' plan, when not split
        let b_g2 = b_g2_side.map_or_else(
            || ev.around(4, stream, || main.witness_msm::<G2>(b_scalars, b_len, g2, &sums.g2, plan)),
            split_beside,
        )?;
        ev.msms_done.record(stream).map_err(from_cust)?;
        // The copies read the witness's buffers: done (long since) before these go back.
        in_flight.into_iter().try_for_each(InFlight::wait)?;
        t.msms_split += [l.2, a.2, b_g1.2, b_g2.2].into_iter().map(u32::from).sum::<u32>();
        ev.add_msms(epoch, source, t)?;
        Ok(MsmSums { h, l: l.0, a: a.0, b_g1: b_g1.0, b_g2: b_g2.0 })
    }

    /// Copies the h coefficients of the last partition (which stay on the device for the H
    /// MSM) into `dst`, for checks against the CPU.
    ///
    /// # Errors
    /// [`Error::Shape`] if `dst` is not the domain less one long; [`Error::Cuda`].
    #[doc(hidden)]
    pub fn download_h(&mut self, dst: &mut [Scalar]) -> Result<()> {
        let m = self.domain.size();
        if dst.len() + 1 != m {
            return Err(Error::Shape { what: "h length + 1 (the domain size)", expected: m, got: dst.len() + 1 });
        }
        download(&self.gpu.stream, &self.gpu.staging, &self.domain.abc[0], dst, false)?.wait()
    }

    /// Copies the aux of the last partition (the L MSM's scalars; a witness-only partition's
    /// expanded on the device) into `dst`, for checks against the CPU.
    ///
    /// # Errors
    /// [`Error::Shape`] if `dst` is not the key's aux count long; [`Error::Cuda`].
    #[doc(hidden)]
    pub fn download_aux(&mut self, dst: &mut [Scalar]) -> Result<()> {
        let aux = &self.scalars.aux;
        if dst.len() != aux.len() {
            return Err(Error::Shape { what: "aux variables", expected: aux.len(), got: dst.len() });
        }
        download(&self.gpu.stream, &self.gpu.staging, aux, dst, false)?.wait()
    }

    /// Streams `key`'s recorded constraints in chunks of `entries` entries and rows from now
    /// on, in place of what the backend holds of them, as it does when they do not fit on
    /// the device: for tests of streaming at sizes that fit.
    ///
    /// # Errors
    /// [`Error::InvalidKey`] when `key` has no recording, [`Error::Shape`] when a row has
    /// more than `entries` entries; [`Error::DeviceOutOfMemory`], [`Error::Cuda`].
    #[doc(hidden)]
    pub fn stream_recorded_constraints(&mut self, key: &ProvingKey, entries: usize) -> Result<()> {
        let r1cs = key.r1cs.as_ref().ok_or(Error::InvalidKey("the key has no recorded constraints"))?;
        self.held.r1cs = None; // frees the device memory first
        let streamed = DeviceR1cs::streamed(r1cs, entries, &self.gpu.stream, &self.gpu.staging)?;
        self.held.r1cs = Some(streamed.ok_or_else(|| Error::Shape {
            what: "entries per chunk (at least the longest row's)",
            expected: r1cs.longest_row(),
            got: entries,
        })?);
        Ok(())
    }
}

/// A witness MSM's sum split beside the H MSM, as [`Msms::witness_msm`] answers: no plan
/// for the next group, split.
fn split_beside<P>(sum: P) -> Result<(P, Option<Plan>, bool)> {
    Ok((sum, None, true))
}

/// Enqueues the copies of what the h stage reads, on the kernels' stream: a, b and c, or,
/// witness-only, the input and the packed aux, from which the aux (the L MSM's scalars), a,
/// b, c and the A and B scalars are computed on the device. Pinned buffers go by DMA
/// directly; fallback (pageable) ones through the staging chunks.
fn upload_witness<'a>(
    gpu: &'a Gpu,
    source: AbcSource<'a>,
    w: &'a Witness,
    abc: &[DeviceVec<Scalar>; 3],
    r1cs: Option<&mut DeviceR1cs>,
) -> Result<Vec<InFlight<'a>>> {
    let (stream, staging) = (&gpu.stream, &gpu.staging);
    let mut in_flight = Vec::with_capacity(6);
    match (source, r1cs) {
        (AbcSource::Evaluated(e), _) => {
            for (src, dst) in [&e.abc.a, &e.abc.b, &e.abc.c].into_iter().zip(abc) {
                in_flight.push(upload(stream, staging, src, src.is_pinned(), dst)?);
            }
        }
        (AbcSource::Recorded(packed), Some(r)) => {
            in_flight.extend(r.upload_witness((stream, staging), &w.input, packed, abc)?);
        }
        (AbcSource::Recorded(_), None) => unreachable!("a recorded source is chosen only with the recording held"),
    }
    Ok(in_flight)
}

/// Enqueues the copy of the aux (the L MSM's scalars) on the copy stream, after a, b, c's
/// (`abc_ready`; one copy at a time, at the whole bandwidth) while the h stage runs, and makes
/// the kernels' stream wait for it; records `done` after it.
fn upload_aux<'a>(
    gpu: &'a Gpu,
    e: &'a Evaluated,
    s: &DeviceScalars,
    abc_ready: Event,
    done: &Event,
) -> Result<InFlight<'a>> {
    let copies = &gpu.copies;
    wait_for(copies, abc_ready)?;
    let in_flight = upload(copies, &gpu.staging, &e.aux, e.aux.is_pinned(), &s.aux)?;
    done.record(copies).map_err(from_cust)?;
    wait_for(&gpu.stream, mark(copies)?)?;
    Ok(in_flight)
}

/// Enqueues the copies of the A and B scalars into `dst` (the domain's b and c, or their own
/// rooms) on the copy stream, once the kernels' stream is past the h stage, so that they run
/// beside the first MSMs; records `h2d` around them. The kernels' stream waits for the mark
/// returned before it reads them.
fn upload_ab<'a>(
    gpu: &'a Gpu,
    e: &'a Evaluated,
    dst: [&DeviceVec<Scalar>; 2],
    h2d: &[Event; 2],
) -> Result<(Vec<InFlight<'a>>, Event)> {
    let copies = &gpu.copies;
    wait_for(copies, mark(&gpu.stream)?)?;
    h2d[0].record(copies).map_err(from_cust)?;
    let mut in_flight = Vec::with_capacity(2);
    for (src, dst) in [&e.a_scalars, &e.b_scalars].into_iter().zip(dst) {
        in_flight.push(upload(copies, &gpu.staging, src, src.is_pinned(), dst)?);
    }
    h2d[1].record(copies).map_err(from_cust)?;
    Ok((in_flight, mark(copies)?))
}

/// Runs `f` holding the device's lock, adding the wait for it and the hold to `t`.
fn locked<R>(
    lock: &Mutex<()>,
    t: &mut PartitionTimings,
    f: impl FnOnce(&mut PartitionTimings) -> Result<R>,
) -> Result<R> {
    let waited = Instant::now();
    let _device = lock.lock();
    t.device_lock_wait += waited.elapsed();
    let held = Instant::now();
    let result = f(t);
    t.device_lock_held += held.elapsed();
    result
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
        self.held.r1cs.is_some()
    }

    fn h(&mut self, w: &mut Witness, t: &mut PartitionTimings) -> Result<()> {
        let lock = Arc::clone(&self.lock);
        locked(&lock, t, |t| self.h_stage(w, t))
    }

    fn msm(&mut self, w: &Witness, t: &mut PartitionTimings) -> Result<MsmSums> {
        let lock = Arc::clone(&self.lock);
        locked(&lock, t, |t| self.msms(w, t))
    }
}

impl Drop for CudaBackend {
    fn drop(&mut self) {
        self.gpu.finish();
    }
}
