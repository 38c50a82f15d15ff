//! Bench and test hooks of the CUDA backend: a [`Bench`] on a device runs single transforms,
//! copies and MSMs over given bases, timed by device events, for `gpu_report` and the GPU
//! tests; the pipeline does not use it.

use std::time::Duration;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cust::event::Event;

use super::device::{CudaDevice, Gpu};
use super::ffi::msm::{Group, G1, G2};
use super::ffi::{download, from_cust, upload, DeviceVec};
use super::msm::{shifted_window_bits, window_range, DeviceBases, MsmScratch, Msms, Shift, MAX_WINDOWS};
use super::ntt::{DeviceDomain, Transform};
use super::partition::{elapsed, event};
use crate::error::{Error, Result};

/// G1 bases of an MSM on the device, plain or with shifted copies, for [`Bench::msm_g1`]
/// (the proving key's own are uploaded by [`CudaDevice::backend`]).
#[derive(Debug)]
pub struct G1Bases(DeviceBases<G1Affine>);

/// G2 bases on the device, plain or with shifted copies, for [`Bench::msm_g2`].
#[derive(Debug)]
pub struct G2Bases(DeviceBases<G2Affine>);

/// How [`Bench::upload_g1_bases`] and `upload_g2_bases` lay bases out on the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BasesLayout {
    /// As they are: an MSM sums a set of buckets per window.
    Plain,
    /// Followed by their shifted copies for MSMs of `window` bits (`None`: the pipeline's
    /// choice for as many scalars as bases, [`shifted_window_bits`]), as
    /// [`KeyPlacement::Shifted`](super::KeyPlacement::Shifted) holds a key's.
    Shifted {
        /// Bits per window, 2..=24.
        window: Option<u32>,
    },
    /// Followed by shifted copies, `copies` in all, each serving a group of windows that sum
    /// into sets of buckets of their own, in the windows the pipeline takes for that many
    /// ([`copies_window_bits`](super::msm::copies_window_bits)), as
    /// [`KeyPlacement::ShiftedH`](super::KeyPlacement::ShiftedH) holds the H MSM's.
    Copies {
        /// Copies of the bases, the bases included.
        copies: usize,
    },
}

/// Device times of one MSM run alone (from [`Bench::msm_g1`] and `msm_g2`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MsmRun {
    /// Copying the scalars to the device.
    pub h2d: Duration,
    /// Sorting the digits into buckets (with the one readback of the fullest bucket).
    pub plan: Duration,
    /// Summing the buckets and windows on the device.
    pub sums: Duration,
}

/// Device times of one split MSM run alone (from [`Bench::split_msm_g1`] and `split_msm_g2`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SplitRun {
    /// Copying the scalars to the device.
    pub h2d: Duration,
    /// The split (with the readback of its counts), the ones' bucket, the others' MSM.
    pub msm: Duration,
}

/// Single kernels on a device, for reports and tests: transforms, copies, MSMs of given
/// bases, each timed by device events.
#[derive(Debug)]
pub struct Bench {
    domain: Option<DeviceDomain>,
    scratch: MsmScratch,
    /// Marks around the work timed.
    marks: [Event; 4],
    /// The last field: the device's streams, kernels and context outlive every buffer above.
    gpu: Gpu,
}

impl Bench {
    /// A bench on `device` (its context becomes current on this thread).
    ///
    /// # Errors
    /// [`Error::Cuda`] when the context, streams, kernels or staging buffers cannot be made.
    pub fn new(device: &CudaDevice) -> Result<Self> {
        let gpu = Gpu::open(device)?;
        Ok(Bench { domain: None, scratch: MsmScratch::default(), marks: [event()?, event()?, event()?, event()?], gpu })
    }

    /// Buffers and tables of domain size `m` (the last size's are freed first).
    fn domain(&mut self, m: usize) -> Result<&mut DeviceDomain> {
        if self.domain.as_ref().is_none_or(|d| d.size() != m) {
            self.domain = None;
            self.domain = Some(DeviceDomain::new(&self.gpu.ntt, m, &self.gpu.stream)?);
        }
        Ok(self.domain.as_mut().expect("just made"))
    }

