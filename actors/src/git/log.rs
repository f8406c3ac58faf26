use git2::{Repository, Sort};
use serde::Serialize;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CommitInfo {
    pub sha: String,
    pub short_sha: String,
    pub message: String,
    pub summary: String,
    pub timestamp: i64,
}

/// Commits reachable from HEAD, newest first, at most `limit`.
pub fn log(repo: &Repository, limit: usize) -> Result<Vec<CommitInfo>, git2::Error> {
    let mut walk = repo.revwalk()?;
    match walk.push_head() {
        Ok(()) => {}
        Err(e)
            if e.code() == git2::ErrorCode::UnbornBranch
                || e.code() == git2::ErrorCode::NotFound =>
        {
            return Ok(Vec::new())
        }
        Err(e) => return Err(e),
    }
    walk.set_sorting(Sort::TOPOLOGICAL | Sort::TIME)?;
    let mut out = Vec::new();
    for oid in walk.take(limit) {
        let commit = repo.find_commit(oid?)?;
        let sha = commit.id().to_string();
        out.push(CommitInfo {
            short_sha: sha[..7].to_string(),
            sha,
            message: commit.message().unwrap_or("").to_string(),
            summary: commit.summary().unwrap_or("").to_string(),
            timestamp: commit.time().seconds(),
        });
    }
    Ok(out)
}
