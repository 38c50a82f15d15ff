//! The benchmark circuits of `shared/peer` (bellperson's supraseal-c2 benchmark), so that both
//! provers prove the same constraint systems from the same parameter files: a chain from a
//! private x₀ whose last value is the one public input, in three shapes.
//! - `Dense`: an x⁵ chain like MiMC, x ← x⁵ + kᵢ (x², x⁴, x⁵ + k per round): B holds x and x²
//!   every round.
//! - `Sparse`: per round y₀ = x·x, then 7 linear steps yⱼ = (yⱼ₋₁ + kⱼ)·1, like hash circuits
//!   with linear layers: B is x once per round and otherwise only the constant one.
//! - `Sha256`: bellpepper 0.2's SHA-256 gadget chained, h ← SHA-256(h) over 256-bit values
//!   from the 32 bytes of x₀ (256 private booleans), the first 254 bits of the last hash
//!   packed into the public input: nearly every witness value is 0 or 1, as in Filecoin's
//!   PoRep. Its query lengths have no closed form: they are counted by recording it.
//!
//! Round constant kᵢ is splitmix64(i); rounds fill a 2^K domain with the 2 input constraints.

use bellpepper::gadgets::boolean::{AllocatedBit, Boolean};
use bellpepper::gadgets::{multipack, sha256::sha256};
use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError, Variable};
use blstrs::Scalar;
use ff::{Field, PrimeField};
use sha2::{Digest, Sha256};

/// The three shapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// B dense: every round's x and x².
    Dense,
    /// B sparse: about one variable in eight.
    Sparse,
    /// SHA-256 chained: a witness of bits.
    Sha256,
}

/// Linear steps per round of the sparse chain.
const LINEAR: usize = 7;

/// Constraints of bellpepper 0.2's `sha256` over 256 input bits (one block), as the peer
/// counts them (a test checks it).
pub const SHA256_ROUND: usize = 25_244;

/// Bits of the last hash packed into the sha256 chain's one public input (Scalar::CAPACITY).
const PACKED_BITS: usize = 254;

impl Shape {
    /// `dense` or `sparse`.
    pub fn parse(s: &str) -> Result<Shape, String> {
        match s {
            "dense" => Ok(Shape::Dense),
            "sparse" => Ok(Shape::Sparse),
            "sha256" => Ok(Shape::Sha256),
            _ => Err(format!("unknown shape {s} (dense, sparse or sha256)")),
        }
    }

    /// The shape's name.
    pub fn name(self) -> &'static str {
        match self {
            Shape::Dense => "dense",
            Shape::Sparse => "sparse",
            Shape::Sha256 => "sha256",
        }
    }

    fn constraints_per_round(self) -> usize {
        match self {
            Shape::Dense => 3,
            Shape::Sparse => 1 + LINEAR,
            Shape::Sha256 => SHA256_ROUND,
        }
    }

    /// Constraints outside the rounds: the 2 input constraints (ONE, output), and for
    /// sha256 the 256 booleanity constraints of x₀'s bits and the packing's one.
    fn fixed_constraints(self) -> usize {
        match self {
            Shape::Dense | Shape::Sparse => 2,
            Shape::Sha256 => 2 + 256 + 1,
        }
    }

    /// Rounds whose constraints, with the fixed ones, fill a 2^lg_m domain.
    pub fn rounds(self, lg_m: u32) -> usize {
        (1usize << lg_m).saturating_sub(self.fixed_constraints()) / self.constraints_per_round()
    }

    /// The key's query lengths for 2^lg_m: (l, a, b) (h is 2^lg_m − 1, ic 2); sha256's are
    /// counted by recording the circuit.
    pub fn query_lengths(self, lg_m: u32) -> (usize, usize, usize) {
        let r = self.rounds(lg_m);
        match self {
            Shape::Dense => (3 * r, 3 * r + 2, 2 * r),
            Shape::Sparse => (8 * r, 8 * r + 2, r + 1),
            Shape::Sha256 => {
                let r1cs = pinprove::R1cs::record(Chain::new(self, lg_m, 0)).expect("the chain records");
                (r1cs.num_aux(), r1cs.a_query_len(), r1cs.b_query_len())
            }
        }
    }
}

/// splitmix64(i), the peer's round constants.
fn round_constant(i: usize) -> Scalar {
    let mut z = (i as u64).wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    Scalar::from(z ^ (z >> 31))
}