    /// Runs one transform of `v` (length a power of two) on the device, in place, and returns
    /// the device time of the transform alone (copies excluded).
    ///
    /// # Errors
    /// [`Error::Shape`] if `v.len()` is not a power of two; [`Error::Cuda`] on a device failure.
    pub fn transform(&mut self, v: &mut [Scalar], transform: Transform) -> Result<Duration> {
        if !v.len().is_power_of_two() {
            let expected = v.len().next_power_of_two();
            return Err(Error::Shape { what: "transform length (a power of two)", expected, got: v.len() });
        }
        self.domain(v.len())?;
        let Self { gpu, marks, domain, .. } = self;
        let d = domain.as_mut().expect("made above");
        upload(&gpu.stream, &gpu.staging, v, false, &d.abc[0])?.wait()?;
        marks[0].record(&gpu.stream).map_err(from_cust)?;
        d.transform(&gpu.ntt, &gpu.stream, transform)?;
        marks[1].record(&gpu.stream).map_err(from_cust)?;
        download(&gpu.stream, &gpu.staging, &d.abc[0], v, false)?.wait()?;
        elapsed(&marks[0], &marks[1])
    }

    /// Runs the h stage on the device, as a partition's: from the evaluations a, b, c (each of
    /// the same power-of-two length) to the coefficients of h, left in `a` (b and c are not
    /// changed); returns the device time of the stage alone (copies excluded).
    ///
    /// # Errors
    /// [`Error::Shape`] if the lengths differ or are not a power of two; [`Error::Cuda`] on a
    /// device failure.
    pub fn h_stage(&mut self, [a, b, c]: [&mut [Scalar]; 3]) -> Result<Duration> {
        let m = a.len();
        if !m.is_power_of_two() {
            return Err(Error::Shape {
                what: "h stage length (a power of two)",
                expected: m.next_power_of_two(),
                got: m,
            });
        }
        Error::first_shape_mismatch([("b's length", m, b.len()), ("c's length", m, c.len())])?;
        self.domain(m)?;
        let Self { gpu, marks, domain, .. } = self;
        let d = domain.as_mut().expect("made above");
        for (src, dst) in [&*a, &*b, &*c].into_iter().zip(&d.abc) {
            upload(&gpu.stream, &gpu.staging, src, false, dst)?.wait()?;
        }
        let [start, steps @ ..] = marks;
        start.record(&gpu.stream).map_err(from_cust)?;
        d.h(&gpu.ntt, &gpu.stream, steps)?;
        download(&gpu.stream, &gpu.staging, &d.abc[0], a, false)?.wait()?;
        elapsed(start, &steps[2])
    }

    /// Device time of copying `src` to the device (pinned memory goes by DMA directly, pageable
    /// memory as the driver does it, through its bounce buffer). For bandwidth reports.
    ///
    /// # Errors
    /// [`Error::Cuda`] on a device failure.
    pub fn time_h2d(&mut self, src: &[Scalar]) -> Result<Duration> {
        self.domain(src.len().next_power_of_two())?;
        let Self { gpu, marks, domain, .. } = self;
        let x = &domain.as_ref().expect("made above").abc[0];
        marks[0].record(&gpu.stream).map_err(from_cust)?;
        // Direct even for pageable memory: this measures the driver's own path.
        upload(&gpu.stream, &gpu.staging, src, true, x)?.wait()?;
        marks[1].record(&gpu.stream).map_err(from_cust)?;
        gpu.stream.synchronize().map_err(from_cust)?;
        elapsed(&marks[0], &marks[1])
    }

    /// Uploads G1 bases for [`msm_g1`](Self::msm_g1), laid out as `layout` says.
    ///
    /// # Errors
    /// [`Error::Shape`] if a shifted window is not in 2..=24, or no window takes the copies;
    /// [`Error::DeviceOutOfMemory`], [`Error::Cuda`].
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
            BasesLayout::Shifted { window } => {
                let c = window.unwrap_or(choice);
                check_window(c, true, choice)?;
                Some(Shift::per_window(c))
            }
            BasesLayout::Copies { copies } => {
                let what = "shifted copies (a count whose windows they divide)";
                let expected = Shift::all(bases.len()).copies;
                Some(Shift::copies(bases.len(), copies).ok_or(Error::Shape { what, expected, got: copies })?)
            }
        };
        DeviceBases::upload::<G>(bases, shifted, &self.gpu.msm, &self.gpu.stream, &self.gpu.staging)
    }

    /// Σ scalarsᵢ·basesᵢ in G1 on the device, with `window` bits per window (`None`: the
    /// pipeline's choice, [`window_bits`](super::msm::window_bits), or the bits shifted bases
    /// were made for), and its device times.
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
        check_scalars(n, bases.n)?;
        let (planned, shifted) = bases.plan_for(n);
        let c = window.unwrap_or(planned);
        match shifted {
            Some(_) if c != planned => {
                let what = "MSM window bits (those of the shifted bases)";
                return Err(Error::Shape { what, expected: planned as usize, got: c as usize });
            }
            Some(_) => {}
            None => check_window(c, false, planned)?,
        }
        self.scratch.reserve::<C>(n, c, shifted.map(|s| s.copies))?;
        let (device_scalars, sums) = self.scalars_up::<C>(scalars)?;
        let Self { gpu, marks: ev, scratch, .. } = self;
        let stream = &gpu.stream;
        let msms = Msms { kernels: &gpu.msm, stream, copies: &gpu.copies, staging: &gpu.staging, scratch, split: true };
        let plan = msms.plan(&device_scalars, 0..n, (c, shifted))?;
        ev[2].record(stream).map_err(from_cust)?;
        let sum = msms.sum::<C>(&plan, (&bases.points, 0), &sums)?;
        ev[3].record(stream).map_err(from_cust)?;
        let run =
            MsmRun { h2d: elapsed(&ev[0], &ev[1])?, plan: elapsed(&ev[1], &ev[2])?, sums: elapsed(&ev[2], &ev[3])? };
        Ok((sum, run))
    }
}

