//! Every tool's ordinary path on a real project: listings, trees with
//! excludes, whole files, head and tail, several files, searches, file
//! information, seed 004's tools, reports, and the limits.

use std::path::PathBuf;
use std::time::Duration;

use nexo_files::{Files, FilesOptions, Limits, tools};
use nexo_testkit::{Error, call_tool, connect, contains, only_text};
use rmcp::model::Tool;
use serde_json::{Value, json};

use crate::{Project, error_code, options, success};

/// The tool called `name`, as a server with reports offers it.
fn tool(name: &str) -> Tool {
    let all = tools(&FilesOptions {
        allow_reports: true,
        ..FilesOptions::default()
    });
    all.into_iter().find(|tool| tool.name == name).expect(name)
}

#[tokio::test]
async fn tools_are_listed_with_truthful_annotations() -> Result<(), Error> {
    let project = Project::create();
    let client = connect(Files::new(options(&[&project.root]))?).await?;
    let listed = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = listed.iter().map(|tool| tool.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "directory_tree",
            "get_file_info",
            "list_allowed_directories",
            "list_directory",
            "readJavaFile",
            "readProjectStructure",
            "read_multiple_files",
            "read_text_file",
            "search_files",
        ]
    );
    assert_eq!(listed, tools(&options(&[&project.root])));
    for tool in &listed {
        let annotations = serde_json::to_value(tool.annotations.as_ref().unwrap()).unwrap();
        assert_eq!(
            annotations,
            json!({
                "readOnlyHint": true,
                "destructiveHint": false,
                "idempotentHint": true,
                "openWorldHint": false,
            }),
            "{}",
            tool.name
        );
        assert!(tool.output_schema.is_some(), "{}", tool.name);
        assert!(tool.description.as_ref().is_some_and(|d| d.len() > 40));
    }
    let report = serde_json::to_value(tool("write_report").annotations.unwrap()).unwrap();
    assert_eq!(report["readOnlyHint"], false);
    assert_eq!(
        report["destructiveHint"], false,
        "a report never overwrites"
    );
    assert_eq!(report["idempotentHint"], false, "each call adds a report");
    client.cancel().await?;
    Ok(())
}

#[tokio::test]
async fn allowed_directories_and_listings() -> Result<(), Error> {
    let project = Project::create();
    let docs = project.root.join("docs");
    let client = connect(Files::new(options(&[&project.root, &docs]))?).await?;

    let result = call_tool(&client, "list_allowed_directories", json!({})).await?;
    let structured = success(&tool("list_allowed_directories"), &result);
    assert_eq!(
        only_text(&result),
        Some(
            format!(
                "Allowed directories:\n{}\n{}",
                project.root.display(),
                docs.display()
            )
            .as_str()
        )
    );
    assert_eq!(structured["directories"][1], docs.display().to_string());

    let result = call_tool(&client, "list_directory", json!({ "path": "." })).await?;
    let structured = success(&tool("list_directory"), &result);
    assert_eq!(
        only_text(&result),
        Some(
            "[FILE] .env\n[FILE] README.md\n[FILE] data.json\n[DIR] docs\n[DIR] logs\n\
         [DIR] node_modules\n[FILE] pom.xml\n[DIR] src\n[DIR] target"
        ),
        ".git is hidden"
    );
    assert_eq!(structured["path"], project.root.display().to_string());
    assert_eq!(
        structured["entries"][3],
        json!({ "name": "docs", "type": "directory" })
    );

    let result = call_tool(
        &client,
        "list_directory",
        json!({ "path": project.path("docs") }),
    )
    .await?;
    assert_eq!(only_text(&result), Some("[FILE] guide.md"));
    let result = call_tool(&client, "list_directory", json!({ "path": "pom.xml" })).await?;
    assert_eq!(error_code(&result), "not_a_directory");
    let result = call_tool(&client, "list_directory", json!({ "path": "missing" })).await?;
    assert_eq!(error_code(&result), "not_found");
    client.cancel().await?;
    Ok(())
}

