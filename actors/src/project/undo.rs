//! Undoing agent turns and landing held ones, in the user's repository:
//! a revert of one or several of a session's turns as one new commit, and
//! a held turn picked onto the user's branch. Both are planned first from
//! trees (what would change, what stands in the way: a dirty tree, later
//! commits on the same files, a merge, conflicts) and land only when
//! nothing does, as the agent, with a safe checkout: never a reset, never
//! a rewrite of history, never another session's commits.

use git2::{Oid, Repository};
use serde::Serialize;

use super::agent_turn::{agent_signature, AGENT_EMAIL};
use super::error::{ProjectError, Refusal};
use crate::git::{self, Plan, Trailers, TreeDiff};

/// Project commit trailers of undo and apply commits.
pub const REVERTS: &str = "Openprogram-Reverts";
pub const APPLIED_FROM: &str = "Openprogram-Applied-From";

/// At most this many commits of HEAD's history are searched for a turn.
pub const SCAN_LIMIT: usize = 10_000;
/// At most this many bytes of a preview's patch.
pub const MAX_PATCH: usize = 256 * 1024;

/// One value of a trailer of `message`.
pub fn trailer(message: &str, key: &str) -> Option<String> {
    let list = git2::message_trailers_strs(message).ok()?;
    let found = list
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v.trim().to_string());
    found
}

/// The agent's commits in HEAD's history, newest first (at most `limit`
/// commits read): `visit` gets each with its message and says whether to
/// go on.
pub fn walk_agent_commits(
    repo: &Repository,
    limit: usize,
    mut visit: impl FnMut(&git2::Commit<'_>, &str) -> Result<bool, ProjectError>,
) -> Result<(), ProjectError> {
    let Some(head) = git::head_commit(repo)? else {
        return Ok(());
    };
    let mut walk = repo.revwalk()?;
    walk.push(head.id())?;
    for oid in walk.take(limit) {
        let c = repo.find_commit(oid?)?;
        if c.author().email() != Some(AGENT_EMAIL) {
            continue;
        }
        if !visit(&c, c.message().unwrap_or(""))? {
            break;
        }
    }
    Ok(())
}

/// One agent turn to undo: its number and commit.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TurnCommit {
    pub turn: u64,
    pub commit: String,
    pub summary: String,
}

/// The newest agent commit of each of `turns` of the session in HEAD's
/// history (newest turn first).
fn turn_commits(
    repo: &Repository,
    session_id: &str,
    turns: &[u64],
) -> Result<Vec<(TurnCommit, Oid)>, ProjectError> {
    let mut found: Vec<(TurnCommit, Oid)> = Vec::new();
    walk_agent_commits(repo, SCAN_LIMIT, |c, message| {
        let t = Trailers::parse(message);
        if t.session.as_deref() != Some(session_id)
            || !turns.contains(&t.turn)
            || found.iter().any(|(f, _)| f.turn == t.turn)
            || trailer(message, REVERTS).is_some()
        {
            return Ok(true);
        }
        found.push((
            TurnCommit {
                turn: t.turn,
                commit: c.id().to_string(),
                summary: c.summary().unwrap_or("").to_string(),
            },
            c.id(),
        ));
        Ok(found.len() < turns.len())
    })?;
    if let Some(missing) = turns
        .iter()
        .find(|n| !found.iter().any(|(f, _)| f.turn == **n))
    {
        return Err(ProjectError::NoAgentTurn(format!(
            "turn {missing} of session {session_id} has no agent commit on the project's current branch"
        )));
    }
    found.sort_by_key(|f| std::cmp::Reverse(f.0.turn));
    Ok(found)
}

/// What undoing turns would do.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RevertPreview {
    pub session_id: String,
    /// The turns' agent commits, newest first.
    pub turns: Vec<TurnCommit>,
    /// What the revert would change (files, line counts, the patch);
    /// empty when refused.
    pub diff: TreeDiff,
    /// Why it cannot be done now (empty: it can).
    pub refusals: Vec<Refusal>,
    pub can_revert: bool,
}

