//! A whole turn in one message: the turn's nodes appended and the turn
//! ended in one step of the session's actor.
//!
//! When the turn continues the branch's tip with nothing open, queued or
//! pending before it (the common case), its writes are gathered (`batch`)
//! and made durable by its commit: one log entry holds the nodes,
//! `meta.json`, the pack and the branch move, so the turn costs one
//! shared flush, and a crash leaves all of it or none. If anything fails
//! before that entry is flushed, the actor drops the session from memory
//! and the next request loads it from disk, where nothing of the turn is.
//! Otherwise (a turn that starts a branch, one a crash left open, a
//! commit still pending) the nodes are appended one by one, as separate
//! calls would, with the same answers. With no project to ask, appending
//! and ending are one blocking step; a bound project's commit of the
//! agent's changes comes between two.

use actix::prelude::*;
use git2::Oid;

use super::actor::{Pending, SessionActor, Slot, RETRY_FIRST};
use super::core::{Gathered, SessionCore};
use super::error::SessionError;
use super::wire::{EndTurn, NewNode, TurnOutcome};
use crate::messages::ChangeKind;
use crate::meta::{ProjectBaseline, ProjectOutcome, SessionMeta, Status};
use crate::node::Node;
use crate::project;

/// Append `nodes` (checked whole by the engine, each with its id) and end
/// the turn; `create` makes the session when it does not exist.
#[derive(Message, Clone)]
#[rtype(result = "Result<TurnWritten, SessionError>")]
pub struct WriteTurn {
    pub nodes: Vec<NewNode>,
    pub end: EndTurn,
    /// Make the session when it does not exist; `None`: refused with
    /// `NotFound` then (the engine places a new session first).
    pub create: Option<SessionMeta>,
    /// The id of the turn's user message, and the node it follows when
    /// it names one: checked against the session before anything is
    /// written (`check_turn`).
    pub user_id: String,
    pub predecessor: Option<String>,
    /// A live turn in a project-bound session records the project's tree
    /// and commits the agent's changes, as separate calls do; a turn from
    /// the past (an import) leaves the project alone.
    pub project: bool,
}

/// What a whole turn wrote.
#[derive(Debug, Clone)]
pub struct TurnWritten {
    pub nodes: Vec<Node>,
    pub outcome: TurnOutcome,
    /// The turn created the session.
    pub created: bool,
    /// Its writes went to disk in one log entry.
    pub gathered: bool,
}

impl SessionCore {
    /// Refuse a whole turn before anything is written: another turn is
    /// running (not this one's own, left open: a retry goes on), or the
    /// user message follows a node the session does not have.
    fn check_turn(&self, user_id: &str, predecessor: Option<&str>) -> Result<(), SessionError> {
        let ours = self.meta.open_turn.as_ref().map(|t| t.user_node.as_str()) == Some(user_id);
        if self.meta.status == Status::Running && !ours {
            return Err(SessionError::RunActive);
        }
        match predecessor {
            Some(p) if self.node(p).is_none() => {
                Err(SessionError::UnknownPredecessor(p.to_string()))
            }
            _ => Ok(()),
        }
    }

    /// Whether a whole turn of `nodes` can be gathered into one log entry:
    /// it continues the branch's tip, and nothing is open, queued or
    /// pending before it.
    /// The branch's tip when it does, the turn's commit builds on it.
    fn can_gather(&self, nodes: &[NewNode]) -> Result<Option<Option<Oid>>, SessionError> {
        if self.meta.open_turn.is_some()
            || self.meta.status == Status::Running
            || self.commit_pending
            || !self.queue.is_empty()
            || !self.pending_paths.is_empty()
        {
            return Ok(None);
        }
        if nodes
            .iter()
            .any(|n| n.id.as_deref().is_none_or(|id| self.node(id).is_some()))
        {
            return Ok(None);
        }
        let tip = self.head_tip()?;
        let tip_head = self.trailers_at(tip)?.head_node;
        let head = self.meta.head.clone();
        let continues = head == tip_head
            && nodes
                .iter()
                .all(|n| n.predecessor.is_none() || n.predecessor == head);
        Ok(continues.then_some(tip))
    }

    /// Append the nodes of a whole turn, gathering their writes when the
    /// turn allows it (`can_gather`); the user message records `baseline`.
    /// Returns the nodes as stored and whether they were gathered.
    pub fn append_turn(
        &mut self,
        nodes: Vec<NewNode>,
        baseline: Option<ProjectBaseline>,
    ) -> Result<(Vec<Node>, bool), SessionError> {
        let gathered = match self.can_gather(&nodes)? {
            Some(tip) => {
                self.batch = Some(Gathered {
                    changes: Vec::new(),
                    tip,
                });
                true
            }
            None => false,
        };
        let mut baseline = baseline;
        let mut out = Vec::with_capacity(nodes.len());
        for n in nodes {
            let b = if self.opens_turn(&n) {
                baseline.take()
            } else {
                None
            };
            out.push(self.append_with(n, b)?.node);
        }
        Ok((out, gathered))
    }

    /// Whether gathered writes are still waiting for the turn's commit.
    pub fn is_gathering(&self) -> bool {
        self.batch.is_some()
    }
}

