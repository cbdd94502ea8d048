//! nexo's side of server-to-client requests. Today: elicitation, answered
//! by a policy the caller picks (rmcp declines by default).

use rmcp::model::{
    ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability,
    FormElicitationCapability, JsonObject,
};
use rmcp::service::RequestContext;
use rmcp::{ClientHandler, ErrorData, RoleClient};
use serde_json::Value;

/// How to answer a server's elicitation request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ElicitationPolicy {
    /// Do not advertise elicitation; decline any request that comes anyway.
    #[default]
    Decline,
    /// Advertise form elicitation and accept each request with the defaults
    /// its schema gives (fields without a default are left out).
    SchemaDefaults,
}

/// The client handler behind every [`crate::Session`].
#[derive(Debug, Clone)]
pub struct Handler {
    info: ClientConfig,
    elicitation: ElicitationPolicy,
}

impl Handler {
    pub fn new(mut info: ClientConfig, elicitation: ElicitationPolicy) -> Self {
        if elicitation == ElicitationPolicy::SchemaDefaults {
            info.capabilities.elicitation =
                Some(ElicitationCapability::new().with_form(FormElicitationCapability::new()));
        }
        Self { info, elicitation }
    }
}

/// The `default` of each property of an elicitation schema.
pub fn schema_defaults(schema: &Value) -> JsonObject {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|properties| {
            properties
                .iter()
                .filter_map(|(name, property)| {
                    property
                        .get("default")
                        .map(|value| (name.clone(), value.clone()))
                })
                .collect()
        })
        .unwrap_or_default()
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        match (self.elicitation, request) {
            (
                ElicitationPolicy::SchemaDefaults,
                ElicitRequestParams::FormElicitationParams {
                    requested_schema, ..
                },
            ) => {
                let schema = serde_json::to_value(&requested_schema).unwrap_or_default();
                Ok(ElicitResult::new(ElicitationAction::Accept)
                    .with_content(Value::Object(schema_defaults(&schema))))
            }
            _ => Ok(ElicitResult::new(ElicitationAction::Decline)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_of_each_kind() {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "score": {"type": "number", "default": 95.5},
                "status": {"type": "string", "enum": ["a", "b"], "default": "a"},
                "verified": {"type": "boolean", "default": true},
                "nickname": {"type": "string"}
            }
        });
        assert_eq!(
            Value::Object(schema_defaults(&schema)),
            serde_json::json!({"name": "John Doe", "age": 30, "score": 95.5, "status": "a", "verified": true})
        );
        assert!(schema_defaults(&serde_json::json!({})).is_empty());
    }
}
