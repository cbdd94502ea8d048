//! The 2026-07-28 probes, where the server speaks that revision: on a fresh
//! link with no session, `server/discover`, the cache hints and
//! `resultType` every result carries, a stable `tools/list` order,
//! resource-not-found as -32602 and the header errors with their exact
//! codes (-32020 for an `Mcp-Method` or `Mcp-Name` that contradicts the
//! body, -32022 for an unsupported revision).

use serde_json::{Value, json};

use crate::Run;
use crate::finding::{Finding, Group, Severity};
use crate::link::Link;
use crate::probes::name_of;

/// Whether a `server/discover` answer lists 2026-07-28.
pub(crate) fn speaks_2026(discover: &crate::link::Exchange) -> bool {
    discover.result().is_some_and(|result| {
        result
            .get("supportedVersions")
            .and_then(Value::as_array)
            .is_some_and(|versions| {
                versions
                    .iter()
                    .any(|version| version == nexo_client::era::REVISION_2026)
            })
    })
}

/// The 2026-07-28 protocol, where the server speaks it (on a fresh link,
/// no session): `server/discover`, the cache hints (`ttlMs`, `cacheScope`)
/// and `resultType` every result carries, a stable `tools/list` order,
/// resource-not-found as -32602 and the header errors' exact codes.
pub(crate) async fn probe(run: &mut Run) {
    const WHY: &str =
        "spec 2026-07-28 (stateless requests: server/discover, cache hints, resultType)";
    let link = match run.fresh_link().await {
        Ok(link) => link,
        Err(error) => {
            run.probe("2026-07-28", Group::Protocol, "skipped", error.to_string());
            return;
        }
    };
    link.speak_2026();
    let discover = link
        .request("server/discover", crate::link::stateless_params(json!({})))
        .await;
    if !speaks_2026(&discover) {
        run.probe(
            "2026-07-28",
            Group::Protocol,
            "not-applicable",
            "server/discover is not answered with 2026-07-28 among supportedVersions",
        );
        if let Link::Stdio(stdio) = &link {
            stdio.kill().await;
        }
        return;
    }
    run.probe(
        "2026-07-28",
        Group::Protocol,
        "ran",
        "server/discover, tools/list twice, a missing resource",
    );
    let mut exchanges = vec![discover];
    let mut orders = Vec::new();
    if run.declares("tools") {
        for _ in 0..2 {
            let exchange = link
                .request("tools/list", crate::link::stateless_params(json!({})))
                .await;
            let names: Vec<String> = exchange
                .result()
                .and_then(|result| result.get("tools"))
                .and_then(Value::as_array)
                .map(|tools| tools.iter().map(|tool| name_of(tool).to_owned()).collect())
                .unwrap_or_default();
            orders.push(names);
            exchanges.push(exchange);
        }
    }
    if let [first, second] = orders.as_slice()
        && first != second
    {
        run.push(
            Finding::new(
                "tools-order-unstable",
                Severity::Warning,
                Group::Protocol,
                "two 2026-07-28 `tools/list` give the tools in different orders",
                WHY,
                "list tools in a fixed order, so that caches and prompt prefixes stay valid",
            )
            .evidence(format!("first: {first:?}\nsecond: {second:?}")),
        );
    }
    for exchange in &exchanges {
        let Some(result) = exchange.result() else {
            continue;
        };
        let missing: Vec<&str> = ["resultType", "ttlMs", "cacheScope"]
            .into_iter()
            .filter(|key| result.get(key).is_none())
            .collect();
        if !missing.is_empty() {
            let method = exchange.request["method"].as_str().unwrap_or("").to_owned();
            run.push(
                Finding::new(
                    "stateless-result-fields-missing",
                    Severity::Warning,
                    Group::Protocol,
                    format!("the 2026-07-28 `{method}` result lacks `{}`", missing.join("`, `")),
                    WHY,
                    "give every 2026-07-28 result its resultType and the cache hints ttlMs and cacheScope",
                )
                .evidence(exchange.evidence())
                .subject(method.as_str()),
            );
        }
    }
    if run.declares("resources") {
        let missing = link
            .request(
                "resources/read",
                crate::link::stateless_params(json!({"uri": "nexo-check://no-such-resource"})),
            )
            .await;
        if let Some(code) = missing.error_code()
            && code != -32602
        {
            run.push(
                Finding::new(
                    "resource-not-found-code",
                    Severity::Warning,
                    Group::Protocol,
                    format!("a missing resource is error {code} in 2026-07-28, not -32602"),
                    WHY,
                    "answer a read of an unknown URI with -32602 from 2026-07-28 on",
                )
                .evidence(missing.evidence()),
            );
        }
    }
    header_errors(run, &link).await;
    if let Link::Stdio(stdio) = &link {
        stdio.kill().await;
    }
}

/// What a header-error probe sent and got.
struct HeaderProbe {
    changed: &'static str,
    /// The error code the revision wants.
    wanted: i64,
    what: &'static str,
}

