//! `nexo bench` against real servers: the bundled ones over Streamable
//! HTTP (JSON and SSE answers, both eras, every session mode), over stdio
//! (children it starts and samples) and in-process, and a small server
//! written here that stalls one call for a known time, which only an open
//! loop measured from the intended start (coordinated omission corrected)
//! shows. No figure is asserted against a clock: only the relations the
//! measurement must keep (the corrected tail holds the stall, the service
//! time does not) and the shape of what is reported.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

use crate::support::{
    HttpServer, Proc, Run, TempDir, loopback, nexo, nexo_path, python_sdk, repo_root, run,
    run_command, serve_morse_command, serve_router, shell_quote,
};

/// `nexo bench ARGS... --json`, its document checked and returned.
fn bench_json(args: &[&str]) -> (Run, Value) {
    let mut all = vec!["bench"];
    all.extend_from_slice(args);
    all.push("--json");
    let run = run(&all);
    assert_eq!(run.code(), 0, "{run:#?}");
    let document = run.stdout_json();
    assert_document(&document);
    (run, document)
}

/// What every document holds, whatever the run.
fn assert_document(document: &Value) {
    assert_eq!(document["schema_version"], 1, "{document:#}");
    assert_eq!(document["tool"], "nexo bench");
    assert!(
        document["command_line"]
            .as_str()
            .unwrap()
            .starts_with("nexo bench ")
    );
    for key in ["os", "arch", "cpus", "started_unix"] {
        assert!(!document["environment"][key].is_null(), "environment.{key}");
    }
    let summary = &document["summary"];
    for figure in ["response_time", "service_time"] {
        for key in ["p50", "p90", "p99", "p99.9", "max", "count"] {
            assert!(
                summary[figure][key].is_number(),
                "{figure}.{key} in {summary:#}"
            );
        }
    }
    for key in [
        "rps",
        "requests",
        "ok",
        "errors",
        "errors_by_class",
        "late_starts",
        "dropped_starts",
        "curve",
    ] {
        assert!(!summary[key].is_null(), "summary.{key}");
    }
    assert!(!document["runs"].as_array().unwrap().is_empty());
}

/// A run that sent `requests` requests, each answered and checked.
fn assert_clean(document: &Value, requests: u64) {
    let summary = &document["summary"];
    assert_eq!(summary["requests"], requests, "{summary:#}");
    assert_eq!(summary["ok"], requests, "{summary:#}");
    assert_eq!(summary["errors"], 0, "{summary:#}");
    assert!(summary["rps"].as_f64().unwrap() > 0.0);
    assert!(summary["response_time"]["p50"].as_f64().unwrap() > 0.0);
}

/// Both eras, JSON and SSE answers, closed and open loop, over Streamable
/// HTTP; the server's CPU sampled by `--server-pid`.
#[test]
fn http_in_both_eras_with_json_and_sse_answers() {
    let mut server = HttpServer::start(&[]);
    let url = server.mcp_url();
    let pid = server.proc().pid().to_string();
    for protocol in ["2025", "2026"] {
        for sse in [false, true] {
            let mut args = vec![
                "--url",
                &url,
                "morse",
                "texto=SOS",
                "-n",
                "150",
                "-c",
                "2",
                "--protocol",
                protocol,
                "--server-pid",
                &pid,
                "--expect",
                "/structuredContent/result=... --- ...",
            ];
            if sse {
                args.push("--sse");
            }
            let (_, document) = bench_json(&args);
            assert_clean(&document, 150);
            assert_eq!(document["transport"], "http");
            let setup = &document["setup"];
            assert_eq!(setup["accept"], if sse { "sse" } else { "both" });
            assert_eq!(
                setup["protocol"],
                if protocol == "2026" {
                    "2026-07-28"
                } else {
                    "2025-11-25"
                }
            );
            assert_eq!(setup["connections"], 2);
            assert_eq!(document["summary"]["first_event"]["count"], 150);
            assert!(document["summary"]["server"]["processes"].as_u64().unwrap() >= 1);
        }
    }
    let (_, open) = bench_json(&[
        "--url",
        &url,
        "morse",
        "texto=SOS",
        "--rate",
        "200/s",
        "--arrivals",
        "poisson",
        "--seed",
        "3",
        "-n",
        "100",
        "--sse",
        "--protocol",
        "2026",
    ]);
    assert_clean(&open, 100);
    assert_eq!(open["setup"]["model"], "open");
    assert_eq!(open["setup"]["arrivals"], "poisson");
    assert_eq!(open["setup"]["seed"], 3);
    assert_eq!(open["summary"]["dropped_starts"], 0);
}

