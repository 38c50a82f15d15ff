//! SHA-256 over bits, as bellpepper 0.2's gadget (`bellpepper::gadgets::sha256::sha256`):
//! that gadget's constraints, and under a witness generator its exact aux assignment computed
//! natively. The native path mirrors the gadget's every allocation, in its order, including
//! those its constant bits spare (the padding, the IV, the round constants): each
//! [`Bit`] keeps whether the gadget would see a constant, a variable or a negated variable.

use bellpepper::gadgets::sha256::sha256 as bellpepper_sha256;
use bellpepper_core::boolean::{AllocatedBit, Boolean};
use bellpepper_core::{ConstraintSystem, SynthesisError};
use ff::PrimeField;

const ROUND_CONSTANTS: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
    0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
    0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
    0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
    0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
    0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2,
];

const IV: [u32; 8] = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];

/// SHA-256 of `input` (big-endian bits, a whole number of bytes), its digest as 256
/// big-endian bits: bellpepper 0.2's `sha256` gadget, whose constraints it enforces (the same
/// recording, the same keys). Under a witness generator (`cs.is_witness_generator()`) it
/// appends the very same aux values, computed on words, with `extend_aux`: an order of
/// magnitude faster than the gadget's own witness (sha256 chain 2^20, witness-only, 2 threads:
/// 263 against 21 ms per partition, `cargo run --release --example synthesis -- --shape
/// sha256` against `--shape sha256-native`).
///
/// # Errors
/// [`SynthesisError::Unsatisfiable`] when `input` is not a whole number of bytes;
/// [`SynthesisError::AssignmentMissing`] when a witness generator is given a bit without a
/// value; the constraint system's own errors.
///
/// # Example
/// ```
/// use bellpepper_core::boolean::{AllocatedBit, Boolean};
/// use pinprove::{Circuit, ConstraintSystem, Scalar, SynthesisError};
///
/// /// Knows a 32-byte preimage of a hash (kept private here, for brevity).
/// struct Preimage([u8; 32]);
///
/// impl Circuit<Scalar> for Preimage {
///     fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
///         let bits = (0..256)
///             .map(|i| AllocatedBit::alloc(&mut *cs, Some(self.0[i / 8] >> (7 - i % 8) & 1 == 1)).map(Boolean::from))
///             .collect::<Result<Vec<_>, _>>()?;
///         let digest = pinprove::gadgets::sha256(cs, &bits)?;
///         assert_eq!(digest.len(), 256);
///         Ok(())
///     }
/// }
/// let r1cs = pinprove::R1cs::record(Preimage([7; 32]))?;
/// assert_eq!(r1cs.num_constraints(), 256 + 25_244); // the bits' booleanity, then one block
/// # Ok::<(), pinprove::Error>(())
/// ```
pub fn sha256<S, CS>(mut cs: CS, input: &[Boolean]) -> Result<Vec<Boolean>, SynthesisError>
where
    S: PrimeField,
    CS: ConstraintSystem<S>,
{
    if input.len() % 8 != 0 {
        return Err(SynthesisError::Unsatisfiable);
    }
    if !cs.is_witness_generator() {
        return bellpepper_sha256(cs, input);
    }
    // The gadget's padding: a one, zeros, the length in bits as 64 big-endian bits.
    let mut padded = input.iter().map(Bit::of).collect::<Result<Vec<_>, _>>()?;
    let len = input.len() as u64;
    padded.push(Bit::Const(true));
    while (padded.len() + 64) % 512 != 0 {
        padded.push(Bit::Const(false));
    }
    padded.extend((0..64).rev().map(|i| Bit::Const((len >> i) & 1 == 1)));

    let mut witness = Witness { aux: Vec::new() };
    let mut state: Vec<Vec<Boolean>> = IV.iter().map(|&v| Word::constant(v).booleans()).collect();
    for block in padded.chunks(512) {
        let current: Vec<Word> = state.iter().map(|w| Word::of(w)).collect::<Result<_, _>>()?;
        let words = compress(&mut witness, block, &current);
        cs.extend_aux(&witness.aux);
        witness.aux.clear();
        // The gadget's last additions, allocated for real: their bits are the digest's.
        state = words.iter().map(|sum| sum.allocate(&mut cs)).collect::<Result<_, _>>()?;
    }
    Ok(state.into_iter().flat_map(|word| word.into_iter().rev()).collect())
}

