//! The h stage on the device: a, b, c to h = (a·b − c)/Z, left on the device for its MSM.
//! Kernels in `cuda/ntt/ntt.cuh`; the same transforms as [`Domain`](crate::domain::Domain),
//! so the result equals the CPU's bit for bit.

use blstrs::Scalar;
use cust::event::Event;
use cust::stream::Stream;
use ff::Field;

use super::ffi::{from_cust, DeviceVec, NttKernels, PowerTables, Twiddles};
use crate::domain::Roots;
use crate::error::Result;

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

/// Device buffers and tables of one domain size: a, b, c (h is left in a) and the twiddle and
/// coset tables, computed on the device.
#[derive(Debug)]
pub(crate) struct DeviceDomain {
    pub(crate) roots: Roots,
    pub(crate) abc: [DeviceVec<Scalar>; 3],
    omega: Twiddles,
    omega_inv: Twiddles,
    g: PowerTables,
    g_inv: PowerTables,
    ones: PowerTables,
}

impl DeviceDomain {
    pub(crate) fn new(k: &NttKernels, m: usize, stream: &Stream) -> Result<Self> {
        let roots = Roots::new(m)?;
        let m = 1usize << roots.lg_m;
        Ok(DeviceDomain {
            abc: [DeviceVec::new(m)?, DeviceVec::new(m)?, DeviceVec::new(m)?],
            omega: k.twiddles(roots.omega, m, stream)?,
            omega_inv: k.twiddles(roots.omega_inv, m, stream)?,
            g: k.power_tables(Roots::g(), m, stream)?,
            g_inv: k.power_tables(Roots::g_inv(), m, stream)?,
            ones: k.power_tables(Scalar::ONE, m, stream)?,
            roots,
        })
    }

    /// The domain size m.
    pub(crate) fn size(&self) -> usize {
        self.abc[0].len()
    }

    /// Enqueues one transform of `x` (of this domain's size), in place.
    pub(crate) fn transform(&self, k: &NttKernels, stream: &Stream, x: &DeviceVec<Scalar>, t: Transform) -> Result<()> {
        match t {
            Transform::Ntt => k.ntt(stream, x, &self.omega),
            Transform::Intt => {
                k.ntt(stream, x, &self.omega_inv)?;
                k.scale_by_powers(stream, x, &self.ones, self.roots.m_inv)
            }
            Transform::CosetNtt => {
                k.scale_by_powers(stream, x, &self.g, Scalar::ONE)?;
                k.ntt(stream, x, &self.omega)
            }
            Transform::CosetIntt => {
                k.ntt(stream, x, &self.omega_inv)?;
                k.scale_by_powers(stream, x, &self.g_inv, self.roots.m_inv)
            }
        }
    }

    /// Enqueues the h stage on a, b, c (already on the device), recording `steps[0..4]` after
    /// its four steps: iNTT and the shift to gH (×gⁱ/m), the coset NTT, the quotient by Z, and
    /// the coset iNTT with the shift back. h is left in a.
    pub(crate) fn h(&self, k: &NttKernels, stream: &Stream, steps: &[Event]) -> Result<()> {
        let [a, b, c] = &self.abc;
        for x in &self.abc {
            k.ntt(stream, x, &self.omega_inv)?;
            k.scale_by_powers(stream, x, &self.g, self.roots.m_inv)?; // coefficients, shifted to gH
        }
        steps[0].record(stream).map_err(from_cust)?;
        for x in &self.abc {
            k.ntt(stream, x, &self.omega)?;
        }
        steps[1].record(stream).map_err(from_cust)?;
        k.quotient(stream, [a, b, c], self.roots.z_inv_on_coset)?;
        steps[2].record(stream).map_err(from_cust)?;
        self.transform(k, stream, a, Transform::CosetIntt)?;
        steps[3].record(stream).map_err(from_cust)
    }
}
