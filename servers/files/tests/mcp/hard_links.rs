//! Issue 15, point 1: a hard link inside a root to a file outside it is the
//! outside file itself, so every tool that reads or describes a regular file
//! refuses one with more than one link (`hard_link`), unless the server runs
//! with `--allow-hard-links`.

use nexo_files::{Files, FilesOptions};
use nexo_testkit::{Error, call_tool, connect, only_text};
use serde_json::json;

use crate::{Project, error_code, options};

/// A project whose `notes.md` and `src/Secret.java` are hard links to files
/// outside it.
fn project_with_links() -> (tempfile::TempDir, Project) {
    let project = Project::create();
    let outside = tempfile::tempdir().unwrap();
    for (name, link) in [
        ("secret.md", "notes.md"),
        ("Secret.java", "src/Secret.java"),
    ] {
        let secret = outside.path().join(name);
        std::fs::write(&secret, "password=hunter2\n").unwrap();
        std::fs::hard_link(&secret, project.root.join(link)).unwrap();
    }
    (outside, project)
}

#[tokio::test]
async fn issue_15_a_hard_link_to_a_file_outside_the_root_is_refused() -> Result<(), Error> {
    let (_outside, project) = project_with_links();
    let client = connect(Files::new(options(&[&project.root]))?).await?;
    for (tool, arguments) in [
        ("read_text_file", json!({ "path": "notes.md" })),
        ("readJavaFile", json!({ "path": "src/Secret.java" })),
        ("get_file_info", json!({ "path": "notes.md" })),
    ] {
        let result = call_tool(&client, tool, arguments).await?;
        assert_eq!(error_code(&result), "hard_link", "{tool}: {result:#?}");
        let message = only_text(&result).unwrap_or_default();
        assert!(message.contains("--allow-hard-links"), "{message}");
        assert!(!message.contains("hunter2"), "{message}");
    }
    let several = call_tool(
        &client,
        "read_multiple_files",
        json!({ "paths": ["notes.md", "README.md"] }),
    )
    .await?;
    let files = &several.structured_content.as_ref().ok_or("no content")?["files"];
    assert_eq!(files[0]["error"]["code"], "hard_link", "{files}");
    assert_eq!(files[1]["content"], "# Project\n\nRead me.\n", "{files}");

    // A file with one name is still read.
    let own = call_tool(&client, "read_text_file", json!({ "path": "README.md" })).await?;
    assert_eq!(own.is_error, Some(false), "{own:#?}");
    client.cancel().await?;
    Ok(())
}

#[tokio::test]
async fn allow_hard_links_serves_them() -> Result<(), Error> {
    let (_outside, project) = project_with_links();
    let client = connect(Files::new(FilesOptions {
        allow_hard_links: true,
        ..options(&[&project.root])
    })?)
    .await?;
    let result = call_tool(&client, "read_text_file", json!({ "path": "notes.md" })).await?;
    assert_eq!(
        only_text(&result),
        Some("password=hunter2\n"),
        "{result:#?}"
    );
    let info = call_tool(&client, "get_file_info", json!({ "path": "notes.md" })).await?;
    assert_eq!(info.is_error, Some(false), "{info:#?}");
    client.cancel().await?;
    Ok(())
}
