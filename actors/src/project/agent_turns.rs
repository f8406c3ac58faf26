//! The agent's turns in a project, per session: those committed on the
//! user's branch and those held under the sessions' private refs, each
//! with its files and line counts, and whether it was applied or undone.

use std::collections::{BTreeMap, HashMap};

use git2::Repository;
use serde::Serialize;

use super::error::ProjectError;
use super::undo::{trailer, walk_agent_commits, APPLIED_FROM, REVERTS};
use crate::git::{self, FileChange, Trailers, HELD_PREFIX};

/// At most this many commits of HEAD's history are read for a listing.
pub const SCAN_LIMIT: usize = 2_000;

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AgentTurn {
    pub turn: u64,
    /// `committed` (on the user's branch) or `held` (private ref).
    pub state: &'static str,
    pub commit: String,
    /// The held turn's private ref.
    #[serde(rename = "ref", skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    pub summary: String,
    pub time: i64,
    pub author: String,
    pub files: Vec<FileChange>,
    pub additions: usize,
    pub deletions: usize,
    /// A held turn applied on the branch: that commit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub applied_as: Option<String>,
    /// The commit that undid it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reverted_by: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SessionTurns {
    pub session_id: String,
    /// Newest first.
    pub turns: Vec<AgentTurn>,
}

fn parent_tree(repo: &Repository, c: &git2::Commit<'_>) -> Result<git2::Oid, git2::Error> {
    match c.parent(0) {
        Ok(p) => Ok(p.tree_id()),
        Err(_) => git::empty_tree(repo),
    }
}

fn turn_of(
    repo: &Repository,
    c: &git2::Commit<'_>,
    state: &'static str,
) -> Result<AgentTurn, git2::Error> {
    let diff = git::tree_diff(repo, parent_tree(repo, c)?, c.tree_id(), 0)?;
    let t = Trailers::parse(c.message().unwrap_or(""));
    Ok(AgentTurn {
        turn: t.turn,
        state,
        commit: c.id().to_string(),
        reference: None,
        summary: c.summary().unwrap_or("").to_string(),
        time: c.time().seconds(),
        author: c.author().name().unwrap_or("").to_string(),
        files: diff.files,
        additions: diff.additions,
        deletions: diff.deletions,
        applied_as: None,
        reverted_by: None,
    })
}

/// A revert commit: the commits it undid noted as reverted by it (the
/// newest undo of each kept). True when `c` is one.
fn note_revert(
    c: &git2::Commit<'_>,
    message: &str,
    reverted: &mut HashMap<String, String>,
) -> bool {
    let Some(list) = trailer(message, REVERTS) else {
        return false;
    };
    for r in list.split_whitespace() {
        reverted
            .entry(r.to_string())
            .or_insert_with(|| c.id().to_string());
    }
    true
}

/// Every session's agent turns (at most `limit` in all, newest first).
pub fn agent_turns(repo: &Repository, limit: usize) -> Result<Vec<SessionTurns>, ProjectError> {
    let mut turns: Vec<(String, AgentTurn)> = Vec::new();
    let mut reverted: HashMap<String, String> = HashMap::new();
    let mut applied: HashMap<String, String> = HashMap::new();
    walk_agent_commits(repo, SCAN_LIMIT, |c, message| {
        if note_revert(c, message, &mut reverted) {
            return Ok(true);
        }
        if let Some(from) = trailer(message, APPLIED_FROM) {
            applied.entry(from).or_insert_with(|| c.id().to_string());
        }
        let t = Trailers::parse(message);
        if let (Some(session), true, true) = (t.session, t.turn > 0, turns.len() < limit) {
            turns.push((session, turn_of(repo, c, "committed")?));
        }
        Ok(true)
    })?;
    for r in repo.references()? {
        let r = r?;
        let Some(name) = r.name().map(str::to_owned) else {
            continue;
        };
        let Some(rest) = name.strip_prefix(HELD_PREFIX) else {
            continue;
        };
        let Some((session, _)) = rest.split_once('/') else {
            continue;
        };
        let Ok(c) = r.peel_to_commit() else { continue };
        if turns.len() >= limit.saturating_mul(2) {
            break;
        }
        let mut turn = turn_of(repo, &c, "held")?;
        turn.reference = Some(name.clone());
        turn.applied_as = applied.get(&turn.commit).cloned();
        turns.push((session.to_string(), turn));
    }
    let mut by_session: BTreeMap<String, Vec<AgentTurn>> = BTreeMap::new();
    for (session, mut turn) in turns {
        turn.reverted_by = reverted.get(&turn.commit).cloned();
        by_session.entry(session).or_default().push(turn);
    }
    let mut out: Vec<SessionTurns> = by_session
        .into_iter()
        .map(|(session_id, mut turns)| {
            turns.sort_by(|a, b| b.time.cmp(&a.time).then(b.turn.cmp(&a.turn)));
            SessionTurns { session_id, turns }
        })
        .collect();
    out.sort_by(|a, b| {
        let newest = |s: &SessionTurns| s.turns.first().map_or(0, |t| t.time);
        newest(b).cmp(&newest(a))
    });
    Ok(out)
}

/// One agent turn of a session: its newest commit on the branch (with the
/// commit that undid it, if any), else its held commit; with `path`, the
/// patch of that file in it (at most `MAX_PATCH` bytes).
pub fn one_turn(
    repo: &Repository,
    session_id: &str,
    turn: u64,
    path: Option<&str>,
) -> Result<Option<(AgentTurn, String)>, ProjectError> {
    let mut reverted: HashMap<String, String> = HashMap::new();
    let mut found: Option<AgentTurn> = None;
    walk_agent_commits(repo, super::undo::SCAN_LIMIT, |c, message| {
        if note_revert(c, message, &mut reverted) {
            return Ok(true);
        }
        let t = Trailers::parse(message);
        if t.session.as_deref() == Some(session_id) && t.turn == turn {
            let mut one = turn_of(repo, c, "committed")?;
            one.reverted_by = reverted.get(&one.commit).cloned();
            found = Some(one);
            return Ok(false);
        }
        Ok(true)
    })?;
    if found.is_none() {
        if let Ok(oid) = super::undo::held_commit(repo, session_id, turn) {
            let c = repo.find_commit(oid)?;
            let mut one = turn_of(repo, &c, "held")?;
            one.reference = Some(git::held_ref_name(session_id, turn, None));
            found = Some(one);
        }
    }
    let Some(one) = found else {
        return Ok(None);
    };
    let patch = match path {
        Some(p) => {
            let c = repo.find_commit(git2::Oid::from_str(&one.commit)?)?;
            let rel = p.trim_start_matches("./");
            git::tree_diff_of(
                repo,
                parent_tree(repo, &c)?,
                c.tree_id(),
                super::undo::MAX_PATCH,
                Some(rel),
            )?
            .patch
        }
        None => String::new(),
    };
    Ok(Some((one, patch)))
}
