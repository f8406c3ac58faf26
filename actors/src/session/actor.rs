//! The session actor: the only writer of one session's repository.
//!
//! Every mutation moves the `SessionCore` into a blocking thread and back
//! inside an `AtomicResponse`, so operations on one session run strictly one
//! after another, git work never runs on an event-loop thread, and no lock
//! guards the core. Reads are answered from memory. The read-only and
//! git-view messages are in `messages.rs`.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use actix::prelude::*;
use tokio::sync::{Mutex, OwnedMutexGuard};

use super::core::SessionCore;
use super::error::SessionError;
use super::naming::TitlePlan;
use super::wire::{AppendOutcome, EndTurn, NewNode, NodePatch, Posted, TurnOutcome};
use crate::meta::{MetaPatch, ProjectBaseline, SessionMeta};
use crate::node::{Node, Role};
use crate::project::actor::CommitTurn;
use crate::project::{self, ProjectRegistry, DEFAULT_PROJECT};
use crate::titler::{ApplyTitle, TitleJob, Titler};

/// Where naming jobs go, and when they are due.
#[derive(Clone)]
pub struct Naming {
    pub titler: Addr<Titler>,
    pub retitle_at: Vec<u32>,
}

/// What changed in a session, for whoever keeps an index of sessions.
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct SessionChanged {
    pub meta: SessionMeta,
    /// The session's directory (its repository).
    pub dir: std::path::PathBuf,
    /// Preview from the latest user message.
    pub preview: Option<String>,
    /// First 80 characters of the first user message.
    pub first_preview: Option<String>,
    pub kind: ChangeKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    Created,
    /// Content was appended (debounced in the registry).
    Appended,
    /// Metadata or turn state changed (written through at once).
    Updated,
    /// The actor loaded the session (refreshes a row a crash left stale).
    Loaded,
    Deleted,
}

/// What the actor holds of its session.
pub(super) enum Slot {
    /// Loading, or an operation has the core on a blocking thread.
    Busy,
    /// No session with this id (yet: the first user message creates it).
    Absent,
    /// The session's folder is inside a project folder that is missing
    /// (moved or renamed): nothing can be read or written until the
    /// project is relocated, and nothing is created.
    Vanished(std::path::PathBuf),
    Live(Box<SessionCore>),
}

impl Slot {
    /// The live core, or why there is none.
    pub(super) fn live(&self) -> Result<&SessionCore, SessionError> {
        match self {
            Slot::Live(core) => Ok(core),
            Slot::Absent => Err(SessionError::NotFound),
            Slot::Vanished(root) => Err(SessionError::ProjectPathMissing(root.clone())),
            Slot::Busy => Err(SessionError::Unavailable),
        }
    }

    pub(super) fn live_mut(&mut self) -> Result<&mut SessionCore, SessionError> {
        match self {
            Slot::Live(core) => Ok(core),
            Slot::Absent => Err(SessionError::NotFound),
            Slot::Vanished(root) => Err(SessionError::ProjectPathMissing(root.clone())),
            Slot::Busy => Err(SessionError::Unavailable),
        }
    }
}

pub struct SessionActor {
    pub(super) dir: PathBuf,
    projects: Option<Addr<ProjectRegistry>>,
    naming: Option<Naming>,
    pub(super) slot: Slot,
    lease: Option<Arc<Mutex<()>>>,
    _guard: Option<OwnedMutexGuard<()>>,
    events: Option<Recipient<SessionChanged>>,
    /// A retry of a pending commit is scheduled.
    retrying: bool,
    /// Pack maintenance (`upkeep.rs`).
    pub(super) upkeep: super::upkeep::Upkeep,
}

/// First wait before a failed commit is tried again; it doubles up to the
/// cap while the disk keeps refusing.
const RETRY_FIRST: std::time::Duration = std::time::Duration::from_secs(1);
const RETRY_CAP: std::time::Duration = std::time::Duration::from_secs(60);

/// A future the actor waits on before its blocking step.
type Pending<T> = Pin<Box<dyn Future<Output = T>>>;

impl SessionActor {
    pub fn new(
        dir: PathBuf,
        lease: Arc<Mutex<()>>,
        events: Option<Recipient<SessionChanged>>,
        projects: Option<Addr<ProjectRegistry>>,
        naming: Option<Naming>,
    ) -> Self {
        SessionActor {
            dir,
            projects,
            naming,
            slot: Slot::Busy,
            lease: Some(lease),
            _guard: None,
            events,
            retrying: false,
            upkeep: super::upkeep::Upkeep::default(),
        }
    }

