//! Correctness against the oracle, bellperson 0.27: keys from its setup prove here, proofs
//! equal its `create_proof` bit for bit for the same r, s and verify with its `verify_proof`;
//! our setup and verifier agree with it; our NTT equals its domain FFT.

use bellperson::groth16 as bp;
use blstrs::{Bls12, Scalar};
use ec_gpu_gen::threadpool::Worker;
use ff::Field;
use pinprove::internal::Domain;
use pinprove::{generate_random_parameters, prepare_verifying_key, verify_proof, Proof, ProvingKey, VerifyingKey};
use pinprove::{Config, Prover};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

use crate::circuits::MimcChain;

fn variants() -> Vec<(&'static str, MimcChain)> {
    let c = |rounds, public_output, unused| MimcChain {
        x0: Scalar::from(11),
        constants: MimcChain::constants(rounds),
        public_output,
        unused,
    };
    vec![
        ("public output", c(30, true, 0)),
        ("no public input", c(30, false, 0)),
        ("unused variables", c(20, true, 9)),
        ("one round", c(1, true, 0)),
    ]
}

fn with_x0(c: &MimcChain, x0: u64) -> MimcChain {
    MimcChain { x0: Scalar::from(x0), ..c.clone() }
}

#[test]
fn proofs_equal_bellperson_create_proof_bit_for_bit_and_verify_there() {
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    for (name, circuit) in variants() {
        let params = bp::generate_random_parameters::<Bls12, _, _>(circuit.clone(), &mut rng).unwrap();
        let bp_pvk = bp::prepare_verifying_key(&params.vk);
        let prover =
            Prover::new(ProvingKey::from(&params), Config { synthesis_threads: 2, ..Config::default() }).unwrap();
        let jobs: Vec<_> =
            (0..3).map(|i| (with_x0(&circuit, i), Scalar::random(&mut rng), Scalar::random(&mut rng))).collect();
        let ours = prover.prove_with_randomness(jobs.clone()).unwrap();
        for ((c, r, s), proof) in jobs.into_iter().zip(ours) {
            let proof = proof.unwrap();
            let inputs = c.public_inputs();
            let theirs = bp::create_proof::<Bls12, _, _>(c, &params, r, s).unwrap();
            assert_eq!(proof, Proof::from(&theirs), "{name}: differs from bellperson's proof");
            assert_eq!(proof.to_bytes().to_vec(), bellperson_bytes(&theirs), "{name}: encodings differ");
            assert!(bp::verify_proof(&bp_pvk, &bp::Proof::from(proof), &inputs).unwrap(), "{name}");
            if !inputs.is_empty() {
                let wrong = [inputs[0] + Scalar::ONE];
                assert!(
                    !bp::verify_proof(&bp_pvk, &bp::Proof::from(proof), &wrong).unwrap(),
                    "{name}: wrong input accepted"
                );
            }
        }
    }
}

fn bellperson_bytes(p: &bp::Proof<Bls12>) -> Vec<u8> {
    let mut out = Vec::new();
    p.write(&mut out).unwrap();
    out
}

#[test]
fn our_setup_and_verifier_agree_with_bellperson() {
    let mut rng = ChaCha20Rng::seed_from_u64(2);
    for (name, circuit) in variants() {
        let key = generate_random_parameters(circuit.clone(), &mut rng).unwrap();
        let params = bp::Parameters::<Bls12>::from(&key);
        assert_eq!(ProvingKey::from(&params), key, "{name}: conversion round trip");
        let (pvk, bp_pvk) =
            (prepare_verifying_key(&key.vk), bp::prepare_verifying_key(&bp::VerifyingKey::from(&key.vk)));
        let prover = Prover::new(key, Config { synthesis_threads: 2, ..Config::default() }).unwrap();
        let proof = prover.prove(vec![circuit.clone()]).unwrap().remove(0).unwrap();
        let inputs = circuit.public_inputs();
        assert!(verify_proof(&pvk, &proof, &inputs).unwrap(), "{name}: ours rejects ours");
        assert!(
            bp::verify_proof(&bp_pvk, &bp::Proof::from(proof), &inputs).unwrap(),
            "{name}: bellperson rejects ours"
        );
        // bellperson's prover on our key: our verifier accepts, and rejects a wrong input.
        let theirs = bp::create_random_proof(circuit.clone(), &params, &mut rng).unwrap();
        assert!(verify_proof(&pvk, &Proof::from(&theirs), &inputs).unwrap(), "{name}");
        if !inputs.is_empty() {
            assert!(!verify_proof(&pvk, &proof, &[inputs[0].double()]).unwrap(), "{name}: wrong input accepted");
        }
        assert!(verify_proof(&pvk, &proof, &[Scalar::ONE; 3]).is_err(), "input count is checked");
    }
}

