//! The local web page (`nexo ui`): the servers of the configuration, their
//! tools (a form for each, built from its input schema), resources and
//! prompts, the protocol trace live, and the chat, on one page served on
//! 127.0.0.1 only. Server-rendered HTML (askama) with htmx and its SSE
//! extension; the assets are embedded in the binary, nothing is fetched.
//!
//! Its parts, each a module: [`guard`] (who may use the page), [`events`]
//! (the live updates), [`live_trace`] (the trace), [`form`] and
//! [`render`] (what servers send, escaped), [`views`] (the routes).
//!
//! The CLI wires it: it makes a [`Prepared`] first, whose tracer goes to
//! the servers' connections, then starts the servers on nexo-client's hub
//! and calls [`serve`].

pub mod events;
pub mod form;
pub mod guard;
pub mod live_trace;
pub mod render;
mod schema_check;
mod views;

use std::future::Future;
use std::sync::Arc;

use nexo_client::hub::Hub;
use nexo_trace::Tracer;
use tokio::net::TcpListener;

use crate::events::Events;
use crate::guard::Guard;
use crate::live_trace::LiveTrace;

/// What the page needs before the servers start: the trace their
/// connections write to, and where updates are published.
pub struct Prepared {
    events: Arc<Events>,
    trace: LiveTrace,
}

impl Default for Prepared {
    fn default() -> Self {
        let events = Arc::new(Events::default());
        Self {
            trace: LiveTrace::new(events.clone()),
            events,
        }
    }
}

impl Prepared {
    /// The tracer the servers' connections write to (the page's trace).
    pub fn tracer(&self) -> Tracer {
        self.trace.tracer()
    }
}

/// The state every route reads.
pub struct Page {
    pub(crate) guard: Guard,
    pub(crate) hub: Arc<Hub>,
    pub(crate) events: Arc<Events>,
    pub(crate) trace: LiveTrace,
}

/// A page bound to its listener, not yet serving: its URL is known.
pub struct Bound {
    page: Arc<Page>,
    listener: TcpListener,
}

impl Bound {
    /// Binds the page on 127.0.0.1 at `port` (0: any free port).
    pub async fn bind(prepared: Prepared, hub: Arc<Hub>, port: u16) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        let port = listener.local_addr()?.port();
        let page = Arc::new(Page {
            guard: Guard::new(port),
            hub,
            events: prepared.events,
            trace: prepared.trace,
        });
        Ok(Self { page, listener })
    }

    /// The URL to open (it carries the launch token).
    pub fn url(&self) -> String {
        self.page.guard.launch_url()
    }

    /// What the guard checks against (its tokens), for tests.
    pub fn guard(&self) -> &Guard {
        &self.page.guard
    }

    /// The page's routes, to drive without the socket (`oneshot`).
    pub fn router(&self) -> axum::Router {
        views::router(self.page.clone())
    }

    /// Serves the page until `shutdown` completes.
    pub async fn serve(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let watcher = tokio::spawn(views::watch_servers(self.page.clone()));
        let router = views::router(self.page);
        let served = axum::serve(self.listener, router)
            .with_graceful_shutdown(shutdown)
            .await;
        watcher.abort();
        served
    }
}
