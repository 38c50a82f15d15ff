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

/// Device buffers and tables of one domain size: a, b, c (h is left in a), the spare vector a
/// transform writes into and swaps with its input, and the twiddle and scaling tables (each
/// scaling's constant folded into its table), computed on the device.
#[derive(Debug)]
pub(crate) struct DeviceDomain {
    pub(crate) roots: Roots,
    pub(crate) abc: [DeviceVec<Scalar>; 3],
    spare: DeviceVec<Scalar>,
    omega: Twiddles,
    omega_inv: Twiddles,
    /// gⁱ: the shift to the coset before a coset NTT.
    g: PowerTables,
    /// gⁱ/m: an iNTT's 1/m and the shift to the coset, after it.
    g_over_m: PowerTables,
    /// g⁻ⁱ/m: a coset iNTT's 1/m and the shift back.
    g_inv_over_m: PowerTables,
    /// 1/m: an iNTT's.
    over_m: PowerTables,
}

impl DeviceDomain {
    pub(crate) fn new(k: &NttKernels, m: usize, stream: &Stream) -> Result<Self> {
        let roots = Roots::new(m)?;
        let m = 1usize << roots.lg_m;
        Ok(DeviceDomain {
            abc: [DeviceVec::new(m)?, DeviceVec::new(m)?, DeviceVec::new(m)?],
            spare: DeviceVec::new(m)?,
            omega: k.twiddles(roots.omega, m, stream)?,
            omega_inv: k.twiddles(roots.omega_inv, m, stream)?,
            g: k.power_tables(Roots::g(), Scalar::ONE, m, stream)?,
            g_over_m: k.power_tables(Roots::g(), roots.m_inv, m, stream)?,
            g_inv_over_m: k.power_tables(Roots::g_inv(), roots.m_inv, m, stream)?,
            over_m: k.power_tables(Scalar::ONE, roots.m_inv, m, stream)?,
            roots,
        })
    }

    /// The domain size m.
    pub(crate) fn size(&self) -> usize {
        self.abc[0].len()
    }

    /// Enqueues one transform of abc[i]; the result is abc[i] after (its buffer may change).
    pub(crate) fn transform(&mut self, k: &NttKernels, stream: &Stream, i: usize, t: Transform) -> Result<()> {
        let (x, spare) = (&mut self.abc[i], &mut self.spare);
        match t {
            Transform::Ntt => k.ntt(stream, x, spare, &self.omega, None),
            Transform::Intt => k.ntt(stream, x, spare, &self.omega_inv, Some(&self.over_m)),
            Transform::CosetNtt => {
                k.scale_by_powers(stream, x, &self.g)?;
                k.ntt(stream, x, spare, &self.omega, None)
            }
            Transform::CosetIntt => k.ntt(stream, x, spare, &self.omega_inv, Some(&self.g_inv_over_m)),
        }
    }

    /// Enqueues the h stage on a, b, c (already on the device), recording `steps[0..4]` after
    /// its four steps: iNTT and the shift to gH (×gⁱ/m), the coset NTT, the quotient by Z, and
    /// the coset iNTT with the shift back. h is left in a.
    pub(crate) fn h(&mut self, k: &NttKernels, stream: &Stream, steps: &[Event]) -> Result<()> {
        for x in &mut self.abc {
            // coefficients, shifted to gH
            k.ntt(stream, x, &mut self.spare, &self.omega_inv, Some(&self.g_over_m))?;
        }
        steps[0].record(stream).map_err(from_cust)?;
        for x in &mut self.abc {
            k.ntt(stream, x, &mut self.spare, &self.omega, None)?;
        }
        steps[1].record(stream).map_err(from_cust)?;
        let [a, b, c] = &self.abc;
        k.quotient(stream, [a, b, c], self.roots.z_inv_on_coset)?;
        steps[2].record(stream).map_err(from_cust)?;
        self.transform(k, stream, 0, Transform::CosetIntt)?;
        steps[3].record(stream).map_err(from_cust)
    }
}
