//! `list_changed` after a real change. A checker cannot make a server
//! change its lists, so it watches: the tools, resources and prompts listed
//! at the start are listed again between the probes and at the end, and a
//! list that changed must have been announced by the matching
//! `notifications/*/list_changed` in the session, under a capability that
//! declares `listChanged` (otherwise the server changed a list it says
//! never changes). An HTTP server that speaks 2026-07-28 gets a
//! `subscriptions/listen` stream opened at the start, which must carry the
//! change too (on stdio each link is a server process of its own, so a
//! stream there would watch another instance). When nothing changed on a
//! server that declares `listChanged`, the report says the property was not
//! observed.

use serde_json::{Value, json};

use crate::Run;
use crate::finding::{Finding, Group, Severity, trim};
use crate::link::{Link, Listening};

/// A 2026-07-28 `subscriptions/listen` stream held open for the run.
pub(crate) struct Listener {
    /// The link it was opened on (kept alive with it).
    _link: Link,
    stream: Listening,
}

/// The lists watched: capability, method, result key, notification.
const LISTS: [(&str, &str, &str, &str); 3] = [
    (
        "tools",
        "tools/list",
        "tools",
        "notifications/tools/list_changed",
    ),
    (
        "resources",
        "resources/list",
        "resources",
        "notifications/resources/list_changed",
    ),
    (
        "prompts",
        "prompts/list",
        "prompts",
        "notifications/prompts/list_changed",
    ),
];

/// What was seen of one list since the start.
#[derive(Debug, Default, Clone)]
pub(crate) struct Watched {
    /// The first change seen: the list before and after.
    pub(crate) change: Option<(Vec<Value>, Vec<Value>)>,
}

impl Run {
    /// Opens a 2026-07-28 `subscriptions/listen` stream for every list,
    /// where the server speaks that revision over HTTP.
    pub(crate) async fn listen(&mut self) {
        if !self.runs(Group::Capabilities) || !matches!(*self.link, Link::Http(_)) {
            return;
        }
        let Ok(link) = self.fresh_link().await else {
            return;
        };
        link.speak_2026();
        let discover = link
            .request("server/discover", crate::link::stateless_params(json!({})))
            .await;
        if !crate::stateless::speaks_2026(&discover) {
            return;
        }
        let Link::Http(http) = &link else {
            return;
        };
        let message = json!({"jsonrpc": "2.0", "id": http.next_id(), "method": "subscriptions/listen",
        "params": crate::link::stateless_params(json!({"notifications": {
            "toolsListChanged": true, "resourcesListChanged": true, "promptsListChanged": true,
        }}))});
        match http.listen(&message).await {
            Ok(stream) => {
                self.listener = Some(Listener {
                    _link: link,
                    stream,
                })
            }
            Err(error) => self.probe(
                "list-changed-2026",
                Group::Capabilities,
                "skipped",
                format!("subscriptions/listen: {error}"),
            ),
        }
    }

    /// The list as the run read it at the start.
    fn initial(&self, capability: &str) -> &[Value] {
        match capability {
            "tools" => &self.tools,
            "resources" => &self.resources,
            _ => &self.prompts,
        }
    }

    /// Lists every declared list again and keeps the first change of each.
    pub(crate) async fn relist(&mut self) {
        for (index, (capability, method, key, _)) in LISTS.into_iter().enumerate() {
            if !self.declares(capability) || self.watched[index].change.is_some() {
                continue;
            }
            let Ok(now) = self.list(method, key).await else {
                continue;
            };
            let before = self.initial(capability);
            // The order alone is no change (the 2026 probes judge order).
            if sorted(&now) != sorted(before) {
                self.watched[index].change = Some((before.to_vec(), now));
            }
        }
    }
}

