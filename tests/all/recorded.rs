//! Recorded constraints ([`R1cs`]): proofs from witness-only synthesis equal the full path's
//! and bellperson's bit for bit (fixed r, s) on the benchmark shapes; the recording's file
//! round-trips and every damaged file is a typed error; a recording of another shape is
//! refused; a circuit whose constraints differ from the recording is `ProofInvalid`, and the
//! prover goes on; native witness paths, and circuits that synthesize in parts on several
//! threads (bellperson's convention: a temporary one per part), give the same proofs.

use std::io::Cursor;
use std::sync::Arc;

use bellperson::groth16 as bp;
use blstrs::{Bls12, Scalar};
use ff::Field;
use pinprove::{Circuit, Config, ConstraintSystem, Error, Prover, R1cs, SynthesisError};
use pinprove::{Proof, ProvingKey};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

use crate::circuits::parts::Sectors;
use crate::circuits::shapes::{Chain, Shape, SHA256_ROUND};
use crate::circuits::{MimcChain, WideSums};
use crate::support::{assert_balanced, config};

/// What [`prove_both_ways`] saw: the most pool bytes a witness-only partition held, a full
/// one's, and the witness MSMs split by value in each partition (the same both ways).
struct BothWays {
    witness_only: usize,
    full: usize,
    msms_split: Vec<u32>,
}

/// Proves `jobs` on a full prover and a witness-only one of the same key; checks both
/// against bellperson's `create_proof`, and returns what they held and split.
fn prove_both_ways<C: Circuit<Scalar> + Clone + Send>(
    name: &str,
    params: &bp::Parameters<Bls12>,
    jobs: Vec<(C, Scalar, Scalar)>,
    shape: C,
) -> BothWays {
    let key = ProvingKey::from(params);
    let full = Prover::new(key.clone(), config(2, 1)).unwrap();
    let recorded = Prover::new(key.with_r1cs(R1cs::record(shape).unwrap()).unwrap(), config(2, 1)).unwrap();
    assert!(!full.is_witness_only() && recorded.is_witness_only(), "{name}");
    let ours_full = full.prove_with_randomness(jobs.clone()).unwrap();
    let ours_recorded = recorded.prove_with_randomness(jobs.clone()).unwrap();
    for (((c, r, s), a), b) in jobs.into_iter().zip(ours_full).zip(ours_recorded) {
        let theirs = Proof::from(&bp::create_proof::<Bls12, _, _>(c, params, r, s).unwrap());
        assert_eq!(a.unwrap(), theirs, "{name}: full synthesis differs from bellperson");
        assert_eq!(b.unwrap(), theirs, "{name}: witness-only synthesis differs from bellperson");
    }
    let (recorded_timings, full_timings) = (recorded.take_timings(), full.take_timings());
    let witness_only = recorded_timings.iter().map(|t| t.witness_bytes).max().unwrap();
    assert!(full_timings.iter().all(|t| t.witness_bytes >= full.partition_bytes()), "{name}");
    let split = |timings: &[pinprove::PartitionTimings]| {
        let mut by_job: Vec<(u64, u32)> = timings.iter().map(|t| (t.job, t.msms_split)).collect();
        by_job.sort_unstable();
        by_job.into_iter().map(|(_, n)| n).collect::<Vec<_>>()
    };
    let msms_split = split(&full_timings);
    assert_eq!(split(&recorded_timings), msms_split, "{name}: the same scalars split alike");
    assert_balanced(&recorded.pool().stats());
    let both = BothWays { witness_only, full: full.partition_bytes(), msms_split };
    full.shutdown();
    recorded.shutdown();
    both
}

fn randomness(rng: &mut ChaCha20Rng) -> (Scalar, Scalar) {
    (Scalar::random(&mut *rng), Scalar::random(&mut *rng))
}