/// 2025-era sessions shared by every connection, and churned (one per
/// request, `initialize` timed on its own).
#[test]
fn http_sessions_shared_and_churned() {
    let server = HttpServer::start(&[]);
    let url = server.mcp_url();
    let (_, shared) = bench_json(&[
        "--url",
        &url,
        "morse",
        "texto=SOS",
        "-n",
        "90",
        "-c",
        "3",
        "--sessions",
        "shared",
    ]);
    assert_clean(&shared, 90);
    assert_eq!(shared["setup"]["sessions"], "shared");
    assert_eq!(shared["summary"]["initialize"]["count"], 0);
    let (_, churn) = bench_json(&[
        "--url",
        &url,
        "--method",
        "tools/list",
        "-n",
        "40",
        "--sessions",
        "churn",
    ]);
    assert_clean(&churn, 40);
    assert_eq!(churn["summary"]["initialize"]["count"], 40);
}

/// Stdio: two children each with a pipelined window, sampled for CPU; the
/// CSV and the plot written.
#[test]
fn stdio_children_pipelined_and_sampled() {
    let dir = TempDir::new("bench-stdio");
    let csv = dir.path().join("run.csv");
    let plot = dir.path().join("run.svg");
    let command = serve_morse_command();
    let (_, document) = bench_json(&[
        "--stdio",
        &command,
        "morse",
        "texto=SOS",
        "-n",
        "300",
        "-c",
        "4",
        "--connections",
        "2",
        "--csv",
        csv.to_str().unwrap(),
        "--plot",
        plot.to_str().unwrap(),
    ]);
    assert_clean(&document, 300);
    assert_eq!(document["transport"], "stdio");
    let server = &document["summary"]["server"];
    assert_eq!(server["processes"], 2, "{server:#}");
    assert!(server["rss_kib_max"].as_u64().unwrap() > 0);
    let csv = std::fs::read_to_string(&csv).unwrap();
    assert!(
        csv.starts_with("second,requests,errors,mean_ms,p50_ms,p90_ms,p99_ms,max_ms,concurrency\n"),
        "{csv}"
    );
    let plot = std::fs::read_to_string(&plot).unwrap();
    assert!(
        plot.starts_with("<svg") && plot.contains("<polyline"),
        "{plot}"
    );
    let (_, open) = bench_json(&[
        "--stdio",
        &command,
        "--method",
        "ping",
        "--rate",
        "300/s",
        "-n",
        "90",
        "--protocol",
        "2026",
    ]);
    assert_clean(&open, 90);
    assert_eq!(open["summary"]["by_step"]["ping"]["count"], 90);
}

/// A server on the official Python SDK, over stdio (arguments coerced by
/// its schema, as `nexo call` does) and Streamable HTTP (SSE answers).
#[test]
fn python_sdk_server() {
    let script = repo_root().join("tests/interop/python_server.py");
    let command = format!(
        "{} {} stdio",
        shell_quote(python_sdk()),
        shell_quote(script.to_str().unwrap())
    );
    let (_, document) = bench_json(&[
        "--stdio",
        &command,
        "add",
        "a=2",
        "b=3",
        "-n",
        "100",
        "-c",
        "4",
        "--expect",
        "/structuredContent/result=5",
    ]);
    assert_clean(&document, 100);
    let mut http = std::process::Command::new(python_sdk());
    http.arg(&script)
        .arg("http")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let mut server = Proc::spawn(&mut http, "python_server.py http");
    let stderr = std::io::BufReader::new(server.child().stderr.take().unwrap());
    let url = std::io::BufRead::lines(stderr)
        .map_while(Result::ok)
        .find_map(|line| {
            line.strip_prefix("interop: listening on ")
                .map(str::to_owned)
        })
        .unwrap();
    let pid = server.pid().to_string();
    let (_, document) = bench_json(&[
        "--url",
        &url,
        "add",
        "a=2",
        "b=3",
        "-n",
        "100",
        "-c",
        "2",
        "--server-pid",
        &pid,
        "--expect",
        "/structuredContent/result=5",
    ]);
    assert_clean(&document, 100);
    assert_eq!(document["summary"]["first_event"]["count"], 100);
}

