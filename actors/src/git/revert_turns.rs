//! Undoing agent commits and landing held turns on the user's branch, as
//! new commits on HEAD: a revert of one or several commits (newest first,
//! one commit in all), or a held turn picked onto HEAD. Planned from trees
//! first (what would change, what stands in the way), landed only when
//! nothing does. Never resets and never rewrites history.

use git2::build::CheckoutBuilder;
use git2::{Oid, Repository, Signature};
use serde::Serialize;

use super::head_commit;
use super::worktree_snapshot::{changed_paths, empty_tree};

/// A later commit that changed files of the commits to revert.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LaterCommit {
    pub commit: String,
    pub summary: String,
    pub author: String,
    /// The files it shares with the commits to revert.
    pub paths: Vec<String>,
}

/// What landing a change on HEAD would do.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// HEAD when planned (`None`: no commit yet).
    pub head: Option<Oid>,
    /// The files the change is about.
    pub files: Vec<String>,
    /// The tree HEAD would get; `None` when it cannot be built.
    pub tree: Option<Oid>,
    /// Files where the change and HEAD disagree.
    pub conflicts: Vec<String>,
    /// Later commits that touched the same files (reverts only).
    pub later: Vec<LaterCommit>,
    /// Commits that are merges (reverts only).
    pub merges: Vec<String>,
    /// Commits HEAD does not contain (reverts only).
    pub unreachable: Vec<String>,
}

fn parent_tree(repo: &Repository, c: &git2::Commit<'_>) -> Result<Oid, git2::Error> {
    match c.parent(0) {
        Ok(p) => Ok(p.tree_id()),
        Err(_) => empty_tree(repo),
    }
}

/// Conflicted paths of a merged index.
fn conflict_paths(index: &git2::Index) -> Result<Vec<String>, git2::Error> {
    let mut out = Vec::new();
    for c in index.conflicts()? {
        let c = c?;
        for e in [c.our, c.their, c.ancestor].into_iter().flatten() {
            out.push(String::from_utf8_lossy(&e.path).into_owned());
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// Plan the revert of `commits` (newest first) on HEAD.
pub fn plan_revert(repo: &Repository, commits: &[Oid]) -> Result<Plan, git2::Error> {
    let Some(head) = head_commit(repo)? else {
        return Ok(Plan {
            unreachable: commits.iter().map(Oid::to_string).collect(),
            ..Plan::default()
        });
    };
    let mut plan = Plan {
        head: Some(head.id()),
        ..Plan::default()
    };
    let mut found = Vec::new();
    for &oid in commits {
        let c = repo.find_commit(oid)?;
        if c.parent_count() > 1 {
            plan.merges.push(oid.to_string());
        }
        if oid != head.id() && !repo.graph_descendant_of(head.id(), oid)? {
            plan.unreachable.push(oid.to_string());
        }
        plan.files
            .extend(changed_paths(repo, parent_tree(repo, &c)?, c.tree_id())?);
        found.push(c);
    }
    plan.files.sort();
    plan.files.dedup();
    if !plan.merges.is_empty() || !plan.unreachable.is_empty() {
        return Ok(plan);
    }
    // Every commit after the oldest one to revert, other than those.
    let mut walk = repo.revwalk()?;
    walk.push(head.id())?;
    for c in &found {
        walk.hide(c.id())?;
    }
    for oid in walk {
        let later = repo.find_commit(oid?)?;
        if commits.contains(&later.id()) {
            continue;
        }
        let touched = changed_paths(repo, parent_tree(repo, &later)?, later.tree_id())?;
        let shared: Vec<String> = touched
            .into_iter()
            .filter(|p| plan.files.binary_search(p).is_ok())
            .collect();
        if !shared.is_empty() {
            plan.later.push(LaterCommit {
                commit: later.id().to_string(),
                summary: later.summary().unwrap_or("").to_string(),
                author: later.author().name().unwrap_or("").to_string(),
                paths: shared,
            });
        }
    }
    let mut current = head.tree_id();
    for c in &found {
        let (base, theirs) = (
            repo.find_tree(c.tree_id())?,
            repo.find_tree(parent_tree(repo, c)?)?,
        );
        let mut merged = repo.merge_trees(&base, &repo.find_tree(current)?, &theirs, None)?;
        if merged.has_conflicts() {
            plan.conflicts = conflict_paths(&merged)?;
            return Ok(plan);
        }
        current = merged.write_tree_to(repo)?;
    }
    plan.tree = Some(current);
    Ok(plan)
}

/// Plan picking the held commit `held` onto HEAD (its changes against its
/// own parent, merged into HEAD's tree).
pub fn plan_apply(repo: &Repository, held: Oid) -> Result<Plan, git2::Error> {
    let c = repo.find_commit(held)?;
    let head = head_commit(repo)?;
    let head_tree = match &head {
        Some(h) => h.tree_id(),
        None => empty_tree(repo)?,
    };
    let base = parent_tree(repo, &c)?;
    let mut plan = Plan {
        head: head.as_ref().map(git2::Commit::id),
        files: changed_paths(repo, base, c.tree_id())?,
        ..Plan::default()
    };
    let mut merged = repo.merge_trees(
        &repo.find_tree(base)?,
        &repo.find_tree(head_tree)?,
        &c.tree()?,
        None,
    )?;
    if merged.has_conflicts() {
        plan.conflicts = conflict_paths(&merged)?;
        return Ok(plan);
    }
    plan.tree = Some(merged.write_tree_to(repo)?);
    Ok(plan)
}

/// Land a planned tree: the work tree and index get its files (safe
/// checkout: the caller checked the tree was clean), then one commit on
/// HEAD with `parent` (HEAD when planned) as its parent.
pub fn land(
    repo: &Repository,
    tree: Oid,
    parent: Option<Oid>,
    author: &Signature<'_>,
    message: &str,
) -> Result<Oid, git2::Error> {
    let tree = repo.find_tree(tree)?;
    let mut checkout = CheckoutBuilder::new();
    checkout.safe();
    repo.checkout_tree(tree.as_object(), Some(&mut checkout))?;
    let parent = parent.map(|p| repo.find_commit(p)).transpose()?;
    let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
    repo.commit(Some("HEAD"), author, author, message, &tree, &parents)
}
