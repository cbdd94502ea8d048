//! Reading a request body within the `--max-body` limit, and refusing one
//! over it (413) in a way every client can read, shared by `/mcp` and the
//! legacy `/messages` endpoint.
//!
//! A client that sends a large body usually writes all of it before it reads
//! anything. If the server answered 413 and closed the connection while
//! bytes were still arriving, the kernel would reset the connection and the
//! client would see a broken pipe or a reset instead of the answer (Python's
//! urllib and requests do; curl, which reads while it writes, does not). So,
//! as nginx does, the rest of an oversized body is read and thrown away, up
//! to [`DRAIN_BYTES`] and [`DRAIN_TIME`], before the answer goes out; a
//! client that asked for `100 Continue` has sent nothing yet and is answered
//! at once. While the body goes by, its request id is looked for
//! ([`crate::id_scan`]), so that the 413's JSON-RPC error names the request.

use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http_body_util::BodyExt;
use serde_json::value::RawValue;

use crate::id_scan::IdScanner;
use crate::inbound::{INVALID_REQUEST, Rejection};

/// The most of an oversized body read and discarded before answering 413.
pub const DRAIN_BYTES: usize = 64 * 1024 * 1024;
/// The longest an oversized body is read before answering 413.
pub const DRAIN_TIME: Duration = Duration::from_secs(10);

/// Reads a request body of at most `limit` bytes; a longer one (declared or
/// actual) is refused with 413, an unreadable one with 400.
pub async fn read_body(
    headers: &HeaderMap,
    mut body: Body,
    limit: usize,
) -> Result<Bytes, Response> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|length| length.to_str().ok()?.parse::<usize>().ok());
    if declared.is_some_and(|length| length > limit) {
        return Err(refuse(headers, body, IdScanner::new(), 0, limit).await);
    }
    // Most bodies arrive in one chunk, returned as it is; `rest` allocates
    // only for a second one.
    let mut first: Option<Bytes> = None;
    let mut rest: Vec<Bytes> = Vec::new();
    let mut length = 0;
    while let Some(frame) = body.frame().await {
        let data = match frame {
            Ok(frame) => match frame.into_data() {
                Ok(data) => data,
                Err(_trailers) => continue,
            },
            Err(error) => {
                return Err((
                    StatusCode::BAD_REQUEST,
                    format!("Bad Request: cannot read the body: {error}"),
                )
                    .into_response());
            }
        };
        length += data.len();
        if length > limit {
            let mut scanner = IdScanner::new();
            for chunk in first.iter().chain(&rest).chain([&data]) {
                scanner.feed(chunk);
            }
            return Err(refuse(headers, body, scanner, length, limit).await);
        }
        match first {
            None => first = Some(data),
            Some(_) => rest.push(data),
        }
    }
    let first = first.unwrap_or_default();
    if rest.is_empty() {
        return Ok(first);
    }
    let mut joined = Vec::with_capacity(length);
    for chunk in std::iter::once(&first).chain(&rest) {
        joined.extend_from_slice(chunk);
    }
    Ok(Bytes::from(joined))
}

/// The 413 for a body over `limit`, of which `read` bytes were read (and
/// fed to `scanner`), once the rest has been drained within the bounds.
async fn refuse(
    headers: &HeaderMap,
    mut body: Body,
    mut scanner: IdScanner,
    mut read: usize,
    limit: usize,
) -> Response {
    let awaits_continue = headers
        .get(header::EXPECT)
        .is_some_and(|expect| expect.as_bytes().eq_ignore_ascii_case(b"100-continue"));
    let mut drained = false;
    if !(awaits_continue && read == 0) {
        let drain = async {
            while read <= DRAIN_BYTES {
                match body.frame().await {
                    None => return true,
                    Some(Err(_)) => return false,
                    Some(Ok(frame)) => {
                        if let Ok(data) = frame.into_data() {
                            read += data.len();
                            scanner.feed(&data);
                        }
                    }
                }
            }
            false
        };
        drained = tokio::time::timeout(DRAIN_TIME, drain)
            .await
            .unwrap_or(false);
    }
    let mut response = too_large(limit, scanner.finish());
    if !drained {
        // What is left unread cannot be skipped: the connection ends here.
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

fn too_large(limit: usize, id: Option<Box<RawValue>>) -> Response {
    json_rpc_error(
        StatusCode::PAYLOAD_TOO_LARGE,
        &Rejection {
            code: INVALID_REQUEST,
            message: format!(
                "request body exceeds the limit of {limit} bytes; the server's `--max-body` sets it"
            ),
            id,
        },
    )
}

/// A JSON-RPC error as the whole of an HTTP response with `status`.
pub fn json_rpc_error(status: StatusCode, rejection: &Rejection) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        rejection.to_response(),
    )
        .into_response()
}
