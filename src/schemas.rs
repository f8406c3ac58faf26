//! The shapes of the answers the handlers build in place, named for the
//! OpenAPI document (the engine's own types carry their schemas through its
//! `openapi` feature). They are never built: each describes JSON another
//! type writes, and `tests/api/openapi.rs` validates real answers against
//! the document, so a shape that drifts fails there.
#![allow(dead_code)]

use openprogram_actors::git::CommitInfo;
use openprogram_actors::meta::SessionMeta;
use openprogram_actors::node::Node;
use openprogram_actors::project::actor::AgentCommitInfo;
use openprogram_actors::project::ProjectView;
use openprogram_actors::registry::row::ClientRow;
use openprogram_actors::registry::RegistryStats;
use openprogram_actors::session::{AppendOutcome, BranchInfo, CreateSpec, NewNode};
use serde::Serialize;
use utoipa::ToSchema;

/// What startup deletes on its own (0: the rule is off).
#[derive(Serialize, ToSchema)]
pub struct Retention {
    pub empty_shell_max_age_s: u64,
    pub archive_ttl_days: u64,
    pub max_sessions: u64,
}

/// `GET /api/health`.
#[derive(Serialize, ToSchema)]
pub struct Health {
    /// `ok`, or `read_only` when started on a full disk.
    pub status: String,
    pub read_only: bool,
    pub version: String,
    pub live_sessions: usize,
    pub registry: Option<RegistryStats>,
    pub retention: Retention,
    /// Titles come from an LLM.
    pub llm: bool,
}

/// `GET /api/sessions`.
#[derive(Serialize, ToSchema)]
pub struct SessionsPage {
    pub total: usize,
    pub sessions: Vec<ClientRow<'static>>,
}

/// `GET /api/sessions/{id}`: the metadata, where the session's tools run,
/// and whether its project folder is missing.
#[derive(Serialize, ToSchema)]
pub struct SessionAnswer {
    #[serde(flatten)]
    pub meta: SessionMeta,
    pub cwd: String,
    pub project_path_missing: bool,
    /// With replication remotes: the session on each (last pushed commit,
    /// pending, lag, last error).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replication: Option<Vec<openprogram_actors::replication::SessionView>>,
}

#[derive(Serialize, ToSchema)]
pub struct Archived {
    pub session_id: String,
    pub archived: bool,
}

#[derive(Serialize, ToSchema)]
pub struct Deleted {
    pub session_id: String,
    pub deleted: bool,
}

#[derive(Serialize, ToSchema)]
pub struct NodesPage {
    pub session_id: String,
    pub nodes: Vec<Node>,
}

#[derive(Serialize, ToSchema)]
pub struct CommitsPage {
    pub session_id: String,
    pub commits: Vec<CommitInfo>,
}

/// `GET /api/sessions/{id}/messages`: the rendered branch.
#[derive(Serialize, ToSchema)]
pub struct MessagesPage {
    pub session_id: String,
    pub head: Option<String>,
    pub messages: Vec<Node>,
}

/// `POST /api/sessions/{id}/messages` and a channel post: 201/200.
#[derive(Serialize, ToSchema)]
pub struct Appended {
    pub session_id: String,
    #[serde(flatten)]
    pub outcome: AppendOutcome,
}

/// A user message queued behind the running turn (202).
#[derive(Serialize, ToSchema)]
pub struct QueuedAnswer {
    pub session_id: String,
    /// `queued`.
    pub result: String,
    pub message_id: String,
    pub position: u64,
    pub queue_length: usize,
}

/// The request of `POST /api/sessions/{id}/messages`: a node, and the
/// session's fields when this message creates it.
#[derive(serde::Deserialize, ToSchema)]
pub struct AppendRequest {
    #[serde(flatten)]
    pub node: NewNode,
    pub session: Option<CreateSpec>,
    /// Queue a user message that arrives while a turn runs.
    pub queue: Option<bool>,
}

#[derive(Serialize, ToSchema)]
pub struct WorkingDirs {
    pub session_id: String,
    pub working_dirs: Vec<String>,
}

#[derive(Serialize, ToSchema)]
pub struct BranchesPage {
    /// The branch git has checked out.
    pub current: Option<String>,
    pub branches: Vec<BranchInfo>,
}

/// `POST /api/chat/checkout`.
#[derive(Serialize, ToSchema)]
pub struct HeadMoved {
    pub session_id: String,
    pub head_id: String,
}

#[derive(Serialize, ToSchema)]
pub struct ProjectsPage {
    pub projects: Vec<ProjectView>,
}

#[derive(Serialize, ToSchema)]
pub struct ProjectCommits {
    pub project_id: String,
    pub commits: Vec<AgentCommitInfo>,
}

#[derive(Serialize, ToSchema)]
pub struct Unbound {
    pub project_id: String,
    pub unbound: bool,
}

/// `POST /api/search/reindex`: how many sessions are indexed again.
#[derive(Serialize, ToSchema)]
pub struct Reindexing {
    pub sessions: usize,
}

/// The request of `POST /api/sessions/{id}/turns`: the end-of-turn fields;
/// with `nodes`, a whole turn in one request (and `session`, the session's
/// fields when this turn creates it).
#[derive(serde::Deserialize, ToSchema)]
pub struct TurnRequest {
    pub nodes: Option<Vec<NewNode>>,
    pub session: Option<CreateSpec>,
    #[serde(flatten)]
    pub end: openprogram_actors::session::EndTurn,
}

/// The answer of `POST /api/sessions/{id}/turns`: the end of the turn; for a
/// whole turn also the session and the nodes as stored.
#[derive(Serialize, ToSchema)]
pub struct TurnAnswer {
    pub session_id: Option<String>,
    pub nodes: Option<Vec<Node>>,
    #[serde(flatten)]
    pub outcome: openprogram_actors::session::TurnOutcome,
}

/// Every error answer: a message and a machine code (docs/API.md lists
/// the codes).
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// A human-readable message.
    pub error: String,
    /// The machine code, e.g. `unknown_session`.
    pub code: String,
}

/// A git bundle (the `git bundle` format), raw bytes on the wire: a
/// binary string to a client generator.
#[derive(Debug, ToSchema)]
#[schema(value_type = String, format = Binary)]
pub struct GitBundle(pub Vec<u8>);
