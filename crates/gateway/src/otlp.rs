//! The gateway's spans, exported over OTLP/HTTP (protobuf) when `otlp` is
//! configured, so operators see each decided request in the tracing
//! system they already run.
//!
//! One span per request the gateway decides (a tool call, a prompt, a
//! resource read), ended when its answer is: named after the method and
//! the federated name, carrying the decision, the rule, the outcome and
//! the identity's subject. Its ids are those [`crate::tracecontext`] sent
//! upstream, so the upstream's own span is this one's child and this one
//! the client's.
//!
//! A span is encoded when it ends (the few OTLP messages a span needs are
//! written here by hand, [`protobuf`]: the OpenTelemetry SDK, its exporter
//! and prost cost a tenth of a cold build for this one message) and queued;
//! a task of its own posts what is queued every second, at most
//! [`BATCH_SPANS`] a request, with nexo's one HTTP client (so `--cacert`
//! reaches the collector too). A collector that is down costs dropped
//! spans, said once in the log when exports start failing and once when
//! they work again, never a request; a queue that fills (a collector that
//! cannot keep up) drops the newest spans and counts them.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use tokio::sync::Notify;

use crate::settings::OtlpSettings;
use crate::tracecontext::Span;

/// The longest one export may take.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a span waits to be sent with others.
const BATCH_DELAY: Duration = Duration::from_secs(1);
/// The most spans one export carries (the SDK's default too).
pub const BATCH_SPANS: usize = 512;
/// The most spans waiting to be sent; beyond it new ones are dropped.
const QUEUE_SPANS: usize = 4 * BATCH_SPANS;

/// Where the gateway's spans go.
pub struct Spans {
    shared: Arc<Queue>,
    exporter: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl std::fmt::Debug for Spans {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("Spans").finish_non_exhaustive()
    }
}

/// Spans ended and not yet sent, and the exporter's wake-up.
#[derive(Default)]
struct Queue {
    pending: Mutex<Pending>,
    /// Rung on shutdown, so the last batch goes at once.
    closing: Notify,
}

#[derive(Default)]
struct Pending {
    /// Each one an encoded OTLP `Span` message.
    spans: Vec<Vec<u8>>,
    /// Dropped because the queue was full, since the last export.
    dropped: u64,
    closed: bool,
}

/// One request's span, as ended.
pub struct Finished<'a> {
    pub span: &'a Span,
    /// `tools/call utils__echo`, say.
    pub name: String,
    pub started: SystemTime,
    pub ended: SystemTime,
    pub attributes: Vec<Attribute>,
    /// Why the request failed or was refused; `None` when it was answered.
    pub error: Option<String>,
}

/// A span's attribute: an OpenTelemetry semantic-convention key and its value.
#[derive(Debug, Clone, PartialEq)]
pub struct Attribute {
    pub key: &'static str,
    pub value: AttributeValue,
}

#[derive(Debug, Clone, PartialEq)]
pub enum AttributeValue {
    Text(String),
    Float(f64),
}

impl Attribute {
    pub fn text(key: &'static str, value: impl Into<String>) -> Self {
        Self {
            key,
            value: AttributeValue::Text(value.into()),
        }
    }

    pub fn float(key: &'static str, value: f64) -> Self {
        Self {
            key,
            value: AttributeValue::Float(value),
        }
    }
}

/// Where spans are posted and what every export says of its sender.
struct Destination {
    url: String,
    headers: reqwest::header::HeaderMap,
    http: reqwest::Client,
    /// The `ResourceSpans` fields before the spans: the resource (its
    /// `service.name`) and the scope (nexo-gateway and its version).
    resource: Vec<u8>,
    scope: Vec<u8>,
}

