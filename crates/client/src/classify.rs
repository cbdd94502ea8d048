//! Sorting a failure into what it means to a person: unreachable, a
//! timeout, a refused authorization or a peer breaking the protocol, with
//! a hint that fits how the server is reached ([`Via`]). Sorted by rmcp's,
//! reqwest's and our own error types, walking the chain of causes
//! ([`cause`] steps into rmcp's wrappers, which hide theirs); no message
//! text is matched here (HTTP statuses come from the responses themselves,
//! see `streamable`).

use rmcp::service::ServiceError;

use crate::child::StrayOutput;
use crate::error::{ClientError, SseError};

pub(crate) fn spawn_error(target: &str, program: &str, error: &std::io::Error) -> ClientError {
    let hint = if error.kind() == std::io::ErrorKind::NotFound {
        format!("`{program}` was not found; check the command and your PATH")
    } else {
        format!("check that `{program}` can be run")
    };
    ClientError::CannotStart {
        target: target.to_owned(),
        program: program.to_owned(),
        detail: error.to_string(),
        hint: hint.into(),
    }
}

/// A stdio failure explained by what the child wrote on stdout that was
/// not JSON-RPC: a server that prints its banner or its logs there breaks
/// the protocol, and would otherwise look merely slow or gone.
pub(crate) fn stray_output(error: ClientError, program: &str, stray: &StrayOutput) -> ClientError {
    let Some((count, first)) = stray.seen() else {
        return error;
    };
    let target = match &error {
        ClientError::Timeout { target, .. }
        | ClientError::Unreachable { target, .. }
        | ClientError::Protocol { target, .. } => target.clone(),
        _ => return error,
    };
    let lines = if count == 1 { "a line" } else { "lines" };
    ClientError::Protocol {
        target,
        detail: format!(
            "`{program}` wrote {lines} on stdout that {are} not JSON-RPC ({count} in all; the \
             first: `{first}`)",
            are = if count == 1 { "is" } else { "are" },
        ),
        hint: Via::Stdio(program).protocol_hint().into(),
        stderr: Vec::new(),
    }
}

/// The innermost message of an error's chain: what actually failed
/// (`connection refused`, rather than the request that met it).
pub(crate) fn innermost(error: &(dyn std::error::Error + 'static)) -> String {
    chain(error).pop().unwrap_or_else(|| error.to_string())
}

/// Every message in an error's chain, outermost first. rmcp's transport
/// wrappers are stepped through rather than shown: their messages name Rust
/// types (`Transport [rmcp::transport::worker::WorkerTransport<...>]`), which
/// say nothing to a person; what they wrap does.
fn chain(error: &(dyn std::error::Error + 'static)) -> Vec<String> {
    use rmcp::service::ClientInitializeError;
    let mut messages = Vec::new();
    let mut current = Some(error);
    while let Some(error) = current {
        let wrapper = matches!(
            error.downcast_ref::<ClientInitializeError>(),
            Some(
                ClientInitializeError::TransportError { .. }
                    | ClientInitializeError::LegacyFallbackFailed { .. }
            )
        ) || matches!(
            error.downcast_ref::<ServiceError>(),
            Some(ServiceError::TransportSend(_))
        );
        let message = error.to_string();
        if !wrapper && !messages.iter().any(|seen: &String| seen.contains(&message)) {
            messages.push(message);
        }
        current = cause(error);
    }
    messages
}

/// The next error in the chain. rmcp's transport-error wrappers keep their
/// cause in a field without exposing it as `source()`, so step into them.
fn cause<'a>(
    error: &'a (dyn std::error::Error + 'static),
) -> Option<&'a (dyn std::error::Error + 'static)> {
    use rmcp::service::ClientInitializeError;
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    match error.downcast_ref::<ClientInitializeError>() {
        Some(ClientInitializeError::TransportError { error, .. }) => {
            return Some(error.error.as_ref());
        }
        // `--protocol auto`: what stopped the handshake is the fallback's failure.
        Some(ClientInitializeError::LegacyFallbackFailed { fallback, .. }) => {
            return Some(fallback.as_ref());
        }
        _ => {}
    }
    if let Some(ServiceError::TransportSend(error)) = error.downcast_ref::<ServiceError>() {
        return Some(error.error.as_ref());
    }
    if let Some(StreamableHttpError::Client(request)) =
        error.downcast_ref::<StreamableHttpError<reqwest::Error>>()
    {
        return Some(request);
    }
    error.source()
}

