//! A session that arrives whole (a fork, an imported bundle) is built in a
//! temporary folder and renamed into place, so none of its commits went
//! through the session's write path, which puts each commit in the change
//! feed. Once it is in place, its branch tips are announced there in one
//! log entry: readers of the feed (the replication to a remote among them)
//! see it as they see any commit.

use actix::prelude::*;

use super::actor::SessionActor;
use super::core::SessionCore;
use super::error::SessionError;
use crate::feed::{ChangeEvent, ChangeKind};
use crate::git;
use crate::meta::now;
use crate::wal;

/// Announce the session's branch tips in the change feed.
#[derive(Message, Clone)]
#[rtype(result = "Result<usize, SessionError>")]
pub struct AnnounceArrival;

impl SessionCore {
    /// One `commit` event per branch tip; returns how many.
    pub fn announce_arrival(&mut self) -> Result<usize, SessionError> {
        let tips = git::list_branches(&self.repo)?;
        let at = now();
        let changes: Vec<wal::Change> = tips
            .iter()
            .map(|t| {
                let mut e = ChangeEvent::new(ChangeKind::Commit, &self.meta.id, at);
                e.project_id = Some(self.meta.project_id.clone());
                e.branch = Some(t.name.clone());
                e.turn = Some(t.trailers.turn);
                e.commit = Some(t.oid.to_string());
                wal::Change::Feed {
                    root: self.dir.clone(),
                    event: e.to_bytes(),
                }
            })
            .collect();
        let n = changes.len();
        if n > 0 {
            self.log_changes(changes)?;
        }
        Ok(n)
    }
}

impl SessionCore {
    /// Branches a load put back on their acknowledged commits
    /// (`outside::restore_acked`): one `branch_restored` event each, so
    /// that replicas follow the branch again.
    pub(super) fn announce_restored(
        &mut self,
        restored: &[(String, git2::Oid)],
    ) -> Result<(), SessionError> {
        if restored.is_empty() {
            return Ok(());
        }
        let at = now();
        let changes = restored
            .iter()
            .map(|(branch, oid)| {
                let mut e = ChangeEvent::new(ChangeKind::BranchRestored, &self.meta.id, at);
                e.project_id = Some(self.meta.project_id.clone());
                e.branch = Some(branch.trim_start_matches("refs/heads/").to_string());
                e.commit = Some(oid.to_string());
                wal::Change::Feed {
                    root: self.dir.clone(),
                    event: e.to_bytes(),
                }
            })
            .collect();
        self.log_changes(changes)
    }
}

impl SessionCore {
    /// A purge rewrote the history: one `session_purged` event, so that
    /// replicas take the rewritten branches.
    pub(super) fn announce_purged(
        &mut self,
        record: &super::purge::PurgeRecord,
    ) -> Result<(), SessionError> {
        let mut e = ChangeEvent::new(ChangeKind::SessionPurged, &self.meta.id, record.at.0);
        e.project_id = Some(self.meta.project_id.clone());
        e.commit = git::head_id(&self.repo)?.map(|o| o.to_string());
        e.purge = Some(record.id.clone());
        self.log_changes(vec![wal::Change::Feed {
            root: self.dir.clone(),
            event: e.to_bytes(),
        }])
    }
}

impl Handler<AnnounceArrival> for SessionActor {
    type Result = AtomicResponse<Self, Result<usize, SessionError>>;

    fn handle(&mut self, _: AnnounceArrival, _: &mut Self::Context) -> Self::Result {
        AtomicResponse::new(self.on_core_write(SessionCore::announce_arrival))
    }
}
