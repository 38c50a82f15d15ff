//! The integration suite, one binary to keep link time down on small machines.

mod pool;
