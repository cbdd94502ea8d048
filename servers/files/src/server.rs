//! The MCP face of the crate: [`Files`], an rmcp [`ServerHandler`] with the
//! official filesystem server's read tools, seed 004's two tools and, with
//! `allow_reports`, `write_report`; its options ([`FilesOptions`]) and
//! [`tools`], the list a server with those options offers.
//!
//! Every filesystem operation runs on tokio's blocking pool under the time
//! limit: the reply comes when the limit passes even if a system call
//! hangs, and the work itself checks the same deadline between steps so
//! that it stops too. A successful result carries text in the official
//! server's format and structured content matching the tool's output
//! schema; a failure is a tool error whose structured content is
//! `{"error": {"code", "message"}}`, which every output schema also admits
//! (clients on older SDKs validate error results too).
//!
//! A client that declares the `roots` capability is asked for its roots
//! (`roots/list`) once initialized and again after each
//! `notifications/roots/list_changed`; a tool call waits for the answer.
//! Each clone of [`Files`] is a handler for one connection, with its own
//! client roots.

use std::path::PathBuf;
use std::sync::{Arc, LazyLock};

use rmcp::{
    Peer, RoleServer, ServerHandler,
    handler::server::{router::tool::ToolRouter, tool::schema_for_output, wrapper::Parameters},
    model::{CallToolResult, ContentBlock, JsonObject, Tool, ToolAnnotations},
    service::NotificationContext,
    tool, tool_handler, tool_router,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::access::{self, ReadRules};
use crate::error::{ErrorCode, FsError, OptionsError};
use crate::extensions::AllowedExtensions;
use crate::info::{self, FileInfo};
use crate::limits::{Deadline, Limits};
use crate::read::{self, Part};
use crate::report;
use crate::resolve::resolve;
use crate::roots::Roots;
use crate::walk::{self, Entry, Excludes, Node};

/// Every tool, `write_report` included.
static WITH_REPORTS: LazyLock<Arc<ToolRouter<Files>>> =
    LazyLock::new(|| Arc::new(annotated_router(true)));
/// The read-only tools.
static READ_ONLY: LazyLock<Arc<ToolRouter<Files>>> =
    LazyLock::new(|| Arc::new(annotated_router(false)));

/// The tools, annotated in one place: every tool only reads, but
/// `write_report`, which adds a file (so it is not idempotent) and never
/// changes one (so it is not destructive). None reaches beyond the roots.
fn annotated_router(allow_reports: bool) -> ToolRouter<Files> {
    let mut router = ToolRouter::new();
    for mut route in Files::tool_router() {
        let writes = route.attr.name == "write_report";
        if writes && !allow_reports {
            continue;
        }
        route.attr.annotations = Some(
            ToolAnnotations::new()
                .read_only(!writes)
                .destructive(false)
                .idempotent(!writes)
                .open_world(false),
        );
        router.add_route(route);
    }
    router
}

/// How the files server is set up; the command line builds it.
#[derive(Debug, Clone, Default)]
pub struct FilesOptions {
    /// The directories that may be read (`nexo serve files ROOT...`).
    pub roots: Vec<PathBuf>,
    /// Offer `write_report` (`--allow-reports`).
    pub allow_reports: bool,
    /// Which files may be read (`--allow-ext`).
    pub extensions: AllowedExtensions,
    /// Serve regular files that have more than one hard link
    /// (`--allow-hard-links`); refused by default, since such a file may be
    /// one outside every root.
    pub allow_hard_links: bool,
    /// Size, count, depth and time limits.
    pub limits: Limits,
}

/// The tools a server built with `options` offers, sorted by name.
pub fn tools(options: &FilesOptions) -> Vec<Tool> {
    router(options.allow_reports).list_all()
}

fn router(allow_reports: bool) -> Arc<ToolRouter<Files>> {
    if allow_reports {
        Arc::clone(&WITH_REPORTS)
    } else {
        Arc::clone(&READ_ONLY)
    }
}

/// What every connection shares.
#[derive(Debug)]
struct Shared {
    roots: Arc<Roots>,
    rules: ReadRules,
    limits: Limits,
}

/// The files server. A clone shares the opened roots and options, and
/// starts with no client roots: it is the handler of another connection.
#[derive(Debug)]
pub struct Files {
    tool_router: Arc<ToolRouter<Files>>,
    shared: Arc<Shared>,
    /// The effective roots once the client has been asked for its own.
    client_roots: tokio::sync::Mutex<Option<Arc<Roots>>>,
}

impl Clone for Files {
    fn clone(&self) -> Self {
        Self {
            tool_router: Arc::clone(&self.tool_router),
            shared: Arc::clone(&self.shared),
            client_roots: tokio::sync::Mutex::new(None),
        }
    }
}

impl Files {
    /// Opens the roots; fails when there is none, or one is not a directory
    /// this process may open.
    pub fn new(options: FilesOptions) -> Result<Self, OptionsError> {
        let roots = Roots::open(&options.roots)?;
        Ok(Self {
            tool_router: router(options.allow_reports),
            shared: Arc::new(Shared {
                roots: Arc::new(roots),
                rules: ReadRules {
                    extensions: options.extensions,
                    hard_links: options.allow_hard_links,
                },
                limits: options.limits,
            }),
            client_roots: tokio::sync::Mutex::new(None),
        })
    }

    /// The roots in force for this connection.
    async fn roots(&self, peer: &Peer<RoleServer>) -> Arc<Roots> {
        let offers_roots = peer
            .peer_info()
            .is_some_and(|info| info.capabilities.roots.is_some());
        if !offers_roots {
            return Arc::clone(&self.shared.roots);
        }
        let mut known = self.client_roots.lock().await;
        if let Some(roots) = known.as_ref() {
            return Arc::clone(roots);
        }
        let roots = self.ask_client_roots(peer).await;
        *known = Some(Arc::clone(&roots));
        roots
    }

    /// The command-line roots narrowed by the client's. A client that
    /// names no `file:` root, does not answer in time or fails leaves the
    /// command-line roots in force.
    #[expect(
        deprecated,
        reason = "roots are a 2025-era feature (SEP-2577 drops them in 2026-07-28); \
                  2025-era clients still offer them"
    )]
    async fn ask_client_roots(&self, peer: &Peer<RoleServer>) -> Arc<Roots> {
        let ours = Arc::clone(&self.shared.roots);
        let listed = tokio::time::timeout(self.shared.limits.timeout, peer.list_roots()).await;
        let uris: Vec<String> = match listed {
            Ok(Ok(result)) => result.roots.into_iter().map(|root| root.uri).collect(),
            Ok(Err(error)) => {
                tracing::warn!(%error, "the client's roots/list failed; serving the command-line roots");
                return ours;
            }
            Err(_) => {
                tracing::warn!(
                    "the client did not answer roots/list in time; serving the command-line roots"
                );
                return ours;
            }
        };
        let base = Arc::clone(&ours);
        match tokio::task::spawn_blocking(move || base.narrowed_by(&uris)).await {
            Ok(Some(narrowed)) => {
                tracing::info!(roots = %narrowed.describe(), "roots narrowed by the client's");
                Arc::new(narrowed)
            }
            _ => {
                tracing::info!("the client named no file: root; serving the command-line roots");
                ours
            }
        }
    }

    /// Runs `work` on the blocking pool under the time limit.
    async fn run<T, F>(&self, work: F) -> Result<T, FsError>
    where
        T: Send + 'static,
        F: FnOnce(&Deadline) -> Result<T, FsError> + Send + 'static,
    {
        let limit = self.shared.limits.timeout;
        let deadline = Deadline::after(limit);
        let task = tokio::task::spawn_blocking(move || work(&deadline));
        match tokio::time::timeout(limit, task).await {
            Ok(Ok(result)) => result,
            Ok(Err(error)) => Err(FsError::Internal(error.to_string())),
            Err(_) => Err(FsError::Timeout(limit)),
        }
    }

    /// Reads one file, whole or in part.
    async fn read_one(&self, peer: &Peer<RoleServer>, path: String, part: Part) -> CallToolResult {
        let roots = self.roots(peer).await;
        let shared = Arc::clone(&self.shared);
        let result = self
            .run(move |deadline| {
                let target = resolve(&roots, &path)?;
                let (mut file, size) = access::open_file(&target, &shared.rules)?;
                let limit = shared.limits.max_file_bytes;
                let content = read::read(&mut file, size, part, limit, deadline, &target.shown)?;
                Ok(ContentOutput {
                    path: target.absolute().display().to_string(),
                    content,
                })
            })
            .await;
        reply(result, |output| output.content.clone())
    }

    /// The tree under `path`.
    async fn tree(
        &self,
        peer: &Peer<RoleServer>,
        path: String,
        excludes: Vec<String>,
    ) -> Result<TreeOutput, FsError> {
        let roots = self.roots(peer).await;
        let limits = self.shared.limits;
        self.run(move |deadline| {
            let excludes = Excludes::new(&excludes)?;
            let target = resolve(&roots, &path)?;
            let dir = access::open_dir(&target)?;
            let tree = walk::tree(&dir, &excludes, &limits, deadline, &target.shown)?;
            Ok(TreeOutput {
                path: target.absolute().display().to_string(),
                tree,
            })
        })
        .await
    }
}