    /// Try a pending commit again after `delay`, and again with a doubled
    /// delay while it fails (the disk is full, a write is refused).
    fn retry_commit_later(&mut self, ctx: &mut Context<Self>, delay: std::time::Duration) {
        if self.retrying {
            return;
        }
        self.retrying = true;
        ctx.run_later(delay, move |act, ctx| {
            let fut = act
                .on_core(|core| {
                    core.retry_pending_commit()
                        .map(|()| core.commit_is_pending())
                })
                .map(move |res, act: &mut SessionActor, ctx| {
                    act.retrying = false;
                    match res {
                        Ok(false) => act.notify(ChangeKind::Updated),
                        _ => act.retry_commit_later(ctx, (delay * 2).min(RETRY_CAP)),
                    }
                });
            ctx.spawn(fut);
        });
    }

    /// Run `f` on a blocking thread with the slot, then put it back.
    pub(super) fn blocking<R, F>(
        &mut self,
        f: F,
    ) -> ResponseActFuture<Self, Result<R, SessionError>>
    where
        R: Send + 'static,
        F: FnOnce(&mut Slot, &PathBuf) -> Result<R, SessionError> + Send + 'static,
    {
        let mut slot = std::mem::replace(&mut self.slot, Slot::Busy);
        if matches!(slot, Slot::Busy) {
            return Box::pin(fut::ready(Err(SessionError::Unavailable)));
        }
        let dir = self.dir.clone();
        let job = tokio::task::spawn_blocking(move || {
            // A live session whose folder went away (its project folder was
            // moved): refuse rather than write into a vanished path.
            if matches!(slot, Slot::Live(_)) && !dir.is_dir() {
                return (slot, Err(super::load::vanished(&dir)));
            }
            let result = f(&mut slot, &dir);
            (slot, result)
        });
        Box::pin(job.into_actor(self).map(|joined, act, ctx| match joined {
            Ok((slot, result)) => {
                act.slot = slot;
                act.after_write(ctx);
                result
            }
            Err(e) => {
                // The core is gone with the panicked thread; stop, and the
                // next request reloads the session from disk.
                tracing::error!(dir = %act.dir.display(), error = %e, "session operation panicked");
                ctx.stop();
                Err(SessionError::Unavailable)
            }
        }))
    }

    /// Run `f` on the live core, on a blocking thread.
    pub(super) fn on_core<R, F>(&mut self, f: F) -> ResponseActFuture<Self, Result<R, SessionError>>
    where
        R: Send + 'static,
        F: FnOnce(&mut SessionCore) -> Result<R, SessionError> + Send + 'static,
    {
        self.blocking(move |slot, _| f(slot.live_mut()?))
    }

    fn notify(&self, kind: ChangeKind) {
        let (Some(events), Ok(core)) = (&self.events, self.slot.live()) else {
            return;
        };
        let mut meta = core.meta().clone();
        meta.commit_pending = core.commit_is_pending();
        events.do_send(SessionChanged {
            meta,
            dir: core.dir.clone(),
            preview: core
                .last_user_text()
                .as_deref()
                .and_then(crate::node::preview),
            first_preview: core
                .first_user_text()
                .as_deref()
                .and_then(super::summary::first_preview),
            kind,
        });
    }

    /// The project's working tree as a turn baseline, for a session bound
    /// to a real project (`None` for the default project).
    fn baseline_of(&self, project_id: Option<String>) -> Pending<Option<ProjectBaseline>> {
        match (project_id, self.projects.clone()) {
            (Some(pid), Some(projects)) if pid != DEFAULT_PROJECT => {
                Box::pin(async move { Some(project::turn::baseline(projects, pid).await) })
            }
            _ => Box::pin(std::future::ready(None)),
        }
    }

    /// Open the next turn with the oldest queued message (recording the
    /// project baseline first, like any user message).
    fn open_queued_turn(
        &mut self,
    ) -> ResponseActFuture<Self, Result<Option<AppendOutcome>, SessionError>> {
        let project_id = self.slot.live().map(|c| c.meta().project_id.clone()).ok();
        let baseline = self.baseline_of(project_id);
        Box::pin(baseline.into_actor(self).then(|baseline, act, _| {
            act.on_core_write(move |core| core.start_queued_turn(baseline))
        }))
    }

