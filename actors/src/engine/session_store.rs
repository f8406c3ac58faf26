//! The session store of agent SDKs (the Claude Agent SDK's `SessionStore`:
//! `append`, `load`, `list_sessions`, `delete`, `list_subkeys`): an
//! application keeps its agents' transcripts here, and they are sessions
//! like any other (the web UI, search, replay, the change feed).
//!
//! A key (`project_key`, `session_id`, optional `subpath` for a sub-agent's
//! transcript) names one session, with an id derived from the key
//! (`sdk-<uuid v5>`), its `group` the project key and its `peer_id` the
//! SDK's session id. Each transcript entry becomes one node holding the
//! entry verbatim (`metadata.sdk_entry`), so `load` gives back exactly what
//! was appended, in order; an entry's `uuid` is its node id, so an entry
//! sent again is not stored twice. A prompt opens a turn; the turn ends
//! (one commit) when the batch that holds its final answer is stored.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::Engine;
use crate::error::EngineError;
use crate::ids;
use crate::meta::SessionMeta;
use crate::node::Role;
use crate::registry::ListQuery;
use crate::session::{EndTurn, NewNode, SessionError};

/// The `source` of the sessions the store holds.
pub const SOURCE: &str = "claude-agent-sdk";
/// At most this many entries in one append.
pub const MAX_ENTRIES: usize = 10_000;
/// The metadata key holding an entry verbatim.
const ENTRY: &str = "sdk_entry";
/// The longest key part accepted.
const MAX_KEY: usize = 1024;

/// A transcript's key, as the SDK names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StoreKey {
    pub project_key: String,
    pub session_id: String,
    /// A sub-agent's transcript (`subagents/agent-<id>`); none for the
    /// main one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subpath: Option<String>,
}

/// A session of a project key, as `list_sessions` answers.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StoredSession {
    pub session_id: String,
    /// Last written, in milliseconds since the epoch.
    pub mtime: i64,
    /// Our session's id.
    pub id: String,
}

/// What an append stored.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StoreAppended {
    /// Our session's id.
    pub id: String,
    /// Entries stored.
    pub appended: usize,
    /// Entries already there (their `uuid` was stored before).
    pub duplicates: usize,
    /// The turn commits this append made.
    pub commits: Vec<String>,
}

fn invalid(message: impl Into<String>) -> EngineError {
    SessionError::Invalid(message.into()).into()
}

impl StoreKey {
    pub fn check(&self) -> Result<(), EngineError> {
        let part = |name: &str, v: &str| {
            if v.is_empty() || v.len() > MAX_KEY || v.contains('\0') {
                Err(invalid(format!(
                    "{name} must be 1..={MAX_KEY} bytes without NUL"
                )))
            } else {
                Ok(())
            }
        };
        part("project_key", &self.project_key)?;
        part("session_id", &self.session_id)?;
        if let Some(s) = &self.subpath {
            part("subpath", s)?;
        }
        Ok(())
    }

    /// Our session's id for this key.
    pub fn id(&self) -> String {
        let name = format!(
            "{}\0{}\0{}",
            self.project_key,
            self.session_id,
            self.subpath.as_deref().unwrap_or("")
        );
        let ns = uuid::Uuid::from_u128(0x6f70_656e_7072_6f67_7261_6d2d_7364_6b00);
        format!("sdk-{}", uuid::Uuid::new_v5(&ns, name.as_bytes()).simple())
    }

    fn main(&self) -> StoreKey {
        StoreKey {
            subpath: None,
            ..self.clone()
        }
    }
}

/// The text an entry shows (its message's text blocks, or a summary).
fn text_of(entry: &Value) -> String {
    let content = entry.get("message").and_then(|m| m.get("content"));
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => ["summary", "content", "customTitle"]
            .iter()
            .find_map(|k| entry.get(*k).and_then(Value::as_str))
            .unwrap_or_default()
            .to_string(),
    }
}

fn has_block(entry: &Value, kind: &str) -> bool {
    entry
        .get("message")
        .and_then(|m| m.get("content"))
        .and_then(Value::as_array)
        .is_some_and(|b| {
            b.iter()
                .any(|b| b.get("type").and_then(Value::as_str) == Some(kind))
        })
}

/// The role an entry's node takes (before the open turn is considered).
fn role_of(entry: &Value) -> Role {
    match entry.get("type").and_then(Value::as_str) {
        Some("user") if has_block(entry, "tool_result") => Role::Tool,
        Some("user") => Role::User,
        Some("assistant") => Role::Assistant,
        _ => Role::System,
    }
}

