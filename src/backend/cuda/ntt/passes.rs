//! How a transform is cut into passes: ⌈lg_n/LG_PASS_K⌉ passes of balanced stage counts, each
//! block holding 2^LG_PASS elements; and a host model of the kernels' passes (ntt.cuh) that
//! checks the cut and the kernels' index arithmetic against the CPU's transform.

use crate::backend::cuda::ffi::ntt::Pass;

/// The passes of a 2^lg_n transform (lg_n ≥ 1) with 2^lg_pass elements per block and at most
/// lg_pass_k stages per pass: ⌈lg_n/lg_pass_k⌉ passes of balanced stage counts.
pub(super) fn passes(lg_n: u32, lg_pass: u32, lg_pass_k: u32) -> Vec<Pass> {
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

#[cfg(test)]
mod tests {
    use blstrs::Scalar;
    use ff::Field;

    use super::*;
    use crate::backend::cuda::ffi::geometry::{LG_PASS, LG_PASS_K};
    use crate::domain::{Domain, Roots};

    fn bitrev(v: usize, bits: u32) -> usize {
        if bits == 0 {
            0
        } else {
            v.reverse_bits() >> (usize::BITS - bits)
        }
    }

    /// Where row j of column `col` of a pass lies in the vector (`place` in ntt.cuh).
    fn place(&Pass { size, k, .. }: &Pass, col: usize, j: usize) -> usize {
        let lg_m = size - k;
        ((col >> lg_m) << size) + (j << lg_m) + (col & ((1 << lg_m) - 1))
    }

    /// The twiddle a pass that cuts further multiplies row j of column `col` by (after its
    /// stages going forward, before them going back): ω^(lo·bitrev(j)) of its sub-transform.
    fn twiddle(&Pass { size, k, .. }: &Pass, lg_n: u32, col: usize, j: usize, tw: &Table) -> Option<Scalar> {
        let exp = ((col & ((1 << (size - k)) - 1)) * bitrev(j, k)) << (lg_n - size);
        (exp != 0).then(|| tw.pow(exp))
    }

    /// A domain's one twiddle table, ω^e for e < n/2, read as ntt.cuh's twiddles_t reads it:
    /// for ω, or, `inverse`, for ω⁻¹ (ω^(−e) = −ω^(n/2 − e)).
    struct Table {
        tw: Vec<Scalar>,
        inverse: bool,
    }

    impl Table {
        fn new(n: usize, inverse: bool) -> Table {
            let omega = Roots::new(n).unwrap().omega;
            let tw = std::iter::successors(Some(Scalar::ONE), |w| Some(w * omega)).take(n / 2).collect();
            Table { tw, inverse }
        }

        /// The root to the power e < n.
        fn pow(&self, e: usize) -> Scalar {
            let (half, flip) = (self.tw.len(), self.inverse && e % self.tw.len() != 0);
            let r = e % half;
            let w = self.tw[if flip { half - r } else { r }];
            if (e >= half) != flip {
                -w
            } else {
                w
            }
        }
    }

    /// A pass's k stages on a block's shared array (row j of column c at s[j·cols + c]):
    /// decimation in frequency (r = k down to 1, (a + b, (a − b)·w)) or, `back`, its transpose
    /// (r = 1 up to k, (a + w·b, a − w·b)), each butterfly's root ω_{2^r}^q.
    fn stages(s: &mut [Scalar], k: u32, lg_c: u32, roots: &[Scalar], back: bool) {
        let cols = 1usize << lg_c;
        let order: Vec<u32> = if back { (1..=k).collect() } else { (1..=k).rev().collect() };
        for r in order {
            let (h, lg_g) = (1usize << (r - 1), k - r);
            for u in 0..(cols << k) / 2 {
                let (cu, gq) = (u & (cols - 1), u >> lg_c);
                let (q, p0) = (gq >> lg_g, ((gq & ((1 << lg_g) - 1)) << r) + (gq >> lg_g));
                let (lo, hi) = (p0 * cols + cu, (p0 + h) * cols + cu);
                let w = (q != 0).then(|| roots[q << (k - r)]);
                let (a, b) = (s[lo], s[hi]);
                (s[lo], s[hi]) = match (back, w) {
                    (false, w) => (a + b, w.map_or(a - b, |w| (a - b) * w)),
                    (true, w) => {
                        let b = w.map_or(b, |w| b * w);
                        (a + b, a - b)
                    }
                };
            }
        }
    }

    /// The forward transform as ntt.cuh computes it, block by block, on the host: the same
    /// passes, shared-memory layout, butterflies and twiddles; the last pass stores into
    /// natural order out of place (`ntt_dif_last_pass`), or, not `natural`, in place, leaving
    /// the transform in bit-reversed order (`ntt_dif_pass` with S = k).
    fn modelled_dif(x: &[Scalar], inverse: bool, (lg_pass, lg_pass_k): (u32, u32), natural: bool) -> Vec<Scalar> {
        let (n, lg_n) = (x.len(), x.len().trailing_zeros());
        let tw = Table::new(n, inverse);
        let (mut d, mut out) = (x.to_vec(), vec![Scalar::ZERO; n]);
        let plan = passes(lg_n, lg_pass, lg_pass_k);
        for (p, pass) in plan.iter().enumerate() {
            let (last, cols, rows, k) = (p + 1 == plan.len() && natural, 1usize << pass.lg_c, 1usize << pass.k, pass.k);
            let roots: Vec<Scalar> = (0..rows / 2).map(|i| tw.pow(i << (lg_n - k))).collect();
            for block in 0..1usize << (lg_n - k - pass.lg_c) {
                let col0 = block << pass.lg_c;
                let index = |c: usize, j: usize| match last {
                    true => (bitrev(col0 + c, lg_n - k) << k) + j,
                    false => place(pass, col0 + c, j),
                };
                let mut s = vec![Scalar::ZERO; cols * rows];
                for (c, j) in (0..cols).flat_map(|c| (0..rows).map(move |j| (c, j))) {
                    s[j * cols + c] = d[index(c, j)];
                }
                stages(&mut s, k, pass.lg_c, &roots, false);
                for (c, j) in (0..cols).flat_map(|c| (0..rows).map(move |j| (c, j))) {
                    let v = s[j * cols + c];
                    if last {
                        out[(bitrev(j, k) << (lg_n - k)) + col0 + c] = v;
                    } else {
                        d[index(c, j)] = twiddle(pass, lg_n, col0 + c, j, &tw).map_or(v, |w| v * w);
                    }
                }
            }
        }
        if natural {
            out
        } else {
            d
        }
    }

    /// The transform back from bit-reversed order to natural order, as ntt.cuh's
    /// `ntt_dit_pass` computes it on the host: the forward passes transposed, last first, each
    /// multiplying by its twiddles before its stages, in place.
    fn modelled_dit(x: &[Scalar], inverse: bool, (lg_pass, lg_pass_k): (u32, u32)) -> Vec<Scalar> {
        let (n, lg_n) = (x.len(), x.len().trailing_zeros());
        let tw = Table::new(n, inverse);
        let mut d = x.to_vec();
        for pass in passes(lg_n, lg_pass, lg_pass_k).iter().rev() {
            let (cols, rows, k) = (1usize << pass.lg_c, 1usize << pass.k, pass.k);
            let roots: Vec<Scalar> = (0..rows / 2).map(|i| tw.pow(i << (lg_n - k))).collect();
            for block in 0..1usize << (lg_n - k - pass.lg_c) {
                let col0 = block << pass.lg_c;
                let mut s = vec![Scalar::ZERO; cols * rows];
                for (c, j) in (0..cols).flat_map(|c| (0..rows).map(move |j| (c, j))) {
                    let v = d[place(pass, col0 + c, j)];
                    s[j * cols + c] = twiddle(pass, lg_n, col0 + c, j, &tw).map_or(v, |w| v * w);
                }
                stages(&mut s, k, pass.lg_c, &roots, true);
                for (c, j) in (0..cols).flat_map(|c| (0..rows).map(move |j| (c, j))) {
                    d[place(pass, col0 + c, j)] = s[j * cols + c];
                }
            }
        }
        d
    }

    fn bit_reversed(v: &[Scalar]) -> Vec<Scalar> {
        let bits = v.len().trailing_zeros();
        (0..v.len()).map(|i| v[bitrev(i, bits)]).collect()
    }

    #[test]
    fn the_kernels_passes_give_the_cpu_transform_in_natural_and_bit_reversed_order() {
        // The kernels' pass shape (2^10 elements per block, 8 stages per pass) and smaller ones,
        // so that small transforms take several passes, several blocks and several columns.
        for shape @ (lg_pass, lg_pass_k) in [(LG_PASS, LG_PASS_K), (4, 3), (3, 2), (2, 1)] {
            for lg_n in 1..=if lg_pass == LG_PASS { 17 } else { 11 } {
                let n = 1usize << lg_n;
                let x: Vec<Scalar> = (0..n as u64).map(|i| Scalar::from(i * i + 7)).collect();
                let mut expected = x.clone();
                Domain::new(n).unwrap().ntt(&mut expected);
                let at = format!("2^{lg_n}, blocks of 2^{lg_pass}, passes of {lg_pass_k} stages");
                assert!(modelled_dif(&x, false, shape, true) == expected, "natural order, {at}");
                assert!(modelled_dif(&x, false, shape, false) == bit_reversed(&expected), "in place, {at}");
                assert!(modelled_dit(&bit_reversed(&x), false, shape) == expected, "from bit-reversed order, {at}");
                // The inverse transform (less its 1/m) from the same table.
                let mut inverse = x.clone();
                Domain::new(n).unwrap().intt(&mut inverse);
                let m = Scalar::from(n as u64);
                let unscaled: Vec<Scalar> = inverse.iter().map(|v| v * m).collect();
                assert!(modelled_dif(&x, true, shape, true) == unscaled, "inverse, {at}");
                assert!(modelled_dit(&bit_reversed(&x), true, shape) == unscaled, "inverse back, {at}");
            }
        }
    }

    #[test]
    fn the_device_h_stage_modelled_gives_the_cpus_h() {
        // DeviceDomain::h's six transforms and their epilogues, on the models of its passes.
        for lg_n in [1, 2, 5, 9, 12] {
            let (n, roots) = (1usize << lg_n, Roots::new(1 << lg_n).unwrap());
            let shape = (LG_PASS.min(lg_n.max(2)), 2);
            let pow = |b: Scalar, e: usize| b.pow_vartime([e as u64]);
            let [a, b, c]: [Vec<Scalar>; 3] =
                std::array::from_fn(|v| (0..n as u64).map(|i| Scalar::from(i * i + 3 * v as u64 + 1)).collect());
            // iNTTs into bit-reversed order, each output i times g^bitrev(i)/m.
            let to_coset = |x: &[Scalar]| -> Vec<Scalar> {
                let d = modelled_dif(x, true, shape, false);
                d.iter().enumerate().map(|(i, v)| v * pow(Roots::g(), bitrev(i, lg_n)) * roots.m_inv).collect()
            };
            let a_on_coset = modelled_dit(&to_coset(&a), false, shape);
            let b_on_coset = modelled_dit(&to_coset(&b), false, shape);
            let product: Vec<Scalar> = a_on_coset.iter().zip(&b_on_coset).map(|(a, b)| a * b).collect();
            let over_mz = roots.m_inv * roots.z_inv_on_coset;
            let c_over_z: Vec<Scalar> = modelled_dif(&c, true, shape, true).iter().map(|v| v * over_mz).collect();
            let p = modelled_dif(&product, true, shape, true);
            let h: Vec<Scalar> = p
                .iter()
                .zip(&c_over_z)
                .enumerate()
                .map(|(i, (p, c))| p * pow(Roots::g_inv(), i) * over_mz - c)
                .collect();
            let (mut a, mut b, mut c) = (a, b, c);
            Domain::new(n).unwrap().compute_h(&mut a, &mut b, &mut c);
            assert!(h == a, "2^{lg_n}");
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
