//! A registry row: what the session list shows, derived from `meta.json`
//! plus the preview of the latest user message.

use serde::{Deserialize, Serialize};

use crate::meta::{SessionMeta, Status};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SessionRow {
    pub id: String,
    pub agent_id: String,
    pub title: String,
    pub created_at: f64,
    pub updated_at: f64,
    pub source: String,
    pub channel: Option<String>,
    pub account_id: Option<String>,
    pub peer_display: Option<String>,
    pub peer_id: Option<String>,
    pub pinned: bool,
    pub archived: bool,
    /// When the user archived it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archived_at: Option<f64>,
    pub group: Option<String>,
    pub status: Status,
    pub unread: bool,
    pub preview: Option<String>,
    pub project_id: String,
    /// First 80 characters of the first user message (the title shown when
    /// a session has none).
    #[serde(default)]
    pub first_preview: Option<String>,
    /// The last turn ended but its commit is not made yet (retried).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub commit_pending: bool,
    /// The row as clients see it, serialized once (`client_json`).
    #[serde(skip)]
    #[cfg_attr(feature = "openapi", schema(ignore))]
    pub client_cache: ClientJson,
}

/// A row's client JSON and the project name it was made with. A row is
/// never changed in place (a change is a new row), so only a renamed
/// project makes it stale; a copy of a row starts empty.
#[derive(Debug, Default)]
pub struct ClientJson(std::sync::Mutex<Option<(String, std::sync::Arc<[u8]>)>>);

impl Clone for ClientJson {
    fn clone(&self) -> Self {
        ClientJson::default()
    }
}

impl PartialEq for ClientJson {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl SessionRow {
    pub fn from_meta(
        meta: &SessionMeta,
        preview: Option<String>,
        first_preview: Option<String>,
    ) -> SessionRow {
        SessionRow {
            id: meta.id.clone(),
            agent_id: meta.agent_id.clone(),
            title: meta.title.clone(),
            created_at: meta.created_at,
            updated_at: meta.updated_at,
            source: meta.source.clone(),
            channel: meta.channel.clone(),
            account_id: meta.account_id.clone(),
            peer_display: meta.peer_display.clone(),
            peer_id: meta.peer_id.clone(),
            pinned: meta.pinned,
            archived: meta.archived,
            archived_at: meta.archived_at,
            group: meta.group.clone(),
            status: meta.status,
            unread: meta.unread,
            preview,
            project_id: meta.project_id.clone(),
            first_preview,
            commit_pending: meta.commit_pending,
            client_cache: ClientJson::default(),
        }
    }

    /// The title search indexes: a real one only. A placeholder, or a title
    /// cut from the first message (as every session first gets), is that
    /// message, indexed anyway.
    pub fn search_title(&self) -> String {
        let t = self.title.trim().trim_end_matches('…').trim_end();
        let from_first = self
            .first_preview
            .as_deref()
            .is_some_and(|p| !t.is_empty() && p.trim().starts_with(t));
        if from_first || self.has_placeholder_title() {
            String::new()
        } else {
            self.title.clone()
        }
    }

    /// Whether the stored title is a placeholder ("", "New conversation",
    /// "Untitled") that the list replaces.
    pub fn has_placeholder_title(&self) -> bool {
        let t = self.title.trim();
        t.is_empty() || t == "New conversation" || t == "Untitled"
    }

    /// The title to show: the stored one; for a placeholder the first
    /// message, then the latest preview, then the id (display only).
    pub fn display_title(&self) -> String {
        if self.has_placeholder_title() {
            if let Some(p) = self.first_preview.as_ref().or(self.preview.as_ref()) {
                return p.clone();
            }
            return self.id.clone();
        }
        self.title.clone()
    }

    /// The row as clients see it: the 15 fields, the preview, the display
    /// title, and the project (its id and name; `project_name` is the
    /// registry's name for `project_id`).
    pub fn client<'a>(&'a self, project_name: &'a str) -> ClientRow<'a> {
        ClientRow {
            id: &self.id,
            agent_id: &self.agent_id,
            title: self.display_title(),
            created_at: self.created_at,
            updated_at: self.updated_at,
            source: &self.source,
            channel: self.channel.as_deref(),
            account_id: self.account_id.as_deref(),
            peer_display: self.peer_display.as_deref(),
            peer_id: self.peer_id.as_deref(),
            peer: self.peer_id.as_deref(),
            pinned: self.pinned,
            archived: self.archived,
            archived_at: self.archived_at,
            group: self.group.as_deref(),
            status: self.status,
            unread: self.unread,
            preview: self.preview.as_deref(),
            project: project_name,
            project_id: &self.project_id,
            commit_pending: self.commit_pending,
        }
    }

    /// `client()` serialized, made once per project name and kept with
    /// the row: a list page is then the rows' bytes put together (the
    /// serialization of a 200-row page was most of its time).
    pub fn client_json(&self, project_name: &str) -> std::sync::Arc<[u8]> {
        let mut slot = match self.client_cache.0.lock() {
            Ok(slot) => slot,
            Err(poisoned) => poisoned.into_inner(),
        };
        if let Some((name, bytes)) = slot.as_ref() {
            if name == project_name {
                return bytes.clone();
            }
        }
        let bytes: std::sync::Arc<[u8]> = serde_json::to_vec(&self.client(project_name))
            .unwrap_or_default()
            .into();
        *slot = Some((project_name.to_string(), bytes.clone()));
        bytes
    }

    /// `client()` as a JSON value (for diffs of two rows).
    pub fn to_client_json(&self, project_name: &str) -> serde_json::Value {
        serde_json::to_value(self.client(project_name)).unwrap_or_default()
    }

    /// Key of the list order: newest `updated_at` first, then id.
    pub fn order_key(&self) -> OrderKey {
        OrderKey(
            std::cmp::Reverse((self.updated_at * 1e6) as i64),
            self.id.clone(),
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct OrderKey(pub std::cmp::Reverse<i64>, pub String);

/// A row as REST and WebSocket clients receive it (the original's 16
/// sidebar fields, plus `peer_id`, `project_id` and `commit_pending`).
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ClientRow<'a> {
    pub id: &'a str,
    pub agent_id: &'a str,
    pub title: String,
    pub created_at: f64,
    pub updated_at: f64,
    pub source: &'a str,
    pub channel: Option<&'a str>,
    pub account_id: Option<&'a str>,
    pub peer_display: Option<&'a str>,
    pub peer_id: Option<&'a str>,
    /// The original's name for `peer_id`.
    pub peer: Option<&'a str>,
    pub pinned: bool,
    pub archived: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub archived_at: Option<f64>,
    pub group: Option<&'a str>,
    pub status: Status,
    pub unread: bool,
    pub preview: Option<&'a str>,
    /// The bound project's name (the default project's name when unbound).
    pub project: &'a str,
    pub project_id: &'a str,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub commit_pending: bool,
}
