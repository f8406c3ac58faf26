//! Undo through the engine: a project's agent turns, the preview and the
//! revert of a session's turns, a held turn applied. The git work runs in
//! the project's actor (serialized with the project's turn commits); the
//! session records what was done as a runtime node (`project/revert`,
//! `project/apply`), visible in its transcript.

use actix::Addr;
use serde::Serialize;

use crate::error::EngineError;
use crate::ids;
use crate::meta::now;
use crate::node::Role;
use crate::project::actor::{AgentTurns, Land, OneTurn, PreviewRevert};
use crate::project::agent_turns::{AgentTurn, SessionTurns};
use crate::project::registry::Lookup;
use crate::project::undo::{Landed, RevertPreview};
use crate::project::{ProjectActor, ProjectError, Refusal, DEFAULT_PROJECT};
use crate::session::actor::Append;
use crate::session::{NewNode, Posted, ROOT_CALLER};

use super::Engine;

/// At most this many turns are undone at once.
pub const MAX_REVERT_TURNS: usize = 1_000;
/// At most this many of a session's commits are read to find a turn.
const TURN_SCAN: usize = 10_000;

/// What an undo or apply did, and the node that records it.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Undone {
    #[serde(flatten)]
    pub landed: Landed,
    pub project_id: String,
    /// The runtime node appended to the session (absent when the session
    /// no longer exists).
    pub node_id: Option<String>,
}

impl Engine {
    async fn project_actor(&self, project_id: &str) -> Result<Addr<ProjectActor>, EngineError> {
        if project_id == DEFAULT_PROJECT {
            return Err(ProjectError::Refused(Box::new(Refusal::new(
                "no_project",
                "the session is not bound to a project: there are no agent commits to undo",
            )))
            .into());
        }
        Ok(self.ask_projects(Lookup(project_id.to_string())).await?.1)
    }

    async fn send_project<M, R>(&self, actor: Addr<ProjectActor>, msg: M) -> Result<R, EngineError>
    where
        M: actix::Message<Result = Result<R, ProjectError>> + Send + 'static,
        R: Send + 'static,
        ProjectActor: actix::Handler<M>,
    {
        actor
            .send(msg)
            .await
            .map_err(|_| EngineError::Unavailable)?
            .map_err(EngineError::from)
    }

    /// The agent's turns in a project, per session: committed and held.
    pub async fn agent_turns(
        &self,
        project_id: &str,
        limit: usize,
    ) -> Result<Vec<SessionTurns>, EngineError> {
        let actor = self.project_actor(project_id).await?;
        self.send_project(actor, AgentTurns { limit }).await
    }

    /// What undoing `turns` of the session would change, or why it cannot.
    pub async fn revert_preview(
        &self,
        session_id: &str,
        turns: Vec<u64>,
    ) -> Result<RevertPreview, EngineError> {
        let turns = check_turns(turns)?;
        let meta = self.meta(session_id).await?;
        let actor = self.project_actor(&meta.project_id).await?;
        self.send_project(
            actor,
            PreviewRevert {
                session_id: session_id.to_string(),
                turns,
            },
        )
        .await
    }

    /// Undo `turns` of the session: one new commit on the project's
    /// branch reverting their agent commits (newest first).
    pub async fn revert_turns(
        &self,
        session_id: &str,
        turns: Vec<u64>,
    ) -> Result<Undone, EngineError> {
        self.writable()?;
        let turns = check_turns(turns)?;
        let meta = self.meta(session_id).await?;
        let actor = self.project_actor(&meta.project_id).await?;
        let landed = self
            .send_project(
                actor,
                Land {
                    session_id: session_id.to_string(),
                    turns,
                    model: meta.model.clone(),
                    held: false,
                },
            )
            .await?;
        self.record(session_id, &meta.project_id, "project/revert", landed)
            .await
    }

    /// Land the session's held turn `turn` on the project's branch.
    pub async fn apply_agent_turn(
        &self,
        project_id: &str,
        session_id: &str,
        turn: u64,
    ) -> Result<Undone, EngineError> {
        self.writable()?;
        ids::validate("session id", session_id)?;
        let turns = check_turns(vec![turn])?;
        let model = self.meta(session_id).await.ok().and_then(|m| m.model);
        let actor = self.project_actor(project_id).await?;
        let landed = self
            .send_project(
                actor,
                Land {
                    session_id: session_id.to_string(),
                    turns,
                    model,
                    held: true,
                },
            )
            .await?;
        self.record(session_id, project_id, "project/apply", landed)
            .await
    }

