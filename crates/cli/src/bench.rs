//! `nexo bench`: the flags read into a [`nexo_bench::Plan`] and the
//! command line's call, the target chosen as every client command chooses
//! it, the run's moments shown and the report written. Making the run
//! (steps, sample, repetitions or ceiling search, document), generating
//! load, checking answers and computing figures live in `nexo-bench`; this
//! module parses, wires and prints.

use std::path::Path;

use nexo_bench::assert::Assertion;
use nexo_bench::measure::{Call, Expectations, Measure, Moment};
use nexo_bench::plan::{Accept, Arrivals, Load, Plan, Protocol, Rate, Sessions};
use nexo_bench::report::Document;
use nexo_bench::{Bench, BenchError};
use nexo_client::Target;
use serde_json::json;

use crate::args::{ArrivalsArg, BenchArgs, BenchCommand, EraArg, SessionsArg};
use crate::failure::{Exit, Failure};
use crate::output;

pub async fn run(args: BenchArgs) -> Result<(), Failure> {
    if let Some(BenchCommand::Compare { a, b, json }) = &args.command {
        return compare(a, b, *json);
    }
    let assertions = args
        .load
        .assertions
        .iter()
        .map(|text| Assertion::parse(text))
        .collect::<Result<Vec<_>, _>>()?;
    let scenario = args
        .load
        .scenario
        .as_deref()
        .map(nexo_bench::scenario::read)
        .transpose()?;
    let chosen = crate::inspect::choose(&args.target)?;
    let target = chosen.target;
    let mut plan = plan(&args, &target)?;
    let from_scenario = scenario.is_some();
    let lines = match scenario {
        Some(scenario) => scenario.apply(
            &mut plan,
            args.load.concurrency.is_some() || args.load.rate.is_some(),
            args.load.duration.is_some() || args.load.requests.is_some(),
            args.load.connections,
            matches!(target, Target::Url { .. }),
        ),
        None => Vec::new(),
    };
    let mut bench = Bench::open(&target, plan, lines).await?;
    let result = measure(&args, &mut bench, from_scenario, &target, &assertions).await;
    bench.close().await;
    let document = result?;
    report(&args, &document)?;
    let failed = document.failed();
    if failed.is_empty() {
        if document.summary.errors > 0 && !args.target.json {
            output::status(&format!(
                "warning: {} of {} requests failed; add --assert 'errors==0' to fail the run on them",
                document.summary.errors, document.summary.requests
            ));
        }
        return Ok(());
    }
    Err(Failure::new(
        Exit::AssertionFailed,
        "assertion_failed",
        format!("the run failed {}", failed.join(", ")),
    )
    .hint("the figures are above; the limits are the --assert expressions".to_owned()))
}

/// The run's steps (the scenario's, or the command line's one), then the
/// run itself as nexo-bench makes it, shown as it goes.
async fn measure(
    args: &BenchArgs,
    bench: &mut Bench,
    from_scenario: bool,
    target: &Target,
    assertions: &[Assertion],
) -> Result<Document, Failure> {
    let steps = if from_scenario {
        bench.plan().steps.clone()
    } else {
        let load = &args.load;
        let words = crate::inspect::argument_words(&args.arguments)?;
        let call = Call {
            method: load.method.as_deref(),
            subject: args.tool.as_deref(),
            words: &words,
            params: load.params.as_deref(),
        };
        let expectations = Expectations {
            pointers: &load.expect,
            regex: load.expect_regex.as_deref(),
            output_schema: load.expect_schema,
        };
        let (step, undescribed) = bench.step_for(call, expectations).await?;
        for name in undescribed {
            output::status(&format!(
                "warning: the tool's schema describes no argument `{name}`; sending it anyway"
            ));
        }
        vec![step]
    };
    let ceiling = if args.load.find_ceiling.is_empty() {
        None
    } else {
        Some((
            args.load
                .find_ceiling
                .iter()
                .map(|text| Assertion::parse(text))
                .collect::<Result<Vec<_>, _>>()?,
            ceiling_search(args),
        ))
    };
    let how = Measure {
        target: target.to_string(),
        command_line: nexo_bench::report::command_line(std::env::args().skip(1)),
        assertions,
        ceiling,
    };
    let quiet = args.target.json;
    let progress = bench.progress();
    let mut live = None;
    let document = bench
        .whole_run(steps, how, |moment| match moment {
            Moment::Sampled { answer, running } if !quiet => {
                let text = answer.to_string();
                let shown: String = text.chars().take(400).collect();
                let more = if shown.len() < text.len() { " ..." } else { "" };
                output::status(&format!("sample answer: {shown}{more}"));
                output::status(&format!("running: {running}"));
            }
            Moment::Running => live = live_view(std::sync::Arc::clone(&progress)),
            Moment::CeilingStep(step) if !quiet => output::status(&format!(
                "step {:.0}/s: {:.0} req/s, p99 {}, {} errors{}",
                step.rate,
                step.figures.rps,
                nexo_bench::report::millis(step.figures.response_time.p99),
                step.figures.errors,
                if step.held {
                    ""
                } else {
                    ": an objective broke"
                }
            )),
            Moment::Sampled { .. } | Moment::CeilingStep(_) => {}
        })
        .await;
    drop(live);
    Ok(document?)
}