/// In-process: the bundled server through nexo-client's in-process transport.
#[test]
fn builtin_in_process() {
    let (_, document) = bench_json(&[
        "--builtin",
        "morse",
        "morse",
        "texto=SOS",
        "-n",
        "300",
        "-c",
        "2",
    ]);
    assert_clean(&document, 300);
    assert_eq!(document["transport"], "in-process");
    assert!(document["summary"]["server"].is_null());
    let (_, listed) = bench_json(&[
        "--builtin",
        "utils",
        "--method",
        "tools/list",
        "-n",
        "50",
        "--protocol",
        "2026",
    ]);
    assert_clean(&listed, 50);
}

/// How many `tools/call`s the stalling server has answered.
type Calls = Arc<AtomicU64>;

/// The `tools/call` the stalling server holds back, and for how long.
const STALLED_CALL: u64 = 10;
const STALL: Duration = Duration::from_millis(200);

/// A Streamable HTTP server of one tool that answers at once, but for its
/// tenth call, which it holds for [`STALL`].
async fn stalling(calls: axum::extract::State<Calls>, body: String) -> Response {
    let message: Value = serde_json::from_str(&body).unwrap();
    let id = message["id"].clone();
    let answer = |result: Value| {
        let mut headers = HeaderMap::new();
        headers.insert("content-type", "application/json".parse().unwrap());
        headers.insert("mcp-session-id", "s1".parse().unwrap());
        (
            headers,
            json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string(),
        )
            .into_response()
    };
    match message["method"].as_str().unwrap_or_default() {
        "initialize" => answer(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "stall", "version": "0"}
        })),
        "tools/call" => {
            if calls.fetch_add(1, Ordering::SeqCst) + 1 == STALLED_CALL {
                tokio::time::sleep(STALL).await;
            }
            answer(json!({"content": [{"type": "text", "text": "ok"}]}))
        }
        _ if message.get("id").is_none() => StatusCode::ACCEPTED.into_response(),
        _ => answer(json!({})),
    }
}

/// Coordinated omission: in open loop at 100/s over one connection, the
/// requests due while the tenth call stalls wait behind it. Measured from
/// when they were due, that wait shows: the p99 of 60 requests (the
/// slowest one) exceeds the stall. Measured from the send, as a closed
/// loop would, the median stays far below it.
#[test]
fn coordinated_omission_is_corrected() {
    let (listener, base) = loopback();
    let calls: Calls = Arc::default();
    let app = axum::Router::new()
        .route("/mcp", post(stalling))
        .with_state(Arc::clone(&calls));
    serve_router(listener, app);
    let url = format!("{base}/mcp");
    let (_, document) = bench_json(&[
        "--url",
        &url,
        "echo",
        "{}",
        "--rate",
        "100/s",
        "-n",
        "60",
        "--connections",
        "1",
    ]);
    assert_clean(&document, 60);
    let stall = STALL.as_secs_f64() * 1000.0;
    let response = &document["summary"]["response_time"];
    let service = &document["summary"]["service_time"];
    // Lower bounds only, which no slow machine breaks: a stalled call
    // takes at least the stall (time belongs in benchmarks).
    assert!(response["p99"].as_f64().unwrap() >= stall, "{response:#}");
    // The stalled call itself is as slow either way; the requests behind
    // it are slow only when measured from when they were due.
    assert!(service["max"].as_f64().unwrap() >= stall);
    assert!(response["p90"].as_f64().unwrap() > service["p90"].as_f64().unwrap());
}