impl Spans {
    /// An exporter to `settings.endpoint` (its `/v1/traces`), run on the
    /// current tokio runtime.
    pub fn new(settings: &OtlpSettings) -> Result<Self, String> {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| "the OTLP exporter needs a tokio runtime to run on".to_owned())?;
        let mut headers = reqwest::header::HeaderMap::new();
        for (name, value) in &settings.headers {
            let name = reqwest::header::HeaderName::try_from(name.as_str())
                .map_err(|_| format!("`otlp.headers` has `{name}`, which is not a header name"))?;
            let mut value = reqwest::header::HeaderValue::try_from(value.expose())
                .map_err(|_| format!("`otlp.headers.{name}` is not a valid header value"))?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        headers.insert(
            reqwest::header::CONTENT_TYPE,
            reqwest::header::HeaderValue::from_static("application/x-protobuf"),
        );
        let http = nexo_client::http::client_builder(EXPORT_TIMEOUT)
            .timeout(EXPORT_TIMEOUT)
            .build()
            .map_err(|error| format!("the OTLP exporter's HTTP client cannot be built: {error}"))?;
        let destination = Destination {
            url: settings.traces_url(),
            headers,
            http,
            resource: protobuf::resource(&settings.service_name),
            scope: protobuf::scope("nexo-gateway", env!("CARGO_PKG_VERSION")),
        };
        let shared = Arc::new(Queue::default());
        let exporter = runtime.spawn(export_until_closed(Arc::clone(&shared), destination));
        Ok(Self {
            shared,
            exporter: Mutex::new(Some(exporter)),
        })
    }

    /// Queues `finished` (it is sent with the next batch).
    pub fn record(&self, finished: Finished<'_>) {
        let Some(encoded) = protobuf::span(&finished) else {
            return;
        };
        let mut pending = self
            .shared
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if pending.closed || pending.spans.len() >= QUEUE_SPANS {
            pending.dropped += 1;
        } else {
            pending.spans.push(encoded);
        }
    }

    /// Sends what is waiting (within the export time limit) and stops the
    /// exporter.
    pub async fn shutdown(&self) {
        self.shared
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .closed = true;
        self.shared.closing.notify_one();
        let exporter = self
            .exporter
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(exporter) = exporter {
            // The last export has its own time limit; this one covers a
            // collector that accepts the connection and never answers.
            if tokio::time::timeout(EXPORT_TIMEOUT * 2, exporter)
                .await
                .is_err()
            {
                tracing::warn!("the OTLP exporter did not finish its last export in time");
            }
        }
    }
}

/// Posts the queue every [`BATCH_DELAY`] until [`Spans::shutdown`], then
/// once more.
async fn export_until_closed(queue: Arc<Queue>, destination: Destination) {
    let mut failing = false;
    loop {
        tokio::select! {
            () = tokio::time::sleep(BATCH_DELAY) => {}
            () = queue.closing.notified() => {}
        }
        let (spans, dropped, closed) = {
            let mut pending = queue.pending.lock().unwrap_or_else(PoisonError::into_inner);
            (
                std::mem::take(&mut pending.spans),
                std::mem::take(&mut pending.dropped),
                pending.closed,
            )
        };
        if dropped > 0 {
            tracing::warn!(
                "{dropped} span(s) dropped: the OTLP exporter's queue of {QUEUE_SPANS} was full"
            );
        }
        for batch in spans.chunks(BATCH_SPANS) {
            let outcome = destination.post(batch).await;
            match (outcome, failing) {
                (Ok(()), true) => {
                    failing = false;
                    tracing::info!("spans reach the OTLP collector again");
                }
                (Err(error), false) => {
                    failing = true;
                    tracing::warn!(
                        "spans are dropped while the OTLP collector cannot take them: {error}"
                    );
                }
                (Err(error), true) => tracing::debug!("OTLP export failed: {error}"),
                (Ok(()), false) => {}
            }
        }
        if closed {
            return;
        }
    }
}