/// The title a batch sets: the user's last `custom-title`, else the last
/// `ai-title` (and whether the user gave it).
fn title_of(entries: &[Value]) -> Option<(String, bool)> {
    let last = |kind: &str, field: &str| {
        entries
            .iter()
            .rev()
            .filter(|e| e.get("type").and_then(Value::as_str) == Some(kind))
            .find_map(|e| e.get(field).and_then(Value::as_str))
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
    };
    last("custom-title", "customTitle")
        .map(|t| (t, true))
        .or_else(|| last("ai-title", "aiTitle").map(|t| (t, false)))
}

/// The batch's last answer is final: the model stopped for good.
fn ends_turn(entry: &Value) -> bool {
    entry.get("type").and_then(Value::as_str) == Some("assistant")
        && matches!(
            entry
                .get("message")
                .and_then(|m| m.get("stop_reason"))
                .and_then(Value::as_str),
            Some("end_turn" | "stop_sequence" | "max_tokens" | "refusal")
        )
}

impl Engine {
    /// Store `entries` under `key` (see the module's description).
    pub async fn store_append(
        &self,
        key: &StoreKey,
        entries: Vec<Value>,
    ) -> Result<StoreAppended, EngineError> {
        self.writable()?;
        key.check()?;
        if entries.len() > MAX_ENTRIES {
            return Err(invalid(format!(
                "at most {MAX_ENTRIES} entries per append (got {})",
                entries.len()
            )));
        }
        for (i, e) in entries.iter().enumerate() {
            if e.get("type").and_then(Value::as_str).is_none() {
                return Err(invalid(format!(
                    "entry {i} is not an object with a string `type`"
                )));
            }
        }
        let id = key.id();
        let mut out = StoreAppended {
            id: id.clone(),
            appended: 0,
            duplicates: 0,
            commits: Vec::new(),
        };
        if entries.is_empty() {
            return Ok(out);
        }
        let meta = match self.meta(&id).await {
            Ok(m) => m,
            Err(e) if e.is_unknown_session() => self.store_create(key).await?,
            Err(e) => return Err(e),
        };
        let title = title_of(&entries);
        let mut open = meta.open_turn.is_some();
        // Assistant nodes of this batch by their id (tool results name
        // theirs through `parentUuid`).
        let mut answers: std::collections::HashSet<String> = Default::default();
        let last_answer = entries.iter().rposition(|e| {
            matches!(
                e.get("type").and_then(Value::as_str),
                Some("user" | "assistant")
            )
        });
        for (i, entry) in entries.into_iter().enumerate() {
            let uuid = entry
                .get("uuid")
                .and_then(Value::as_str)
                .filter(|u| ids::validate("node id", u).is_ok())
                .map(str::to_string);
            if let Some(u) = &uuid {
                if self.has_node(&id, u).await? {
                    out.duplicates += 1;
                    continue;
                }
            }
            let mut role = role_of(&entry);
            let mut caller = None;
            if role == Role::Tool {
                caller = entry
                    .get("parentUuid")
                    .and_then(Value::as_str)
                    .filter(|p| answers.contains(*p))
                    .map(str::to_string);
                if caller.is_none() || !open {
                    role = Role::System;
                }
            }
            if role == Role::Assistant && !open {
                role = Role::System;
            }
            if role == Role::User && open {
                out.commits
                    .push(self.end_turn(&id, EndTurn::default()).await?.commit);
            }
            let name = match role {
                Role::System | Role::Tool => entry
                    .get("type")
                    .and_then(Value::as_str)
                    .map(|t| if role == Role::Tool { "tool_result" } else { t })
                    .map(str::to_string),
                _ => None,
            };
            let mut metadata = Map::new();
            let ends = Some(i) == last_answer && ends_turn(&entry);
            let content = Value::String(text_of(&entry));
            metadata.insert(ENTRY.into(), entry);
            let node = NewNode {
                id: uuid.clone(),
                role,
                content,
                predecessor: None,
                caller,
                metadata,
                name,
                output: None,
                at: None,
            };
            let appended = self.append(&id, node, None).await?;
            out.appended += 1;
            match role {
                Role::User => open = true,
                Role::Assistant => {
                    answers.insert(appended.node.id.clone());
                }
                _ => {}
            }
            if ends && open {
                out.commits
                    .push(self.end_turn(&id, EndTurn::default()).await?.commit);
                open = false;
            }
        }
        if let Some((title, by_user)) = title {
            let current = self.meta(&id).await?;
            let keep = current.title == title || (current.user_titled && !by_user);
            if !keep && crate::meta::check_title(&title).is_ok() {
                let patch = crate::meta::MetaPatch {
                    title: Some(title),
                    user_titled: by_user.then_some(true),
                    ..crate::meta::MetaPatch::default()
                };
                self.update_meta(&id, patch).await?;
            }
        }
        Ok(out)
    }