/// `--expect` unmet by the sample answer fails with 5 before the run;
/// `--assert` fails the run with 7, its figures still written.
#[test]
fn expect_and_assert_fail_with_their_exit_codes() {
    let command = serve_morse_command();
    let unmet = run(&[
        "bench",
        "--stdio",
        &command,
        "morse",
        "texto=SOS",
        "-n",
        "10",
        "--expect",
        "/structuredContent/result=nope",
    ]);
    assert_eq!(unmet.code(), 5, "{unmet:#?}");
    assert_eq!(unmet.error_line()["error"]["code"], "sample_failed");
    let regex = run(&[
        "bench",
        "--stdio",
        &command,
        "morse",
        "texto=SOS",
        "-n",
        "10",
        "--expect-regex",
        "^nothing like it$",
    ]);
    assert_eq!(regex.code(), 5, "{regex:#?}");
    let failed = run(&[
        "bench",
        "--stdio",
        &command,
        "morse",
        "texto=SOS",
        "-n",
        "20",
        "--json",
        "--assert",
        "p99<1ns",
        "--assert",
        "errors==0",
    ]);
    assert_eq!(failed.code(), 7, "{failed:#?}");
    assert_eq!(failed.error_line()["error"]["code"], "assertion_failed");
    let document = failed.stdout_json();
    assert_eq!(document["assertions"][0]["passed"], false);
    assert_eq!(document["assertions"][1]["passed"], true);
    let passed = run(&[
        "bench",
        "--stdio",
        &command,
        "morse",
        "texto=SOS",
        "-n",
        "20",
        "--assert",
        "errors==0",
        "--assert",
        "p50>1ns",
    ]);
    assert_eq!(passed.code(), 0, "{passed:#?}");
    assert!(passed.stderr.contains("sample answer: "), "{passed:#?}");
    assert!(passed.stdout.contains("response time"), "{passed:#?}");
    let bad = run(&[
        "bench",
        "--stdio",
        &command,
        "morse",
        "texto=SOS",
        "--assert",
        "p99<5",
    ]);
    assert_eq!(bad.code(), 1, "{bad:#?}");
}

/// Loopback only, unless told: nothing is sent to another address.
#[test]
fn remote_targets_are_refused() {
    let refused = run(&["bench", "--url", "http://192.0.2.1/mcp", "echo", "-n", "1"]);
    assert_eq!(refused.code(), 1, "{refused:#?}");
    assert!(refused.stderr.contains("--allow-remote"), "{refused:#?}");
    let long = run(&[
        "bench",
        "--builtin",
        "morse",
        "morse",
        "texto=SOS",
        "-d",
        "20m",
    ]);
    assert_eq!(long.code(), 1, "{long:#?}");
    assert!(long.stderr.contains("--no-limits"), "{long:#?}");
}

