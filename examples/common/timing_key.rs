//! Timing-only proving keys: points of the right shape, made fast, with no trapdoor behind
//! them. NOT a setup: proofs made with these keys do not verify (a prover's speed does not
//! depend on it); they exist so that benchmarks can run at 2^20…2^26 constraints, where a
//! real setup would take hours. Kept out of the library on purpose.
//!
//! Points: chunks of S + j·Q (one scalar multiplication per chunk, then additions), turned
//! affine by blst's batch conversion (one inversion per chunk); every point is in the
//! prime-order subgroup. The query lengths are those a real setup of the benchmark shapes
//! (`shapes.rs`) gives, so the shapes prove against them.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::Field;
use group::{Curve, Group};
use pinprove::groth16::{ProvingKey, VerifyingKey};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;

use super::shapes::Shape;

/// Points per chunk: one scalar multiplication and one batch inversion each.
const CHUNK: usize = 1 << 14;

fn rng(seed: u64, stream: u64) -> ChaCha20Rng {
    let mut r = ChaCha20Rng::seed_from_u64(seed);
    r.set_stream(stream);
    r
}

/// `n` distinct G1 points.
pub fn g1_points(n: usize, seed: u64) -> Vec<G1Affine> {
    let q = G1Projective::random(rng(seed, 0));
    (0..n.div_ceil(CHUNK))
        .into_par_iter()
        .flat_map_iter(|k| {
            let len = CHUNK.min(n - k * CHUNK);
            let mut p = G1Projective::generator() * Scalar::random(rng(seed, k as u64 + 1));
            let raw: Vec<blst::blst_p1> = (0..len)
                .map(|_| {
                    p += q;
                    *p.as_ref()
                })
                .collect();
            let affine = blst::p1_affines::from(&raw);
            affine
                .as_slice()
                .iter()
                .map(|a| {
                    let mut point = G1Affine::default();
                    *point.as_mut() = *a;
                    point
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// `n` distinct G2 points.
pub fn g2_points(n: usize, seed: u64) -> Vec<G2Affine> {
    let q = G2Projective::random(rng(seed, 0));
    (0..n.div_ceil(CHUNK))
        .into_par_iter()
        .flat_map_iter(|k| {
            let len = CHUNK.min(n - k * CHUNK);
            let mut p = G2Projective::generator() * Scalar::random(rng(seed, k as u64 + 1));
            let raw: Vec<blst::blst_p2> = (0..len)
                .map(|_| {
                    p += q;
                    *p.as_ref()
                })
                .collect();
            let affine = blst::p2_affines::from(&raw);
            affine
                .as_slice()
                .iter()
                .map(|a| {
                    let mut point = G2Affine::default();
                    *point.as_mut() = *a;
                    point
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// A timing-only key for `shape` filling a 2^lg_m domain (see the module docs).
pub fn timing_key(shape: Shape, lg_m: u32, seed: u64) -> ProvingKey {
    let (l, a, b) = shape.query_lengths(lg_m);
    let g1 = |i: u64| (G1Projective::generator() * Scalar::random(rng(seed, 1 << 40 | i))).to_affine();
    let g2 = |i: u64| (G2Projective::generator() * Scalar::random(rng(seed, 1 << 41 | i))).to_affine();
    ProvingKey {
        vk: VerifyingKey {
            alpha_g1: g1(0),
            beta_g1: g1(1),
            beta_g2: g2(2),
            gamma_g2: g2(3),
            delta_g1: g1(4),
            delta_g2: g2(5),
            ic: vec![g1(6), g1(7)],
        },
        h: g1_points((1 << lg_m) - 1, seed ^ 1),
        l: g1_points(l, seed ^ 2),
        a: g1_points(a, seed ^ 3),
        b_g1: g1_points(b, seed ^ 4),
        b_g2: g2_points(b, seed ^ 5),
    }
}
