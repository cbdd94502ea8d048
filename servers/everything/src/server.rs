//! The MCP face of the crate: [`Everything`], an rmcp [`ServerHandler`] that
//! routes each request to the module owning it and shares, between all the
//! clones a host makes of it (one per session or per stateless request),
//! the `requestState` key and the channel on which list changes reach open
//! `subscriptions/listen` streams.

#![expect(
    deprecated,
    reason = "logging and resources/subscribe are deprecated by SEP-2577 but still part of the \
              2025 revisions this fixture serves"
)]

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult, CompletionInfo,
    GetPromptRequestParams, GetPromptResponse, Implementation, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, RequestStateCodec, ServerCapabilities,
    ServerConfig, SetLevelRequestParams, SubscribeRequestParams, SubscriptionFilter, Tool,
    UnsubscribeRequestParams,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use tokio::sync::broadcast;

use crate::{mrtr, prompts, resources, tools};

/// How many unread list changes a slow subscription may fall behind by.
const CHANGE_BACKLOG: usize = 16;

/// A list whose contents a client may be told changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    Tools,
    Prompts,
}

/// The conformance fixture server. Cheap to clone; clones share state.
#[derive(Debug, Clone)]
pub struct Everything {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    codec: RequestStateCodec,
    changes: broadcast::Sender<Change>,
}

impl Everything {
    pub fn new() -> Self {
        Self {
            shared: Arc::new(Shared {
                codec: mrtr::state_codec(),
                changes: broadcast::channel(CHANGE_BACKLOG).0,
            }),
        }
    }

    pub(crate) fn state_codec(&self) -> &RequestStateCodec {
        &self.shared.codec
    }

    /// Tells the client of a 2025-era session, and every open subscription,
    /// that a list changed.
    pub(crate) async fn announce(&self, change: Change, context: &RequestContext<RoleServer>) {
        // No receiver means no open subscription: nothing to deliver.
        let _ = self.shared.changes.send(change);
        if tools::is_per_request(context) {
            return;
        }
        let sent = match change {
            Change::Tools => context.peer.notify_tool_list_changed().await,
            Change::Prompts => context.peer.notify_prompt_list_changed().await,
        };
        if let Err(error) = sent {
            tracing::debug!(%error, "cannot send a list change");
        }
    }
}

impl Default for Everything {
    fn default() -> Self {
        Self::new()
    }
}

impl ServerHandler for Everything {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_logging()
            .enable_completions()
            .enable_prompts()
            .enable_prompts_list_changed()
            .enable_resources()
            .enable_resources_subscribe()
            .enable_resources_list_changed()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new(
                "nexo-everything",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
                "The fixture server of the MCP conformance suite: test_* tools, test:// \
                 resources and test_* prompts exercising every protocol feature.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(tools::list()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        tools::TOOLS.iter().find(|tool| tool.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        tools::call(self, request, context).await
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        Ok(resources::list())
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        Ok(resources::templates())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        resources::read(&request.uri).map(Into::into)
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        known_resource(&request.uri)
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        known_resource(&request.uri)
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        Ok(ListPromptsResult::with_all_items(prompts::list()))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        if request.name == mrtr::PROMPT {
            return mrtr::get_prompt(self, &request, &context);
        }
        prompts::get(&request).map(Into::into)
    }

    async fn complete(
        &self,
        _request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        let mut completion = CompletionInfo::default();
        completion.total = Some(0);
        completion.has_more = Some(false);
        Ok(CompleteResult::new(completion))
    }

    async fn set_level(
        &self,
        _request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        Ok(())
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let mut accepted = requested.clone();
        if let Some(uris) = &mut accepted.resource_subscriptions {
            uris.retain(|uri| resources::exists(uri));
        }
        Some(accepted)
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        let mut changes = self.shared.changes.subscribe();
        loop {
            let change = tokio::select! {
                () = context.cancelled() => return Ok(()),
                change = changes.recv() => change,
            };
            let sent = match change {
                Ok(Change::Tools) if context.accepted().tools_list_changed == Some(true) => {
                    context.sink().notify_tool_list_changed().await
                }
                Ok(Change::Prompts) if context.accepted().prompts_list_changed == Some(true) => {
                    context.sink().notify_prompt_list_changed().await
                }
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return Ok(()),
            };
            if let Err(error) = sent {
                tracing::debug!(%error, "cannot deliver a list change; ending the subscription");
                return Ok(());
            }
        }
    }
}

/// Subscribing to a URI that is no resource is an error naming it.
fn known_resource(uri: &str) -> Result<(), McpError> {
    resources::read(uri).map(|_| ())
}
