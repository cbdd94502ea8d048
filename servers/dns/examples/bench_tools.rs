//! How long each tool takes, and how many DNS questions it sends, on the
//! zones of the DNS test bed (`nexo-dns-testbed`: real DNS servers on
//! loopback): a healthy unsigned zone, a healthy signed one, and a lame
//! delegation whose third server never answers (its cost is the timeout).
//! A benchmark, not a test: it prints figures and asserts nothing.
//!
//! Three passes: on plain loopback (what a call costs in work); then with
//! every DNS server holding each answer back 10 ms, a network whose round
//! trip is 10 ms: there a call's median divided by one question's is the
//! number of round trips the call waits for one after another; then on
//! loopback again, through the bed's validating resolver (BIND), where
//! broken DNSSEC makes it answer SERVFAIL (`wrongds.test`, `expired.test`)
//! and dead servers make it answer SERVFAIL with CD too (`dead.test`): the
//! cost of telling the causes apart and of reading the zone from its own
//! servers. There the questions are those to the resolver (counted by a
//! relay in front of it) and to the bed's servers, not the resolver's own.
//!
//! ```sh
//! cargo run --release -p nexo-dns --example bench_tools          # 50 runs
//! cargo run --release -p nexo-dns --example bench_tools -- 200   # 200 runs
//! ```
//!
//! Each call goes through rmcp in-process (a duplex pipe), as a host's
//! would, with the server's default timeout (3 s). Calls run one after
//! another, so the questions the bed's servers receive during a call are
//! that call's (a silent server counts none). "one question" is a single
//! UDP exchange with the bed's resolver: the round trip the others are
//! measured against.

use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hickory_proto::op::{Edns, Message, Query};
use hickory_proto::rr::{Name, RecordType};
use nexo_dns::{Dns, DnsOptions};
use nexo_dns_testbed::{Bed, RESOLVER, RESOLVER2, zones};
use nexo_testkit::{Client, Error, connect};
use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};

/// Runs of a call that waits for a timeout, at most.
const SLOW_RUNS: usize = 5;
/// The round trip of the second pass.
const ROUND_TRIP: Duration = Duration::from_millis(10);

/// One line of the table.
struct Case {
    label: String,
    tool: &'static str,
    arguments: Value,
    /// The call waits for a silent server: fewer runs.
    slow: bool,
}

fn case(tool: &'static str, zone: &str, slow: bool) -> Case {
    Case {
        label: zone.to_owned(),
        tool,
        arguments: json!({ "dominio": zone }),
        slow,
    }
}

/// The cases through the validating resolver: a healthy unsigned and a
/// healthy signed zone, two with broken DNSSEC, one whose servers are dead.
fn validating_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    for (zone, slow) in [
        ("ok.test", false),
        ("signed.test", false),
        ("wrongds.test", false),
        ("expired.test", false),
        ("dead.test", true),
    ] {
        for tool in ["salud_dns", "correo_politicas", "estado_dnssec"] {
            cases.push(case(tool, zone, slow));
        }
    }
    cases
}

/// A UDP relay in front of a resolver that counts the questions it passes.
struct Relay {
    address: SocketAddr,
    questions: Arc<AtomicU64>,
}

impl Relay {
    async fn start(to: SocketAddr) -> Result<Self, Error> {
        let front = Arc::new(tokio::net::UdpSocket::bind("127.0.0.1:0").await?);
        let address = front.local_addr()?;
        let questions = Arc::new(AtomicU64::new(0));
        let counted = Arc::clone(&questions);
        tokio::spawn(async move {
            let mut buffer = vec![0_u8; 65_535];
            while let Ok((length, asker)) = front.recv_from(&mut buffer).await {
                counted.fetch_add(1, Ordering::Relaxed);
                let question = buffer.get(..length).unwrap_or_default().to_vec();
                let front = Arc::clone(&front);
                tokio::spawn(async move {
                    let mut answer = vec![0_u8; 65_535];
                    let Ok(back) = tokio::net::UdpSocket::bind("127.0.0.1:0").await else {
                        return;
                    };
                    if back.send_to(&question, to).await.is_err() {
                        return;
                    }
                    let waited =
                        tokio::time::timeout(Duration::from_secs(5), back.recv(&mut answer));
                    if let Ok(Ok(length)) = waited.await {
                        let _ = front
                            .send_to(answer.get(..length).unwrap_or_default(), asker)
                            .await;
                    }
                });
            }
        });
        Ok(Self { address, questions })
    }

    fn questions(&self) -> u64 {
        self.questions.load(Ordering::Relaxed)
    }
}

/// The cases: ping, then every tool on the three zones.
fn cases(bed: &Bed) -> Vec<Case> {
    let mut cases = vec![Case {
        label: "-".to_owned(),
        tool: "ping",
        arguments: json!({}),
        slow: false,
    }];
    let resolvers = [bed.at(RESOLVER), bed.at(RESOLVER2)].map(|a| a.to_string());
    for (zone, slow) in [
        ("ok.test", false),
        ("signed.test", false),
        ("slow.test", true),
    ] {
        for tool in ["salud_dns", "correo_politicas", "estado_dnssec"] {
            cases.push(case(tool, zone, slow && tool == "salud_dns"));
        }
        cases.push(Case {
            label: zone.to_owned(),
            tool: "propagacion",
            arguments: json!({ "dominio": zone, "resolutores": resolvers }),
            slow: false,
        });
    }
    cases
}

