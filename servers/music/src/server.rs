//! The MCP face of the crate: [`Music`], an rmcp [`ServerHandler`] with the
//! tools of [`crate::tools`], the resources of [`crate::resources`] and the
//! prompt of [`crate::prompts`]; its options ([`MusicOptions`]); and
//! [`tools`], the tool list.

use std::path::PathBuf;
use std::sync::{Arc, LazyLock};

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{
    GetPromptRequestParams, GetPromptResult, Implementation, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, tool_handler};

use crate::confirm::Sealer;
use crate::error::StoreError;
use crate::store::Library;
use crate::{prompts, resources};

/// The tool router, built once per process and shared by every handler.
static ROUTER: LazyLock<Arc<ToolRouter<Music>>> = LazyLock::new(|| Arc::new(Music::tool_router()));

/// The database file used when none is given, relative to the working
/// directory. `nexo serve music` gives one under the user's data directory.
pub const DEFAULT_DB_FILE: &str = "music.sqlite3";

/// Where the library lives.
#[derive(Debug, Clone)]
pub struct MusicOptions {
    /// The SQLite file; created, with its directory, when missing.
    pub db: PathBuf,
}

impl Default for MusicOptions {
    fn default() -> Self {
        Self {
            db: PathBuf::from(DEFAULT_DB_FILE),
        }
    }
}

/// The music library server. Cheap to clone; clones share the database
/// connection. Whoever runs it chooses the transport.
#[derive(Debug, Clone)]
pub struct Music {
    tool_router: Arc<ToolRouter<Music>>,
    library: Library,
    sealer: Arc<Sealer>,
}

impl Music {
    /// Opens (or creates) the library `options` name and brings its schema
    /// up to date.
    pub fn new(options: MusicOptions) -> Result<Self, StoreError> {
        let library = Library::open(&options.db)?;
        let sealer = Sealer::new(library.state_key()).map_err(|_| StoreError::StateKey)?;
        Ok(Self {
            tool_router: Arc::clone(&ROUTER),
            library,
            sealer: Arc::new(sealer),
        })
    }

    pub(crate) fn library(&self) -> &Library {
        &self.library
    }

    pub(crate) fn sealer(&self) -> &Sealer {
        &self.sealer
    }
}

/// The tools [`Music`] offers, sorted by name, as `tools/list` returns them.
pub fn tools() -> Vec<Tool> {
    ROUTER.list_all()
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Music {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_resources()
            .enable_prompts()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("nexo-music", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "A music library on SQLite: add_song stores a song and files it in a playlist \
                 proposed from its genre, decade, mood tags or artist; list_playlists, \
                 get_playlist and export_playlist (m3u, json, csv) read it; clear_library \
                 empties a workspace. Writes that need confirmation ask the user, or answer \
                 needs_confirmation with the arguments to retry with.",
            )
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        resources::list(self).await
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        Ok(resources::templates())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        resources::read(self, &request.uri).await.map(Into::into)
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        Ok(ListPromptsResult::with_all_items(prompts::list()))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetPromptResponse, McpError> {
        prompts::get(self, &request)
            .await
            .map(|result: GetPromptResult| result.into())
    }
}
