//! The seam between the Rust side and the CUDA side, checked by build.rs (compiled here as a
//! module): the crate's own declarations agree, and each kind of drift between a `kernels!`
//! table and `cuda/api.cu` is found and named. Needs no GPU and no CUDA toolkit.

#[allow(dead_code)]
#[path = "../../build.rs"]
mod build_script;

use build_script::check_seam;

fn read(path: &str) -> String {
    std::fs::read_to_string(format!("{}/{path}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

/// api.cu's text and the ffi files' (name, text).
fn seam() -> (String, Vec<(String, String)>) {
    let files = ["ntt.rs", "msm.rs", "r1cs.rs", "mod.rs"];
    let sources = files.map(|f| (f.to_owned(), read(&format!("src/backend/cuda/ffi/{f}")))).to_vec();
    (read("cuda/api.cu"), sources)
}

/// The drifts found once `edit` has changed one file's text (`from` must occur in it).
fn drifts_after(file: &str, from: &str, to: &str) -> Vec<String> {
    let (mut api, mut sources) = seam();
    let text = match file {
        "api.cu" => &mut api,
        rust => &mut sources.iter_mut().find(|(f, _)| f == rust).unwrap().1,
    };
    assert!(text.contains(from), "{file} has no `{from}`");
    *text = text.replacen(from, to, 1);
    check_seam(&api, &sources).expect_err("the edit is a drift")
}

#[test]
fn the_kernel_tables_match_api_cu() {
    let (api, sources) = seam();
    assert_eq!(check_seam(&api, &sources), Ok(()));
}

#[test]
fn every_kind_of_drift_fails_and_names_its_kernel() {
    // An argument removed from one api.cu declaration.
    let removed =
        drifts_after("api.cu", "fr_t* d_out, uint32_t lg_n, const fr_t* pw_lo,", "fr_t* d_out, const fr_t* pw_lo,");
    assert_eq!(removed.len(), 1, "{removed:?}");
    assert!(removed[0].starts_with("g16_ntt_epilogue: 6 arguments in cuda/api.cu"), "{removed:?}");
    // Two arguments of different types swapped on the Rust side.
    let swapped = drifts_after(
        "ntt.rs",
        "fn g16_powers(out: DevicePtrMut<Scalar>, n: u32,",
        "fn g16_powers(n: u32, out: DevicePtrMut<Scalar>,",
    );
    assert_eq!(swapped.len(), 2, "{swapped:?}");
    assert!(swapped[0].contains("g16_powers: argument 0 is `fr_t*` in cuda/api.cu, `uint32_t`"), "{swapped:?}");
    // A pointer the kernel reads declared as one it writes.
    let constness = drifts_after(
        "r1cs.rs",
        "fn g16_gather(\n            vars: DevicePtr<u32>",
        "fn g16_gather(\n            vars: DevicePtrMut<u32>",
    );
    assert!(
        constness == ["g16_gather: argument 0 is `const uint32_t*` in cuda/api.cu, `uint32_t*` in r1cs.rs"],
        "{constness:?}"
    );
    // One group's element type for the other's, in the per-group table (both groups drift).
    let group = drifts_after("msm.rs", "out: DevicePtrMut<G::Projective>", "out: DevicePtrMut<G1Projective>");
    assert!(group.len() == 1 && group[0].starts_with("g16_msm_window_sums_g2: argument 3"), "{group:?}");
    // A kernel renamed on one side: missing on the other, both ways.
    let renamed = drifts_after("api.cu", "g16_msm_max(", "g16_msm_maximum(");
    assert!(
        renamed.iter().any(|d| d.starts_with("g16_msm_max: declared in msm.rs, not in cuda/api.cu")),
        "{renamed:?}"
    );
    assert!(renamed.iter().any(|d| d.starts_with("g16_msm_maximum: in cuda/api.cu, declared in no")), "{renamed:?}");
    // A macro parameter's type changed in the per-group kernels of api.cu.
    let field =
        drifts_after("api.cu", "g16_msm_shift_##G(const affine_t<field>* in", "g16_msm_shift_##G(affine_t<field>* in");
    assert_eq!(field.len(), 2, "the G1 and G2 instances: {field:?}");
}
