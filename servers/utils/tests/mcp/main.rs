//! The utilities handler driven through rmcp in-process, over a
//! `tokio::io::duplex` pair: once with rmcp's own client ([`client`]) and
//! once with raw JSON-RPC lines ([`wire`]), so that a bug shared by rmcp's
//! client and server cannot hide.

mod client;
mod wire;

/// SHA-256 of `hola`.
const SHA256_HOLA: &str = "b221d9dbb083a7f33428d7c2a3c3198ae925614d70210e28716ccaa7cd4ddb79";

/// The output schema of `sha256` and `echo`.
fn text_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": { "result": { "type": "string" } },
        "required": ["result"],
    })
}

/// Whether `text` is an RFC 3339 date-time to the second with a numeric
/// offset, `YYYY-MM-DDTHH:MM:SS+HH:MM`, and that offset is `offset`.
fn is_rfc3339_with_offset(text: &str, offset: &str) -> bool {
    let digits = |range: std::ops::Range<usize>| {
        text.get(range)
            .is_some_and(|part| part.bytes().all(|b| b.is_ascii_digit()))
    };
    text.len() == 25
        && digits(0..4)
        && text.get(4..5) == Some("-")
        && digits(5..7)
        && text.get(7..8) == Some("-")
        && digits(8..10)
        && text.get(10..11) == Some("T")
        && digits(11..13)
        && text.get(13..14) == Some(":")
        && digits(14..16)
        && text.get(16..17) == Some(":")
        && digits(17..19)
        && text.get(19..) == Some(offset)
}
