//! The local web page (`nexo ui`): the chat, the servers of the
//! configuration, their tools (a form for each, built from its input
//! schema), resources and prompts, and the protocol trace live, on one page
//! served on 127.0.0.1 only. Server-rendered HTML (askama) with htmx and its SSE
//! extension; the assets are embedded in the binary, nothing is fetched.
//!
//! Its parts, each a module: [`guard`] (who may use the page), [`events`]
//! (the live updates), [`live_trace`] (the trace), [`inbox`] (approvals,
//! elicitation and sampling waiting for the person), [`chat`] (the agent
//! loop's turns, drawn), [`form`] and [`render`] (what servers send,
//! escaped), [`apps`] (MCP Apps, drawn in a sandbox on a second port), and
//! the routes; [`error`] holds its errors and draws every error the same
//! way.
//!
//! The CLI wires it: it makes a [`Prepared`] first, whose tracer and
//! responders go to the servers' connections, then starts the servers on
//! nexo-client's hub, builds the agent, and calls [`Bound::bind`] and
//! [`Bound::serve`].

pub mod apps;
pub mod chat;
pub mod error;
pub mod events;
pub mod form;
pub mod guard;
pub mod inbox;
pub mod live_trace;
pub mod render;
mod schema_check;
mod views;

use std::future::{Future, IntoFuture};
use std::sync::Arc;

use nexo_client::handler::{ElicitationResponder, SamplingResponder};
use nexo_client::hub::Hub;
use nexo_hint::Report;
use nexo_host::agent::Agent;
use nexo_host::approval::ApprovalGate;
use nexo_host::provider::Provider;
use nexo_trace::Tracer;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use crate::apps::Apps;
use crate::chat::Chat;
use crate::error::UiError;
use crate::events::Events;
use crate::guard::Guard;
use crate::inbox::{Inbox, PageElicitation, PageSampling};
use crate::live_trace::LiveTrace;

/// How often questions whose asker gave up are cleared from the inbox.
const SWEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// What the page needs before the servers start: the trace their
/// connections write to, the inbox their questions wait in, and where
/// updates are published.
pub struct Prepared {
    events: Arc<Events>,
    trace: LiveTrace,
    inbox: Arc<Inbox>,
}

impl Default for Prepared {
    fn default() -> Self {
        let events = Arc::new(Events::default());
        Self {
            trace: LiveTrace::new(events.clone()),
            inbox: Arc::new(Inbox::new(events.clone())),
            events,
        }
    }
}

impl Prepared {
    /// The tracer the servers' connections write to (the page's trace).
    pub fn tracer(&self) -> Tracer {
        self.trace.tracer()
    }

    /// Who answers the servers' elicitation requests: the person, on the page.
    pub fn elicitation(&self) -> Arc<dyn ElicitationResponder> {
        Arc::new(PageElicitation(self.inbox.clone()))
    }

    /// Who answers the servers' sampling requests: `provider`, each request
    /// and answer reviewed on the page (refused without a model).
    pub fn sampling(&self, provider: Option<Provider>) -> Arc<dyn SamplingResponder> {
        Arc::new(PageSampling {
            inbox: self.inbox.clone(),
            provider,
        })
    }
}

/// The state every route reads.
pub struct Page {
    pub(crate) guard: Guard,
    pub(crate) hub: Arc<Hub>,
    pub(crate) events: Arc<Events>,
    pub(crate) trace: LiveTrace,
    pub(crate) inbox: Arc<Inbox>,
    pub(crate) chat: Arc<Chat>,
    pub(crate) apps: Arc<Apps>,
}

/// A page bound to its listener, not yet serving: its URL is known.
pub struct Bound {
    page: Arc<Page>,
    listener: TcpListener,
    /// Where MCP Apps are drawn (another port: another origin).
    sandbox: TcpListener,
    messages: Option<mpsc::Receiver<String>>,
}

impl Bound {
    /// Binds the page on 127.0.0.1 at `port` (0: any free port), and its
    /// apps' sandbox on any free port; `model` names the chat's model, or
    /// reports why there is none; `gate` decides the calls apps ask for.
    pub async fn bind(
        prepared: Prepared,
        hub: Arc<Hub>,
        port: u16,
        model: Result<String, Report>,
        gate: Arc<ApprovalGate>,
    ) -> Result<Self, UiError> {
        let (listener, port) = listen(port).await?;
        let (sandbox, sandbox_port) = listen(0).await?;
        let apps = Arc::new(Apps::new(
            hub.clone(),
            gate,
            prepared.inbox.clone(),
            port,
            sandbox_port,
        ));
        let (chat, messages) = Chat::new(prepared.events.clone(), model, apps.clone());
        let page = Arc::new(Page {
            guard: Guard::new(port, sandbox_port),
            hub,
            events: prepared.events,
            trace: prepared.trace,
            inbox: prepared.inbox,
            chat: Arc::new(chat),
            apps,
        });
        Ok(Self {
            page,
            listener,
            sandbox,
            messages,
        })
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

    /// The apps' sandbox's routes, to drive without the socket, and its
    /// origin.
    pub fn sandbox(&self) -> (axum::Router, String) {
        (
            apps::sandbox_router(self.page.apps.clone()),
            self.page.apps.sandbox_origin(),
        )
    }

    /// Serves the page until `shutdown` completes, the chat's turns
    /// answered by `agent` (the model [`Bound::bind`] named).
    pub async fn serve(
        self,
        agent: Option<&Agent<'_>>,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), UiError> {
        let watcher = tokio::spawn(views::watch_servers(self.page.clone()));
        let inbox = self.page.inbox.clone();
        let sweeper = tokio::spawn(async move {
            loop {
                tokio::time::sleep(SWEEP_EVERY).await;
                inbox.sweep();
            }
        });
        let chat = self.page.chat.clone();
        let inbox = self.page.inbox.clone();
        let sandbox =
            axum::serve(self.sandbox, apps::sandbox_router(self.page.apps.clone())).into_future();
        let router = views::router(self.page);
        let page = axum::serve(self.listener, router).with_graceful_shutdown(shutdown);
        // The sandbox ends with the page.
        let served = async move {
            tokio::select! {
                served = page => served,
                served = sandbox => served,
            }
        };
        let outcome = match (agent, self.messages) {
            (Some(agent), Some(messages)) => {
                tokio::select! {
                    served = served => served,
                    () = chat::work(chat, agent, inbox, messages) => Ok(()),
                }
            }
            _ => served.await,
        };
        watcher.abort();
        sweeper.abort();
        outcome.map_err(UiError::Serve)
    }
}

/// A listener on 127.0.0.1 at `port` (0: any free port), and its port.
async fn listen(port: u16) -> Result<(TcpListener, u16), UiError> {
    let bound = |source| UiError::Bind { port, source };
    let listener = TcpListener::bind(("127.0.0.1", port))
        .await
        .map_err(bound)?;
    let port = listener.local_addr().map_err(bound)?.port();
    Ok((listener, port))
}