impl Bench {
    /// `scalars` copied to the device, between marks 0 and 1, and room for group C's window
    /// sums: an MSM run alone.
    fn scalars_up<C: Group>(&mut self, scalars: &[Scalar]) -> Result<(DeviceVec<Scalar>, DeviceVec<C::Projective>)> {
        let device_scalars = DeviceVec::<Scalar>::new(scalars.len())?;
        let sums = DeviceVec::<C::Projective>::new(MAX_WINDOWS)?;
        let (stream, ev) = (&self.gpu.stream, &self.marks);
        ev[0].record(stream).map_err(from_cust)?;
        upload(stream, &self.gpu.staging, scalars, false, &device_scalars)?.wait()?;
        ev[1].record(stream).map_err(from_cust)?;
        Ok((device_scalars, sums))
    }

    /// Σ scalarsᵢ·basesᵢ in G1 split by value (the ones summed as one bucket, the others
    /// through an MSM of their own, `msm/split.rs`), and its device times; `None` when more
    /// than the split's share of the scalars are neither 0 nor 1.
    ///
    /// # Errors
    /// As [`msm_g1`](Self::msm_g1).
    pub fn split_msm_g1(&mut self, bases: &G1Bases, scalars: &[Scalar]) -> Result<(Option<G1Projective>, SplitRun)> {
        self.split_alone::<G1>(&bases.0, scalars)
    }

    /// As [`split_msm_g1`](Self::split_msm_g1), in G2.
    ///
    /// # Errors
    /// As [`msm_g1`](Self::msm_g1).
    pub fn split_msm_g2(&mut self, bases: &G2Bases, scalars: &[Scalar]) -> Result<(Option<G2Projective>, SplitRun)> {
        self.split_alone::<G2>(&bases.0, scalars)
    }

    fn split_alone<C: Group>(
        &mut self,
        bases: &DeviceBases<C::Affine>,
        scalars: &[Scalar],
    ) -> Result<(Option<C::Projective>, SplitRun)> {
        let n = scalars.len();
        check_scalars(n, bases.n)?;
        let (c, shifted) = bases.plan_for(n);
        self.scratch.reserve::<C>(n, c, shifted.map(|s| s.copies))?;
        self.scratch.reserve_split::<C>(n)?;
        let (device_scalars, sums) = self.scalars_up::<C>(scalars)?;
        let Self { gpu, marks: ev, scratch, .. } = self;
        let stream = &gpu.stream;
        let msms = Msms { kernels: &gpu.msm, stream, copies: &gpu.copies, staging: &gpu.staging, scratch, split: true };
        let sum = msms.split::<C>((&device_scalars, None, 0..n), &bases.points, &sums)?;
        ev[2].record(stream).map_err(from_cust)?;
        Ok((sum, SplitRun { h2d: elapsed(&ev[0], &ev[1])?, msm: elapsed(&ev[1], &ev[2])? }))
    }
}

impl Drop for Bench {
    fn drop(&mut self) {
        self.gpu.finish();
    }
}

/// Whether an MSM of `n` scalars has bases for them all (`bases` of them).
///
/// # Errors
/// [`Error::Shape`] if not.
fn check_scalars(n: usize, bases: usize) -> Result<()> {
    match n <= bases {
        true => Ok(()),
        false => Err(Error::Shape { what: "MSM scalars (at most the bases)", expected: bases, got: n }),
    }
}

/// Whether `c` window bits suit plans over plain or `shifted` bases.
///
/// # Errors
/// [`Error::Shape`] if not, with `choice` as the expected value.
fn check_window(c: u32, shifted: bool, choice: u32) -> Result<()> {
    if window_range(shifted).contains(&c) {
        return Ok(());
    }
    let what = if shifted { "MSM window bits over shifted bases (2..=24)" } else { "MSM window bits (2..=21)" };
    Err(Error::Shape { what, expected: choice as usize, got: c as usize })
}
