//! What one trace line costs the traced path: nanoseconds per
//! [`Tracer::record`] of a `tools/call` request and its response, into a
//! writer that discards (so that the disk is not measured), both as a tap
//! that holds only the bytes has it (the writer parses them) and as one
//! that holds the messages rmcp parsed or built (it hands over their
//! [`Envelope`]). A benchmark, not a test: it prints the median of its
//! repetitions.
//!
//! ```text
//! cargo bench -p nexo-trace --bench record
//! ```

#![expect(clippy::print_stdout, reason = "a benchmark prints its figures")]
#![expect(clippy::unwrap_used, reason = "a benchmark fails loudly")]

use std::hint::black_box;
use std::time::Instant;

use nexo_trace::{Direction, Envelope, Observed, Side, TraceOptions, Tracer, transport};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};

/// Exchanges recorded per repetition.
const PAIRS: usize = 200_000;
/// Distinct exchanges, recorded in turn: few enough that their bytes stay
/// in the cache, as a message just read or written is.
const DISTINCT: usize = 64;
const REPS: usize = 7;

/// One exchange: each message's bytes and the message rmcp made of them.
struct Exchange {
    request: String,
    response: String,
    parsed_request: ClientJsonRpcMessage,
    parsed_response: ServerJsonRpcMessage,
}

fn observed<'a>(
    direction: Direction,
    message: &'a str,
    envelope: Option<Envelope<'a>>,
) -> Observed<'a> {
    Observed {
        server: "morse",
        transport: transport::STDIO,
        session: Some("stdio-0123456789abcdef"),
        side: Side::Server,
        direction,
        message: message.as_bytes(),
        http: None,
        envelope,
    }
}

/// Nanoseconds per line, median of the repetitions.
fn per_line(tracer: &Tracer, exchanges: &[Exchange], typed: bool) -> f64 {
    let mut figures = Vec::new();
    for _ in 0..REPS {
        let clock = Instant::now();
        for exchange in exchanges.iter().cycle().take(PAIRS) {
            let (request, response) = if typed {
                (
                    Envelope::of_client_message(&exchange.parsed_request),
                    Envelope::of_server_message(&exchange.parsed_response),
                )
            } else {
                (None, None)
            };
            let request = observed(Direction::Received, &exchange.request, request);
            tracer.record(black_box(request));
            let response = observed(Direction::Sent, &exchange.response, response);
            tracer.record(black_box(response));
        }
        figures.push(clock.elapsed().as_nanos() as f64 / PAIRS as f64 / 2.0);
    }
    figures.sort_by(f64::total_cmp);
    figures[REPS / 2]
}

fn main() {
    let tracer = Tracer::to_writer(std::io::sink(), TraceOptions::default());
    let exchanges: Vec<Exchange> = (0..DISTINCT)
        .map(|id| {
            let request = format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"texto":"bench-message"}}}}}}"#
            );
            let response = format!(
                r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"echo: bench-message"}}],"isError":false,"structuredContent":{{"result":"echo: bench-message"}}}}}}"#
            );
            Exchange {
                parsed_request: serde_json::from_str(&request).unwrap(),
                parsed_response: serde_json::from_str(&response).unwrap(),
                request,
                response,
            }
        })
        .collect();
    println!("Tracer::record of a tools/call and its response, ns per line (median of {REPS})");
    println!(
        "  bytes only (parsed here):   {:.0}",
        per_line(&tracer, &exchanges, false)
    );
    println!(
        "  with rmcp's messages:       {:.0}",
        per_line(&tracer, &exchanges, true)
    );
}
