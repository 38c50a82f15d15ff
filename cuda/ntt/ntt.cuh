// SPDX-License-Identifier: MIT OR Apache-2.0
//
// NTT over BLS12-381 Fr for the Groth16 h stage, and its element-wise companions. The
// transform is the CPU backend's (src/domain.rs) DFT, computed another way (field arithmetic
// is exact, so the results match bit for bit): passes of up to LG_PASS_K radix-2 stages in
// shared memory, four-step style, in place. Forward by decimation in frequency
// (ntt_dif_pass), from natural order to bit-reversed order; back by its transpose
// (ntt_dit_pass), from bit-reversed order to natural order: the h stage alternates them, so
// that its vectors need no room but their own. A transform from natural order to natural
// order ends with ntt_dif_last_pass instead, which writes out of place, the bit reversal
// folded into its stores. The last pass finishes each output as the h stage asks (epilogue):
// scaled by c·b^i (an inverse transform's 1/m and coset shift), times another vector's
// element (the product A·B on the coset), less a third's (h = (P − C)/Z), so none of these
// costs a pass of its own.
// A 2^24 transform moves the vector 3 times; a pass copies its elements and roots into shared
// memory by cp.async (sm_80+), so that a thread's loads wait on DRAM together. Twiddles come
// from one flat table of the domain's ω^e (e < n/2), which serves ω⁻¹ too (twiddles_t): a
// twiddle costs a load rather than a product.
// Scalings c·b^i come from two small tables, hi[i >> 12] * lo[i & 4095] with c folded into hi:
// one product for the factor, one to apply it (a constant, b = 1, only the one).
#ifndef PINPROVE_NTT_NTT_CUH
#define PINPROVE_NTT_NTT_CUH

#include <cstdint>

#ifndef __CUDA_ARCH__
# error "device code only: nvcc compiles this file with --fatbin"
#endif

#include "../ff/fields.cuh"
#include "../geometry.h"

#define TW_LO (1u << LG_TW_LO)

// c·b^e from power tables: hi[e >> LG_TW_LO] · lo[e & (2^LG_TW_LO − 1)], c folded into hi;
// or, lo null (b = 1), the constant c = hi[0], no product.
__device__ __forceinline__ fr_t table_pow(const fr_t* lo, const fr_t* hi, uint32_t e)
{
    if (!lo)
        return hi[0];
    return hi[e >> LG_TW_LO] * lo[e & (TW_LO - 1)];
}

// dst = *src for one element, global to shared memory without a register: the copy is in
// flight until async_copies_wait(), so that a thread's loads all wait on DRAM at once (sm_80+).
__device__ __forceinline__ void async_copy(fr_t* dst, const fr_t* src)
{
    const uint32_t d = (uint32_t)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d), "l"(src));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d + 16), "l"((const char*)src + 16));
}

__device__ __forceinline__ void async_copies_wait()
{
    asm volatile("cp.async.wait_all;" ::: "memory");
}

// A pass's shared memory: 2^LG_PASS elements, and the 2^(LG_PASS_K − 1) roots of its stages.
// Raw words: a __shared__ array of fr_t would need a (forbidden) dynamic initialiser.
__device__ __forceinline__ fr_t* pass_shared(fr_t*& roots)
{
    __shared__ __align__(32) uint32_t s_words[(sizeof(fr_t) / sizeof(uint32_t)) << LG_PASS];
    __shared__ __align__(32) uint32_t r_words[(sizeof(fr_t) / sizeof(uint32_t)) << (LG_PASS_K - 1)];
    roots = reinterpret_cast<fr_t*>(r_words);
    return reinterpret_cast<fr_t*>(s_words);
}

// x_i finished: times c·b^i from the power tables, times[i], less minus[i], each step taken
// where its pointer is not null.
__device__ __forceinline__ fr_t epilogue(fr_t v, size_t i, const fr_t* pw_lo, const fr_t* pw_hi,
                                         const fr_t* times, const fr_t* minus)
{
    if (pw_hi)
        v = v * table_pow(pw_lo, pw_hi, (uint32_t)i);
    if (times)
        v = v * times[i];
    if (minus)
        v = v - minus[i];
    return v;
}