#[tokio::test]
async fn a_root_given_twice_is_listed_once_as_first_spelled_and_answers_to_both()
-> Result<(), Error> {
    let project = Project::create();
    let alias = project.root.with_file_name("alias");
    std::os::unix::fs::symlink(&project.root, &alias)?;
    let with_slash = PathBuf::from(format!("{}/", project.root.display()));
    let (alias, root, with_slash) = (
        alias.as_path(),
        project.root.as_path(),
        with_slash.as_path(),
    );
    for (given, shown) in [
        ([alias, root, with_slash], alias),
        ([root, with_slash, alias], root),
    ] {
        let client = connect(Files::new(options(&given))?).await?;
        let result = call_tool(&client, "list_allowed_directories", json!({})).await?;
        let listed = format!("Allowed directories:\n{}", shown.display());
        assert_eq!(only_text(&result), Some(listed.as_str()), "{given:?}");
        for spelling in [alias, root] {
            let path = spelling.join("pom.xml").display().to_string();
            let result = call_tool(&client, "read_text_file", json!({ "path": path })).await?;
            assert_eq!(
                only_text(&result),
                Some("<project/>\n"),
                "{path} with {given:?}"
            );
        }
        let result = call_tool(
            &client,
            "read_text_file",
            json!({ "path": "/elsewhere.md" }),
        )
        .await?;
        assert_eq!(error_code(&result), "path_outside_roots");
        let message = format!("`{}`", shown.display());
        assert!(
            only_text(&result).is_some_and(|text| text.contains(&message)),
            "the message names {message}: {result:?}"
        );
        client.cancel().await?;
    }
    Ok(())
}

#[tokio::test]
async fn trees_leave_out_what_is_excluded() -> Result<(), Error> {
    let project = Project::create();
    let client = connect(Files::new(options(&[&project.root]))?).await?;
    let result = call_tool(
        &client,
        "directory_tree",
        json!({ "path": project.path("src"), "excludePatterns": ["resources"] }),
    )
    .await?;
    let structured = success(&tool("directory_tree"), &result);
    let expected = json!([{
        "name": "main", "type": "directory", "children": [{
            "name": "java", "type": "directory", "children": [
                { "name": "App.java", "type": "file" }
            ]
        }]
    }]);
    assert_eq!(structured["tree"], expected);
    let from_text: Value = serde_json::from_str(only_text(&result).ok_or("no text")?)?;
    assert_eq!(from_text, expected, "the text is the same tree as JSON");
    assert!(
        only_text(&result).is_some_and(|text| text.contains("\n  {\n    \"name\": \"main\"")),
        "2-space indent"
    );

    let result = call_tool(
        &client,
        "directory_tree",
        json!({ "path": ".", "excludePatterns": ["node_modules", "target/**", "*.txt"] }),
    )
    .await?;
    let structured = success(&tool("directory_tree"), &result);
    let names: Vec<&str> = structured["tree"]
        .as_array()
        .unwrap()
        .iter()
        .map(|node| node["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            ".env",
            "README.md",
            "data.json",
            "docs",
            "logs",
            "pom.xml",
            "src",
            "target"
        ]
    );
    let logs = &structured["tree"][4];
    assert_eq!(logs["children"], json!([]), "app.txt is excluded: {logs}");

    let result = call_tool(
        &client,
        "directory_tree",
        json!({ "path": ".", "excludePatterns": ["["] }),
    )
    .await?;
    assert_eq!(error_code(&result), "invalid_argument");
    client.cancel().await?;
    Ok(())
}