/// `--find-ceiling`'s search: steps at rising rates from `--rate`.
fn ceiling_search(args: &BenchArgs) -> nexo_bench::ceiling::Search {
    nexo_bench::ceiling::Search {
        start: args.load.rate.unwrap_or(100.0),
        factor: args.load.ceiling_factor,
        step: args
            .load
            .duration
            .unwrap_or(std::time::Duration::from_secs(2)),
        arrivals: arrivals(args.load.arrivals, args.load.seed),
        max_outstanding: args.load.max_outstanding,
    }
}

fn arrivals(arrivals: ArrivalsArg, seed: u64) -> Arrivals {
    match arrivals {
        ArrivalsArg::Uniform => Arrivals::Uniform,
        ArrivalsArg::Poisson => Arrivals::Poisson { seed },
    }
}

/// A live line on a terminal (none in CI or without one): the seconds,
/// requests and errors so far, redrawn each second.
fn live_view(progress: std::sync::Arc<nexo_bench::run::Progress>) -> Option<LiveView> {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() || crate::env::var(crate::env::CI).is_some() {
        return None;
    }
    Some(LiveView(tokio::spawn(async move {
        let started = std::time::Instant::now();
        let mut last = 0;
        loop {
            tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            let requests = progress.requests.load(std::sync::atomic::Ordering::Relaxed);
            let errors = progress.errors.load(std::sync::atomic::Ordering::Relaxed);
            output::live_line(&format!(
                "{:.0} s: {requests} requests ({} in the last second), {errors} errors",
                started.elapsed().as_secs_f64(),
                requests - last
            ));
            last = requests;
        }
    })))
}

/// The live line's task: stopped, and the line wiped, when dropped.
struct LiveView(tokio::task::JoinHandle<()>);

impl Drop for LiveView {
    fn drop(&mut self) {
        self.0.abort();
        output::clear_live_line();
    }
}

fn report(args: &BenchArgs, document: &Document) -> Result<(), Failure> {
    if let Some(path) = &args.load.csv {
        write(path, &nexo_bench::report::csv(&document.summary))?;
    }
    if let Some(path) = &args.load.plot {
        write(path, &nexo_bench::report::plot(document))?;
    }
    if args.target.json {
        output::json(document);
    } else {
        output::data(&nexo_bench::report::text(document));
    }
    Ok(())
}

fn write(path: &Path, text: &str) -> Result<(), Failure> {
    std::fs::write(path, text).map_err(|source| {
        Failure::from(BenchError::File {
            action: "write",
            path: path.to_owned(),
            source,
        })
    })
}

fn compare(a: &Path, b: &Path, json: bool) -> Result<(), Failure> {
    let first = nexo_bench::compare::read(a)?;
    let second = nexo_bench::compare::read(b)?;
    let deltas = nexo_bench::compare::compare(&first, &second);
    if json {
        output::json(&json!({"a": a, "b": b, "deltas": deltas}));
    } else {
        output::data(&nexo_bench::compare::text(
            &a.display().to_string(),
            &b.display().to_string(),
            &deltas,
        ));
    }
    Ok(())
}

fn plan(args: &BenchArgs, target: &Target) -> Result<Plan, Failure> {
    let load_args = &args.load;
    let load = match load_args.rate {
        Some(rate) => Load::Open {
            rate: Rate::Constant(rate),
            arrivals: arrivals(load_args.arrivals, load_args.seed),
            max_outstanding: load_args.max_outstanding,
        },
        None => Load::Closed {
            concurrency: load_args.concurrency.unwrap_or(1),
        },
    };
    if args.target.trace.trace.is_some() {
        return Err(Failure::usage(
            "`nexo bench` writes no trace: tracing every message would be measured too",
            Some("trace a few calls with `nexo call --trace FILE`, or the server with `nexo serve --trace FILE`".to_owned()),
        ));
    }
    if let Target::Url {
        transport: nexo_client::HttpTransport::Sse,
        ..
    } = target
        && matches!(args.target.protocol, EraArg::Discover)
    {
        return Err(Failure::usage(
            "the legacy HTTP+SSE transport has 2025-era sessions only",
            Some(
                "drop `--protocol 2026`, or bench the server's Streamable HTTP endpoint".to_owned(),
            ),
        ));
    }
    Ok(Plan {
        steps: Vec::new(),
        connections: load_args.connections.unwrap_or_else(|| {
            nexo_bench::plan::default_connections(&load, matches!(target, Target::Url { .. }))
        }),
        load,
        protocol: match args.target.protocol {
            EraArg::Discover => Protocol::Stateless2026,
            EraArg::Auto | EraArg::Initialize => Protocol::Sessions2025,
        },
        sessions: match load_args.sessions {
            SessionsArg::Shared => Sessions::Shared,
            SessionsArg::PerConnection => Sessions::PerConnection,
            SessionsArg::Churn => Sessions::Churn,
        },
        accept: if load_args.sse {
            Accept::Sse
        } else {
            Accept::Both
        },
        duration: load_args.duration,
        requests: load_args.requests,
        warmup: load_args.warmup,
        timeout: args.target.timeout,
        startup: args.target.startup.seconds,
        reps: load_args.reps,
        server_pid: load_args.server_pid,
        allow_remote: load_args.allow_remote,
        no_limits: load_args.no_limits,
        seed: load_args.seed,
    })
}
