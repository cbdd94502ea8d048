//! What one endpoint offers: `/mcp` every upstream's tools, prompts and
//! resources under their federated names ([`crate::federation`]);
//! `/mcp/NAME` a virtual server's choice of them, renamed, re-described
//! and decided by its own policy ([`crate::settings::VirtualServer`]).
//! A tool's MCP Apps interface (`_meta.ui.resourceUri`, a `ui://`
//! resource of its upstream) is pointed at the resource's federated
//! address, so that a client reads it through the gateway like any other.

use std::sync::Arc;

use rmcp::model::{Prompt, Resource, ResourceTemplate, Tool};
use serde_json::Value;

use crate::federation::Federation;
use crate::policy::PolicyHandle;
use crate::settings::VirtualServer;

/// One endpoint's offer and the policy deciding its requests.
#[derive(Debug)]
pub struct View {
    pub offer: Offer,
    pub policy: Arc<PolicyHandle>,
}

#[derive(Debug)]
pub enum Offer {
    /// Everything, under the federated names.
    All,
    Virtual(VirtualServer),
}

/// An upstream's tool (or prompt, or resource) as an endpoint offers it.
#[derive(Debug, Clone)]
pub struct Offered<T> {
    pub server: String,
    /// Its name (or URI) on the upstream.
    pub upstream: String,
    /// As offered: renamed, re-described, its URI mapped.
    pub item: T,
}

impl View {
    /// The endpoint's name in logs: `/mcp` or `/mcp/NAME`.
    pub fn path(&self) -> String {
        match &self.offer {
            Offer::All => nexo_serve::MCP_PATH.to_owned(),
            Offer::Virtual(server) => format!("{}/{}", nexo_serve::MCP_PATH, server.name),
        }
    }

    /// The tools offered, before the policy and the detectors see them.
    pub fn tools(&self, federation: &Federation) -> Vec<Offered<Tool>> {
        let catalog = federation.catalog();
        match &self.offer {
            Offer::All => catalog
                .tools()
                .filter_map(|(server, tool)| {
                    let upstream = tool.name.to_string();
                    let mut tool = tool.clone();
                    tool.name = catalog
                        .names()
                        .qualified(server, &upstream)?
                        .to_owned()
                        .into();
                    federate_ui(federation, server, &mut tool);
                    Some(Offered {
                        server: server.to_owned(),
                        upstream,
                        item: tool,
                    })
                })
                .collect(),
            Offer::Virtual(chosen) => chosen
                .tools
                .iter()
                .filter_map(|(offered, chosen)| {
                    let (_, tool) = catalog.tools().find(|(server, tool)| {
                        *server == chosen.server && tool.name == chosen.name.as_str()
                    })?;
                    let mut tool = tool.clone();
                    tool.name = offered.clone().into();
                    if let Some(description) = &chosen.description {
                        tool.description = Some(description.clone().into());
                    }
                    federate_ui(federation, &chosen.server, &mut tool);
                    Some(Offered {
                        server: chosen.server.clone(),
                        upstream: chosen.name.clone(),
                        item: tool,
                    })
                })
                .collect(),
        }
    }

    /// The upstream and its own name for the tool offered as `name`.
    pub fn resolve_tool(&self, federation: &Federation, name: &str) -> Option<(String, String)> {
        match &self.offer {
            Offer::All => federation
                .catalog()
                .names()
                .resolve(name)
                .map(|(server, tool)| (server.to_owned(), tool.to_owned())),
            Offer::Virtual(chosen) => chosen
                .tools
                .get(name)
                .map(|chosen| (chosen.server.clone(), chosen.name.clone())),
        }
    }