impl Destination {
    async fn post(&self, spans: &[Vec<u8>]) -> Result<(), String> {
        let body = protobuf::export_request(&self.resource, &self.scope, spans);
        let response = self
            .http
            .post(&self.url)
            .headers(self.headers.clone())
            .body(body)
            .send()
            .await
            .map_err(|error| format!("{} {error}", self.url))?;
        let status = response.status();
        if status.is_success() {
            Ok(())
        } else {
            Err(format!("{} answered {status}", self.url))
        }
    }
}

/// The OTLP trace messages (opentelemetry-proto's `trace/v1`,
/// `collector/trace/v1`, `common/v1`, `resource/v1`), as far as the
/// gateway's spans fill them, in protobuf's wire format. A nested message
/// is written whole before its length.
mod protobuf {
    use std::time::{SystemTime, UNIX_EPOCH};

    use super::{Attribute, AttributeValue, Finished};

    const VARINT: u32 = 0;
    const FIXED64: u32 = 1;
    const LENGTH_DELIMITED: u32 = 2;
    const FIXED32: u32 = 5;

    /// `Span.kind`: SPAN_KIND_SERVER.
    const SPAN_KIND_SERVER: u64 = 2;
    /// `Status.code`.
    const STATUS_CODE_OK: u64 = 1;
    const STATUS_CODE_ERROR: u64 = 2;
    /// `Span.flags` beyond the W3C trace flags: whether the parent is
    /// known to be remote, and that it is (SPAN_FLAGS_CONTEXT_*_MASK).
    const HAS_IS_REMOTE: u32 = 0x100;
    const IS_REMOTE: u32 = 0x200;

    fn key(out: &mut Vec<u8>, field: u32, wire_type: u32) {
        varint(out, u64::from((field << 3) | wire_type));
    }

    fn varint(out: &mut Vec<u8>, mut value: u64) {
        while value >= 0x80 {
            out.push((value as u8 & 0x7f) | 0x80);
            value >>= 7;
        }
        out.push(value as u8);
    }

    fn bytes(out: &mut Vec<u8>, field: u32, value: &[u8]) {
        key(out, field, LENGTH_DELIMITED);
        varint(out, value.len() as u64);
        out.extend_from_slice(value);
    }

    fn text(out: &mut Vec<u8>, field: u32, value: &str) {
        if !value.is_empty() {
            bytes(out, field, value.as_bytes());
        }
    }

    fn unsigned(out: &mut Vec<u8>, field: u32, value: u64) {
        if value != 0 {
            key(out, field, VARINT);
            varint(out, value);
        }
    }

    fn fixed64(out: &mut Vec<u8>, field: u32, value: u64) {
        key(out, field, FIXED64);
        out.extend_from_slice(&value.to_le_bytes());
    }

    fn fixed32(out: &mut Vec<u8>, field: u32, value: u32) {
        key(out, field, FIXED32);
        out.extend_from_slice(&value.to_le_bytes());
    }

    /// A `KeyValue`: its key and an `AnyValue` (`string_value` = 1,
    /// `double_value` = 4).
    fn attribute(attribute: &Attribute) -> Vec<u8> {
        let mut value = Vec::new();
        match &attribute.value {
            AttributeValue::Text(text) => bytes(&mut value, 1, text.as_bytes()),
            AttributeValue::Float(number) => fixed64(&mut value, 4, number.to_bits()),
        }
        let mut pair = Vec::new();
        text(&mut pair, 1, attribute.key);
        bytes(&mut pair, 2, &value);
        pair
    }

    /// `ResourceSpans.resource`: a `Resource` with `service.name`.
    pub fn resource(service_name: &str) -> Vec<u8> {
        let mut resource = Vec::new();
        bytes(
            &mut resource,
            1,
            &attribute(&Attribute::text("service.name", service_name)),
        );
        resource
    }

    /// `ScopeSpans.scope`: an `InstrumentationScope`.
    pub fn scope(name: &str, version: &str) -> Vec<u8> {
        let mut scope = Vec::new();
        text(&mut scope, 1, name);
        text(&mut scope, 2, version);
        scope
    }

