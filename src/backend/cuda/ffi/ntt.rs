//! Typed launches of the h stage's kernels (`cuda/ntt/ntt.cuh`), and the device tables they
//! read.

use blstrs::Scalar;
use cust::stream::Stream;
use ff::Field;

use super::{blocks, launch, limbs, u32_arg, Arg, DeviceVec, Fatbin, Function};
use crate::error::Result;

/// Threads per block of the element-wise kernels and the radix-8 pass.
const THREADS: u32 = 256;
/// Stages of the shared-memory kernel (`LG_BLOCK` in ntt.cuh).
const LG_BLOCK: u32 = 10;
/// log₂ of the low power table's length (`LG_TW_LO` in ntt.cuh).
const LG_TW_LO: u32 = 12;

/// The twiddles of one root w on the device: w^e for e < n/2, one flat table.
#[derive(Debug)]
pub(crate) struct Twiddles(DeviceVec<Scalar>);

/// Two-level power tables of a base b on the device: b^e = hi[e >> 12] · lo[e & 4095].
#[derive(Debug)]
pub(crate) struct PowerTables {
    lo: DeviceVec<Scalar>,
    hi: DeviceVec<Scalar>,
    /// Exponents below this are covered.
    covers: usize,
}

/// The h stage's kernels, looked up once.
#[derive(Debug)]
pub(crate) struct NttKernels {
    bit_reverse: Function,
    ntt_block: Function,
    ntt_radix8: Function,
    scale_by_powers: Function,
    quotient: Function,
    powers: Function,
}

impl NttKernels {
    pub(crate) fn new(fatbin: &Fatbin) -> Result<Self> {
        Ok(NttKernels {
            bit_reverse: fatbin.function("g16_bit_reverse")?,
            ntt_block: fatbin.function("g16_ntt_block")?,
            ntt_radix8: fatbin.function("g16_ntt_radix8")?,
            scale_by_powers: fatbin.function("g16_scale_by_powers")?,
            quotient: fatbin.function("g16_quotient")?,
            powers: fatbin.function("g16_powers")?,
        })
    }

    /// b⁰, b¹, …, bⁿ⁻¹ on the device (n >= 1), computed there, enqueued on `stream`.
    pub(crate) fn powers(&self, base: Scalar, n: usize, stream: &Stream) -> Result<DeviceVec<Scalar>> {
        let out = DeviceVec::<Scalar>::new(n.max(1))?;
        let args = [Arg::Ptr(out.ptr()), u32_arg(out.len()), Arg::Fr(limbs(base))];
        // SAFETY: (out, n, base) as declared; `out` holds n elements, one per thread.
        unsafe { launch(self.powers, blocks(out.len(), THREADS), THREADS, stream, &args)? };
        Ok(out)
    }

    /// The twiddle table of `root`, a primitive n-th root of unity.
    pub(crate) fn twiddles(&self, root: Scalar, n: usize, stream: &Stream) -> Result<Twiddles> {
        Ok(Twiddles(self.powers(root, n / 2, stream)?))
    }

    /// Tables for base^e, e < `covers`.
    pub(crate) fn power_tables(&self, base: Scalar, covers: usize, stream: &Stream) -> Result<PowerTables> {
        let lo_len = covers.clamp(1, 1 << LG_TW_LO);
        let hi_len = covers.div_ceil(1 << LG_TW_LO).max(1);
        let step = base.pow_vartime([1u64 << LG_TW_LO]);
        Ok(PowerTables { lo: self.powers(base, lo_len, stream)?, hi: self.powers(step, hi_len, stream)?, covers })
    }

