//! Trace files under a fuzzer (`fuzz/fuzz_targets/trace.rs` calls
//! [`trace_file`]; the committed corpus is replayed by this module's test).
//! The invariants: reading a file never panics and gives the same records
//! and the same outcome however the reader's buffer splits it; every
//! record read is written back as JSON that reads as the same record; and
//! the summary and the flow diagrams of what was read never panic.

use std::io::BufReader;
use std::path::Path;

use crate::flow::{Flow, FlowFormat};
use crate::read::TraceReader;
use crate::record::TraceRecord;
use crate::summary::Summary;

/// The records of `data` read through a buffer of `capacity` bytes, and
/// how the reading ended.
fn read(data: &[u8], capacity: usize) -> (Vec<TraceRecord>, String) {
    let mut reader = TraceReader::new(
        BufReader::with_capacity(capacity, data),
        Path::new("fuzz.jsonl"),
    );
    let mut records = Vec::new();
    loop {
        match reader.next_record() {
            Ok(Some(record)) => records.push(record),
            Ok(None) => return (records, format!("{:?}", reader.warnings().sentences())),
            Err(error) => return (records, error.to_string()),
        }
    }
}

/// One fuzz input: the bytes of a trace file.
pub fn trace_file(data: &[u8]) {
    let (records, ended) = read(data, 8 * 1024);
    let capacity = usize::from(data.first().copied().unwrap_or(0)) % 13 + 1;
    let (again, ended_again) = read(data, capacity);
    let shown = |records: &[TraceRecord]| {
        records
            .iter()
            .map(|record| serde_json::to_string(record).unwrap_or_default())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        shown(&records),
        shown(&again),
        "a buffer of {capacity} bytes"
    );
    assert_eq!(ended, ended_again, "a buffer of {capacity} bytes");
    for record in &records {
        let written = serde_json::to_string(record)
            .unwrap_or_else(|error| panic!("a record read cannot be written: {error}"));
        let back: TraceRecord = serde_json::from_str(&written)
            .unwrap_or_else(|error| panic!("{written} was written but cannot be read: {error}"));
        assert_eq!(
            serde_json::to_string(&back).ok().as_deref(),
            Some(written.as_str())
        );
    }
    let _ = Summary::of(&records).to_text();
    let flow = Flow::of(&records, Some(50));
    for format in [FlowFormat::Text, FlowFormat::Mermaid, FlowFormat::PlantUml] {
        let _ = flow.render(format);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_committed_trace_files_pass() {
        nexo_testkit::replay("trace", super::trace_file);
    }
}