#[test]
fn witness_only_proofs_equal_full_synthesis_and_bellperson_on_the_benchmark_shapes() {
    let mut rng = ChaCha20Rng::seed_from_u64(25);
    for (shape, lg_m) in [(Shape::Dense, 8), (Shape::Sparse, 8), (Shape::Sha256, 15), (Shape::Sha256Native, 15)] {
        let params = bp::generate_random_parameters::<Bls12, _, _>(Chain::new(shape, lg_m, 0), &mut rng).unwrap();
        let jobs: Vec<_> = (1..3)
            .map(|x0| {
                let (r, s) = randomness(&mut rng);
                (Chain::new(shape, lg_m, x0), r, s)
            })
            .collect();
        let both = prove_both_ways(shape.name(), &params, jobs, Chain::new(shape, lg_m, 0));
        let (witness_only, full, name) = (both.witness_only, both.full, shape.name());
        // The aux alone, packed, against a, b, c, the aux and the A and B scalars: a bit-heavy
        // aux is bits, a dense one its values.
        let ratio = if matches!(shape, Shape::Dense | Shape::Sparse) { 4 } else { 100 };
        assert!(ratio * witness_only <= full, "{name}: {witness_only} bytes per partition against {full}");
        // A bit-heavy witness's four MSMs are split, a dense one's none.
        match shape {
            Shape::Dense => assert_eq!(both.msms_split, [0, 0], "{name}"),
            Shape::Sha256 | Shape::Sha256Native => assert_eq!(both.msms_split, [4, 4], "{name}"),
            Shape::Sparse => {}
        }
    }
}

#[test]
fn witness_only_proofs_equal_bellperson_with_more_aux_than_the_domain() {
    // A device lends the aux' values the C product's buffer, a domain long; these take a
    // room of their own there.
    let mut rng = ChaCha20Rng::seed_from_u64(27);
    let wide = |x0: u64| WideSums { x0: Scalar::from(x0), rounds: 60, width: 7 };
    let r1cs = R1cs::record(wide(3)).unwrap();
    let domain = (r1cs.num_constraints() + r1cs.num_inputs()).next_power_of_two();
    assert!(r1cs.num_aux() > 4 * domain, "{} aux, domain {domain}", r1cs.num_aux());
    let params = bp::generate_random_parameters::<Bls12, _, _>(wide(3), &mut rng).unwrap();
    let jobs = (5..7).map(|x0| (wide(x0), randomness(&mut rng))).map(|(c, (r, s))| (c, r, s)).collect();
    prove_both_ways("more aux than the domain", &params, jobs, wide(3));
}

#[test]
fn witness_only_proofs_equal_bellperson_with_unused_variables_and_no_public_input() {
    let mut rng = ChaCha20Rng::seed_from_u64(26);
    for (public_output, unused) in [(true, 9), (false, 0)] {
        let c = MimcChain { x0: Scalar::from(11), constants: MimcChain::constants(20), public_output, unused };
        let params = bp::generate_random_parameters::<Bls12, _, _>(c.clone(), &mut rng).unwrap();
        let (r, s) = randomness(&mut rng);
        let jobs = vec![(MimcChain { x0: Scalar::from(5), ..c.clone() }, r, s)];
        prove_both_ways(&format!("unused {unused}"), &params, jobs, c);
    }
}

