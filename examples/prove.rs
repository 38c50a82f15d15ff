//! Proves a batch of MiMC hash-chain circuits through the pipeline, verifies every proof, and
//! reports throughput, per-stage timings and pool statistics.
//!
//! Flags: `--help` (see `USAGE` below).

mod common;

use std::time::Instant;

use common::flags::Flags;
use common::{plots, report, MimcChain};
use pinprove::{generate_random_parameters, prepare_verifying_key};
use pinprove::{Config, PartitionTimings, Prover};

/// What `--help` prints.
const USAGE: &str = "cargo run --release --example prove -- [--lg-m 14] [--proofs 16] [--threads N] [--depth 2] \\
    [--trace batch.json] [--svg timeline.svg]
`--lg-m K` sizes the circuit to fill a domain of 2^K (constraints + inputs).";

struct Args {
    lg_m: u32,
    proofs: usize,
    threads: usize,
    depth: usize,
    trace: String,
    svg: String,
}

fn parse_args() -> Result<Args, String> {
    let flags = Flags::parse(USAGE, &["--lg-m", "--proofs", "--threads", "--depth", "--trace", "--svg"])?;
    let args = Args {
        lg_m: flags.get("--lg-m", 14)?,
        proofs: flags.get("--proofs", 16)?,
        threads: flags.get("--threads", Config::default().synthesis_threads)?,
        depth: flags.get("--depth", 2)?,
        trace: flags.get("--trace", String::new())?,
        svg: flags.get("--svg", String::new())?,
    };
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
    let key = generate_random_parameters(circuit(0), &mut rand::thread_rng())?;
    println!("  setup (our generator):   {:>9.3} s", start.elapsed().as_secs_f64());
    let pvk = prepare_verifying_key(&key.vk);

    let start = Instant::now();
    let config = Config { synthesis_threads: args.threads, queue_depth_per_device: args.depth, ..Config::default() };
    let prover = Prover::new(key, config)?;
    let warm = prover.pool().stats();
    println!(
        "  prover start:            {:>9.3} s  (backend {}, prewarmed {} buffers in {:.3} s)",
        start.elapsed().as_secs_f64(),
        prover.backend(),
        warm.allocations,
        warm.alloc_time.as_secs_f64()
    );

    let timings = report::run_batch(&prover, (0..args.proofs as u64).map(circuit).collect(), &pvk)?;
    if !args.trace.is_empty() {
        std::fs::write(&args.trace, PartitionTimings::chrome_trace(&timings))?;
        println!("  trace of the batch (Chrome trace JSON, for Perfetto or chrome://tracing): {}", args.trace);
    }
    if !args.svg.is_empty() {
        let title = format!("{} proofs of 2^{} on the {} backend", args.proofs, args.lg_m, prover.backend());
        plots::timeline(&args.svg, &title, &timings)?;
        println!("  timeline of the batch: {}", args.svg);
    }
    Ok(())
}
