//! The seam between the Rust side and `cuda/`: the crate's only raw CUDA driver calls, each
//! behind a safe function whose checks make it sound. Three parts: `memory.rs` (device and
//! page-locked host memory, and the typed device pointers kernels take), `copies.rs` (copies
//! between them, and the marks streams wait on) and `launch.rs` (the fatbin, and the one call
//! every launch goes through). Each kernel of `cuda/api.cu` is declared once on this side, in
//! a [`kernels!`] table beside the launches that start it (`ntt.rs`, `msm.rs`, `r1cs.rs`,
//! mirroring `cuda/ntt/`, `cuda/msm/` and `cuda/r1cs/`), with its C name and its arguments'
//! types, which build.rs checks against api.cu's declarations. The launches take device
//! memory typed by what it holds, and assert what makes each launch stay inside it; the
//! choices the rest of the backend makes (window widths, chunk sizes) come in as arguments.
//! Nothing here imports from the rest of the backend.
#![allow(unsafe_code)]

/// Declares kernels of `cuda/api.cu` once each, as their `extern "C"` declarations read: a
/// table struct holding their handles, looked up by name when the table is made (the C name,
/// followed by the group's suffix for a table of one [`Group`](msm::Group)'s kernels), and
/// one typed launcher per kernel, named as the kernel and taking its arguments in its order
/// and types ([`DevicePtr`](memory::DevicePtr) for `const T*`,
/// [`DevicePtrMut`](memory::DevicePtrMut) for `T*`, `u32` for `uint32_t`,
/// [`Fr`](launch::Fr) for `fr_t`). build.rs checks every entry against api.cu (name, arity,
/// types), so a drift fails the build. The launchers are the only way a kernel is started.
macro_rules! kernels {
    ($(#[$meta:meta])* $table:ident $(<$g:ident: $bound:ident>)? {
        $( $(#[$doc:meta])* fn $name:ident($($arg:ident: $ty:ty),* $(,)?); )*
    }) => {
        $(#[$meta])*
        #[derive(Debug)]
        pub(crate) struct $table $(<$g: $bound>)? {
            $( $name: super::launch::Function, )*
            $( _group: std::marker::PhantomData<$g>, )?
        }

        impl $(<$g: $bound>)? $table $(<$g>)? {
            /// Looks each kernel up in `fatbin` by its name (and its group's suffix).
            pub(crate) fn new(fatbin: &super::launch::Fatbin) -> crate::error::Result<Self> {
                let suffix = kernels!(@suffix $($g $bound)?);
                Ok($table {
                    $( $name: fatbin.function(&format!("{}{suffix}", stringify!($name)))?, )*
                    $( _group: std::marker::PhantomData::<$g>, )?
                })
            }

            $(
                $(#[$doc])*
                ///
                /// # Safety
                /// Every device pointer covers what the kernel reads and writes for a grid of
                /// `grid` blocks of `block` threads, in the context of `stream`, until the
                /// stream has done the launch.
                #[allow(clippy::too_many_arguments)]
                unsafe fn $name(
                    &self,
                    grid: u32,
                    block: u32,
                    stream: &cust::stream::Stream,
                    $($arg: $ty),*
                ) -> crate::error::Result<()> {
                    // SAFETY: the arguments are the kernel's own, in its order and of its types
                    // (build.rs checks this declaration against api.cu's); the caller's duties
                    // are launch's.
                    unsafe {
                        super::launch::launch(self.$name, grid, block, stream, &[$(super::launch::Arg::from($arg)),*])
                    }
                }
            )*
        }
    };
    (@suffix $g:ident $bound:ident) => { <$g as $bound>::SUFFIX };
    (@suffix) => { "" };
}

/// The launch geometry of `cuda/geometry.h`, which build.rs turns into these constants: the
/// kernels and their launchers read one declaration. Values only nvcc reads (blocks per
/// multiprocessor) are here too, unused.
#[allow(dead_code)]
pub(crate) mod geometry {
    include!(concat!(env!("OUT_DIR"), "/geometry.rs"));
}

mod copies;
mod launch;
mod memory;
pub(crate) mod msm;
pub(crate) mod ntt;
pub(crate) mod r1cs;

pub(crate) use copies::{download, mark, read, upload, upload_at, wait_for, InFlight, Staging};
pub(crate) use launch::Fatbin;
pub use memory::PinnedAllocator;
pub(crate) use memory::{from_cust, memory_info, DeviceVec, HostElem, HostPinned};