/// How a server is reached, for what a failure means and what to try.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Via<'a> {
    Http,
    /// A child process running this program.
    Stdio(&'a str),
    /// A server inside this process.
    InProcess,
}

impl Via<'_> {
    pub(crate) fn protocol_hint(self) -> String {
        match self {
            Via::Http => "run with `RUST_LOG=debug` to see the exchange; check the URL, and pick \
                          the transport with `--transport http` or `--transport sse`"
                .into(),
            Via::Stdio(program) => format!(
                "run with `RUST_LOG=debug` to see the exchange; `{program}` must write only \
                 JSON-RPC messages on stdout (its logs belong on stderr)"
            ),
            Via::InProcess => "this is a bug in nexo's bundled server; please report it with \
                               the command that shows it"
                .into(),
        }
    }

    fn closed(self, target: &str, detail: String) -> ClientError {
        let hint = match self {
            Via::Http => "the server closed the connection; check that it is still running".into(),
            Via::Stdio(program) => {
                format!("`{program}` exited or closed its stdio; run it by hand to see why")
            }
            Via::InProcess => "the bundled server stopped; this is a bug in nexo, please \
                               report it"
                .into(),
        };
        ClientError::Unreachable {
            target: target.to_owned(),
            detail,
            hint: hint.into(),
            stderr: Vec::new(),
        }
    }
}

/// Sorts a failed handshake into unreachable, unauthorized or protocol error.
pub(crate) fn classify(
    target: &str,
    via: Via<'_>,
    error: &(dyn std::error::Error + 'static),
) -> ClientError {
    let mut current = Some(error);
    while let Some(error) = current {
        if let Some(http) = error.downcast_ref::<rmcp::transport::streamable_http_client::StreamableHttpError<reqwest::Error>>() {
            use rmcp::transport::streamable_http_client::StreamableHttpError as E;
            match http {
                E::AuthRequired(_) | E::InsufficientScope(_) | E::Auth(_) => {
                    return ClientError::Unauthorized {
                        target: target.to_owned(),
                        detail: http.to_string(),
                    };
                }
                E::HttpStatus(status) if matches!(status.status, 401 | 403) => {
                    return ClientError::Unauthorized {
                        target: target.to_owned(),
                        detail: http.to_string(),
                    };
                }
                _ => {}
            }
        }
        if let Some(sse) = error.downcast_ref::<SseError>() {
            match sse {
                SseError::Status {
                    status: 401 | 403, ..
                } => {
                    return ClientError::Unauthorized {
                        target: target.to_owned(),
                        detail: sse.to_string(),
                    };
                }
                SseError::TimedOut(seconds) => {
                    return ClientError::Timeout {
                        target: target.to_owned(),
                        seconds: *seconds,
                    };
                }
                SseError::Silent(_) => {
                    return ClientError::Unreachable {
                        target: target.to_owned(),
                        detail: sse.to_string(),
                        hint: "a proxy between nexo and the server may be holding the stream \
                               back (buffering it): turn buffering off for this location \
                               (nginx: `proxy_buffering off;`, or have the server send \
                               `X-Accel-Buffering: no`); a server still starting needs a \
                               longer `--timeout`"
                            .into(),
                        stderr: Vec::new(),
                    };
                }
                SseError::Closed => {
                    return ClientError::Unreachable {
                        target: target.to_owned(),
                        detail: sse.to_string(),
                        hint: "the server's SSE stream dropped; check that the server is still running"
                            .into(),
                        stderr: Vec::new(),
                    };
                }
                _ => {}
            }
        }
        if let Some(rmcp::service::ClientInitializeError::ConnectionClosed(_)) =
            error.downcast_ref::<rmcp::service::ClientInitializeError>()
        {
            return via.closed(target, "the connection closed during the handshake".into());
        }
        if let Some(tls) = tls_failure(error) {
            let (detail, hint) = tls_explained(tls);
            return ClientError::Unreachable {
                target: target.to_owned(),
                detail: format!("the TLS handshake failed: {detail}"),
                hint: hint.into(),
                stderr: Vec::new(),
            };
        }
        if let Some(request) = error.downcast_ref::<reqwest::Error>()
            && (request.is_connect() || request.is_timeout())
        {
            return unreachable(target, error);
        }
        if let Some(io) = error.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind as K;
            // A child that exits at once: whether writing the first message
            // or reading its answer notices first is a matter of timing.
            if let Via::Stdio(_) = via
                && matches!(
                    io.kind(),
                    K::BrokenPipe | K::ConnectionReset | K::UnexpectedEof
                )
            {
                return via.closed(target, "the connection closed during the handshake".into());
            }
            if matches!(
                io.kind(),
                K::ConnectionRefused
                    | K::TimedOut
                    | K::NotFound
                    | K::HostUnreachable
                    | K::NetworkUnreachable
            ) {
                return unreachable(target, error);
            }
        }
        current = cause(error);
    }
    ClientError::Protocol {
        target: target.to_owned(),
        detail: chain(error).join(": "),
        hint: via.protocol_hint().into(),
        stderr: Vec::new(),
    }
}