/// A bit as the gadget's `Boolean` holds it: a constant, or a variable, negated or not;
/// `value` is the bit's own value (the variable's, negated when `not`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bit {
    Const(bool),
    Var { value: bool, not: bool },
}

impl Bit {
    /// The bit `b` is; `AssignmentMissing` without a value.
    fn of(b: &Boolean) -> Result<Bit, SynthesisError> {
        let value = b.get_value().ok_or(SynthesisError::AssignmentMissing)?;
        Ok(match b {
            Boolean::Constant(_) => Bit::Const(value),
            Boolean::Is(_) => Bit::Var { value, not: false },
            Boolean::Not(_) => Bit::Var { value, not: true },
        })
    }

    fn value(self) -> bool {
        match self {
            Bit::Const(value) | Bit::Var { value, .. } => value,
        }
    }

    /// The value of the variable under a `Var`.
    fn variable(self) -> bool {
        match self {
            Bit::Const(value) => value,
            Bit::Var { value, not } => value ^ not,
        }
    }

    fn not(self) -> Bit {
        match self {
            Bit::Const(value) => Bit::Const(!value),
            Bit::Var { value, not } => Bit::Var { value: !value, not: !not },
        }
    }

    fn is_const(self) -> bool {
        matches!(self, Bit::Const(_))
    }
}

/// The aux values of one block, in the gadget's order.
struct Witness<S> {
    aux: Vec<S>,
}

impl<S: PrimeField> Witness<S> {
    /// An allocated bit of `value`, as the gadget's `AllocatedBit`s are.
    fn alloc(&mut self, value: bool) -> Bit {
        self.aux.push(if value { S::ONE } else { S::ZERO });
        Bit::Var { value, not: false }
    }

    /// `Boolean::xor`.
    fn xor(&mut self, a: Bit, b: Bit) -> Bit {
        match (a, b) {
            (Bit::Const(false), x) | (x, Bit::Const(false)) => x,
            (Bit::Const(true), x) | (x, Bit::Const(true)) => x.not(),
            // One negated: the gadget allocates the xor of the two variables and negates it.
            (Bit::Var { not: p, .. }, Bit::Var { not: q, .. }) if p != q => {
                self.alloc(a.variable() ^ b.variable()).not()
            }
            _ => self.alloc(a.variable() ^ b.variable()),
        }
    }

    /// `Boolean::and` (and, and-not or nor of the variables: each allocates the bits' and).
    fn and(&mut self, a: Bit, b: Bit) -> Bit {
        match (a, b) {
            (Bit::Const(false), _) | (_, Bit::Const(false)) => Bit::Const(false),
            (Bit::Const(true), x) | (x, Bit::Const(true)) => x,
            _ => self.alloc(a.value() & b.value()),
        }
    }

    /// `Boolean::sha256_ch`: (a ∧ b) ⊕ (¬a ∧ c).
    fn ch(&mut self, a: Bit, b: Bit, c: Bit) -> Bit {
        let value = (a.value() & b.value()) ^ (!a.value() & c.value());
        match (a, b, c) {
            (Bit::Const(_), Bit::Const(_), Bit::Const(_)) => Bit::Const(value),
            (Bit::Const(false), _, c) => c,
            (a, Bit::Const(false), c) => self.and(a.not(), c),
            (a, b, Bit::Const(false)) => self.and(a, b),
            (a, b, Bit::Const(true)) => self.and(a, b.not()).not(),
            (a, Bit::Const(true), c) => self.and(a.not(), c.not()).not(),
            _ => self.alloc(value),
        }
    }

