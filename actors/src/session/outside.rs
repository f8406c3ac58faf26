//! Changes made to a session's repository from outside the server (the
//! user runs git in the session folder, as the README invites):
//! - a live session refuses a write while HEAD is detached (`git checkout
//!   <commit>`): 409 `repository_changed`, saying what changed and how to
//!   go back, since a write would build on a state nobody chose through
//!   the API;
//! - loading a session (a restart, `openprogram fsck --repair`) puts HEAD
//!   back on its branch and the work tree back to that branch: nothing is
//!   lost, since the work tree keeps every file no branch holds.

use std::path::Path;

use git2::Repository;

use actix::prelude::*;

use super::actor::SessionActor;
use super::core::SessionCore;
use super::error::SessionError;
use crate::git;
use crate::meta::SessionMeta;

/// Where HEAD points when it is detached, or None.
pub fn detached_at(repo: &Repository) -> Result<Option<String>, git2::Error> {
    let head = repo.find_reference("HEAD")?;
    if head.symbolic_target().is_some() {
        return Ok(None);
    }
    Ok(Some(
        head.target()
            .map(|o| o.to_string().chars().take(12).collect())
            .unwrap_or_default(),
    ))
}

/// The branch a session with a detached HEAD belongs on: the one whose
/// tip holds the session's head node, else one whose tip is where HEAD
/// is, else the one with the newest turn, else `main`.
fn home_branch(repo: &Repository, meta: &SessionMeta) -> Result<String, git2::Error> {
    let tips = git::list_branches(repo)?;
    let at = repo.find_reference("HEAD")?.target();
    let by_head = tips
        .iter()
        .find(|t| meta.head.is_some() && t.trailers.head_node == meta.head);
    let by_oid = tips.iter().find(|t| Some(t.oid) == at);
    let newest = tips.iter().max_by_key(|t| t.trailers.last_seq);
    Ok(by_head
        .or(by_oid)
        .or(newest)
        .map_or_else(|| git::MAIN.to_string(), |t| t.name.clone()))
}

/// Put a detached HEAD back on its branch (loading). True when it was
/// detached; the caller then re-syncs the work tree with HEAD.
pub(super) fn reattach(
    repo: &Repository,
    dir: &Path,
    meta: &SessionMeta,
) -> Result<bool, SessionError> {
    let Some(at) = detached_at(repo)? else {
        return Ok(false);
    };
    let branch = home_branch(repo, meta)?;
    tracing::warn!(dir = %dir.display(), detached_at = %at, %branch, "HEAD was detached outside the server; put back on its branch");
    git::attach_head(repo, &branch)?;
    Ok(true)
}

/// Branches a user moved back or deleted (`git reset`, `git update-ref`,
/// `git branch -D`) put back on the commit the service last acknowledged
/// on them (`refs/openprogram/acked/<branch>`), with the same commit ids.
/// A branch that went elsewhere (not an ancestor of that commit) is left
/// as the user made it: the acknowledged commits stay reachable through
/// the service's ref, and `fsck` reports it. The branches put back, with
/// their commits.
pub(super) fn restore_acked(
    repo: &Repository,
    dir: &Path,
) -> Result<Vec<(String, git2::Oid)>, SessionError> {
    let mut moved = Vec::new();
    for (branch, acked) in acked_tips(repo)? {
        let now = repo.refname_to_id(&branch).ok();
        let behind = match now {
            None => true,
            Some(at) if at == acked => false,
            Some(at) => repo.graph_descendant_of(acked, at)?,
        };
        if !behind {
            keep_aside(repo, now, acked)?;
            continue;
        }
        tracing::warn!(dir = %dir.display(), %branch, acked = %acked, was = ?now, "a branch moved back outside the server was put back on its acknowledged commit");
        repo.reference(&branch, acked, true, "openprogram: the acknowledged tip")?;
        moved.push((branch, acked));
    }
    Ok(moved)
}

