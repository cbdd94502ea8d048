//! [`AnyServer`]: any rmcp server handler behind one type.
//!
//! rmcp's serving code (the session loop, the Streamable HTTP service, the
//! task each session spawns) is generic over the handler, so every handler
//! type served over every transport compiles a copy of all of it: six
//! bundled servers over four transports were most of the `nexo` binary's
//! code and of its build time. Erased here, it is compiled once. Each
//! request then costs one boxed future, which is nothing beside reading
//! its JSON.
//!
//! Every method of [`ServerHandler`] is forwarded, including those a
//! handler usually leaves at rmcp's default, so a wrapped handler answers
//! exactly as it does unwrapped. Cloning an `AnyServer` clones the handler
//! inside (a session's own copy, as the serving runtime expects of a
//! factory), not a shared reference to it.

// rmcp marks the legacy `resources/subscribe` and `unsubscribe` handlers
// deprecated; a faithful wrapper must still forward them.
#![allow(deprecated)]

use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, CancelledNotificationParam,
    CompleteRequestParams, CompleteResult, CustomNotification, CustomRequest, CustomResult,
    DiscoverResult, GetPromptRequestParams, GetPromptResponse, GetSkillRequestParams,
    GetSkillResult, GetTaskParams, GetTaskResult, InitializeRequestParams, InitializeResult,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListSkillsResult,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ProtocolVersion,
    ReadResourceDirectoryRequestParams, ReadResourceDirectoryResult, ReadResourceRequestParams,
    ReadResourceResponse, ServerConfig, SetLevelRequestParams, SubscribeRequestParams,
    SubscriptionFilter, Tool, UnsubscribeRequestParams, UpdateTaskParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};

type Boxed<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Any server handler, as one concrete type.
pub struct AnyServer(Box<dyn Erased>);

impl AnyServer {
    /// `server`, behind the one type.
    pub fn new<S: ServerHandler + Clone>(server: S) -> Self {
        Self(Box::new(server))
    }
}

impl Clone for AnyServer {
    fn clone(&self) -> Self {
        Self(self.0.clone_boxed())
    }
}

impl std::fmt::Debug for AnyServer {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("AnyServer")
    }
}

/// Writes, for each asynchronous method of [`ServerHandler`], the
/// object-safe method of [`Erased`] that boxes its future, the blanket
/// implementation calling the handler's own, and [`AnyServer`]'s
/// forwarding; the synchronous methods are forwarded as they are.
macro_rules! erase {
    (
        async { $( $method:ident ( $($arg:ident : $ty:ty),* ) -> $out:ty; )* }
        sync { $( $sync:ident ( $($sarg:ident : $sty:ty),* ) -> $sout:ty; )* }
    ) => {
        /// The object-safe face of a [`ServerHandler`].
        trait Erased: Send + Sync + 'static {
            fn clone_boxed(&self) -> Box<dyn Erased>;
            $( fn $method(&self, $($arg: $ty),*) -> Boxed<'_, $out>; )*
            $( fn $sync(&self, $($sarg: $sty),*) -> $sout; )*
        }

        impl<S: ServerHandler + Clone> Erased for S {
            fn clone_boxed(&self) -> Box<dyn Erased> {
                Box::new(self.clone())
            }
            $(
                fn $method(&self, $($arg: $ty),*) -> Boxed<'_, $out> {
                    Box::pin(ServerHandler::$method(self, $($arg),*))
                }
            )*
            $(
                fn $sync(&self, $($sarg: $sty),*) -> $sout {
                    ServerHandler::$sync(self, $($sarg),*)
                }
            )*
        }

        impl ServerHandler for AnyServer {
            $(
                fn $method(
                    &self,
                    $($arg: $ty),*
                ) -> impl Future<Output = $out> + Send + '_ {
                    self.0.$method($($arg),*)
                }
            )*
            $(
                fn $sync(&self, $($sarg: $sty),*) -> $sout {
                    self.0.$sync($($sarg),*)
                }
            )*
        }
    };
}

