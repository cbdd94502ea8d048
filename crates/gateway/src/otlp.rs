//! The gateway's spans, exported over OTLP/HTTP (protobuf) when `otlp` is
//! configured, so operators see each decided request in the tracing
//! system they already run.
//!
//! One span per request the gateway decides (a tool call, a prompt, a
//! resource read), ended when its answer is: named after the method and
//! the federated name, carrying the decision, the rule, the outcome and
//! the identity's subject. Its ids are those [`crate::tracecontext`] sent
//! upstream, so the upstream's own span is this one's child and this one
//! the client's. Spans are handed to the OpenTelemetry SDK's batch
//! processor, which exports them from a thread of its own every second; a
//! collector that is down costs dropped spans (logged by the SDK), never
//! a request.

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState,
};
use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, SpanData, SpanEvents, SpanLinks, SpanProcessor,
};

use crate::settings::OtlpSettings;
use crate::tracecontext::Span;

/// The longest one export may take.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a span waits to be sent with others.
const BATCH_DELAY: Duration = Duration::from_secs(1);

/// Where the gateway's spans go.
pub struct Spans {
    processor: BatchSpanProcessor,
    scope: InstrumentationScope,
}

impl std::fmt::Debug for Spans {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("Spans").finish_non_exhaustive()
    }
}

/// One request's span, as ended.
pub struct Finished<'a> {
    pub span: &'a Span,
    /// `tools/call utils__echo`, say.
    pub name: String,
    pub started: SystemTime,
    pub ended: SystemTime,
    pub attributes: Vec<KeyValue>,
    /// Why the request failed or was refused; `None` when it was answered.
    pub error: Option<String>,
}

impl Spans {
    /// An exporter to `settings.endpoint` (its `/v1/traces`).
    pub fn new(settings: &OtlpSettings) -> Result<Self, String> {
        nexo_client::http::install_tls_provider();
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_endpoint(settings.traces_url())
            .with_headers(
                settings
                    .headers
                    .iter()
                    .map(|(name, value)| (name.clone(), value.expose().to_owned()))
                    .collect::<HashMap<_, _>>(),
            )
            .with_timeout(EXPORT_TIMEOUT)
            .build()
            .map_err(|error| format!("the OTLP exporter cannot be built: {error}"))?;
        let mut processor = BatchSpanProcessor::builder(exporter)
            .with_batch_config(
                BatchConfigBuilder::default()
                    .with_scheduled_delay(BATCH_DELAY)
                    .build(),
            )
            .build();
        processor.set_resource(
            &Resource::builder_empty()
                .with_service_name(settings.service_name.clone())
                .build(),
        );
        let scope = InstrumentationScope::builder("nexo-gateway")
            .with_version(env!("CARGO_PKG_VERSION"))
            .build();
        Ok(Self { processor, scope })
    }

    /// Hands `finished` to the exporter (it is sent with the next batch).
    pub fn record(&self, finished: Finished<'_>) {
        let Some(context) = span_context(finished.span) else {
            return;
        };
        let parent = finished
            .span
            .parent_id
            .as_deref()
            .and_then(|id| SpanId::from_hex(id).ok())
            .unwrap_or(SpanId::INVALID);
        let status = match finished.error {
            Some(description) => Status::error(description),
            None => Status::Ok,
        };
        self.processor.on_end(SpanData {
            span_context: context,
            parent_span_id: parent,
            parent_span_is_remote: parent != SpanId::INVALID,
            span_kind: SpanKind::Server,
            name: finished.name.into(),
            start_time: finished.started,
            end_time: finished.ended,
            attributes: finished.attributes,
            dropped_attributes_count: 0,
            events: SpanEvents::default(),
            links: SpanLinks::default(),
            status,
            instrumentation_scope: self.scope.clone(),
        });
    }

    /// Sends what is waiting and stops the exporter's thread.
    pub fn shutdown(&self) {
        if let Err(error) = self.processor.shutdown() {
            tracing::warn!("the OTLP exporter did not shut down cleanly: {error}");
        }
    }
}

fn span_context(span: &Span) -> Option<SpanContext> {
    let trace_id = TraceId::from_hex(&span.trace_id).ok()?;
    let span_id = SpanId::from_hex(&span.span_id).ok()?;
    let flags = if span.sampled {
        TraceFlags::SAMPLED
    } else {
        TraceFlags::default()
    };
    Some(SpanContext::new(
        trace_id,
        span_id,
        flags,
        false,
        TraceState::default(),
    ))
}
