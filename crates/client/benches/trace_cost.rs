//! What the client-side trace tap costs: `tools/call`s per second through
//! one [`Session`], without and with a [`Tracer`], on the same runtime and
//! in the same run, repetitions interleaved so that machine noise falls on
//! both alike. A benchmark, not a test: it asserts nothing and prints the
//! median of each side and their ratio.
//!
//! The target is an echo tool in this process (the messages cross as
//! values: untraced nothing is serialized, so this is the tap's worst
//! case), and with `--stdio COMMAND` a server over a child's pipes as well.
//!
//! ```text
//! cargo bench -p nexo-client --bench trace_cost
//! cargo bench -p nexo-client --bench trace_cost -- --reps 7 --calls 20000 --stdio 'nexo serve morse'
//! ```
//! (`--stdio` calls `echo` with `texto`, the Morse server's argument.)

#![expect(clippy::print_stdout, reason = "a benchmark prints its figures")]
#![expect(clippy::unwrap_used, reason = "a benchmark fails loudly")]

use std::path::Path;
use std::time::{Duration, Instant};

use futures::StreamExt;
use nexo_client::{ConnectOptions, InProcess, Session, Target};
use nexo_trace::{TraceOptions, Tracer};
use rmcp::model::JsonObject;

/// Requests in flight at once in the concurrent measure.
const WINDOW: usize = 16;
/// Calls before the clock starts.
const WARM_UP: usize = 500;

struct Args {
    reps: usize,
    calls: usize,
    stdio: Option<String>,
}

fn args() -> Args {
    let mut args = Args {
        reps: 5,
        calls: 20_000,
        stdio: None,
    };
    let mut given = std::env::args().skip(1);
    while let Some(arg) = given.next() {
        match arg.as_str() {
            "--reps" => args.reps = given.next().unwrap().parse().unwrap(),
            "--calls" => args.calls = given.next().unwrap().parse().unwrap(),
            "--stdio" => args.stdio = given.next(),
            // cargo bench passes `--bench`; a filter is ignored too.
            _ => {}
        }
    }
    args
}

/// One measured target: how to reach it and what its echo takes.
struct Case {
    name: &'static str,
    target: Target,
    arguments: JsonObject,
}

/// Calls per second, one call at a time and `WINDOW` at once.
#[derive(Clone, Copy)]
struct Rates {
    sequential: f64,
    concurrent: f64,
}

async fn measure(case: &Case, calls: usize, trace: Option<&Path>) -> Rates {
    let options = ConnectOptions {
        trace: trace.map(|path| Tracer::open(path, TraceOptions::default()).unwrap()),
        server_name: Some(case.name.to_owned()),
        ..ConnectOptions::default()
    };
    let session = nexo_client::connect(&case.target, &options).await.unwrap();
    let rates = calls_per_second(&session, &case.arguments, calls).await;
    session.close().await;
    if let Some(tracer) = options.trace {
        tracer.flush().unwrap();
    }
    rates
}

async fn calls_per_second(session: &Session, arguments: &JsonObject, calls: usize) -> Rates {
    let call = || session.call_tool("echo", arguments.clone());
    for _ in 0..WARM_UP {
        call().await.unwrap();
    }
    let clock = Instant::now();
    for _ in 0..calls {
        call().await.unwrap();
    }
    let sequential = per_second(calls, clock.elapsed());
    let clock = Instant::now();
    futures::stream::iter(0..calls)
        .map(|_| call())
        .buffer_unordered(WINDOW)
        .for_each(|result| {
            result.unwrap();
            async {}
        })
        .await;
    let concurrent = per_second(calls, clock.elapsed());
    Rates {
        sequential,
        concurrent,
    }
}

fn per_second(calls: usize, took: Duration) -> f64 {
    calls as f64 / took.as_secs_f64()
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let middle = values.len() / 2;
    if values.len() % 2 == 1 {
        values[middle]
    } else {
        (values[middle - 1] + values[middle]) / 2.0
    }
}

fn main() {
    let args = args();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let text = |key: &str| {
        let mut arguments = JsonObject::new();
        arguments.insert(key.into(), "bench-message".into());
        arguments
    };
    let mut cases = vec![Case {
        name: "in-process",
        target: Target::InProcess(InProcess::new("echo", nexo_testkit::Echo)),
        arguments: text("text"),
    }];
    if let Some(command) = &args.stdio {
        cases.push(Case {
            name: "stdio",
            target: Target::stdio(command, Vec::new()).unwrap(),
            arguments: text("texto"),
        });
    }
    println!(
        "client-side trace cost: tools/call per second through one session, median of {} \
         repetitions of {} calls, one at a time and {WINDOW} in flight; ratio: median of the \
         repetitions' traced / untraced",
        args.reps, args.calls
    );
    println!(
        "{:<11} {:>10} {:>16} {:>14} {:>7}",
        "target", "mode", "untraced call/s", "traced call/s", "ratio"
    );
    for case in &cases {
        let mut plain = Vec::new();
        let mut traced = Vec::new();
        for rep in 0..args.reps {
            let trace = dir.path().join(format!("{}-{rep}.jsonl", case.name));
            // Alternate which side goes first, so a drift hits both alike.
            if rep % 2 == 0 {
                plain.push(runtime.block_on(measure(case, args.calls, None)));
                traced.push(runtime.block_on(measure(case, args.calls, Some(&trace))));
            } else {
                traced.push(runtime.block_on(measure(case, args.calls, Some(&trace))));
                plain.push(runtime.block_on(measure(case, args.calls, None)));
            }
            let _ = std::fs::remove_file(&trace);
        }
        type Pick = fn(&Rates) -> f64;
        let modes: [(&str, Pick); 2] = [
            ("sequential", |rates| rates.sequential),
            ("window", |rates| rates.concurrent),
        ];
        for (mode, pick) in modes {
            let untraced = median(plain.iter().map(pick).collect());
            let with = median(traced.iter().map(pick).collect());
            let ratios: Vec<f64> = plain
                .iter()
                .zip(&traced)
                .map(|(plain, traced)| pick(traced) / pick(plain))
                .collect();
            println!(
                "{:<11} {:>10} {:>16.0} {:>14.0} {:>7.3}",
                case.name,
                mode,
                untraced,
                with,
                median(ratios)
            );
        }
    }
}
