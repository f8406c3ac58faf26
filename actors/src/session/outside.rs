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

impl SessionCore {
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
            core.check_repository()?;
            f(core)
        })
    }
}
