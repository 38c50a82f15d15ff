//! A parameter file whose length field claims far more points than the file holds is refused
//! before anything is allocated for them. This binary has its own global allocator, which
//! records the largest allocation, so it runs apart from the suite (harness = false).

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Cursor;
use std::sync::atomic::{AtomicUsize, Ordering};

use pinprove::{generate_random_parameters, Check};
use pinprove::{Circuit, ConstraintSystem, Error, Field, ProvingKey, Scalar, SynthesisError};

/// The system allocator, recording the largest single allocation.
struct Largest;

static LARGEST: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded to the system allocator with the caller's arguments.
unsafe impl GlobalAlloc for Largest {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        // SAFETY: forwarded caller duties.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded caller duties.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Largest = Largest;

/// x·x = y for public y.
struct Square;

impl Circuit<Scalar> for Square {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let x = cs.alloc(|| "x", || Ok(Scalar::from(3)))?;
        let y = cs.alloc_input(|| "y", || Ok(Scalar::from(3).square()))?;
        cs.enforce(|| "x*x", |lc| lc + x, |lc| lc + x, |lc| lc + y);
        Ok(())
    }
}

fn main() {
    let key = generate_random_parameters(Square, &mut rand::thread_rng()).unwrap();
    let mut bytes = Vec::new();
    key.write(&mut bytes).unwrap();
    // The h count follows the verifying key (864 bytes) and the IC query (count + points).
    let h_count = 868 + 96 * key.vk.ic.len();
    bytes[h_count..h_count + 4].copy_from_slice(&u32::MAX.to_be_bytes()); // 412 GB of points
    LARGEST.store(0, Ordering::Relaxed);
    let result = ProvingKey::read(Cursor::new(&bytes), Check::Full);
    let largest = LARGEST.load(Ordering::Relaxed);
    assert!(matches!(result, Err(Error::Decode { reason, .. }) if reason.contains("exceeds")), "{result:?}");
    assert!(largest < 1 << 20, "a {largest}-byte allocation for a {}-byte file", bytes.len());
    println!(
        "params_alloc: a count of 2^32 - 1 points in a {}-byte file: refused, largest allocation {largest} bytes",
        bytes.len()
    );
}