/// The argument of the tools that take one path.
#[derive(Debug, Deserialize, JsonSchema)]
struct PathArgs {
    /// A path inside an allowed directory: absolute, or relative to the
    /// first allowed directory (`.` is that directory).
    path: String,
}

/// Arguments of `read_text_file`.
#[derive(Debug, Deserialize, JsonSchema)]
struct ReadTextFileArgs {
    /// A path inside an allowed directory: absolute, or relative to the
    /// first allowed directory.
    path: String,
    /// If given, only the first N lines of the file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    head: Option<u64>,
    /// If given, only the last N lines of the file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    tail: Option<u64>,
}

/// Arguments of `read_multiple_files`.
#[derive(Debug, Deserialize, JsonSchema)]
struct ReadMultipleFilesArgs {
    /// The files to read, each a path inside an allowed directory.
    paths: Vec<String>,
}

/// Arguments of `directory_tree`.
#[derive(Debug, Deserialize, JsonSchema)]
struct DirectoryTreeArgs {
    /// A directory inside an allowed directory.
    path: String,
    /// Glob patterns of entries to leave out, matched against paths relative
    /// to `path`; a pattern without `/` also matches names at any depth
    /// (`node_modules`, `*.log`).
    #[serde(default, rename = "excludePatterns")]
    exclude_patterns: Vec<String>,
}

