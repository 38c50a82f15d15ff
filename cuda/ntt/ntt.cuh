// SPDX-License-Identifier: MIT OR Apache-2.0
//
// NTT over BLS12-381 Fr for the Groth16 h stage, and its element-wise companions. The
// transform is the CPU backend's (src/domain.rs) DFT, computed another way (field arithmetic
// is exact, so the results match bit for bit): decimation in frequency in passes of up to
// LG_PASS_K stages in shared memory, four-step style (ntt_dif_pass), the last of which
// (ntt_dif_last_pass) writes out of place in natural order, the bit reversal folded into its
// stores, and finishes each output as the h stage asks (epilogue): scaled by c·b^i (an
// inverse transform's 1/m and coset shift), times another vector's element (the product
// A·B on the coset), less a third's (h = (P − C)/Z), so none of these costs a pass of its own.
// A 2^24 transform moves the vector 3 times; a pass copies its elements and roots into shared
// memory by cp.async (sm_80+), so that a thread's loads wait on DRAM together. Twiddles w^e
// come from one flat table (e < n/2): a twiddle costs a load rather than a product.
// Scalings c·b^i come from two small tables, hi[i >> 12] * lo[i & 4095] with c folded into hi:
// one product for the factor, one to apply it.
#ifndef PINPROVE_NTT_NTT_CUH
#define PINPROVE_NTT_NTT_CUH

#include <cstdint>

#ifndef __CUDA_ARCH__
# error "device code only: nvcc compiles this file with --fatbin"
#endif

#include "../ff/fields.cuh"
#include "../geometry.h"

#define TW_LO (1u << LG_TW_LO)

__device__ __forceinline__ fr_t table_pow(const fr_t* lo, const fr_t* hi, uint32_t e)
{
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

// The k radix-2 DIF stages of a block's 2^lg_c columns of 2^k elements, in shared memory
// (row j of column c at s[j·C + c], loaded by the caller): frequency k1 lands in row
// bitrev(k1). The stages' roots ω_{2^k}^q = tw[q·2^(lg_n − k)] go to `roots` first.
__device__ __forceinline__ void dif_stages(fr_t* s, fr_t* roots, uint32_t k, uint32_t lg_c, uint32_t lg_n,
                                           const fr_t* tw)
{
    const uint32_t t = threadIdx.x, T = blockDim.x, C = 1u << lg_c, elems = C << k;
    for (uint32_t i = t; i < (1u << k) / 2; i += T)
        async_copy(&roots[i], &tw[(size_t)i << (lg_n - k)]);
    async_copies_wait(); // the roots and the caller's loads of s
    __syncthreads();
    for (uint32_t r = k; r >= 1; r--) {
        const uint32_t h = 1u << (r - 1);
        // Butterfly u: column cu, then group g, then q, so a warp shares q while a stage has
        // 32 butterflies of each q, and the twiddle-free ones (q = 0) take whole warps.
        const uint32_t lg_g = k - r;
        for (uint32_t u = t; u < elems / 2; u += T) {
            const uint32_t cu = u & (C - 1), gq = u >> lg_c, q = gq >> lg_g;
            const uint32_t p0 = ((gq & ((1u << lg_g) - 1)) << r) + q;
            const fr_t a = s[p0 * C + cu], b = s[(p0 + h) * C + cu];
            s[p0 * C + cu] = a + b;
            fr_t d = a - b;
            if (q)
                d = d * roots[q << (k - r)];
            s[(p0 + h) * C + cu] = d;
        }
        __syncthreads();
    }
}

// One pass of a size-2^lg_n transform by decimation in frequency, four-step style: every
// sub-transform of size 2^S is cut into 2^k-point columns at stride M = 2^(S-k) (column lo
// holds its elements lo, lo + M, ...). Each column gets its DFT with the 2^k-th roots
// (k radix-2 stages in shared memory; frequency k1 lands in row bitrev(k1)), then the twiddle
// ω_{2^S}^(lo·k1) that makes the rows of 2^(S-k) elements the next pass's sub-transforms
// (S > k: every pass but the last, ntt_dif_last_pass). A block holds 2^lg_c consecutive lo of
// one sub-transform, so its rows are contiguous in memory. tw[e] = ω^e, e < n/2.
__device__ __forceinline__ void ntt_dif_pass(fr_t* d_x, uint32_t lg_n, uint32_t S, uint32_t k,
                                             uint32_t lg_c, const fr_t* tw)
{
    fr_t* roots;
    fr_t* s = pass_shared(roots);
    const uint32_t t = threadIdx.x, T = blockDim.x;
    const uint32_t lg_m = S - k, C = 1u << lg_c, elems = C << k;
    const size_t col0 = (size_t)blockIdx.x << lg_c, m_mask = ((size_t)1 << lg_m) - 1;
    // Element e of the block: column c, row j, and its index in d_x.
    auto place = [&](uint32_t e, uint32_t& c, uint32_t& j) -> size_t {
        c = e & (C - 1);
        j = e >> lg_c;
        const size_t col = col0 + c;
        return ((col >> lg_m) << S) + ((size_t)j << lg_m) + (col & m_mask);
    };
    uint32_t c, j;
    for (uint32_t e = t; e < elems; e += T) {
        const size_t i = place(e, c, j);
        async_copy(&s[j * C + c], &d_x[i]);
    }
    dif_stages(s, roots, k, lg_c, lg_n, tw);
    const size_t half = (size_t)1 << (lg_n - 1);
    for (uint32_t e = t; e < elems; e += T) {
        const size_t i = place(e, c, j);
        fr_t v = s[j * C + c];
        const size_t lo = (col0 + c) & m_mask, k1 = __brev(j) >> (32 - k);
        const size_t exp = (lo * k1) << (lg_n - S); // < 2^lg_n
        if (exp) {
            fr_t w = tw[exp & (half - 1)];
            w.cneg(exp >= half); // ω^(n/2) = -1
            v = v * w;
        }
        d_x[i] = v;
    }
}

// x_i finished: times c·b^i from the power tables, times[i], less minus[i], each step taken
// where its pointer is not null.
__device__ __forceinline__ fr_t epilogue(fr_t v, size_t i, const fr_t* pw_lo, const fr_t* pw_hi,
                                         const fr_t* times, const fr_t* minus)
{
    if (pw_lo)
        v = v * table_pow(pw_lo, pw_hi, (uint32_t)i);
    if (times)
        v = v * times[i];
    if (minus)
        v = v - minus[i];
    return v;
}

// The last pass (S = k), out of place into natural order: block b takes the 2^lg_c
// sub-transforms (columns of 2^k contiguous elements) whose indices reversed in L = lg_n − k
// bits are r = b·2^lg_c + c, and writes row j of column r to out[bitrev_k(j)·2^L + r]: where
// the bit reversal after the DIF would put it, each row's 2^lg_c elements contiguous, finished
// by the epilogue. times may be d_out itself: each index is read and written by one thread.
__device__ __forceinline__ void ntt_dif_last_pass(const fr_t* d_x, fr_t* d_out, uint32_t lg_n, uint32_t k,
                                                  uint32_t lg_c, const fr_t* tw, const fr_t* pw_lo,
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
    dif_stages(s, roots, k, lg_c, lg_n, tw);
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
