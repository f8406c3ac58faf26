use std::path::Path;

use git2::{Oid, Repository};

use super::{store_signature, GitError};

pub struct CommitOutcome {
    pub oid: Oid,
}

/// Stage `paths` (relative to the work tree; a missing file is removed from
/// the index) and commit them on HEAD. Only the changed paths are touched:
/// libgit2 rewrites just the trees above them, so the cost of a commit does
/// not grow with the number of files already committed. Refuses to make an
/// empty commit.
pub fn commit_paths(
    repo: &Repository,
    paths: &[&Path],
    message: &str,
) -> Result<CommitOutcome, GitError> {
    let workdir = repo
        .workdir()
        .ok_or_else(|| git2::Error::from_str("bare repository"))?
        .to_path_buf();
    let mut index = repo.index()?;
    for path in paths {
        if workdir.join(path).exists() {
            index.add_path(path)?;
        } else {
            // Not present: make sure it is not staged either.
            let _ = index.remove_path(path);
        }
    }
    let tree_oid = index.write_tree()?;
    let parent = match repo.head() {
        Ok(head) => Some(head.peel_to_commit()?),
        Err(e)
            if e.code() == git2::ErrorCode::UnbornBranch
                || e.code() == git2::ErrorCode::NotFound =>
        {
            None
        }
        Err(e) => return Err(e.into()),
    };
    if let Some(parent) = &parent {
        if parent.tree_id() == tree_oid {
            return Err(GitError::Empty);
        }
    }
    let tree = repo.find_tree(tree_oid)?;
    let sig = store_signature()?;
    let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
    let oid = repo.commit(Some("HEAD"), &sig, &sig, message, &tree, &parents)?;
    index.write()?;
    Ok(CommitOutcome { oid })
}
