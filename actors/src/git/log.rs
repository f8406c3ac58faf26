use git2::{Repository, Sort};
use serde::Serialize;

#[derive(Debug, Clone, Serialize, PartialEq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CommitInfo {
    pub sha: String,
    pub short_sha: String,
    pub message: String,
    pub summary: String,
    pub timestamp: i64,
    /// The `session init` root (see `CommitRow::is_session_init`).
    #[serde(skip)]
    pub session_init: bool,
}

impl CommitInfo {
    pub fn of(commit: &git2::Commit<'_>) -> CommitInfo {
        let sha = commit.id().to_string();
        let message = commit.message().unwrap_or("");
        let trailers = super::Trailers::parse(message);
        CommitInfo {
            session_init: commit.parent_count() == 0
                && trailers.turn == 0
                && trailers.head_node.is_none(),
            short_sha: short_sha(&sha),
            sha,
            message: commit.message().unwrap_or("").to_string(),
            summary: commit.summary().unwrap_or("").to_string(),
            timestamp: commit.time().seconds(),
        }
    }
}

impl CommitInfo {
    pub fn is_session_init(&self) -> bool {
        self.session_init
    }
}

/// The 7-character abbreviation of a full hex commit id.
pub fn short_sha(sha: &str) -> String {
    sha.chars().take(7).collect()
}

/// Commits reachable from HEAD, newest first, at most `limit`.
pub fn log(repo: &Repository, limit: usize) -> Result<Vec<CommitInfo>, git2::Error> {
    let Some(head) = super::head_commit(repo)? else {
        return Ok(Vec::new()); // a session without turns has no commits yet
    };
    let mut walk = repo.revwalk()?;
    walk.push(head.id())?;
    walk.set_sorting(Sort::TOPOLOGICAL | Sort::TIME)?;
    let mut out = Vec::new();
    for oid in walk.take(limit) {
        out.push(CommitInfo::of(&repo.find_commit(oid?)?));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn log_of_a_repo_without_commits_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        let repo = super::super::init_repo(dir.path()).unwrap();
        let r = super::log(&repo, 10);
        assert_eq!(
            r.map(|v| v.len())
                .map_err(|e| format!("{:?} {:?} {e}", e.code(), e.class())),
            Ok(0)
        );
    }
}
