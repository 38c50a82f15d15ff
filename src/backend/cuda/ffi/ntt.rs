//! The launches of the h stage's kernels (`cuda/ntt/ntt.cuh`), and the device tables they
//! read, which only these launches make: each launch asserts the shape that keeps its
//! kernel inside the vectors it is given.

use blstrs::Scalar;
use cust::stream::Stream;
use ff::Field;

use super::geometry::{LG_PASS, LG_PASS_K, LG_TW_LO, NTT_THREADS as THREADS};
use super::launch::{blocks, u32_arg, Fr};
use super::memory::{DevicePtr, DevicePtrMut, DeviceVec};
use crate::error::Result;

kernels! {
    /// The h stage's kernels (`cuda/ntt/ntt.cuh`).
    NttKernels {
        /// One decimation-in-frequency pass, in place: sub-transforms of 2^s elements cut into
        /// columns of 2^k, 2^lg_c columns per block; the last (s = k) scaled by the power
        /// tables at the bit-reversed index when they are given.
        fn g16_ntt_dif_pass(
            d_x: DevicePtrMut<Scalar>, lg_n: u32, s: u32, k: u32, lg_c: u32, tw: DevicePtr<Scalar>,
            inverse: u32, pw_lo: DevicePtr<Scalar>, pw_hi: DevicePtr<Scalar>,
        );
        /// One pass back from bit-reversed order (the transposed decimation in frequency), in
        /// place but the last (s = lg_n), which writes d_out finished by the epilogue.
        fn g16_ntt_dit_pass(
            d_x: DevicePtr<Scalar>, d_out: DevicePtrMut<Scalar>, lg_n: u32, s: u32, k: u32, lg_c: u32,
            tw: DevicePtr<Scalar>, inverse: u32, pw_lo: DevicePtr<Scalar>, pw_hi: DevicePtr<Scalar>,
            times: DevicePtr<Scalar>, minus: DevicePtr<Scalar>,
        );
        /// The last pass, out of place into natural order, each output finished by the
        /// epilogue (null pointers: steps not taken).
        fn g16_ntt_dif_last_pass(
            d_x: DevicePtr<Scalar>, d_out: DevicePtrMut<Scalar>, lg_n: u32, k: u32, lg_c: u32,
            tw: DevicePtr<Scalar>, inverse: u32, pw_lo: DevicePtr<Scalar>, pw_hi: DevicePtr<Scalar>,
            times: DevicePtr<Scalar>, minus: DevicePtr<Scalar>,
        );
        /// outᵢ ← the epilogue of xᵢ, element-wise.
        fn g16_ntt_epilogue(
            d_x: DevicePtr<Scalar>, d_out: DevicePtrMut<Scalar>, lg_n: u32, pw_lo: DevicePtr<Scalar>,
            pw_hi: DevicePtr<Scalar>, times: DevicePtr<Scalar>, minus: DevicePtr<Scalar>,
        );
        /// outᵢ = c·baseⁱ for i < n.
        fn g16_powers(out: DevicePtrMut<Scalar>, n: u32, base: Fr, c: Fr);
    }
}

/// The twiddles of a domain's root ω on the device: ω^e for e < n/2, one flat table, which
/// serves ω⁻¹ too (ω^(−e) = −ω^(n/2 − e), twiddles_t in ntt.cuh).
#[derive(Debug)]
pub(crate) struct Twiddles(DeviceVec<Scalar>);

/// The root a transform takes its twiddles from: the table's ω, or ω⁻¹ from the same table.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Root<'a> {
    twiddles: &'a Twiddles,
    inverse: bool,
}

impl Twiddles {
    /// ω: a forward transform's root.
    pub(crate) fn forward(&self) -> Root<'_> {
        Root { twiddles: self, inverse: false }
    }

    /// ω⁻¹: an inverse transform's root.
    pub(crate) fn inverse(&self) -> Root<'_> {
        Root { twiddles: self, inverse: true }
    }
}

/// Two-level power tables of a base b, times a constant c, on the device:
/// c·b^e = hi[e >> 12] · lo[e & 4095], with c folded into hi, so that a kernel scaling by them
/// pays one product for the factor; for b = 1, hi = [c] and no lo, and none.
#[derive(Debug)]
pub(crate) struct PowerTables {
    lo: Option<DeviceVec<Scalar>>,
    hi: DeviceVec<Scalar>,
    /// Exponents below this are covered.
    covers: usize,
}