    /// The ended turn that holds node `node_id` on the session's current
    /// branch (`None` while its turn is open).
    pub async fn turn_of_node(
        &self,
        session_id: &str,
        node_id: &str,
    ) -> Result<Option<u64>, EngineError> {
        let nodes = self.branch(session_id, None).await?;
        let Some(seq) = nodes.iter().find(|n| n.id == node_id).map(|n| n.seq) else {
            return Err(crate::session::SessionError::UnknownNode(node_id.to_string()).into());
        };
        let commits = self.commits(session_id, TURN_SCAN).await?;
        let mut best: Option<(u64, u64)> = None;
        for c in commits {
            let t = crate::git::Trailers::parse(&c.message);
            if t.turn > 0 && t.last_seq >= seq && best.is_none_or(|(last, _)| t.last_seq < last) {
                best = Some((t.last_seq, t.turn));
            }
        }
        Ok(best.map(|(_, turn)| turn))
    }

    /// The agent's turn `turn` of the session in its project (committed
    /// or held), and the patch of `path` in it; `None` without one.
    pub async fn agent_turn(
        &self,
        session_id: &str,
        turn: u64,
        path: Option<String>,
    ) -> Result<Option<(AgentTurn, String)>, EngineError> {
        let meta = self.meta(session_id).await?;
        if meta.project_id == DEFAULT_PROJECT {
            return Ok(None);
        }
        let actor = self.project_actor(&meta.project_id).await?;
        self.send_project(
            actor,
            OneTurn {
                session_id: session_id.to_string(),
                turn,
                path,
            },
        )
        .await
    }

    /// Append the runtime node that records an undo or apply (a session
    /// that no longer exists records nothing).
    async fn record(
        &self,
        session_id: &str,
        project_id: &str,
        name: &str,
        landed: Landed,
    ) -> Result<Undone, EngineError> {
        let node = landed_node(name, project_id, &landed);
        let append = Append {
            node,
            create: None,
            queue: false,
        };
        let node_id = match self.call(session_id, append).await {
            Ok(Posted::Appended(out)) => {
                self.replicate_open(session_id);
                Some(out.node.id)
            }
            Ok(_) => None,
            Err(e) if e.is_unknown_session() => None,
            Err(e) => {
                tracing::warn!(session = session_id, error = %e, "the undo's node was not recorded");
                None
            }
        };
        Ok(Undone {
            landed,
            project_id: project_id.to_string(),
            node_id,
        })
    }
}

/// Turn numbers to undo: 1 or more, distinct, at most `MAX_REVERT_TURNS`.
fn check_turns(mut turns: Vec<u64>) -> Result<Vec<u64>, EngineError> {
    turns.sort_unstable();
    turns.dedup();
    if turns.is_empty() || turns.len() > MAX_REVERT_TURNS || turns[0] == 0 {
        return Err(crate::session::SessionError::Invalid(format!(
            "turns: 1 to {MAX_REVERT_TURNS} turn numbers, each at least 1"
        ))
        .into());
    }
    Ok(turns)
}

/// The runtime node of an undo (`project/revert`) or apply
/// (`project/apply`): called by ROOT, so the head stays where it is.
fn landed_node(name: &str, project_id: &str, landed: &Landed) -> NewNode {
    let mut metadata = serde_json::Map::new();
    metadata.insert("display".into(), "runtime".into());
    metadata.insert("project_id".into(), project_id.into());
    metadata.insert("commit".into(), landed.commit.clone().into());
    metadata.insert(
        "turns".into(),
        serde_json::to_value(&landed.turns).unwrap_or_default(),
    );
    let files: Vec<&str> = landed.diff.files.iter().map(|f| f.path.as_str()).collect();
    metadata.insert(
        "files".into(),
        serde_json::to_value(&files).unwrap_or_default(),
    );
    metadata.insert("at".into(), now().into());
    let numbers: Vec<String> = landed.turns.iter().map(|t| t.turn.to_string()).collect();
    let verb = if name == "project/apply" {
        "applied held turn"
    } else if numbers.len() == 1 {
        "reverted turn"
    } else {
        "reverted turns"
    };
    let output = format!(
        "{verb} {} as {} ({} file{}, +{} −{})",
        numbers.join(", "),
        landed.short_sha,
        files.len(),
        if files.len() == 1 { "" } else { "s" },
        landed.diff.additions,
        landed.diff.deletions,
    );
    NewNode {
        id: None,
        role: Role::Code,
        content: serde_json::Value::Null,
        predecessor: None,
        caller: Some(ROOT_CALLER.into()),
        metadata,
        name: Some(name.into()),
        output: Some(output.into()),
        at: None,
    }
}