    async fn store_create(&self, key: &StoreKey) -> Result<SessionMeta, EngineError> {
        let id = key.id();
        let mut meta = SessionMeta::new(id.clone(), crate::meta::now());
        meta.source = SOURCE.to_string();
        meta.group = Some(key.project_key.clone());
        meta.peer_id = Some(key.session_id.clone());
        meta.extra.insert(
            "store_key".into(),
            serde_json::to_value(key).unwrap_or_default(),
        );
        match self.create(&id, meta).await {
            Ok(m) => Ok(m),
            // Made meanwhile by a concurrent append of the same key.
            Err(EngineError::Session(SessionError::AlreadyExists)) => self.meta(&id).await,
            Err(e) => Err(e),
        }
    }

    /// Every entry stored under `key`, in order; `None` when none was.
    pub async fn store_load(&self, key: &StoreKey) -> Result<Option<Vec<Value>>, EngineError> {
        key.check()?;
        let nodes = match self.nodes(&key.id()).await {
            Ok(n) => n,
            Err(e) if e.is_unknown_session() => return Ok(None),
            Err(e) => return Err(e),
        };
        let entries: Vec<Value> = nodes
            .into_iter()
            .filter_map(|mut n| n.metadata.remove(ENTRY))
            .collect();
        Ok((!entries.is_empty()).then_some(entries))
    }

    /// The store's sessions of `project_key` (and, with `session_id`,
    /// that one's sub-agent transcripts as well).
    async fn store_rows(
        &self,
        project_key: &str,
    ) -> Result<Vec<crate::registry::SessionRow>, EngineError> {
        let mut rows = Vec::new();
        let mut offset = 0;
        loop {
            let page = self
                .list(ListQuery {
                    source: Some(SOURCE.to_string()),
                    group: Some(project_key.to_string()),
                    include_archived: true,
                    offset,
                    limit: crate::limit::ListLimit::largest(),
                    ..ListQuery::default()
                })
                .await?;
            let n = page.sessions.len();
            rows.extend(
                page.sessions
                    .iter()
                    .map(|r| crate::registry::SessionRow::clone(r)),
            );
            offset += n;
            if n == 0 || offset >= page.total {
                return Ok(rows);
            }
        }
    }

    /// The main transcripts stored under `project_key`.
    pub async fn store_list(&self, project_key: &str) -> Result<Vec<StoredSession>, EngineError> {
        let mut out = Vec::new();
        for row in self.store_rows(project_key).await? {
            let Some(sid) = row.peer_id.clone() else {
                continue;
            };
            let key = StoreKey {
                project_key: project_key.to_string(),
                session_id: sid.clone(),
                subpath: None,
            };
            if key.id() == row.id {
                out.push(StoredSession {
                    session_id: sid,
                    mtime: (row.updated_at * 1000.0) as i64,
                    id: row.id,
                });
            }
        }
        Ok(out)
    }

    /// The sub-agent transcripts (`subpath`s) stored under a session.
    pub async fn store_subkeys(
        &self,
        project_key: &str,
        session_id: &str,
    ) -> Result<Vec<String>, EngineError> {
        let main = StoreKey {
            project_key: project_key.to_string(),
            session_id: session_id.to_string(),
            subpath: None,
        };
        main.check()?;
        let main_id = main.id();
        let mut out = Vec::new();
        for row in self.store_rows(project_key).await? {
            if row.peer_id.as_deref() != Some(session_id) || row.id == main_id {
                continue;
            }
            let meta = match self.meta(&row.id).await {
                Ok(m) => m,
                Err(e) if e.is_unknown_session() => continue,
                Err(e) => return Err(e),
            };
            let key: Option<StoreKey> = meta
                .extra
                .get("store_key")
                .and_then(|k| serde_json::from_value(k.clone()).ok());
            if let Some(sub) = key.filter(|k| k.main() == main).and_then(|k| k.subpath) {
                out.push(sub);
            }
        }
        out.sort();
        Ok(out)
    }

    /// Delete the transcript `key`; the main one takes its sub-agents'
    /// with it.
    pub async fn store_delete(&self, key: &StoreKey) -> Result<(), EngineError> {
        self.writable()?;
        key.check()?;
        let mut doomed = vec![key.id()];
        if key.subpath.is_none() {
            for sub in self
                .store_subkeys(&key.project_key, &key.session_id)
                .await?
            {
                doomed.push(
                    StoreKey {
                        subpath: Some(sub),
                        ..key.clone()
                    }
                    .id(),
                );
            }
        }
        for id in doomed {
            match self.delete(&id).await {
                Ok(()) => {}
                Err(e) if e.is_unknown_session() => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}
