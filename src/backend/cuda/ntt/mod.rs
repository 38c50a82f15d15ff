//! The h stage on the device: a, b, c to h = (a·b − c)/Z, left on the device for its MSM.
//! Kernels in `cuda/ntt/ntt.cuh`, launched by `ffi/ntt.rs`; the same transforms as
//! [`Domain`](crate::domain::Domain), so the result equals the CPU's bit for bit.

mod passes;

use blstrs::Scalar;
use cust::event::Event;
use cust::stream::Stream;
use ff::Field;

use self::passes::passes;
use crate::backend::cuda::ffi::geometry::{LG_PASS, LG_PASS_K};
use crate::backend::cuda::ffi::ntt::{lg_len, NttKernels, PowerTables, Twiddles};
use crate::backend::cuda::ffi::{from_cust, DeviceVec};
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

/// The NTT of `x` (length 2^lg_n) with the root whose powers `tw` holds, each output xᵢ
/// times c·bⁱ when `scale` holds the tables of c and b: ⌈lg_n/8⌉ decimation-in-frequency
/// passes of balanced stage counts, the last of which writes into `spare` in natural order
/// (the bit reversal in its stores). The two are then swapped: `x` holds the result.
///
/// # Panics
/// As the passes' launches: if `x` is not a power of two long, `spare` is shorter, `tw`
/// does not hold the len/2 twiddles or the tables do not cover the length.
fn ntt(
    k: &NttKernels,
    stream: &Stream,
    (x, spare): (&mut DeviceVec<Scalar>, &mut DeviceVec<Scalar>),
    tw: &Twiddles,
    scale: Option<&PowerTables>,
) -> Result<()> {
    let lg_n = lg_len(x);
    if lg_n == 0 {
        return scale.map_or(Ok(()), |pw| k.scale_by_powers(stream, x, pw));
    }
    let plan = passes(lg_n, LG_PASS, LG_PASS_K);
    let (last, passes) = plan.split_last().expect("lg_n >= 1: one pass at least");
    for &pass in passes {
        k.dif_pass(stream, x, pass, tw)?;
    }
    k.dif_last_pass(stream, (x, spare), *last, tw, scale)?;
    std::mem::swap(x, spare);
    Ok(())
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
    /// Buffers and tables of size m, the tables computed on `stream`, which is synchronised
    /// (so that an error after this frees no memory a kernel still writes).
    pub(crate) fn new(k: &NttKernels, m: usize, stream: &Stream) -> Result<Self> {
        let roots = Roots::new(m)?;
        let m = 1usize << roots.lg_m;
        let domain = DeviceDomain {
            abc: [DeviceVec::new(m)?, DeviceVec::new(m)?, DeviceVec::new(m)?],
            spare: DeviceVec::new(m)?,
            omega: k.twiddles(roots.omega, m, stream)?,
            omega_inv: k.twiddles(roots.omega_inv, m, stream)?,
            g: k.power_tables(Roots::g(), Scalar::ONE, m, stream)?,
            g_over_m: k.power_tables(Roots::g(), roots.m_inv, m, stream)?,
            g_inv_over_m: k.power_tables(Roots::g_inv(), roots.m_inv, m, stream)?,
            over_m: k.power_tables(Scalar::ONE, roots.m_inv, m, stream)?,
            roots,
        };
        stream.synchronize().map_err(from_cust)?;
        Ok(domain)
    }

    /// The domain size m.
    pub(crate) fn size(&self) -> usize {
        self.abc[0].len()
    }

    /// Enqueues one transform of abc[i]; the result is abc[i] after (its buffer may change).
    pub(crate) fn transform(&mut self, k: &NttKernels, stream: &Stream, i: usize, t: Transform) -> Result<()> {
        let (x, spare) = (&mut self.abc[i], &mut self.spare);
        match t {
            Transform::Ntt => ntt(k, stream, (x, spare), &self.omega, None),
            Transform::Intt => ntt(k, stream, (x, spare), &self.omega_inv, Some(&self.over_m)),
            Transform::CosetNtt => {
                k.scale_by_powers(stream, x, &self.g)?;
                ntt(k, stream, (x, spare), &self.omega, None)
            }
            Transform::CosetIntt => ntt(k, stream, (x, spare), &self.omega_inv, Some(&self.g_inv_over_m)),
        }
    }

    /// Enqueues the h stage on a, b, c (already on the device), recording `steps[0..4]` after
    /// its four steps: iNTT and the shift to gH (×gⁱ/m), the coset NTT, the quotient by Z, and
    /// the coset iNTT with the shift back. h is left in a.
    pub(crate) fn h(&mut self, k: &NttKernels, stream: &Stream, steps: &[Event; 4]) -> Result<()> {
        for x in &mut self.abc {
            // coefficients, shifted to gH
            ntt(k, stream, (x, &mut self.spare), &self.omega_inv, Some(&self.g_over_m))?;
        }
        steps[0].record(stream).map_err(from_cust)?;
        for x in &mut self.abc {
            ntt(k, stream, (x, &mut self.spare), &self.omega, None)?;
        }
        steps[1].record(stream).map_err(from_cust)?;
        let [a, b, c] = &self.abc;
        k.quotient(stream, [a, b, c], self.roots.z_inv_on_coset)?;
        steps[2].record(stream).map_err(from_cust)?;
        self.transform(k, stream, 0, Transform::CosetIntt)?;
        steps[3].record(stream).map_err(from_cust)
    }
}