    /// Hand a due naming pass to the titler (fire and forget).
    fn request_title(&self, plan: Option<TitlePlan>) {
        let (Some(plan), Some(naming), Ok(core)) = (plan, &self.naming, self.slot.live()) else {
            return;
        };
        naming.titler.do_send(TitleJob {
            session_id: core.id().to_string(),
            pass: plan.pass,
            input: plan.input,
            model: core.meta().model.clone(),
            expected_title: plan.expected_title,
        });
    }
}

impl Actor for SessionActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        // Wait for the lease: an evicted actor for the same session may still
        // be finishing; only then load from disk.
        let Some(lease) = self.lease.take() else {
            return;
        };
        let dir = self.dir.clone();
        let load = async move {
            let guard = lease.lock_owned().await;
            let loaded = tokio::task::spawn_blocking(move || match SessionCore::load(&dir) {
                Ok(core) => Ok(Slot::Live(Box::new(core))),
                Err(SessionError::NotFound) => Ok(match super::load::vanished(&dir) {
                    SessionError::ProjectPathMissing(root) => Slot::Vanished(root),
                    _ => Slot::Absent,
                }),
                Err(e) => Err(e),
            })
            .await;
            (guard, loaded)
        };
        ctx.wait(load.into_actor(self).map(|(guard, loaded), act, ctx| {
            act._guard = Some(guard);
            match loaded {
                Ok(Ok(mut slot)) => {
                    if let (Ok(core), Some(n)) = (slot.live_mut(), act.naming.as_ref()) {
                        core.set_retitle_at(n.retitle_at.clone());
                    }
                    let exists = matches!(slot, Slot::Live(_));
                    let pending = slot.live().is_ok_and(|c| c.commit_is_pending());
                    act.slot = slot;
                    if exists {
                        act.notify(ChangeKind::Loaded);
                    }
                    if pending {
                        act.retry_commit_later(ctx, RETRY_FIRST);
                    }
                }
                Ok(Err(e)) => {
                    tracing::error!(dir = %act.dir.display(), error = %e, "session failed to load");
                    ctx.stop();
                }
                Err(e) => {
                    tracing::error!(dir = %act.dir.display(), error = %e, "session load panicked");
                    ctx.stop();
                }
            }
        }));
    }
}

// ----- messages that change the session ---------------------------------------

/// Create the session explicitly (no message yet).
#[derive(Message, Clone)]
#[rtype(result = "Result<SessionMeta, SessionError>")]
pub struct Create {
    pub meta: SessionMeta,
}

impl Handler<Create> for SessionActor {
    type Result = AtomicResponse<Self, Result<SessionMeta, SessionError>>;

    fn handle(&mut self, msg: Create, _: &mut Self::Context) -> Self::Result {
        let fut = self.blocking(move |slot, dir| {
            if let Slot::Vanished(root) = slot {
                return Err(SessionError::ProjectPathMissing(root.clone()));
            }
            if !matches!(slot, Slot::Absent) {
                return Err(SessionError::AlreadyExists);
            }
            let (core, _) = SessionCore::create(dir, msg.meta, None)?;
            let meta = core.meta().clone();
            *slot = Slot::Live(Box::new(core));
            Ok(meta)
        });
        notify_after(fut, ChangeKind::Created)
    }
}

/// Append a node; with `create` set, the first user message creates the
/// session in the same atomic step.
#[derive(Message, Clone)]
#[rtype(result = "Result<Posted, SessionError>")]
pub struct Append {
    pub node: NewNode,
    pub create: Option<SessionMeta>,
    /// A user message that arrives during a running turn is queued (and
    /// opens the next turn) instead of refused.
    pub queue: bool,
}

impl Handler<Append> for SessionActor {
    type Result = AtomicResponse<Self, Result<Posted, SessionError>>;

