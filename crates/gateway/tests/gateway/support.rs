//! What the tests share: the example policy, a resolver answering from a
//! table, and requests.

use std::net::IpAddr;
use std::path::PathBuf;

use nexo_gateway::policy::{Identity, Policy, Request, StaticResolver};
use serde_json::Value;

/// `examples/gateway/policy.toml`, which the README and the tests share.
pub fn example_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/gateway/policy.toml")
}

pub fn example() -> Policy {
    Policy::load(&example_path()).unwrap()
}

/// Names as a test DNS would answer them: one public, one that resolves to
/// loopback, one with a public and a private address.
pub fn resolver() -> StaticResolver {
    let address = |text: &str| text.parse::<IpAddr>().unwrap();
    StaticResolver::new()
        .with("example.com", &[address("93.184.216.34")])
        .with("localtest.me", &[address("127.0.0.1")])
        .with(
            "rebind.example",
            &[address("93.184.216.34"), address("10.0.0.1")],
        )
}

pub fn call(server: &str, tool: &str, arguments: Value) -> Request {
    Request {
        identity: Identity {
            subject: Some("alice".to_owned()),
            scopes: vec!["files:read".to_owned()],
            client: Some("192.0.2.10".parse().unwrap()),
        },
        server: server.to_owned(),
        method: "tools/call".to_owned(),
        tool: Some(tool.to_owned()),
        arguments,
    }
}