    /// `Boolean::sha256_maj`: (a ∧ b) ⊕ (a ∧ c) ⊕ (b ∧ c).
    fn maj(&mut self, a: Bit, b: Bit, c: Bit) -> Bit {
        let value = (a.value() & b.value()) ^ (a.value() & c.value()) ^ (b.value() & c.value());
        match (a, b, c) {
            (Bit::Const(_), Bit::Const(_), Bit::Const(_)) => Bit::Const(value),
            (Bit::Const(false), b, c) => self.and(b, c),
            (a, Bit::Const(false), c) => self.and(a, c),
            (a, b, Bit::Const(false)) => self.and(a, b),
            (a, b, Bit::Const(true)) => self.and(a.not(), b.not()).not(),
            (a, Bit::Const(true), c) => self.and(a.not(), c.not()).not(),
            (Bit::Const(true), b, c) => self.and(b.not(), c.not()).not(),
            _ => {
                let maj = self.alloc(value);
                self.and(b, c); // the gadget's "b and c", which its constraint uses
                maj
            }
        }
    }

    /// `UInt32::xor`, bit by bit from the least significant.
    fn xor_words(&mut self, a: &Word, b: &Word) -> Word {
        Word(std::array::from_fn(|i| self.xor(a.0[i], b.0[i])))
    }

    /// `UInt32::sha256_ch` and `sha256_maj`, bit by bit.
    fn triop(&mut self, a: &Word, b: &Word, c: &Word, op: fn(&mut Self, Bit, Bit, Bit) -> Bit) -> Word {
        Word(std::array::from_fn(|i| op(self, a.0[i], b.0[i], c.0[i])))
    }

    /// `x.rotr(r0) ⊕ x.rotr(r1) ⊕ x.rotr(r2)` (or `x.shr(r2)` when `shift`), xored in the
    /// gadget's order.
    fn sigma(&mut self, x: &Word, [r0, r1, r2]: [u32; 3], shift: bool) -> Word {
        let first = self.xor_words(&x.rotr(r0), &x.rotr(r1));
        let last = if shift { x.shr(r2) } else { x.rotr(r2) };
        self.xor_words(&first, &last)
    }

    /// `UInt32::addmany` but the result's allocation: the sum's bits (35 bits hold the sum of
    /// eight words), the gadget's count of them, and whether it allocates them at all (not
    /// when every bit is constant).
    fn sum(words: &[Word]) -> Sum {
        let total: u64 = words.iter().map(|w| u64::from(w.value())).sum();
        let max = words.len() as u64 * u64::from(u32::MAX);
        let constant = words.iter().all(|w| w.0.iter().all(|b| b.is_const()));
        Sum { total, bits: 64 - max.leading_zeros(), constant }
    }

    /// `UInt32::addmany`, its result bits allocated here.
    fn addmany(&mut self, words: &[Word]) -> Word {
        let sum = Self::sum(words);
        if sum.constant {
            return Word::constant(sum.total as u32);
        }
        let bits: Vec<Bit> = (0..sum.bits).map(|i| self.alloc((sum.total >> i) & 1 == 1)).collect();
        Word(std::array::from_fn(|i| bits[i]))
    }
}

/// An addition the gadget ends a block with, to allocate through the constraint system.
#[derive(Debug, Clone, Copy)]
struct Sum {
    total: u64,
    bits: u32,
    constant: bool,
}

impl Sum {
    /// The gadget's `UInt32` of this sum, its bits allocated in `cs`: the 32 low ones.
    fn allocate<S: PrimeField, CS: ConstraintSystem<S>>(&self, cs: &mut CS) -> Result<Vec<Boolean>, SynthesisError> {
        if self.constant {
            return Ok(Word::constant(self.total as u32).booleans());
        }
        let mut bits = (0..self.bits)
            .map(|i| AllocatedBit::alloc(&mut *cs, Some((self.total >> i) & 1 == 1)).map(Boolean::from))
            .collect::<Result<Vec<_>, _>>()?;
        bits.truncate(32);
        Ok(bits)
    }
}

