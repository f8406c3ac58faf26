//! A registry row: what the session list shows, derived from `meta.json`
//! plus the preview of the latest user message.

use serde::{Deserialize, Serialize};

use crate::meta::{SessionMeta, Status};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
            group: meta.group.clone(),
            status: meta.status,
            unread: meta.unread,
            preview,
            project_id: meta.project_id.clone(),
            first_preview,
            commit_pending: meta.commit_pending,
        }
    }

    /// The title to show: the stored one, or the first message when the
    /// title is empty, "New conversation" or "Untitled" (display only).
    pub fn display_title(&self) -> String {
        let t = self.title.trim();
        if t.is_empty() || t == "New conversation" || t == "Untitled" {
            if let Some(p) = &self.first_preview {
                return p.clone();
            }
        }
        self.title.clone()
    }

    /// The row as clients see it: the 15 fields, the preview, the display
    /// title, and the project (filled in when listing).
    pub fn client(&self) -> ClientRow<'_> {
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
            pinned: self.pinned,
            archived: self.archived,
            group: self.group.as_deref(),
            status: self.status,
            unread: self.unread,
            preview: self.preview.as_deref(),
            project: ProjectRef {
                id: &self.project_id,
            },
            commit_pending: self.commit_pending,
        }
    }

    /// `client()` as a JSON value (for diffs of two rows).
    pub fn to_client_json(&self) -> serde_json::Value {
        serde_json::to_value(self.client()).unwrap_or_default()
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

/// A row as REST and WebSocket clients receive it.
#[derive(Debug, Serialize)]
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
    pub pinned: bool,
    pub archived: bool,
    pub group: Option<&'a str>,
    pub status: Status,
    pub unread: bool,
    pub preview: Option<&'a str>,
    pub project: ProjectRef<'a>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub commit_pending: bool,
}

#[derive(Debug, Serialize)]
pub struct ProjectRef<'a> {
    pub id: &'a str,
}