    /// In place, the DIT NTT of `x` (length 2^k) with the root whose powers `tw` holds:
    /// bit reversal, ten stages in shared memory, then up to three stages per pass.
    ///
    /// # Panics
    /// If `x` is not a power of two long or `tw` does not hold the len/2 twiddles.
    pub(crate) fn ntt(&self, stream: &Stream, x: &DeviceVec<Scalar>, tw: &Twiddles) -> Result<()> {
        let lg_n = lg_len(x);
        if lg_n == 0 {
            return Ok(());
        }
        assert!(tw.0.len() >= x.len() / 2, "twiddle table of {} < {}", tw.0.len(), x.len() / 2);
        let (d_x, d_tw) = (Arg::Ptr(x.ptr()), Arg::Ptr(tw.0.ptr()));
        // The SAFETY argument of the three launches below: argument types match the
        // declarations in api.cu; `x` holds 2^lg_n elements and the table every twiddle
        // below 2^(lg_n-1) (asserted), which is all that the stages index.
        // SAFETY: as above.
        unsafe { launch(self.bit_reverse, blocks(x.len(), THREADS), THREADS, stream, &[d_x, Arg::U32(lg_n)])? };
        let lg_block = lg_n.min(LG_BLOCK);
        let (grid, block) = (1u32 << (lg_n - lg_block), 1u32 << (lg_block - 1));
        let args = [d_x, Arg::U32(lg_n), Arg::U32(lg_block), d_tw];
        // SAFETY: as above.
        unsafe { launch(self.ntt_block, grid, block, stream, &args)? };
        let mut s0 = lg_block + 1;
        while s0 <= lg_n {
            let k = (lg_n - s0 + 1).min(3);
            let args = [d_x, Arg::U32(lg_n), Arg::U32(s0), Arg::U32(k), d_tw];
            // SAFETY: as above, with 1 <= k <= 3 and s0 + k - 1 <= lg_n.
            unsafe { launch(self.ntt_radix8, blocks(x.len() >> k, THREADS), THREADS, stream, &args)? };
            s0 += k;
        }
        Ok(())
    }

    /// In place, xᵢ ← xᵢ·c·bⁱ with b's powers from `pw`.
    ///
    /// # Panics
    /// If `x` is not a power of two long or `pw` does not cover exponents below its length.
    pub(crate) fn scale_by_powers(
        &self,
        stream: &Stream,
        x: &DeviceVec<Scalar>,
        pw: &PowerTables,
        c: Scalar,
    ) -> Result<()> {
        let lg_n = lg_len(x);
        assert!(pw.covers >= x.len(), "power tables cover {} < {}", pw.covers, x.len());
        let args = [Arg::Ptr(x.ptr()), Arg::U32(lg_n), Arg::Ptr(pw.lo.ptr()), Arg::Ptr(pw.hi.ptr()), Arg::Fr(limbs(c))];
        // SAFETY: argument types match the declaration; `x` holds 2^lg_n elements and the
        // tables cover every index (asserted).
        unsafe { launch(self.scale_by_powers, blocks(x.len(), THREADS), THREADS, stream, &args) }
    }

    /// In place, aᵢ ← (aᵢ·bᵢ − cᵢ)·z_inv.
    ///
    /// # Panics
    /// If the lengths differ or are not a power of two.
    pub(crate) fn quotient(&self, stream: &Stream, [a, b, c]: [&DeviceVec<Scalar>; 3], z_inv: Scalar) -> Result<()> {
        assert!(a.len() == b.len() && b.len() == c.len(), "a, b, c lengths differ");
        let lg_n = lg_len(a);
        let args = [Arg::Ptr(a.ptr()), Arg::Ptr(b.ptr()), Arg::Ptr(c.ptr()), Arg::U32(lg_n), Arg::Fr(limbs(z_inv))];
        // SAFETY: argument types match the declaration; all three hold 2^lg_n elements.
        unsafe { launch(self.quotient, blocks(a.len(), THREADS), THREADS, stream, &args) }
    }
}

/// log₂ of the length, which must be a power of two.
fn lg_len(x: &DeviceVec<Scalar>) -> u32 {
    assert!(x.len().is_power_of_two(), "device vector of {} elements is not a power of two", x.len());
    x.len().trailing_zeros()
}