/// Find-ceiling: rising open-loop steps until an objective breaks; the
/// ceiling is the last step that held.
#[test]
fn find_ceiling_stops_at_the_broken_objective() {
    let (_, document) = bench_json(&[
        "--builtin",
        "morse",
        "morse",
        "texto=SOS",
        "--find-ceiling",
        "rps<250",
        "--find-ceiling",
        "errors==0",
        "--rate",
        "100",
        "--ceiling-factor",
        "2",
        "-d",
        "500ms",
    ]);
    assert_eq!(document["setup"]["model"], "find-ceiling");
    let steps: Vec<f64> = document["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|run| run["rps_target"].as_f64().unwrap())
        .collect();
    assert_eq!(steps, [100.0, 200.0, 400.0], "{document:#}");
    assert_eq!(document["ceiling_rps"], 200.0);
}

/// `compare` of two results with repetitions: deltas with intervals.
#[test]
fn compare_two_results() {
    let dir = TempDir::new("bench-compare");
    let mut files = Vec::new();
    for (name, concurrency) in [("a.json", "1"), ("b.json", "2")] {
        let (run, _) = bench_json(&[
            "--builtin",
            "morse",
            "morse",
            "texto=SOS",
            "-n",
            "100",
            "-c",
            concurrency,
            "--reps",
            "3",
        ]);
        let path = dir.path().join(name);
        std::fs::write(&path, &run.stdout).unwrap();
        files.push(path.to_str().unwrap().to_owned());
    }
    let text = run(&["bench", "compare", &files[0], &files[1]]);
    assert_eq!(text.code(), 0, "{text:#?}");
    assert!(
        text.stdout.contains("p99") && text.stdout.contains("95% interval"),
        "{}",
        text.stdout
    );
    let json = run(&["bench", "compare", &files[0], &files[1], "--json"]);
    let deltas = json.stdout_json()["deltas"].clone();
    let rps = deltas
        .as_array()
        .unwrap()
        .iter()
        .find(|delta| delta["figure"] == "rps")
        .unwrap();
    assert!(rps["interval_percent"].is_array(), "{rps:#}");
    let not_a_result = run(&["bench", "compare", &files[0], nexo_path()]);
    assert_eq!(not_a_result.code(), 1, "{not_a_result:#?}");
}

/// Errors by class: a tool's `isError`, a JSON-RPC error, and a child
/// that dies during the run; one that dies at once is unreachable, its
/// last words on stderr shown.
#[test]
fn errors_are_classified() {
    let dir = TempDir::new("bench-errors");
    let scenario = dir.path().join("mix.toml");
    std::fs::write(
        &scenario,
        r#"
[[step]]
tool = "echo"
arguments = { text = "n{{seq}}" }
weight = 2
[[step]]
tool = "calc"
arguments = { expression = "1/0" }
[[step]]
method = "no/such/method"
"#,
    )
    .unwrap();
    let utils = format!("{} serve utils", shell_quote(nexo_path()));
    let (_, document) = bench_json(&[
        "--stdio",
        &utils,
        "--scenario",
        scenario.to_str().unwrap(),
        "-n",
        "200",
        "-c",
        "2",
    ]);
    let classes = &document["summary"]["errors_by_class"];
    assert!(
        classes["tool_error"]["count"].as_u64().unwrap() > 0,
        "{classes:#}"
    );
    assert!(
        classes["jsonrpc_-32601"]["count"].as_u64().unwrap() > 0,
        "{classes:#}"
    );
    assert_eq!(document["summary"]["requests"], 200);
    assert!(
        document["summary"]["by_step"]["tools/call echo"]["count"]
            .as_u64()
            .unwrap()
            > 0
    );
    let broken = run(&[
        "bench",
        "--stdio",
        "sh -c 'echo no such database >&2; exit 3'",
        "echo",
        "-n",
        "1",
    ]);
    assert_eq!(broken.code(), 4, "{broken:#?}");
    assert!(
        broken.stderr.contains("its stderr: no such database"),
        "{broken:#?}"
    );
    let dying = format!("timeout 1 {}", serve_morse_command());
    let (_, died) = bench_json(&["--stdio", &dying, "morse", "texto=SOS", "-d", "30s"]);
    let classes = &died["summary"]["errors_by_class"];
    assert!(
        classes["transport"]["count"].as_u64().unwrap() >= 1,
        "{classes:#}"
    );
}

/// The legacy HTTP+SSE transport (`--transport sse`): the stream opened
/// by a GET, each request POSTed to its `endpoint`, each answer read off
/// the stream; one session per connection.
#[test]
fn legacy_sse_target() {
    let server = HttpServer::start(&[]);
    let url = format!("{}/sse", server.base_url());
    let (_, document) = bench_json(&[
        "--url",
        &url,
        "--transport",
        "sse",
        "morse",
        "texto=SOS",
        "-n",
        "200",
        "-c",
        "3",
        "--expect",
        "/structuredContent/result=... --- ...",
    ]);
    assert_clean(&document, 200);
    assert_eq!(document["transport"], "sse");
    assert_eq!(document["setup"]["connections"], 3);
    assert_eq!(document["summary"]["first_event"]["count"], 200);
}

/// A ramp of virtual users (a scenario's `ramping-concurrency`): the
/// per-second rows tell how many were active, one in the first second and
/// three in the middle of the second, and the CSV carries percentiles.
#[test]
fn ramping_concurrency_shows_its_stages() {
    let server = HttpServer::start(&[]);
    let url = server.mcp_url();
    let dir = TempDir::new("bench-ramp");
    let scenario = dir.path().join("ramp.toml");
    std::fs::write(
        &scenario,
        r#"
[load]
executor = "ramping-concurrency"
start_concurrency = 1
stages = [{ duration = "1s", target = 1 }, { duration = "1s", target = 5 }]
[[step]]
tool = "echo"
arguments = { texto = "hola" }
think = "5ms"
"#,
    )
    .unwrap();
    let csv = dir.path().join("ramp.csv");
    let (_, document) = bench_json(&[
        "--url",
        &url,
        "--scenario",
        scenario.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
    ]);
    let setup = &document["setup"];
    assert_eq!(setup["model"], "ramping", "{setup:#}");
    assert_eq!(setup["concurrency"], 5);
    assert_eq!(setup["connections"], 5);
    assert_eq!(setup["ramp"].as_array().unwrap().len(), 2);
    let seconds = document["summary"]["per_second"].as_array().unwrap();
    assert!(seconds.len() >= 2, "{seconds:#?}");
    assert_eq!(seconds[0]["concurrency"], 1, "{seconds:#?}");
    assert!(
        seconds[1]["concurrency"].as_u64().unwrap() >= 4,
        "{seconds:#?}"
    );
    for second in &seconds[..2] {
        let p50 = second["p50_ms"].as_f64().unwrap();
        let p99 = second["p99_ms"].as_f64().unwrap();
        assert!(p50 > 0.0 && p99 >= p50, "{second:#}");
    }
    assert_eq!(document["summary"]["errors"], 0);
    let csv = std::fs::read_to_string(&csv).unwrap();
    let rows: Vec<&str> = csv.lines().collect();
    assert!(rows[0].ends_with(",concurrency"), "{csv}");
    assert!(
        rows[1].starts_with("0,") && rows[1].ends_with(",1"),
        "{csv}"
    );
}

/// What the tiny server below was called with.
type Seen = Arc<Mutex<Vec<Value>>>;

/// A Streamable HTTP server of one tool, `shape`, whose output schema
/// wants an integer `n` and whose answers carry the string it was given:
/// every answer breaks its own schema. It notes each call's arguments.
async fn misshapen(seen: axum::extract::State<Seen>, body: String) -> Response {
    let message: Value = serde_json::from_str(&body).unwrap();
    let id = message["id"].clone();
    let answer = |result: Value| {
        let mut headers = HeaderMap::new();
        headers.insert("content-type", "application/json".parse().unwrap());
        headers.insert("mcp-session-id", "s1".parse().unwrap());
        (
            headers,
            json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string(),
        )
            .into_response()
    };
    match message["method"].as_str().unwrap_or_default() {
        "initialize" => answer(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "misshapen", "version": "0"}
        })),
        "tools/list" => answer(json!({"tools": [{
            "name": "shape",
            "inputSchema": {"type": "object"},
            "outputSchema": {
                "type": "object",
                "properties": {"n": {"type": "integer"}},
                "required": ["n"]
            }
        }]})),
        "tools/call" => {
            let arguments = message["params"]["arguments"].clone();
            seen.lock().unwrap().push(arguments.clone());
            answer(json!({
                "content": [{"type": "text", "text": "shaped"}],
                "structuredContent": {"n": arguments["n"].to_string()}
            }))
        }
        _ if message.get("id").is_none() => StatusCode::ACCEPTED.into_response(),
        _ => answer(json!({})),
    }
}

