//! Synthesis of one benchmark shape, in full (the constraints evaluated as they are enforced)
//! against witness-only (the constraints recorded once, left to the backend): time per
//! partition and partitions per second with T threads each synthesizing their own partitions
//! at once (the host's own ceiling for a prover's throughput), and the host
//! bytes per partition holds either way. No proof is made; the key only gives the lengths, so
//! its points are all the identity.
//!
//! Flags: `--help` (see `USAGE` below).

mod common;

use std::sync::Mutex;
use std::time::{Duration, Instant};

use bellpepper::util_cs::witness_cs::WitnessCS;
use bellpepper_core::{Circuit, ConstraintSystem};
use blstrs::{G1Affine, G2Affine, Scalar};
use common::flags::Flags;
use common::recording::recorded;
use common::shapes::{Chain, Shape};
use group::prime::PrimeCurveAffine;
use pinprove::backend::{Assignment, Census};
use pinprove::internal::{recording_partition_bytes, synthesize, synthesize_witness};
use pinprove::VerifyingKey;
use pinprove::{PinnedPool, PoolConfig, ProvingKey, R1cs};
use rayon::prelude::*;

/// What `--help` prints.
const USAGE: &str =
    "cargo run --release --example synthesis -- [--shape sha256] [--lg-m 20] [--threads 1] [--rounds 2] \\
    [--only full|witness|floor] [--r1cs FILE]
Each of `--threads` threads synthesizes `--rounds` partitions one after the other, in full and then
witness-only, then through bellpepper's WitnessCS (or only the one `--only` names: one process
a measurement, for a profiler or to compare on a fresh process); prints each run's partitions per
second (the rate the host alone sustains: no prover goes faster), the mean time per partition and
the host bytes per partition holds. `--r1cs FILE`: the recording is read from FILE, or made and
written there (for the next run, or for vs_peer's `--r1cs`).";

/// A key of `r1cs`'s lengths whose points are all the identity: synthesis reads only lengths.
fn key_of_lengths(r1cs: &R1cs) -> ProvingKey {
    let m = (r1cs.num_constraints() + r1cs.num_inputs()).next_power_of_two();
    let g1 = |n| vec![G1Affine::identity(); n];
    let vk = VerifyingKey {
        alpha_g1: G1Affine::generator(),
        beta_g1: G1Affine::generator(),
        beta_g2: G2Affine::generator(),
        gamma_g2: G2Affine::generator(),
        delta_g1: G1Affine::generator(),
        delta_g2: G2Affine::generator(),
        ic: g1(r1cs.num_inputs()),
    };
    let b_g2 = vec![G2Affine::identity(); r1cs.b_query_len()];
    ProvingKey::new(vk, g1(m - 1), g1(r1cs.num_aux()), g1(r1cs.a_query_len()), g1(r1cs.b_query_len()), b_g2)
}

/// Mean wall time a partition when `threads` threads each run `rounds` of `synthesize_one`,
/// and the wall time of them all.
fn mean_per_partition(threads: usize, rounds: usize, synthesize_one: impl Fn(u64) + Sync) -> (Duration, Duration) {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("threads");
    let start = Instant::now();
    let times: Vec<Duration> = pool.install(|| {
        (0..threads)
            .into_par_iter()
            .flat_map_iter(|t| {
                (0..rounds).map(move |r| (t * rounds + r) as u64).map(|x0| {
                    let start = Instant::now();
                    synthesize_one(x0 + 1);
                    start.elapsed()
                })
            })
            .collect()
    });
    (times.iter().sum::<Duration>() / times.len() as u32, start.elapsed())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let flags = Flags::parse(USAGE, &["--shape", "--lg-m", "--threads", "--rounds", "--only", "--r1cs"])?;
    let only: String = flags.get("--only", String::new())?;
    let shape = Shape::parse(&flags.get("--shape", "sha256".to_owned())?)?;
    let lg_m: u32 = flags.get("--lg-m", 20)?;
    let (threads, rounds): (usize, usize) = (flags.get("--threads", 1)?, flags.get("--rounds", 2)?);
    print!("{} 2^{lg_m}: ", shape.name());
    let r1cs = recorded(Chain::new(shape, lg_m, 0), &flags.get("--r1cs", String::new())?)?;
    let runs = |name: &str| only.is_empty() || only == name;
    let key = runs("full").then(|| key_of_lengths(&r1cs)); // only full synthesis reads it
    let pool = PinnedPool::new(PoolConfig { max_bytes: usize::MAX / 2, ..PoolConfig::default() });
    let full = runs("full").then(|| {
        mean_per_partition(threads, rounds, |x0| {
            let key = key.as_ref().expect("made for full synthesis");
            synthesize(Chain::new(shape, lg_m, x0), key, &pool).expect("full synthesis");
        })
    });
    // The pool bytes a witness-only partition held (its packed aux), the most of any, and
    // what its aux are.
    let held = Mutex::new((0, Census::default()));
    let witness = runs("witness").then(|| {
        mean_per_partition(threads, rounds, |x0| {
            let w = synthesize_witness(Chain::new(shape, lg_m, x0), &r1cs, &pool).expect("witness-only synthesis");
            let Assignment::Packed(aux) = &w.assignment else { unreachable!("witness-only synthesis packs") };
            let mut held = held.lock().expect("no thread panicked holding it");
            if w.host_bytes() >= held.0 {
                *held = (w.host_bytes(), aux.census());
            }
        })
    });
    // The floor: bellpepper's own witness generator, into heap vectors (the gadgets' work).
    let floor = runs("floor").then(|| {
        mean_per_partition(threads, rounds, |x0| {
            let mut cs = WitnessCS::<Scalar>::new();
            Chain::new(shape, lg_m, x0).synthesize(&mut cs).expect("bellpepper's WitnessCS");
        })
    });
    // All the partitions of each run that ran: the host's rate with no device in the way.
    for (name, run) in [("full", full), ("witness-only", witness), ("WitnessCS", floor)] {
        if let Some((_, wall)) = run {
            let rate = (threads * rounds) as f64 / wall.as_secs_f64();
            println!("{name}: {} partitions in {:.2} s, {rate:.2} per second", threads * rounds, wall.as_secs_f64());
        }
    }
    let (full, witness, floor) = (full.map(|r| r.0), witness.map(|r| r.0), floor.map(|r| r.0));
    let ms = |d: Option<Duration>| d.map_or(f64::NAN, |d| d.as_secs_f64() * 1e3);
    let bytes_full = recording_partition_bytes(&r1cs, false)?;
    let (bytes_witness, census) = held.into_inner().expect("no thread panicked holding it");
    println!(
        "synthesis per partition, {threads} thread(s) x {rounds}: full {:.1} ms, witness-only {:.1} ms ({:.2}x)",
        ms(full),
        ms(witness),
        ms(witness) / ms(full)
    );
    println!("  bellpepper's WitnessCS (heap vectors, the same gadgets): {:.1} ms", ms(floor));
    if runs("witness") {
        let aux = (census.zeros + census.ones + census.others) as f64 / 100.0;
        println!(
            "host bytes per partition in flight: full {:.3} GB, witness-only {:.4} GB ({:.4}x); its aux: {:.2} % 0, \
             {:.2} % 1, {:.2} % other",
            bytes_full as f64 / 1e9,
            bytes_witness as f64 / 1e9,
            bytes_witness as f64 / bytes_full as f64,
            census.zeros as f64 / aux,
            census.ones as f64 / aux,
            census.others as f64 / aux
        );
    }
    Ok(())
}