/// A branch a user moved elsewhere (not behind its acknowledged commit):
/// the acknowledged commit gets a ref of its own
/// (`refs/openprogram/kept/<commit>`), so the branch's next turn, which
/// moves the acknowledged tip onto the user's line, leaves it reachable.
fn keep_aside(
    repo: &Repository,
    now: Option<git2::Oid>,
    acked: git2::Oid,
) -> Result<(), SessionError> {
    if now == Some(acked) {
        return Ok(());
    }
    let name = format!("{KEPT_PREFIX}{acked}");
    if repo.find_reference(&name).is_err() {
        tracing::warn!(%acked, "a branch was moved away from its acknowledged commit outside the server: the commit is kept as {name}");
        repo.reference(
            &name,
            acked,
            false,
            "openprogram: an acknowledged commit kept",
        )?;
    }
    Ok(())
}

/// Where acknowledged commits a user's git moved a branch away from are
/// kept.
pub const KEPT_PREFIX: &str = "refs/openprogram/kept/";

/// The acknowledged tips: (the branch's full ref name, its commit).
pub fn acked_tips(repo: &Repository) -> Result<Vec<(String, git2::Oid)>, git2::Error> {
    let mut out = Vec::new();
    for r in repo.references_glob(&format!("{}*", git::ACKED_PREFIX))? {
        let r = r?;
        let (Some(name), Some(oid)) = (r.name(), r.target()) else {
            continue;
        };
        let short = name.trim_start_matches(git::ACKED_PREFIX);
        // Only commits that exist (a hand-made ref to nothing is ignored).
        if repo.find_commit(oid).is_ok() {
            out.push((format!("refs/heads/{short}"), oid));
        }
    }
    Ok(out)
}

impl SessionCore {
    /// Before a write: the current branch, moved back by a user's `git
    /// reset` or `update-ref` while the session is live, is put back on its
    /// acknowledged commit and the work tree on it (two ref reads when
    /// nothing moved).
    pub(super) fn restore_moved_branch(&mut self) -> Result<(), SessionError> {
        let Ok(Some(branch)) = self
            .repo
            .find_reference("HEAD")
            .map(|h| h.symbolic_target().map(str::to_owned))
        else {
            return Ok(());
        };
        let Ok(acked) = self.repo.refname_to_id(&git::acked_ref(&branch)) else {
            return Ok(());
        };
        let now = self.repo.refname_to_id(&branch).ok();
        if now == Some(acked) {
            return Ok(());
        }
        let behind = match now {
            None => true,
            Some(at) => self.repo.graph_descendant_of(acked, at)?,
        };
        if self.repo.find_commit(acked).is_err() {
            return Ok(());
        }
        if !behind {
            return keep_aside(&self.repo, now, acked);
        }
        tracing::warn!(session = %self.meta.id, %branch, acked = %acked, "the branch was moved back outside the server: put back on its acknowledged commit");
        self.repo
            .reference(&branch, acked, true, "openprogram: the acknowledged tip")?;
        self.sync_worktree_to_head()?;
        self.announce_restored(&[(branch, acked)])
    }

    /// Refuse a write on a repository changed from outside (see the
    /// module's doc). One read of `.git/HEAD`.
    pub fn check_repository(&self) -> Result<(), SessionError> {
        let Some(at) = detached_at(&self.repo)? else {
            return Ok(());
        };
        let branch = home_branch(&self.repo, &self.meta).unwrap_or_else(|_| git::MAIN.into());
        Err(SessionError::RepositoryChanged(format!(
            "the session's repository was changed outside the server: HEAD is detached at {at} \
             (a `git checkout` in {dir}); nothing was written. Go back with \
             `git -C {dir} checkout {branch}` (a restart of the server, or \
             `openprogram fsck --repair` while it is stopped, does it too); to continue \
             from an earlier turn, use the checkout action",
            dir = self.dir.display(),
        )))
    }
}

impl SessionActor {
    /// `on_core` for a write: refused while the repository is in a state
    /// changed from outside (`outside.rs`).
    pub(super) fn on_core_write<R, F>(
        &mut self,
        f: F,
    ) -> ResponseActFuture<Self, Result<R, SessionError>>
    where
        R: Send + 'static,
        F: FnOnce(&mut SessionCore) -> Result<R, SessionError> + Send + 'static,
    {
        self.blocking(move |slot, _| {
            let core = slot.live_mut()?;
            core.restore_moved_branch()?;
            core.check_repository()?;
            f(core)
        })
    }
}
