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
use crate::backend::cuda::ffi::ntt::{lg_len, Epilogue, NttKernels, PowerTables, Twiddles};
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

/// The NTT of `x` (length 2^lg_n) with the root whose powers `tw` holds, into `out`, each
/// output finished by `epi`: ⌈lg_n/8⌉ decimation-in-frequency passes of balanced stage counts,
/// in place in `x` but the last, which writes `out` in natural order (the bit reversal in its
/// stores). `x` is left as scratch.
///
/// # Panics
/// As the passes' launches: if `x` is not a power of two long, `out` is shorter, `tw` does
/// not hold the len/2 twiddles or the epilogue's operands do not cover the length.
fn ntt(
    k: &NttKernels,
    stream: &Stream,
    (x, out): (&DeviceVec<Scalar>, &DeviceVec<Scalar>),
    tw: &Twiddles,
    epi: Epilogue<'_>,
) -> Result<()> {
    let lg_n = lg_len(x);
    if lg_n == 0 {
        return k.epilogue(stream, (x, out), epi);
    }
    let plan = passes(lg_n, LG_PASS, LG_PASS_K);
    let (last, passes) = plan.split_last().expect("lg_n >= 1: one pass at least");
    for &pass in passes {
        k.dif_pass(stream, x, pass, tw)?;
    }
    k.dif_last_pass(stream, (x, out), *last, tw, epi)
}

/// [`ntt`] through the spare vector, which then takes `x`'s place: `x` holds the result.
fn ntt_in_place(
    k: &NttKernels,
    stream: &Stream,
    (x, spare): (&mut DeviceVec<Scalar>, &mut DeviceVec<Scalar>),
    tw: &Twiddles,
    epi: Epilogue<'_>,
) -> Result<()> {
    ntt(k, stream, (x, spare), tw, epi)?;
    std::mem::swap(x, spare);
    Ok(())
}

/// Device buffers and tables of one domain size: a, b, c (h is left in a), the spare vector a
/// transform writes into and swaps with its input, and the twiddle and scaling tables (each
/// scaling's constant folded into its table), computed on the device.
#[derive(Debug)]
pub(crate) struct DeviceDomain {
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
    /// 1/(mZ): c's iNTT in the h stage, its coefficients over Z.
    over_mz: PowerTables,
    /// g⁻ⁱ/(mZ): the h stage's coset iNTT, the shift back and the division by Z.
    g_inv_over_mz: PowerTables,
}

impl DeviceDomain {
    /// Buffers and tables of size m, the tables computed on `stream`, which is synchronised
    /// (so that an error after this frees no memory a kernel still writes).
    pub(crate) fn new(k: &NttKernels, m: usize, stream: &Stream) -> Result<Self> {
        let roots = Roots::new(m)?;
        let m = 1usize << roots.lg_m;
        let over_mz = roots.m_inv * roots.z_inv_on_coset;
        let domain = DeviceDomain {
            abc: [DeviceVec::new(m)?, DeviceVec::new(m)?, DeviceVec::new(m)?],
            spare: DeviceVec::new(m)?,
            omega: k.twiddles(roots.omega, m, stream)?,
            omega_inv: k.twiddles(roots.omega_inv, m, stream)?,
            g: k.power_tables(Roots::g(), Scalar::ONE, m, stream)?,
            g_over_m: k.power_tables(Roots::g(), roots.m_inv, m, stream)?,
            g_inv_over_m: k.power_tables(Roots::g_inv(), roots.m_inv, m, stream)?,
            over_m: k.power_tables(Scalar::ONE, roots.m_inv, m, stream)?,
            over_mz: k.power_tables(Scalar::ONE, over_mz, m, stream)?,
            g_inv_over_mz: k.power_tables(Roots::g_inv(), over_mz, m, stream)?,
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
        let (tw, epi) = match t {
            Transform::Ntt => (&self.omega, Epilogue::default()),
            Transform::Intt => (&self.omega_inv, Epilogue::scaled(&self.over_m)),
            Transform::CosetNtt => {
                k.epilogue(stream, (x, x), Epilogue::scaled(&self.g))?;
                (&self.omega, Epilogue::default())
            }
            Transform::CosetIntt => (&self.omega_inv, Epilogue::scaled(&self.g_inv_over_m)),
        };
        ntt_in_place(k, stream, (x, spare), tw, epi)
    }

    /// Enqueues the h stage on a, b, c (already on the device) in six transforms, as
    /// [`Domain::compute_h`](crate::domain::Domain::compute_h) computes it, recording `steps`
    /// after its three steps: the iNTTs (a and b shifted to gH, ×gⁱ/m; c over Z, ×1/(mZ)); the
    /// coset NTTs of a and b, b's last pass multiplying by a's into a (A·B on gH); and the
    /// coset iNTT of that, less c (×g⁻ⁱ/(mZ), −C/Z): h = (P − C)/Z, left in a.
    pub(crate) fn h(&mut self, k: &NttKernels, stream: &Stream, steps: &[Event; 3]) -> Result<()> {
        let DeviceDomain { abc: [a, b, c], spare, omega, omega_inv, g_over_m, over_mz, g_inv_over_mz, .. } = self;
        for (x, scale) in [(&mut *a, &*g_over_m), (&mut *b, g_over_m), (&mut *c, over_mz)] {
            ntt_in_place(k, stream, (x, spare), omega_inv, Epilogue::scaled(scale))?;
        }
        steps[0].record(stream).map_err(from_cust)?;
        ntt_in_place(k, stream, (a, spare), omega, Epilogue::default())?;
        ntt(k, stream, (b, a), omega, Epilogue { times: Some(a), ..Epilogue::default() })?;
        steps[1].record(stream).map_err(from_cust)?;
        let epi = Epilogue { scale: Some(g_inv_over_mz), minus: Some(c), times: None };
        ntt_in_place(k, stream, (a, spare), omega_inv, epi)?;
        steps[2].record(stream).map_err(from_cust)
    }
}