/// Why a plan cannot land, in the order a person fixes them.
fn refusals(repo: &Repository, plan: &Plan) -> Result<Vec<Refusal>, ProjectError> {
    let mut out = Vec::new();
    let state = git::worktree_status(repo)?;
    if let Some(busy) = state.busy {
        out.push(Refusal::new("dirty_tree", busy));
    } else if !state.dirty.is_empty() {
        out.push(
            Refusal::new(
                "dirty_tree",
                "the working tree has uncommitted changes: commit or stash them first",
            )
            .with_paths(state.dirty),
        );
    }
    if !plan.merges.is_empty() {
        out.push(
            Refusal::new("merge_commit", "a merge commit cannot be undone here")
                .with_paths(plan.merges.clone()),
        );
    }
    if !plan.unreachable.is_empty() {
        out.push(
            Refusal::new(
                "not_on_branch",
                "the commit is not on the project's current branch",
            )
            .with_paths(plan.unreachable.clone()),
        );
    }
    if !plan.later.is_empty() {
        let mut r = Refusal::new(
            "changed_since",
            "later commits changed the same files: undo those first or edit by hand",
        );
        let mut paths: Vec<String> = plan.later.iter().flat_map(|l| l.paths.clone()).collect();
        paths.sort();
        paths.dedup();
        r.paths = paths;
        r.commits = plan.later.clone();
        out.push(r);
    }
    if !plan.conflicts.is_empty() {
        out.push(
            Refusal::new("conflict", "the change conflicts with the current files")
                .with_paths(plan.conflicts.clone()),
        );
    }
    Ok(out)
}

/// Preview the revert of `turns` of the session (see `RevertPreview`).
pub fn preview_revert(
    repo: &Repository,
    session_id: &str,
    turns: &[u64],
) -> Result<(RevertPreview, Plan), ProjectError> {
    let commits = turn_commits(repo, session_id, turns)?;
    let oids: Vec<Oid> = commits.iter().map(|(_, o)| *o).collect();
    let plan = git::plan_revert(repo, &oids)?;
    let refusals = refusals(repo, &plan)?;
    let diff = match (plan.tree, plan.head) {
        (Some(tree), Some(head))
            if refusals.is_empty() || refusals.iter().all(|r| r.code == "dirty_tree") =>
        {
            git::tree_diff(repo, repo.find_commit(head)?.tree_id(), tree, MAX_PATCH)?
        }
        _ => TreeDiff::default(),
    };
    Ok((
        RevertPreview {
            session_id: session_id.to_string(),
            turns: commits.into_iter().map(|(t, _)| t).collect(),
            diff,
            can_revert: refusals.is_empty(),
            refusals,
        },
        plan,
    ))
}

/// What an undo or apply landed.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Landed {
    /// The new commit on the user's branch.
    pub commit: String,
    pub short_sha: String,
    pub message: String,
    /// The turns' commits it reverts (undo) or the held commit (apply).
    pub turns: Vec<TurnCommit>,
    /// Files and line counts it changed.
    pub diff: TreeDiff,
}

fn refuse_first(refusals: Vec<Refusal>) -> Result<(), ProjectError> {
    match refusals.into_iter().next() {
        Some(r) => Err(ProjectError::Refused(Box::new(r))),
        None => Ok(()),
    }
}

fn land(
    repo: &Repository,
    plan: &Plan,
    model: Option<&str>,
    message: String,
    turns: Vec<TurnCommit>,
) -> Result<Landed, ProjectError> {
    let Some(tree) = plan.tree else {
        return Err(ProjectError::Refused(Box::new(Refusal::new(
            "conflict",
            "the change could not be built on the current files",
        ))));
    };
    let before = match plan.head {
        Some(h) => repo.find_commit(h)?.tree_id(),
        None => git::empty_tree(repo)?,
    };
    let diff = git::tree_diff(repo, before, tree, 0)?;
    let sig = agent_signature(model)?;
    let oid = git::land(repo, tree, plan.head, &sig, &message)?;
    Ok(Landed {
        commit: oid.to_string(),
        short_sha: git::short_sha(&oid.to_string()),
        message,
        turns,
        diff,
    })
}

