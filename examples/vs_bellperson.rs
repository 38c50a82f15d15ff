//! Ours against the peer, in one run: the same circuits, key and r, s proved by pinprove's
//! pipeline and by bellperson 0.27's `create_proof_batch`; proofs must be identical.
//!
//! Flags: `--help` (see `USAGE` below).

mod common;

use std::time::Instant;

use bellperson::groth16 as bp;
use blstrs::{Bls12, Scalar};
use common::flags::Flags;
use common::MimcChain;
use ff::Field;
use pinprove::{Config, PartitionTimings, Prover};
use pinprove::{Proof, ProvingKey};

/// What `--help` prints.
const USAGE: &str = "cargo run --release --features bellperson --example vs_bellperson -- [--lg-m 14] [--proofs 8]";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let flags = Flags::parse(USAGE, &["--lg-m", "--proofs"])?;
    let (lg_m, proofs) = (flags.get("--lg-m", 14u32)?, flags.get("--proofs", 8usize)?);
    let constants = MimcChain::constants(MimcChain::rounds_for_domain(lg_m));
    let circuit = |x0: u64| MimcChain::new(x0, &constants);
    let mut rng = rand::thread_rng();
    let params = bp::generate_random_parameters::<Bls12, _, _>(circuit(0), &mut rng)?;
    let r: Vec<Scalar> = (0..proofs).map(|_| Scalar::random(&mut rng)).collect();
    let s: Vec<Scalar> = (0..proofs).map(|_| Scalar::random(&mut rng)).collect();

    let prover = Prover::new(ProvingKey::from(&params), Config::default())?;
    let start = Instant::now();
    let jobs = (0..proofs).map(|i| (circuit(i as u64), r[i], s[i])).collect();
    let ours: Vec<Proof> = prover.prove_with_randomness(jobs)?.into_iter().collect::<Result<_, _>>()?;
    let ours_wall = start.elapsed();
    let total = PartitionTimings::total(&prover.take_timings());

    let start = Instant::now();
    let theirs = bp::create_proof_batch::<Bls12, _, _>((0..proofs as u64).map(circuit).collect(), &params, r, s)?;
    let theirs_wall = start.elapsed();

    let identical = ours.iter().zip(&theirs).all(|(a, b)| *a == Proof::from(b));
    println!("{proofs} proofs of a 2^{lg_m} domain, same key and r, s; identical proofs: {identical}");
    println!("  {:<28} {:>10} {:>10}", "", "wall s", "proofs/s");
    for (name, wall) in [("pinprove (cpu backend)", ours_wall), ("bellperson create_proof_batch", theirs_wall)] {
        println!("  {name:<28} {:>10.3} {:>10.2}", wall.as_secs_f64(), proofs as f64 / wall.as_secs_f64());
    }
    let n = proofs as u32;
    println!(
        "  pinprove per partition: synthesis {:.1} ms, h stage {:.1} ms, msm {:.1} ms",
        total.sums.synthesis.as_secs_f64() * 1e3 / n as f64,
        total.sums.ntt.as_secs_f64() * 1e3 / n as f64,
        total.sums.msm.as_secs_f64() * 1e3 / n as f64
    );
    if !identical {
        return Err("proofs differ from bellperson's".into());
    }
    Ok(())
}