erase! {
    async {
        ping(context: RequestContext<RoleServer>) -> Result<(), McpError>;
        initialize(
            request: InitializeRequestParams,
            context: RequestContext<RoleServer>
        ) -> Result<InitializeResult, McpError>;
        discover(context: RequestContext<RoleServer>) -> Result<DiscoverResult, McpError>;
        complete(
            request: CompleteRequestParams,
            context: RequestContext<RoleServer>
        ) -> Result<CompleteResult, McpError>;
        set_level(
            request: SetLevelRequestParams,
            context: RequestContext<RoleServer>
        ) -> Result<(), McpError>;
        get_prompt(
            request: GetPromptRequestParams,
            context: RequestContext<RoleServer>
        ) -> Result<GetPromptResponse, McpError>;
        list_prompts(
            request: Option<PaginatedRequestParams>,
            context: RequestContext<RoleServer>
        ) -> Result<ListPromptsResult, McpError>;
        list_resources(
            request: Option<PaginatedRequestParams>,
            context: RequestContext<RoleServer>
        ) -> Result<ListResourcesResult, McpError>;
        list_resource_templates(
            request: Option<PaginatedRequestParams>,
            context: RequestContext<RoleServer>
        ) -> Result<ListResourceTemplatesResult, McpError>;
        read_resource(
            request: ReadResourceRequestParams,
            context: RequestContext<RoleServer>
        ) -> Result<ReadResourceResponse, McpError>;
        listen(context: SubscriptionContext) -> Result<(), McpError>;
        subscribe(
            request: SubscribeRequestParams,
            context: RequestContext<RoleServer>
        ) -> Result<(), McpError>;
        unsubscribe(
            request: UnsubscribeRequestParams,
            context: RequestContext<RoleServer>
        ) -> Result<(), McpError>;
        call_tool(
            request: CallToolRequestParams,
            context: RequestContext<RoleServer>
        ) -> Result<CallToolResponse, McpError>;
        list_tools(
            request: Option<PaginatedRequestParams>,
            context: RequestContext<RoleServer>
        ) -> Result<ListToolsResult, McpError>;
        on_custom_request(
            request: CustomRequest,
            context: RequestContext<RoleServer>
        ) -> Result<CustomResult, McpError>;
        on_cancelled(
            notification: CancelledNotificationParam,
            context: NotificationContext<RoleServer>
        ) -> ();
        on_progress(
            notification: ProgressNotificationParam,
            context: NotificationContext<RoleServer>
        ) -> ();
        on_initialized(context: NotificationContext<RoleServer>) -> ();
        on_roots_list_changed(context: NotificationContext<RoleServer>) -> ();
        on_custom_notification(
            notification: CustomNotification,
            context: NotificationContext<RoleServer>
        ) -> ();
        get_task(
            request: GetTaskParams,
            context: RequestContext<RoleServer>
        ) -> Result<GetTaskResult, McpError>;
        update_task(
            request: UpdateTaskParams,
            context: RequestContext<RoleServer>
        ) -> Result<(), McpError>;
        cancel_task(
            request: CancelTaskParams,
            context: RequestContext<RoleServer>
        ) -> Result<(), McpError>;
        list_skills(
            request: Option<PaginatedRequestParams>,
            context: RequestContext<RoleServer>
        ) -> Result<ListSkillsResult, McpError>;
        get_skill(
            request: GetSkillRequestParams,
            context: RequestContext<RoleServer>
        ) -> Result<GetSkillResult, McpError>;
        read_resource_directory(
            request: ReadResourceDirectoryRequestParams,
            context: RequestContext<RoleServer>
        ) -> Result<ReadResourceDirectoryResult, McpError>;
    }
    sync {
        negotiate_initialize(request: &InitializeRequestParams)
            -> Result<InitializeResult, McpError>;
        supported_protocol_versions() -> Cow<'static, [ProtocolVersion]>;
        accepted_subscription_filter(requested: &SubscriptionFilter)
            -> Option<SubscriptionFilter>;
        get_tool(name: &str) -> Option<Tool>;
        get_info() -> ServerConfig;
    }
}
