//! What servers send a client, under a fuzzer (the targets in
//! `fuzz/fuzz_targets` call these; the committed corpora are replayed by
//! this module's tests):
//!
//! - [`sse`]: an SSE stream as a server sends it, read as the client reads
//!   a Streamable HTTP answer or a legacy HTTP+SSE stream. The events are
//!   the same however the bytes are split (a CRLF, a BOM or a multi-byte
//!   character cut between chunks included; the malformed lines the client
//!   skips may be reported differently); no event, however hostile,
//!   makes the legacy transport panic; and an `endpoint` event never moves
//!   the POSTs off the stream's origin, where the headers (`Authorization`
//!   among them) go.
//! - [`config`]: a configuration file (the `mcpServers` JSON, VS Code's
//!   `servers`, nexo's own settings) never panics the reader, and every
//!   error in it is placed: at a line and column of that file (1-based,
//!   within the text), or naming the file it could not read.

use bytes::Bytes;
use futures::StreamExt;
use url::Url;

use crate::config::{ConfigError, LoadRequest, Source, parse};
use crate::legacy_sse::{Incoming, interpret};

/// The events of `chunks`, as the client's SSE reader gives them (line by
/// line, [`crate::sse`]).
fn events(chunks: Vec<Bytes>) -> Vec<Result<sse_stream::Sse, String>> {
    let stream = futures::stream::iter(chunks.into_iter().map(Ok::<_, std::io::Error>));
    futures::executor::block_on(
        sse_stream::SseStream::from_bytes_stream(crate::sse::lines(stream))
            .map(|event| event.map_err(|error| error.to_string()))
            .collect(),
    )
}

/// One fuzz input: an SSE stream.
pub fn sse(data: &[u8]) {
    let whole = events(vec![Bytes::copy_from_slice(data)]);
    // Chunk sizes taken from the bytes themselves: 1 to 7.
    let mut chunks = Vec::new();
    let mut rest = data;
    let mut sizes = data.iter().rev().cycle();
    while !rest.is_empty() {
        let size = (usize::from(*sizes.next().unwrap_or(&0)) % 7 + 1).min(rest.len());
        let (chunk, tail) = rest.split_at(size);
        chunks.push(Bytes::copy_from_slice(chunk));
        rest = tail;
    }
    let chunked = events(chunks);
    // A malformed line is skipped by the client, whatever error the reader
    // gives for it: the events are what must not depend on the chunks.
    let shown = |events: &[Result<sse_stream::Sse, String>]| {
        format!("{:?}", events.iter().flatten().collect::<Vec<_>>())
    };
    assert_eq!(
        shown(&whole),
        shown(&chunked),
        "{:?}",
        String::from_utf8_lossy(data)
    );
    let Ok(stream) = Url::parse("https://mcp.example.com:8443/base/sse?x=1") else {
        return;
    };
    for event in whole.iter().flatten() {
        if let Ok(Incoming::Endpoint(endpoint)) = interpret(&stream, event) {
            assert_eq!(
                endpoint.url.origin(),
                stream.origin(),
                "{event:?} moved the POSTs to {}",
                endpoint.url
            );
        }
    }
}

/// One fuzz input: the text of a configuration file.
pub fn config(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let env = |name: &str| (name == "SET").then(|| "value".to_owned());
    let request = LoadRequest {
        explicit: Some("fuzz.json".into()),
        cwd: "/nonexistent/nexo-fuzz".into(),
        user_config_dir: None,
        home: Some("/home/fuzz".into()),
        env: &env,
        check_builtin: None,
    };
    match parse(&text, Source::Explicit("fuzz.json".into()), &request) {
        Ok(config) => {
            for server in &config.servers {
                let _ = server.spec.target();
            }
        }
        Err(ConfigError::Invalid {
            location, message, ..
        }) => {
            assert!(
                location.file.ends_with("fuzz.json"),
                "{location}: {message}"
            );
            let lines = text.lines().count().max(1);
            assert!(
                (1..=lines + 1).contains(&location.line) && location.column >= 1,
                "{location} is outside the file's {lines} lines: {message}"
            );
            assert!(!message.is_empty(), "{location}");
        }
        Err(ConfigError::Read { path, .. }) => {
            assert!(!path.as_os_str().is_empty());
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_committed_configuration_files_pass() {
        nexo_testkit::replay("config", super::config);
    }

    #[test]
    fn the_committed_sse_streams_pass() {
        nexo_testkit::replay("sse", super::sse);
    }
}