/// A witness-only prover holds a partition's packed aux in pool buffers: prewarm takes the
/// bitmaps and a chunk of values per partition in flight, the first partitions take the
/// chunks more their values need, and from then on nothing is allocated.
#[test]
fn witness_of_bits_buffers_reach_a_steady_state() {
    let circuit = crate::support::chain(10, 1);
    let r1cs = R1cs::record(circuit.clone()).unwrap();
    let chunks = r1cs.num_aux().div_ceil(64); // none is 0 or 1: chunks of 64 values (a 64th, at least 64)
    assert_eq!(chunks, 16, "{} aux", r1cs.num_aux());
    let key = crate::support::key(10).with_r1cs(r1cs).unwrap();
    let prover = Prover::new(key, config(2, 1)).unwrap();
    let (warm, bound) = (prover.pool().stats(), prover.max_in_flight() as u64);
    assert_eq!(warm.allocations, 4 * bound, "prewarmed: two bitmaps, the ranks and a chunk per partition");
    let batch = || prover.prove((0..50).map(|i| MimcChain { x0: Scalar::from(i), ..circuit.clone() }).collect());
    assert!(batch().unwrap().iter().all(Result::is_ok));
    let first = prover.pool().stats();
    assert!(first.allocations <= warm.allocations + (chunks as u64 - 1) * bound, "{first:?}");
    assert!(batch().unwrap().iter().all(Result::is_ok));
    let steady = prover.pool().stats();
    assert_eq!((steady.allocations, steady.fallbacks), (first.allocations, 0), "nothing allocated once warm");
    let held: Vec<usize> = prover.take_timings().iter().map(|t| t.witness_bytes).collect();
    assert!(held.windows(2).all(|w| w[0] == w[1]) && held[0] > chunks * 64 * 32, "{chunks} chunks: {held:?}");
    assert_balanced(&prover.pool().stats());
    prover.shutdown();
}

#[test]
fn the_sha256_shape_has_the_peers_round() {
    let r1cs = R1cs::record(Chain::new(Shape::Sha256, 15, 0)).unwrap();
    assert_eq!(Shape::Sha256.rounds(15), 1);
    // 256 booleanity constraints of x0's bits, one round, the packing constraint.
    assert_eq!(r1cs.num_constraints(), 256 + SHA256_ROUND + 1);
    assert_eq!(r1cs.num_inputs(), 2);
}

#[test]
fn r1cs_files_round_trip_and_every_damage_is_a_typed_error() {
    let r1cs = R1cs::record(MimcChain { unused: 3, ..crate::support::chain(6, 1) }).unwrap();
    let mut bytes = Vec::new();
    r1cs.write(&mut bytes).unwrap();
    assert_eq!(R1cs::read(Cursor::new(&bytes)).unwrap(), r1cs);
    // Cut anywhere: a decode error naming where, never a panic.
    for cut in (0..bytes.len()).step_by(7) {
        let e = R1cs::read(Cursor::new(&bytes[..cut])).unwrap_err();
        assert!(matches!(e, Error::Decode { .. }), "cut at {cut}: {e}");
    }
    // Each byte flipped: refused (the digest catches what the structure's checks cannot: a
    // coefficient's value, a variable still in range), never a panic.
    for at in 0..bytes.len() {
        let mut bad = bytes.clone();
        bad[at] ^= 0x80;
        let e = R1cs::read(Cursor::new(&bad)).expect_err(&format!("byte {at} flipped is read"));
        assert!(matches!(e, Error::Decode { .. }), "byte {at}: {e}");
    }
    // Bytes past the digest, or the digest alone damaged.
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(matches!(R1cs::read(Cursor::new(&longer)), Err(Error::Decode { .. })));
    let mut digest = bytes.clone();
    *digest.last_mut().unwrap() ^= 1;
    assert!(matches!(R1cs::read(Cursor::new(&digest)), Err(Error::Decode { what, .. }) if what == "digest"));
    // A huge length does not allocate: it is checked against the bytes left.
    let mut huge = bytes.clone();
    huge[40..48].copy_from_slice(&u64::MAX.to_le_bytes()); // the table's length
    assert!(matches!(R1cs::read(Cursor::new(&huge)), Err(Error::Decode { .. })));
    let mut other = bytes.clone();
    other[0] = b'x';
    assert!(matches!(R1cs::read(Cursor::new(&other)), Err(Error::Decode { what, .. }) if what == "magic"));
    let mut version = bytes;
    version[8] = 1; // the first layout, which had no digest
    assert!(matches!(R1cs::read(Cursor::new(&version)), Err(Error::Decode { what, .. }) if what == "version"));
}