/// How the last pass of a transform finishes each output xᵢ (`epilogue` in ntt.cuh): times
/// c·bⁱ from `scale`'s tables, times `times[i]`, less `minus[i]`, each where given. `times`
/// may be the output vector itself.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Epilogue<'a> {
    pub(crate) scale: Option<&'a PowerTables>,
    pub(crate) times: Option<&'a DeviceVec<Scalar>>,
    pub(crate) minus: Option<&'a DeviceVec<Scalar>>,
}

impl Epilogue<'_> {
    /// Scaled by the tables of c and b, nothing else.
    pub(crate) fn scaled(pw: &PowerTables) -> Epilogue<'_> {
        Epilogue { scale: Some(pw), ..Epilogue::default() }
    }

    /// The kernels' pointers (null where a step is not taken), once asserted that every table
    /// and vector covers the n outputs.
    fn pointers(&self, n: usize) -> [DevicePtr<Scalar>; 4] {
        assert!(self.scale.is_none_or(|pw| pw.covers >= n), "power tables short of {n}");
        assert!(self.times.into_iter().chain(self.minus).all(|v| v.len() >= n), "an operand shorter than {n}");
        let lo = |pw: &PowerTables| pw.lo.as_ref().map_or(DevicePtr::null(), DeviceVec::ptr);
        let (lo, hi) = self.scale.map_or((DevicePtr::null(), DevicePtr::null()), |pw| (lo(pw), pw.hi.ptr()));
        let vec = |v: Option<&DeviceVec<Scalar>>| v.map_or(DevicePtr::null(), DeviceVec::ptr);
        [lo, hi, vec(self.times), vec(self.minus)]
    }
}

/// One pass of an NTT (ntt.cuh): it cuts sub-transforms of 2^size elements into columns of
/// 2^k, a block taking 2^lg_c of them; the last pass has size = k.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Pass {
    pub(crate) size: u32,
    pub(crate) k: u32,
    pub(crate) lg_c: u32,
}

impl Pass {
    /// Asserts that this pass of a 2^lg_n transform keeps the kernel inside the vector and
    /// its shared memory: 1 ≤ k ≤ size ≤ lg_n, at most LG_PASS_K stages, 2^(k + lg_c) ≤
    /// 2^LG_PASS elements per block, and 2^(lg_n − k) columns in all.
    fn check(&self, lg_n: u32) {
        let Pass { size, k, lg_c } = *self;
        assert!(1 <= k && k <= size && size <= lg_n, "pass {self:?} of a 2^{lg_n} transform");
        assert!(k <= LG_PASS_K && k + lg_c <= LG_PASS && lg_c <= lg_n - k, "pass {self:?} of a 2^{lg_n} transform");
    }
}

impl NttKernels {
    /// c·b⁰, c·b¹, …, c·bⁿ⁻¹ on the device (n >= 1), computed there, enqueued on `stream`.
    fn powers(&self, base: Scalar, c: Scalar, n: usize, stream: &Stream) -> Result<DeviceVec<Scalar>> {
        let out = DeviceVec::<Scalar>::new(n.max(1))?;
        let grid = blocks(out.len(), THREADS);
        // SAFETY: `out` holds n elements, one per thread.
        unsafe { self.g16_powers(grid, THREADS, stream, out.ptr_mut(), u32_arg(out.len()), base.into(), c.into())? };
        Ok(out)
    }

    /// The twiddle table of `root`, a primitive n-th root of unity.
    pub(crate) fn twiddles(&self, root: Scalar, n: usize, stream: &Stream) -> Result<Twiddles> {
        Ok(Twiddles(self.powers(root, Scalar::ONE, n / 2, stream)?))
    }

    /// Tables for c·base^e, e < `covers`.
    pub(crate) fn power_tables(&self, base: Scalar, c: Scalar, covers: usize, stream: &Stream) -> Result<PowerTables> {
        if base == Scalar::ONE {
            return Ok(PowerTables { lo: None, hi: self.powers(base, c, 1, stream)?, covers });
        }
        let lo_len = covers.clamp(1, 1 << LG_TW_LO);
        let hi_len = covers.div_ceil(1 << LG_TW_LO).max(1);
        let step = base.pow_vartime([1u64 << LG_TW_LO]);
        let (lo, hi) = (self.powers(base, Scalar::ONE, lo_len, stream)?, self.powers(step, c, hi_len, stream)?);
        Ok(PowerTables { lo: Some(lo), hi, covers })
    }

