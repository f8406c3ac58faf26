//! The branches of a session repository: `main` (the original line) and
//! the `retry-*` / `replay-*` branches that retries and replays start.

use git2::{BranchType, Oid, Repository, Sort};

use super::Trailers;

pub const MAIN: &str = "main";

/// A local branch and what its tip commit says about the DAG.
#[derive(Debug, Clone)]
pub struct BranchTip {
    pub name: String,
    pub oid: Oid,
    pub trailers: Trailers,
    pub time: i64,
}

/// One commit of the repository (any branch).
#[derive(Debug, Clone)]
pub struct CommitRow {
    pub oid: Oid,
    pub parent: Option<Oid>,
    pub trailers: Trailers,
    pub message: String,
    pub summary: String,
    pub time: i64,
}

impl CommitRow {
    /// The root commit every new session starts with (`session init`:
    /// its `.gitignore` and first `meta.json`), which holds no turn.
    pub fn is_session_init(&self) -> bool {
        self.parent.is_none() && self.trailers.turn == 0 && self.trailers.head_node.is_none()
    }
}

/// Every local branch with a commit, `main` first, then by name.
pub fn list_branches(repo: &Repository) -> Result<Vec<BranchTip>, git2::Error> {
    let mut out = Vec::new();
    for item in repo.branches(Some(BranchType::Local))? {
        let (branch, _) = item?;
        let Some(name) = branch.name()?.map(str::to_owned) else {
            continue;
        };
        let Ok(commit) = branch.get().peel_to_commit() else {
            continue;
        };
        out.push(BranchTip {
            name,
            oid: commit.id(),
            trailers: Trailers::parse(commit.message().unwrap_or("")),
            time: commit.time().seconds(),
        });
    }
    out.sort_by(|a, b| (a.name != MAIN, &a.name).cmp(&(b.name != MAIN, &b.name)));
    Ok(out)
}

/// The commits the local branches point at, sorted, without reading any
/// of them (refs only: no pack is opened).
pub fn branch_tip_oids(repo: &Repository) -> Result<Vec<Oid>, git2::Error> {
    let mut out = Vec::new();
    for item in repo.branches(Some(BranchType::Local))? {
        let (branch, _) = item?;
        if let Some(oid) = branch.get().resolve()?.target() {
            out.push(oid);
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// The branch HEAD is attached to (it may have no commit yet).
pub fn current_branch(repo: &Repository) -> Result<String, git2::Error> {
    let head = repo.find_reference("HEAD")?;
    let target = head
        .symbolic_target()
        .ok_or_else(|| git2::Error::from_str("HEAD is detached"))?;
    Ok(target
        .strip_prefix("refs/heads/")
        .unwrap_or(target)
        .to_string())
}

/// Attach HEAD to branch `name` (which may not exist yet: the next commit
/// creates it). The work tree is the caller's business.
pub fn attach_head(repo: &Repository, name: &str) -> Result<(), git2::Error> {
    repo.set_head(&format!("refs/heads/{name}"))
}

/// Create branch `name` at `oid`; fails if it exists.
pub fn create_branch(repo: &Repository, name: &str, oid: Oid) -> Result<(), git2::Error> {
    repo.reference(&format!("refs/heads/{name}"), oid, false, "branch")?;
    Ok(())
}

/// Delete branch `name` (a branch made for a turn that could not start).
pub fn delete_branch(repo: &Repository, name: &str) -> Result<(), git2::Error> {
    repo.find_branch(name, BranchType::Local)?.delete()
}

/// A free, valid branch name `<prefix>-<id>`: characters git refuses in a
/// ref become `_`, and a taken name gets `-<seq>` appended.
pub fn new_branch_name(
    repo: &Repository,
    prefix: &str,
    id: &str,
    seq: u64,
) -> Result<String, git2::Error> {
    let clean: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    for name in [
        format!("{prefix}-{clean}"),
        format!("{prefix}-{clean}-{seq}"),
    ] {
        let full = format!("refs/heads/{name}");
        if git2::Reference::is_valid_name(&full) && repo.find_reference(&full).is_err() {
            return Ok(name);
        }
    }
    Err(git2::Error::from_str("no free branch name"))
}

/// Every commit reachable from a local branch, newest first.
pub fn all_commits(repo: &Repository) -> Result<Vec<CommitRow>, git2::Error> {
    let tips = list_branches(repo)?;
    if tips.is_empty() {
        return Ok(Vec::new());
    }
    let mut walk = repo.revwalk()?;
    for t in &tips {
        walk.push(t.oid)?;
    }
    walk.set_sorting(Sort::TOPOLOGICAL | Sort::TIME)?;
    let mut out = Vec::new();
    for oid in walk {
        let commit = repo.find_commit(oid?)?;
        let message = commit.message().unwrap_or("").to_string();
        out.push(CommitRow {
            oid: commit.id(),
            parent: commit.parent_id(0).ok(),
            trailers: Trailers::parse(&message),
            summary: commit.summary().unwrap_or("").to_string(),
            message,
            time: commit.time().seconds(),
        });
    }
    Ok(out)
}
