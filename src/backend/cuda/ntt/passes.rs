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
