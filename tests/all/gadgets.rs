//! `pinprove::gadgets::sha256` against bellpepper's gadget and bellperson 0.27's copy of it
//! (`bellperson::gadgets::sha256`, the one Filecoin's circuits call): the same constraints
//! (recorded alike), and under a witness generator (bellpepper's `WitnessCS`) the very same
//! inputs and aux values, whatever the input bits are (allocated, negated, constant: the
//! gadget's allocations depend on which), over one block, several, Filecoin's lengths (a
//! PoRep label's 1,248 bytes, a tree_d node's 64), and hashes chained; the digest is
//! SHA-256's. Bad input is a typed error on both paths.

use bellpepper::gadgets::sha256::sha256 as bellpepper_sha256;
use bellpepper::util_cs::witness_cs::WitnessCS;
use bellpepper_core::boolean::{AllocatedBit, Boolean};
use blstrs::Scalar;
use pinprove::{Circuit, ConstraintSystem, R1cs, SynthesisError};
use sha2::{Digest, Sha256};

/// How the circuit passes each input bit to the gadget.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Allocated,
    Negated,
    Constant,
    /// Allocated, negated and constant in turn.
    Mixed,
}

/// Whose SHA-256 gadget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Gadget {
    /// pinprove's, with its native witness.
    Native,
    Bellpepper,
    /// bellperson 0.27's copy.
    Bellperson,
}

/// `bytes` hashed `rounds` times (each hash of the last digest) through `gadget`; the last
/// digest's first 64 bits are made public inputs.
#[derive(Debug, Clone)]
struct Hashes {
    bytes: Vec<u8>,
    kind: Kind,
    rounds: usize,
    gadget: Gadget,
}

impl Hashes {
    /// The bits the gadget sees for bit `i` of value `v`: a negated bit holds ¬v in its
    /// variable.
    fn bit<CS: ConstraintSystem<Scalar>>(&self, cs: &mut CS, i: usize, v: bool) -> Result<Boolean, SynthesisError> {
        let kind = match self.kind {
            Kind::Mixed => [Kind::Allocated, Kind::Negated, Kind::Constant][i % 3],
            kind => kind,
        };
        Ok(match kind {
            Kind::Constant => Boolean::constant(v),
            Kind::Negated => Boolean::from(AllocatedBit::alloc(&mut *cs, Some(!v))?).not(),
            _ => Boolean::from(AllocatedBit::alloc(&mut *cs, Some(v))?),
        })
    }

    /// Every digest, natively.
    fn digests(&self) -> Vec<Vec<u8>> {
        let mut last = self.bytes.clone();
        (0..self.rounds)
            .map(|_| {
                last = Sha256::digest(&last).to_vec();
                last.clone()
            })
            .collect()
    }
}

fn bits_of(bytes: &[u8]) -> Vec<bool> {
    bytes.iter().flat_map(|b| (0..8).rev().map(move |i| (b >> i) & 1 == 1)).collect()
}

impl Circuit<Scalar> for Hashes {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut bits = bits_of(&self.bytes)
            .into_iter()
            .enumerate()
            .map(|(i, v)| self.bit(cs, i, v))
            .collect::<Result<Vec<_>, _>>()?;
        for (round, digest) in self.digests().iter().enumerate() {
            let ns = cs.namespace(|| format!("hash {round}"));
            bits = match self.gadget {
                Gadget::Native => pinprove::gadgets::sha256(ns, &bits)?,
                Gadget::Bellpepper => bellpepper_sha256(ns, &bits)?,
                Gadget::Bellperson => bellperson::gadgets::sha256::sha256(ns, &bits)?,
            };
            let values: Vec<bool> = bits.iter().map(|b| b.get_value().expect("a witness has values")).collect();
            assert_eq!(values, bits_of(digest), "round {round}: the digest is SHA-256's");
        }
        for (i, b) in bits.iter().take(64).enumerate() {
            let v = cs.alloc_input(|| format!("out {i}"), || Ok(Scalar::from(u64::from(b.get_value().unwrap()))))?;
            cs.enforce(|| "out", |lc| lc + v, |lc| lc + CS::one(), |_| b.lc(CS::one(), Scalar::from(1)));
        }
        Ok(())
    }
}

/// The witness (inputs, aux) bellpepper's `WitnessCS` holds after synthesizing `c`.
fn witness(c: Hashes) -> (Vec<Scalar>, Vec<Scalar>) {
    let mut cs = WitnessCS::<Scalar>::new();
    c.synthesize(&mut cs).unwrap();
    (cs.inputs_slice().to_vec(), cs.aux_slice().to_vec())
}