// The one twiddle table of a 2^lg_n domain, tw[e] = ω^e for e < n/2, serves both of its
// roots: ω^(n/2) = −1, and ω^(−e) = −ω^(n/2 − e).
struct twiddles_t {
    const fr_t* tw;
    uint32_t lg_n;
    bool inverse; // powers of ω⁻¹

    // Where the power e < n/2 of the root is in the table, up to its sign: e itself going
    // forward, n/2 − e back (the power then negated, but for e = 0).
    __device__ __forceinline__ size_t at(size_t e) const
    {   return inverse && e ? ((size_t)1 << (lg_n - 1)) - e : e;   }

    // The root to the power e < n.
    __device__ __forceinline__ fr_t pow(size_t e) const
    {
        const size_t half = (size_t)1 << (lg_n - 1), r = e & (half - 1);
        fr_t w = tw[at(r)];
        w.cneg((e >= half) != (inverse && r));
        return w;
    }

    // The stages' roots ω_{2^k}^(±q) = pow(q·2^(lg_n − k)) into `roots` by cp.async, in flight
    // with the caller's loads; then roots_loaded() by the same threads.
    __device__ __forceinline__ void copy_roots(fr_t* roots, uint32_t k) const
    {
        for (uint32_t i = threadIdx.x; i < (1u << k) / 2; i += blockDim.x)
            async_copy(&roots[i], &tw[at((size_t)i << (lg_n - k))]);
    }

    // Waits for this thread's copies (the caller's and the roots') and gives the roots it
    // copied their sign; the caller's barrier then shows them to the block.
    __device__ __forceinline__ void roots_loaded(fr_t* roots, uint32_t k) const
    {
        async_copies_wait();
        for (uint32_t i = threadIdx.x; i < (1u << k) / 2; i += blockDim.x)
            roots[i].cneg(inverse && i);
    }
};

// The k radix-2 stages of a block's 2^lg_c columns of 2^k elements in shared memory (row j
// of column c at s[j·C + c]; loaded, with the roots, before the barrier that precedes this),
// each butterfly's root ω_{2^r}^q: by decimation in frequency (r = k down to 1, (a + b,
// (a − b)·w): frequency k1 lands in row bitrev(k1)) or, `back`, its transpose (r = 1 up to
// k, (a + w·b, a − w·b): from rows in bit-reversed order to natural order).
template<bool back>
__device__ __forceinline__ void stages(fr_t* s, const fr_t* roots, uint32_t k, uint32_t lg_c)
{
    const uint32_t t = threadIdx.x, T = blockDim.x, C = 1u << lg_c, elems = C << k;
    for (uint32_t step = 0; step < k; step++) {
        const uint32_t r = back ? step + 1 : k - step, h = 1u << (r - 1);
        // Butterfly u: column cu, then group g, then q, so a warp shares q while a stage has
        // 32 butterflies of each q, and the twiddle-free ones (q = 0) take whole warps.
        const uint32_t lg_g = k - r;
        for (uint32_t u = t; u < elems / 2; u += T) {
            const uint32_t cu = u & (C - 1), gq = u >> lg_c, q = gq >> lg_g;
            const uint32_t p0 = ((gq & ((1u << lg_g) - 1)) << r) + q;
            const fr_t a = s[p0 * C + cu];
            fr_t b = s[(p0 + h) * C + cu];
            if (back) {
                if (q)
                    b = b * roots[q << (k - r)];
                s[p0 * C + cu] = a + b;
                s[(p0 + h) * C + cu] = a - b;
            } else {
                s[p0 * C + cu] = a + b;
                b = a - b;
                if (q)
                    b = b * roots[q << (k - r)];
                s[(p0 + h) * C + cu] = b;
            }
        }
        __syncthreads();
    }
}

