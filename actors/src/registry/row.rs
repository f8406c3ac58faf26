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
    pub fn to_client_json(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self).unwrap_or_default();
        if let Some(obj) = v.as_object_mut() {
            obj.remove("project_id");
            obj.remove("first_preview");
            obj.insert(
                "project".into(),
                serde_json::json!({ "id": self.project_id }),
            );
            obj.insert("title".into(), self.display_title().into());
        }
        v
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
