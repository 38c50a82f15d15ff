//! The kernels' module and the one call that launches any of them: the embedded fatbin of
//! `cuda/api.cu`, loaded once per backend; the argument types a kernel takes; and the grid
//! arithmetic every launch shares.

use std::ffi::c_void;

use blstrs::Scalar;
use cust::module::Module;
use cust::stream::Stream;
use cust::sys as cu;

use super::memory::{check, from_cust, DeviceElem, DevicePtr, DevicePtrMut};
use crate::error::Result;

/// A field element as a kernel argument, by value (`fr_t`): its Montgomery limbs, the layout
/// of `fr_t` and `Scalar`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fr([u64; 4]);

const _: () = assert!(std::mem::size_of::<Fr>() == std::mem::size_of::<Scalar>());

impl From<Scalar> for Fr {
    fn from(s: Scalar) -> Self {
        Fr(blst::blst_fr::from(s).l)
    }
}

/// The kernels of `cuda/api.cu`, compiled into the embedded fatbin and loaded once per
/// backend.
#[derive(Debug)]
pub(crate) struct Fatbin {
    module: Module,
}

impl Fatbin {
    /// Loads the embedded fatbin into the current context.
    pub(crate) fn load() -> Result<Self> {
        static FATBIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/pinprove.fatbin"));
        Ok(Fatbin { module: Module::from_fatbin(FATBIN, &[]).map_err(from_cust)? })
    }

    /// The kernel named `name`.
    pub(super) fn function(&self, name: &str) -> Result<Function> {
        Ok(Function(self.module.get_function(name).map_err(from_cust)?.to_raw()))
    }
}

/// A kernel of the module: its driver handle.
#[derive(Debug, Clone, Copy)]
pub(super) struct Function(cu::CUfunction);

// SAFETY: CUfunction handles are plain driver handles, valid on any thread while the module
// lives (the kernel tables hold the module's owner, the backend, which outlives them).
unsafe impl Send for Function {}

/// A kernel argument, by value: one of the C types the kernels take (`uint32_t`, a device
/// pointer, an `fr_t` by value).
#[derive(Debug, Clone, Copy)]
pub(super) enum Arg {
    U32(u32),
    Ptr(cu::CUdeviceptr),
    Fr(Fr),
}

impl From<u32> for Arg {
    fn from(v: u32) -> Self {
        Arg::U32(v)
    }
}

impl<T: DeviceElem> From<DevicePtr<T>> for Arg {
    fn from(p: DevicePtr<T>) -> Self {
        Arg::Ptr(p.addr())
    }
}

impl<T: DeviceElem> From<DevicePtrMut<T>> for Arg {
    fn from(p: DevicePtrMut<T>) -> Self {
        Arg::Ptr(p.addr())
    }
}

impl From<Fr> for Arg {
    fn from(v: Fr) -> Self {
        Arg::Fr(v)
    }
}

/// Enqueues `f` on `stream` with a 1-D grid.
///
/// # Safety
/// `args` are, in order, of the types the kernel declares, and every device pointer among
/// them covers what the kernel reads and writes for this grid.
pub(super) unsafe fn launch(f: Function, grid: u32, block: u32, stream: &Stream, args: &[Arg]) -> Result<()> {
    if grid == 0 {
        return Ok(());
    }
    let mut values: Vec<Arg> = args.to_vec();
    let mut pointers: Vec<*mut c_void> = values
        .iter_mut()
        .map(|a| match a {
            Arg::U32(v) => (v as *mut u32).cast(),
            Arg::Ptr(v) => (v as *mut cu::CUdeviceptr).cast(),
            Arg::Fr(Fr(limbs)) => (limbs as *mut [u64; 4]).cast(),
        })
        .collect();
    // SAFETY: forwarded caller duties; `pointers` point into `values`, alive for the call
    // (the driver copies the arguments before returning); grid and block are nonzero.
    check(unsafe {
        cu::cuLaunchKernel(
            f.0,
            grid,
            1,
            1,
            block,
            1,
            1,
            0,
            stream.as_inner(),
            pointers.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    })
}

/// Blocks of `threads` covering `n` items, as a grid size.
///
/// # Panics
/// If more blocks are needed than a grid may have (2³¹ − 1).
pub(super) fn blocks(n: usize, threads: u32) -> u32 {
    u32::try_from(n.div_ceil(threads as usize)).ok().filter(|&b| b < i32::MAX as u32).expect("grid too large")
}

/// A length as a kernel's `uint32_t` argument.
///
/// # Panics
/// If it does not fit (the callers bound their sizes below 2³²).
pub(super) fn u32_arg(n: usize) -> u32 {
    u32::try_from(n).expect("kernel sizes fit in 32 bits")
}
