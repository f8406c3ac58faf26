//! `meta.json`: a session's metadata and the cached state of its turns.
//! The history files are the source of truth; the turn fields here are a
//! cache that the session core repairs from them when it loads.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    #[default]
    Idle,
    Running,
    Done,
    Failed,
    NeedsInput,
}

impl Status {
    pub fn parse(s: &str) -> Option<Status> {
        Some(match s {
            "idle" => Status::Idle,
            "running" => Status::Running,
            "done" => Status::Done,
            "failed" => Status::Failed,
            "needs_input" => Status::NeedsInput,
            _ => return None,
        })
    }
}

/// Where a forked session came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ForkedFrom {
    pub session_id: String,
    pub commit: String,
}

/// A replay view: the conversation as it was at `commit` (spec 001 §2.4).
/// The next user message continues from there on a new branch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct View {
    pub commit: String,
    /// The branch whose line the view steps along (prev / next).
    pub branch: String,
}

/// The turn in progress: opened by a user message (or by a retried
/// answer, whose `user_node` is the message it answers again).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpenTurn {
    pub number: u64,
    pub user_node: String,
    /// Sequence number of the first node that belongs to this turn.
    pub first_seq: u64,
    pub started_at: f64,
    /// For a session bound to a real project: the project's working tree
    /// when the turn began (the agent commits only if it was clean).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<ProjectBaseline>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProjectBaseline {
    pub clean: bool,
    /// The user's uncommitted paths when the turn began.
    #[serde(default)]
    pub dirty_paths: Vec<String>,
    /// Why the agent's changes cannot be committed, when not clean.
    #[serde(default)]
    pub reason: Option<String>,
}

/// What happened to the project at the end of a turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "result")]
pub enum ProjectOutcome {
    Committed {
        commit: String,
    },
    NoChanges,
    Skipped {
        reason: String,
        dirty_paths: Vec<String>,
    },
}

/// What the client reported when it ended the last turn; the commit message
/// is built from it, so a commit interrupted by a crash can be redone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct TurnRecord {
    pub number: u64,
    pub first_seq: u64,
    pub last_seq: u64,
    pub head: Option<String>,
    pub duration_s: Option<f64>,
    pub tokens: Option<u64>,
    pub tool_calls: Option<u64>,
    pub context_file: Option<String>,
    pub ended_at: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<ProjectOutcome>,
}

fn default_agent() -> String {
    "main".into()
}
fn default_source() -> String {
    "api".into()
}
fn default_project() -> String {
    "default".into()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionMeta {
    pub id: String,
    #[serde(default = "default_agent")]
    pub agent_id: String,
    #[serde(default)]
    pub title: String,
    pub created_at: f64,
    #[serde(default)]
    pub updated_at: f64,
    #[serde(default = "default_source")]
    pub source: String,
    #[serde(default)]
    pub channel: Option<String>,
    #[serde(default)]
    pub account_id: Option<String>,
    #[serde(default)]
    pub peer_display: Option<String>,
    #[serde(default)]
    pub peer_id: Option<String>,
    #[serde(default)]
    pub pinned: bool,
    #[serde(default)]
    pub archived: bool,
    #[serde(default)]
    pub group: Option<String>,
    #[serde(default)]
    pub status: Status,
    #[serde(default)]
    pub unread: bool,
    #[serde(default = "default_project")]
    pub project_id: String,
    #[serde(default)]
    pub model: Option<String>,
    /// Current tip of the conversational chain.
    #[serde(default)]
    pub head: Option<String>,
    /// Turns on the current path (the current branch's length).
    #[serde(default)]
    pub turn_count: u64,
    /// Set while the user replays an older turn (a read-only view).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub viewing: Option<View>,
    #[serde(default)]
    pub open_turn: Option<OpenTurn>,
    #[serde(default)]
    pub last_turn: Option<TurnRecord>,
    #[serde(default, rename = "_user_titled")]
    pub user_titled: bool,
    #[serde(default, rename = "_auto_titled")]
    pub auto_titled: bool,
    #[serde(default, rename = "_title_gen_count")]
    pub title_gen_count: u32,
    /// Set on a session forked from another one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<ForkedFrom>,
    /// Additional working directories (added and removed at any time,
    /// unlike the frozen project binding).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub working_dirs: Vec<std::path::PathBuf>,
    /// Fields this version does not know are kept as they are.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl SessionMeta {
    pub fn new(id: String, now: f64) -> SessionMeta {
        SessionMeta {
            id,
            agent_id: default_agent(),
            title: String::new(),
            created_at: now,
            updated_at: now,
            source: default_source(),
            channel: None,
            account_id: None,
            peer_display: None,
            peer_id: None,
            pinned: false,
            archived: false,
            group: None,
            status: Status::Idle,
            unread: false,
            project_id: default_project(),
            model: None,
            head: None,
            turn_count: 0,
            viewing: None,
            open_turn: None,
            last_turn: None,
            user_titled: false,
            auto_titled: false,
            title_gen_count: 0,
            working_dirs: Vec::new(),
            forked_from: None,
            extra: Map::new(),
        }
    }
}

/// Seconds since the Unix epoch, as the spec's timestamps are.
pub fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// A partial update of the user-visible metadata: only the fields given are
/// written (spec 003, "Updating fields").
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetaPatch {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinned: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archived: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unread: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
    /// `Some(None)` clears the group.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "double_option"
    )]
    pub group: Option<Option<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Set by a user rename: the permanent title lock.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        rename = "_user_titled"
    )]
    pub user_titled: Option<bool>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        rename = "_auto_titled"
    )]
    pub auto_titled: Option<bool>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        rename = "_title_gen_count"
    )]
    pub title_gen_count: Option<u32>,
    /// Add an additional working directory (absolute, canonical).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub add_working_dir: Option<std::path::PathBuf>,
    /// Remove an additional working directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remove_working_dir: Option<std::path::PathBuf>,
}

impl MetaPatch {
    pub fn is_empty(&self) -> bool {
        *self == MetaPatch::default()
    }

    /// Apply the given fields. `updated_at` is left alone: only appended
    /// content moves it (the index consistency contract).
    pub fn apply(&self, meta: &mut SessionMeta) {
        if let Some(v) = &self.title {
            meta.title = v.clone();
        }
        if let Some(v) = self.pinned {
            meta.pinned = v;
        }
        if let Some(v) = self.archived {
            meta.archived = v;
        }
        if let Some(v) = self.unread {
            meta.unread = v;
        }
        if let Some(v) = self.status {
            meta.status = v;
        }
        if let Some(v) = &self.group {
            meta.group = v.clone();
        }
        if let Some(v) = &self.model {
            meta.model = Some(v.clone());
        }
        if let Some(v) = self.user_titled {
            meta.user_titled = v;
        }
        if let Some(v) = self.auto_titled {
            meta.auto_titled = v;
        }
        if let Some(v) = self.title_gen_count {
            meta.title_gen_count = v;
        }
        if let Some(d) = &self.add_working_dir {
            if !meta.working_dirs.contains(d) {
                meta.working_dirs.push(d.clone());
            }
        }
        if let Some(d) = &self.remove_working_dir {
            meta.working_dirs.retain(|w| w != d);
        }
    }
}

/// Distinguish an absent field from an explicit `null` (`Some(None)`).
/// Use with `#[serde(default, with = "double_option")]`.
pub mod double_option {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(v: &Option<Option<String>>, s: S) -> Result<S::Ok, S::Error> {
        v.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Option<String>>, D::Error> {
        Option::<String>::deserialize(d).map(Some)
    }
}
