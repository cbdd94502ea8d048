//! Federation: the upstream servers of a [`Hub`] behind one set of names.
//! Tools and prompts go by `server__name`, nexo-client's
//! [`Namespace`] (the host's scheme: the same names `nexo chat` gives the
//! model); resources by `nexo://<server>/<uri>` ([`UriNamespace`]: the
//! upstream's URI kept whole after the server's label, so that the mapping
//! is undone by cutting the prefix, and two servers can never meet on one
//! address); task ids by `server__id` (the upstream's id kept whole after
//! the server's name, so that `tasks/get`, `tasks/update` and
//! `tasks/cancel` reach the upstream that runs the task). Lists are merged
//! in the configuration's order of servers.
//!
//! The hub keeps the upstreams connected (a child that exits is started
//! again, with a growing delay); while one restarts, its last tools stay
//! listed and a call to one waits for the new connection within the tool's
//! time limit. A call cut short by its upstream's death is repeated only
//! when the tool is annotated read-only or idempotent (the hub's rule);
//! every failure names the upstream ([`Upstream`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::join_all;
use nexo_client::hub::{Changed, Hub};
use nexo_client::namespace::{self, Namespace, UriNamespace};
use nexo_client::{ClientError, Secret, Session};

use crate::exchange::Exchanges;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities,
    CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResponse,
    GetTaskParams, GetTaskResult, Prompt, ReadResourceRequestParams, ReadResourceResponse,
    Resource, ResourceTemplate, Tool, UpdateTaskParams,
};

/// How long a list waits for an upstream that is not connected: not at
/// all; its prompts and resources are left out until it is back.
const LIST_WAIT: Duration = Duration::ZERO;
/// How long reading a resource or getting a prompt waits for an upstream
/// that is restarting.
const RESTART_WAIT: Duration = Duration::from_secs(10);

/// An upstream's failure, and which upstream.
#[derive(Debug, Clone)]
pub struct Upstream {
    pub server: String,
    pub error: ClientError,
}

/// The upstreams, named together.
pub struct Federation {
    hub: Hub,
    /// The servers in the configuration's order.
    servers: Vec<String>,
    uris: UriNamespace,
    tools: Mutex<Tools>,
    /// The upstreams called with each caller's own traded token.
    exchanges: Exchanges,
}

/// What [`Federation::catalog`] keeps between calls.
#[derive(Default)]
struct Tools {
    /// The tools each server listed last, kept while it restarts.
    known: HashMap<String, Arc<Vec<Tool>>>,
    /// Built from `known`, and again only when a list in it is replaced.
    catalog: Arc<Catalog>,
}

/// Every upstream's tools, as listed last, with their federated names.
#[derive(Default)]
pub struct Catalog {
    /// `(server, its tools)`, in the configuration's order.
    lists: Vec<(String, Arc<Vec<Tool>>)>,
    names: Namespace,
}

impl Catalog {
    fn build(lists: Vec<(String, Arc<Vec<Tool>>)>) -> Self {
        let names = Namespace::build(lists.iter().flat_map(|(server, tools)| {
            tools
                .iter()
                .map(move |tool| (server.as_str(), tool.name.as_ref()))
        }));
        Self { lists, names }
    }

    /// Whether `lists` are those this catalog was built from.
    fn holds(&self, lists: &[(String, Arc<Vec<Tool>>)]) -> bool {
        self.lists.len() == lists.len()
            && self
                .lists
                .iter()
                .zip(lists)
                .all(|((server, tools), (now, listed))| server == now && Arc::ptr_eq(tools, listed))
    }

    /// Every tool as `(server, tool)`, in the configuration's order.
    pub fn tools(&self) -> impl Iterator<Item = (&str, &Tool)> {
        self.lists
            .iter()
            .flat_map(|(server, tools)| tools.iter().map(move |tool| (server.as_str(), tool)))
    }

    /// The federated names of the tools.
    pub fn names(&self) -> &Namespace {
        &self.names
    }
}

impl std::fmt::Debug for Federation {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Federation")
            .field("servers", &self.servers)
            .finish_non_exhaustive()
    }
}

impl Federation {
    /// Federates the servers of `hub`, which are named `servers` in the
    /// configuration's order.
    pub fn new(hub: Hub, servers: Vec<String>, exchanges: Exchanges) -> Self {
        let uris = UriNamespace::build(&servers);
        Self {
            hub,
            servers,
            uris,
            tools: Mutex::default(),
            exchanges,
        }
    }

    pub fn hub(&self) -> &Hub {
        &self.hub
    }