#[test]
fn verifying_key_conversions_round_trip() {
    let mut rng = ChaCha20Rng::seed_from_u64(3);
    let (_, circuit) = variants().remove(0);
    let params = bp::generate_random_parameters::<Bls12, _, _>(circuit, &mut rng).unwrap();
    let vk = VerifyingKey::from(&params.vk);
    assert_eq!(bp::VerifyingKey::from(&vk), params.vk);
}

#[test]
fn ntt_equals_bellperson_domain_fft() {
    use bellperson::domain::EvaluationDomain;
    let worker = Worker::new();
    let mut rng = ChaCha20Rng::seed_from_u64(4);
    for lg in [1, 4, 10, 12, 16] {
        let v: Vec<Scalar> = (0..1usize << lg).map(|_| Scalar::random(&mut rng)).collect();
        let d = Domain::new(v.len()).unwrap();
        type Op = (fn(&Domain, &mut [Scalar]), fn(&mut EvaluationDomain<Scalar>, &Worker));
        let ops: [(&str, Op); 4] = [
            ("ntt", (Domain::ntt, |e, w| e.fft(w, &mut None).unwrap())),
            ("intt", (Domain::intt, |e, w| e.ifft(w, &mut None).unwrap())),
            ("coset_ntt", (Domain::coset_ntt, |e, w| e.coset_fft(w, &mut None).unwrap())),
            ("icoset_ntt", (Domain::icoset_ntt, |e, w| e.icoset_fft(w, &mut None).unwrap())),
        ];
        for (name, (ours, theirs)) in ops {
            let mut a = v.clone();
            ours(&d, &mut a);
            let mut e = EvaluationDomain::from_coeffs(v.clone()).unwrap();
            theirs(&mut e, &worker);
            assert_eq!(a, e.into_coeffs(), "{name} at 2^{lg}");
        }
    }
}

#[test]
fn h_equals_bellperson_quotient() {
    use bellperson::domain::EvaluationDomain;
    let worker = Worker::new();
    let mut rng = ChaCha20Rng::seed_from_u64(5);
    let m = 1 << 11;
    let [a, b, c]: [Vec<Scalar>; 3] = std::array::from_fn(|_| (0..m).map(|_| Scalar::random(&mut rng)).collect());
    let (mut ea, mut eb, mut ec) = (
        EvaluationDomain::from_coeffs(a.clone()).unwrap(),
        EvaluationDomain::from_coeffs(b.clone()).unwrap(),
        EvaluationDomain::from_coeffs(c.clone()).unwrap(),
    );
    for e in [&mut ea, &mut eb, &mut ec] {
        e.ifft(&worker, &mut None).unwrap();
        e.coset_fft(&worker, &mut None).unwrap();
    }
    ea.mul_assign(&worker, &eb);
    ea.sub_assign(&worker, &ec);
    ea.divide_by_z_on_coset(&worker);
    ea.icoset_fft(&worker, &mut None).unwrap();
    let (mut a, mut b, mut c) = (a, b, c);
    Domain::new(m).unwrap().compute_h(&mut a, &mut b, &mut c);
    assert_eq!(a, ea.into_coeffs());
}

/// The CPU backend under another name, evaluating recorded constraints or, as a device that
/// could not place them beside the key, not.
struct Wrapped {
    cpu: pinprove::backend::CpuBackend,
    name: &'static str,
    evaluates: bool,
}

impl pinprove::backend::Backend for Wrapped {
    fn name(&self) -> &'static str {
        self.name
    }

    fn evaluates_recorded_constraints(&self) -> bool {
        self.evaluates
    }

    fn h(&mut self, w: &mut pinprove::backend::Witness, t: &mut pinprove::PartitionTimings) -> pinprove::Result<()> {
        self.cpu.h(w, t)
    }

    fn msm(
        &mut self,
        w: &pinprove::backend::Witness,
        t: &mut pinprove::PartitionTimings,
    ) -> pinprove::Result<pinprove::backend::MsmSums> {
        self.cpu.msm(w, t)
    }
}