impl SessionActor {
    /// What the bound project does at the end of the open turn (its
    /// agent's changes committed, or why not); `None` without a baseline.
    pub(super) fn project_outcome(
        &self,
        files: Option<Vec<String>>,
    ) -> Pending<Option<ProjectOutcome>> {
        let plan = self.slot.live().ok().and_then(|core| {
            let baseline = core.open_turn_baseline()?.clone();
            let meta = core.meta();
            let open = meta.open_turn.as_ref()?;
            let end = project::agent_turn::TurnEnd {
                session_id: meta.id.clone(),
                turn: open.number,
                first_seq: open.first_seq,
                // The open turn's nodes are kept whole: nothing is read.
                user_text: core
                    .cached_node(&open.user_node)
                    .map(Node::text)
                    .unwrap_or_default(),
                model: meta.model.clone(),
                baseline,
                files,
            };
            Some((meta.project_id.clone(), end))
        });
        let projects = self.projects.clone();
        match plan {
            Some((pid, end)) => {
                Box::pin(async move { Some(project::turn::outcome(projects, end, pid).await) })
            }
            None => Box::pin(std::future::ready(None)),
        }
    }
}

/// Where a whole turn stands after its first blocking step.
enum Step {
    /// Appended and ended.
    Done(TurnWritten),
    /// Appended; the bound project commits the agent's changes, then the
    /// turn ends.
    Project {
        nodes: Vec<Node>,
        gathered: bool,
        created: bool,
        end: EndTurn,
    },
}

/// After a failed whole turn whose writes were gathered: the core in
/// memory holds what the disk does not; drop it (the actor stops, and the
/// next request loads the session from disk).
fn forget_if_gathering(slot: &mut Slot) {
    if slot.live().is_ok_and(SessionCore::is_gathering) {
        *slot = Slot::Busy;
    }
}

impl Handler<WriteTurn> for SessionActor {
    type Result = AtomicResponse<Self, Result<TurnWritten, SessionError>>;

    fn handle(&mut self, msg: WriteTurn, _: &mut Self::Context) -> Self::Result {
        let WriteTurn {
            nodes,
            end,
            create,
            user_id,
            predecessor,
            project,
        } = msg;
        let checked = match (self.slot.live(), create) {
            (Ok(core), _) => core
                .check_turn(&user_id, predecessor.as_deref())
                .map(|()| (core.meta().project_id.clone(), None)),
            (Err(SessionError::NotFound), Some(create)) => {
                Ok((create.project_id.clone(), Some(create)))
            }
            (Err(e), _) => Err(e),
        };
        let (project_id, create) = match checked {
            Ok(c) => c,
            Err(e) => return AtomicResponse::new(Box::pin(fut::ready(Err(e)))),
        };
        let baseline = self.baseline_of(Some(project_id).filter(|_| project));
        let store = self.store.clone();
        // One blocking step when the project has no say (no baseline was
        // recorded); else the project's commit comes between the two.
        let appended = baseline.into_actor(self).then(move |baseline, act, _| {
            act.blocking(move |slot, dir| {
                let created = matches!(slot, Slot::Absent);
                if created {
                    let create = create.ok_or(SessionError::NotFound)?;
                    let (core, _) = SessionCore::create(&store, dir, create, None)?;
                    *slot = Slot::Live(Box::new(core));
                }
                let core = slot.live_mut()?;
                core.check_repository()?;
                let (nodes, gathered) = match core.append_turn(nodes, baseline) {
                    Ok(r) => r,
                    Err(e) => {
                        forget_if_gathering(slot);
                        return Err(e);
                    }
                };
                if core.open_turn_baseline().is_some() {
                    return Ok(Step::Project {
                        nodes,
                        gathered,
                        created,
                        end,
                    });
                }
                match core.end_turn(end, None) {
                    Ok(outcome) => Ok(Step::Done(TurnWritten {
                        nodes,
                        outcome,
                        created,
                        gathered,
                    })),
                    Err(e) => {
                        forget_if_gathering(slot);
                        Err(e)
                    }
                }
            })
        });
        let ended = appended.then(
            move |res, act: &mut SessionActor, _| -> ResponseActFuture<SessionActor, _> {
                let (nodes, gathered, created, end) = match res {
                    Ok(Step::Done(w)) => return Box::pin(fut::ready(Ok(w))),
                    Ok(Step::Project {
                        nodes,
                        gathered,
                        created,
                        end,
                    }) => (nodes, gathered, created, end),
                    Err(e) => return Box::pin(fut::ready(Err(e))),
                };
                let outcome = act.project_outcome(end.files.clone());
                Box::pin(outcome.into_actor(act).then(move |project, act, _| {
                    act.blocking(move |slot, _| {
                        let core = slot.live_mut()?;
                        match core.end_turn(end, project) {
                            Ok(outcome) => Ok(TurnWritten {
                                nodes,
                                outcome,
                                created,
                                gathered,
                            }),
                            Err(e) => {
                                forget_if_gathering(slot);
                                Err(e)
                            }
                        }
                    })
                }))
            },
        );
        AtomicResponse::new(Box::pin(ended.map(|res, act, ctx| {
            if matches!(act.slot, Slot::Busy) {
                tracing::warn!(dir = %act.dir.display(), "a whole turn failed before it was durable; the session is reloaded from disk");
                ctx.stop();
                return res;
            }
            match &res {
                Ok(w) => {
                    if w.created {
                        act.notify(ChangeKind::Created);
                    }
                    act.notify(ChangeKind::Updated);
                    act.request_title(w.outcome.title_plan.clone());
                }
                Err(SessionError::CommitPending(_)) => {
                    act.notify(ChangeKind::Updated);
                    act.retry_commit_later(ctx, RETRY_FIRST);
                }
                Err(_) => {}
            }
            res
        })))
    }
}
