//! The files handler driven through rmcp in-process, over the shared test
//! kit's `tokio::io::duplex` pipe, on real directories made for each test: the
//! ordinary paths of every tool ([`tools`]) and MCP roots ([`roots`]). The
//! attack corpus runs against the built binary, in the CLI's end-to-end
//! tests.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail loudly, with the value that broke them"
)]

mod hard_links;
mod roots;
mod tools;

use std::path::{Path, PathBuf};

use nexo_files::FilesOptions;
use nexo_testkit::only_text;
use rmcp::model::{CallToolResult, Tool};
use serde_json::Value;

/// A project like seed 004's: Java sources, configuration, documentation,
/// build output, dependencies and repository metadata.
pub struct Project {
    _base: tempfile::TempDir,
    /// The project directory, canonical.
    pub root: PathBuf,
}

impl Project {
    pub fn create() -> Self {
        let base = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(base.path()).unwrap().join("project");
        let lines: String = (1..=100).map(|n| format!("line {n}\n")).collect();
        for (path, content) in [
            ("pom.xml", "<project/>\n"),
            ("README.md", "# Project\n\nRead me.\n"),
            (
                "src/main/java/App.java",
                "package app;\n\nclass App {\n    public static void main(String[] a) {}\n}\n",
            ),
            (
                "src/main/resources/application.yml",
                "server:\n  port: 8080\n",
            ),
            ("docs/guide.md", "# Guide\n"),
            ("node_modules/lib/index.js", "module.exports = 1;\n"),
            ("logs/app.txt", &lines),
            (".git/config", "[core]\n"),
            (".env", "SECRET=1\n"),
        ] {
            write(&root.join(path), content.as_bytes());
        }
        write(
            &root.join("target/App.class"),
            b"\xca\xfe\xba\xbe\0\0\0\x34",
        );
        write(&root.join("data.json"), b"{\"a\":\0}");
        Self { _base: base, root }
    }

    pub fn path(&self, relative: &str) -> String {
        self.root.join(relative).display().to_string()
    }
}

pub fn write(path: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

/// Options serving `roots`.
pub fn options(roots: &[&Path]) -> FilesOptions {
    FilesOptions {
        roots: roots.iter().map(|root| root.to_path_buf()).collect(),
        ..FilesOptions::default()
    }
}

/// The structured content of a successful result, after checking that it
/// has what the tool's output schema requires of a success.
pub fn success(tool: &Tool, result: &CallToolResult) -> Value {
    assert_eq!(result.is_error, Some(false), "{result:#?}");
    let structured = result
        .structured_content
        .clone()
        .expect("structured content");
    let schema = tool.output_schema.as_ref().expect("an output schema");
    let required = schema["anyOf"][0]["required"]
        .as_array()
        .expect("required fields");
    for field in required {
        let field = field.as_str().unwrap();
        assert!(
            structured.get(field).is_some(),
            "{} lacks `{field}`: {structured}",
            tool.name
        );
    }
    assert!(structured.get("error").is_none(), "{structured}");
    structured
}

/// The error code of a failed result, after checking its shape.
pub fn error_code(result: &CallToolResult) -> String {
    assert_eq!(result.is_error, Some(true), "{result:#?}");
    let structured = result
        .structured_content
        .as_ref()
        .expect("structured content");
    let error = &structured["error"];
    assert_eq!(error["message"].as_str(), only_text(result), "{structured}");
    error["code"].as_str().expect("an error code").to_owned()
}
