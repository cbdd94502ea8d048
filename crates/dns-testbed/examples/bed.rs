//! Runs the standard bed with its validating resolver until interrupted,
//! printing where everything listens, so that it can be asked by hand:
//! `cargo run -p nexo-dns-testbed --example bed`, then for instance
//! `dig -p PORT @127.0.0.1 +dnssec signed.test SOA`.

use std::io::Write;

fn main() -> Result<(), nexo_dns_testbed::Error> {
    let bed = nexo_dns_testbed::Bed::validating(nexo_dns_testbed::zones::standard())?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "port {}", bed.port())?;
    writeln!(
        out,
        "resolver {} (holds every zone, does not validate)",
        bed.resolver()
    )?;
    if let Some(validator) = bed.validator() {
        writeln!(out, "validating resolver {validator}")?;
    }
    out.flush()?;
    drop(out);
    loop {
        std::thread::park();
    }
}
