//! Bench and test hooks of the CUDA backend: single transforms, copies and MSMs over given
//! bases, timed by device events, for `gpu_report` and the GPU tests; the pipeline does not
//! use them.

use std::time::Duration;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};

use super::ffi::{download, from_cust, upload, DeviceVec, Group, G1, G2};
use super::key::DeviceBases;
use super::msm::shifted_window_bits;
use super::ntt::Transform;
use super::r1cs::DeviceR1cs;
use super::schedule::Msms;
use super::{elapsed, CudaBackend, MAX_WINDOWS};
use crate::error::{Error, Result};
use crate::groth16::ProvingKey;

/// G1 bases of an MSM on the device, plain or with shifted copies, for
/// [`CudaBackend::msm_g1`] (the proving key's own are uploaded by [`CudaDevice::backend`](super::CudaDevice::backend)).
#[derive(Debug)]
pub struct G1Bases(DeviceBases<G1Affine>);

/// G2 bases on the device, plain or with shifted copies, for [`CudaBackend::msm_g2`].
#[derive(Debug)]
pub struct G2Bases(DeviceBases<G2Affine>);

/// How [`CudaBackend::upload_g1_bases`] and `upload_g2_bases` lay bases out on the device.
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

impl CudaBackend {
    /// Runs one transform of `v` (length a power of two) on the device, in place, and returns
    /// the device time of the transform alone (copies excluded). For tests and reports; the
    /// pipeline uses [`Backend::h`](crate::backend::Backend::h).
    ///
    /// # Errors
    /// [`Error::Shape`] if `v.len()` is not a power of two; [`Error::Cuda`] on a device failure.
    #[doc(hidden)]
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
    #[doc(hidden)]
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
    #[doc(hidden)]
    pub fn download_h(&mut self, dst: &mut [Scalar]) -> Result<()> {
        let Self { stream, staging, domain, .. } = self;
        let d = domain.as_ref().filter(|d| d.size() == dst.len() + 1);
        let d = d.ok_or(Error::Shape { what: "h length + 1 (the domain size)", expected: 0, got: dst.len() + 1 })?;
        download(stream, staging, &d.abc[0], dst, false)?.wait()
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
        self.r1cs = None; // frees the device memory first
        let streamed = DeviceR1cs::streamed(r1cs, entries, &self.stream, &self.staging)?;
        self.r1cs = Some(streamed.ok_or_else(|| Error::Shape {
            what: "entries per chunk (at least the longest row's)",
            expected: r1cs.longest_row(),
            got: entries,
        })?);
        Ok(())
    }

    /// Uploads G1 bases for [`msm_g1`](Self::msm_g1), laid out as `layout` says.
    ///
    /// # Errors
    /// [`Error::Shape`] if a shifted window is not in 2..=24; [`Error::DeviceOutOfMemory`],
    /// [`Error::Cuda`].
    #[doc(hidden)]
    pub fn upload_g1_bases(&mut self, bases: &[G1Affine], layout: BasesLayout) -> Result<G1Bases> {
        self.upload_bases::<G1>(bases, layout).map(G1Bases)
    }

    /// Uploads G2 bases for [`msm_g2`](Self::msm_g2); as [`upload_g1_bases`](Self::upload_g1_bases).
    ///
    /// # Errors
    /// As [`upload_g1_bases`](Self::upload_g1_bases).
    #[doc(hidden)]
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
    /// pipeline's choice, [`window_bits`](super::msm::window_bits), or the bits shifted bases were made for), and its
    /// device times.
    ///
    /// # Errors
    /// [`Error::Shape`] if there are more scalars than bases, or `window` is not in 2..=21
    /// (plain bases) or not the bits of shifted ones; [`Error::DeviceOutOfMemory`],
    /// [`Error::Cuda`].
    #[doc(hidden)]
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
    #[doc(hidden)]
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

/// Whether `c` window bits suit plans over plain or `shifted` bases.
///
/// # Errors
/// [`Error::Shape`] if not, with `choice` as the expected value.
fn check_window(c: u32, shifted: bool, choice: u32) -> Result<()> {
    if super::plan::window_range(shifted).contains(&c) {
        return Ok(());
    }
    let what = if shifted { "MSM window bits over shifted bases (2..=24)" } else { "MSM window bits (2..=21)" };
    Err(Error::Shape { what, expected: choice as usize, got: c as usize })
}