    fn handle(&mut self, msg: Append, _: &mut Self::Context) -> Self::Result {
        // A node opening a turn (a user message or a retried answer) in a
        // project-bound session first records the project's working tree
        // (through its project actor).
        let (opens_turn, project_id) = match self.slot.live() {
            Ok(core) => (
                core.opens_turn(&msg.node),
                Some(core.meta().project_id.clone()),
            ),
            Err(_) => (
                msg.node.role == Role::User && msg.node.caller.is_none(),
                msg.create.as_ref().map(|m| m.project_id.clone()),
            ),
        };
        let baseline = self.baseline_of(project_id.filter(|_| opens_turn));
        let fut = baseline.into_actor(self).then(move |baseline, act, _| {
            act.blocking(move |slot, dir| match (slot.live_mut(), msg.create) {
                (Ok(core), _) if msg.queue => {
                    core.check_repository()?;
                    core.post(msg.node, baseline)
                }
                (Ok(core), _) => {
                    core.check_repository()?;
                    core.append_with(msg.node, baseline)
                        .map(|o| Posted::Appended(Box::new(o)))
                }
                (Err(SessionError::NotFound), Some(meta))
                    if matches!(msg.node.role, Role::User | Role::System) =>
                {
                    let (core, outcome) =
                        SessionCore::create(dir, meta, Some((msg.node, baseline)))?;
                    *slot = Slot::Live(Box::new(core));
                    outcome
                        .map(|o| Posted::Appended(Box::new(o)))
                        .ok_or(SessionError::Unavailable)
                }
                (Err(e), _) => Err(e),
            })
        });
        AtomicResponse::new(Box::pin(fut.map(|res, act, _| {
            if let Ok(Posted::Appended(out)) = &res {
                if out.closed_interrupted_turn.is_some() {
                    act.notify(ChangeKind::Updated);
                }
                if out.created && out.node.seq == 1 {
                    act.notify(ChangeKind::Created);
                } else if out.created && out.node.is_conversational() {
                    act.notify(ChangeKind::Appended);
                }
            }
            res
        })))
    }
}

#[derive(Message, Clone)]
#[rtype(result = "Result<Node, SessionError>")]
pub struct UpdateNode {
    pub node_id: String,
    pub patch: NodePatch,
}

impl Handler<UpdateNode> for SessionActor {
    type Result = AtomicResponse<Self, Result<Node, SessionError>>;

    fn handle(&mut self, msg: UpdateNode, _: &mut Self::Context) -> Self::Result {
        AtomicResponse::new(
            self.on_core_write(move |core| core.update_node(&msg.node_id, msg.patch)),
        )
    }
}

#[derive(Message, Clone)]
#[rtype(result = "Result<TurnOutcome, SessionError>")]
pub struct EndTurnMsg(pub EndTurn);

impl Handler<EndTurnMsg> for SessionActor {
    type Result = AtomicResponse<Self, Result<TurnOutcome, SessionError>>;

    fn handle(&mut self, msg: EndTurnMsg, _: &mut Self::Context) -> Self::Result {
        // In a project-bound session the agent's changes are committed in
        // the project first, so the session's turn commit can record it.
        let plan = self.slot.live().ok().and_then(|core| {
            let baseline = core.open_turn_baseline()?.clone();
            let meta = core.meta();
            let open = meta.open_turn.as_ref()?;
            let commit = CommitTurn {
                session_id: meta.id.clone(),
                turn: open.number,
                first_seq: open.first_seq,
                user_text: core
                    .node(&open.user_node)
                    .map(Node::text)
                    .unwrap_or_default(),
                model: meta.model.clone(),
            };
            Some((meta.project_id.clone(), baseline, commit))
        });
        let projects = self.projects.clone();
        let outcome: Pending<_> = match plan {
            Some((pid, baseline, commit)) => Box::pin(async move {
                Some(project::turn::outcome(projects, commit, pid, baseline).await)
            }),
            None => Box::pin(std::future::ready(None)),
        };
        let fut = outcome.into_actor(self).then(move |project, act, _| {
            act.on_core_write(move |core| core.end_turn(msg.0, project))
        });
        let fut = fut.map(|res, act: &mut SessionActor, ctx| {
            match &res {
                Ok(out) => act.request_title(out.title_plan.clone()),
                Err(SessionError::CommitPending(_)) => {
                    // Ended, so the list shows the new status; committed later.
                    act.notify(ChangeKind::Updated);
                    act.retry_commit_later(ctx, RETRY_FIRST);
                }
                Err(_) => {}
            }
            res
        });
        // A queued user message opens the next turn right away.
        let fut = fut.then(
            |res,
             act: &mut SessionActor,
             _|
             -> ResponseActFuture<SessionActor, Result<TurnOutcome, SessionError>> {
                let ready = act.slot.live().is_ok_and(|c| c.next_queued_ready());
                match res {
                    Ok(out) if ready => Box::pin(act.open_queued_turn().map(move |next, _, _| {
                        let mut out = out;
                        match next {
                            Ok(n) => out.next_turn = n.map(Box::new),
                            Err(e) => {
                                tracing::error!(error = %e, "could not open the next queued turn")
                            }
                        }
                        Ok(out)
                    })),
                    other => Box::pin(fut::ready(other)),
                }
            },
        );
        notify_after(Box::pin(fut), ChangeKind::Updated)
    }
}