#[test]
fn the_native_witness_is_bellpeppers_for_every_kind_of_input_bit() {
    // One block (0, 1, 32, 55 bytes), two (56, 64), three (119 + 9 bytes of padding).
    for len in [0, 1, 32, 55, 56, 64, 119] {
        for kind in [Kind::Allocated, Kind::Negated, Kind::Constant, Kind::Mixed] {
            for rounds in [1, 2] {
                let bytes: Vec<u8> = (0..len).map(|i| (i as u8).wrapping_mul(167).wrapping_add(len as u8)).collect();
                let c = Hashes { bytes, kind, rounds, gadget: Gadget::Bellpepper };
                let theirs = witness(c.clone());
                let ours = witness(Hashes { gadget: Gadget::Native, ..c });
                assert_eq!(ours.0, theirs.0, "{len} bytes, {kind:?}, {rounds} rounds: inputs");
                assert_eq!(ours.1.len(), theirs.1.len(), "{len} bytes, {kind:?}, {rounds} rounds: aux count");
                assert!(ours.1 == theirs.1, "{len} bytes, {kind:?}, {rounds} rounds: aux values");
            }
        }
    }
}

#[test]
fn the_native_gadget_records_bellpeppers_constraints() {
    for (len, kind) in [(32, Kind::Allocated), (64, Kind::Mixed), (3, Kind::Constant)] {
        let c = Hashes { bytes: vec![0xa5; len], kind, rounds: 2, gadget: Gadget::Bellpepper };
        let theirs = R1cs::record(c.clone()).unwrap();
        let ours = R1cs::record(Hashes { gadget: Gadget::Native, ..c }).unwrap();
        assert_eq!(ours, theirs, "{len} bytes, {kind:?}");
    }
}

/// At Filecoin's call sites' lengths, ours against bellperson's copy of the gadget: the same
/// recording, and under a witness generator the same inputs and aux values.
#[test]
fn the_native_gadget_is_bellpersons_copy_at_filecoins_lengths() {
    let label = |len: usize| (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(7)).collect::<Vec<u8>>();
    let cases = [(1248, Kind::Mixed, 1), (1248, Kind::Constant, 1), (64, Kind::Negated, 2), (64, Kind::Allocated, 2)];
    for (len, kind, rounds) in cases {
        let c = Hashes { bytes: label(len), kind, rounds, gadget: Gadget::Bellperson };
        let ours = Hashes { gadget: Gadget::Native, ..c.clone() };
        let (theirs_witness, ours_witness) = (witness(c.clone()), witness(ours.clone()));
        assert_eq!(ours_witness.0, theirs_witness.0, "{len} bytes, {kind:?}: inputs");
        assert!(ours_witness.1 == theirs_witness.1, "{len} bytes, {kind:?}: aux values");
        assert_eq!(R1cs::record(ours).unwrap(), R1cs::record(c).unwrap(), "{len} bytes, {kind:?}: recording");
    }
}

#[test]
fn bad_input_is_a_typed_error_on_both_paths() {
    /// Hands the gadget 7 bits, or (`unknown`) a bit whose value a witness generator lacks.
    struct Bad {
        unknown: bool,
    }
    impl Circuit<Scalar> for Bad {
        fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
            if self.unknown {
                // A recording never asks for values: this bit has none.
                let bit = Boolean::from(AllocatedBit::alloc(&mut *cs, None)?);
                let bits = vec![bit; 8];
                let mut generator = WitnessCS::<Scalar>::new();
                let result = pinprove::gadgets::sha256(&mut generator, &bits);
                assert!(matches!(result, Err(SynthesisError::AssignmentMissing)), "{:?}", result.err());
                return pinprove::gadgets::sha256(cs, &bits).map(drop);
            }
            let bits = vec![Boolean::constant(true); 7];
            assert!(matches!(
                pinprove::gadgets::sha256(&mut WitnessCS::<Scalar>::new(), &bits),
                Err(SynthesisError::Unsatisfiable)
            ));
            pinprove::gadgets::sha256(cs, &bits).map(drop)
        }
    }
    assert!(R1cs::record(Bad { unknown: true }).is_ok(), "a recording needs no values");
    let err = R1cs::record(Bad { unknown: false }).unwrap_err();
    assert!(matches!(err, pinprove::Error::Synthesis(SynthesisError::Unsatisfiable)), "{err:?}");
}