/// Arguments of `search_files`.
#[derive(Debug, Deserialize, JsonSchema)]
struct SearchFilesArgs {
    /// The directory to search, inside an allowed directory.
    path: String,
    /// A glob pattern matched against paths relative to `path`: `*.rs` at
    /// its top level, `**/*.rs` at any depth.
    pattern: String,
    /// Glob patterns of entries to leave out (and not search under); a
    /// pattern without `/` also matches names at any depth.
    #[serde(default, rename = "excludePatterns")]
    exclude_patterns: Vec<String>,
}

/// Arguments of `write_report`.
#[derive(Debug, Deserialize, JsonSchema)]
struct WriteReportArgs {
    /// The report, as Markdown text.
    content: String,
}

/// The body of every tool error's structured content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
struct ErrorBody {
    code: ErrorCode,
    message: String,
}

impl ErrorBody {
    fn of(error: &FsError) -> Self {
        Self {
            code: error.code(),
            message: error.to_string(),
        }
    }
}

#[derive(Debug, Serialize, JsonSchema)]
struct AllowedOutput {
    /// The allowed directories: absolute paths, each as first given.
    directories: Vec<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
struct ListingOutput {
    /// The directory listed.
    path: String,
    /// Its entries by name; symbolic links are not followed.
    entries: Vec<Entry>,
}

#[derive(Debug, Serialize, JsonSchema)]
struct TreeOutput {
    /// The directory at the top of the tree.
    path: String,
    tree: Vec<Node>,
}

#[derive(Debug, Serialize, JsonSchema)]
struct ContentOutput {
    /// The file read.
    path: String,
    /// Its text.
    content: String,
}

#[derive(Debug, Serialize, JsonSchema)]
struct MultipleOutput {
    /// One item per path asked for, in order.
    files: Vec<FileRead>,
}

#[derive(Debug, Serialize, JsonSchema)]
struct FileRead {
    /// The path as given.
    path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<String>,
    /// Why this file was not read.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<ErrorBody>,
}

#[derive(Debug, Serialize, JsonSchema)]
struct SearchOutput {
    /// The directory searched.
    path: String,
    pattern: String,
    /// The absolute paths that match, files and directories.
    matches: Vec<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
struct StructureOutput {
    /// The directory described.
    path: String,
    /// Paths relative to it, directories ending in `/`.
    entries: Vec<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
struct ReportOutput {
    /// The report's absolute path.
    path: String,
    /// Its file name, `SENTINEL_REPORT_YYYYMMDD[_NN].md`.
    name: String,
    /// Its size in bytes.
    bytes: u64,
}

/// The output schema of a tool whose result is `T`: `T`'s schema, which
/// also admits the error shape `{"error": {"code", "message"}}`.
fn output_schema<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    let mut schema = (*schema_for_output::<T>()).clone();
    let required = schema.remove("required").unwrap_or_else(|| json!([]));
    let codes: Vec<&str> = ErrorCode::ALL.iter().map(|code| code.as_str()).collect();
    let error = json!({
        "type": "object",
        "description": "Set instead of the fields above when the call failed (isError).",
        "properties": {
            "code": { "type": "string", "enum": codes },
            "message": { "type": "string" },
        },
        "required": ["code", "message"],
    });
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        properties.insert("error".to_owned(), error);
    }
    schema.insert(
        "anyOf".to_owned(),
        json!([{ "required": required }, { "required": ["error"] }]),
    );
    Arc::new(schema)
}

/// A tool result: on success `text(output)` as text and the output as
/// structured content, on failure the error as both.
fn reply<T: Serialize>(
    result: Result<T, FsError>,
    text: impl FnOnce(&T) -> String,
) -> CallToolResult {
    match result {
        Ok(output) => {
            let mut reply = CallToolResult::success(vec![ContentBlock::text(text(&output))]);
            reply.structured_content = serde_json::to_value(&output).ok();
            reply
        }
        Err(error) => failure(&error),
    }
}

fn failure(error: &FsError) -> CallToolResult {
    let body = ErrorBody::of(error);
    if body.code == ErrorCode::PathOutsideRoots {
        tracing::warn!(code = body.code.as_str(), "refused: {}", body.message);
    } else {
        tracing::debug!(code = body.code.as_str(), "refused: {}", body.message);
    }
    let mut result = CallToolResult::error(vec![ContentBlock::text(body.message.clone())]);
    result.structured_content = Some(json!({ "error": body }));
    result
}

#[tool_router]
impl Files {
    #[tool(
        title = "List Allowed Directories",
        description = "The directories this server may read. Everything beneath them is \
                       reachable; nothing else is. Relative paths are taken from the first \
                       one. Call this before the other tools to know where to look.",
        output_schema = output_schema::<AllowedOutput>()
    )]
    async fn list_allowed_directories(&self, peer: Peer<RoleServer>) -> CallToolResult {
        let roots = self.roots(&peer).await;
        let directories: Vec<String> = roots
            .0
            .iter()
            .map(|root| root.shown.display().to_string())
            .collect();
        reply(Ok(AllowedOutput { directories }), |output| {
            format!("Allowed directories:\n{}", output.directories.join("\n"))
        })
    }

    #[tool(
        title = "List Directory",
        description = "The entries of one directory, one a line: `[DIR] name`, `[FILE] name`, \
                       `[LINK] name` (a symbolic link) or `[OTHER] name` (a FIFO, socket or \
                       device), sorted by name. Version-control metadata (.git, ...) is \
                       hidden. At most 1000 entries.",
        output_schema = output_schema::<ListingOutput>()
    )]
    async fn list_directory(
        &self,
        peer: Peer<RoleServer>,
        Parameters(PathArgs { path }): Parameters<PathArgs>,
    ) -> CallToolResult {
        let roots = self.roots(&peer).await;
        let limits = self.shared.limits;
        let result = self
            .run(move |deadline| {
                let target = resolve(&roots, &path)?;
                let dir = access::open_dir(&target)?;
                let entries = walk::list(&dir, &limits, deadline, &target.shown)?;
                Ok(ListingOutput {
                    path: target.absolute().display().to_string(),
                    entries,
                })
            })
            .await;
        reply(result, |output| {
            output
                .entries
                .iter()
                .map(|entry| format!("{} {}", entry.kind.tag(), entry.name))
                .collect::<Vec<_>>()
                .join("\n")
        })
    }

    #[tool(
        title = "Directory Tree",
        description = "A recursive tree of a directory as JSON (2-space indented): each entry \
                       has `name` and `type` (`file`, `directory`, `symlink` or `other`), and \
                       directories have `children`. Symbolic links are not followed and \
                       version-control metadata is hidden. At most 1000 entries and 16 \
                       levels; leave parts out with `excludePatterns`.",
        output_schema = output_schema::<TreeOutput>()
    )]
    async fn directory_tree(
        &self,
        peer: Peer<RoleServer>,
        Parameters(args): Parameters<DirectoryTreeArgs>,
    ) -> CallToolResult {
        let result = self.tree(&peer, args.path, args.exclude_patterns).await;
        reply(result, |output| {
            serde_json::to_string_pretty(&output.tree).unwrap_or_default()
        })
    }

    #[tool(
        title = "Read Text File",
        description = "The text of one file. `head` gives only its first N lines, `tail` only \
                       its last N (not both). Only regular files with an allowed extension \
                       (source code, configuration, documentation) are read; binary files are \
                       refused. At most 10 MB per file, or per `head`/`tail` read.",
        output_schema = output_schema::<ContentOutput>()
    )]
    async fn read_text_file(
        &self,
        peer: Peer<RoleServer>,
        Parameters(args): Parameters<ReadTextFileArgs>,
    ) -> CallToolResult {
        let part = match (args.head, args.tail) {
            (None, None) => Part::Whole,
            (Some(lines), None) => Part::Head(lines),
            (None, Some(lines)) => Part::Tail(lines),
            (Some(_), Some(_)) => {
                return failure(&FsError::InvalidArgument(
                    "give `head` or `tail`, not both".to_owned(),
                ));
            }
        };
        self.read_one(&peer, args.path, part).await
    }

    #[tool(
        title = "Read Multiple Files",
        description = "The text of several files at once, each headed by its path and \
                       separated by `---`. A file that cannot be read gets its error in its \
                       place; the others are still read. The same rules as read_text_file, \
                       and at most 10 MB and 1000 paths in all.",
        output_schema = output_schema::<MultipleOutput>()
    )]
    async fn read_multiple_files(
        &self,
        peer: Peer<RoleServer>,
        Parameters(ReadMultipleFilesArgs { paths }): Parameters<ReadMultipleFilesArgs>,
    ) -> CallToolResult {
        let limits = self.shared.limits;
        if paths.is_empty() {
            return failure(&FsError::InvalidArgument(
                "give at least one path in `paths`".to_owned(),
            ));
        }
        if paths.len() > limits.max_entries {
            return failure(&FsError::TooManyPaths {
                count: paths.len(),
                limit: limits.max_entries,
            });
        }
        let roots = self.roots(&peer).await;
        let shared = Arc::clone(&self.shared);
        let result = self
            .run(move |deadline| {
                let mut budget = limits.max_file_bytes;
                let mut files = Vec::new();
                for path in paths {
                    deadline.check()?;
                    let read = (|| {
                        let target = resolve(&roots, &path)?;
                        let (mut file, size) = access::open_file(&target, &shared.rules)?;
                        if size > budget && size <= limits.max_file_bytes {
                            return Err(FsError::BudgetSpent {
                                limit: limits.max_file_bytes,
                            });
                        }
                        // A file over the per-file limit is refused as such,
                        // whatever is left of the budget.
                        let limit = if size > limits.max_file_bytes {
                            limits.max_file_bytes
                        } else {
                            budget
                        };
                        read::read(&mut file, size, Part::Whole, limit, deadline, &target.shown)
                    })();
                    files.push(match read {
                        Ok(content) => {
                            budget = budget.saturating_sub(content.len() as u64);
                            FileRead {
                                path,
                                content: Some(content),
                                error: None,
                            }
                        }
                        Err(FsError::Timeout(limit)) => return Err(FsError::Timeout(limit)),
                        Err(error) => FileRead {
                            path,
                            content: None,
                            error: Some(ErrorBody::of(&error)),
                        },
                    });
                }
                Ok(MultipleOutput { files })
            })
            .await;
        reply(result, |output| {
            output
                .files
                .iter()
                .map(|file| match (&file.content, &file.error) {
                    (Some(content), _) => format!("{}:\n{content}\n", file.path),
                    (None, Some(error)) => format!("{}: Error - {}", file.path, error.message),
                    (None, None) => format!("{}:", file.path),
                })
                .collect::<Vec<_>>()
                .join("\n---\n")
        })
    }

    #[tool(
        title = "Search Files",
        description = "Files and directories under `path` whose path relative to it matches a \
                       glob `pattern` (`*.java` at its top level, `**/*.java` at any depth), \
                       as absolute paths, one a line. `excludePatterns` leaves entries out \
                       and is not searched under. Symbolic links are not followed. At most \
                       1000 matches and 16 levels.",
        output_schema = output_schema::<SearchOutput>()
    )]
    async fn search_files(
        &self,
        peer: Peer<RoleServer>,
        Parameters(args): Parameters<SearchFilesArgs>,
    ) -> CallToolResult {
        let roots = self.roots(&peer).await;
        let limits = self.shared.limits;
        let result = self
            .run(move |deadline| {
                let pattern = walk::pattern(&args.pattern)?;
                let excludes = Excludes::new(&args.exclude_patterns)?;
                let target = resolve(&roots, &args.path)?;
                let dir = access::open_dir(&target)?;
                let base = target.absolute();
                let found =
                    walk::search(&dir, &pattern, &excludes, &limits, deadline, &target.shown)?;
                Ok(SearchOutput {
                    path: base.display().to_string(),
                    pattern: args.pattern,
                    matches: found
                        .iter()
                        .map(|relative| base.join(relative).display().to_string())
                        .collect(),
                })
            })
            .await;
        reply(result, |output| {
            if output.matches.is_empty() {
                "No matches found".to_owned()
            } else {
                output.matches.join("\n")
            }
        })
    }

    #[tool(
        title = "Get File Info",
        description = "Size, creation, modification and access times, type and permissions \
                       of a file or directory, without reading it. Works on FIFOs, sockets \
                       and devices too.",
        output_schema = output_schema::<FileInfo>()
    )]
    async fn get_file_info(
        &self,
        peer: Peer<RoleServer>,
        Parameters(PathArgs { path }): Parameters<PathArgs>,
    ) -> CallToolResult {
        let roots = self.roots(&peer).await;
        let shared = Arc::clone(&self.shared);
        let result = self
            .run(move |_| info::file_info(&resolve(&roots, &path)?, &shared.rules))
            .await;
        reply(result, FileInfo::text)
    }

    #[tool(
        name = "readProjectStructure",
        title = "Read Project Structure",
        description = "Seed 004's tool: every path under a directory, relative to it, one a \
                       line, directories ending in `/` (`pom.xml`, `src/`, `src/main/`, ...). \
                       The same limits as directory_tree.",
        output_schema = output_schema::<StructureOutput>()
    )]
    async fn read_project_structure(
        &self,
        peer: Peer<RoleServer>,
        Parameters(PathArgs { path }): Parameters<PathArgs>,
    ) -> CallToolResult {
        let result = self
            .tree(&peer, path, Vec::new())
            .await
            .map(|tree| StructureOutput {
                path: tree.path,
                entries: walk::flatten(&tree.tree),
            });
        reply(result, |output| output.entries.join("\n"))
    }

    #[tool(
        name = "readJavaFile",
        title = "Read Java File",
        description = "Seed 004's tool: the text of one source or configuration file (.java, \
                       .xml, .md, .properties, .yml, .yaml and the other allowed extensions). \
                       The same rules and limits as read_text_file.",
        output_schema = output_schema::<ContentOutput>()
    )]
    async fn read_java_file(
        &self,
        peer: Peer<RoleServer>,
        Parameters(PathArgs { path }): Parameters<PathArgs>,
    ) -> CallToolResult {
        self.read_one(&peer, path, Part::Whole).await
    }

    #[tool(
        title = "Write Report",
        description = "Seed 004's one write: saves Markdown `content` as a new file \
                       SENTINEL_REPORT_YYYYMMDD.md in the first allowed directory, or \
                       SENTINEL_REPORT_YYYYMMDD_NN.md when that name is taken. Never \
                       overwrites anything. At most 10 MB.",
        output_schema = output_schema::<ReportOutput>()
    )]
    async fn write_report(
        &self,
        peer: Peer<RoleServer>,
        Parameters(WriteReportArgs { content }): Parameters<WriteReportArgs>,
    ) -> CallToolResult {
        let roots = self.roots(&peer).await;
        let limit = self.shared.limits.max_file_bytes;
        let result = self
            .run(move |_| {
                let root = roots.0.first().ok_or(FsError::NoRoots)?;
                let today = jiff::Zoned::now().date();
                let name = report::write_report(root, &content, today, limit)?;
                Ok(ReportOutput {
                    path: root.path.join(&name).display().to_string(),
                    name,
                    bytes: content.len() as u64,
                })
            })
            .await;
        reply(result, |output| {
            format!("Wrote {} ({} bytes)", output.path, output.bytes)
        })
    }
}