/// Of a thousand random single-bit flips of a SHA-256 recording (the kind a Filecoin
/// partition is made of), every one is refused.
#[test]
fn every_random_bit_flip_of_a_recording_is_refused() {
    use rand::Rng;
    let r1cs = R1cs::record(Chain::new(Shape::Sha256, 15, 0)).unwrap();
    let mut bytes = Vec::new();
    r1cs.write(&mut bytes).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(33);
    let mut passed = vec![];
    for _ in 0..1000 {
        let bit = rng.gen_range(0..8 * bytes.len());
        bytes[bit / 8] ^= 1 << (bit % 8);
        if R1cs::read(Cursor::new(&bytes)).is_ok() {
            passed.push(bit);
        }
        bytes[bit / 8] ^= 1 << (bit % 8);
    }
    assert_eq!(passed, Vec::<usize>::new(), "bits that flipped and were read ({} bytes)", bytes.len());
    assert_eq!(R1cs::read(Cursor::new(&bytes)).unwrap(), r1cs);
}

#[test]
fn a_recording_of_another_shape_is_refused() {
    let key = crate::support::key(6);
    let other = R1cs::record(crate::support::chain(7, 0)).unwrap();
    assert!(matches!(key.clone().with_r1cs(other.clone()), Err(Error::Shape { .. })));
    let unused = R1cs::record(MimcChain { unused: 2, ..crate::support::chain(6, 0) }).unwrap();
    assert!(matches!(key.clone().with_r1cs(unused), Err(Error::Shape { .. })));
    // Set by hand, it is caught when the prover checks the key.
    let mut by_hand = key;
    by_hand.r1cs = Some(Arc::new(other));
    assert!(matches!(Prover::new(by_hand, config(1, 1)), Err(Error::Shape { .. })));
}

#[test]
fn a_circuit_whose_constraints_differ_from_the_recording_is_proof_invalid_and_the_prover_goes_on() {
    let chain = crate::support::chain(6, 3);
    let key = crate::support::key(6);
    let key = key.with_r1cs(R1cs::record(chain.clone()).unwrap()).unwrap();
    let prover = Prover::new(key, config(2, 1)).unwrap();
    // The same counts, other round constants: other constraints, which its witness satisfies.
    let other =
        MimcChain { constants: Arc::new(chain.constants.iter().map(|k| k + Scalar::ONE).collect()), ..chain.clone() };
    let answers = prover.prove(vec![other, chain.clone(), chain]).unwrap();
    assert!(matches!(answers[0], Err(Error::ProofInvalid { job: 0, recorded: true })), "{:?}", answers[0]);
    let message = answers[0].as_ref().unwrap_err().to_string();
    assert!(message.contains("differ from the key's recorded constraints"), "{message}");
    assert!(answers[1..].iter().all(Result::is_ok), "good circuits still prove");
    // More constraints than recorded: a shape error before any product.
    let longer = crate::support::chain(6, 1);
    let longer = MimcChain { unused: 1, ..longer };
    assert!(matches!(prover.prove(vec![longer]).unwrap().remove(0), Err(Error::Shape { .. })));
    assert_balanced(&prover.pool().stats());
    prover.shutdown();
}

/// The chain computed by a native witness path when the system is a witness generator (its
/// aux values written through `allocate_empty`, no `enforce`), as gadgets like neptune's
/// Poseidon do; otherwise the chain as it is.
#[derive(Clone)]
struct NativeWitness(MimcChain);

impl Circuit<Scalar> for NativeWitness {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        if !cs.is_witness_generator() {
            return self.0.synthesize(cs);
        }
        let c = &self.0;
        let (mut x, rounds) = (c.x0, c.constants.len());
        let mut aux = vec![x];
        for k in c.constants.iter() {
            let s = x + k;
            aux.push(s.square());
            x = s.square() * s;
            aux.push(x);
        }
        aux.pop(); // the last value is the public output
        let (aux_out, inputs) = cs.allocate_empty(aux.len(), 1);
        aux_out.copy_from_slice(&aux);
        inputs[0] = x;
        assert_eq!(aux.len(), 2 * rounds);
        Ok(())
    }
}