/// One chain of `rounds` rounds from x₀.
#[derive(Debug, Clone, Copy)]
pub struct Chain {
    /// The shape.
    pub shape: Shape,
    /// The private start.
    pub x0: Scalar,
    /// Rounds.
    pub rounds: usize,
}

impl Chain {
    /// The chain filling a 2^lg_m domain.
    pub fn new(shape: Shape, lg_m: u32, x0: u64) -> Self {
        Chain { shape, x0: Scalar::from(x0), rounds: shape.rounds(lg_m) }
    }

    /// The public output, computed natively.
    pub fn output(&self) -> Scalar {
        match self.shape {
            Shape::Dense => (0..self.rounds).fold(self.x0, |x, i| x.square().square() * x + round_constant(i)),
            Shape::Sparse => (0..self.rounds)
                .fold(self.x0, |x, i| (0..LINEAR).fold(x.square(), |y, j| y + round_constant(LINEAR * i + j))),
            Shape::Sha256 => {
                let mut h: [u8; 32] = self.x0.to_repr();
                for _ in 0..self.rounds {
                    h = Sha256::digest(h).into();
                }
                let bits = multipack::bytes_to_bits(&h);
                multipack::compute_multipacking::<Scalar>(&bits[..PACKED_BITS])[0]
            }
        }
    }
}

/// The output's variable: the public input in the last round, a private one before.
fn value<CS: ConstraintSystem<Scalar>>(cs: &mut CS, last: bool, v: Scalar) -> Result<Variable, SynthesisError> {
    if last {
        cs.alloc_input(|| "out", || Ok(v))
    } else {
        cs.alloc(|| "x", || Ok(v))
    }
}

/// The sha256 chain: x₀'s 32 bytes as private booleans, `rounds` hashes, then the first
/// PACKED_BITS bits of the last hash packed into the public input.
fn sha256_chain<CS: ConstraintSystem<Scalar>>(cs: &mut CS, x0: Scalar, rounds: usize) -> Result<(), SynthesisError> {
    let bytes: [u8; 32] = x0.to_repr();
    let mut bits = multipack::bytes_to_bits(&bytes)
        .into_iter()
        .enumerate()
        .map(|(i, v)| AllocatedBit::alloc(cs.namespace(|| format!("x0 bit {i}")), Some(v)).map(Boolean::from))
        .collect::<Result<Vec<_>, _>>()?;
    for i in 0..rounds {
        bits = sha256(cs.namespace(|| format!("round {i}")), &bits)?;
    }
    multipack::pack_into_inputs(cs.namespace(|| "out"), &bits[..PACKED_BITS])
}

impl Circuit<Scalar> for Chain {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        if self.shape == Shape::Sha256 {
            return sha256_chain(cs, self.x0, self.rounds);
        }
        let mut v = self.x0;
        let mut x = cs.alloc(|| "x0", || Ok(v))?;
        for i in 0..self.rounds {
            let last = i + 1 == self.rounds;
            match self.shape {
                Shape::Dense => {
                    let k = round_constant(i);
                    let (v2, v4) = (v.square(), v.square().square());
                    let x2 = cs.alloc(|| "x^2", || Ok(v2))?;
                    cs.enforce(|| "x*x", |lc| lc + x, |lc| lc + x, |lc| lc + x2);
                    let x4 = cs.alloc(|| "x^4", || Ok(v4))?;
                    cs.enforce(|| "x2*x2", |lc| lc + x2, |lc| lc + x2, |lc| lc + x4);
                    let v5 = v4 * v + k;
                    let y = value(cs, last, v5)?;
                    cs.enforce(|| "x4*x", |lc| lc + x4, |lc| lc + x, |lc| lc + y - (k, CS::one()));
                    (x, v) = (y, v5);
                }
                Shape::Sparse => {
                    v = v.square();
                    let mut y = cs.alloc(|| "x^2", || Ok(v))?;
                    cs.enforce(|| "x*x", |lc| lc + x, |lc| lc + x, |lc| lc + y);
                    for j in 0..LINEAR {
                        let k = round_constant(LINEAR * i + j);
                        v += k;
                        let z = value(cs, last && j + 1 == LINEAR, v)?;
                        cs.enforce(|| "(y+k)*1", |lc| lc + y + (k, CS::one()), |lc| lc + CS::one(), |lc| lc + z);
                        y = z;
                    }
                    x = y;
                }
                Shape::Sha256 => unreachable!("synthesized above"),
            }
        }
        Ok(())
    }
}
