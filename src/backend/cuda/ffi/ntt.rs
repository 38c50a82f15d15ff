//! Typed launches of the h stage's kernels (`cuda/ntt/ntt.cuh`), and the device tables they
//! read.

use blstrs::Scalar;
use cust::stream::Stream;
use ff::Field;

use super::{blocks, launch, limbs, u32_arg, Arg, DeviceVec, Fatbin, Function};
use crate::error::Result;

/// Threads per block of every NTT kernel.
const THREADS: u32 = 256;
/// Elements in shared memory per block of a pass, and most stages per pass (`LG_PASS`,
/// `LG_PASS_K` in ntt.cuh).
const LG_PASS: u32 = 10;
const LG_PASS_K: u32 = 8;
/// log₂ of the low power table's length (`LG_TW_LO` in ntt.cuh).
const LG_TW_LO: u32 = 12;
/// log₂ of a bit-reversal tile's side (`LG_TILE` in ntt.cuh): a tile is one block's threads.
const LG_TILE: u32 = 4;

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
    bit_reverse_tiles: Function,
    dif_pass: Function,
    scale_by_powers: Function,
    quotient: Function,
    powers: Function,
}

impl NttKernels {
    pub(crate) fn new(fatbin: &Fatbin) -> Result<Self> {
        Ok(NttKernels {
            bit_reverse: fatbin.function("g16_bit_reverse")?,
            bit_reverse_tiles: fatbin.function("g16_bit_reverse_tiles")?,
            dif_pass: fatbin.function("g16_ntt_dif_pass")?,
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

    /// In place, the NTT of `x` (length 2^lg_n) with the root whose powers `tw` holds:
    /// ⌈lg_n/8⌉ decimation-in-frequency passes of balanced stage counts, then the bit reversal
    /// back to natural order (in tiles from 2^(2·LG_TILE) elements).
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
        // The SAFETY argument of the launches below: argument types match the declarations in
        // api.cu; `x` holds 2^lg_n elements and the table every twiddle below 2^(lg_n-1)
        // (asserted), which is all that the passes index.
        let passes = lg_n.div_ceil(LG_PASS_K);
        let mut size = lg_n; // lg of the sub-transforms this pass cuts
        for pass in 0..passes {
            let k = size.div_ceil(passes - pass); // 1 <= k <= LG_PASS_K
            let stride = size - k;
            // Columns per block: 2^LG_PASS elements, within one sub-transform but the last.
            let lg_c = (LG_PASS - k).min(if stride == 0 { lg_n - k } else { stride });
            let args = [d_x, Arg::U32(lg_n), Arg::U32(size), Arg::U32(k), Arg::U32(lg_c), d_tw];
            // SAFETY: as above; the 2^(lg_n-k-lg_c) blocks of 2^lg_c columns of 2^k elements
            // cover the vector once, 2^(k+lg_c) <= 2^LG_PASS elements each (the shared array).
            unsafe { launch(self.dif_pass, 1 << (lg_n - k - lg_c), THREADS, stream, &args)? };
            size = stride;
        }
        if lg_n >= 2 * LG_TILE {
            // SAFETY: as above; one block of 2^(2·LG_TILE) threads per tile, 2^(lg_n − 2·LG_TILE)
            // tiles: the kernel's index bits (hi, mid, lo) cover the vector once.
            unsafe {
                launch(
                    self.bit_reverse_tiles,
                    1 << (lg_n - 2 * LG_TILE),
                    1 << (2 * LG_TILE),
                    stream,
                    &[d_x, Arg::U32(lg_n)],
                )
            }
        } else {
            // SAFETY: as above.
            unsafe { launch(self.bit_reverse, blocks(x.len(), THREADS), THREADS, stream, &[d_x, Arg::U32(lg_n)]) }
        }
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
