//! `nexo gateway`'s rate limits, `/metrics` and trace context, end to end:
//! the bundled utils server and a raw Python stdio server that answers a
//! call with the `_meta` it received, behind a gateway on 127.0.0.1,
//! reached over raw Streamable HTTP (2025-06-18) from several loopback
//! addresses (127.0.0.1, 127.0.0.2, ...), each a different identity.

use std::net::IpAddr;

use serde_json::{Value, json};

use crate::support::{PATIENCE, Proc, Reply, SEED_ACCEPT, TempDir, jsonrpc_message, sse_data};

const POLICY: &str = r#"
default = "allow"
"#;

/// A stdio MCP server in plain Python: its tool `meta` and its prompt
/// `meta` answer with the `_meta` of the request, as JSON text.
const META_SERVER: &str = r#"
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    method, id = message.get("method"), message.get("id")
    if id is None:
        continue
    if method == "initialize":
        result = {"protocolVersion": message["params"]["protocolVersion"],
                  "capabilities": {"tools": {}, "prompts": {}},
                  "serverInfo": {"name": "meta-echo", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "meta", "description": "Answers with the call's _meta.",
                             "inputSchema": {"type": "object"}}]}
    elif method == "prompts/list":
        result = {"prompts": [{"name": "meta", "description": "The request's _meta."}]}
    elif method == "prompts/get":
        meta = message["params"].get("_meta", {})
        result = {"messages": [{"role": "user",
                                "content": {"type": "text", "text": json.dumps(meta)}}]}
    elif method == "tools/call":
        meta = message["params"].get("_meta", {})
        result = {"content": [{"type": "text", "text": json.dumps(meta)}]}
    else:
        print(json.dumps({"jsonrpc": "2.0", "id": id,
                          "error": {"code": -32601, "message": "no such method"}}), flush=True)
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": id, "result": result}), flush=True)
"#;

/// A gateway on a free port, stopped when dropped.
struct Gateway {
    _proc: Proc,
    base: String,
    dir: TempDir,
}

impl Gateway {
    fn start(rate_limits: Value) -> Self {
        let dir = TempDir::new("gateway-limits");
        std::fs::write(dir.path().join("policy.toml"), POLICY).unwrap();
        let script = dir.path().join("meta_server.py");
        std::fs::write(&script, META_SERVER).unwrap();
        let config = json!({
            "mcpServers": {
                "utils": {"builtin": "utils"},
                "echo": {"command": "python3", "args": [script]},
            },
            "gateway": {
                "policy": "policy.toml",
                "audit": "audit.jsonl",
                "rateLimits": rate_limits,
            },
        });
        let file = dir.path().join("gateway.json");
        std::fs::write(&file, config.to_string()).unwrap();
        let (proc, base) = crate::gateway_serve::start(
            &file,
            &["--timeout", "20"],
            "nexo: gateway for 2 upstreams",
        );
        Self {
            _proc: proc,
            base,
            dir,
        }
    }

    /// A 2025-06-18 session from the loopback address `from`.
    async fn session(&self, from: &str) -> Session {
        Session::open(&self.base, from).await
    }

    async fn metrics(&self, origin: Option<&str>) -> Reply {
        let client = crate::support::http_client().no_proxy().build().unwrap();
        let mut request = client.get(format!("{}/metrics", self.base));
        if let Some(origin) = origin {
            request = request.header("Origin", origin);
        }
        let response = request.send().await.unwrap();
        Reply {
            status: response.status().as_u16(),
            headers: response.headers().clone(),
            body: response.text().await.unwrap(),
        }
    }

    fn audit(&self) -> Vec<Value> {
        std::fs::read_to_string(self.dir.path().join("audit.jsonl"))
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }
}

/// A 2025-06-18 session over raw Streamable HTTP, from one loopback
/// address.
pub(crate) struct Session {
    pub(crate) client: reqwest::Client,
    pub(crate) url: String,
    pub(crate) id: Option<String>,
    next: u64,
}

