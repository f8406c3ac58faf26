//! The MCP server: this service's memory as tools an agent can call, with
//! the official Rust SDK (`rmcp`). The same server answers over the
//! streamable HTTP transport at `/mcp` (`http.rs`, inside the actix app and
//! its Host/Origin/token perimeter) and over stdio (`openprogram mcp`,
//! `stdio.rs`).
//!
//! Every tool reads through the engine and is read-only; each answers
//! with structured content (and the same JSON as text, for clients that
//! read only text). A bad argument is a tool error the agent can read; an
//! unknown tool or a malformed call is a protocol error; nothing aborts.

mod args;
pub mod http;
mod tools;
mod views;

use openprogram_actors::engine::Engine;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{tool_handler, ErrorData, ServerHandler};
use serde_json::Value;

/// The tools in the order they are listed.
pub const TOOLS: &[&str] = &[
    "search",
    "fetch",
    "sessions_search",
    "sessions_list",
    "session_get",
    "turn_get",
    "project_commits",
    "recent_activity",
    "provenance_resolve",
    "session_note",
    "session_fork",
    "session_update",
];

/// The tools that write, listed only with `mcp.allow_writes`.
pub const WRITE_TOOLS: &[&str] = &["session_note", "session_fork", "session_update"];

/// One MCP server over this service's memory.
#[derive(Clone)]
pub struct MemoryServer {
    engine: Engine,
    /// Where the web UI is (links in the answers): `http://host:port`.
    base_url: String,
    tool_router: ToolRouter<MemoryServer>,
}

impl MemoryServer {
    /// `allow_writes`: the write tools too (`mcp.allow_writes`).
    pub fn new(engine: Engine, base_url: String, allow_writes: bool) -> MemoryServer {
        let mut tool_router = Self::tool_router();
        if !allow_writes {
            for name in WRITE_TOOLS {
                tool_router.remove_route(name);
            }
        }
        MemoryServer {
            engine,
            base_url,
            tool_router,
        }
    }

    /// The web UI's page of a session (at a turn).
    fn link(&self, session: &str, turn: Option<u64>) -> String {
        match turn {
            Some(t) if t > 0 => format!("{}/s/{session}/turn/{t}", self.base_url),
            _ => format!("{}/s/{session}", self.base_url),
        }
    }
}

/// A successful answer: `value` as structured content and as JSON text.
fn answer(value: Value) -> Result<CallToolResult, ErrorData> {
    Ok(CallToolResult::structured(value))
}

/// A failure the agent reads: what was wrong, with its code.
fn refused(code: &str, message: impl Into<String>) -> Result<CallToolResult, ErrorData> {
    let value = serde_json::json!({"code": code, "error": message.into()});
    Ok(CallToolResult::structured_error(value))
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for MemoryServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(rmcp::model::Implementation::new(
                "openprogram-memory",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
            "The memory of an agent system: every chat session is a git repository, one commit \
             per turn. Search past sessions (sessions_search, or search + fetch), list them, read \
             a session's turns or one turn by number or commit, the agent's commits in a project, \
             and what changed since a time. Every answer names the session, branch, turn and \
             commit it comes from.",
        )
    }

    /// The router's call, with a `code` on every failure: arguments the
    /// SDK could not read (a wrong type, a missing field) are the tool
    /// error `invalid_input` with the SDK's words; an unknown tool is the
    /// protocol error it is, with `data.code: "unknown_tool"`.
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let known = self.tool_router.has_route(&request.name);
        let call = ToolCallContext::new(self, request, context);
        match self.tool_router.call(call).await {
            Ok(CallToolResponse::Complete(result))
                if result.is_error == Some(true) && result.structured_content.is_none() =>
            {
                let words: Vec<String> = result
                    .content
                    .iter()
                    .filter_map(|c| c.as_text().map(|t| t.text.clone()))
                    .collect();
                refused("invalid_input", words.join(" ")).map(CallToolResponse::from)
            }
            Err(mut e) if !known => {
                e.data = Some(serde_json::json!({"code": "unknown_tool"}));
                Err(e)
            }
            other => other,
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut tools = self.tool_router.list_all();
        tools.sort_by_key(|t| {
            TOOLS
                .iter()
                .position(|n| *n == t.name)
                .unwrap_or(TOOLS.len())
        });
        Ok(ListToolsResult {
            tools,
            ..Default::default()
        })
    }
}
