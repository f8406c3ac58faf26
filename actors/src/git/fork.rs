use std::path::Path;

use git2::build::{CheckoutBuilder, RepoBuilder};
use git2::{Oid, Repository};

/// Clone `src` into `dest` (in process, local transport) with `main` at
/// `commit` and that commit's tree checked out: the whole state of that
/// moment. The clone keeps the original commits (same ids) and no remote.
pub fn fork_repo(src: &Repository, commit: Oid, dest: &Path) -> Result<Repository, git2::Error> {
    let url = src.path().to_string_lossy().into_owned();
    let repo = RepoBuilder::new().clone(&url, dest)?;
    repo.find_commit(commit)?;
    repo.reference("refs/heads/main", commit, true, "fork")?;
    // The fork's first state is acknowledged with its answer: a user's
    // `git reset` of the fork's branch is put back on it.
    repo.reference(&super::acked_ref("refs/heads/main"), commit, true, "fork")?;
    repo.set_head("refs/heads/main")?;
    repo.checkout_head(Some(CheckoutBuilder::new().force().remove_untracked(true)))?;
    repo.remote_delete("origin")?;
    // The clone made a branch for the source's current one; the fork is
    // one line, `main`.
    for item in repo.branches(Some(git2::BranchType::Local))? {
        let (mut branch, _) = item?;
        if branch.name()? != Some(super::MAIN) {
            branch.delete()?;
        }
    }
    super::disable_reflogs(&repo)?;
    Ok(repo)
}