impl Session {
    /// Initializes a session at the gateway at `base` from the loopback
    /// address `from`.
    pub(crate) async fn open(base: &str, from: &str) -> Self {
        let from: IpAddr = from.parse().unwrap();
        let client = crate::support::http_client()
            .no_proxy()
            .local_address(from)
            .timeout(PATIENCE)
            .build()
            .unwrap();
        let mut session = Self {
            client,
            url: format!("{base}/mcp"),
            id: None,
            next: 1,
        };
        let reply = session
            .post(
                json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "e2e", "version": "0"}}}),
            )
            .await;
        assert_eq!(reply.status, 200, "{reply:#?}");
        session.id = Some(reply.header("mcp-session-id").unwrap().to_owned());
        let reply = session
            .post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        assert_eq!(reply.status, 202, "{reply:#?}");
        session
    }

    /// The same session (id, address) sent to the gateway at `base`.
    pub(crate) fn at(&self, base: &str) -> Self {
        Self {
            client: self.client.clone(),
            url: format!("{base}/mcp"),
            id: self.id.clone(),
            next: self.next + 1000,
        }
    }

    pub(crate) async fn post(&self, body: Value) -> Reply {
        let mut request = self
            .client
            .post(&self.url)
            .header("Content-Type", "application/json")
            .header("Accept", SEED_ACCEPT)
            .header("MCP-Protocol-Version", "2025-06-18");
        if let Some(id) = &self.id {
            request = request.header("Mcp-Session-Id", id);
        }
        let response = request.body(body.to_string()).send().await.unwrap();
        Reply {
            status: response.status().as_u16(),
            headers: response.headers().clone(),
            body: response.text().await.unwrap(),
        }
    }

    /// `tools/call` of `tool` with `arguments` (and `_meta`, when given):
    /// the JSON-RPC response, the last of the reply's messages.
    pub(crate) async fn call(
        &mut self,
        tool: &str,
        arguments: Value,
        meta: Option<Value>,
    ) -> Value {
        self.next += 1;
        let mut params = json!({"name": tool, "arguments": arguments});
        if let Some(meta) = meta {
            params["_meta"] = meta;
        }
        let reply = self
            .post(json!({"jsonrpc": "2.0", "id": self.next, "method": "tools/call", "params": params}))
            .await;
        assert_eq!(reply.status, 200, "{reply:#?}");
        let messages: Vec<Value> = if reply.is_sse() {
            sse_data(&reply.body)
                .iter()
                .map(|data| jsonrpc_message(data))
                .collect()
        } else {
            vec![jsonrpc_message(&reply.body)]
        };
        messages
            .into_iter()
            .rfind(|message| message.get("id") == Some(&json!(self.next)))
            .unwrap_or_else(|| panic!("no response to the call: {reply:#?}"))
    }
}

pub(crate) fn text(response: &Value) -> &str {
    response["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {response}"))
}

pub(crate) fn is_error(response: &Value) -> bool {
    response["result"]["isError"] == json!(true)
}

/// The value of the sample `name{labels}` in a Prometheus text, 0 when
/// absent; every label given must match.
pub(crate) fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            let (metric, rest) = series.split_once('{').unwrap_or((series, "}"));
            (metric == name
                && labels
                    .iter()
                    .all(|(key, value)| rest.contains(&format!("{key}=\"{value}\""))))
            .then(|| value.parse::<f64>().unwrap())
        })
        .sum()
}

