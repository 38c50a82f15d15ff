//! Proves the benchmark chain of `shared/peer` (bellperson's supraseal-c2 benchmark) from the
//! same parameter file on the CUDA backend, and prints the peer's report line beside ours, so
//! one device call can run both on the same circuits and keys.
//!
//! Flags: `--help` (see `USAGE` below).

mod common;

use std::fs::File;
use std::io::BufReader;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::flags::Flags;
use common::recording::recorded;
use common::report::{ms, peak_rss, print_batch};
use common::shapes::{Chain, Shape};
use pinprove::backend::cuda::{CudaDevice, DeviceReport, KeyPlacement};
use pinprove::internal::{file_partition_bytes, partition_bytes};
use pinprove::Check;
use pinprove::{Config, KeyFile, KeySource, PartitionTimings, PoolConfig, Prover, ProvingKey, R1csFile, Scalar};
use rand::Rng;

/// What `--help` prints.
const USAGE: &str = "cargo run --release --features cuda --example vs_peer -- --params FILE --shape dense --lg-m K \\
    [--proofs 8] [--batches 1] [--warmup 1] [--threads T] [--depth 2] [--timing 0|1] [--check 0|1]
    [--memory-limit GB] [--witness-only 0|1] [--r1cs FILE] [--key-file 0|1] [--digest HEX]
