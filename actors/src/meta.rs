//! `meta.json`: a session's metadata and the cached state of its turns.
//! The history files are the source of truth; the turn fields here are a
//! cache that the session core repairs from them when it loads.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Longest title accepted from a client or a bundle, in characters (a
/// title is a line in a list; generated ones are at most 50).
pub const MAX_TITLE_CHARS: usize = 300;

/// A title from elsewhere (another tool's), trimmed and cut to
/// `MAX_TITLE_CHARS` characters.
pub fn clip_title(title: &str) -> String {
    title
        .trim()
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(MAX_TITLE_CHARS)
        .collect()
}

/// A title a client may set: at most `MAX_TITLE_CHARS` characters, none
/// of them a control character (a NUL, a line break: a title is one line).
pub fn check_title(title: &str) -> Result<(), String> {
    let n = title.chars().count();
    if n > MAX_TITLE_CHARS {
        return Err(format!(
            "a title is at most {MAX_TITLE_CHARS} characters (this one has {n})"
        ));
    }
    if let Some(c) = title.chars().find(|c| c.is_control()) {
        return Err(format!(
            "a title holds no control character (this one holds U+{:04X})",
            u32::from(c)
        ));
    }
    Ok(())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, Hash)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum Status {
    #[default]
    Idle,
    Running,
    Done,
    Failed,
    NeedsInput,
}

impl Status {
    pub const ALL: [Status; 5] = [
        Status::Idle,
        Status::Running,
        Status::Done,
        Status::Failed,
        Status::NeedsInput,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Idle => "idle",
            Status::Running => "running",
            Status::Done => "done",
            Status::Failed => "failed",
            Status::NeedsInput => "needs_input",
        }
    }

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
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ForkedFrom {
    pub session_id: String,
    pub commit: String,
}

/// A replay view: the conversation as it was at `commit` (spec 001 §2.4).
/// The next user message continues from there on a new branch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct View {
    pub commit: String,
    /// The branch whose line the view steps along (prev / next).
    pub branch: String,
}

/// The turn in progress: opened by a user message (or by a retried
/// answer, whose `user_node` is the message it answers again).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ProjectBaseline {
    pub clean: bool,
    /// The user's uncommitted paths when the turn began.
    #[serde(default)]
    pub dirty_paths: Vec<String>,
    /// Why the agent's changes cannot be committed, when not clean.
    #[serde(default)]
    pub reason: Option<String>,
    /// The working tree when the turn began, as a tree object in the
    /// project's repository (HEAD's tree when clean): what the turn's end
    /// is compared with to find the agent's files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree: Option<String>,
}

impl ProjectBaseline {
    /// A baseline that records nothing of the tree (the project was not
    /// reachable): the agent's changes cannot be told from the user's.
    pub fn unknown(reason: impl Into<String>) -> ProjectBaseline {
        ProjectBaseline {
            clean: false,
            dirty_paths: Vec::new(),
            reason: Some(reason.into()),
            tree: None,
        }
    }
}

/// An agent turn kept off the user's branch (the tree was dirty when it
/// began): its commit on the user's HEAD under a private ref.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct HeldTurn {
    /// `refs/openprogram/sessions/<session>/turn-<n>`.
    #[serde(rename = "ref")]
    pub reference: String,
    pub commit: String,
    /// The files the agent changed in the turn (the user's own
    /// uncommitted files left out).
    pub files: Vec<String>,
}

/// What happened to the project at the end of a turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "result")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum ProjectOutcome {
    Committed {
        commit: String,
        /// The files the commit holds (this turn's own).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        files: Vec<String>,
    },
    NoChanges,
    Skipped {
        reason: String,
        dirty_paths: Vec<String>,
        /// Where the agent's changes of the turn were kept instead.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        held: Option<HeldTurn>,
    },
}

/// What the client reported when it ended the last turn; the commit message
/// is built from it, so a commit interrupted by a crash can be redone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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
    /// The `Idempotency-Key` the turn was ended with, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    /// How the turn ended when not `ok`: `failed`, `needs_input`, or
    /// `cancelled` (stopped by the user: `POST …/runs/stop`, WS `stop_run`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// Why the turn failed, as its runner said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
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
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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
    /// When the user archived it (idleness for retention counts from the
    /// later of this and `updated_at`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archived_at: Option<f64>,
    #[serde(default)]
    pub group: Option<String>,
    #[serde(default)]
    pub status: Status,
    #[serde(default)]
    pub unread: bool,
    #[serde(default = "default_project")]
    pub project_id: String,
    /// The bound project's name and folder when the session was made in
    /// it or bound to it: what a restore registers again when the project
    /// registry is gone with the state folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_home: Option<ProjectHome>,
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
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<String>))]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub working_dirs: Vec<std::path::PathBuf>,
    /// The last turn ended but its commit is not made yet (never stored:
    /// the session actor reports it).
    #[serde(
        default,
        skip_deserializing,
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub commit_pending: bool,
    /// Fields this version does not know are kept as they are.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl SessionMeta {
    /// Whether a run holds the session: its turn is running, or is open
    /// and waiting for a runner (`needs_input`). A new user message is
    /// refused (or queued) meanwhile, never taken as the end of it.
    pub fn run_holds(&self) -> bool {
        self.status == Status::Running
            || (self.status == Status::NeedsInput && self.open_turn.is_some())
    }

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
            archived_at: None,
            group: None,
            status: Status::Idle,
            unread: false,
            project_id: default_project(),
            project_home: None,
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
            commit_pending: false,
            extra: Map::new(),
        }
    }
}

