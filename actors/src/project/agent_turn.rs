//! The end of an agent turn in the user's repository: which files are
//! this turn's, and where they go: a commit on the user's branch when the
//! tree was clean at the turn's start, else a held commit under the
//! session's private ref (the user's index, work tree, HEAD and stash
//! untouched). Runs in the project's actor, one at a time.

use std::collections::BTreeSet;

use git2::{Oid, Repository, Signature};

use super::error::ProjectError;
use crate::git::{self, AgentCommit};
use crate::meta::{HeldTurn, ProjectBaseline, ProjectOutcome};

/// Most paths a turn names (`files` at its end, or claims while it runs).
pub const MAX_TURN_FILES: usize = 10_000;

/// What the project needs to end one turn.
#[derive(Debug, Clone)]
pub struct TurnEnd {
    pub session_id: String,
    pub turn: u64,
    /// Where the turn started (its identity across retry branches).
    pub first_seq: u64,
    pub user_text: String,
    pub model: Option<String>,
    pub baseline: ProjectBaseline,
    /// The files the client says the agent changed (`files` of the end of
    /// turn), with those the turn claimed while it ran.
    pub files: Option<Vec<String>>,
}

impl TurnEnd {
    /// The agent commit's message: subject and the trailers that tie it
    /// to the session's turn.
    pub fn message(&self) -> String {
        format!(
            "[agent {}] turn {}: {}\n\n{}: {}\n{}: {}\n{}: {}\n",
            self.session_id,
            self.turn,
            crate::node::one_line_prefix(&self.user_text, 60),
            git::trailers_keys::SESSION,
            self.session_id,
            git::trailers_keys::TURN,
            self.turn,
            git::trailers_keys::FIRST_SEQ,
            self.first_seq,
        )
    }
}

/// Author/committer name of agent commits.
pub fn agent_name(model: Option<&str>) -> String {
    format!(
        "agent ({} via OpenProgram)",
        model.filter(|m| !m.is_empty()).unwrap_or("unknown model")
    )
}

pub const AGENT_EMAIL: &str = "agent@openprogram.local";

/// The agent's signature, now.
pub fn agent_signature(model: Option<&str>) -> Result<Signature<'static>, git2::Error> {
    Signature::now(&agent_name(model), AGENT_EMAIL)
}

/// The working tree when a turn begins: clean (HEAD's tree), or dirty
/// with the user's paths and a snapshot of every file as it is.
pub fn baseline(repo: &Repository) -> Result<ProjectBaseline, ProjectError> {
    let state = git::worktree_status(repo)?;
    if state.is_clean() {
        return Ok(ProjectBaseline {
            clean: true,
            dirty_paths: Vec::new(),
            reason: None,
            tree: Some(git::head_tree_id(repo)?.to_string()),
        });
    }
    // Mid-merge or mid-rebase the index cannot be written as a tree: the
    // turn records nothing of the tree.
    let tree = match &state.busy {
        None => Some(git::worktree_snapshot(repo)?.to_string()),
        Some(_) => None,
    };
    Ok(ProjectBaseline {
        clean: false,
        reason: Some(
            state
                .busy
                .unwrap_or_else(|| "you had uncommitted changes when the turn began".into()),
        ),
        dirty_paths: state.dirty,
        tree,
    })
}

/// The files of the turn: changed between the baseline and now, within
/// the client's `files` when given, less the user's own (dirty at the
/// start) and those other open turns claimed.
fn turn_files(
    repo: &Repository,
    start: Oid,
    end: Oid,
    end_of: &TurnEnd,
    others: &BTreeSet<String>,
) -> Result<Vec<String>, git2::Error> {
    let named: Option<Vec<&str>> = end_of
        .files
        .as_ref()
        .map(|f| f.iter().map(|p| p.trim_start_matches("./")).collect());
    Ok(git::changed_paths(repo, start, end)?
        .into_iter()
        .filter(|p| {
            named
                .as_ref()
                .is_none_or(|n| n.iter().any(|spec| git::path_matches(p, spec)))
        })
        .filter(|p| end_of.baseline.dirty_paths.binary_search(p).is_err())
        .filter(|p| !others.contains(p))
        .collect())
}

/// End the turn in the project (see the module's description). `others`:
/// the files other open turns of the project claimed.
pub fn end_turn(
    repo: &Repository,
    end: &TurnEnd,
    others: &BTreeSet<String>,
) -> Result<ProjectOutcome, ProjectError> {
    let sig = agent_signature(end.model.as_deref())?;
    let message = end.message();
    let skipped = |held: Option<HeldTurn>| ProjectOutcome::Skipped {
        reason: end
            .baseline
            .reason
            .clone()
            .unwrap_or_else(|| "the working tree was not clean".into()),
        dirty_paths: end.baseline.dirty_paths.clone(),
        held,
    };
    let start = match end.baseline.tree.as_deref().map(Oid::from_str) {
        Some(Ok(oid)) if repo.find_tree(oid).is_ok() => Some(oid),
        _ => None,
    };
    let Some(start) = start else {
        // A baseline from before trees were recorded: the spec's rule as
        // it was (every change when clean, nothing when not).
        if !end.baseline.clean {
            return Ok(skipped(None));
        }
        return Ok(commit_outcome(
            git::agent_commit(
                repo,
                &sig,
                &message,
                &end.session_id,
                (end.turn, end.first_seq),
                None,
            )?,
            Vec::new(),
        ));
    };
    let now = git::worktree_snapshot(repo)?;
    let files = turn_files(repo, start, now, end, others)?;
    if end.baseline.clean {
        if files.is_empty() {
            return Ok(ProjectOutcome::NoChanges);
        }
        let done = git::agent_commit(
            repo,
            &sig,
            &message,
            &end.session_id,
            (end.turn, end.first_seq),
            Some(&files),
        )?;
        return Ok(commit_outcome(done, files));
    }
    if files.is_empty() {
        return Ok(skipped(None));
    }
    let tree = git::tree_with_paths(repo, git::head_tree_id(repo)?, now, &files)?;
    let held = git::hold_turn(
        repo,
        &sig,
        &message,
        &end.session_id,
        (end.turn, end.first_seq),
        tree,
    )?;
    Ok(skipped(held.map(|h| HeldTurn {
        reference: h.reference,
        commit: h.commit.to_string(),
        files,
    })))
}

fn commit_outcome(done: AgentCommit, files: Vec<String>) -> ProjectOutcome {
    match done {
        AgentCommit::Committed(oid) => ProjectOutcome::Committed {
            commit: oid.to_string(),
            files,
        },
        AgentCommit::NoChanges => ProjectOutcome::NoChanges,
        AgentCommit::Refused(reason) => ProjectOutcome::Skipped {
            reason,
            dirty_paths: Vec::new(),
            held: None,
        },
    }
}