`--batches N`: N batches of `--proofs` proofs one after the other, each reported on its own
(one setup, several measurements).
`--memory-limit`: the most device memory the backend may hold; a key whose whole MSMs' sorts
do not fit beside it and a partition's buffers is sorted in chunks, one that does not fit
itself is streamed from pinned host memory (the placement is printed).
`--witness-only 1`: records the circuit's constraints (R1cs::record, timed) and attaches them
to the key, so synthesis computes the witness alone and the device evaluates the constraints
(a device that cannot hold them beside the key is an error: Config::require_witness_only).
With `--r1cs FILE` the recording is read from FILE, or, when there is none, made and written
there: a process that reads it never holds the recorder's working memory (about 1.7 times the
recording's bytes); with `--key-file 1` as well, the backend reads FILE's matrices straight
into device memory (R1csFile), so the host holds neither the key nor the recording.
`--key-file 1`: the prover is given the opened file (KeyFile), and the backend reads the bases
from it into device memory, so the host never holds the whole key (the setup line prints the
process's peak resident memory either way). `--digest HEX`: the file is trusted by that
digest (filecoin-proofs' manifest form; `b2sum` prints the whole BLAKE2b-512), hashed in the
same pass as it is read (with `--key-file 1`, by the backend: the upload time includes it).
`--timing 1`: the file is a timing-only key (`peer synth`): proofs cannot verify, so the
prover's own verification is off. `--check 1` checks every point's subgroup on load.
Prints, besides the stage table, the batch's start and end (Unix seconds) so that
`nvidia-smi dmon -o T` samples can be matched to it.";

fn unix_now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let flags = Flags::parse(
        USAGE,
        &[
            "--params",
            "--shape",
            "--lg-m",
            "--proofs",
            "--batches",
            "--warmup",
            "--threads",
            "--depth",
            "--timing",
            "--check",
            "--memory-limit",
            "--witness-only",
            "--r1cs",
            "--key-file",
            "--digest",
        ],
    )?;
    let path: String = flags.get("--params", String::new())?;
    if path.is_empty() {
        return Err("--params FILE is required (see the doc comment at the top of vs_peer.rs)".into());
    }
    let shape = Shape::parse(&flags.get("--shape", "dense".to_owned())?)?;
    let lg_m: u32 = flags.get("--lg-m", 18)?;
    let (proofs, warmup): (usize, usize) = (flags.get("--proofs", 8)?, flags.get("--warmup", 1)?);
    let batches: usize = flags.get("--batches", 1)?;
    let defaults = Config::default();
    let threads = flags.get("--threads", defaults.synthesis_threads)?;
    let depth = flags.get("--depth", defaults.queue_depth_per_device)?;
    let timing = flags.get("--timing", 0u8)? == 1;
    let check = if flags.get("--check", 0u8)? == 1 { Check::Full } else { Check::OnCurve };
    let memory_limit: f64 = flags.get("--memory-limit", 0.0)?;
    let witness_only = flags.get("--witness-only", 0u8)? == 1;
    let key_file = flags.get("--key-file", 0u8)? == 1;
    let digest: String = flags.get("--digest", String::new())?;
    let r1cs_file: String = flags.get("--r1cs", String::new())?;

    let recording = witness_only.then(|| (Chain::new(shape, lg_m, 0), r1cs_file));
    let (key, partition, loaded, load) = load_key(&path, check, key_file, &digest, recording)?;
    let mut device = CudaDevice::open(0)?;
    if memory_limit > 0.0 {
        device = device.with_memory_limit((memory_limit * 1e9) as usize);
    }
    let config = Config {
        synthesis_threads: threads,
        queue_depth_per_device: depth,
        verify_proofs: !timing,
        // `--witness-only 1` and a recording that does not fit: stop, not synthesize in full.
        require_witness_only: witness_only,
        // Room for every partition in flight, pinned.
        pool: PoolConfig { max_bytes: (threads + depth + 1) * partition + (1 << 30), ..PoolConfig::default() },
        ..defaults
    };
    let start = Instant::now();
    let pool = device.pinned_pool(config.pool);
    let prover = Prover::with_backends(key, config, pool, vec![device.backend_factory()])?;
    print_setup(&prover, &device.report(), format!("{} 2^{lg_m}", shape.name()), loaded, start.elapsed());
    let mut rng = rand::thread_rng();
    let circuit =
        |rng: &mut rand::rngs::ThreadRng| Chain { x0: Scalar::from(rng.gen::<u64>()), ..Chain::new(shape, lg_m, 0) };
    if warmup > 0 {
        let w = prover.prove((0..warmup).map(|_| circuit(&mut rng)).collect())?;
        w.into_iter().collect::<Result<Vec<_>, _>>()?;
        prover.take_timings();
    }
    let verified = if timing { "skipped (timing-only key)" } else { "yes (every proof, by the prover)" };
    for batch in 1..=batches {
        let circuits: Vec<Chain> = (0..proofs).map(|_| circuit(&mut rng)).collect();
        let label =
            format!("shape={} lg_m={lg_m} batch={batch}/{batches} load_s={:.3}", shape.name(), load.as_secs_f64());
        prove_batch(&prover, &circuits, &label, verified)?;
    }
    Ok(())
}

/// The key at `path`, as `--key-file` says: the file opened (the backend reads its bases,
/// trusted by `digest` unless empty) or read whole, with the constraints of `recording` when given; with a partition's bytes,
/// how it was loaded (for the setup line) and how long that took.
fn load_key(
    path: &str,
    check: Check,
    key_file: bool,
    digest: &str,
    recording: Option<(Chain, String)>,
) -> Result<(KeySource, usize, String, Duration), Box<dyn std::error::Error>> {
    let (start, witness_only) = (Instant::now(), recording.is_some());
    if key_file {
        let file = KeyFile::open(path, check)?;
        let file = if digest.is_empty() { file } else { file.with_digest(digest)? };
        let load = start.elapsed();
        let how = format!(
            "opened in {:.3} s, its bases read as they are uploaded ({check:?}{})",
            load.as_secs_f64(),
            if digest.is_empty() { "" } else { ", trusted by its digest" }
        );
        let file = match recording {
            // An existing recording's file goes to the device as the key's does.
            Some((_, path)) if std::path::Path::new(&path).is_file() => {
                let r1cs = R1csFile::open(&path)?;
                println!(
                    "constraints' file opened: {:.2} GB, read as the backend uploads it",
                    r1cs.bytes() as f64 / 1e9
                );
                file.with_r1cs_file(r1cs)?
            }
            Some((circuit, path)) => file.with_r1cs(recorded(circuit, &path)?)?,
            None => file,
        };
        let partition = file_partition_bytes(&file, witness_only)?;
        Ok((file.into(), partition, how, load))
    } else {
        let reader = BufReader::with_capacity(1 << 24, File::open(path)?);
        let key = if digest.is_empty() {
            ProvingKey::read(reader, check)?
        } else {
            ProvingKey::read_digested(reader, check, digest)?
        };
        let load = start.elapsed();
        let how = format!("read in {:.2} s ({check:?})", load.as_secs_f64());
        let key = match recording {
            Some((circuit, path)) => key.with_r1cs(recorded(circuit, &path)?)?,
            None => key,
        };
        let partition = partition_bytes(&key, witness_only)?;
        Ok((key.into(), partition, how, load))
    }
}

/// The prover as it was set up: where the key and the recording went, what the host and the
/// device hold, and how long each step took.
fn print_setup(prover: &Prover, report: &DeviceReport, what: String, loaded: String, setup: Duration) {
    println!(
        "witness-only: {} (recorded constraints on the device: {:.2} GB, {}); host bytes per partition in flight: {:.3} GB \
         at least (the batch reports what they held)",
        prover.is_witness_only(),
        report.r1cs_bytes as f64 / 1e9,
        report.r1cs_chunk.map_or("resident".to_owned(), |n| format!("streamed in chunks of {n} entries")),
        prover.partition_bytes() as f64 / 1e9
    );
    println!(
        "ours on {}: {what}, key {:.2} GB {loaded}, {:?} ({:.2} GB shifted) in {:.2} s; prover ready in {:.2} s \
         (pool prewarmed: {:.1} GB pinned in {:.2} s); backend holds {:.2} GB; device memory used {:.1} of {:.1} GB; \
         host peak resident {:.2} GB",
        report.name,
        report.key_bytes as f64 / 1e9,
        report.key_placement,
        report.shifted_bytes as f64 / 1e9,
        report.key_upload.as_secs_f64(),
        setup.as_secs_f64(),
        prover.pool().stats().bytes_held as f64 / 1e9,
        prover.pool().stats().alloc_time.as_secs_f64(),
        report.backend_bytes as f64 / 1e9,
        report.memory_used as f64 / 1e9,
        report.memory_total as f64 / 1e9,
        peak_rss() as f64 / 1e9,
    );
    let (bases, streamed) = match report.key_placement {
        KeyPlacement::Shifted | KeyPlacement::ShiftedH { .. } => (report.shifted_bytes, ""),
        KeyPlacement::Resident | KeyPlacement::ResidentInChunks { .. } => (report.key_bytes, ""),
        KeyPlacement::Streamed { .. } => (0, ", the streamed bases' chunks"),
    };
    let held = bases + report.r1cs_bytes + report.partition_bytes + report.witness_scratch_bytes;
    println!(
        "  the backend's device memory: bases {:.2} GB, recording {:.2} GB, a partition's buffers {:.2} GB \
         (a, b, c, the tables, the aux), the witness's MSMs' own scratch {:.2} GB (beside the H MSM when \
         held), the rest {:.2} GB (the MSMs' scratch and the split's rooms{streamed})",
        bases as f64 / 1e9,
        report.r1cs_bytes as f64 / 1e9,
        report.partition_bytes as f64 / 1e9,
        report.witness_scratch_bytes as f64 / 1e9,
        report.backend_bytes.saturating_sub(held) as f64 / 1e9,
    );
}

/// Proves `circuits` as one batch (fresh random r, s) and prints its report, its first line
/// `ours backend=cuda {label} ... verified={verified}`.
fn prove_batch(
    prover: &Prover,
    circuits: &[Chain],
    label: &str,
    verified: &str,
) -> Result<(), Box<dyn std::error::Error>> {
    let (mut rng, proofs) = (rand::thread_rng(), circuits.len());
    let (unix_start, start) = (unix_now(), Instant::now());
    let pending: Vec<_> = circuits
        .iter()
        .map(|c| prover.submit(*c, Scalar::from(rng.gen::<u64>()), Scalar::from(rng.gen::<u64>())))
        .collect();
    for p in pending {
        // With a real key the prover verifies every proof: an invalid one is an error here.
        p.wait()?;
    }
    let wall = start.elapsed();
    let unix_end = unix_now();
    let timings = prover.take_timings();
    // Steady state: proofs finished per second once the first was out (the device's clock).
    let mut ends: Vec<Duration> = timings.iter().map(|t| t.device_end).collect();
    ends.sort();
    let steady = match (ends.first(), ends.last()) {
        (Some(first), Some(last)) if last > first => (proofs - 1) as f64 / (*last - *first).as_secs_f64(),
        _ => f64::NAN,
    };
    println!(
        "ours backend=cuda {label} proofs={proofs} batch_s={:.3} proofs_per_s={:.3} \
         steady_proofs_per_s={steady:.3} verified={verified}",
        wall.as_secs_f64(),
        proofs as f64 / wall.as_secs_f64(),
    );
    let first_start = timings.iter().map(|t| t.device_start).min().unwrap_or_default();
    let span = ends.last().copied().unwrap_or_default().saturating_sub(first_start);
    println!(
        "  batch ran from unix {unix_start:.1} to {unix_end:.1}; device busy {:.1} % of its span from the first \
         partition's start to the last one's end ({:.1} ms)",
        100.0 * PartitionTimings::device_busy(&timings).as_secs_f64() / span.as_secs_f64(),
        ms(span)
    );
    print_batch(proofs, wall, &timings, &prover.pool().stats(), prover.pool().is_pinned());
    Ok(())
}