// A four-step pass's blocks: every sub-transform of size 2^S is cut into 2^k-point columns
// at stride M = 2^(S-k) (column lo holds its elements lo, lo + M, ...), and a block holds
// 2^lg_c consecutive lo of one sub-transform, so that its rows are contiguous in memory.
struct four_step {
    uint32_t lg_n, S, k, lg_c;
    twiddles_t tw;

    // Element e of block b: its column c and row j, and its index in the vector.
    __device__ __forceinline__ size_t place(uint32_t e, uint32_t& c, uint32_t& j) const
    {
        const uint32_t lg_m = S - k;
        c = e & ((1u << lg_c) - 1);
        j = e >> lg_c;
        const size_t col = ((size_t)blockIdx.x << lg_c) + c;
        return ((col >> lg_m) << S) + ((size_t)j << lg_m) + (col & (((size_t)1 << lg_m) - 1));
    }

    // The block's elements into its shared array (returned) and the stages' roots into
    // `roots`, copied and waited for: each thread's own copies are done, visible to the
    // block after the caller's barrier.
    __device__ __forceinline__ fr_t* load(fr_t*& roots, const fr_t* d_x) const
    {
        fr_t* s = pass_shared(roots);
        const uint32_t C = 1u << lg_c, elems = C << k;
        uint32_t c, j;
        for (uint32_t e = threadIdx.x; e < elems; e += blockDim.x) {
            const size_t i = place(e, c, j);
            async_copy(&s[j * C + c], &d_x[i]);
        }
        tw.copy_roots(roots, k);
        tw.roots_loaded(roots, k);
        return s;
    }

    // v times the twiddle ω_{2^S}^(lo·bitrev(j)) of row j of column c, which makes the rows of
    // 2^(S-k) elements the next pass's sub-transforms (one for S = k).
    __device__ __forceinline__ fr_t twiddled(fr_t v, uint32_t c, uint32_t j) const
    {
        const size_t lo = (((size_t)blockIdx.x << lg_c) + c) & (((size_t)1 << (S - k)) - 1);
        const size_t exp = (lo * (__brev(j) >> (32 - k))) << (lg_n - S); // < 2^lg_n
        return exp ? v * tw.pow(exp) : v;
    }
};

// One pass of a size-2^lg_n transform by decimation in frequency, in place, four-step style:
// each column's DFT with the 2^k-th roots (frequency k1 lands in row bitrev(k1)), then its
// twiddles. After the last pass (S = k) the transform is in bit-reversed order; that pass can
// scale the output at i by c·b^bitrev(i) (the coefficient it holds; power tables where
// pw_hi is not null), or ntt_dif_last_pass takes its place and reorders.
__device__ __forceinline__ void ntt_dif_pass(fr_t* d_x, uint32_t lg_n, uint32_t S, uint32_t k, uint32_t lg_c,
                                             twiddles_t tw, const fr_t* pw_lo, const fr_t* pw_hi)
{
    fr_t* roots;
    const four_step pass{lg_n, S, k, lg_c, tw};
    fr_t* s = pass.load(roots, d_x);
    const uint32_t t = threadIdx.x, T = blockDim.x, C = 1u << lg_c, elems = C << k;
    uint32_t c, j;
    __syncthreads();
    stages<false>(s, roots, k, lg_c);
    for (uint32_t e = t; e < elems; e += T) {
        const size_t i = pass.place(e, c, j);
        fr_t v = pass.twiddled(s[j * C + c], c, j);
        if (pw_hi)
            v = v * table_pow(pw_lo, pw_hi, __brev((uint32_t)i) >> (32 - lg_n));
        d_x[i] = v;
    }
}

