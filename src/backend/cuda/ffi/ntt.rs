//! Typed launches of the h stage's kernels (`cuda/ntt/ntt.cuh`), and the device tables they
//! read.

use blstrs::Scalar;
use cust::stream::Stream;
use ff::Field;

use super::{blocks, limbs, u32_arg, DevicePtr, DeviceVec, FrLimbs};
use crate::backend::cuda::geometry::{LG_PASS, LG_PASS_K, LG_TW_LO, NTT_THREADS as THREADS};
use crate::error::Result;

/// The twiddles of one root w on the device: w^e for e < n/2, one flat table.
#[derive(Debug)]
pub(crate) struct Twiddles(DeviceVec<Scalar>);

/// Two-level power tables of a base b, times a constant c, on the device:
/// c·b^e = hi[e >> 12] · lo[e & 4095], with c folded into hi, so that a kernel scaling by them
/// pays one product for the factor.
#[derive(Debug)]
pub(crate) struct PowerTables {
    lo: DeviceVec<Scalar>,
    hi: DeviceVec<Scalar>,
    /// Exponents below this are covered.
    covers: usize,
}

kernels! {
    /// The h stage's kernels (`cuda/ntt/ntt.cuh`).
    NttKernels {
        /// One decimation-in-frequency pass, in place: sub-transforms of 2^s elements cut into
        /// columns of 2^k, 2^lg_c columns per block.
        fn g16_ntt_dif_pass(d_x: DevicePtr, lg_n: u32, s: u32, k: u32, lg_c: u32, tw: DevicePtr);
        /// The last pass, out of place into natural order, scaled by the power tables when
        /// they are given (null pointers: not scaled).
        fn g16_ntt_dif_last_pass(
            d_x: DevicePtr, d_out: DevicePtr, lg_n: u32, k: u32, lg_c: u32, tw: DevicePtr, pw_lo: DevicePtr,
            pw_hi: DevicePtr,
        );
        /// xᵢ ← xᵢ·c·bⁱ from the power tables.
        fn g16_scale_by_powers(d_x: DevicePtr, lg_n: u32, pw_lo: DevicePtr, pw_hi: DevicePtr);
        /// aᵢ ← (aᵢ·bᵢ − cᵢ)·z_inv.
        fn g16_quotient(d_a: DevicePtr, d_b: DevicePtr, d_c: DevicePtr, lg_n: u32, z_inv: FrLimbs);
        /// outᵢ = c·baseⁱ for i < n.
        fn g16_powers(out: DevicePtr, n: u32, base: FrLimbs, c: FrLimbs);
    }
}

impl NttKernels {
    /// c·b⁰, c·b¹, …, c·bⁿ⁻¹ on the device (n >= 1), computed there, enqueued on `stream`.
    fn powers(&self, base: Scalar, c: Scalar, n: usize, stream: &Stream) -> Result<DeviceVec<Scalar>> {
        let out = DeviceVec::<Scalar>::new(n.max(1))?;
        let grid = blocks(out.len(), THREADS);
        // SAFETY: `out` holds n elements, one per thread.
        unsafe { self.g16_powers(grid, THREADS, stream, out.ptr(), u32_arg(out.len()), limbs(base), limbs(c))? };
        Ok(out)
    }

    /// The twiddle table of `root`, a primitive n-th root of unity.
    pub(crate) fn twiddles(&self, root: Scalar, n: usize, stream: &Stream) -> Result<Twiddles> {
        Ok(Twiddles(self.powers(root, Scalar::ONE, n / 2, stream)?))
    }

    /// Tables for c·base^e, e < `covers`.
    pub(crate) fn power_tables(&self, base: Scalar, c: Scalar, covers: usize, stream: &Stream) -> Result<PowerTables> {
        let lo_len = covers.clamp(1, 1 << LG_TW_LO);
        let hi_len = covers.div_ceil(1 << LG_TW_LO).max(1);
        let step = base.pow_vartime([1u64 << LG_TW_LO]);
        let (lo, hi) = (self.powers(base, Scalar::ONE, lo_len, stream)?, self.powers(step, c, hi_len, stream)?);
        Ok(PowerTables { lo, hi, covers })
    }

