//! The one SSE reader: [`events`], sse-stream (the reader rmcp uses) fed
//! the body one line at a time, for the client's transports, the chat's
//! LLM streams and the raw links of `nexo bench` and `nexo check`. sse-stream
//! (the reader rmcp uses) drops the rest of a chunk after a line it cannot
//! read, so where the network happened to cut the body would decide which
//! events survive (the fuzzer found an `endpoint` event lost or kept
//! depending on the cut). Fed line by line, a malformed line costs that
//! line only, however the body arrives: a line is held until its end is
//! seen, and a CR until the next byte says whether an LF follows.
//!
//! [`event_data`] reads a whole SSE body at once, through the same reader.

use bytes::{Bytes, BytesMut};
use futures::{FutureExt, Stream, StreamExt};

/// The events of an SSE body as they come.
pub fn events<S, E>(
    body: S,
) -> impl Stream<Item = Result<sse_stream::Sse, sse_stream::Error>> + Send
where
    S: Stream<Item = Result<Bytes, E>> + Send + Unpin,
    E: std::error::Error + Send + Sync + 'static,
{
    sse_stream::SseStream::from_bytes_stream(lines(body))
}

/// The body's lines, each with its line break (the last one may have none).
pub fn lines<S, E>(body: S) -> impl Stream<Item = Result<Bytes, E>> + Send
where
    S: Stream<Item = Result<Bytes, E>> + Send + Unpin,
    E: Send,
{
    let state = Lines {
        body,
        buffer: BytesMut::new(),
        searched: 0,
        ended: false,
    };
    futures::stream::unfold(state, |mut state| async move {
        loop {
            if let Some(line) = state.take_line() {
                return Some((Ok(line), state));
            }
            if state.ended {
                return None;
            }
            match state.body.next().await {
                Some(Ok(chunk)) => state.buffer.extend_from_slice(&chunk),
                Some(Err(error)) => {
                    state.ended = true;
                    return Some((Err(error), state));
                }
                None => state.ended = true,
            }
        }
    })
}

struct Lines<S> {
    body: S,
    buffer: BytesMut,
    /// How much of the buffer is known to hold no line break.
    searched: usize,
    ended: bool,
}

impl<S> Lines<S> {
    /// The next whole line in the buffer; at the end, whatever is left.
    fn take_line(&mut self) -> Option<Bytes> {
        let found = self.buffer[self.searched..]
            .iter()
            .position(|byte| matches!(byte, b'\n' | b'\r'))
            .map(|at| self.searched + at);
        let length = match found {
            Some(at) if self.buffer[at] == b'\n' => at + 1,
            Some(at) => match self.buffer.get(at + 1) {
                Some(b'\n') => at + 2,
                Some(_) => at + 1,
                None if self.ended => at + 1,
                // A CR at the end: the next byte decides.
                None => {
                    self.searched = at;
                    return None;
                }
            },
            None if self.ended && !self.buffer.is_empty() => self.buffer.len(),
            None => {
                self.searched = self.buffer.len();
                return None;
            }
        };
        self.searched = 0;
        Some(self.buffer.split_to(length).freeze())
    }
}

/// The data of each event of a whole SSE body, in order.
pub fn event_data(body: &str) -> Vec<String> {
    let whole = futures::stream::iter([Ok::<_, std::io::Error>(Bytes::copy_from_slice(
        body.as_bytes(),
    ))]);
    // The body is all there: the reader never waits.
    events(whole)
        .filter_map(|event| std::future::ready(event.ok().and_then(|event| event.data)))
        .collect::<Vec<_>>()
        .now_or_never()
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cut(chunks: &[&str]) -> Vec<String> {
        let body = futures::stream::iter(
            chunks
                .iter()
                .map(|chunk| Ok::<_, std::io::Error>(Bytes::copy_from_slice(chunk.as_bytes())))
                .collect::<Vec<_>>(),
        );
        futures::executor::block_on(
            lines(body)
                .map(|line| String::from_utf8_lossy(&line.unwrap_or_default()).into_owned())
                .collect(),
        )
    }

    #[test]
    fn lines_come_whole_whatever_the_chunks() {
        let expected = ["data: a\r\n", "\r", "data: b\n", "\n", "tail"];
        assert_eq!(cut(&["data: a\r\n\rdata: b\n\ntail"]), expected);
        assert_eq!(
            cut(&["da", "ta: a\r", "\n\r", "data", ": b\n", "\nta", "il"]),
            expected
        );
        assert_eq!(cut(&["data: a\r\n\r", "data: b\n\ntail"]), expected);
    }

    #[test]
    fn sse_events_are_split() {
        let body = "event: message\ndata: {\"a\":1}\n\n: keep-alive\n\ndata: x\ndata: y\n\n";
        assert_eq!(
            event_data(body),
            vec!["{\"a\":1}".to_owned(), "x\ny".to_owned()]
        );
    }
}
