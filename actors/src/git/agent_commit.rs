use git2::{IndexAddOption, Oid, Repository, RepositoryState, Signature};

use super::head_commit;
use super::trailers::Trailers;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentCommit {
    /// A new commit (or the one an earlier attempt of the same turn made).
    Committed(Oid),
    /// The agent changed nothing.
    NoChanges,
    /// Refused: the repository is mid-merge/rebase.
    Refused(String),
}

/// Commit the agent's changes in a user's working tree through the
/// repository's real index (so the user's `git status` stays correct),
/// attributed to the agent: the files `paths` as they are now (added,
/// changed or removed), or with `None` every change (`git add -A`
/// semantics). Never resets, cleans or rewrites anything; no hooks run
/// (libgit2 runs none).
///
/// Idempotent per turn: if HEAD already is this session's commit for the
/// turn that started at sequence `first_seq` (an earlier attempt whose
/// answer was lost), it is returned. Turn numbers alone repeat across
/// retry branches; commits from before the `Openprogram-First-Seq` trailer
/// are matched by `turn`.
pub fn agent_commit(
    repo: &Repository,
    author: &Signature<'_>,
    message: &str,
    session_id: &str,
    (turn, first_seq): (u64, u64),
    paths: Option<&[String]>,
) -> Result<AgentCommit, git2::Error> {
    if repo.state() != RepositoryState::Clean {
        return Ok(AgentCommit::Refused(format!(
            "the repository is in the middle of an operation ({:?})",
            repo.state()
        )));
    }
    let parent = head_commit(repo)?;
    if let Some(p) = &parent {
        let t = Trailers::parse(p.message().unwrap_or(""));
        if t.turn == turn
            && t.session.as_deref() == Some(session_id)
            && t.first_seq.is_none_or(|f| f == first_seq)
        {
            return Ok(AgentCommit::Committed(p.id()));
        }
    }
    let mut index = repo.index()?;
    match paths {
        None => {
            index.add_all(["*"], IndexAddOption::DEFAULT, None)?;
            index.update_all(["*"], None)?;
        }
        Some(paths) => stage_paths(repo, &mut index, paths)?,
    }
    let tree_oid = index.write_tree()?;
    let unchanged = match &parent {
        Some(p) => p.tree_id() == tree_oid,
        None => repo.find_tree(tree_oid)?.is_empty(),
    };
    if unchanged {
        index.write()?;
        return Ok(AgentCommit::NoChanges);
    }
    let tree = repo.find_tree(tree_oid)?;
    let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
    let oid = repo.commit(Some("HEAD"), author, author, message, &tree, &parents)?;
    index.write()?;
    Ok(AgentCommit::Committed(oid))
}

/// Stage exactly `paths`: a file present in the work tree is added as it
/// is, a missing one removed from the index.
fn stage_paths(
    repo: &Repository,
    index: &mut git2::Index,
    paths: &[String],
) -> Result<(), git2::Error> {
    let Some(top) = repo.workdir() else {
        return Err(git2::Error::from_str("the repository has no work tree"));
    };
    for p in paths {
        let rel = std::path::Path::new(p);
        let present = std::fs::symlink_metadata(top.join(rel)).is_ok_and(|m| !m.is_dir());
        if present {
            index.add_path(rel)?;
        } else if index.get_path(rel, 0).is_some() {
            index.remove_path(rel)?;
        }
    }
    Ok(())
}
