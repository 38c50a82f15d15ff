//! Criterion benches: pool checkout (reuse against fresh allocation), the NTT and the h stage
//! from 2^16 to 2^20, the CPU MSM against blst's own call at 2^12…2^20 in G1 and G2, synthesis
//! of the benchmark chains into pool buffers (full and witness-only), BLAKE2b-512 (the digest
//! of trusted parameter files), and the whole pipeline on a small batch. CI runs each once
//! (`-- --test`) to keep them alive.

#[path = "../tests/fixtures/mod.rs"]
mod common;

use blstrs::Scalar;
use common::shapes::{Chain, Shape};
use common::timing_key::timing_key;
use common::MimcChain;
use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use ff::Field;
use pinprove::generate_random_parameters;
use pinprove::internal::Domain;
use pinprove::{Config, PinnedAbcBuffers, PinnedPool, PoolConfig, Prover, R1cs};
use rand::SeedableRng;

fn pool(c: &mut Criterion) {
    let n = 1 << 15; // scalars per buffer: 1 MiB
    let mut group = c.benchmark_group("pool");
    let reuse = PinnedPool::new(PoolConfig::default());
    reuse.prewarm(3, n * 32).unwrap();
    group.bench_function("abc checkout+checkin, reuse (1 MiB each)", |b| {
        b.iter(|| drop(PinnedAbcBuffers::checkout(&reuse, n).unwrap()))
    });
    let fresh = PinnedPool::new(PoolConfig::default());
    group.bench_function("abc checkout+checkin, fresh (allocate and free)", |b| {
        b.iter(|| {
            drop(PinnedAbcBuffers::checkout(&fresh, n).unwrap());
            fresh.shrink(usize::MAX)
        })
    });
    group.finish();
}

fn ntt(c: &mut Criterion) {
    let mut group = c.benchmark_group("ntt");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    for lg in [16, 18, 20] {
        let domain = Domain::new(1 << lg).unwrap();
        let input: Vec<Scalar> = (0..1 << lg).map(|_| Scalar::random(&mut rng)).collect();
        group.throughput(Throughput::Elements(1 << lg));
        group.bench_with_input(BenchmarkId::new("forward", format!("2^{lg}")), &input, |b, input| {
            b.iter_batched_ref(|| input.clone(), |v| domain.ntt(v), BatchSize::LargeInput)
        });
        // The whole h stage of a partition: a, b, c to the coefficients of h.
        let abc = [input.clone(), input.iter().rev().copied().collect(), input.iter().map(|x| x.square()).collect()];
        group.bench_with_input(BenchmarkId::new("h", format!("2^{lg}")), &abc, |b, abc| {
            b.iter_batched_ref(|| abc.clone(), |[a, b, c]| domain.compute_h(a, b, c), BatchSize::LargeInput)
        });
    }
    group.finish();
}

/// pinprove's CPU MSM (blst's Pippenger, fed the key's points as they are and the scalars
/// encoded on the way in) against blst's call alone, on scalars encoded beforehand: the
/// difference is what the wrapper costs.
fn cpu_msm(c: &mut Criterion) {
    use blst::MultiPoint;
    use blstrs::{G1Projective, G2Projective};
    use pinprove::internal::msm;
    let mut group = c.benchmark_group("cpu_msm");
    let n = 1 << 20;
    let scalars = common::random_scalars(n, 3);
    let bytes: Vec<u8> = scalars.iter().flat_map(|s| s.to_bytes_le()).collect();
    let g1 = common::timing_key::g1_points(n, 1);
    let g1_blst: Vec<blst::blst_p1_affine> = g1.iter().map(|p| *p.as_ref()).collect();
    let g2 = common::timing_key::g2_points(n, 2);
    let g2_blst: Vec<blst::blst_p2_affine> = g2.iter().map(|p| *p.as_ref()).collect();
    for lg in [12, 14, 16, 18, 20] {
        let k = 1 << lg;
        group.throughput(Throughput::Elements(k as u64));
        group.bench_function(BenchmarkId::new("G1 pinprove msm", format!("2^{lg}")), |b| {
            b.iter(|| msm::<G1Projective>(&g1[..k], &scalars[..k]))
        });
        group.bench_function(BenchmarkId::new("G1 blst mult", format!("2^{lg}")), |b| {
            b.iter(|| g1_blst[..k].mult(&bytes[..32 * k], 255))
        });
        group.bench_function(BenchmarkId::new("G2 pinprove msm", format!("2^{lg}")), |b| {
            b.iter(|| msm::<G2Projective>(&g2[..k], &scalars[..k]))
        });
        group.bench_function(BenchmarkId::new("G2 blst mult", format!("2^{lg}")), |b| {
            b.iter(|| g2_blst[..k].mult(&bytes[..32 * k], 255))
        });
    }
    group.finish();
}

/// Synthesis of each benchmark shape into pool buffers, in full (the constraints evaluated
/// as they are enforced) and witness-only (the key's recorded constraints left to the
/// backend), on one thread.
fn synthesis(c: &mut Criterion) {
    let lg_m = 16;
    let pool = PinnedPool::new(PoolConfig::default());
    let mut group = c.benchmark_group("synthesis");
    group.throughput(Throughput::Elements(1 << lg_m));
    for shape in [Shape::Dense, Shape::Sparse, Shape::Sha256, Shape::Sha256Native] {
        let key = timing_key(shape, lg_m, 1);
        let r1cs = R1cs::record(Chain::new(shape, lg_m, 0)).unwrap();
        group.bench_function(format!("{} chain 2^{lg_m}, full", shape.name()), |b| {
            b.iter(|| pinprove::internal::synthesize(Chain::new(shape, lg_m, 3), &key, &pool).unwrap())
        });
        group.bench_function(format!("{} chain 2^{lg_m}, witness only", shape.name()), |b| {
            b.iter(|| pinprove::internal::synthesize_witness(Chain::new(shape, lg_m, 3), &r1cs, &pool).unwrap())
        });
    }
    group.finish();
}

/// BLAKE2b-512 of 64 MiB, the digest a trusted parameter file is read with: pinprove's (the
/// faster of its two implementations on this host) against blake2b_simd's alone.
fn digest(c: &mut Criterion) {
    let bytes = vec![0x5au8; 64 << 20];
    let mut group = c.benchmark_group("digest");
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.bench_function("pinprove", |b| {
        b.iter(|| {
            let mut d = pinprove::internal::Digest::new();
            d.update(&bytes);
            d.finalize()
        })
    });
    group.bench_function("blake2b_simd", |b| {
        b.iter(|| blake2b_simd::Params::new().hash_length(64).to_state().update(&bytes).finalize())
    });
    group.finish();
}

fn pipeline(c: &mut Criterion) {
    let lg_m = 10;
    let constants = MimcChain::constants(MimcChain::rounds_for_domain(lg_m));
    let circuit = |x0: u64| MimcChain::new(x0, &constants);
    let key = generate_random_parameters(circuit(0), &mut rand::thread_rng()).unwrap();
    let prover = Prover::new(key, Config::default()).unwrap();
    let batch = 4;
    let mut group = c.benchmark_group("pipeline");
    group.throughput(Throughput::Elements(batch));
    group.bench_function(format!("prove {batch} x 2^{lg_m} (cpu backend)"), |b| {
        b.iter(|| {
            let proofs = prover.prove((0..batch).map(circuit).collect()).unwrap();
            assert!(proofs.iter().all(Result::is_ok));
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = pool, ntt, cpu_msm, synthesis, digest, pipeline
}
criterion_main!(benches);