#[tokio::test]
async fn text_files_whole_head_and_tail() -> Result<(), Error> {
    let project = Project::create();
    let client = connect(Files::new(options(&[&project.root]))?).await?;
    let result = call_tool(&client, "read_text_file", json!({ "path": "README.md" })).await?;
    let structured = success(&tool("read_text_file"), &result);
    assert_eq!(only_text(&result), Some("# Project\n\nRead me.\n"));
    assert_eq!(structured["content"].as_str(), only_text(&result));
    assert_eq!(structured["path"], project.path("README.md"));

    let head = call_tool(
        &client,
        "read_text_file",
        json!({ "path": "logs/app.txt", "head": 2 }),
    )
    .await?;
    assert_eq!(only_text(&head), Some("line 1\nline 2\n"));
    let tail = call_tool(
        &client,
        "read_text_file",
        json!({ "path": "logs/app.txt", "tail": 3 }),
    )
    .await?;
    assert_eq!(only_text(&tail), Some("line 98\nline 99\nline 100\n"));
    let both = call_tool(
        &client,
        "read_text_file",
        json!({ "path": "logs/app.txt", "head": 1, "tail": 1 }),
    )
    .await?;
    assert_eq!(error_code(&both), "invalid_argument");

    for (path, code) in [
        ("target/App.class", "extension_not_allowed"),
        ("data.json", "binary_file"),
        (".env", "extension_not_allowed"),
        (".git/config", "hidden_path"),
        ("src", "not_a_regular_file"),
    ] {
        let result = call_tool(&client, "read_text_file", json!({ "path": path })).await?;
        assert_eq!(error_code(&result), code, "{path}");
    }
    client.cancel().await?;
    Ok(())
}

#[tokio::test]
async fn several_files_in_one_call() -> Result<(), Error> {
    let project = Project::create();
    let client = connect(Files::new(options(&[&project.root]))?).await?;
    let result = call_tool(
        &client,
        "read_multiple_files",
        json!({ "paths": ["pom.xml", "../outside.md", "docs/guide.md"] }),
    )
    .await?;
    let structured = success(&tool("read_multiple_files"), &result);
    assert_eq!(
        structured["files"][0],
        json!({ "path": "pom.xml", "content": "<project/>\n" })
    );
    assert!(
        contains(
            &structured["files"][1],
            &json!({ "path": "../outside.md", "error": { "code": "path_outside_roots" } })
        ),
        "{structured}"
    );
    assert_eq!(structured["files"][2]["content"], "# Guide\n");
    let parts: Vec<&str> = only_text(&result)
        .ok_or("no text")?
        .split("\n---\n")
        .collect();
    assert_eq!(parts[0], "pom.xml:\n<project/>\n\n");
    assert!(
        parts[1].starts_with("../outside.md: Error - `../outside.md` is outside"),
        "{}",
        parts[1]
    );
    assert_eq!(parts[2], "docs/guide.md:\n# Guide\n\n");

    let none = call_tool(&client, "read_multiple_files", json!({ "paths": [] })).await?;
    assert_eq!(error_code(&none), "invalid_argument");
    client.cancel().await?;
    Ok(())
}

#[tokio::test]
async fn the_whole_of_read_multiple_files_stays_within_the_byte_limit() -> Result<(), Error> {
    let project = Project::create();
    let mut options = options(&[&project.root]);
    options.limits.max_file_bytes = 35;
    let client = connect(Files::new(options)?).await?;
    let result = call_tool(
        &client,
        "read_multiple_files",
        json!({ "paths": ["README.md", "README.md", "pom.xml"] }),
    )
    .await?;
    let structured = success(&tool("read_multiple_files"), &result);
    assert_eq!(structured["files"][0]["content"], "# Project\n\nRead me.\n");
    assert_eq!(structured["files"][1]["error"]["code"], "limit_exceeded");
    assert_eq!(
        structured["files"][2]["content"], "<project/>\n",
        "it still fits"
    );
    client.cancel().await?;
    Ok(())
}

#[tokio::test]
async fn a_file_over_the_limit_names_the_per_file_limit_whatever_the_budget_left()
-> Result<(), Error> {
    let project = Project::create();
    crate::write(&project.root.join("big.md"), &[b'x'; 50]);
    let mut options = options(&[&project.root]);
    options.limits.max_file_bytes = 35;
    let client = connect(Files::new(options)?).await?;
    let result = call_tool(
        &client,
        "read_multiple_files",
        json!({ "paths": ["README.md", "big.md"] }),
    )
    .await?;
    let structured = success(&tool("read_multiple_files"), &result);
    let error = &structured["files"][1]["error"];
    assert_eq!(error["code"], "too_large");
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|message| message.contains("the limit is 35 bytes per file")),
        "{error}"
    );
    client.cancel().await?;
    Ok(())
}

