//! What an embedding crate meets first: one dependency line, keys and proofs from the crate
//! root, proofs to and from bytes, bellperson conversions both ways, errors that name the
//! right thing.

use bellperson::groth16 as bp;
use blstrs::Bls12;
// Everything a user needs, from the crate root alone.
use pinprove::{
    Circuit, ConstraintSystem, Error, Field, PinnedPool, PinnedVec, PoolConfig, Proof, Prover, ProvingKey, Scalar,
    SynthesisError, VerifyingKey,
};

use crate::support::{chain, config, key};

/// A circuit written against the re-exports only.
struct Cube(Scalar);

impl Circuit<Scalar> for Cube {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let x = cs.alloc(|| "x", || Ok(self.0))?;
        let y = cs.alloc_input(|| "y", || Ok(self.0.cube()))?;
        let x2 = cs.alloc(|| "x2", || Ok(self.0.square()))?;
        cs.enforce(|| "x*x", |lc| lc + x, |lc| lc + x, |lc| lc + x2);
        cs.enforce(|| "x2*x", |lc| lc + x2, |lc| lc + x, |lc| lc + y);
        Ok(())
    }
}

#[test]
fn the_crate_root_is_enough_and_proofs_round_trip_through_bytes() {
    let key: ProvingKey = pinprove::generate_random_parameters(Cube(Scalar::ONE), &mut rand::thread_rng()).unwrap();
    let vk: VerifyingKey = key.vk.clone();
    let prover = Prover::new(key, config(1, 1)).unwrap();
    let proof: Proof = prover.prove(vec![Cube(Scalar::from(5))]).unwrap().remove(0).unwrap();
    let bytes = proof.to_bytes();
    assert_eq!(Proof::from_bytes(&bytes).unwrap(), proof);
    let pvk = pinprove::prepare_verifying_key(&vk);
    assert!(pinprove::verify_proof(&pvk, &proof, &[Scalar::from(125)]).unwrap());

    // Every corruption of a point is an error naming it, never a panic.
    for (offset, what) in [(0, "A"), (48, "B"), (144, "C")] {
        let mut bad = bytes;
        bad[offset + 5] ^= 0x40;
        match Proof::from_bytes(&bad) {
            Err(Error::Decode { what: w, offset: o, .. }) => {
                assert_eq!((w, o), (format!("proof point {what}"), offset as u64))
            }
            other => panic!("corrupted {what} decoded: {other:?}"),
        }
    }
}

#[test]
fn bellperson_conversions_go_both_ways_by_value_and_by_reference() {
    let params = bp::generate_random_parameters::<Bls12, _, _>(chain(5, 0), &mut rand::thread_rng()).unwrap();
    let by_ref = ProvingKey::from(&params);
    let by_value = ProvingKey::from(params.clone());
    assert_eq!(by_ref, by_value);
    let back: bp::Parameters<Bls12> = by_value.clone().into();
    assert_eq!(ProvingKey::from(back), by_ref);
    assert_eq!(VerifyingKey::from(bp::VerifyingKey::from(by_ref.vk.clone())), by_ref.vk);

    let proof = Prover::new(by_ref, config(1, 1)).unwrap().prove(vec![chain(5, 1)]).unwrap().remove(0).unwrap();
    let theirs: bp::Proof<Bls12> = (&proof).into();
    assert_eq!(Proof::from(theirs.clone()), proof);
    assert_eq!(Proof::from(&theirs), Proof::from(bp::Proof::from(proof)));
}

#[test]
fn errors_name_what_is_wrong() {
    // A length no pool could hold reports the pool's cap, not what happens to be left.
    let pool = PinnedPool::new(PoolConfig { max_bytes: 10_000, max_waste: 0.5 });
    assert!(matches!(
        PinnedVec::<Scalar>::checkout(&pool, usize::MAX),
        Err(Error::PoolTooSmall { requested: usize::MAX, capacity: 10_000 })
    ));
    pool.prewarm(1, 6000).unwrap();
    assert!(matches!(pool.prewarm(1, 6000), Err(Error::PoolTooSmall { requested: 12_000, capacity: 10_000 })));

    // A shortened l query is named as l.
    let mut short_l = key(6);
    short_l.l.pop();
    match Prover::new(short_l, config(1, 1)) {
        Err(Error::InvalidKey(msg)) => assert!(msg.starts_with("l query"), "{msg}"),
        other => panic!("{other:?}"),
    }
}
