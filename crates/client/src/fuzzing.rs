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
//!   in characters), or naming the file it could not read. The place is
//!   checked against a reference: where the JSONC parser finds the syntax
//!   failing, else the start of a field or a value, or a `$` in a string.

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
        crate::sse::events(stream)
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
            assert!(!message.is_empty(), "{location}");
            let json = text.strip_prefix('\u{feff}').unwrap_or(&text);
            let Some(offset) = reference_offset(json, location.line, location.column) else {
                panic!("{location} is outside the file: {message}");
            };
            assert!(
                reference_places(json).contains(&offset),
                "{location} (byte {offset}) is no place an error can be: {message} in {json:?}"
            );
        }
        Err(ConfigError::Read { path, .. }) => {
            assert!(!path.as_os_str().is_empty());
        }
    }
}

/// The byte offset of a 1-based line and column (in characters, lines
/// ended by `\n`), counted afresh; `None` past the end of a line or of the
/// text.
fn reference_offset(text: &str, line: usize, column: usize) -> Option<usize> {
    let start: usize = text
        .split('\n')
        .take(line.checked_sub(1)?)
        .map(|line| line.len() + 1)
        .sum();
    let this = text.get(start..)?.split('\n').next()?;
    let chars = column.checked_sub(1)?;
    if chars > this.chars().count() {
        return None;
    }
    Some(start + this.chars().take(chars).map(char::len_utf8).sum::<usize>())
}

/// The byte offsets an error in `text` may be placed at, read with the
/// JSONC parser under the rules nexo documents (comments and trailing
/// commas, nothing looser): where the syntax fails, when it does; else the
/// start of the file, of every field and every value, and every `$`
/// inside a string without escapes (a variable that cannot be expanded).
fn reference_places(text: &str) -> Vec<usize> {
    use jsonc_parser::ast::Value;
    use jsonc_parser::common::Ranged;
    let options = crate::config::parse::jsonc_options();
    let parsed = match jsonc_parser::parse_to_ast(
        text,
        &jsonc_parser::CollectOptions::default(),
        &options,
    ) {
        Ok(parsed) => parsed,
        Err(error) => return vec![error.range().start],
    };
    fn add(value: &Value<'_>, text: &str, places: &mut Vec<usize>) {
        places.push(value.start());
        match value {
            Value::Object(object) => {
                for prop in &object.properties {
                    places.push(prop.start());
                    add(&prop.value, text, places);
                }
            }
            Value::Array(array) => {
                for element in &array.elements {
                    add(element, text, places);
                }
            }
            Value::StringLit(lit) => {
                let raw = text.get(lit.range.start..lit.range.end).unwrap_or("");
                if !raw.contains('\\') {
                    places.extend(raw.match_indices('$').map(|(at, _)| lit.range.start + at));
                }
            }
            _ => {}
        }
    }
    let mut places = vec![0];
    if let Some(value) = &parsed.value {
        add(value, text, &mut places);
    }
    places
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