    pub fn servers(&self) -> &[String] {
        &self.servers
    }

    /// Hears of each upstream connected again and each list it changed.
    pub fn changes(&self) -> tokio::sync::broadcast::Receiver<Changed> {
        self.hub.changes()
    }

    /// Every upstream's tools and their names: those of a server that is
    /// restarting as it listed them last. Cheap when no list changed: the
    /// catalog is built again only when one did.
    pub fn catalog(&self) -> Arc<Catalog> {
        let connected = self.hub.tool_lists();
        let mut state = self
            .tools
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for (server, tools) in connected {
            state.known.insert(server, tools);
        }
        let lists: Vec<(String, Arc<Vec<Tool>>)> = self
            .servers
            .iter()
            .filter_map(|server| {
                let tools = state.known.get(server)?;
                Some((server.clone(), tools.clone()))
            })
            .collect();
        if !state.catalog.holds(&lists) {
            state.catalog = Arc::new(Catalog::build(lists));
        }
        state.catalog.clone()
    }

    /// Every upstream's tools as `(server, tool)` (see [`Self::catalog`]).
    pub fn tools(&self) -> Vec<(String, Tool)> {
        self.catalog()
            .tools()
            .map(|(server, tool)| (server.to_owned(), tool.clone()))
            .collect()
    }

    /// One `tools/call` of `params` on `server`, answered as the upstream
    /// answers it: an `input_required` result or a task is handed back for
    /// the gateway's client, whose `capabilities` the request declares
    /// (see nexo-client's `Hub::call_tool_once`); `caller` is the
    /// caller's token, for an upstream of token exchange.
    pub async fn call_tool_once(
        &self,
        server: &str,
        params: CallToolRequestParams,
        capabilities: Option<ClientCapabilities>,
        caller: Option<&Secret>,
    ) -> Result<CallToolResponse, Upstream> {
        if !self.exchanges.covers(server) {
            return self
                .hub
                .call_tool_once(server, params, capabilities)
                .await
                .map_err(|error| upstream(server, error));
        }
        let limits = self
            .hub
            .call_limits(server, &params.name)
            .map_err(|error| upstream(server, error))?;
        let session = self.session(server, caller).await?;
        session
            .call_tool_once(params, limits, capabilities)
            .await
            .map_err(|error| upstream(server, error))
    }

    /// The federated id of the task `id` that `server` runs.
    pub fn qualify_task(&self, server: &str, id: &str) -> String {
        namespace::join(server, id)
    }