fn misshapen_server() -> (String, Seen) {
    let (listener, base) = loopback();
    let seen: Seen = Arc::default();
    let app = axum::Router::new()
        .route("/mcp", post(misshapen))
        .with_state(Arc::clone(&seen));
    serve_router(listener, app);
    (format!("{base}/mcp"), seen)
}

/// `--expect-schema`: answers whose structuredContent breaks the tool's
/// output schema fail the sample (exit 5, a mismatch naming the place);
/// the morse server's answers keep theirs.
#[test]
fn output_schema_expectation_fails_on_a_mismatch() {
    let (url, _) = misshapen_server();
    let run = run(&[
        "bench",
        "--url",
        &url,
        "shape",
        "n=3",
        "-n",
        "5",
        "--expect-schema",
    ]);
    assert_eq!(run.code(), 5, "{run:#?}");
    let error = run.error_line();
    let message = error["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("output schema of `shape`") && message.contains("/n"),
        "{error:#}"
    );
    let server = HttpServer::start(&[]);
    let (_, document) = bench_json(&[
        "--url",
        &server.mcp_url(),
        "morse",
        "texto=SOS",
        "-n",
        "50",
        "--expect-schema",
    ]);
    assert_clean(&document, 50);
}

/// `{{random:N}}` draws from `--seed` and the request's number alone: two
/// runs with one seed send the same arguments, another seed others.
#[test]
fn the_same_seed_sends_the_same_arguments() {
    let (url, seen) = misshapen_server();
    let mut sent = Vec::new();
    for seed in ["7", "7", "8"] {
        seen.lock().unwrap().clear();
        bench_json(&[
            "--url",
            &url,
            "shape",
            r#"{"n": "{{random:1000000}}", "tag": "r{{random}}"}"#,
            "-n",
            "20",
            "--seed",
            seed,
        ]);
        sent.push(std::mem::take(&mut *seen.lock().unwrap()));
    }
    assert_eq!(sent[0].len(), 21, "the sample and 20 requests");
    assert!(sent[0].iter().all(|arguments| arguments["n"].is_u64()));
    assert_eq!(sent[0], sent[1]);
    assert_ne!(sent[0], sent[2]);
}