impl SessionMeta {
    /// Read a session's `meta.json` leniently (spec 000 §3.2: a directory
    /// with a parsable `meta.json` is a valid session). What this version
    /// would refuse is read as the closest valid value and logged: an
    /// unknown `status` (`interrupted`, `cancelled`, …) as `idle`, a `null`
    /// where a value belongs as its default, a missing `created_at` as the
    /// file's modification time, a missing `updated_at` as `created_at`, a
    /// missing `id` as the directory's name. Unknown keys are kept (they
    /// are written back as they were). `InvalidData` only for a file that
    /// is not a JSON object.
    pub fn read_lenient(path: &std::path::Path) -> std::io::Result<SessionMeta> {
        use std::io::{Error, ErrorKind};
        let bytes = std::fs::read(path)?;
        let mut v: Value =
            serde_json::from_slice(&bytes).map_err(|e| Error::new(ErrorKind::InvalidData, e))?;
        let Some(obj) = v.as_object_mut() else {
            return Err(Error::new(
                ErrorKind::InvalidData,
                "meta.json is not an object",
            ));
        };
        // A null where the schema has a value (or a default) means "unset".
        obj.retain(|_, value| !value.is_null());
        if let Some(s) = obj.get("status").and_then(Value::as_str) {
            if Status::parse(s).is_none() {
                tracing::warn!(path = %path.display(), status = s, "unknown session status; read as idle");
                obj.insert("original_status".into(), Value::from(s));
                obj.insert("status".into(), Value::from("idle"));
            }
        }
        if !obj.get("created_at").is_some_and(Value::is_number) {
            let mtime = std::fs::metadata(path)
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0.0, |d| d.as_secs_f64());
            obj.insert("created_at".into(), Value::from(mtime));
        }
        if !obj.get("updated_at").is_some_and(Value::is_number) {
            let created = obj.get("created_at").cloned().unwrap_or(Value::from(0.0));
            obj.insert("updated_at".into(), created);
        }
        if !obj.get("id").is_some_and(Value::is_string) {
            let name = path
                .parent()
                .and_then(|d| d.file_name())
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            obj.insert("id".into(), Value::from(name));
        }
        // Known fields of the wrong type (e.g. a numeric title) are read
        // as their defaults rather than hiding the session.
        if let Err(first) = serde_json::from_value::<SessionMeta>(v.clone()) {
            let known: Vec<String> = serde_json::to_value(SessionMeta::new(String::new(), 0.0))
                .ok()
                .and_then(|k| k.as_object().map(|o| o.keys().cloned().collect()))
                .unwrap_or_default();
            if let Some(obj) = v.as_object_mut() {
                let bad: Vec<String> = obj
                    .iter()
                    .filter(|(k, _)| {
                        known.contains(k) && !["id", "created_at"].contains(&k.as_str())
                    })
                    .filter(|(k, value)| {
                        let probe =
                            serde_json::json!({"id": "x", "created_at": 0.0, (*k).clone(): value});
                        serde_json::from_value::<SessionMeta>(probe).is_err()
                    })
                    .map(|(k, _)| k.clone())
                    .collect();
                for key in bad {
                    tracing::warn!(path = %path.display(), field = %key, error = %first, "meta.json field of the wrong type; read as its default");
                    obj.remove(&key);
                }
            }
        }
        serde_json::from_value(v).map_err(|e| Error::new(ErrorKind::InvalidData, e))
    }
}

/// Seconds since the Unix epoch, as the spec's timestamps are.
pub fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// A project as a session records it (`SessionMeta::project_home`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ProjectHome {
    pub name: String,
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub path: std::path::PathBuf,
}

/// A partial update of the user-visible metadata: only the fields given are
/// written (spec 003, "Updating fields").
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub add_working_dir: Option<std::path::PathBuf>,
    /// Remove an additional working directory.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
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
            if v && !meta.archived {
                meta.archived_at = Some(now());
            } else if !v {
                meta.archived_at = None;
            }
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

#[cfg(test)]
#[path = "meta_tests.rs"]
mod tests;