/// The 2026-07-28 errors of requests whose headers or `_meta` are wrong,
/// each wanted with its exact code: `Mcp-Method` or `Mcp-Name` that
/// contradicts the body is -32020 (HTTP only), an unsupported revision is
/// -32022. -32021 (a required client capability missing) needs a request
/// that requires one, which a checker cannot know of: said, not probed.
async fn header_errors(run: &mut Run, link: &Link) {
    run.probe(
        "2026-07-28-header-errors",
        Group::Protocol,
        "ran",
        "-32020 and -32022 probed; -32021 (a missing required client capability) needs a request that requires one and is not probed",
    );
    let mut unsupported = crate::link::stateless_params(json!({}));
    unsupported["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("1999-01-01");
    let message = json!({"jsonrpc": "2.0", "id": link.next_id(), "method": "tools/list", "params": unsupported});
    let mut probes = vec![(
        message,
        vec![("mcp-protocol-version", "1999-01-01")],
        HeaderProbe {
            changed: "protocol revision 1999-01-01 (header and _meta)",
            wanted: -32022,
            what: "an unsupported protocol revision",
        },
    )];
    if let Link::Http(_) = link {
        probes.push((
            json!({"jsonrpc": "2.0", "id": link.next_id(), "method": "tools/list",
                "params": crate::link::stateless_params(json!({}))}),
            vec![("mcp-method", "prompts/list")],
            HeaderProbe {
                changed: "Mcp-Method: prompts/list and a tools/list body",
                wanted: -32020,
                what: "an `Mcp-Method` header that contradicts the body",
            },
        ));
        probes.push((
            json!({"jsonrpc": "2.0", "id": link.next_id(), "method": "tools/call",
                "params": crate::link::stateless_params(json!({"name": "nexo-check-no-such-tool", "arguments": {}}))}),
            vec![("mcp-name", "nexo-check-other-tool")],
            HeaderProbe {
                changed: "Mcp-Name: nexo-check-other-tool and a call of nexo-check-no-such-tool",
                wanted: -32020,
                what: "an `Mcp-Name` header that contradicts the body",
            },
        ));
    }
    for (message, headers, probe) in probes {
        let (status, answer, evidence) = match link {
            Link::Http(http) => {
                let mut all = http.base_headers();
                all.extend(crate::link::method_headers(&message));
                for (name, value) in headers {
                    all.insert(name, reqwest::header::HeaderValue::from_static(value));
                }
                let reply = http
                    .raw(
                        reqwest::Method::POST,
                        &http.url,
                        all,
                        Some(message.to_string().into_bytes()),
                    )
                    .await;
                match reply {
                    Ok(reply) => (
                        Some(reply.status),
                        reply.message(message.get("id")),
                        format!(
                            "→ POST {} with {}\n← {}",
                            http.url,
                            probe.changed,
                            reply.describe()
                        ),
                    ),
                    Err(error) => (
                        None,
                        None,
                        format!("→ POST {} with {}\n← ({error})", http.url, probe.changed),
                    ),
                }
            }
            _ => {
                let exchange = link.send(message).await;
                (None, exchange.answer.clone().ok(), exchange.evidence())
            }
        };
        let Some(answer) = answer else {
            // An HTTP refusal without a JSON-RPC body is still a refusal.
            if status.is_some_and(|status| (400..500).contains(&status)) {
                run.push(header_error_finding(
                    &probe,
                    "refused without a JSON-RPC error",
                    evidence,
                ));
            }
            continue;
        };
        let code = answer
            .get("error")
            .and_then(|error| error.get("code"))
            .and_then(Value::as_i64);
        match code {
            Some(code) if code == probe.wanted => {}
            Some(code) => {
                run.push(header_error_finding(&probe, &format!("refused with {code}"), evidence));
            }
            None => run.push(
                Finding::new(
                    "header-error-accepted",
                    Severity::Warning,
                    if probe.wanted == -32022 { Group::Protocol } else { Group::Http },
                    format!("a 2026-07-28 request with {} is served", probe.what),
                    "spec 2026-07-28, transports and versioning: a request whose headers contradict its body, or whose revision is unsupported, is refused",
                    "refuse it with HTTP 400 and its error: -32020 for headers that contradict the body, -32022 for an unsupported revision",
                )
                .evidence(evidence),
            ),
        }
    }
}

fn header_error_finding(probe: &HeaderProbe, got: &str, evidence: String) -> Finding {
    Finding::new(
        "header-error-code",
        Severity::Warning,
        if probe.wanted == -32022 { Group::Protocol } else { Group::Http },
        format!("a 2026-07-28 request with {} is {got}, not {}", probe.what, probe.wanted),
        "spec 2026-07-28: -32020 header mismatch, -32021 missing required client capability, -32022 unsupported protocol version",
        "answer with the exact code: -32020 headers that contradict the body, -32022 an unsupported revision (HTTP 400 over HTTP)",
    )
    .evidence(evidence)
}