/// Input the server asks for, answered from the scenario's
/// `[step.answers]`: a 2026-07-28 `input_required` result (the call sent
/// again with `inputResponses` and its `requestState`), and a 2025-era
/// `elicitation/create` on the answer's SSE stream, on a legacy SSE
/// stream and over stdio, against the bundled `everything` server.
#[test]
fn elicitation_and_mrtr_answered_from_the_scenario() {
    let server = HttpServer::serve("everything", &[]);
    let dir = TempDir::new("bench-answers");
    let mrtr = dir.path().join("mrtr.toml");
    std::fs::write(
        &mrtr,
        r#"
[[step]]
tool = "test_input_required_result_elicitation"
expect_regex = "Hello, bench!"
[step.answers]
"elicitation/create" = { action = "accept", content = { name = "bench" } }
"#,
    )
    .unwrap();
    let (_, document) = bench_json(&[
        "--url",
        &server.mcp_url(),
        "--protocol",
        "2026",
        "--scenario",
        mrtr.to_str().unwrap(),
        "-n",
        "20",
        "-c",
        "2",
    ]);
    assert_clean(&document, 20);
    let elicit = dir.path().join("elicit.toml");
    std::fs::write(
        &elicit,
        r#"
[[step]]
tool = "test_elicitation"
arguments = { message = "Go on?" }
expect_regex = "action=accept.*yes"
[step.answers]
"elicitation/create" = { action = "accept", content = { response = "yes" } }
"#,
    )
    .unwrap();
    let legacy = format!("{}/sse", server.base_url());
    let stdio = format!("{} serve everything", shell_quote(nexo_path()));
    for target in [
        vec!["--url", &server.mcp_url(), "--sse"],
        vec!["--url", &legacy, "--transport", "sse"],
        vec!["--stdio", &stdio],
    ] {
        let mut args = target.clone();
        args.extend(["--scenario", elicit.to_str().unwrap(), "-n", "10"]);
        let (_, document) = bench_json(&args);
        assert_clean(&document, 10);
    }
    // Without answers bench declares no elicitation capability, and the
    // server refuses the call (-32021) rather than ask.
    let bare = dir.path().join("bare.toml");
    std::fs::write(
        &bare,
        "[[step]]\ntool = \"test_input_required_result_elicitation\"\n",
    )
    .unwrap();
    let run = run(&[
        "bench",
        "--url",
        &server.mcp_url(),
        "--protocol",
        "2026",
        "--scenario",
        bare.to_str().unwrap(),
        "-n",
        "3",
    ]);
    assert_eq!(run.code(), 5, "{run:#?}");
    assert!(run.stderr.contains("-32021"), "{run:#?}");
}

