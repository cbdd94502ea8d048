//! The 2026-07-28 probes, where the server speaks that revision: on a fresh
//! link with no session, `server/discover`, the cache hints and
//! `resultType` every result carries, a stable `tools/list` order,
//! resource-not-found as -32602 and, over HTTP, an `Mcp-Method` header that
//! contradicts the body.

use serde_json::{Value, json};

use crate::Run;
use crate::finding::{Finding, Group, Severity};
use crate::link::Link;
use crate::probes::name_of;

/// The 2026-07-28 protocol, where the server speaks it (on a fresh link,
/// no session): `server/discover`, the cache hints (`ttlMs`, `cacheScope`)
/// and `resultType` every result carries, a stable `tools/list` order,
/// resource-not-found as -32602 and, over HTTP, a `Mcp-Method` header that
/// contradicts the body refused.
pub(crate) async fn probe(run: &mut Run) {
    const WHY: &str =
        "spec 2026-07-28 (stateless requests: server/discover, cache hints, resultType)";
    let link = match run.fresh_link() {
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
    let speaks = discover.result().is_some_and(|result| {
        result
            .get("supportedVersions")
            .and_then(Value::as_array)
            .is_some_and(|versions| {
                versions
                    .iter()
                    .any(|version| version == crate::link::REVISION_2026)
            })
    });
    if !speaks {
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
    if let Link::Http(http) = &link {
        let message = json!({"jsonrpc": "2.0", "id": http.next_id(), "method": "tools/list",
            "params": crate::link::stateless_params(json!({}))});
        let mut headers = http.base_headers();
        headers.insert(
            "mcp-method",
            reqwest::header::HeaderValue::from_static("prompts/list"),
        );
        let reply = http
            .raw(
                reqwest::Method::POST,
                &http.url,
                headers,
                Some(message.to_string().into_bytes()),
            )
            .await;
        if let Ok(reply) = &reply
            && reply.status == 200
            && reply
                .message(message.get("id"))
                .is_some_and(|answer| answer.get("result").is_some())
        {
            run.push(
                Finding::new(
                    "method-header-mismatch-accepted",
                    Severity::Warning,
                    Group::Http,
                    "a 2026-07-28 request whose `Mcp-Method` header contradicts its body is served",
                    "spec 2026-07-28, transports: the Mcp-Method header must match the body (errors -32020..-32022)",
                    "refuse a request whose headers and body disagree, with 400 and the header error",
                )
                .evidence(format!("→ POST {} with Mcp-Method: prompts/list and a tools/list body\n← {}", http.url, reply.describe())),
            );
        }
    }
    if let Link::Stdio(stdio) = &link {
        stdio.kill().await;
    }
}