// One pass of a transform from bit-reversed order back to natural order: ntt_dif_pass
// transposed (the passes run last first), each column's twiddles first, then its stages
// back, in place; the first pass (S = lg_n) writes d_out (which may be d_x) at the same
// indices, finished by the epilogue (null pointers for the passes before it).
__device__ __forceinline__ void ntt_dit_pass(const fr_t* d_x, fr_t* d_out, uint32_t lg_n, uint32_t S, uint32_t k,
                                             uint32_t lg_c, twiddles_t tw, const fr_t* pw_lo, const fr_t* pw_hi,
                                             const fr_t* times, const fr_t* minus)
{
    fr_t* roots;
    const four_step pass{lg_n, S, k, lg_c, tw};
    fr_t* s = pass.load(roots, d_x);
    const uint32_t t = threadIdx.x, T = blockDim.x, C = 1u << lg_c, elems = C << k;
    uint32_t c, j;
    for (uint32_t e = t; e < elems; e += T) { // the elements this thread loaded itself
        pass.place(e, c, j);
        s[j * C + c] = pass.twiddled(s[j * C + c], c, j);
    }
    __syncthreads();
    stages<true>(s, roots, k, lg_c);
    for (uint32_t e = t; e < elems; e += T) {
        const size_t i = pass.place(e, c, j);
        d_out[i] = epilogue(s[j * C + c], i, pw_lo, pw_hi, times, minus);
    }
}

// The last pass (S = k), out of place into natural order: block b takes the 2^lg_c
// sub-transforms (columns of 2^k contiguous elements) whose indices reversed in L = lg_n − k
// bits are r = b·2^lg_c + c, and writes row j of column r to out[bitrev_k(j)·2^L + r]: where
// the bit reversal after the DIF would put it, each row's 2^lg_c elements contiguous, finished
// by the epilogue. times may be d_out itself: each index is read and written by one thread.
__device__ __forceinline__ void ntt_dif_last_pass(const fr_t* d_x, fr_t* d_out, uint32_t lg_n, uint32_t k,
                                                  uint32_t lg_c, twiddles_t tw, const fr_t* pw_lo,
                                                  const fr_t* pw_hi, const fr_t* times, const fr_t* minus)
{
    fr_t* roots;
    fr_t* s = pass_shared(roots);
    const uint32_t t = threadIdx.x, T = blockDim.x;
    const uint32_t L = lg_n - k, C = 1u << lg_c, rows = 1u << k, elems = C << k;
    const uint32_t r0 = blockIdx.x << lg_c;
    for (uint32_t e = t; e < elems; e += T) { // consecutive threads read along a column
        const uint32_t c = e >> k, j = e & (rows - 1);
        const size_t col = L ? __brev(r0 + c) >> (32 - L) : 0;
        async_copy(&s[j * C + c], &d_x[(col << k) + j]);
    }
    tw.copy_roots(roots, k);
    tw.roots_loaded(roots, k);
    __syncthreads();
    stages<false>(s, roots, k, lg_c);
    for (uint32_t e = t; e < elems; e += T) { // and write along a row
        const uint32_t c = e & (C - 1), j = e >> lg_c;
        const size_t i = ((size_t)(__brev(j) >> (32 - k)) << L) + r0 + c;
        d_out[i] = epilogue(s[j * C + c], i, pw_lo, pw_hi, times, minus);
    }
}

// out[i] = c·base^i, for the twiddle and power tables.
__device__ __forceinline__ void powers(fr_t* out, uint32_t n, fr_t base, fr_t c)
{
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = c * (base ^ i);
}

// out[i] = the epilogue of x[i], element-wise (out may be x): the coset shift before a coset
// NTT, and the whole of a one-element transform, which has no pass.
__device__ __forceinline__ void ntt_epilogue(const fr_t* d_x, fr_t* d_out, uint32_t lg_n, const fr_t* pw_lo,
                                             const fr_t* pw_hi, const fr_t* times, const fr_t* minus)
{
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >> lg_n)
        return;
    d_out[i] = epilogue(d_x[i], i, pw_lo, pw_hi, times, minus);
}

#endif
