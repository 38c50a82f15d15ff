//! Criterion benches: pool checkout (reuse against fresh allocation), the NTT from 2^16 to 2^20,
//! and the whole pipeline on a small batch. CI runs them in `--quick` mode to keep them alive.

#[path = "../examples/common/mod.rs"]
mod common;

use blstrs::Scalar;
use common::MimcChain;
use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use ff::Field;
use pinprove::domain::Domain;
use pinprove::groth16::generator;
use pinprove::{Config, PinnedAbcBuffers, PinnedPool, PoolConfig, Prover};
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
    }
    group.finish();
}

fn pipeline(c: &mut Criterion) {
    let lg_m = 10;
    let constants = MimcChain::constants(MimcChain::rounds_for_domain(lg_m));
    let circuit = |x0: u64| MimcChain::new(x0, &constants);
    let key = generator::generate_random_parameters(circuit(0), &mut rand::thread_rng()).unwrap();
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
    targets = pool, ntt, pipeline
}
criterion_main!(benches);
