//! The h stage on the device: a, b, c to h = (A·B − C)/Z in their own three vectors, left on
//! the device for its MSM.
//! Kernels in `cuda/ntt/ntt.cuh`, launched by `ffi/ntt.rs`; the same transforms as
//! [`Domain`](crate::domain::Domain), so the result equals the CPU's bit for bit.

mod passes;

use blstrs::Scalar;
use cust::event::Event;
use cust::stream::Stream;
use ff::Field;

use self::passes::passes;
use crate::backend::cuda::ffi::geometry::{LG_PASS, LG_PASS_K};
use crate::backend::cuda::ffi::ntt::{lg_len, Epilogue, NttKernels, Pass, PowerTables, Root, Twiddles};
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

/// Enqueues the decimation-in-frequency passes of the NTT of `x` (⌈lg_n/8⌉ passes of
/// balanced stage counts, in place) but the last, which it returns for the caller's kernel:
/// `None` for a one-element transform, which has no pass (its epilogue alone finishes it).
fn dif_passes_but_last(k: &NttKernels, stream: &Stream, x: &DeviceVec<Scalar>, root: Root<'_>) -> Result<Option<Pass>> {
    let lg_n = lg_len(x);
    if lg_n == 0 {
        return Ok(None);
    }
    let plan = passes(lg_n, LG_PASS, LG_PASS_K);
    let (last, passes) = plan.split_last().expect("lg_n >= 1: one pass at least");
    for &pass in passes {
        k.dif_pass(stream, x, pass, root, None)?;
    }
    Ok(Some(*last))
}

/// The NTT of `x` (length 2^lg_n) with `root`, from natural order into `out` in natural
/// order, each output finished by `epi`: the passes of [`dif_passes_but_last`], the last of
/// which writes `out` (the bit reversal in its stores). `x` is left as scratch.
///
/// # Panics
/// As the passes' launches: if `x` is not a power of two long, `out` is shorter, the root's
/// table does not hold the len/2 twiddles or the epilogue's operands do not cover the length.
fn ntt(
    k: &NttKernels,
    stream: &Stream,
    (x, out): (&DeviceVec<Scalar>, &DeviceVec<Scalar>),
    root: Root<'_>,
    epi: Epilogue<'_>,
) -> Result<()> {
    match dif_passes_but_last(k, stream, x, root)? {
        Some(last) => k.dif_last_pass(stream, (x, out), last, root, epi),
        None => k.epilogue(stream, (x, out), epi),
    }
}

/// The NTT of `x` in place, from natural order to bit-reversed order (the passes of [`ntt`],
/// the last one in place), each output times c·bⁱ when `scale` holds the tables of c and b,
/// i the frequency it holds (its index bit-reversed).
fn ntt_to_bit_reversed(
    k: &NttKernels,
    stream: &Stream,
    x: &DeviceVec<Scalar>,
    root: Root<'_>,
    scale: Option<&PowerTables>,
) -> Result<()> {
    match dif_passes_but_last(k, stream, x, root)? {
        Some(last) => k.dif_pass(stream, x, last, root, scale),
        None => k.epilogue(stream, (x, x), Epilogue { scale, ..Epilogue::default() }),
    }
}

/// The NTT of `x`, held in bit-reversed order, into `out` (which may be `x`) in natural order,
/// each output finished by `epi`: the passes of [`ntt`] transposed, last first, in place in
/// `x` but the last, which writes `out`.
fn ntt_from_bit_reversed(
    k: &NttKernels,
    stream: &Stream,
    (x, out): (&DeviceVec<Scalar>, &DeviceVec<Scalar>),
    root: Root<'_>,
    epi: Epilogue<'_>,
) -> Result<()> {
    let lg_n = lg_len(x);
    if lg_n == 0 {
        return k.epilogue(stream, (x, out), epi);
    }
    let plan = passes(lg_n, LG_PASS, LG_PASS_K);
    let (first, passes) = plan.split_first().expect("lg_n >= 1: one pass at least");
    for &pass in passes.iter().rev() {
        k.dit_pass(stream, (x, x), pass, root, Epilogue::default())?;
    }
    k.dit_pass(stream, (x, out), *first, root, epi)
}

/// Device buffers and tables of one domain size: a, b, c (h is left in a), and the twiddle
/// and scaling tables (each scaling's constant folded into its table), computed on the
/// device.
#[derive(Debug)]
pub(crate) struct DeviceDomain {
    pub(crate) abc: [DeviceVec<Scalar>; 3],
    /// ωᵉ for e < m/2, which serve ω⁻¹ as well.
    twiddles: Twiddles,
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
            twiddles: k.twiddles(roots.omega, m, stream)?,
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

    /// Enqueues one transform of abc[0], in natural order; the result is abc[0] after (the
    /// last pass writes abc[1], and the two swap: abc[1] is left as scratch).
    pub(crate) fn transform(&mut self, k: &NttKernels, stream: &Stream, t: Transform) -> Result<()> {
        let [x, out, _] = &self.abc;
        let tw = &self.twiddles;
        let (root, epi) = match t {
            Transform::Ntt => (tw.forward(), Epilogue::default()),
            Transform::Intt => (tw.inverse(), Epilogue::scaled(&self.over_m)),
            Transform::CosetNtt => {
                k.epilogue(stream, (x, x), Epilogue::scaled(&self.g))?;
                (tw.forward(), Epilogue::default())
            }
            Transform::CosetIntt => (tw.inverse(), Epilogue::scaled(&self.g_inv_over_m)),
        };
        ntt(k, stream, (x, out), root, epi)?;
        self.abc.swap(0, 1);
        Ok(())
    }

    /// Enqueues the h stage on a, b, c (already on the device) in six transforms in their own
    /// vectors, as [`Domain::compute_h`](crate::domain::Domain::compute_h) computes it,
    /// recording `steps` after its three steps: the iNTTs of a and b into bit-reversed
    /// order, shifted to gH (×gⁱ/m); their coset NTTs back into natural order, b's last pass
    /// multiplying by a's into a (A·B on gH); and c's iNTT, its coefficients over Z
    /// (×1/(mZ)) into b, then the coset iNTT of the product less them (×g⁻ⁱ/(mZ)) into c:
    /// h = (P − C)/Z, which then takes a's place.
    pub(crate) fn h(&mut self, k: &NttKernels, stream: &Stream, steps: &[Event; 3]) -> Result<()> {
        let ([a, b, c], tw) = (&self.abc, &self.twiddles);
        for x in [a, b] {
            ntt_to_bit_reversed(k, stream, x, tw.inverse(), Some(&self.g_over_m))?;
        }
        steps[0].record(stream).map_err(from_cust)?;
        ntt_from_bit_reversed(k, stream, (a, a), tw.forward(), Epilogue::default())?;
        ntt_from_bit_reversed(k, stream, (b, a), tw.forward(), Epilogue { times: Some(a), ..Epilogue::default() })?;
        steps[1].record(stream).map_err(from_cust)?;
        ntt(k, stream, (c, b), tw.inverse(), Epilogue::scaled(&self.over_mz))?;
        let epi = Epilogue { scale: Some(&self.g_inv_over_mz), minus: Some(b), times: None };
        ntt(k, stream, (a, c), tw.inverse(), epi)?;
        self.abc.swap(0, 2);
        steps[2].record(stream).map_err(from_cust)
    }
}