/// The key travels one way: a prover gives it to its backends' factories and keeps only its
/// shape (the recording's counts among it), so a key handed over is held by the backends
/// alone (the CPU backend holds it; one that copies what it needs, as a device does, holds
/// none of it, nor of its recording), and the proofs are bellperson's, bit for bit, either
/// way, witness-only.
#[test]
fn a_prover_keeps_no_key_of_its_own_and_proves_the_same() {
    let mut rng = ChaCha20Rng::seed_from_u64(3);
    let circuit =
        MimcChain { x0: Scalar::from(11), constants: MimcChain::constants(40), public_output: true, unused: 3 };
    let params = bp::generate_random_parameters::<Bls12, _, _>(circuit.clone(), &mut rng).unwrap();
    let r1cs = std::sync::Arc::new(pinprove::R1cs::record(circuit.clone()).unwrap());
    let key = std::sync::Arc::new(ProvingKey::from(&params).with_r1cs(std::sync::Arc::clone(&r1cs)).unwrap());
    let config = Config { synthesis_threads: 2, ..Config::default() };
    let own = |k: &pinprove::KeySource| {
        let k = k.load()?;
        let mut copy = ProvingKey::clone(&k);
        copy.r1cs = k.r1cs.as_deref().map(|r| std::sync::Arc::new(r.clone()));
        let cpu = pinprove::backend::CpuBackend::new(std::sync::Arc::new(copy))?;
        // Over a copy of the key it makes (the recording too), as a device copies the bases
        // and the matrices to itself: it holds nothing of the key it was given.
        Ok(Wrapped { cpu, name: "cpu over its own copy", evaluates: true })
    };
    let pool = pinprove::PinnedPool::new(config.pool);
    let copying = Prover::with_backends(std::sync::Arc::clone(&key), config, pool, vec![own]).unwrap();
    assert_eq!(std::sync::Arc::strong_count(&key), 1, "neither the prover nor its backend holds the key");
    assert_eq!(std::sync::Arc::strong_count(&r1cs), 2, "nor its recording: this handle and the key's");
    assert!(copying.is_witness_only(), "the recording stays with the prover");
    assert_eq!(copying.verifying_key(), &key.vk);
    let jobs: Vec<_> =
        (1..4).map(|x0| (with_x0(&circuit, x0), Scalar::random(&mut rng), Scalar::random(&mut rng))).collect();
    let cpu = Prover::new(std::sync::Arc::clone(&key), config).unwrap();
    assert_eq!(std::sync::Arc::strong_count(&key), 2, "the CPU backend holds the key, the prover does not");
    let theirs: Vec<Proof> = jobs
        .iter()
        .map(|(c, r, s)| Proof::from(&bp::create_proof::<Bls12, _, _>(c.clone(), &params, *r, *s).unwrap()))
        .collect();
    for prover in [&copying, &cpu] {
        for (proof, theirs) in prover.prove_with_randomness(jobs.clone()).unwrap().into_iter().zip(&theirs) {
            assert_eq!(&proof.unwrap(), theirs, "{}: bellperson's proof", prover.backend());
        }
    }
    copying.shutdown();
    cpu.shutdown();
    assert_eq!(std::sync::Arc::strong_count(&key), 1, "the backends let go of the key");
}

/// `Config::require_witness_only`: a prover that would synthesize in full (a key without a
/// recording, or a backend that does not evaluate it) is refused when made, typed, its
/// backends dropped and its threads ended; without it the prover synthesizes in full and its
/// proofs are bellperson's; with the CPU backend it proves witness-only.
#[test]
fn a_prover_required_to_prove_witness_only_is_refused_when_it_cannot() {
    use std::sync::Arc;
    let mut rng = ChaCha20Rng::seed_from_u64(4);
    let circuit =
        MimcChain { x0: Scalar::from(5), constants: MimcChain::constants(20), public_output: true, unused: 0 };
    let params = bp::generate_random_parameters::<Bls12, _, _>(circuit.clone(), &mut rng).unwrap();
    let bare = ProvingKey::from(&params);
    let key = Arc::new(bare.clone().with_r1cs(pinprove::R1cs::record(circuit.clone()).unwrap()).unwrap());
    let require = Config { synthesis_threads: 2, require_witness_only: true, ..Config::default() };
    let refused = |e: pinprove::Error, why: &str| matches!(&e, pinprove::Error::Config(m) if m.contains(why));

    assert!(refused(Prover::new(bare, require).unwrap_err(), "no recorded constraints"));
    let in_full = |k: &pinprove::KeySource| {
        let cpu = pinprove::backend::CpuBackend::new(k.load()?)?;
        Ok(Wrapped { cpu, name: "cpu in full only", evaluates: false })
    };
    let pool = || pinprove::PinnedPool::new(require.pool);
    let e = Prover::with_backends(Arc::clone(&key), require, pool(), vec![in_full]).unwrap_err();
    assert!(refused(e, "cpu in full only backend does not evaluate"));
    assert_eq!(Arc::strong_count(&key), 1, "the backend made was dropped, its thread ended");

    let lenient = Config { require_witness_only: false, ..require };
    let in_full = Prover::with_backends(Arc::clone(&key), lenient, pool(), vec![in_full]).unwrap();
    assert!(!in_full.is_witness_only());
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let proof = in_full.prove_with_randomness(vec![(with_x0(&circuit, 8), r, s)]).unwrap().remove(0).unwrap();
    let theirs = bp::create_proof::<Bls12, _, _>(with_x0(&circuit, 8), &params, r, s).unwrap();
    assert_eq!(proof, Proof::from(&theirs));
    assert!(Prover::new(key, require).unwrap().is_witness_only());
}