#[tool_handler(
    router = self.tool_router,
    name = "nexo-files",
    instructions = "Read-only access to some directories: call list_allowed_directories \
                    first, then list_directory, directory_tree, search_files, \
                    read_text_file or read_multiple_files with paths inside them."
)]
impl ServerHandler for Files {
    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.roots(&context.peer).await;
    }

    async fn on_roots_list_changed(&self, context: NotificationContext<RoleServer>) {
        *self.client_roots.lock().await = None;
        self.roots(&context.peer).await;
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly on a missing value")]
mod tests {
    use super::*;

    #[test]
    fn output_schemas_admit_the_error_shape() {
        let schema = output_schema::<ContentOutput>();
        assert_eq!(schema["type"], "object");
        assert_eq!(
            schema["anyOf"],
            json!([{ "required": ["path", "content"] }, { "required": ["error"] }])
        );
        assert_eq!(
            schema["properties"]["error"]["required"],
            json!(["code", "message"])
        );
        let codes = schema["properties"]["error"]["properties"]["code"]["enum"]
            .as_array()
            .unwrap();
        assert_eq!(codes.len(), ErrorCode::ALL.len());
    }

    #[test]
    fn reports_are_offered_only_when_allowed() {
        let names = |allow_reports| -> Vec<String> {
            tools(&FilesOptions {
                allow_reports,
                ..FilesOptions::default()
            })
            .iter()
            .map(|tool| tool.name.to_string())
            .collect()
        };
        assert!(!names(false).contains(&"write_report".to_owned()));
        assert!(names(true).contains(&"write_report".to_owned()));
        assert_eq!(names(true).len(), names(false).len() + 1);
    }

    #[test]
    fn a_clone_starts_without_client_roots() {
        let base = tempfile::tempdir().unwrap();
        let files = Files::new(FilesOptions {
            roots: vec![base.path().to_owned()],
            ..FilesOptions::default()
        })
        .unwrap();
        *files.client_roots.try_lock().unwrap() = Some(Arc::new(Roots::default()));
        let clone = files.clone();
        assert!(clone.client_roots.try_lock().unwrap().is_none());
        assert!(Arc::ptr_eq(&files.shared, &clone.shared));
    }
}