    /// Enqueues one decimation-in-frequency pass of the NTT of `x`, in place, with the
    /// twiddles of `root`; the last (size = k) leaves the transform in bit-reversed order, each
    /// output times c·b^bitrev(i) when `scale` holds the tables of c and b.
    ///
    /// # Panics
    /// If `x` is not a power of two long, its twiddle table does not hold len/2, the pass
    /// does not fit the vector and the kernel's shared memory ([`Pass::check`]), or a scaled
    /// pass is not the last or its tables do not cover the length.
    pub(crate) fn dif_pass(
        &self,
        stream: &Stream,
        x: &DeviceVec<Scalar>,
        pass: Pass,
        root: Root<'_>,
        scale: Option<&PowerTables>,
    ) -> Result<()> {
        let (lg_n, [lo, hi, ..]) = checked((x, x), pass, root, Epilogue { scale, ..Epilogue::default() });
        assert!(scale.is_none() || pass.size == pass.k, "the pass {pass:?} scales but cuts further");
        let Pass { size, k, lg_c } = pass;
        // SAFETY: the 2^(lg_n−k−lg_c) blocks of 2^lg_c columns of 2^k elements cover the
        // 2^lg_n elements of `x` once, 2^(k+lg_c) <= 2^LG_PASS per block (its shared array),
        // and read twiddles below 2^(lg_n−1), all in its table, and the power tables, when given,
        // below 2^lg_n, which they cover (checked and asserted).
        unsafe {
            self.g16_ntt_dif_pass(
                1 << (lg_n - k - lg_c),
                THREADS,
                stream,
                x.ptr_mut(),
                lg_n,
                size,
                k,
                lg_c,
                root.twiddles.0.ptr(),
                u32::from(root.inverse),
                lo,
                hi,
            )
        }
    }

    /// Enqueues one pass of the transform of `x` back from bit-reversed order (the
    /// decimation-in-frequency pass `pass` transposed), in place but the last (size = lg_n),
    /// which writes `out` (which may be `x`) at the same indices, finished by `epi`.
    ///
    /// # Panics
    /// As [`dif_pass`](Self::dif_pass), or if `out` or an operand of `epi` is shorter than
    /// `x`, or a pass but the last is given an output or an epilogue.
    pub(crate) fn dit_pass(
        &self,
        stream: &Stream,
        (x, out): (&DeviceVec<Scalar>, &DeviceVec<Scalar>),
        pass: Pass,
        root: Root<'_>,
        epi: Epilogue<'_>,
    ) -> Result<()> {
        let (lg_n, [lo, hi, times, minus]) = checked((x, out), pass, root, epi);
        let finishes = !std::ptr::eq(x, out) || epi.scale.is_some() || epi.times.is_some() || epi.minus.is_some();
        assert!(!finishes || pass.size == lg_n, "the pass {pass:?} is not the last back, yet finishes");
        let Pass { size, k, lg_c } = pass;
        // SAFETY: as `dif_pass`'s, each block writing `out` at the indices it read of `x`, and
        // the epilogue's tables and vectors covering every index (asserted); a thread reads
        // `times` only at the index it writes.
        unsafe {
            self.g16_ntt_dit_pass(
                1 << (lg_n - k - lg_c),
                THREADS,
                stream,
                x.ptr(),
                out.ptr_mut(),
                lg_n,
                size,
                k,
                lg_c,
                root.twiddles.0.ptr(),
                u32::from(root.inverse),
                lo,
                hi,
                times,
                minus,
            )
        }
    }

