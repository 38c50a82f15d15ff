//! The pacing study on the CPU backend: proving-thread busy fraction and memory peak for queue
//! depths 1, 2, 4, 8 with synthesis faster and slower than proving. (gpu_report runs the same
//! study on the CUDA backend.)
//!
//! ```text
//! cargo run --release --example pacing -- [--lg-m 12] [--jobs 24]
//! ```

mod common;

use common::{pacing, MimcChain};
use pinprove::groth16::generator;
use pinprove::{Config, Prover};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (mut lg_m, mut jobs) = (12u32, 24u64);
    while let (Some(flag), Some(value)) = (args.next(), args.next()) {
        match flag.as_str() {
            "--lg-m" => lg_m = value.parse()?,
            "--jobs" => jobs = value.parse()?,
            _ => return Err(format!("unknown flag {flag}; flags: --lg-m K --jobs N").into()),
        }
    }
    let constants = MimcChain::constants(MimcChain::rounds_for_domain(lg_m));
    let key = std::sync::Arc::new(generator::generate_random_parameters(
        MimcChain::new(0, &constants),
        &mut rand::thread_rng(),
    )?);
    let config = Config::default();
    println!(
        "pacing study, cpu backend: {jobs} proofs of a 2^{lg_m} domain, {} synthesis threads",
        config.synthesis_threads
    );
    pacing::study(jobs, &constants, config, &|config| Prover::new(key.clone(), config))?;
    Ok(())
}
