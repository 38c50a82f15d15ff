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
use pinprove::{ProvingKey, VerifyingKey};
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

/// `n` distinct points of a group: chunks of S + j·Q in blst's projective form, made affine by
/// `affine`, blst's batch conversion for the group.
fn points<G, Raw, RawAffine, Affine>(n: usize, seed: u64, affine: fn(&[Raw]) -> Vec<RawAffine>) -> Vec<Affine>
where
    G: Group<Scalar = Scalar> + AsRef<Raw>,
    Raw: Copy,
    RawAffine: Copy,
    Affine: Default + AsMut<RawAffine> + Send,
{
    let q = G::random(rng(seed, 0));
    (0..n.div_ceil(CHUNK))
        .into_par_iter()
        .flat_map_iter(|k| {
            let mut p = G::generator() * Scalar::random(rng(seed, k as u64 + 1));
            let raw: Vec<Raw> = (0..CHUNK.min(n - k * CHUNK))
                .map(|_| {
                    p += q;
                    *p.as_ref()
                })
                .collect();
            affine(&raw).into_iter().map(|a| {
                let mut point = Affine::default();
                *point.as_mut() = a;
                point
            })
        })
        .collect()
}

/// `n` distinct G1 points.
pub fn g1_points(n: usize, seed: u64) -> Vec<G1Affine> {
    points::<G1Projective, _, _, _>(n, seed, |raw| blst::p1_affines::from(raw).as_slice().to_vec())
}

/// `n` distinct G2 points.
pub fn g2_points(n: usize, seed: u64) -> Vec<G2Affine> {
    points::<G2Projective, _, _, _>(n, seed, |raw| blst::p2_affines::from(raw).as_slice().to_vec())
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
        r1cs: None,
    }
}