/// The text after `turn <n>: ` of an agent commit's subject.
fn subject_text(summary: &str) -> &str {
    summary.split_once(": ").map_or(summary, |(_, rest)| rest)
}

/// Undo `turns` of the session as one new commit (newest first).
pub fn revert(
    repo: &Repository,
    session_id: &str,
    turns: &[u64],
    model: Option<&str>,
) -> Result<Landed, ProjectError> {
    let (preview, plan) = preview_revert(repo, session_id, turns)?;
    refuse_first(preview.refusals)?;
    let numbers: Vec<String> = preview.turns.iter().map(|t| t.turn.to_string()).collect();
    let what = match numbers.as_slice() {
        [one] => format!("turn {one}"),
        many => format!("turns {}", many.join(", ")),
    };
    let first = preview
        .turns
        .last()
        .map(|t| subject_text(&t.summary))
        .unwrap_or("");
    let message = format!(
        "[agent {session_id}] revert {what}: {first}\n\n{}: {session_id}\n{REVERTS}: {}\n",
        git::trailers_keys::SESSION,
        preview
            .turns
            .iter()
            .map(|t| t.commit.as_str())
            .collect::<Vec<_>>()
            .join(" "),
    );
    land(repo, &plan, model, message, preview.turns)
}

/// The held commit of the session's turn `turn` (its private ref).
pub fn held_commit(repo: &Repository, session_id: &str, turn: u64) -> Result<Oid, ProjectError> {
    let exact = git::held_ref_name(session_id, turn, None);
    let prefix = format!("{exact}-");
    for r in repo.references()? {
        let r = r?;
        let Some(name) = r.name() else { continue };
        if name == exact || name.starts_with(&prefix) {
            if let Ok(c) = r.peel_to_commit() {
                return Ok(c.id());
            }
        }
    }
    Err(ProjectError::NoAgentTurn(format!(
        "turn {turn} of session {session_id} has no held changes in this project"
    )))
}

/// Pick the session's held turn onto the user's branch (clean tree only;
/// conflicts refused with their paths).
pub fn apply(
    repo: &Repository,
    session_id: &str,
    turn: u64,
    model: Option<&str>,
) -> Result<Landed, ProjectError> {
    let held = held_commit(repo, session_id, turn)?;
    let plan = git::plan_apply(repo, held)?;
    refuse_first(refusals(repo, &plan)?)?;
    let head_tree = match plan.head {
        Some(h) => repo.find_commit(h)?.tree_id(),
        None => git::empty_tree(repo)?,
    };
    if plan.tree == Some(head_tree) {
        return Err(ProjectError::Refused(Box::new(
            Refusal::new("nothing_to_apply", "the branch already has these changes")
                .with_paths(plan.files.clone()),
        )));
    }
    let c = repo.find_commit(held)?;
    let original = c.message().unwrap_or("");
    let t = Trailers::parse(original);
    let summary = c.summary().unwrap_or("").to_string();
    let mut message = format!("{summary} (held, applied)\n\n");
    message.push_str(&format!("{}: {session_id}\n", git::trailers_keys::SESSION));
    message.push_str(&format!("{}: {turn}\n", git::trailers_keys::TURN));
    if let Some(seq) = t.first_seq {
        message.push_str(&format!("{}: {seq}\n", git::trailers_keys::FIRST_SEQ));
    }
    message.push_str(&format!("{APPLIED_FROM}: {held}\n"));
    let turns = vec![TurnCommit {
        turn,
        commit: held.to_string(),
        summary,
    }];
    land(repo, &plan, model, message, turns)
}
