//! A session leaving or entering the store as git: fork (a new session
//! from a turn), export (a bundle of every branch) and import.

use std::path::Path;

use super::core::SessionCore;
use super::error::SessionError;
use super::layout::{self, META};
use crate::fsio;
use crate::git;
use crate::ids;
use crate::meta::{now, SessionMeta, Status};
use crate::store::Store;

impl SessionCore {
    /// Fork this session into a new one at `dest`: its repository holds the
    /// history up to `commit` (a turn commit of this session), or up to the
    /// turn that committed `node_id`, or up to HEAD; its `meta.json` records
    /// `forked_from`. Built in a temporary folder and renamed into place.
    pub fn fork(
        &self,
        commit: Option<&str>,
        node_id: Option<&str>,
        dest: &Path,
        new_id: &str,
    ) -> Result<String, SessionError> {
        let oid = self.fork_point(commit, node_id)?;
        if dest.exists() {
            return Err(SessionError::AlreadyExists);
        }
        let parent = dest
            .parent()
            .ok_or_else(|| SessionError::Invalid("no parent".into()))?;
        fsio::build_dir_atomically(parent, "fork", |tmp| -> Result<_, SessionError> {
            git::fork_repo(&self.repo, oid, tmp)?;
            fsio::create_private_dir_all(&tmp.join(layout::WORKDIR))?;
            let mut meta: SessionMeta = fsio::read_json(&tmp.join(META))?;
            let now = now();
            meta.id = new_id.to_string();
            meta.forked_from = Some(crate::meta::ForkedFrom {
                session_id: self.meta.id.clone(),
                commit: oid.to_string(),
            });
            meta.status = Status::Idle;
            meta.open_turn = None;
            meta.viewing = None;
            meta.unread = false;
            meta.pinned = false;
            meta.archived = false;
            meta.created_at = now;
            meta.updated_at = now;
            fsio::atomic_write_json(&tmp.join(META), &meta)?;
            fsio::make_private(tmp)?;
            Ok((dest.to_path_buf(), ()))
        })?;
        Ok(oid.to_string())
    }

    /// Register a git bundle of a session as a new session in the
    /// store's sessions folder: its own id if free (or `wanted`), else a new one;
    /// the ids in `taken` (sessions living in project folders) are not
    /// free.
    /// Built in a temporary folder and renamed into place; a damaged or
    /// foreign bundle leaves nothing behind. Returns the session id.
    pub fn import(
        bytes: &[u8],
        store: &Store,
        wanted: Option<&str>,
        limits: git::ImportLimits,
        taken: &std::collections::HashSet<String>,
    ) -> Result<String, SessionError> {
        let sessions_dir = store.sessions_dir();
        fsio::build_dir_atomically(sessions_dir, "import", |tmp| -> Result<_, SessionError> {
            git::read_bundle(bytes, tmp, limits)
                .map_err(|e| SessionError::BadBundle(e.to_string()))?;
            let mut meta: SessionMeta = fsio::read_json(&tmp.join(META)).map_err(|_| {
                SessionError::BadBundle("not an openprogram session (no valid meta.json)".into())
            })?;
            crate::meta::check_title(&meta.title).map_err(SessionError::BadBundle)?;
            let free = |id: &str| {
                ids::validate("session id", id).is_ok()
                    && !taken.contains(id)
                    && !sessions_dir.join(id).exists()
            };
            let id = wanted
                .or(Some(meta.id.as_str()))
                .filter(|id| free(id))
                .map(str::to_owned)
                .unwrap_or_else(ids::new_id);
            meta.id = id.clone();
            meta.status = Status::Idle;
            meta.open_turn = None;
            meta.viewing = None;
            meta.project_id = crate::project::DEFAULT_PROJECT.into();
            fsio::atomic_write_json(&tmp.join(META), &meta)?;
            fsio::create_private_dir_all(&tmp.join(layout::WORKDIR))?;
            // Redacted as any write is: its secrets never reach the store.
            super::purge::redact_arrived(store, tmp, "import", false)?;
            // Its branches are acknowledged with the answer: a user's
            // `git reset` in the new session is put back on them.
            git::acknowledge_branches(&git::open_repo(tmp)?)?;
            // Loaded and verified completely before it is moved into place:
            // a bundle that does not make a working session leaves nothing.
            SessionCore::load_as(store, tmp, Some(&id)).map_err(|e| {
                SessionError::BadBundle(format!("the session in the bundle does not load: {e}"))
            })?;
            fsio::make_private(tmp)?;
            Ok((sessions_dir.join(&id), id))
        })
    }

    /// A git bundle of every branch (see `git::write_bundle`).
    pub fn export_bundle(&self) -> Result<Vec<u8>, SessionError> {
        let turns = git::all_commits(&self.repo)?;
        if turns.iter().all(git::CommitRow::is_session_init) {
            return Err(SessionError::NoTurns);
        }
        Ok(git::write_bundle(&self.repo)?)
    }

    /// The commit a fork starts from (see `fork`).
    fn fork_point(
        &self,
        commit: Option<&str>,
        node_id: Option<&str>,
    ) -> Result<git2::Oid, SessionError> {
        // Every commit of every branch.
        let mut log = git::all_commits(&self.repo)?;
        log.retain(|c| !c.is_session_init());
        if log.is_empty() {
            return Err(SessionError::NoTurns);
        }
        match (commit, node_id) {
            (Some(_), Some(_)) => Err(SessionError::Invalid(
                "give either commit or node_id, not both".into(),
            )),
            (Some(c), None) => {
                let found = log.iter().find(|l| {
                    let sha = l.oid.to_string();
                    sha == c || (c.len() >= 7 && sha.starts_with(c))
                });
                Ok(found
                    .ok_or_else(|| SessionError::UnknownCommit(c.to_string()))?
                    .oid)
            }
            (None, Some(n)) => {
                let node = self
                    .node(n)
                    .ok_or_else(|| SessionError::UnknownNode(n.to_string()))?;
                // The turn commit that committed the node: the one with the
                // smallest last sequence that covers it and holds its file.
                let rel = layout::node_rel_path(node.seq(), node.role(), node.id());
                let mut covering: Vec<&git::CommitRow> = log
                    .iter()
                    .filter(|l| l.trailers.last_seq >= node.seq())
                    .collect();
                covering.sort_by_key(|l| l.trailers.last_seq);
                for l in covering {
                    if self.repo.find_commit(l.oid)?.tree()?.get_path(&rel).is_ok() {
                        return Ok(l.oid);
                    }
                }
                Err(SessionError::NotCommitted(n.to_string()))
            }
            (None, None) => git::head_commit(&self.repo)?
                .map(|c| c.id())
                .ok_or(SessionError::NoTurns),
        }
    }
}
