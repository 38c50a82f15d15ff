//! Compiles `cuda/` into one embedded fatbin when the `cuda` feature is on; does nothing (and
//! needs no CUDA) otherwise. Honours `NVCC`; finds sppark's field headers through
//! `DEP_SPPARK_ROOT`. Emits no cfg of its own: features are the caller's choice alone.

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
    let nvcc = env::var("NVCC").unwrap_or_else(|_| "nvcc".into());
    let sppark = env::var("DEP_SPPARK_ROOT").expect("sppark exports its header root (DEP_SPPARK_ROOT)");
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("pinprove.fatbin");
    let status = Command::new(&nvcc)
        .args(["--fatbin", "-std=c++17", "-O3", "-DFEATURE_BLS12_381"])
        // sm_90 machine code for Hopper (H100/H200), compute_90 PTX for the driver to JIT on newer chips.
        .args(["-gencode", "arch=compute_90,code=sm_90", "-gencode", "arch=compute_90,code=compute_90"])
        .arg(format!("-I{sppark}"))
        .arg("-Icuda")
        .arg("-o")
        .arg(&out)
        .arg("cuda/api.cu")
        .status()
        .unwrap_or_else(|e| {
            panic!(
                "the `cuda` feature needs nvcc, and `{nvcc}` could not be run ({e}); install the CUDA \
                 toolkit or set NVCC (see shared/tools/cuda-toolchain.sh)"
            )
        });
    assert!(status.success(), "nvcc failed to compile cuda/api.cu ({status})");
}
