//! Circuits shared by the example, the benches and the tests (included with `#[path]`, so
//! they stay out of the library).
#![allow(dead_code)]

pub mod flags;
pub mod pacing;
pub mod plots;
pub mod report;
pub mod shapes;
pub mod timing_key;

use std::sync::Arc;

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use ff::Field;

/// `n` uniformly random scalars from `seed`, made in parallel chunks.
pub fn random_scalars(n: usize, seed: u64) -> Vec<Scalar> {
    use rand::SeedableRng;
    use rayon::prelude::*;
    let chunk = 1 << 14;
    (0..n.div_ceil(chunk))
        .into_par_iter()
        .flat_map_iter(|k| {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ (k as u64) << 32);
            (0..chunk.min(n - k * chunk)).map(move |_| Scalar::random(&mut rng))
        })
        .collect()
}

/// A MiMC-style hash chain, xᵢ₊₁ = (xᵢ + kᵢ)³: two constraints per round. The final value is
/// a public input when `public_output` is set. `unused` adds aux variables that appear only
/// in C (and with a zero coefficient in A), so the A and B queries are not fully dense.
#[derive(Clone, Debug)]
pub struct MimcChain {
    /// The preimage (private).
    pub x0: Scalar,
    /// Round constants; the chain has one round per constant.
    pub constants: Arc<Vec<Scalar>>,
    /// Whether the output is a public input.
    pub public_output: bool,
    /// Extra aux variables used in C only.
    pub unused: usize,
}

impl MimcChain {
    /// A chain with a public output and no unused variables: the benchmark circuit.
    pub fn new(x0: u64, constants: &Arc<Vec<Scalar>>) -> Self {
        MimcChain { x0: Scalar::from(x0), constants: Arc::clone(constants), public_output: true, unused: 0 }
    }

    /// Constants for `rounds` rounds, derived from a fixed seed.
    pub fn constants(rounds: usize) -> Arc<Vec<Scalar>> {
        let mut k = Scalar::from(0x5eed_u64);
        Arc::new(
            (0..rounds)
                .map(|_| {
                    k = k.square() + Scalar::from(7);
                    k
                })
                .collect(),
        )
    }

    /// Rounds that fill a domain of 2^lg_m points (2 constraints a round, plus the inputs).
    pub fn rounds_for_domain(lg_m: u32) -> usize {
        ((1usize << lg_m) - 2) / 2
    }

    /// The chain's output for `x0`: the public input the proof is checked against.
    pub fn output(&self) -> Scalar {
        self.constants.iter().fold(self.x0, |x, k| (x + k).cube())
    }

    /// The public inputs (without the constant one).
    pub fn public_inputs(&self) -> Vec<Scalar> {
        if self.public_output {
            vec![self.output()]
        } else {
            vec![]
        }
    }
}

impl Circuit<Scalar> for MimcChain {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut x_val = self.x0;
        let x0 = cs.alloc(|| "x0", || Ok(x_val))?;
        let mut x = x0;
        let rounds = self.constants.len();
        for (i, k) in self.constants.iter().enumerate() {
            let cs = &mut cs.namespace(|| format!("round {i}"));
            let s_val = x_val + k;
            let sq_val = s_val.square();
            let sq = cs.alloc(|| "sq", || Ok(sq_val))?;
            cs.enforce(|| "sq = s*s", |lc| lc + x + (*k, CS::one()), |lc| lc + x + (*k, CS::one()), |lc| lc + sq);
            let next_val = sq_val * s_val;
            let next = if self.public_output && i + 1 == rounds {
                cs.alloc_input(|| "out", || Ok(next_val))?
            } else {
                cs.alloc(|| "x", || Ok(next_val))?
            };
            cs.enforce(|| "next = sq*s", |lc| lc + sq, |lc| lc + x + (*k, CS::one()), |lc| lc + next);
            (x, x_val) = (next, next_val);
        }
        for j in 0..self.unused {
            let cs = &mut cs.namespace(|| format!("unused {j}"));
            let coeff = Scalar::from(j as u64 + 1);
            let u = cs.alloc(|| "u", || Ok(self.x0 * coeff))?;
            // u = (j+1)·x0 appears in C only; in A with a zero coefficient, which marks nothing.
            cs.enforce(|| "u = (j+1)*x0", |lc| lc + (coeff, x0) + (Scalar::ZERO, u), |lc| lc + CS::one(), |lc| lc + u);
        }
        Ok(())
    }
}

/// A circuit that fails the way user circuits do: with a `SynthesisError` or a panic.
#[derive(Clone, Debug)]
pub enum Faulty {
    /// Proves fine: the inner chain.
    Good(MimcChain),
    /// Returns `AssignmentMissing` half way.
    Error(MimcChain),
    /// Panics half way.
    Panic(MimcChain),
    /// Proves fine, after computing its chain nine extra times: ten times the synthesis work.
    Slow(MimcChain),
}

impl Circuit<Scalar> for Faulty {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        match self {
            Faulty::Good(c) => c.synthesize(cs),
            Faulty::Error(c) => {
                let half = MimcChain { constants: Arc::new(c.constants[..c.constants.len() / 2].to_vec()), ..c };
                half.synthesize(cs)?;
                Err(SynthesisError::AssignmentMissing)
            }
            Faulty::Slow(c) => {
                let spin: Scalar = (0..9).map(|_| c.output()).sum();
                assert_eq!(spin, c.output() * Scalar::from(9));
                c.synthesize(cs)
            }
            Faulty::Panic(c) => {
                let half = MimcChain { constants: Arc::new(c.constants[..c.constants.len() / 2].to_vec()), ..c };
                half.synthesize(cs)?;
                panic!("circuit bug")
            }
        }
    }
}
