//! One actor per project: every git operation on the user's repository
//! (status, the agent's commits, the log) goes through it, one at a time,
//! on a blocking thread, so concurrent sessions never race in one repo.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;

use actix::prelude::*;
use serde::Serialize;

use super::agent_turn::{self, TurnEnd, AGENT_EMAIL};
use super::agent_turns::{self, AgentTurn, SessionTurns};
use super::error::ProjectError;
use super::folder;
use super::undo::{self, Landed, RevertPreview};
use crate::git::{self, CommitInfo};
use crate::meta::{ProjectBaseline, ProjectOutcome};

pub struct ProjectActor {
    path: PathBuf,
    /// Files named by open turns, per session (in memory: claims of
    /// turns open across a restart are gone, see `agent_turn`).
    claims: HashMap<String, BTreeSet<String>>,
}

impl ProjectActor {
    pub fn new(path: PathBuf) -> ProjectActor {
        ProjectActor {
            path,
            claims: HashMap::new(),
        }
    }

    fn blocking<R, F>(&self, f: F) -> AtomicResponse<Self, Result<R, ProjectError>>
    where
        R: Send + 'static,
        F: FnOnce(&git2::Repository) -> Result<R, ProjectError> + Send + 'static,
    {
        self.on_repo(false, f)
    }

    /// `f` on the project's repository, on a blocking thread; `make`: a
    /// folder without one gets it (a live session works there).
    fn on_repo<R, F>(&self, make: bool, f: F) -> AtomicResponse<Self, Result<R, ProjectError>>
    where
        R: Send + 'static,
        F: FnOnce(&git2::Repository) -> Result<R, ProjectError> + Send + 'static,
    {
        let path = self.path.clone();
        let job = tokio::task::spawn_blocking(move || {
            if !path.is_dir() {
                return Err(ProjectError::PathMissing(path));
            }
            let repo = if make {
                folder::prepare(&path)?;
                folder::repository(&path)?
            } else {
                git::open_repo(&path)?
            };
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

/// The working tree when a turn begins (its baseline).
#[derive(Message)]
#[rtype(result = "Result<ProjectBaseline, ProjectError>")]
pub struct Baseline;

impl Handler<Baseline> for ProjectActor {
    type Result = AtomicResponse<Self, Result<ProjectBaseline, ProjectError>>;

    fn handle(&mut self, _: Baseline, _: &mut Context<Self>) -> Self::Result {
        self.on_repo(true, agent_turn::baseline)
    }
}

/// Make the folder ready for a live session (`folder::prepare`): before a
/// session's repository is placed inside it.
#[derive(Message)]
#[rtype(result = "Result<(), ProjectError>")]
pub struct PrepareFolder;

impl Handler<PrepareFolder> for ProjectActor {
    type Result = AtomicResponse<Self, Result<(), ProjectError>>;

    fn handle(&mut self, _: PrepareFolder, _: &mut Context<Self>) -> Self::Result {
        self.on_repo(true, |_| Ok(()))
    }
}

/// An open turn names files the agent is changing (a node's
/// `metadata.files`): another session's turn ending meanwhile leaves them
/// out of its commit.
#[derive(Message)]
#[rtype(result = "()")]
pub struct ClaimFiles {
    pub session_id: String,
    pub files: Vec<String>,
}

impl Handler<ClaimFiles> for ProjectActor {
    type Result = ();

    fn handle(&mut self, msg: ClaimFiles, _: &mut Context<Self>) {
        let claimed = self.claims.entry(msg.session_id).or_default();
        for f in msg.files {
            if claimed.len() >= agent_turn::MAX_TURN_FILES {
                break;
            }
            claimed.insert(f.trim_start_matches("./").to_string());
        }
    }
}

/// End a turn in the project: the agent's commit, or its held turn, or
/// why neither (see `agent_turn`). The session's claims end with it.
#[derive(Message)]
#[rtype(result = "Result<ProjectOutcome, ProjectError>")]
pub struct CommitTurn(pub TurnEnd);

impl Handler<CommitTurn> for ProjectActor {
    type Result = AtomicResponse<Self, Result<ProjectOutcome, ProjectError>>;

    fn handle(&mut self, msg: CommitTurn, _: &mut Context<Self>) -> Self::Result {
        let mut end = msg.0;
        let own = self.claims.remove(&end.session_id).unwrap_or_default();
        if let (Some(files), false) = (&mut end.files, own.is_empty()) {
            files.extend(own);
        }
        let others: BTreeSet<String> = self.claims.values().flatten().cloned().collect();
        self.blocking(move |repo| agent_turn::end_turn(repo, &end, &others))
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

/// Every session's agent turns, committed and held (`agent_turns`).
#[derive(Message)]
#[rtype(result = "Result<Vec<SessionTurns>, ProjectError>")]
pub struct AgentTurns {
    pub limit: usize,
}

impl Handler<AgentTurns> for ProjectActor {
    type Result = AtomicResponse<Self, Result<Vec<SessionTurns>, ProjectError>>;

    fn handle(&mut self, msg: AgentTurns, _: &mut Context<Self>) -> Self::Result {
        self.blocking(move |repo| agent_turns::agent_turns(repo, msg.limit))
    }
}

/// What undoing turns of a session would do, and what stands in the way.
#[derive(Message)]
#[rtype(result = "Result<RevertPreview, ProjectError>")]
pub struct PreviewRevert {
    pub session_id: String,
    pub turns: Vec<u64>,
}

impl Handler<PreviewRevert> for ProjectActor {
    type Result = AtomicResponse<Self, Result<RevertPreview, ProjectError>>;

    fn handle(&mut self, msg: PreviewRevert, _: &mut Context<Self>) -> Self::Result {
        self.blocking(move |repo| Ok(undo::preview_revert(repo, &msg.session_id, &msg.turns)?.0))
    }
}

/// Undo turns of a session as one new commit, or pick a held turn onto
/// the branch (`held: true`, one turn).
#[derive(Message)]
#[rtype(result = "Result<Landed, ProjectError>")]
pub struct Land {
    pub session_id: String,
    pub turns: Vec<u64>,
    pub model: Option<String>,
    pub held: bool,
}

impl Handler<Land> for ProjectActor {
    type Result = AtomicResponse<Self, Result<Landed, ProjectError>>;

    fn handle(&mut self, msg: Land, _: &mut Context<Self>) -> Self::Result {
        self.blocking(move |repo| match (msg.held, msg.turns.as_slice()) {
            (true, [turn]) => undo::apply(repo, &msg.session_id, *turn, msg.model.as_deref()),
            (true, _) => Err(ProjectError::InvalidPath("one held turn at a time".into())),
            (false, turns) => undo::revert(repo, &msg.session_id, turns, msg.model.as_deref()),
        })
    }
}

/// One agent turn of a session, and the patch of one of its files.
#[derive(Message)]
#[rtype(result = "Result<Option<(AgentTurn, String)>, ProjectError>")]
pub struct OneTurn {
    pub session_id: String,
    pub turn: u64,
    pub path: Option<String>,
}

impl Handler<OneTurn> for ProjectActor {
    type Result = AtomicResponse<Self, Result<Option<(AgentTurn, String)>, ProjectError>>;

    fn handle(&mut self, msg: OneTurn, _: &mut Context<Self>) -> Self::Result {
        self.blocking(move |repo| {
            agent_turns::one_turn(repo, &msg.session_id, msg.turn, msg.path.as_deref())
        })
    }
}