/// The gadget's `UInt32`: 32 bits, the least significant first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Word([Bit; 32]);

impl Word {
    fn constant(value: u32) -> Word {
        Word(std::array::from_fn(|i| Bit::Const((value >> i) & 1 == 1)))
    }

    /// The word of a `UInt32`'s bits (least significant first).
    fn of(bits: &[Boolean]) -> Result<Word, SynthesisError> {
        let bits = bits.iter().map(Bit::of).collect::<Result<Vec<_>, _>>()?;
        Ok(Word(std::array::from_fn(|i| bits[i])))
    }

    /// `UInt32::from_bits_be`.
    fn from_bits_be(bits: &[Bit]) -> Word {
        Word(std::array::from_fn(|i| bits[31 - i]))
    }

    /// The constant bits of a constant word.
    fn booleans(&self) -> Vec<Boolean> {
        self.0.iter().map(|b| Boolean::Constant(b.value())).collect()
    }

    fn value(&self) -> u32 {
        self.0.iter().enumerate().fold(0, |v, (i, b)| v | (u32::from(b.value()) << i))
    }

    fn rotr(&self, by: u32) -> Word {
        Word(std::array::from_fn(|i| self.0[(i + by as usize) % 32]))
    }

    fn shr(&self, by: u32) -> Word {
        Word(std::array::from_fn(|i| self.0.get(i + by as usize).copied().unwrap_or(Bit::Const(false))))
    }
}

/// The gadget's compression of one 512-bit `block` into `current`: every allocation but the
/// eight final additions', whose sums it returns (h0..h7 before allocation).
fn compress<S: PrimeField>(witness: &mut Witness<S>, block: &[Bit], current: &[Word]) -> Vec<Sum> {
    let mut w: Vec<Word> = block.chunks(32).map(Word::from_bits_be).collect();
    for i in 16..64 {
        let s0 = witness.sigma(&w[i - 15], [7, 18, 3], true);
        let s1 = witness.sigma(&w[i - 2], [17, 19, 10], true);
        let next = witness.addmany(&[w[i - 16], s0, w[i - 7], s1]);
        w.push(next);
    }
    // a and e are sums the gadget defers to the next round's first use (`Maybe`): the
    // operands, or the word once computed.
    let (mut a, mut e) = (vec![current[0]], vec![current[4]]);
    let [mut b, mut c, mut d] = [current[1], current[2], current[3]];
    let [mut f, mut g, mut h] = [current[5], current[6], current[7]];
    let resolve = |witness: &mut Witness<S>, terms: &[Word]| match terms {
        [word] => *word,
        terms => witness.addmany(terms),
    };
    for (i, &k) in ROUND_CONSTANTS.iter().enumerate() {
        let new_e = resolve(witness, &e);
        let s1 = witness.sigma(&new_e, [6, 11, 25], false);
        let ch = witness.triop(&new_e, &f, &g, Witness::ch);
        let temp1 = [h, s1, ch, Word::constant(k), w[i]];
        let new_a = resolve(witness, &a);
        let s0 = witness.sigma(&new_a, [2, 13, 22], false);
        let maj = witness.triop(&new_a, &b, &c, Witness::maj);
        (h, g, f) = (g, f, new_e);
        e = temp1.iter().copied().chain([d]).collect();
        (d, c, b) = (c, b, new_a);
        a = temp1.iter().copied().chain([s0, maj]).collect();
    }
    let sum = |mut terms: Vec<Word>, current: Word| {
        terms.push(current);
        Witness::<S>::sum(&terms)
    };
    vec![
        sum(a, current[0]),
        sum(vec![current[1]], b),
        sum(vec![current[2]], c),
        sum(vec![current[3]], d),
        sum(e, current[4]),
        sum(vec![current[5]], f),
        sum(vec![current[6]], g),
        sum(vec![current[7]], h),
    ]
}