/// The value at `fraction` of sorted `values` (nearest rank).
fn percentile(sorted: &[f64], fraction: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (fraction * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// One UDP question to the bed's resolver, answered.
async fn one_question(bed: &Bed) -> Result<Duration, Error> {
    let mut message = Message::query();
    message.add_query(Query::query(Name::from_ascii("ok.test.")?, RecordType::A));
    message.set_edns(Edns::new());
    let bytes = message.to_vec()?;
    let socket = tokio::net::UdpSocket::bind("127.0.0.1:0").await?;
    let mut buffer = vec![0_u8; 65_535];
    let started = Instant::now();
    socket.send_to(&bytes, bed.resolver()).await?;
    tokio::time::timeout(Duration::from_secs(5), socket.recv_from(&mut buffer)).await??;
    Ok(started.elapsed())
}

async fn client(bed: &Bed, resolver: SocketAddr) -> Result<Client, Error> {
    let dns = Dns::new(DnsOptions {
        resolver: Some(resolver),
        auth_port: bed.port(),
        log: None,
        roots: nexo_dns_testbed::ROOT_SERVERS
            .map(std::net::IpAddr::V4)
            .to_vec(),
        ..DnsOptions::default()
    })?;
    connect(dns).await
}

/// Times `cases` on `bed`, asking the resolver at `relay` when given (and
/// counting the questions it passes), else the bed's; when `delayed`, also
/// the round trips a call waits for.
async fn table(
    bed: &Bed,
    cases: Vec<Case>,
    relay: Option<&Relay>,
    runs: usize,
    delayed: bool,
    out: &mut impl Write,
) -> Result<(), Error> {
    let resolver = relay.map_or_else(|| bed.resolver(), |relay| relay.address);
    let client = client(bed, resolver).await?;
    let questions_now = || bed.queries() + relay.map_or(0, Relay::questions);
    writeln!(
        out,
        "{:<18} {:<12} {:>5} {:>10} {:>10} {:>9} {:>11}",
        "tool", "zone", "runs", "median ms", "p95 ms", "questions", "round trips"
    )?;
    let mut rtt = Vec::new();
    for _ in 0..=runs {
        rtt.push(millis(one_question(bed).await?));
    }
    rtt.remove(0);
    rtt.sort_by(f64::total_cmp);
    let one = percentile(&rtt, 0.5);
    let trips = |median: f64| {
        if delayed {
            format!("{:.1}", median / one)
        } else {
            "-".to_owned()
        }
    };
    writeln!(
        out,
        "{:<18} {:<12} {:>5} {:>10.3} {:>10.3} {:>9} {:>11}",
        "one question",
        "ok.test",
        runs,
        one,
        percentile(&rtt, 0.95),
        1,
        trips(one)
    )?;

    for case in cases {
        let count = if case.slow { runs.min(SLOW_RUNS) } else { runs };
        let Value::Object(arguments) = case.arguments else {
            return Err("arguments must be an object".into());
        };
        let mut times = Vec::new();
        let mut questions = Vec::new();
        // The first call warms up and is not counted.
        for run in 0..=count {
            let before = questions_now();
            let started = Instant::now();
            let result = client
                .call_tool(CallToolRequestParams::new(case.tool).with_arguments(arguments.clone()))
                .await?;
            let elapsed = started.elapsed();
            if result.is_error == Some(true) {
                return Err(format!("{} {}: {result:?}", case.tool, case.label).into());
            }
            if run > 0 {
                times.push(millis(elapsed));
                questions.push(questions_now() - before);
            }
        }
        times.sort_by(f64::total_cmp);
        questions.sort_unstable();
        let median = percentile(&times, 0.5);
        writeln!(
            out,
            "{:<18} {:<12} {:>5} {:>10.3} {:>10.3} {:>9} {:>11}",
            case.tool,
            case.label,
            count,
            median,
            percentile(&times, 0.95),
            questions
                .get(questions.len() / 2)
                .copied()
                .unwrap_or_default(),
            if case.tool == "ping" {
                "-".to_owned()
            } else {
                trips(median)
            }
        )?;
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let runs: usize = match std::env::args().nth(1) {
        Some(text) => text.parse()?,
        None => 50,
    };
    let mut out = std::io::stdout().lock();
    writeln!(out, "== loopback")?;
    let bed = Bed::validating(zones::standard())?;
    table(&bed, cases(&bed), None, runs, false, &mut out).await?;
    writeln!(
        out,
        "\n== every answer held back {} ms",
        ROUND_TRIP.as_millis()
    )?;
    let delayed = Bed::start_delayed(zones::standard(), ROUND_TRIP)?;
    table(&delayed, cases(&delayed), None, runs, true, &mut out).await?;
    writeln!(out, "\n== loopback, through the validating resolver")?;
    let validator = bed
        .validator()
        .ok_or("the bed has no validating resolver")?;
    let relay = Relay::start(validator).await?;
    table(
        &bed,
        validating_cases(),
        Some(&relay),
        runs,
        false,
        &mut out,
    )
    .await?;
    Ok(())
}
