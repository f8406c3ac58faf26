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
//!
//! Given an `Early` channel, the turn is answered there as soon as its
//! commit's log entry is durable (and the registry told): the commit
//! leaves its files and the git index to `finish_deferred`, which writes
//! them in the same blocking step, so the actor's next message sees them.

use std::sync::{Arc, Mutex};

use actix::prelude::*;
use tokio::sync::oneshot;

use super::actor::{Pending, SessionActor, Slot, RETRY_FIRST};
use super::core::{Deferred, Gathered, SessionCore};
use super::error::SessionError;
use super::wire::{EndTurn, NewNode, TurnOutcome};
use crate::git;
use crate::messages::{ChangeKind, SessionChanged};
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
    /// Answer here as soon as the turn's log entry is durable, before its
    /// files are written (the actor writes them before its next message).
    pub early: Option<Early>,
}

/// Where a whole turn's answer goes once its log entry is durable: the
/// session's files are written after it, before the actor takes its next
/// message, so every later request sees them. The actor's own answer
/// comes after that (or instead, when the turn was not gathered).
#[derive(Clone)]
pub struct Early(Arc<Mutex<Option<oneshot::Sender<TurnWritten>>>>);

impl Early {
    pub fn new() -> (Early, oneshot::Receiver<TurnWritten>) {
        let (tx, rx) = oneshot::channel();
        (Early(Arc::new(Mutex::new(Some(tx)))), rx)
    }

    fn take(&self) -> Option<oneshot::Sender<TurnWritten>> {
        self.0.lock().ok()?.take()
    }
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
    /// Answered early (`Early`): the registry was told then.
    pub answered: bool,
}

impl SessionCore {
    /// Refuse a whole turn before anything is written: another turn is
    /// running (not this one's own, left open: a retry goes on), or the
    /// user message follows a node the session does not have.
    fn check_turn(&self, user_id: &str, predecessor: Option<&str>) -> Result<(), SessionError> {
        let ours = self.meta.open_turn.as_ref().map(|t| t.user_node.as_str()) == Some(user_id);
        if self.meta.run_holds() && !ours {
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
    /// HEAD's branch and tip when it does: the turn's commit builds on it.
    fn can_gather(&self, nodes: &[NewNode]) -> Result<Option<git::Head>, SessionError> {
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
        let head_now = git::Head::read(&self.repo)?;
        let tip_head = self.trailers_at(head_now.tip)?.head_node;
        let head = self.meta.head.clone();
        let continues = head == tip_head
            && nodes
                .iter()
                .all(|n| n.predecessor.is_none() || n.predecessor == head);
        Ok(continues.then_some(head_now))
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
            Some(head) => {
                self.batch = Some(Gathered {
                    changes: Vec::new(),
                    head,
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

    /// Write the files of a commit whose log entry is durable
    /// (`defer_apply`), and the git index. A failed write leaves the
    /// session to a restart's replay (`wal::Flushed`).
    pub(super) fn finish_deferred(&mut self) -> Result<(), SessionError> {
        if let Some(Deferred { flushed, commit }) = self.deferred.take() {
            flushed.apply_answered()?;
            git::finish_commit(&self.repo, &mut self.index, commit)?;
        }
        Ok(())
    }

    /// End a whole turn whose `nodes` are appended. With `early`, the
    /// answer goes out (and `events` hears of the change) once the commit's
    /// log entry is durable, then the files are written.
    fn end_whole(
        &mut self,
        end: EndTurn,
        project: Option<ProjectOutcome>,
        appended: Appended,
        early: Option<(Early, Option<Recipient<SessionChanged>>)>,
    ) -> Result<TurnWritten, SessionError> {
        self.defer_apply = early.is_some();
        let ended = self.end_turn(end, project);
        self.defer_apply = false;
        let mut written = TurnWritten {
            nodes: appended.nodes,
            outcome: ended?,
            created: appended.created,
            gathered: appended.gathered,
            answered: false,
        };
        let tx = match early {
            Some((early, events)) if self.deferred.is_some() => early.take().map(|tx| (tx, events)),
            _ => None,
        };
        if let Some((tx, events)) = tx {
            if let Some(events) = events {
                if written.created {
                    events.do_send(self.changed(ChangeKind::Created));
                }
                events.do_send(self.changed(ChangeKind::Updated));
            }
            written.answered = true;
            let _ = tx.send(written.clone());
        }
        self.finish_deferred()?;
        Ok(written)
    }
}

/// What the first step of a whole turn appended.
struct Appended {
    nodes: Vec<Node>,
    gathered: bool,
    created: bool,
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
                model: core.turn_model(),
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
    Project { appended: Appended, end: EndTurn },
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
            early,
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
        let early = early.map(|e| (e, self.events.clone()));
        let late = early.clone();
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
                let appended = Appended {
                    nodes,
                    gathered,
                    created,
                };
                if core.open_turn_baseline().is_some() {
                    return Ok(Step::Project { appended, end });
                }
                core.end_whole(end, None, appended, early)
                    .map(Step::Done)
                    .inspect_err(|_| forget_if_gathering(slot))
            })
        });
        let ended = appended.then(
            move |res, act: &mut SessionActor, _| -> ResponseActFuture<SessionActor, _> {
                let (appended, end) = match res {
                    Ok(Step::Done(w)) => return Box::pin(fut::ready(Ok(w))),
                    Ok(Step::Project { appended, end }) => (appended, end),
                    Err(e) => return Box::pin(fut::ready(Err(e))),
                };
                let outcome = act.project_outcome(end.files.clone());
                Box::pin(outcome.into_actor(act).then(move |project, act, _| {
                    act.blocking(move |slot, _| {
                        slot.live_mut()?
                            .end_whole(end, project, appended, late)
                            .inspect_err(|_| forget_if_gathering(slot))
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
                    if !w.answered {
                        if w.created {
                            act.notify(ChangeKind::Created);
                        }
                        act.notify(ChangeKind::Updated);
                    }
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