#[tokio::test]
async fn gateway_rate_limits_each_identity_and_each_tool_and_audits_the_refusals() {
    let gateway = Gateway::start(json!({
        "perIdentity": "4/min",
        "perTool": {"utils__sha256": "2/min"},
    }));
    let mut first = gateway.session("127.0.0.1").await;
    for n in 0..4 {
        let answer = first
            .call("utils__echo", json!({"text": format!("hi {n}")}), None)
            .await;
        assert!(!is_error(&answer), "{answer}");
    }
    let refused = first
        .call("utils__echo", json!({"text": "one more"}), None)
        .await;
    assert!(is_error(&refused), "{refused}");
    let message = text(&refused);
    assert!(
        message.starts_with(
            "rate limited by the gateway (rateLimits.perIdentity): the limit of 4/min for \
             `127.0.0.1` is used up; retry in "
        ),
        "{message}"
    );
    let data = &refused["result"]["_meta"]["dev.nexo/gateway"];
    assert_eq!(data["code"], -32029, "{refused}");
    assert!(
        data["data"]["retryAfterSeconds"].as_f64().unwrap() > 1.0,
        "{refused}"
    );

    // Another address is another identity, with its own limit.
    let mut second = gateway.session("127.0.0.2").await;
    let answer = second
        .call("utils__echo", json!({"text": "mine"}), None)
        .await;
    assert!(!is_error(&answer), "{answer}");

    // The tool's limit is shared by every caller.
    let mut third = gateway.session("127.0.0.3").await;
    for _ in 0..2 {
        let answer = third
            .call("utils__sha256", json!({"text": "x"}), None)
            .await;
        assert!(!is_error(&answer), "{answer}");
    }
    let mut fourth = gateway.session("127.0.0.4").await;
    let refused = fourth
        .call("utils__sha256", json!({"text": "x"}), None)
        .await;
    assert!(
        text(&refused).starts_with(
            "rate limited by the gateway (rateLimits.perTool): the limit of 2/min on the tool \
             `utils__sha256` is used up"
        ),
        "{refused}"
    );
    let answer = fourth
        .call("utils__echo", json!({"text": "other tool"}), None)
        .await;
    assert!(!is_error(&answer), "{answer}");

    let audit = gateway.audit();
    let limited: Vec<&Value> = audit
        .iter()
        .filter(|line| line["outcome"] == "limited")
        .collect();
    assert_eq!(limited.len(), 2, "{audit:#?}");
    assert_eq!(limited[0]["rule"], "rateLimits.perIdentity");
    assert_eq!(limited[0]["decision"], "deny");
    assert_eq!(limited[0]["identity"]["client"], "127.0.0.1");
    assert_eq!(limited[0]["tool"], "echo");
    assert_eq!(limited[1]["rule"], "rateLimits.perTool");
    assert_eq!(limited[1]["identity"]["client"], "127.0.0.4");
    let verified = crate::support::run(&[
        "gateway",
        "verify-audit",
        gateway.dir.path().join("audit.jsonl").to_str().unwrap(),
    ]);
    verified.assert_success();
}

#[tokio::test]
async fn gateway_metrics_count_calls_and_refuse_foreign_origins() {
    let gateway = Gateway::start(json!({"perIdentity": "3/min"}));
    let before = gateway.metrics(None).await;
    assert_eq!(before.status, 200, "{before:#?}");
    assert!(
        before
            .header("content-type")
            .unwrap()
            .starts_with("application/openmetrics-text"),
        "{before:#?}"
    );
    let echo_ok = [
        ("method", "tools/call"),
        ("server", "utils"),
        ("tool", "echo"),
        ("decision", "allow"),
        ("outcome", "ok"),
    ];
    assert_eq!(
        sample(&before.body, "nexo_gateway_requests_total", &echo_ok),
        0.0
    );
    assert_eq!(
        sample(
            &before.body,
            "nexo_gateway_upstream_up",
            &[("server", "utils")]
        ),
        1.0,
        "{}",
        before.body
    );

    let mut session = gateway.session("127.0.0.1").await;
    for _ in 0..4 {
        session
            .call("utils__echo", json!({"text": "hi"}), None)
            .await;
    }
    let after = gateway.metrics(None).await;
    let body = &after.body;
    assert_eq!(
        sample(body, "nexo_gateway_requests_total", &echo_ok),
        3.0,
        "{body}"
    );
    assert_eq!(
        sample(
            body,
            "nexo_gateway_requests_total",
            &[
                ("tool", "echo"),
                ("decision", "deny"),
                ("outcome", "limited")
            ]
        ),
        1.0,
        "{body}"
    );
    assert_eq!(
        sample(
            body,
            "nexo_gateway_rate_limited_total",
            &[("limit", "rateLimits.perIdentity")]
        ),
        1.0,
        "{body}"
    );
    assert_eq!(
        sample(
            body,
            "nexo_gateway_upstream_latency_seconds_count",
            &[("server", "utils")]
        ),
        3.0,
        "{body}"
    );
    assert_eq!(
        sample(
            body,
            "nexo_gateway_added_latency_seconds_count",
            &[("method", "tools/call")]
        ),
        4.0,
        "{body}"
    );
    assert_eq!(
        sample(
            body,
            "nexo_gateway_upstream_restarts_total",
            &[("server", "echo")]
        ),
        0.0,
        "{body}"
    );

    let foreign = gateway.metrics(Some("http://evil.example")).await;
    assert_eq!(foreign.status, 403, "{foreign:#?}");
    assert!(foreign.body.contains("--allow-origin"), "{foreign:#?}");
    let local = gateway.metrics(Some("http://127.0.0.1:3000")).await;
    assert_eq!(local.status, 200, "{local:#?}");
}