#[tokio::test]
async fn searches_match_globs_and_skip_excluded_directories() -> Result<(), Error> {
    let project = Project::create();
    let client = connect(Files::new(options(&[&project.root]))?).await?;
    let search = |pattern: &str, excludes: Value| json!({ "path": ".", "pattern": pattern, "excludePatterns": excludes });
    let result = call_tool(&client, "search_files", search("**/*.md", json!([]))).await?;
    let structured = success(&tool("search_files"), &result);
    assert_eq!(
        only_text(&result),
        Some(
            format!(
                "{}\n{}",
                project.path("README.md"),
                project.path("docs/guide.md")
            )
            .as_str()
        )
    );
    assert_eq!(structured["pattern"], "**/*.md");

    let result = call_tool(&client, "search_files", search("*.md", json!([]))).await?;
    assert_eq!(
        only_text(&result),
        Some(project.path("README.md").as_str()),
        "`*` stays at the top level"
    );
    let result = call_tool(
        &client,
        "search_files",
        search("**/*.js", json!(["node_modules"])),
    )
    .await?;
    assert_eq!(only_text(&result), Some("No matches found"));
    let result = call_tool(&client, "search_files", search("**/*.js", json!([]))).await?;
    assert_eq!(
        only_text(&result),
        Some(project.path("node_modules/lib/index.js").as_str())
    );
    let result = call_tool(&client, "search_files", search("**/config", json!([]))).await?;
    assert_eq!(
        only_text(&result),
        Some("No matches found"),
        ".git is never searched"
    );
    client.cancel().await?;
    Ok(())
}

