//! The wire types of a session: what clients send (nodes, patches, the end
//! of a turn, creation fields) and what the core answers.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::naming::TitlePlan;
use crate::meta::{now, SessionMeta, Status};
use crate::node::{Node, Role};

/// A node as a client sends it; the store fills in seq and timestamps.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NewNode {
    #[serde(default)]
    pub id: Option<String>,
    pub role: Role,
    #[serde(default)]
    pub content: Value,
    #[serde(default)]
    pub predecessor: Option<String>,
    #[serde(default)]
    pub caller: Option<String>,
    #[serde(default)]
    pub metadata: Map<String, Value>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub output: Option<Value>,
    /// When the node was written, for an importer that keeps another
    /// tool's own times; never taken from a client (a node's time is the
    /// server's).
    #[serde(skip)]
    pub at: Option<f64>,
}

/// Changes to a node of the open turn (filling the assistant placeholder).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NodePatch {
    #[serde(default)]
    pub content: Option<Value>,
    /// Merged key by key into the node's metadata.
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
    #[serde(default)]
    pub output: Option<Value>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum Outcome {
    #[default]
    Ok,
    Failed,
    NeedsInput,
    /// Stopped by the user: the session is `idle` again (a stop is not a
    /// failure), the turn record says `cancelled` and the turn's last reply
    /// carries `metadata.stopped: true`.
    Cancelled,
}

impl Outcome {
    /// What the turn record keeps (nothing for `ok`).
    pub fn recorded(self) -> Option<String> {
        match self {
            Outcome::Ok => None,
            Outcome::Failed => Some("failed".into()),
            Outcome::NeedsInput => Some("needs_input".into()),
            Outcome::Cancelled => Some("cancelled".into()),
        }
    }
}

/// The end-of-turn call, with what the client reports about the turn.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EndTurn {
    #[serde(default)]
    pub outcome: Outcome,
    /// A background turn ends as `done` + `unread`.
    #[serde(default)]
    pub background: bool,
    #[serde(default)]
    pub duration_s: Option<f64>,
    #[serde(default)]
    pub tokens: Option<u64>,
    #[serde(default)]
    pub tool_calls: Option<u64>,
    /// Optional LLM context snapshot, stored in `context/commits/<id>.json`.
    #[serde(default)]
    pub context: Option<Value>,
    #[serde(default)]
    pub context_id: Option<String>,
    /// Why the turn failed (with `outcome: failed`): kept in the turn
    /// record (at most 2,000 characters).
    #[serde(default)]
    pub error: Option<String>,
    /// The files the agent changed in the turn (paths relative to the
    /// bound project's folder; a folder names everything under it): the
    /// turn's project commit holds only these. Without it, the files that
    /// changed since the turn began, less those another open turn claimed.
    #[serde(default)]
    pub files: Option<Vec<String>>,
    /// The turn the client means to end. Naming the turn that was just
    /// ended (a retry after a lost answer) returns its commit again.
    #[serde(default)]
    pub turn: Option<u64>,
    /// The request's `Idempotency-Key` header: a repeat with the key of the
    /// last ended turn returns its commit again.
    #[serde(skip)]
    pub idempotency_key: Option<String>,
    /// When the turn ended (its commit's time), for an importer that keeps
    /// another tool's own times; never taken from a client.
    #[serde(skip)]
    pub at: Option<f64>,
}

/// Session fields a creator may set.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CreateSpec {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub agent_id: Option<String>,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub source: Option<String>,
    #[serde(default)]
    pub channel: Option<String>,
    #[serde(default)]
    pub account_id: Option<String>,
    #[serde(default)]
    pub peer_display: Option<String>,
    #[serde(default)]
    pub peer_id: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub group: Option<String>,
    /// Bind the new session to a project: its repository lands inside it.
    #[serde(default)]
    pub project_id: Option<String>,
}

impl CreateSpec {
    pub fn into_meta(self, id: String) -> SessionMeta {
        let mut meta = SessionMeta::new(id, now());
        if let Some(v) = self.agent_id {
            meta.agent_id = v;
        }
        if let Some(v) = self.title {
            // A name the creator gave is kept, as a rename is: the titler
            // only replaces a placeholder.
            meta.user_titled = !matches!(v.trim(), "" | "New conversation" | "Untitled");
            meta.title = v;
        }
        if let Some(v) = self.source {
            meta.source = v;
        }
        meta.channel = self.channel;
        meta.account_id = self.account_id;
        meta.peer_display = self.peer_display;
        meta.peer_id = self.peer_id;
        meta.model = self.model;
        meta.group = self.group;
        if let Some(p) = self.project_id {
            meta.project_id = p;
        }
        meta
    }
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AppendOutcome {
    pub node: Node,
    /// False when the node id already existed (an idempotent retry).
    pub created: bool,
    /// The turn this node belongs to, if one is open.
    pub turn: Option<u64>,
    /// Set when this user message first closed a turn left open by a crash.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub closed_interrupted_turn: Option<TurnOutcome>,
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TurnOutcome {
    pub turn: u64,
    pub commit: String,
    pub short_sha: String,
    pub status: Status,
    /// The agent's commit in the bound project, if one was made.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project_commit: Option<String>,
    /// Why the agent's changes were not committed (for the UI banner).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project_commit_skipped: Option<serde_json::Value>,
    /// An LLM title is due (internal: handed to the titler).
    #[serde(skip)]
    pub title_plan: Option<TitlePlan>,
    /// The next turn, opened at once by the oldest queued user message.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(no_recursion))]
    pub next_turn: Option<Box<AppendOutcome>>,
    /// This answers a repeated end of a turn already committed.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub repeated: bool,
}

/// What posting a user message did: appended it (opening a turn) or queued
/// it behind the running turn.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "result", rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum Posted {
    Appended(Box<AppendOutcome>),
    Queued {
        message_id: String,
        position: u64,
        queue_length: usize,
    },
}

/// The `caller` of runtime nodes that hang off no node (e.g. a relocation).
pub const ROOT_CALLER: &str = "ROOT";

pub use crate::project::agent_turn::MAX_TURN_FILES;

impl EndTurn {
    /// `files` names paths inside a project: relative, no `..`, no NUL,
    /// not git's or the sessions' own folders, at most `MAX_TURN_FILES`.
    pub fn check_files(&self) -> Result<(), super::SessionError> {
        let Some(files) = &self.files else {
            return Ok(());
        };
        let bad = |why: String| Err(super::SessionError::Invalid(why));
        if files.len() > MAX_TURN_FILES {
            return bad(format!("files: at most {MAX_TURN_FILES} paths"));
        }
        for f in files {
            let path = std::path::Path::new(f);
            let inside = path.components().all(|c| match c {
                std::path::Component::Normal(p) => {
                    p != ".git" && p != crate::store::OPENPROGRAM_DIR
                }
                std::path::Component::CurDir => true,
                _ => false,
            });
            if f.is_empty() || f.len() > 4096 || f.contains('\0') || !inside {
                return bad(format!(
                    "files: '{}' is not a path inside the project",
                    f.chars().take(200).collect::<String>()
                ));
            }
        }
        Ok(())
    }
}