    /// The prompts offered.
    pub async fn prompts(&self, federation: &Federation) -> Vec<Offered<Prompt>> {
        let prompts = federation.prompts().await;
        match &self.offer {
            Offer::All => {
                let names = nexo_client::namespace::Namespace::build(
                    prompts
                        .iter()
                        .map(|(server, prompt)| (server.as_str(), prompt.name.as_str())),
                );
                prompts
                    .into_iter()
                    .filter_map(|(server, mut prompt)| {
                        let upstream = prompt.name.clone();
                        prompt.name = names.qualified(&server, &upstream)?.to_owned();
                        Some(Offered {
                            server,
                            upstream,
                            item: prompt,
                        })
                    })
                    .collect()
            }
            Offer::Virtual(chosen) => chosen
                .prompts
                .iter()
                .filter_map(|(offered, chosen)| {
                    let (_, prompt) = prompts.iter().find(|(server, prompt)| {
                        *server == chosen.server && prompt.name == chosen.name
                    })?;
                    let mut prompt = prompt.clone();
                    prompt.name = offered.clone();
                    if let Some(description) = &chosen.description {
                        prompt.description = Some(description.clone());
                    }
                    Some(Offered {
                        server: chosen.server.clone(),
                        upstream: chosen.name.clone(),
                        item: prompt,
                    })
                })
                .collect(),
        }
    }

    /// The upstream and its own name for the prompt offered as `name`.
    pub async fn resolve_prompt(
        &self,
        federation: &Federation,
        name: &str,
    ) -> Option<(String, String)> {
        match &self.offer {
            Offer::All => self
                .prompts(federation)
                .await
                .into_iter()
                .find(|offered| offered.item.name == name)
                .map(|offered| (offered.server, offered.upstream)),
            Offer::Virtual(chosen) => chosen
                .prompts
                .get(name)
                .map(|chosen| (chosen.server.clone(), chosen.name.clone())),
        }
    }

    /// The resources offered, each URI mapped to its federated address.
    pub async fn resources(&self, federation: &Federation) -> Vec<Offered<Resource>> {
        federation
            .resources()
            .await
            .into_iter()
            .filter(|(server, _)| self.offers_resources_of(server))
            .filter_map(|(server, mut resource)| {
                let upstream = resource.uri.clone();
                resource.uri = federation.qualify_uri(&server, &upstream)?;
                Some(Offered {
                    server,
                    upstream,
                    item: resource,
                })
            })
            .collect()
    }

    /// The resource templates offered, each mapped to its federated
    /// address (`nexo://SERVER/TEMPLATE`: what it expands to is a federated
    /// address of that server).
    pub async fn resource_templates(&self, federation: &Federation) -> Vec<ResourceTemplate> {
        federation
            .resource_templates()
            .await
            .into_iter()
            .filter(|(server, _)| self.offers_resources_of(server))
            .filter_map(|(server, mut template)| {
                template.uri_template = federation.qualify_uri(&server, &template.uri_template)?;
                Some(template)
            })
            .collect()
    }

    /// The upstream and its own URI for a federated address.
    pub fn resolve_uri(&self, federation: &Federation, address: &str) -> Option<(String, String)> {
        let (server, uri) = federation.resolve_uri(address)?;
        self.offers_resources_of(&server)
            .then(|| (server, uri.to_owned()))
    }

    /// Whether anything of `server` is offered here: its tasks and
    /// completions are reachable only then.
    pub fn offers_anything_of(&self, server: &str) -> bool {
        match &self.offer {
            Offer::All => true,
            Offer::Virtual(chosen) => {
                chosen.resources.contains(server)
                    || chosen
                        .tools
                        .values()
                        .chain(chosen.prompts.values())
                        .any(|offered| offered.server == server)
            }
        }
    }

    fn offers_resources_of(&self, server: &str) -> bool {
        match &self.offer {
            Offer::All => true,
            Offer::Virtual(chosen) => chosen.resources.contains(server),
        }
    }
}

/// Points `tool`'s MCP Apps interface (`_meta.ui.resourceUri`) at the
/// federated address of that resource of `server`.
fn federate_ui(federation: &Federation, server: &str, tool: &mut Tool) {
    let Some(meta) = tool.meta.as_mut() else {
        return;
    };
    let Some(Value::Object(ui)) = meta.0.get_mut("ui") else {
        return;
    };
    let Some(Value::String(uri)) = ui.get_mut("resourceUri") else {
        return;
    };
    if let Some(federated) = federation.qualify_uri(server, uri) {
        *uri = federated;
    }
}