#[test]
fn native_witness_paths_give_bellpersons_proofs() {
    let mut rng = ChaCha20Rng::seed_from_u64(27);
    let chain = |x0: u64, rounds| MimcChain {
        x0: Scalar::from(x0),
        constants: MimcChain::constants(rounds),
        public_output: true,
        unused: 0,
    };
    let native = NativeWitness(chain(0, 12));
    let params = bp::generate_random_parameters::<Bls12, _, _>(native.clone(), &mut rng).unwrap();
    let (r, s) = randomness(&mut rng);
    prove_both_ways("native witness", &params, vec![(NativeWitness(chain(4, 12)), r, s)], native);
}

/// A circuit that synthesizes its sectors in parts when the system is extensible, as
/// Filecoin's WindowPoSt does (a temporary one per part, inputs and aux in each, parts on
/// rayon's threads), proves bellperson's proofs (whose `create_proof` takes the parts too,
/// and whose key generation does not) on the full and the recorded path; its recording,
/// made in parts, is the one sequential synthesis makes.
#[test]
fn circuits_synthesized_in_parts_give_bellpersons_proofs_on_every_path() {
    let mut rng = ChaCha20Rng::seed_from_u64(29);
    let shape = Sectors::new(vec![0; 7], 9, 2);
    let params = bp::generate_random_parameters::<Bls12, _, _>(shape.clone(), &mut rng).unwrap();
    let parts = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let jobs: Vec<_> = (1..3u64)
        .map(|k| {
            let (r, s) = randomness(&mut rng);
            let sectors =
                Sectors { parts: Arc::clone(&parts), ..Sectors::new((0..7).map(|i| i * k + 3).collect(), 9, 2) };
            (sectors, r, s)
        })
        .collect();
    for (c, _, _) in &jobs {
        assert!(bp::verify_proof(
            &bp::prepare_verifying_key(&params.vk),
            &bp::create_proof::<Bls12, _, _>(c.clone(), &params, Scalar::ONE, Scalar::ONE).unwrap(),
            &c.public_inputs()
        )
        .unwrap());
    }
    parts.store(0, std::sync::atomic::Ordering::Relaxed);
    prove_both_ways("sectors in parts", &params, jobs, shape.clone());
    // Four groups of sectors per job, two jobs: ours in full, ours witness-only, bellperson's.
    assert_eq!(parts.load(std::sync::atomic::Ordering::Relaxed), 4 * 2 * 3, "every path took the parts");
    let sequential = Sectors { sequential: true, ..shape.clone() };
    assert_eq!(R1cs::record(shape).unwrap(), R1cs::record(sequential).unwrap(), "recorded in parts or in order");
}

#[test]
fn a_key_with_a_recording_proves_on_a_prover_made_from_its_file() {
    let chain = crate::support::chain(7, 0);
    let mut file = Vec::new();
    R1cs::record(chain).unwrap().write(&mut file).unwrap();
    let key = crate::support::key(7).with_r1cs(R1cs::read(Cursor::new(file)).unwrap()).unwrap();
    let pvk = pinprove::prepare_verifying_key(&key.vk);
    let prover = Prover::new(key, Config { synthesis_threads: 2, ..Config::default() }).unwrap();
    let circuits: Vec<_> = (1..4).map(|x0| crate::support::chain(7, x0)).collect();
    let proofs = prover.prove(circuits.clone()).unwrap();
    for (c, proof) in circuits.iter().zip(proofs) {
        assert!(pinprove::verify_proof(&pvk, &proof.unwrap(), &c.public_inputs()).unwrap());
    }
    let t = pinprove::PartitionTimings::total(&prover.take_timings()).sums;
    assert!(!t.constraints.is_zero(), "the backend evaluated the constraints");
    prover.shutdown();
}