/// Judges what [`Run::relist`] saw against the notifications the session
/// carried.
pub(crate) fn judge(run: &mut Run) {
    if !run.runs(Group::Capabilities) {
        return;
    }
    let notifications = run.link.notifications();
    let mut observed = false;
    for (index, (capability, _, _, notification)) in LISTS.into_iter().enumerate() {
        let Some((before, after)) = run.watched[index].change.clone() else {
            continue;
        };
        observed = true;
        let notified = notifications
            .iter()
            .any(|message| message.get("method").and_then(Value::as_str) == Some(notification));
        let declared = run
            .initialize
            .get("capabilities")
            .and_then(|capabilities| capabilities.get(capability))
            .and_then(|capability| capability.get("listChanged"))
            .and_then(Value::as_bool)
            == Some(true);
        let evidence = format!(
            "at the start: {}\nlater: {}",
            trim(&names(&before), 300),
            trim(&names(&after), 300)
        );
        if let Some(listener) = &run.listener {
            let carried =
                listener.stream.messages().iter().any(|message| {
                    message.get("method").and_then(Value::as_str) == Some(notification)
                });
            if declared && !carried {
                run.push(
                    Finding::new(
                        "list-changed-not-on-listen",
                        Severity::Error,
                        Group::Capabilities,
                        format!("the {capability} list changed, but the 2026-07-28 subscriptions/listen stream opened at the start never carried {notification}"),
                        "spec 2026-07-28, subscriptions: list_changed reaches a client only on its subscriptions/listen stream",
                        "send list_changed notifications on every open subscriptions/listen stream that asked for them",
                    )
                    .evidence(format!(
                        "{evidence}\non the listen stream (HTTP {}): {}",
                        listener.stream.status,
                        trim(&format!("{:?}", listener.stream.messages()), 300)
                    ))
                    .subject(notification),
                );
            }
        }
        if !declared {
            run.push(
                Finding::new(
                    "list-changed-undeclared",
                    Severity::Warning,
                    Group::Capabilities,
                    format!("the {capability} list changed during the session, but `{capability}.listChanged` is not declared"),
                    "spec, lifecycle (capability negotiation): without listChanged a client may cache the list for the session and never see the change",
                    "declare `listChanged: true` on the capability and send its notifications/*/list_changed, or keep the list fixed for the session",
                )
                .evidence(evidence)
                .subject(notification),
            );
        } else if !notified {
            run.push(
                Finding::new(
                    "list-changed-not-notified",
                    Severity::Error,
                    Group::Capabilities,
                    format!("the {capability} list changed during the session without {notification}"),
                    "spec 2025-11-25, server features (list changed): a server that declares listChanged SHOULD notify when the list changes; clients keep the stale list",
                    "send notifications/*/list_changed (tools, resources or prompts) whenever the list changes",
                )
                .evidence(evidence)
                .subject(notification),
            );
        }
    }
    if let Some(listener) = &run.listener {
        let first = listener.stream.messages().into_iter().next();
        let note = match first.as_ref().and_then(|message| message.get("error")) {
            Some(error) => format!("subscriptions/listen refused: {error}"),
            None => format!(
                "subscriptions/listen open (HTTP {})",
                listener.stream.status
            ),
        };
        run.probe("list-changed-2026", Group::Capabilities, "ran", note);
    }
    if observed {
        run.probe("list-changed", Group::Capabilities, "ran", "a list changed");
    } else {
        run.probe(
            "list-changed",
            Group::Capabilities,
            "not-applicable",
            "no list changed during the run",
        );
        let promised = LISTS.iter().any(|(capability, ..)| {
            run.initialize
                .pointer(&format!("/capabilities/{capability}/listChanged"))
                .and_then(Value::as_bool)
                == Some(true)
        });
        if promised {
            run.push(
                Finding::new(
                    "list-changed-not-observed",
                    Severity::Info,
                    Group::Capabilities,
                    "no list changed during the run, so list_changed notifications were not observed",
                    "a checker cannot make a server change its lists; they were listed at the start, between the probes and at the end",
                    "test by hand: change a tool, resource or prompt while a client is connected, and see that the client gets notifications/*/list_changed (in 2026-07-28, on its subscriptions/listen stream)",
                ),
            );
        }
    }
}

fn sorted(items: &[Value]) -> Vec<String> {
    let mut texts: Vec<String> = items.iter().map(Value::to_string).collect();
    texts.sort();
    texts
}

fn names(items: &[Value]) -> String {
    let names: Vec<&str> = items
        .iter()
        .map(|item| {
            item.get("name")
                .or_else(|| item.get("uri"))
                .and_then(Value::as_str)
                .unwrap_or("?")
        })
        .collect();
    format!("[{}]", names.join(", "))
}