    /// Enqueues the last pass of the NTT of `x` (size = k), out of place into `out` in
    /// natural order, each output finished by `epi`.
    ///
    /// # Panics
    /// As [`dif_pass`](Self::dif_pass), or if `out` or an operand of `epi` is shorter than
    /// `x` or its tables do not cover its length.
    pub(crate) fn dif_last_pass(
        &self,
        stream: &Stream,
        (x, out): (&DeviceVec<Scalar>, &DeviceVec<Scalar>),
        pass: Pass,
        root: Root<'_>,
        epi: Epilogue<'_>,
    ) -> Result<()> {
        let (lg_n, [lo, hi, times, minus]) = checked((x, out), pass, root, epi);
        assert!(pass.size == pass.k, "the last pass {pass:?} cuts no further");
        let Pass { k, lg_c, .. } = pass;
        let grid = 1 << (lg_n - k - lg_c);
        // SAFETY: the blocks of 2^lg_c columns of 2^k elements read `x` once and write every
        // index of `out` below 2^lg_n once (i = bitrev_k(j)·2^(lg_n−k) + r over rows j and
        // reversed columns r), 2^(k+lg_c) <= 2^LG_PASS elements per block (checked); the
        // twiddles, and the epilogue's tables and vectors, cover every index they are read at
        // (asserted); a thread reads `times` only at the index it writes.
        unsafe {
            self.g16_ntt_dif_last_pass(
                grid,
                THREADS,
                stream,
                x.ptr(),
                out.ptr_mut(),
                lg_n,
                k,
                lg_c,
                root.twiddles.0.ptr(),
                u32::from(root.inverse),
                lo,
                hi,
                times,
                minus,
            )
        }
    }

    /// Enqueues outᵢ ← the epilogue of xᵢ, element-wise (`out` may be `x`).
    ///
    /// # Panics
    /// If `x` is not a power of two long, or `out` or an operand of `epi` is shorter, or its
    /// tables do not cover its length.
    pub(crate) fn epilogue(
        &self,
        stream: &Stream,
        (x, out): (&DeviceVec<Scalar>, &DeviceVec<Scalar>),
        epi: Epilogue<'_>,
    ) -> Result<()> {
        let lg_n = lg_len(x);
        assert!(out.len() >= x.len(), "output vector of {} < {}", out.len(), x.len());
        let [lo, hi, times, minus] = epi.pointers(x.len());
        let grid = blocks(x.len(), THREADS);
        // SAFETY: one thread per index below 2^lg_n, which `x`, `out` and the epilogue's
        // tables and vectors cover (asserted), each index read and written by its thread alone.
        unsafe { self.g16_ntt_epilogue(grid, THREADS, stream, x.ptr(), out.ptr_mut(), lg_n, lo, hi, times, minus) }
    }
}

/// log₂ of `x`'s length and the epilogue's pointers, once asserted that the pass fits `x`
/// and the kernel's shared memory ([`Pass::check`]), and that `out`, the twiddles and the
/// epilogue's operands cover it.
fn checked(
    (x, out): (&DeviceVec<Scalar>, &DeviceVec<Scalar>),
    pass: Pass,
    root: Root<'_>,
    epi: Epilogue<'_>,
) -> (u32, [DevicePtr<Scalar>; 4]) {
    let lg_n = lg_len(x);
    pass.check(lg_n);
    let tw = &root.twiddles.0;
    assert!(tw.len() >= x.len() / 2, "twiddle table of {} < {}", tw.len(), x.len() / 2);
    assert!(out.len() >= x.len(), "output vector of {} < {}", out.len(), x.len());
    (lg_n, epi.pointers(x.len()))
}

/// log₂ of the length, which must be a power of two.
///
/// # Panics
/// If it is not.
pub(crate) fn lg_len(x: &DeviceVec<Scalar>) -> u32 {
    assert!(x.len().is_power_of_two(), "device vector of {} elements is not a power of two", x.len());
    x.len().trailing_zeros()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_outside_the_shared_memory_or_the_vector_is_refused() {
        let ok = |pass: Pass, lg_n| std::panic::catch_unwind(|| pass.check(lg_n)).is_ok();
        assert!(ok(Pass { size: 20, k: 8, lg_c: 2 }, 20) && ok(Pass { size: 4, k: 4, lg_c: 6 }, 10));
        let k = LG_PASS_K + 1;
        assert!(!ok(Pass { size: 20, k, lg_c: LG_PASS - k }, 20), "more stages than LG_PASS_K");
        assert!(!ok(Pass { size: 20, k: 8, lg_c: 3 }, 20), "more elements than LG_PASS");
        assert!(!ok(Pass { size: 21, k: 8, lg_c: 2 }, 20), "a sub-transform larger than the vector");
        assert!(!ok(Pass { size: 4, k: 4, lg_c: 1 }, 4), "more columns than the vector has");
        assert!(!ok(Pass { size: 4, k: 0, lg_c: 1 }, 4), "no stage");
    }
}
