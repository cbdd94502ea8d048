//! MCP roots: a client that offers them narrows the server's directories to
//! their intersection, asked again after `notifications/roots/list_changed`;
//! one that names no `file:` root leaves the command-line roots in force.

#![expect(
    deprecated,
    reason = "roots are what these tests are about; SEP-2577 drops them after the 2025 era"
)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nexo_files::{Files, FilesOptions};
use nexo_testkit::{Error, call_tool, only_text, serve_in_process};
use rmcp::{
    ClientHandler, RoleClient, ServiceExt,
    model::{ClientCapabilities, ClientConfig, ErrorData, Implementation, ListRootsResult, Root},
    service::{RequestContext, RunningService},
};
use serde_json::json;

use crate::{Project, error_code, options};

/// A client whose roots the test changes.
#[derive(Clone, Default)]
struct RootsClient {
    uris: Arc<Mutex<Vec<String>>>,
}

impl RootsClient {
    fn set(&self, paths: &[&std::path::Path]) {
        *self.uris.lock().unwrap() = paths
            .iter()
            .map(|path| url::Url::from_file_path(path).unwrap().to_string())
            .collect();
    }
}

impl ClientHandler for RootsClient {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder()
                .enable_roots()
                .enable_roots_list_changed()
                .build(),
            Implementation::new("roots-test", "0"),
        )
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        let uris = self.uris.lock().unwrap().clone();
        Ok(ListRootsResult::new(
            uris.into_iter().map(Root::new).collect(),
        ))
    }
}

/// The text of `list_allowed_directories`.
async fn allowed(client: &RunningService<RoleClient, RootsClient>) -> Result<String, Error> {
    let result = call_tool(client, "list_allowed_directories", json!({})).await?;
    Ok(only_text(&result).ok_or("no text")?.to_owned())
}

/// `handler` connected to a [`Files`] built from `options`.
async fn connect_roots_client(
    options: FilesOptions,
    handler: RootsClient,
) -> Result<RunningService<RoleClient, RootsClient>, Error> {
    Ok(handler
        .serve(serve_in_process(Files::new(options)?))
        .await?)
}

/// Waits until the server's directories are `expected` (it asks for the
/// client's roots on its own after a change notification).
async fn wait_for(
    client: &RunningService<RoleClient, RootsClient>,
    expected: &str,
) -> Result<(), Error> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let now = allowed(client).await?;
        if now == expected {
            return Ok(());
        }
        assert!(
            Instant::now() < deadline,
            "still {now:?}, expected {expected:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn client_roots_narrow_the_directories_and_follow_changes() -> Result<(), Error> {
    let project = Project::create();
    let handler = RootsClient::default();
    handler.set(&[&project.root.join("src")]);
    let client = connect_roots_client(options(&[&project.root]), handler.clone()).await?;

    let src = project.path("src");
    assert_eq!(
        allowed(&client).await?,
        format!("Allowed directories:\n{src}")
    );
    let result = call_tool(
        &client,
        "read_text_file",
        json!({ "path": project.path("pom.xml") }),
    )
    .await?;
    assert_eq!(
        error_code(&result),
        "path_outside_roots",
        "pom.xml is outside the client's root"
    );
    let result = call_tool(
        &client,
        "read_text_file",
        json!({ "path": "main/java/App.java" }),
    )
    .await?;
    assert_eq!(
        result.is_error,
        Some(false),
        "relative paths start at the effective root"
    );

    // A wider client root gives no more than the command line allows.
    handler.set(&[project.root.parent().unwrap()]);
    client.notify_roots_list_changed().await.unwrap();
    wait_for(
        &client,
        &format!("Allowed directories:\n{}", project.root.display()),
    )
    .await?;

    // A disjoint one leaves nothing.
    let elsewhere = tempfile::tempdir().unwrap();
    handler.set(&[elsewhere.path()]);
    client.notify_roots_list_changed().await.unwrap();
    wait_for(&client, "Allowed directories:\n").await?;
    let result = call_tool(&client, "list_directory", json!({ "path": "." })).await?;
    assert_eq!(error_code(&result), "path_outside_roots");
    assert!(
        only_text(&result).is_some_and(|text| text.contains("none of the client's roots")),
        "{result:?}"
    );
    client.cancel().await?;
    Ok(())
}

#[tokio::test]
async fn a_client_without_file_roots_leaves_the_command_line_roots() -> Result<(), Error> {
    let project = Project::create();
    let handler = RootsClient::default();
    handler
        .uris
        .lock()
        .unwrap()
        .push("https://example.com/repo".to_owned());
    let client = connect_roots_client(options(&[&project.root]), handler).await?;
    assert_eq!(
        allowed(&client).await?,
        format!("Allowed directories:\n{}", project.root.display())
    );
    client.cancel().await?;
    Ok(())
}
