//! The examples' `--name value` flags.

use std::collections::BTreeMap;
use std::fmt::Display;
use std::str::FromStr;

/// Flags read from the command line.
pub struct Flags(BTreeMap<String, String>);

impl Flags {
    /// Reads `--name value` pairs; any name not in `known` is an error that lists them.
    /// `--help` (or `-h`) prints `usage` and exits.
    pub fn parse(usage: &str, known: &[&str]) -> Result<Self, String> {
        let mut flags = BTreeMap::new();
        let mut args = std::env::args().skip(1);
        while let Some(flag) = args.next() {
            if flag == "--help" || flag == "-h" {
                println!("{usage}");
                std::process::exit(0);
            }
            if !known.contains(&flag.as_str()) {
                return Err(format!("unknown flag {flag}; flags: {}", known.join(" ")));
            }
            let value = args.next().ok_or(format!("{flag} needs a value"))?;
            flags.insert(flag, value);
        }
        Ok(Flags(flags))
    }

    /// The value of `name`, or `default` when it was not given.
    pub fn get<T: FromStr>(&self, name: &str, default: T) -> Result<T, String>
    where
        T::Err: Display,
    {
        match self.0.get(name) {
            None => Ok(default),
            Some(v) => v.parse().map_err(|e| format!("{name} {v}: {e}")),
        }
    }
}
