//! Compiles `cuda/` into one embedded fatbin when the `cuda` feature is on; does nothing (and
//! needs no CUDA) otherwise. Honours `NVCC` (default: `nvcc` on the PATH) and
//! `PINPROVE_CUDA_ARCHS` (the machine-code targets, default `80,86,89,90`; PTX of the highest
//! is embedded too, for newer GPUs). Finds sppark's field headers through `DEP_SPPARK_ROOT`.
//! Emits no cfg of its own: features are the caller's choice alone.

use std::env;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if env::var_os("CARGO_FEATURE_CUDA").is_none() {
        return;
    }
    println!("cargo:rerun-if-changed=cuda");
    println!("cargo:rerun-if-env-changed=NVCC");
    println!("cargo:rerun-if-env-changed=PINPROVE_CUDA_ARCHS");
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("pinprove.fatbin");
    if env::var_os("DOCS_RS").is_some() {
        // docs.rs documents every feature but has no nvcc: the docs need no device code.
        std::fs::write(&out, []).expect("OUT_DIR is writable");
        return;
    }
    let nvcc = env::var("NVCC").unwrap_or_else(|_| "nvcc".into());
    let sppark = env::var("DEP_SPPARK_ROOT").expect("sppark exports its header root (DEP_SPPARK_ROOT)");
    let archs = env::var("PINPROVE_CUDA_ARCHS").unwrap_or_else(|_| "80,86,89,90".into());
    let archs: Vec<u32> = archs
        .split(',')
        .map(|a| a.trim().parse().unwrap_or_else(|_| panic!("PINPROVE_CUDA_ARCHS: `{a}` is not a number like 90")))
        .collect();
    let newest = archs.iter().max().expect("PINPROVE_CUDA_ARCHS names at least one architecture");
    let mut gencode: Vec<String> =
        archs.iter().flat_map(|a| ["-gencode".into(), format!("arch=compute_{a},code=sm_{a}")]).collect();
    gencode.extend(["-gencode".into(), format!("arch=compute_{newest},code=compute_{newest}")]);
    let status = Command::new(&nvcc)
        // --threads 0: one nvcc thread per architecture, as many at once as there are cores.
        .args(["--fatbin", "-std=c++17", "-O3", "-DFEATURE_BLS12_381", "--threads", "0"])
        .args(&gencode)
        .arg(format!("-I{sppark}"))
        .arg("-Icuda")
        .arg("-o")
        .arg(&out)
        .arg("cuda/api.cu")
        .status()
        .unwrap_or_else(|e| {
            panic!(
                "the `cuda` feature needs nvcc (the CUDA toolkit, 12.x or 13.x), and `{nvcc}` could not be \
                 run ({e}); install the toolkit or point NVCC at its nvcc"
            )
        });
    assert!(status.success(), "nvcc failed to compile cuda/api.cu ({status})");
}