    /// The NTT of `x` (length 2^lg_n) with the root whose powers `tw` holds, each output xᵢ
    /// times c·bⁱ when `scale` holds the tables of c and b: ⌈lg_n/8⌉ decimation-in-frequency
    /// passes of balanced stage counts, the last of which writes into `spare` in natural order
    /// (the bit reversal in its stores). The two are then swapped: `x` holds the result.
    ///
    /// # Panics
    /// If `x` is not a power of two long, `spare` is shorter, `tw` does not hold the len/2
    /// twiddles or the tables do not cover the length.
    pub(crate) fn ntt(
        &self,
        stream: &Stream,
        x: &mut DeviceVec<Scalar>,
        spare: &mut DeviceVec<Scalar>,
        tw: &Twiddles,
        scale: Option<&PowerTables>,
    ) -> Result<()> {
        let lg_n = lg_len(x);
        if lg_n == 0 {
            return scale.map_or(Ok(()), |pw| self.scale_by_powers(stream, x, pw));
        }
        assert!(tw.0.len() >= x.len() / 2, "twiddle table of {} < {}", tw.0.len(), x.len() / 2);
        assert!(spare.len() >= x.len(), "spare vector of {} < {}", spare.len(), x.len());
        assert!(scale.is_none_or(|pw| pw.covers >= x.len()), "power tables short of {}", x.len());
        let (d_x, d_tw) = (x.ptr(), tw.0.ptr());
        // The SAFETY argument of the launches below: `x` and `spare` hold 2^lg_n elements and the table every twiddle below
        // 2^(lg_n-1) (asserted), which is all that the passes index.
        let plan = passes(lg_n, LG_PASS, LG_PASS_K);
        let (last, passes) = plan.split_last().expect("lg_n >= 1: one pass at least");
        for &Pass { size, k, lg_c } in passes {
            // SAFETY: as above; the 2^(lg_n-k-lg_c) blocks of 2^lg_c columns of 2^k elements
            // cover the vector once, 2^(k+lg_c) <= 2^LG_PASS elements each (the shared array).
            unsafe { self.g16_ntt_dif_pass(1 << (lg_n - k - lg_c), THREADS, stream, d_x, lg_n, size, k, lg_c, d_tw)? };
        }
        let Pass { k, lg_c, .. } = *last;
        let (lo, hi) = scale.map_or((0, 0), |pw| (pw.lo.ptr(), pw.hi.ptr()));
        let grid = 1 << (lg_n - k - lg_c);
        // SAFETY: as above; the 2^(lg_n-k-lg_c) blocks of 2^lg_c columns of 2^k elements read
        // `x` once and write every index of `spare` once (i = bitrev_k(j)·2^(lg_n−k) + r over
        // rows j and reversed columns r), 2^(k+lg_c) <= 2^LG_PASS elements each; the power
        // tables, when given, cover every index (asserted).
        unsafe { self.g16_ntt_dif_last_pass(grid, THREADS, stream, d_x, spare.ptr(), lg_n, k, lg_c, d_tw, lo, hi)? };
        std::mem::swap(x, spare);
        Ok(())
    }

    /// In place, xᵢ ← xᵢ·c·bⁱ from the tables of c and b.
    ///
    /// # Panics
    /// If `x` is not a power of two long or `pw` does not cover exponents below its length.
    pub(crate) fn scale_by_powers(&self, stream: &Stream, x: &DeviceVec<Scalar>, pw: &PowerTables) -> Result<()> {
        let lg_n = lg_len(x);
        assert!(pw.covers >= x.len(), "power tables cover {} < {}", pw.covers, x.len());
        let grid = blocks(x.len(), THREADS);
        // SAFETY: `x` holds 2^lg_n elements and the tables cover every index (asserted).
        unsafe { self.g16_scale_by_powers(grid, THREADS, stream, x.ptr(), lg_n, pw.lo.ptr(), pw.hi.ptr()) }
    }

    /// In place, aᵢ ← (aᵢ·bᵢ − cᵢ)·z_inv.
    ///
    /// # Panics
    /// If the lengths differ or are not a power of two.
    pub(crate) fn quotient(&self, stream: &Stream, [a, b, c]: [&DeviceVec<Scalar>; 3], z_inv: Scalar) -> Result<()> {
        assert!(a.len() == b.len() && b.len() == c.len(), "a, b, c lengths differ");
        let lg_n = lg_len(a);
        let grid = blocks(a.len(), THREADS);
        // SAFETY: all three hold 2^lg_n elements, one thread each.
        unsafe { self.g16_quotient(grid, THREADS, stream, a.ptr(), b.ptr(), c.ptr(), lg_n, limbs(z_inv)) }
    }
}

/// One pass of the NTT: it cuts sub-transforms of 2^size elements into columns of 2^k, a
/// block taking 2^lg_c of them (ntt.cuh); the last pass has size = k.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Pass {
    size: u32,
    k: u32,
    lg_c: u32,
}

/// The passes of a 2^lg_n transform (lg_n ≥ 1) with 2^lg_pass elements per block and at most
/// lg_pass_k stages per pass: ⌈lg_n/lg_pass_k⌉ passes of balanced stage counts.
fn passes(lg_n: u32, lg_pass: u32, lg_pass_k: u32) -> Vec<Pass> {
    let count = lg_n.div_ceil(lg_pass_k);
    let mut size = lg_n; // lg of the sub-transforms this pass cuts
    (0..count)
        .map(|pass| {
            // Stages, 1 <= k <= lg_pass_k, and columns per block: 2^lg_pass elements, within
            // one sub-transform but the last.
            let k = size.div_ceil(count - pass);
            let lg_c = (lg_pass - k).min(if size == k { lg_n - k } else { size - k });
            let this = Pass { size, k, lg_c };
            size -= k;
            this
        })
        .collect()
}