#[tokio::test]
async fn gateway_carries_the_trace_context_to_the_upstream() {
    let gateway = Gateway::start(json!({}));
    let mut session = gateway.session("127.0.0.1").await;
    let given = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let answer = session
        .call(
            "echo__meta",
            json!({}),
            Some(json!({"traceparent": given, "tracestate": "vendor=1"})),
        )
        .await;
    let seen: Value = serde_json::from_str(text(&answer)).unwrap();
    let sent = seen["traceparent"].as_str().unwrap();
    let parts: Vec<&str> = sent.split('-').collect();
    assert_eq!(parts.len(), 4, "{sent}");
    assert_eq!(parts[0], "00");
    assert_eq!(
        parts[1], "4bf92f3577b34da6a3ce929d0e0e4736",
        "the same trace: {sent}"
    );
    assert_ne!(
        parts[2], "00f067aa0ba902b7",
        "a new span of the gateway's: {sent}"
    );
    assert_eq!(parts[2].len(), 16);
    assert_eq!(parts[3], "01");
    assert_eq!(seen["tracestate"], "vendor=1");

    // A prompt's too, from the HTTP header when `_meta` has none.
    let reply = session
        .client
        .post(&session.url)
        .header("Content-Type", "application/json")
        .header("Accept", SEED_ACCEPT)
        .header("MCP-Protocol-Version", "2025-06-18")
        .header("Mcp-Session-Id", session.id.clone().unwrap())
        .header("traceparent", given)
        .body(
            json!({"jsonrpc": "2.0", "id": 99, "method": "prompts/get",
                   "params": {"name": "echo__meta"}})
            .to_string(),
        )
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let message = sse_data(&reply)
        .iter()
        .map(|data| jsonrpc_message(data))
        .rfind(|message| message.get("id") == Some(&json!(99)))
        .unwrap_or_else(|| panic!("no answer to prompts/get: {reply}"));
    let seen: Value = serde_json::from_str(
        message["result"]["messages"][0]["content"]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{message}")),
    )
    .unwrap();
    let sent = seen["traceparent"].as_str().unwrap();
    assert!(
        sent.starts_with("00-4bf92f3577b34da6a3ce929d0e0e4736-")
            && !sent.contains("00f067aa0ba902b7"),
        "{sent}"
    );

    // None given: a new trace starts at the gateway.
    let answer = session.call("echo__meta", json!({}), None).await;
    let seen: Value = serde_json::from_str(text(&answer)).unwrap();
    let sent = seen["traceparent"].as_str().unwrap();
    assert_eq!(sent.len(), 55, "{sent}");
    assert!(!sent.contains("4bf92f3577b34da6a3ce929d0e0e4736"), "{sent}");
}
