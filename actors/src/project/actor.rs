//! One actor per project: every git operation on the user's repository
//! (status, the agent's commits, the log) goes through it, one at a time,
//! on a blocking thread, so concurrent sessions never race in one repo.

use std::path::PathBuf;

use actix::prelude::*;
use serde::Serialize;

use super::error::ProjectError;
use crate::git::{self, AgentCommit, CommitInfo, TreeState};

pub struct ProjectActor {
    path: PathBuf,
}

impl ProjectActor {
    pub fn new(path: PathBuf) -> ProjectActor {
        ProjectActor { path }
    }

    fn blocking<R, F>(&self, f: F) -> AtomicResponse<Self, Result<R, ProjectError>>
    where
        R: Send + 'static,
        F: FnOnce(&git2::Repository) -> Result<R, ProjectError> + Send + 'static,
    {
        let path = self.path.clone();
        let job = tokio::task::spawn_blocking(move || {
            if !path.is_dir() {
                return Err(ProjectError::PathMissing(path));
            }
            let repo = git::open_repo(&path)?;
            f(&repo)
        });
        AtomicResponse::new(Box::pin(
            job.into_actor(self)
                .map(|joined, _, _| joined.unwrap_or(Err(ProjectError::Unavailable))),
        ))
    }
}

impl Actor for ProjectActor {
    type Context = Context<Self>;
}

/// The working tree's state (recorded when a turn begins).
#[derive(Message)]
#[rtype(result = "Result<TreeState, ProjectError>")]
pub struct Status;

impl Handler<Status> for ProjectActor {
    type Result = AtomicResponse<Self, Result<TreeState, ProjectError>>;

    fn handle(&mut self, _: Status, _: &mut Context<Self>) -> Self::Result {
        self.blocking(|repo| Ok(git::worktree_status(repo)?))
    }
}

/// Commit the agent's changes at the end of a turn.
#[derive(Message)]
#[rtype(result = "Result<AgentCommit, ProjectError>")]
pub struct CommitTurn {
    pub session_id: String,
    pub turn: u64,
    /// Where the turn started (its identity across retry branches).
    pub first_seq: u64,
    pub user_text: String,
    pub model: Option<String>,
}

/// Author/committer name of agent commits.
pub fn agent_name(model: Option<&str>) -> String {
    format!(
        "agent ({} via OpenProgram)",
        model.filter(|m| !m.is_empty()).unwrap_or("unknown model")
    )
}

pub const AGENT_EMAIL: &str = "agent@openprogram.local";

impl Handler<CommitTurn> for ProjectActor {
    type Result = AtomicResponse<Self, Result<AgentCommit, ProjectError>>;

    fn handle(&mut self, msg: CommitTurn, _: &mut Context<Self>) -> Self::Result {
        self.blocking(move |repo| {
            let sig = git2::Signature::now(&agent_name(msg.model.as_deref()), AGENT_EMAIL)?;
            let message = format!(
                "[agent {}] turn {}: {}\n\n{}: {}\n{}: {}\n{}: {}\n",
                msg.session_id,
                msg.turn,
                crate::node::one_line_prefix(&msg.user_text, 60),
                git::trailers_keys::SESSION,
                msg.session_id,
                git::trailers_keys::TURN,
                msg.turn,
                git::trailers_keys::FIRST_SEQ,
                msg.first_seq,
            );
            Ok(git::agent_commit(
                repo,
                &sig,
                &message,
                &msg.session_id,
                (msg.turn, msg.first_seq),
            )?)
        })
    }
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AgentCommitInfo {
    #[serde(flatten)]
    pub commit: CommitInfo,
    pub author: String,
    pub session_id: Option<String>,
    pub turn: Option<u64>,
}

/// The agent's commits, newest first (the user's own commits are skipped).
#[derive(Message)]
#[rtype(result = "Result<Vec<AgentCommitInfo>, ProjectError>")]
pub struct Log {
    pub limit: usize,
}

impl Handler<Log> for ProjectActor {
    type Result = AtomicResponse<Self, Result<Vec<AgentCommitInfo>, ProjectError>>;

    fn handle(&mut self, msg: Log, _: &mut Context<Self>) -> Self::Result {
        self.blocking(move |repo| {
            let mut out = Vec::new();
            let Some(head) = git::head_commit(repo)? else {
                return Ok(out);
            };
            let mut walk = repo.revwalk()?;
            walk.push(head.id())?;
            walk.set_sorting(git2::Sort::TOPOLOGICAL | git2::Sort::TIME)?;
            for oid in walk {
                if out.len() >= msg.limit {
                    break;
                }
                let c = repo.find_commit(oid?)?;
                let author = c.author().name().unwrap_or("").to_string();
                if c.author().email() != Some(AGENT_EMAIL) {
                    continue;
                }
                let t = git::Trailers::parse(c.message().unwrap_or(""));
                out.push(AgentCommitInfo {
                    commit: CommitInfo::of(&c),
                    author,
                    session_id: t.session,
                    turn: (t.turn > 0).then_some(t.turn),
                });
            }
            Ok(out)
        })
    }
}

/// The project folder moved (relocate).
#[derive(Message)]
#[rtype(result = "()")]
pub struct SetPath(pub PathBuf);

impl Handler<SetPath> for ProjectActor {
    type Result = ();

    fn handle(&mut self, msg: SetPath, _: &mut Context<Self>) {
        self.path = msg.0;
    }
}