/// The TLS error under a failed connection, if that is what failed:
/// rustls's own, anywhere in the chain; an `io::Error` (hyper nests two)
/// is looked into, since its `source` skips what it wraps.
pub(crate) fn tls_failure<'e>(
    error: &'e (dyn std::error::Error + 'static),
) -> Option<&'e rustls::Error> {
    let mut current = Some(error);
    while let Some(error) = current {
        if let Some(tls) = error.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        current = match error.downcast_ref::<std::io::Error>() {
            Some(io) => io
                .get_ref()
                .map(|inner| inner as &(dyn std::error::Error + 'static)),
            None => error.source(),
        };
    }
    None
}

/// What a TLS failure means, in words rather than rustls's type names, and
/// what to do about it.
pub(crate) fn tls_explained(error: &rustls::Error) -> (String, &'static str) {
    use rustls::CertificateError as C;
    const TRUST: &str = "a server whose certificate comes from a private authority needs that \
                         authority trusted: `--cacert ca.pem` (or `SSL_CERT_FILE=ca.pem`); a \
                         self-signed server's own certificate serves as well";
    const NAME: &str = "reach the server by one of the names its certificate holds, or give it \
                        a certificate for the name in the URL";
    const DATES: &str = "the server needs a certificate valid today; if the certificate is \
                         right, check this machine's clock";
    let certificate = |what: &str, hint| (format!("the server's certificate {what}"), hint);
    let date = |time: &rustls::pki_types::UnixTime| {
        i64::try_from(time.as_secs())
            .ok()
            .and_then(|seconds| jiff::Timestamp::from_second(seconds).ok())
            .map_or_else(|| "?".to_owned(), |time| time.to_string())
    };
    match error {
        rustls::Error::InvalidCertificate(problem) => match problem {
            C::UnknownIssuer => certificate(
                "is signed by an authority this machine does not trust",
                TRUST,
            ),
            C::NotValidForNameContext {
                expected,
                presented,
            } => {
                let held = if presented.is_empty() {
                    "no name at all".to_owned()
                } else {
                    presented
                        .iter()
                        .map(|name| format!("`{name}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                certificate(
                    &format!("is not for `{}`: it is for {held}", expected.to_str()),
                    NAME,
                )
            }
            C::NotValidForName => certificate("is not for this host name", NAME),
            C::ExpiredContext { time, not_after } => certificate(
                &format!("expired at {} (it is now {})", date(not_after), date(time)),
                DATES,
            ),
            C::Expired => certificate("has expired", DATES),
            C::NotValidYetContext { time, not_before } => certificate(
                &format!(
                    "is valid only from {} (it is now {})",
                    date(not_before),
                    date(time)
                ),
                DATES,
            ),
            C::NotValidYet => certificate("is not valid yet", DATES),
            C::Revoked => certificate("was revoked", TRUST),
            _ => certificate(
                "was refused (a self-signed one not named with `--cacert`, or one not meant \
                 for a TLS server)",
                TRUST,
            ),
        },
        rustls::Error::AlertReceived(alert) => (
            format!("the server ended it (TLS alert {})", u8::from(*alert)),
            "the server may want a client certificate, or a TLS version or cipher nexo does \
             not offer; check the server's TLS settings",
        ),
        _ => (
            "the server does not speak TLS on this port".to_owned(),
            "check the port; a server without TLS is reached with `http://`",
        ),
    }
}

fn unreachable(target: &str, error: &(dyn std::error::Error + 'static)) -> ClientError {
    ClientError::Unreachable {
        target: target.to_owned(),
        detail: chain(error).last().cloned().unwrap_or_default(),
        hint: "check that the server is running and the address is right".into(),
        stderr: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use nexo_hint::Hinted;
    use rmcp::model::ErrorData;
    use rmcp::service::ClientInitializeError as Init;
    use rmcp::transport::TokioChildProcess;

    use super::*;
    use crate::ErrorKind;

    fn kind(error: &Init) -> ErrorKind {
        classify("target", Via::Http, error).kind()
    }

    fn closed() -> Box<Init> {
        Box::new(Init::ConnectionClosed("initialize response".into()))
    }

    fn io(kind: std::io::ErrorKind) -> Init {
        Init::transport::<TokioChildProcess>(std::io::Error::from(kind), "send initialize request")
    }

    /// Issue 15, point 6: a failed handshake is sorted by rmcp's error types,
    /// not by the words of its messages.
    #[test]
    fn issue_15_handshake_failures_are_classified_by_type() {
        let legacy_server = || {
            Box::new(Init::JsonRpcError(ErrorData::method_not_found::<
                rmcp::model::DiscoverRequestMethod,
            >()))
        };
        let table = [
            (*closed(), ErrorKind::Unreachable),
            (
                Init::LegacyFallbackFailed {
                    discover: legacy_server(),
                    fallback: closed(),
                },
                ErrorKind::Unreachable,
            ),
            (
                Init::LegacyFallbackFailed {
                    discover: legacy_server(),
                    fallback: legacy_server(),
                },
                ErrorKind::Protocol,
            ),
            (
                io(std::io::ErrorKind::ConnectionRefused),
                ErrorKind::Unreachable,
            ),
            (io(std::io::ErrorKind::NotFound), ErrorKind::Unreachable),
            (*legacy_server(), ErrorKind::Protocol),
            (Init::ExpectedInitResponse(None), ErrorKind::Protocol),
        ];
        for (error, expected) in table {
            assert_eq!(kind(&error), expected, "{error:?}");
        }
    }

    /// Issue 15, point 9: no message a person sees names a Rust type.
    #[test]
    fn issue_15_messages_name_no_rust_types() {
        let errors = [
            io(std::io::ErrorKind::Other),
            Init::LegacyFallbackFailed {
                discover: closed(),
                fallback: Box::new(io(std::io::ErrorKind::InvalidData)),
            },
        ];
        for error in errors {
            for via in [Via::Http, Via::Stdio("server")] {
                let classified = classify("target", via, &error);
                let shown = format!("{classified} {}", classified.causes().join(" "));
                assert!(
                    !shown.contains("rmcp::") && !shown.contains("TokioChildProcess"),
                    "{shown}"
                );
            }
        }
    }
}