impl Handler<ApplyTitle> for SessionActor {
    type Result = AtomicResponse<Self, ()>;

    fn handle(&mut self, msg: ApplyTitle, _: &mut Self::Context) -> Self::Result {
        let fut = self.on_core(move |core| {
            core.apply_title(
                &msg.title,
                msg.pass,
                msg.expected_title.as_deref(),
                msg.force,
            )
        });
        AtomicResponse::new(Box::pin(fut.map(|res, act, _| match res {
            Ok(true) => act.notify(ChangeKind::Updated),
            Ok(false) => {}
            Err(e) => tracing::warn!(error = %e, "could not write a generated title"),
        })))
    }
}

/// A title typed by nobody: write `title` now (regenerate). Returns the
/// metadata after the write.
#[derive(Message, Clone)]
#[rtype(result = "Result<SessionMeta, SessionError>")]
pub struct SetGeneratedTitle(pub String);

impl Handler<SetGeneratedTitle> for SessionActor {
    type Result = AtomicResponse<Self, Result<SessionMeta, SessionError>>;

    fn handle(&mut self, msg: SetGeneratedTitle, _: &mut Self::Context) -> Self::Result {
        let fut = self.on_core_write(move |core| {
            core.apply_title(&msg.0, 0, None, true)?;
            Ok(core.meta().clone())
        });
        notify_after(fut, ChangeKind::Updated)
    }
}

/// Bind a session without turns to another project (moving its repo).
#[derive(Message, Clone)]
#[rtype(result = "Result<bool, SessionError>")]
pub struct Rebind {
    pub project_id: String,
    pub dir: PathBuf,
}

impl Handler<Rebind> for SessionActor {
    type Result = AtomicResponse<Self, Result<bool, SessionError>>;

    fn handle(&mut self, msg: Rebind, _: &mut Self::Context) -> Self::Result {
        let dir = msg.dir.clone();
        let fut = self.on_core_write(move |core| core.rebind(&msg.project_id, &msg.dir));
        AtomicResponse::new(Box::pin(fut.map(move |res, act, _| {
            if let Ok(true) = res {
                act.dir = dir;
                act.notify(ChangeKind::Updated);
            }
            res
        })))
    }
}

/// Change metadata fields (title, flags, status, …) and save them.
#[derive(Message, Clone)]
#[rtype(result = "Result<SessionMeta, SessionError>")]
pub struct UpdateMeta(pub MetaPatch);

impl Handler<UpdateMeta> for SessionActor {
    type Result = AtomicResponse<Self, Result<SessionMeta, SessionError>>;

    fn handle(&mut self, msg: UpdateMeta, _: &mut Self::Context) -> Self::Result {
        let fut = self.on_core_write(move |core| Ok(core.update_meta(|m| msg.0.apply(m))?.clone()));
        notify_after(fut, ChangeKind::Updated)
    }
}

/// Delete the session: its whole directory (with `.git/`) goes.
#[derive(Message, Clone)]
#[rtype(result = "Result<(), SessionError>")]
pub struct Delete;

impl Handler<Delete> for SessionActor {
    type Result = AtomicResponse<Self, Result<(), SessionError>>;

    fn handle(&mut self, _: Delete, _: &mut Self::Context) -> Self::Result {
        // A merged pack being written in the folder is waited for.
        let lock = self.upkeep.lock.clone();
        let fut = async move { lock.lock_owned().await }
            .into_actor(self)
            .then(|guard, act, _| {
                act.blocking(move |slot, dir| {
                    slot.live()?;
                    crate::registry::startup::remove_session_dir(dir)?;
                    drop(guard);
                    Ok(())
                })
            });
        AtomicResponse::new(Box::pin(fut.map(|res, act, _| {
            if res.is_ok() {
                act.notify(ChangeKind::Deleted);
                act.slot = Slot::Absent;
            }
            res
        })))
    }
}

/// Send a change event after a successful mutation.
pub(super) fn notify_after<R: 'static>(
    fut: ResponseActFuture<SessionActor, Result<R, SessionError>>,
    kind: ChangeKind,
) -> AtomicResponse<SessionActor, Result<R, SessionError>> {
    AtomicResponse::new(Box::pin(fut.map(move |res, act: &mut SessionActor, _| {
        if res.is_ok() {
            act.notify(kind);
        }
        res
    })))
}
