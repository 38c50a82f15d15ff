//! Loading proving keys from parameter files (bellperson 0.27's layout), ours against
//! bellperson's `Parameters::read`, checked and unchecked, each in a fresh process so that
//! its peak resident memory (VmHWM) is its own, beside the key's size.
//!
//! Flags: `--help` (see `USAGE` below).

mod common;

use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::process::Command;
use std::time::Instant;

use blstrs::Bls12;
use common::flags::Flags;
use common::report::peak_rss;
use common::shapes::Shape;
use common::timing_key::timing_key;
use pinprove::Check;
use pinprove::ProvingKey;

/// What `--help` prints.
const USAGE: &str = "cargo run --release --example params_load -- --write FILE [--shape dense] [--lg-m 20]
cargo run --release --example params_load -- --compare FILE [--pinprove-checked 1] [--bellperson-checked 1]
`--write` makes a timing-only key (not a setup: see examples/common/timing_key.rs);
`--compare` hashes the file (BLAKE2b-512, the digest filecoin-proofs' manifest keeps) and
runs the loads, ours checked, unchecked and trusted by that digest (`read_digested`),
bellperson's unchecked and checked; `--pinprove-checked 0` and `--bellperson-checked 0` skip
the loads that check every point's subgroup (ours on every core: minutes at 2^24;
bellperson's on one: minutes at 2^20).";

/// The BLAKE2b-512 of the file at `path`, as hex, by the digest pinprove's loads hash with.
fn blake2b(path: &str) -> Result<String, Box<dyn std::error::Error>> {
    use std::io::Read;
    let mut state = pinprove::internal::Digest::new();
    let (mut file, mut buf) = (File::open(path)?, vec![0u8; 1 << 24]);
    loop {
        match file.read(&mut buf)? {
            0 => break,
            n => state.update(&buf[..n]),
        }
    }
    Ok(state.finalize_hex())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let flags = Flags::parse(
        USAGE,
        &[
            "--write",
            "--shape",
            "--lg-m",
            "--compare",
            "--load",
            "--how",
            "--digest",
            "--pinprove-checked",
            "--bellperson-checked",
        ],
    )?;
    let (write, compare, load): (String, String, String) = (
        flags.get("--write", String::new())?,
        flags.get("--compare", String::new())?,
        flags.get("--load", String::new())?,
    );
    if !write.is_empty() {
        let (shape, lg_m) = (Shape::parse(&flags.get("--shape", "dense".to_owned())?)?, flags.get("--lg-m", 20u32)?);
        let start = Instant::now();
        let key = timing_key(shape, lg_m, 7);
        key.write(BufWriter::with_capacity(1 << 24, File::create(&write)?))?;
        println!(
            "wrote a timing-only {} 2^{lg_m} key to {write} in {:.1} s",
            shape.name(),
            start.elapsed().as_secs_f64()
        );
    } else if !load.is_empty() {
        let how: String = flags.get("--how", String::new())?;
        let size = std::fs::metadata(&load)?.len();
        let start = Instant::now();
        let reader = BufReader::with_capacity(1 << 24, File::open(&load)?);
        match how.as_str() {
            "pinprove-checked" => drop(ProvingKey::read(reader, Check::Full)?),
            "pinprove-unchecked" => drop(ProvingKey::read(reader, Check::OnCurve)?),
            "pinprove-digested" => {
                let digest: String = flags.get("--digest", String::new())?;
                drop(ProvingKey::read_digested(reader, Check::OnCurve, &digest)?)
            }
            "bellperson-checked" => drop(bellperson::groth16::Parameters::<Bls12>::read(reader, true)?),
            "bellperson-unchecked" => drop(bellperson::groth16::Parameters::<Bls12>::read(reader, false)?),
            other => return Err(format!("unknown --how {other}").into()),
        }
        let seconds = start.elapsed().as_secs_f64();
        let rss = peak_rss();
        println!("  {how:<22} {seconds:>9.2} s {:>10.1} MB {:>12.2}", rss as f64 / 1e6, rss as f64 / size as f64);
    } else if !compare.is_empty() {
        let size = std::fs::metadata(&compare)?.len();
        println!(
            "loading {compare} ({:.1} MB, about the key's size in memory) on {} threads",
            size as f64 / 1e6,
            std::thread::available_parallelism().map_or(1, |n| n.get())
        );
        println!("  {:<22} {:>11} {:>13} {:>12}", "load", "time", "peak RSS", "RSS / file");
        let start = Instant::now();
        let digest = blake2b(&compare)?;
        let seconds = start.elapsed().as_secs_f64();
        println!(
            "  {:<22} {seconds:>9.2} s   (BLAKE2b-512 alone, one pass, one core: {:.2} GB/s)",
            "digest",
            size as f64 / seconds / 1e9
        );
        let mut hows = vec!["pinprove-unchecked", "pinprove-digested", "bellperson-unchecked"];
        if flags.get("--pinprove-checked", 1u8)? == 1 {
            hows.insert(0, "pinprove-checked");
        }
        if flags.get("--bellperson-checked", 1u8)? == 1 {
            hows.push("bellperson-checked");
        }
        for how in hows {
            let args = ["--load", &compare, "--how", how, "--digest", &digest[..32]];
            let status = Command::new(std::env::current_exe()?).args(args).status()?;
            if !status.success() {
                return Err(format!("{how} failed ({status})").into());
            }
        }
    } else {
        return Err("give --write FILE, --compare FILE (see the doc comment of params_load.rs)".into());
    }
    Ok(())
}
