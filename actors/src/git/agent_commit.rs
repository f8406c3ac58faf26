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

/// Commit every change in a user's working tree with `git add -A`
/// semantics through the repository's real index (so the user's
/// `git status` stays correct), attributed to the agent. Never resets,
/// cleans or rewrites anything; no hooks run (libgit2 runs none).
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
    index.add_all(["*"], IndexAddOption::DEFAULT, None)?;
    index.update_all(["*"], None)?;
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
