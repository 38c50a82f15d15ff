//! Proves a batch of MiMC hash-chain circuits through the pipeline, verifies every proof, and
//! reports throughput, per-stage timings and pool statistics.
//!
//! ```text
//! cargo run --release --example prove -- [--lg-m 14] [--proofs 16] [--threads N] [--depth 2]
//! ```
//! `--lg-m K` sizes the circuit to fill a domain of 2^K (constraints + inputs).

mod common;

use std::time::{Duration, Instant};

use common::MimcChain;
use pinprove::groth16::{generator, prepare_verifying_key, verify_proof};
use pinprove::{Config, PartitionTimings, Prover};

struct Args {
    lg_m: u32,
    proofs: usize,
    threads: usize,
    depth: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args { lg_m: 14, proofs: 16, threads: Config::default().synthesis_threads, depth: 2 };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        let number = || value.parse::<usize>().map_err(|e| format!("{flag} {value}: {e}"));
        match flag.as_str() {
            "--lg-m" => args.lg_m = number()? as u32,
            "--proofs" => args.proofs = number()?,
            "--threads" => args.threads = number()?,
            "--depth" => args.depth = number()?,
            _ => return Err(format!("unknown flag {flag}; flags: --lg-m K --proofs N --threads T --depth D")),
        }
    }
    if !(2..=26).contains(&args.lg_m) {
        return Err("--lg-m must be between 2 and 26".into());
    }
    Ok(args)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let args = parse_args()?;
    let rounds = MimcChain::rounds_for_domain(args.lg_m);
    let constants = MimcChain::constants(rounds);
    let circuit = |x0: u64| MimcChain::new(x0, &constants);
    println!(
        "pinprove prove: {} proofs, MiMC chain of {rounds} rounds ({} constraints, domain 2^{}), {} synthesis threads, queue depth {}",
        args.proofs,
        2 * rounds,
        args.lg_m,
        args.threads,
        args.depth
    );

    let start = Instant::now();
    let key = generator::generate_random_parameters(circuit(0), &mut rand::thread_rng())?;
    println!("  setup (our generator):   {:>9.3} s", start.elapsed().as_secs_f64());
    let pvk = prepare_verifying_key(&key.vk);

    let start = Instant::now();
    let config = Config { synthesis_threads: args.threads, max_gpu_queue_depth: args.depth, ..Config::default() };
    let prover = Prover::new(key, config)?;
    let warm = prover.pool().stats();
    println!(
        "  prover start:            {:>9.3} s  (backend {}, prewarmed {} buffers in {:.3} s)",
        start.elapsed().as_secs_f64(),
        prover.backend(),
        warm.allocations,
        warm.alloc_time.as_secs_f64()
    );

    let start = Instant::now();
    let results = prover.prove((0..args.proofs as u64).map(circuit).collect())?;
    let wall = start.elapsed();
    let mut verified = 0;
    for (x0, result) in results.into_iter().enumerate() {
        let proof = result?;
        if !verify_proof(&pvk, &proof, &circuit(x0 as u64).public_inputs())? {
            return Err(format!("proof {x0} does not verify").into());
        }
        verified += 1;
    }
    let timings = prover.take_timings();
    let total = PartitionTimings::total(&timings);
    println!(
        "  batch:                   {:>9.3} s  {:.2} proofs/s, {verified}/{} verified",
        wall.as_secs_f64(),
        args.proofs as f64 / wall.as_secs_f64(),
        args.proofs
    );
    println!("  per partition             mean ms     max ms");
    type Stage = fn(&PartitionTimings) -> Duration;
    let stages: [(&str, Stage); 7] = [
        ("synthesis", |t| t.synthesis),
        ("queue wait", |t| t.queue_wait),
        ("input wait", |t| t.input_wait),
        ("h2d", |t| t.h2d),
        ("ntt (h stage)", |t| t.ntt),
        ("msm", |t| t.msm),
        ("busy", |t| t.gpu_busy),
    ];
    for (name, stage) in stages {
        let max = timings.iter().map(stage).max().unwrap_or_default();
        let mean = stage(&total) / timings.len().max(1) as u32;
        println!("    {name:<20} {:>10.2} {:>10.2}", ms(mean), ms(max));
    }
    println!(
        "  proving thread busy:     {:>8.1} % of the batch's wall time",
        100.0 * total.gpu_busy.as_secs_f64() / wall.as_secs_f64()
    );
    let s = prover.pool().stats();
    println!(
        "  pool: {} allocations, {} reuses, {} fallbacks; checkouts {} = checkins {}; peak {:.1} MiB held, {:.1} MiB in use; pinned: {}",
        s.allocations,
        s.reuses,
        s.fallbacks,
        s.checkouts,
        s.checkins,
        mib(s.peak_bytes_pinned),
        mib(s.peak_bytes_in_use),
        prover.pool().is_pinned()
    );
    Ok(())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1 << 20) as f64
}
