//! The [`Envelope`] of a message rmcp parsed or built, taken from the
//! message itself: a tap that holds one (what a transport read and rmcp
//! parsed, what rmcp hands a transport to send) spares the writer a second
//! parse of the bytes. Of rmcp this crate knows only these message types.
//!
//! rmcp's unions of requests, notifications and results are open to new
//! kinds: a message of a kind this module does not name gives no envelope,
//! and the writer reads it from the bytes as it reads any other.

use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, ClientRequest, ClientResult, ConstString,
    JsonRpcMessage, NumberOrString, ServerJsonRpcMessage, ServerNotification, ServerRequest,
    ServerResult,
};

use crate::envelope::{Envelope, Id, Method};
use crate::record::Kind;

impl<'a> Envelope<'a> {
    /// The envelope of a message a client sends or a server receives;
    /// `None` for a kind of message rmcp added since.
    pub fn of_client_message(message: &'a ClientJsonRpcMessage) -> Option<Self> {
        of(
            message,
            client_request,
            client_notification,
            |result| match result {
                ClientResult::CustomResult(custom) => Some(is_error(&custom.0)),
                ClientResult::CreateMessageResult(_)
                | ClientResult::ListRootsResult(_)
                | ClientResult::ElicitResult(_)
                | ClientResult::EmptyResult(_) => Some(false),
                _ => None,
            },
        )
    }

    /// The envelope of a message a server sends or a client receives;
    /// `None` for a kind of message rmcp added since.
    pub fn of_server_message(message: &'a ServerJsonRpcMessage) -> Option<Self> {
        of(
            message,
            server_request,
            server_notification,
            |result| match result {
                ServerResult::CallToolResult(call) => Some(call.is_error == Some(true)),
                ServerResult::CustomResult(custom) => Some(is_error(&custom.0)),
                ServerResult::DiscoverResult(_)
                | ServerResult::InitializeResult(_)
                | ServerResult::CompleteResult(_)
                | ServerResult::GetPromptResult(_)
                | ServerResult::ListPromptsResult(_)
                | ServerResult::ListResourcesResult(_)
                | ServerResult::ListResourceTemplatesResult(_)
                | ServerResult::ReadResourceResult(_)
                | ServerResult::SubscriptionsListenResult(_)
                | ServerResult::ListToolsResult(_)
                | ServerResult::ListSkillsResult(_)
                | ServerResult::GetSkillResult(_)
                | ServerResult::ElicitResult(_)
                | ServerResult::CreateTaskResult(_)
                | ServerResult::GetTaskResult(_)
                | ServerResult::InputRequiredResult(_)
                | ServerResult::TaskAckResult(_)
                | ServerResult::EmptyResult(_) => Some(false),
                _ => None,
            },
        )
    }
}

/// The envelope of `message`, given how to name its requests' and
/// notifications' methods and how to tell a tool's error in its results.
fn of<'a, Req, Resp, Noti>(
    message: &'a JsonRpcMessage<Req, Resp, Noti>,
    request: fn(&'a Req) -> Option<Method<'a>>,
    notification: fn(&'a Noti) -> Option<Method<'a>>,
    tool_error: fn(&'a Resp) -> Option<bool>,
) -> Option<Envelope<'a>> {
    let envelope = |kind, id: Option<&'a NumberOrString>, method| Envelope {
        kind,
        id: id.map(|id| match id {
            NumberOrString::Number(number) => Id::Number(*number),
            NumberOrString::String(text) => Id::String(text),
        }),
        method,
        error_code: None,
        error_message: None,
        tool_error: false,
    };
    Some(match message {
        JsonRpcMessage::Request(sent) => {
            envelope(Kind::Request, Some(&sent.id), Some(request(&sent.request)?))
        }
        JsonRpcMessage::Notification(sent) => envelope(
            Kind::Notification,
            None,
            Some(notification(&sent.notification)?),
        ),
        JsonRpcMessage::Response(answer) => Envelope {
            tool_error: tool_error(&answer.result)?,
            ..envelope(Kind::Response, Some(&answer.id), None)
        },
        JsonRpcMessage::Error(error) => Envelope {
            error_code: Some(i64::from(error.error.code.0)),
            error_message: Some(&error.error.message),
            ..envelope(Kind::Error, error.id.as_ref(), None)
        },
    })
}

/// Whether a result rmcp holds as JSON has `"isError": true`.
fn is_error(result: &serde_json::Value) -> bool {
    result.get("isError") == Some(&serde_json::Value::Bool(true))
}

/// The method of a request or notification of one of rmcp's unions: each
/// named kind's constant, the custom kind's own string.
macro_rules! method_of {
    ($value:expr, $union:ident { $($kind:ident),* $(,)? }, $custom:ident) => {
        match $value {
            $($union::$kind(message) => Some(Method::Known(message.method.as_str())),)*
            $union::$custom(message) => Some(Method::Other(&message.method)),
            _ => None,
        }
    };
}

fn client_request(request: &ClientRequest) -> Option<Method<'_>> {
    method_of!(
        request,
        ClientRequest {
            PingRequest,
            InitializeRequest,
            DiscoverRequest,
            CompleteRequest,
            SetLevelRequest,
            GetPromptRequest,
            ListPromptsRequest,
            ListResourcesRequest,
            ListResourceTemplatesRequest,
            ReadResourceRequest,
            SubscriptionsListenRequest,
            SubscribeRequest,
            UnsubscribeRequest,
            CallToolRequest,
            ListToolsRequest,
            GetTaskRequest,
            UpdateTaskRequest,
            CancelTaskRequest,
            ListSkillsRequest,
            GetSkillRequest,
            ReadResourceDirectoryRequest,
        },
        CustomRequest
    )
}

fn client_notification(notification: &ClientNotification) -> Option<Method<'_>> {
    method_of!(
        notification,
        ClientNotification {
            CancelledNotification,
            ProgressNotification,
            InitializedNotification,
            RootsListChangedNotification,
        },
        CustomNotification
    )
}

fn server_request(request: &ServerRequest) -> Option<Method<'_>> {
    method_of!(
        request,
        ServerRequest {
            PingRequest,
            CreateMessageRequest,
            ListRootsRequest,
            ElicitRequest,
        },
        CustomRequest
    )
}

fn server_notification(notification: &ServerNotification) -> Option<Method<'_>> {
    method_of!(
        notification,
        ServerNotification {
            CancelledNotification,
            ProgressNotification,
            LoggingMessageNotification,
            ResourceUpdatedNotification,
            ResourceListChangedNotification,
            ToolListChangedNotification,
            PromptListChangedNotification,
            SubscriptionsAcknowledgedNotification,
            TaskStatusNotification,
        },
        CustomNotification
    )
}
