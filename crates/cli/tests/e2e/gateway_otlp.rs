//! `nexo gateway` exporting its spans over OTLP/HTTP: a collector the test
//! runs on 127.0.0.1 receives the protobuf exports; each decided request
//! is one server span in the client's trace (the `traceparent` its
//! request carried), named after the method and the tool, with the
//! decision, rule and outcome as attributes, and an error status when the
//! policy denied it.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use opentelemetry_proto::tonic::trace::v1::status::StatusCode;
use prost::Message;
use serde_json::json;

use crate::support::{Http, SEED_ACCEPT, TempDir, loopback, serve_router};

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";

const POLICY: &str = r#"
default = "allow"

[[rule]]
name = "no-clock"
decision = "deny"
server = "utils"
tool = "time"
"#;

/// What the collector was sent: `(service.name, span)` for each span.
type Received = Arc<Mutex<Vec<(String, Span)>>>;

/// An OTLP/HTTP collector on 127.0.0.1 that keeps every span posted to
/// `/v1/traces`; its base URL.
fn start_collector() -> (String, Received) {
    let received: Received = Arc::default();
    let kept = received.clone();
    let (listener, base) = loopback();
    let export = move |body: axum::body::Bytes| {
        let kept = kept.clone();
        async move {
            let request = ExportTraceServiceRequest::decode(body).unwrap();
            for resource in request.resource_spans {
                let service = resource
                    .resource
                    .iter()
                    .flat_map(|resource| &resource.attributes)
                    .find(|attribute| attribute.key == "service.name")
                    .and_then(|attribute| attribute.value.as_ref()?.value.as_ref())
                    .map(|value| match value {
                        AnyValue::StringValue(name) => name.clone(),
                        other => format!("{other:?}"),
                    })
                    .unwrap_or_default();
                for scope in resource.scope_spans {
                    for span in scope.spans {
                        kept.lock().unwrap().push((service.clone(), span));
                    }
                }
            }
            axum::http::StatusCode::OK
        }
    };
    let app = axum::Router::new().route("/v1/traces", axum::routing::post(export));
    serve_router(listener, app);
    (base, received)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

fn attribute(span: &Span, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|attribute| attribute.key == key)
        .and_then(|attribute| attribute.value.as_ref()?.value.as_ref())
        .map(|value| match value {
            AnyValue::StringValue(text) => text.clone(),
            other => format!("{other:?}"),
        })
}

#[tokio::test(flavor = "multi_thread")]
async fn gateway_exports_each_request_as_a_span_of_the_callers_trace() {
    let (collector, received) = start_collector();
    let dir = TempDir::new("gateway-otlp");
    std::fs::write(dir.path().join("policy.toml"), POLICY).unwrap();
    let config = json!({
        "mcpServers": {"utils": {"builtin": "utils"}},
        "gateway": {
            "policy": "policy.toml", "audit": "audit.jsonl",
            "otlp": {"endpoint": collector, "serviceName": "gateway-under-test"},
        },
    });
    let file = dir.path().join("gateway.json");
    std::fs::write(&file, config.to_string()).unwrap();
    let (_proc, base) = tokio::task::block_in_place(|| {
        crate::gateway_serve::start(&file, &[], "nexo: gateway for 1 upstream")
    });
    let http = Http::at(base);
    let call = |tool: &'static str, arguments: serde_json::Value| {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": tool, "arguments": arguments,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "nexo-e2e", "version": "0"},
                "io.modelcontextprotocol/clientCapabilities": {},
                "traceparent": format!("00-{TRACE_ID}-{CLIENT_SPAN}-01"),
            },
        }});
        let http = &http;
        async move {
            let headers = [
                ("Content-Type", "application/json"),
                ("Accept", SEED_ACCEPT),
                ("MCP-Protocol-Version", "2026-07-28"),
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", tool),
            ];
            let reply = http
                .send(
                    reqwest::Method::POST,
                    "/mcp",
                    &headers,
                    Some(body.to_string().into()),
                )
                .await;
            assert_eq!(reply.status, 200, "{reply:#?}");
            reply.message()
        }
    };
    let echoed = call("utils__echo", json!({"text": "hi"})).await;
    assert_eq!(echoed["result"]["content"][0]["text"], "hi", "{echoed}");
    let denied = call("utils__time", json!({})).await;
    assert_eq!(denied["result"]["isError"], true, "{denied}");

    // The exporter sends a batch every second.
    let deadline = Instant::now() + Duration::from_secs(15);
    let spans = loop {
        let spans = received.lock().unwrap().clone();
        if spans.len() >= 2 || Instant::now() > deadline {
            break spans;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(spans.len(), 2, "{spans:#?}");
    let find = |name: &str| {
        spans
            .iter()
            .find(|(_, span)| span.name == name)
            .unwrap_or_else(|| panic!("no span `{name}` in {spans:#?}"))
    };
    let (service, echo) = find("tools/call utils__echo");
    assert_eq!(service, "gateway-under-test");
    assert_eq!(hex(&echo.trace_id), TRACE_ID, "the client's trace");
    assert_eq!(
        hex(&echo.parent_span_id),
        CLIENT_SPAN,
        "a child of the client's span"
    );
    assert_eq!(echo.span_id.len(), 8);
    assert_ne!(hex(&echo.span_id), CLIENT_SPAN);
    assert_eq!(echo.kind, SpanKind::Server as i32);
    assert!(echo.end_time_unix_nano >= echo.start_time_unix_nano);
    assert_eq!(
        attribute(echo, "nexo.gateway.decision").as_deref(),
        Some("allow")
    );
    assert_eq!(
        attribute(echo, "nexo.gateway.outcome").as_deref(),
        Some("ok")
    );
    assert_eq!(attribute(echo, "gen_ai.tool.name").as_deref(), Some("echo"));
    assert_ne!(
        echo.status.as_ref().map(|status| status.code),
        Some(StatusCode::Error as i32)
    );

    let (_, time) = find("tools/call utils__time");
    assert_eq!(hex(&time.trace_id), TRACE_ID);
    assert_ne!(time.span_id, echo.span_id, "each request its own span");
    assert_eq!(
        attribute(time, "nexo.gateway.decision").as_deref(),
        Some("deny")
    );
    assert_eq!(
        attribute(time, "nexo.gateway.rule").as_deref(),
        Some("no-clock")
    );
    let status = time.status.as_ref().unwrap();
    assert_eq!(status.code, StatusCode::Error as i32);
    assert!(!status.message.is_empty(), "the status says why");
}