#[tokio::test]
async fn file_information() -> Result<(), Error> {
    let project = Project::create();
    let client = connect(Files::new(options(&[&project.root]))?).await?;
    let result = call_tool(&client, "get_file_info", json!({ "path": "pom.xml" })).await?;
    let structured = success(&tool("get_file_info"), &result);
    assert_eq!(structured["size"], 11);
    assert_eq!(structured["type"], "file");
    assert_eq!(structured["isFile"], true);
    assert_eq!(structured["isDirectory"], false);
    assert!(
        structured["modified"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z'))
    );
    let lines: Vec<&str> = only_text(&result).ok_or("no text")?.lines().collect();
    assert_eq!(lines[0], "size: 11");
    assert!(lines.contains(&"isFile: true"), "{lines:?}");

    let result = call_tool(&client, "get_file_info", json!({ "path": "src" })).await?;
    assert_eq!(
        success(&tool("get_file_info"), &result)["type"],
        "directory"
    );
    client.cancel().await?;
    Ok(())
}

#[tokio::test]
async fn seed_004_tools_keep_their_names_and_shapes() -> Result<(), Error> {
    let project = Project::create();
    let client = connect(Files::new(options(&[&project.root]))?).await?;
    let result = call_tool(&client, "readProjectStructure", json!({ "path": "src" })).await?;
    let structured = success(&tool("readProjectStructure"), &result);
    assert_eq!(
        only_text(&result),
        Some(
            "main/\nmain/java/\nmain/java/App.java\nmain/resources/\nmain/resources/application.yml"
        )
    );
    assert_eq!(structured["entries"][2], "main/java/App.java");

    let result = call_tool(
        &client,
        "readJavaFile",
        json!({ "path": "src/main/java/App.java" }),
    )
    .await?;
    success(&tool("readJavaFile"), &result);
    assert!(only_text(&result).is_some_and(|text| text.starts_with("package app;")));
    let result = call_tool(
        &client,
        "readJavaFile",
        json!({ "path": "../../etc/passwd" }),
    )
    .await?;
    assert_eq!(error_code(&result), "path_outside_roots");
    client.cancel().await?;
    Ok(())
}

#[tokio::test]
async fn reports_are_new_files_in_the_first_root() -> Result<(), Error> {
    let project = Project::create();
    let without = connect(Files::new(options(&[&project.root]))?).await?;
    let refused = call_tool(&without, "write_report", json!({ "content": "# x" })).await;
    assert!(
        refused.is_err() || refused.as_ref().is_ok_and(|r| r.is_error == Some(true)),
        "write_report exists only with allow_reports: {refused:?}"
    );
    without.cancel().await.unwrap();

    let mut options = options(&[&project.root]);
    options.allow_reports = true;
    let client = connect(Files::new(options)?).await?;
    let first = call_tool(
        &client,
        "write_report",
        json!({ "content": "# Findings\n" }),
    )
    .await?;
    let first = success(&tool("write_report"), &first);
    let second = call_tool(&client, "write_report", json!({ "content": "# More\n" })).await?;
    let second = success(&tool("write_report"), &second);
    let name = first["name"].as_str().unwrap();
    assert!(
        name.starts_with("SENTINEL_REPORT_") && name.len() == "SENTINEL_REPORT_YYYYMMDD.md".len()
    );
    assert_eq!(second["name"], name.replace(".md", "_01.md"));
    assert_eq!(first["bytes"], 11);
    let written = std::fs::read_to_string(project.root.join(name)).unwrap();
    assert_eq!(
        written, "# Findings\n",
        "the first report is left as it was"
    );
    assert_eq!(first["path"], project.path(name));
    client.cancel().await?;
    Ok(())
}

#[tokio::test]
async fn limits_give_errors_that_name_them() -> Result<(), Error> {
    let project = Project::create();
    let small = FilesOptions {
        limits: Limits {
            max_entries: 3,
            max_file_bytes: 10,
            ..Limits::default()
        },
        ..options(&[&project.root])
    };
    let client = connect(Files::new(small)?).await?;
    let result = call_tool(&client, "list_directory", json!({ "path": "." })).await?;
    assert_eq!(error_code(&result), "limit_exceeded");
    assert!(
        only_text(&result).is_some_and(|text| text.contains("more than 3 entries")),
        "{result:?}"
    );
    let result = call_tool(&client, "read_text_file", json!({ "path": "README.md" })).await?;
    assert_eq!(error_code(&result), "too_large");
    assert!(
        only_text(&result).is_some_and(|text| text.contains("the limit is 10 bytes per file")),
        "{result:?}"
    );
    let result = call_tool(
        &client,
        "search_files",
        json!({ "path": ".", "pattern": "**" }),
    )
    .await?;
    assert_eq!(error_code(&result), "limit_exceeded");
    client.cancel().await.unwrap();

    let hurried = FilesOptions {
        limits: Limits {
            timeout: Duration::from_nanos(1),
            ..Limits::default()
        },
        ..options(&[&project.root])
    };
    let client = connect(Files::new(hurried)?).await?;
    let result = call_tool(&client, "directory_tree", json!({ "path": "." })).await?;
    assert_eq!(error_code(&result), "timeout");
    assert!(
        only_text(&result).is_some_and(|text| text.contains("the limit per operation")),
        "{result:?}"
    );
    client.cancel().await?;
    Ok(())
}

#[tokio::test]
async fn issue_15_a_refused_extension_is_said_briefly_with_allow_ext() -> Result<(), Error> {
    let project = Project::create();
    let client = connect(Files::new(options(&[&project.root]))?).await?;
    let result = call_tool(&client, "read_text_file", json!({ "path": ".env" })).await?;
    assert_eq!(error_code(&result), "extension_not_allowed");
    let message = only_text(&result).ok_or("no text")?;
    assert!(message.contains("`--allow-ext`"), "{message}");
    assert!(
        message.len() < 200 && !message.contains(".java"),
        "the whole list of extensions is the README's, not the message's: {message}"
    );
    client.cancel().await?;
    Ok(())
}