    /// The server and its own id of the task a federated id stands for.
    pub fn resolve_task<'t>(&self, task: &'t str) -> Option<(String, &'t str)> {
        namespace::split(task, self.servers.iter().map(String::as_str))
            .map(|(server, id)| (server.to_owned(), id))
    }

    /// `tasks/get` on `server`.
    pub async fn get_task(
        &self,
        server: &str,
        params: GetTaskParams,
        caller: Option<&Secret>,
    ) -> Result<GetTaskResult, Upstream> {
        let session = self.session(server, caller).await?;
        session
            .get_task(params)
            .await
            .map_err(|error| upstream(server, error))
    }

    /// `tasks/update` on `server`.
    pub async fn update_task(
        &self,
        server: &str,
        params: UpdateTaskParams,
        caller: Option<&Secret>,
    ) -> Result<(), Upstream> {
        let session = self.session(server, caller).await?;
        session
            .update_task(params)
            .await
            .map_err(|error| upstream(server, error))
    }

    /// `tasks/cancel` on `server`.
    pub async fn cancel_task(
        &self,
        server: &str,
        params: CancelTaskParams,
        caller: Option<&Secret>,
    ) -> Result<(), Upstream> {
        let session = self.session(server, caller).await?;
        session
            .cancel_task(params)
            .await
            .map_err(|error| upstream(server, error))
    }

    /// `completion/complete` on `server`, its reference the upstream's own.
    pub async fn complete(
        &self,
        server: &str,
        params: CompleteRequestParams,
        caller: Option<&Secret>,
    ) -> Result<CompleteResult, Upstream> {
        let session = self.session(server, caller).await?;
        session
            .complete(params)
            .await
            .map_err(|error| upstream(server, error))
    }
    /// The session a request to `server` goes over: the caller's own for
    /// an upstream of token exchange, else the hub's (waiting out a
    /// restart).
    async fn session(
        &self,
        server: &str,
        caller: Option<&Secret>,
    ) -> Result<Arc<Session>, Upstream> {
        let session = if self.exchanges.covers(server) {
            self.exchanges.session(server, caller).await
        } else {
            self.hub.session(server, RESTART_WAIT).await
        };
        session.map_err(|error| upstream(server, error))
    }

    /// Drops the callers' sessions whose traded tokens ran out.
    pub fn sweep(&self) {
        self.exchanges.sweep();
    }

    /// The connected upstreams that offer `capability`, with their sessions.
    async fn offering(&self, capability: Capability) -> Vec<(String, Arc<Session>)> {
        let sessions = join_all(
            self.servers
                .iter()
                .map(|server| async move { (server, self.hub.session(server, LIST_WAIT).await) }),
        )
        .await;
        sessions
            .into_iter()
            .filter_map(|(server, session)| {
                let session = session.ok()?;
                let info = session.server_info()?;
                let offers = match capability {
                    Capability::Prompts => info.capabilities.prompts.is_some(),
                    Capability::Resources => info.capabilities.resources.is_some(),
                };
                offers.then(|| (server.clone(), session))
            })
            .collect()
    }

    /// Every connected upstream's prompts as `(server, prompt)`; one that
    /// fails to list them is left out (and logged).
    pub async fn prompts(&self) -> Vec<(String, Prompt)> {
        let offering = self.offering(Capability::Prompts).await;
        let lists = join_all(
            offering
                .iter()
                .map(|(server, session)| async move { (server, session.list_prompts().await) }),
        )
        .await;
        merged(lists, "prompts")
    }

    /// One `prompts/get` on `server` (waiting for it while it restarts),
    /// answered as the upstream answers it, declaring `capabilities`.
    pub async fn get_prompt(
        &self,
        server: &str,
        params: GetPromptRequestParams,
        capabilities: Option<ClientCapabilities>,
        caller: Option<&Secret>,
    ) -> Result<GetPromptResponse, Upstream> {
        let session = self.session(server, caller).await?;
        session
            .get_prompt_once(params, capabilities)
            .await
            .map_err(|error| upstream(server, error))
    }

    /// Every connected upstream's resources as `(server, resource)`, each
    /// URI as the upstream gives it.
    pub async fn resources(&self) -> Vec<(String, Resource)> {
        let offering = self.offering(Capability::Resources).await;
        let lists = join_all(
            offering
                .iter()
                .map(|(server, session)| async move { (server, session.list_resources().await) }),
        )
        .await;
        merged(lists, "resources")
    }

    /// Every connected upstream's resource templates as `(server,
    /// template)`, each as the upstream gives it.
    pub async fn resource_templates(&self) -> Vec<(String, ResourceTemplate)> {
        let offering = self.offering(Capability::Resources).await;
        let lists = join_all(offering.iter().map(|(server, session)| async move {
            (server, session.list_resource_templates().await)
        }))
        .await;
        merged(lists, "resource templates")
    }

    /// The federated address of `uri` on `server`.
    pub fn qualify_uri(&self, server: &str, uri: &str) -> Option<String> {
        self.uris.qualify(server, uri)
    }

    /// The server and upstream URI a federated address stands for.
    pub fn resolve_uri<'u>(&self, address: &'u str) -> Option<(String, &'u str)> {
        self.uris
            .resolve(address)
            .map(|(server, uri)| (server.to_owned(), uri))
    }

    /// One `resources/read` on `server` (waiting for it while it
    /// restarts), answered as the upstream answers it, declaring
    /// `capabilities`.
    pub async fn read_resource(
        &self,
        server: &str,
        params: ReadResourceRequestParams,
        capabilities: Option<ClientCapabilities>,
        caller: Option<&Secret>,
    ) -> Result<ReadResourceResponse, Upstream> {
        let session = self.session(server, caller).await?;
        session
            .read_resource_once(params, capabilities)
            .await
            .map_err(|error| upstream(server, error))
    }

    /// Ends every upstream session (and child process).
    pub async fn close(self) {
        self.hub.close().await;
    }
}

#[derive(Debug, Clone, Copy)]
enum Capability {
    Prompts,
    Resources,
}

fn upstream(server: &str, error: ClientError) -> Upstream {
    Upstream {
        server: server.to_owned(),
        error,
    }
}

/// The items of each list that came, in order; failures logged.
fn merged<T>(lists: Vec<(&String, Result<Vec<T>, ClientError>)>, what: &str) -> Vec<(String, T)> {
    let mut all = Vec::new();
    for (server, list) in lists {
        match list {
            Ok(items) => all.extend(items.into_iter().map(|item| (server.clone(), item))),
            Err(error) => {
                tracing::warn!(server = %server, %error, "cannot list the upstream's {what}");
            }
        }
    }
    all
}
