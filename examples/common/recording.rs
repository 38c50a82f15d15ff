//! A chain's recorded constraints as the examples get them: from a file a run before wrote,
//! or recorded (and written for the next run), so that the run that is measured need not
//! record (the recorder's working memory is about 1.7 times the recording).

use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::time::Instant;

use pinprove::R1cs;

use super::report::peak_rss;
use super::shapes::Chain;

/// The constraints of `circuit`: read from the file at `path`, or recorded (and written
/// there, unless `path` is empty); prints what it took.
pub fn recorded(circuit: Chain, path: &str) -> Result<R1cs, Box<dyn std::error::Error>> {
    let start = Instant::now();
    let (r1cs, how) = match File::open(path) {
        Ok(file) => (R1cs::read(BufReader::with_capacity(1 << 24, file))?, "read from its file"),
        Err(_) => {
            let r1cs = R1cs::record(circuit)?;
            if !path.is_empty() {
                r1cs.write(BufWriter::with_capacity(1 << 24, File::create(path)?))?;
            }
            (r1cs, if path.is_empty() { "recorded" } else { "recorded and written" })
        }
    };
    println!(
        "constraints {how} in {:.2} s: {} constraints, {} aux, {:?} entries (A, B, C), {:.2} GB; host peak resident so far {:.2} GB",
        start.elapsed().as_secs_f64(),
        r1cs.num_constraints(),
        r1cs.num_aux(),
        r1cs.entries(),
        r1cs.bytes() as f64 / 1e9,
        peak_rss() as f64 / 1e9
    );
    Ok(r1cs)
}
