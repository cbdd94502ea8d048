//! W3C trace context through the gateway: the `traceparent` a client sent
//! (in the request's `_meta`, else as the HTTP header) is carried to the
//! upstream call's `_meta` with a new span id of the gateway's own, so
//! that the upstream's span is a child of the gateway's; a request with
//! none (or a malformed one) starts a new trace. `tracestate` is passed on
//! unchanged with a valid `traceparent`.
//!
//! Only version `00` is written; a later version's first four fields are
//! read, as the W3C recommendation asks. The gateway's span ([`Span`]) is
//! exported by [`crate::otlp`] when it is configured.

use rmcp::model::MetaObject;
use serde_json::Value;

/// The `_meta` keys (and HTTP headers) of W3C trace context.
pub const TRACEPARENT: &str = "traceparent";
pub const TRACESTATE: &str = "tracestate";

/// A parsed `traceparent`: `00-<trace id>-<parent id>-<flags>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceParent {
    /// 32 lower-case hex digits, not all zero.
    pub trace_id: String,
    /// 16 lower-case hex digits, not all zero.
    pub parent_id: String,
    /// 2 hex digits.
    pub flags: String,
}

impl TraceParent {
    /// Reads a `traceparent` value; `None` when it is malformed.
    pub fn parse(value: &str) -> Option<Self> {
        let mut parts = value.trim().split('-');
        let version = parts.next()?;
        let trace_id = parts.next()?;
        let parent_id = parts.next()?;
        let flags = parts.next()?;
        let hex = |part: &str, len: usize| {
            part.len() == len
                && part
                    .bytes()
                    .all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'))
        };
        let valid = hex(version, 2)
            && version != "ff"
            && (version != "00" || parts.next().is_none())
            && hex(trace_id, 32)
            && trace_id.bytes().any(|byte| byte != b'0')
            && hex(parent_id, 16)
            && parent_id.bytes().any(|byte| byte != b'0')
            && hex(flags, 2);
        valid.then(|| Self {
            trace_id: trace_id.to_owned(),
            parent_id: parent_id.to_owned(),
            flags: flags.to_owned(),
        })
    }

    /// A new trace, sampled.
    pub fn new_trace() -> Self {
        Self {
            trace_id: format!("{:032x}", rand::random::<u128>().max(1)),
            parent_id: span_id(),
            flags: "01".to_owned(),
        }
    }

    /// The same trace, the gateway's new span as the parent.
    pub fn child(&self) -> Self {
        Self {
            trace_id: self.trace_id.clone(),
            parent_id: span_id(),
            flags: self.flags.clone(),
        }
    }

    /// As written in `_meta` or a header.
    pub fn header(&self) -> String {
        format!("00-{}-{}-{}", self.trace_id, self.parent_id, self.flags)
    }
}

fn span_id() -> String {
    format!("{:016x}", rand::random::<u64>().max(1))
}

/// The gateway's span of one request: the ids it sent upstream, and the
/// client's span it is a child of (none when the request started a
/// trace).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    pub trace_id: String,
    pub span_id: String,
    pub parent_id: Option<String>,
    pub sampled: bool,
}

impl Span {
    fn of(sent: &TraceParent, parent_id: Option<String>) -> Self {
        Self {
            trace_id: sent.trace_id.clone(),
            span_id: sent.parent_id.clone(),
            parent_id,
            sampled: u8::from_str_radix(&sent.flags, 16).is_ok_and(|flags| flags & 1 == 1),
        }
    }
}

/// The `_meta` to send upstream for a request whose own `_meta` is
/// `meta` and whose HTTP headers are `headers` (when it came over HTTP),
/// and the gateway's span that `_meta` names.
pub fn upstream_meta(meta: &MetaObject, headers: Option<&http::HeaderMap>) -> (MetaObject, Span) {
    let header = |name: &str| {
        headers
            .and_then(|headers| headers.get(name))
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned)
    };
    let from_meta = |name: &str| meta.0.get(name).and_then(Value::as_str).map(str::to_owned);
    let (inbound, state) = match from_meta(TRACEPARENT) {
        Some(parent) => (Some(parent), from_meta(TRACESTATE)),
        None => (header(TRACEPARENT), header(TRACESTATE)),
    };
    let parsed = inbound.as_deref().and_then(TraceParent::parse);
    let mut out = MetaObject::new();
    let span = match parsed {
        Some(parent) => {
            let sent = parent.child();
            out.0
                .insert(TRACEPARENT.to_owned(), Value::String(sent.header()));
            if let Some(state) = state {
                out.0.insert(TRACESTATE.to_owned(), Value::String(state));
            }
            Span::of(&sent, Some(parent.parent_id))
        }
        None => {
            let sent = TraceParent::new_trace();
            out.0
                .insert(TRACEPARENT.to_owned(), Value::String(sent.header()));
            Span::of(&sent, None)
        }
    };
    (out, span)
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly on a missing value")]
mod tests {
    use super::*;

    const GIVEN: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_valid_traceparent_is_read_and_bad_ones_are_not() {
        let parsed = TraceParent::parse(GIVEN).unwrap();
        assert_eq!(parsed.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(parsed.header(), GIVEN);
        for bad in [
            "",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
        ] {
            assert_eq!(TraceParent::parse(bad), None, "{bad}");
        }
        // A later version may add fields.
        assert!(
            TraceParent::parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x")
                .is_some()
        );
    }

    #[test]
    fn the_upstream_gets_a_child_span_of_the_same_trace() {
        let mut meta = MetaObject::new();
        meta.0.insert(TRACEPARENT.to_owned(), GIVEN.into());
        meta.0.insert(TRACESTATE.to_owned(), "vendor=1".into());
        let (out, span) = upstream_meta(&meta, None);
        let sent = TraceParent::parse(out.0[TRACEPARENT].as_str().unwrap()).unwrap();
        assert_eq!(sent.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_ne!(sent.parent_id, "00f067aa0ba902b7");
        assert_eq!(out.0[TRACESTATE], "vendor=1");
        // The gateway's span is the one the upstream was told of, a child
        // of the client's.
        assert_eq!(
            span,
            Span {
                trace_id: sent.trace_id,
                span_id: sent.parent_id,
                parent_id: Some("00f067aa0ba902b7".to_owned()),
                sampled: true,
            }
        );
    }

    #[test]
    fn the_header_is_used_when_meta_has_none_and_a_trace_starts_when_neither_has() {
        let mut headers = http::HeaderMap::new();
        headers.insert(TRACEPARENT, http::HeaderValue::from_static(GIVEN));
        let (out, _) = upstream_meta(&MetaObject::new(), Some(&headers));
        let sent = TraceParent::parse(out.0[TRACEPARENT].as_str().unwrap()).unwrap();
        assert_eq!(sent.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
        let (fresh, span) = upstream_meta(&MetaObject::new(), None);
        let fresh = TraceParent::parse(fresh.0[TRACEPARENT].as_str().unwrap()).unwrap();
        assert_ne!(fresh.trace_id, sent.trace_id);
        assert_eq!(span.parent_id, None, "a new trace has no parent span");
    }
}
