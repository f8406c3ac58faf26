//! Filters of `list_sessions`.

use serde::Deserialize;

use super::row::SessionRow;
use crate::limit::ListLimit;
use crate::meta::Status;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    pub agent_id: Option<String>,
    pub source: Option<String>,
    pub channel: Option<String>,
    pub status: Option<Status>,
    pub pinned: Option<bool>,
    pub group: Option<String>,
    pub project_id: Option<String>,
    /// Archived and active rows together.
    #[serde(default)]
    pub include_archived: bool,
    /// Only archived rows (`true`) or only active ones (`false`).
    pub archived: Option<bool>,
    #[serde(default)]
    pub offset: usize,
    #[serde(default)]
    pub limit: ListLimit,
}

impl ListQuery {
    /// Every row, archived ones included, up to the largest page (what a
    /// sidebar shows), optionally of one project only.
    pub fn everything(project_id: Option<String>) -> ListQuery {
        ListQuery {
            include_archived: true,
            limit: crate::limit::ListLimit::largest(),
            project_id,
            ..ListQuery::default()
        }
    }

    pub fn matches(&self, r: &SessionRow) -> bool {
        let archived_ok = match self.archived {
            Some(a) => r.archived == a,
            None => self.include_archived || !r.archived,
        };
        archived_ok
            && self.agent_id.as_ref().is_none_or(|v| *v == r.agent_id)
            && self.source.as_ref().is_none_or(|v| *v == r.source)
            && self
                .channel
                .as_ref()
                .is_none_or(|v| Some(v) == r.channel.as_ref())
            && self.status.is_none_or(|v| v == r.status)
            && self.pinned.is_none_or(|v| v == r.pinned)
            && self
                .group
                .as_ref()
                .is_none_or(|v| Some(v) == r.group.as_ref())
            && self.project_id.as_ref().is_none_or(|v| *v == r.project_id)
    }

    /// True when no filter but the archive selection applies.
    pub fn archive_only(&self) -> bool {
        self.agent_id.is_none()
            && self.source.is_none()
            && self.channel.is_none()
            && self.status.is_none()
            && self.pinned.is_none()
            && self.group.is_none()
            && self.project_id.is_none()
    }

    pub fn limit(&self) -> usize {
        self.limit.get()
    }
}
