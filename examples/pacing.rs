//! The pacing study on the CPU backend: proving-thread busy fraction and memory peak for queue
//! depths 1, 2, 4, 8 with synthesis faster and slower than proving. (gpu_report runs the same
//! study on the CUDA backend.)
//!
//! Flags: `--help` (see `USAGE` below).

mod common;

use common::flags::Flags;
use common::{pacing, plots, MimcChain};
use pinprove::generate_random_parameters;
use pinprove::{Config, Prover};

/// What `--help` prints.
const USAGE: &str = "cargo run --release --example pacing -- [--lg-m 12] [--jobs 24] [--svg pacing.svg]
`--svg`: a plot of proofs/s and proving-thread busy % against the depth.";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let flags = Flags::parse(USAGE, &["--lg-m", "--jobs", "--svg"])?;
    let svg: String = flags.get("--svg", String::new())?;
    let (lg_m, jobs) = (flags.get("--lg-m", 12u32)?, flags.get("--jobs", 24u64)?);
    let constants = MimcChain::constants(MimcChain::rounds_for_domain(lg_m));
    let key = std::sync::Arc::new(generate_random_parameters(MimcChain::new(0, &constants), &mut rand::thread_rng())?);
    let config = Config::default();
    println!(
        "pacing study, cpu backend: {jobs} proofs of a 2^{lg_m} domain, {} synthesis threads",
        config.synthesis_threads
    );
    let rows = pacing::study(jobs, &constants, config, &|config| Prover::new(key.clone(), config))?;
    if !svg.is_empty() {
        let title =
            format!("pacing, cpu backend: {jobs} proofs of 2^{lg_m}, {} synthesis threads", config.synthesis_threads);
        plots::pacing(&svg, &title, &rows)?;
        println!("  plot: {svg}");
    }
    Ok(())
}
