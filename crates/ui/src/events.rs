//! The page's live updates: one multiplexed Server-Sent Events stream per
//! tab (`GET /events`), each event named for what it updates (`chat`,
//! `trace`, `servers`, `inbox`) and carrying HTML that htmx swaps in out of
//! band (each fragment says where it goes). Every event has an id; the last
//! [`KEPT`] are kept, so a tab that reconnects (its `Last-Event-ID`) or a
//! page just rendered (`?after=`, the id it was rendered at) misses
//! nothing. A tab too far behind is told to reload, which renders the whole
//! state afresh.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;
use serde::Deserialize;
use tokio::sync::broadcast;

use crate::Page;

/// How many events are kept for tabs that reconnect.
pub const KEPT: usize = 4096;

/// One update of the page.
#[derive(Debug, Clone)]
pub struct PageEvent {
    pub id: u64,
    /// `chat`, `trace`, `servers` or `inbox`.
    pub name: &'static str,
    /// HTML fragments, each with its `hx-swap-oob` target.
    pub html: String,
}

/// Where updates are published, and the last of them.
#[derive(Debug)]
pub struct Events {
    kept: Mutex<Kept>,
    live: broadcast::Sender<PageEvent>,
}

#[derive(Debug, Default)]
struct Kept {
    last_id: u64,
    events: VecDeque<PageEvent>,
}

impl Default for Events {
    fn default() -> Self {
        Self {
            kept: Mutex::default(),
            live: broadcast::channel(KEPT).0,
        }
    }
}

impl Events {
    /// Publishes an update to every open tab.
    pub fn publish(&self, name: &'static str, html: String) {
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        kept.last_id += 1;
        let event = PageEvent {
            id: kept.last_id,
            name,
            html,
        };
        if kept.events.len() == KEPT {
            kept.events.pop_front();
        }
        kept.events.push_back(event.clone());
        // Sent under the lock, so that a subscriber's replay and its live
        // events neither overlap nor leave a gap.
        let _ = self.live.send(event);
    }

    /// The id of the last update (a page rendered now shows everything up
    /// to it).
    pub fn last_id(&self) -> u64 {
        self.kept
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .last_id
    }

    /// The updates after `after`, and the live ones from then on; `None`
    /// for the replay when some of them are no longer kept.
    fn subscribe(&self, after: u64) -> (Option<Vec<PageEvent>>, broadcast::Receiver<PageEvent>) {
        let kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        let live = self.live.subscribe();
        let oldest_kept = kept
            .events
            .front()
            .map_or(kept.last_id + 1, |event| event.id);
        let replay = (after + 1 >= oldest_kept || after >= kept.last_id).then(|| {
            kept.events
                .iter()
                .filter(|event| event.id > after)
                .cloned()
                .collect()
        });
        (replay, live)
    }
}

#[derive(Debug, Deserialize)]
pub struct After {
    after: Option<u64>,
}

/// `GET /events`: the stream of one tab.
pub async fn stream(
    State(page): State<Arc<Page>>,
    Query(query): Query<After>,
    headers: HeaderMap,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let after = headers
        .get("last-event-id")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse().ok())
        .or(query.after)
        .unwrap_or_else(|| page.events.last_id());
    let (replay, mut live) = page.events.subscribe(after);
    let stream = async_stream(move |sender| async move {
        match replay {
            Some(events) => {
                for event in events {
                    if sender.send(to_sse(&event)).await.is_err() {
                        return;
                    }
                }
            }
            None => {
                let _ = sender
                    .send(Event::default().event("reload").data("behind"))
                    .await;
                return;
            }
        }
        loop {
            match live.recv().await {
                Ok(event) => {
                    if sender.send(to_sse(&event)).await.is_err() {
                        return;
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    let _ = sender
                        .send(Event::default().event("reload").data("behind"))
                        .await;
                    return;
                }
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    });
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}

fn to_sse(event: &PageEvent) -> Event {
    Event::default()
        .id(event.id.to_string())
        .event(event.name)
        .data(&event.html)
}

/// A stream fed by a task through a channel.
fn async_stream<F, Fut>(produce: F) -> impl Stream<Item = Result<Event, Infallible>>
where
    F: FnOnce(tokio::sync::mpsc::Sender<Event>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (sender, receiver) = tokio::sync::mpsc::channel(64);
    tokio::spawn(produce(sender));
    futures::stream::unfold(receiver, |mut receiver| async move {
        receiver.recv().await.map(|event| (Ok(event), receiver))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subscriber_gets_what_it_missed_or_is_told_to_reload() {
        let events = Events::default();
        for index in 0..3 {
            events.publish("chat", format!("<p>{index}</p>"));
        }
        let (replay, _) = events.subscribe(1);
        let ids: Vec<u64> = replay.unwrap_or_default().iter().map(|e| e.id).collect();
        assert_eq!(ids, [2, 3]);
        let (replay, _) = events.subscribe(3);
        assert_eq!(replay.map(|events| events.len()), Some(0));
        for index in 0..KEPT {
            events.publish("trace", format!("{index}"));
        }
        let (replay, _) = events.subscribe(1);
        assert!(replay.is_none(), "event 2 is gone: the tab must reload");
    }
}
