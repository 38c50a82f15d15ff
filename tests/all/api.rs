//! The public API, held to a list so that it does not creep: every name the crate root and
//! the `backend` modules export (their `pub use` and `pub mod` lines), against the names a
//! user needs. A new export fails this test until it is added here on purpose. The
//! `#[doc(hidden)]` `internal` module is not API and is not listed.

use std::collections::BTreeSet;

/// The names `file` makes public at its top level: its `pub use`, `pub mod` and item lines at
/// column 0 (the `internal` module, and an item under `#[cfg(doctest)]`, are not).
fn exports(file: &str) -> BTreeSet<String> {
    let text = std::fs::read_to_string(format!("{}/{file}", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut names = BTreeSet::new();
    let (mut i, mut doctest_only) = (0, false);
    while i < lines.len() {
        let line = lines[i];
        i += 1;
        if line.starts_with("#[") {
            doctest_only |= line == "#[cfg(doctest)]"; // for the item these attributes are on
            continue;
        }
        if std::mem::take(&mut doctest_only) || line.starts_with("pub mod internal") {
            continue;
        }
        if let Some(tree) = line.strip_prefix("pub use ") {
            let mut statement = tree.to_owned();
            while !statement.ends_with(';') {
                statement.push_str(lines[i]);
                i += 1;
            }
            collect(statement.trim_end_matches(';'), "", &mut names);
        } else if let Some(item) =
            ["pub mod ", "pub struct ", "pub enum ", "pub trait ", "pub fn ", "pub const ", "pub type "]
                .iter()
                .find_map(|kind| line.strip_prefix(kind))
        {
            let name: String = item.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            names.insert(name);
        }
    }
    names
}

/// The names a use tree brings in (`parent`: the path before the braces it sits in).
fn collect(tree: &str, parent: &str, names: &mut BTreeSet<String>) {
    let tree = tree.trim();
    if let Some(open) = tree.find('{') {
        let prefix = tree[..open].trim_end_matches("::");
        let inner = &tree[open + 1..tree.rfind('}').expect("braces close")];
        let (mut depth, mut from) = (0, 0);
        for (i, ch) in inner.char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    collect(&inner[from..i], prefix, names);
                    from = i + 1;
                }
                _ => {}
            }
        }
        collect(&inner[from..], prefix, names);
        return;
    }
    if tree.is_empty() {
        return;
    }
    let name = match tree.split(" as ").nth(1) {
        Some(alias) => alias.trim(),
        None if tree == "self" => parent.rsplit("::").next().unwrap_or(parent),
        None => tree.rsplit("::").next().unwrap_or(tree),
    };
    names.insert(name.to_owned());
}

fn list(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|n| (*n).to_owned()).collect()
}

#[test]
fn the_public_api_is_the_listed_one() {
    let root = [
        // The prover and its settings, the pool and the timings.
        "Config",
        "MAX_QUEUE_DEPTH",
        "MAX_THREADS",
        "PendingProof",
        "Prover",
        "BLOCK_ALIGN",
        "Element",
        "HeapAllocator",
        "HostAllocator",
        "PinnedAbcBuffers",
        "PinnedBuf",
        "PinnedPool",
        "PinnedVec",
        "PoolConfig",
        "PoolStats",
        "BatchTimings",
        "MsmSteps",
        "NttSteps",
        "PartitionTimings",
        "Span",
        "SpanKind",
        "StageSums",
        "Track",
        // Keys, proofs, setup, verification, recorded constraints, errors.
        "Check",
        "Error",
        "KeyFile",
        "KeySource",
        "PROOF_BYTES",
        "PreparedVerifyingKey",
        "Proof",
        "ProvingKey",
        "R1cs",
        "R1csFile",
        "Result",
        "Trapdoor",
        "VerifyingKey",
        "generate_parameters",
        "generate_random_parameters",
        "prepare_verifying_key",
        "verify_proof",
        // The circuit and field types, and their crates.
        "Circuit",
        "ConstraintSystem",
        "Field",
        "LinearCombination",
        "PrimeField",
        "Scalar",
        "SynthesisError",
        "Variable",
        "bellpepper",
        "bellpepper_core",
        "blstrs",
        "ff",
        "rand_core",
        // The backends, and the gadgets with a native witness.
        "backend",
        "gadgets",
    ];
    assert_eq!(exports("src/lib.rs"), list(&root), "the crate root's exports");
    assert_eq!(exports("src/gadgets/mod.rs"), list(&["sha256"]), "gadgets' exports");
    let backend =
        ["Assignment", "Backend", "Census", "CpuBackend", "Evaluated", "MsmSums", "PackedAux", "Witness", "cuda"];
    assert_eq!(exports("src/backend/mod.rs"), list(&backend), "backend's exports");
    let cuda = ["CudaBackend", "CudaDevice", "DeviceReport", "KeyPlacement", "PinnedAllocator"];
    assert_eq!(exports("src/backend/cuda/mod.rs"), list(&cuda), "backend::cuda's exports");
}