/// log₂ of the length, which must be a power of two.
fn lg_len(x: &DeviceVec<Scalar>) -> u32 {
    assert!(x.len().is_power_of_two(), "device vector of {} elements is not a power of two", x.len());
    x.len().trailing_zeros()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{Domain, Roots};

    fn bitrev(v: usize, bits: u32) -> usize {
        if bits == 0 {
            0
        } else {
            v.reverse_bits() >> (usize::BITS - bits)
        }
    }

    /// The transform as ntt.cuh computes it, block by block, on the host: the same passes,
    /// shared-memory layout, butterflies, twiddles and last-pass loads and stores.
    fn modelled_ntt(x: &[Scalar], omega: Scalar, lg_pass: u32, lg_pass_k: u32) -> Vec<Scalar> {
        let (n, lg_n) = (x.len(), x.len().trailing_zeros());
        let tw: Vec<Scalar> = std::iter::successors(Some(Scalar::ONE), |w| Some(w * omega)).take(n / 2).collect();
        let (mut d, mut out) = (x.to_vec(), vec![Scalar::ZERO; n]);
        let plan = passes(lg_n, lg_pass, lg_pass_k);
        for (p, &Pass { size, k, lg_c }) in plan.iter().enumerate() {
            let (last, cols, rows, lg_m) = (p + 1 == plan.len(), 1usize << lg_c, 1usize << k, size - k);
            let roots: Vec<Scalar> = (0..rows / 2).map(|i| tw[i << (lg_n - k)]).collect();
            for block in 0..1usize << (lg_n - k - lg_c) {
                let col0 = block << lg_c;
                let index = |c: usize, j: usize| match last {
                    true => (bitrev(col0 + c, lg_n - k) << k) + j,
                    false => (((col0 + c) >> lg_m) << size) + (j << lg_m) + ((col0 + c) & ((1 << lg_m) - 1)),
                };
                let mut s = vec![Scalar::ZERO; cols * rows];
                for (c, j) in (0..cols).flat_map(|c| (0..rows).map(move |j| (c, j))) {
                    s[j * cols + c] = d[index(c, j)];
                }
                for r in (1..=k).rev() {
                    let (h, lg_g) = (1usize << (r - 1), k - r);
                    for u in 0..cols * rows / 2 {
                        let (cu, gq) = (u & (cols - 1), u >> lg_c);
                        let (q, p0) = (gq >> lg_g, ((gq & ((1 << lg_g) - 1)) << r) + (gq >> lg_g));
                        let (a, b) = (s[p0 * cols + cu], s[(p0 + h) * cols + cu]);
                        s[p0 * cols + cu] = a + b;
                        s[(p0 + h) * cols + cu] = if q == 0 { a - b } else { (a - b) * roots[q << (k - r)] };
                    }
                }
                for (c, j) in (0..cols).flat_map(|c| (0..rows).map(move |j| (c, j))) {
                    let v = s[j * cols + c];
                    if last {
                        out[(bitrev(j, k) << (lg_n - k)) + col0 + c] = v;
                    } else {
                        let exp = (((col0 + c) & ((1 << lg_m) - 1)) * bitrev(j, k)) << (lg_n - size);
                        let w = tw[exp & (n / 2 - 1)];
                        d[index(c, j)] = match exp {
                            0 => v,
                            e if e >= n / 2 => -(v * w),
                            _ => v * w,
                        };
                    }
                }
            }
        }
        out
    }

    #[test]
    fn the_kernels_passes_and_natural_order_stores_give_the_cpu_transform() {
        // The kernels' pass shape (2^10 elements per block, 8 stages per pass) and smaller ones,
        // so that small transforms take several passes, several blocks and several columns.
        for (lg_pass, lg_pass_k) in [(LG_PASS, LG_PASS_K), (4, 3), (3, 2), (2, 1)] {
            for lg_n in 1..=if lg_pass == LG_PASS { 17 } else { 11 } {
                let n = 1usize << lg_n;
                let x: Vec<Scalar> = (0..n as u64).map(|i| Scalar::from(i * i + 7)).collect();
                let mut expected = x.clone();
                Domain::new(n).unwrap().ntt(&mut expected);
                let got = modelled_ntt(&x, Roots::new(n).unwrap().omega, lg_pass, lg_pass_k);
                assert!(got == expected, "2^{lg_n}, blocks of 2^{lg_pass}, passes of {lg_pass_k} stages");
            }
        }
    }

    #[test]
    fn passes_cover_every_stage_within_the_shared_memory() {
        for lg_n in 1..=28 {
            let plan = passes(lg_n, LG_PASS, LG_PASS_K);
            assert_eq!(plan.iter().map(|p| p.k).sum::<u32>(), lg_n);
            assert!(plan.iter().all(|p| p.k <= LG_PASS_K && p.k + p.lg_c <= LG_PASS), "{plan:?}");
            assert_eq!(plan.last().map(|p| p.size == p.k), Some(true));
        }
    }
}