    fn unix_nanos(time: SystemTime) -> u64 {
        time.duration_since(UNIX_EPOCH).map_or(0, |since| {
            u64::try_from(since.as_nanos()).unwrap_or(u64::MAX)
        })
    }

    fn hex_id<const N: usize>(hex: &str) -> Option<[u8; N]> {
        if hex.len() != 2 * N {
            return None;
        }
        let mut id = [0u8; N];
        for (byte, pair) in id.iter_mut().zip(hex.as_bytes().chunks(2)) {
            let pair = std::str::from_utf8(pair).ok()?;
            *byte = u8::from_str_radix(pair, 16).ok()?;
        }
        // All zeros is the invalid id of W3C trace context.
        id.iter().any(|&byte| byte != 0).then_some(id)
    }

    /// A `Span` message; `None` when the span's ids are not valid trace
    /// context (then there is nothing it could be the child of).
    pub fn span(finished: &Finished<'_>) -> Option<Vec<u8>> {
        let trace_id = hex_id::<16>(&finished.span.trace_id)?;
        let span_id = hex_id::<8>(&finished.span.span_id)?;
        let parent = finished.span.parent_id.as_deref().and_then(hex_id::<8>);
        let mut span = Vec::with_capacity(256);
        bytes(&mut span, 1, &trace_id);
        bytes(&mut span, 2, &span_id);
        if let Some(parent) = parent {
            bytes(&mut span, 4, &parent);
        }
        text(&mut span, 5, &finished.name);
        unsigned(&mut span, 6, SPAN_KIND_SERVER);
        fixed64(&mut span, 7, unix_nanos(finished.started));
        fixed64(&mut span, 8, unix_nanos(finished.ended));
        for each in &finished.attributes {
            bytes(&mut span, 9, &attribute(each));
        }
        let mut status = Vec::new();
        match &finished.error {
            Some(message) => {
                text(&mut status, 2, message);
                unsigned(&mut status, 3, STATUS_CODE_ERROR);
            }
            None => unsigned(&mut status, 3, STATUS_CODE_OK),
        }
        bytes(&mut span, 15, &status);
        let trace_flags = u32::from(finished.span.sampled);
        let remote = if parent.is_some() { IS_REMOTE } else { 0 };
        fixed32(&mut span, 16, trace_flags | HAS_IS_REMOTE | remote);
        Some(span)
    }

    /// An `ExportTraceServiceRequest` of one `ResourceSpans` with one
    /// `ScopeSpans` holding `spans`.
    pub fn export_request(resource: &[u8], scope: &[u8], spans: &[Vec<u8>]) -> Vec<u8> {
        let mut scope_spans = Vec::with_capacity(
            scope.len() + spans.iter().map(Vec::len).sum::<usize>() + 8 * spans.len(),
        );
        bytes(&mut scope_spans, 1, scope);
        for span in spans {
            bytes(&mut scope_spans, 2, span);
        }
        let mut resource_spans = Vec::with_capacity(resource.len() + scope_spans.len() + 16);
        bytes(&mut resource_spans, 1, resource);
        bytes(&mut resource_spans, 2, &scope_spans);
        let mut request = Vec::with_capacity(resource_spans.len() + 8);
        bytes(&mut request, 1, &resource_spans);
        request
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn varints_are_little_endian_groups_of_seven_bits() {
            let mut out = Vec::new();
            varint(&mut out, 1);
            varint(&mut out, 300);
            varint(&mut out, u64::MAX);
            assert_eq!(
                out,
                [
                    1, 0xac, 0x02, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01
                ]
            );
        }

        #[test]
        fn ids_are_hex_of_their_length_and_not_all_zeros() {
            assert_eq!(hex_id::<2>("0aFf"), Some([0x0a, 0xff]));
            assert_eq!(hex_id::<2>("0a"), None);
            assert_eq!(hex_id::<2>("0000"), None);
            assert_eq!(hex_id::<2>("0g00"), None);
            assert_eq!(hex_id::<2>("é00"), None);
        }
    }
}