/// `https://`: bench's connections over rustls (HTTP/1.1 offered by
/// ALPN), the certificate checked against the trust store (a CA of the
/// test's own, named by `SSL_CERT_FILE`), to `nexo serve morse` serving
/// HTTPS. Without that CA the same run is refused as unreachable.
#[test]
fn https_target() {
    let dir = TempDir::new("bench-https");
    let ca = nexo_testkit::TestCa::new("nexo test CA").unwrap();
    let ca_file = ca.write(dir.path()).unwrap();
    let (cert, key) = ca
        .issue("localhost", &["localhost", "127.0.0.1"])
        .unwrap()
        .write(dir.path())
        .unwrap();
    let server = HttpServer::start(&[
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        key.to_str().unwrap(),
    ]);
    let url = format!("https://localhost:{}/mcp", server.port);
    let bench = |trusted: bool| {
        let mut command = nexo();
        command.args([
            "bench",
            "--url",
            &url,
            "morse",
            "texto=SOS",
            "-n",
            "100",
            "-c",
            "2",
            "--json",
        ]);
        if trusted {
            command.env("SSL_CERT_FILE", &ca_file);
        }
        run_command(command)
    };
    let trusted = bench(true);
    assert_eq!(trusted.code(), 0, "{trusted:#?}");
    let document = trusted.stdout_json();
    assert_document(&document);
    assert_clean(&document, 100);
    let untrusted = bench(false);
    assert_eq!(untrusted.code(), 4, "{untrusted:#?}");
    assert!(untrusted.stderr.contains("certificate"), "{untrusted:#?}");
}

/// A server run in-process answers its own requests through nexo-client's
/// handler, so a scenario's `[step.answers]` cannot reach it: refused with
/// the way out, rather than measured with other answers than asked for.
#[test]
fn in_process_refuses_a_scenarios_answers() {
    let dir = TempDir::new("bench-inprocess-answers");
    let scenario = dir.path().join("elicit.toml");
    std::fs::write(
        &scenario,
        r#"
[[step]]
tool = "test_elicitation"
[step.answers]
"elicitation/create" = { action = "accept", content = { response = "yes" } }
"#,
    )
    .unwrap();
    let refused = run(&[
        "bench",
        "--builtin",
        "everything",
        "--scenario",
        scenario.to_str().unwrap(),
        "-n",
        "1",
    ]);
    assert_eq!(refused.code(), 1, "{refused:#?}");
    let error = refused.error_line();
    assert!(
        error["error"]["hint"].as_str().unwrap().contains("--stdio"),
        "{error}"
    );
}

/// Issue 39: a stdio server slower to start than `--timeout` is measured
/// all the same, in both eras: its first exchange (`initialize`, or in the
/// 2026 era `server/discover`) has the start-up allowance, the measured
/// calls `--timeout`.
#[test]
fn issue_39_a_server_slower_to_start_than_the_timeout_is_measured() {
    let slow = format!(
        "sh -c {}",
        shell_quote(&format!("sleep 3; exec {}", serve_morse_command()))
    );
    for protocol in ["2025", "2026"] {
        let (_, document) = bench_json(&[
            "--stdio",
            &slow,
            "morse",
            "texto=SOS",
            "-n",
            "20",
            "--timeout",
            "1",
            "--protocol",
            protocol,
        ]);
        assert_eq!(document["summary"]["errors"], 0, "{protocol}: {document:#}");
    }
}

/// Issue 39: a stdio server that never answers ends the run once the
/// start-up allowance is spent, saying so, in both eras.
#[test]
fn issue_39_a_server_that_never_answers_is_given_up_after_the_startup_allowance() {
    for protocol in ["2025", "2026"] {
        let refused = run(&[
            "bench",
            "--stdio",
            "sleep 30",
            "morse",
            "texto=SOS",
            "-n",
            "5",
            "--startup-timeout",
            "1",
            "--protocol",
            protocol,
            "--json",
        ]);
        assert_eq!(refused.code(), 4, "{protocol}: {refused:#?}");
        let message = refused.error_line()["error"]["message"].to_string();
        assert!(
            message.contains("start-up allowance"),
            "{protocol}: {message}"
        );
    }
}
