//! The session actor's messages that change the session: creation,
//! appends, node fills, the end of a turn, titles, rebinding, metadata and
//! deletion. Each runs the core on a blocking thread (`SessionActor::
//! blocking`), one after another.

use std::path::PathBuf;

use actix::prelude::*;

use super::actor::{notify_after, SessionActor, Slot, RETRY_FIRST};
use super::core::SessionCore;
use super::error::SessionError;
use super::wire::{EndTurn, NewNode, NodePatch, Posted, TurnOutcome};
use crate::messages::{ApplyTitle, ChangeKind};
use crate::meta::{MetaPatch, SessionMeta};
use crate::node::{Node, Role};

/// Create the session explicitly (no message yet).
#[derive(Message, Clone)]
#[rtype(result = "Result<SessionMeta, SessionError>")]
pub struct Create {
    pub meta: SessionMeta,
}

impl Handler<Create> for SessionActor {
    type Result = AtomicResponse<Self, Result<SessionMeta, SessionError>>;

    fn handle(&mut self, msg: Create, _: &mut Self::Context) -> Self::Result {
        let store = self.store.clone();
        let fut = self.blocking(move |slot, dir| {
            if let Slot::Vanished(root) = slot {
                return Err(SessionError::ProjectPathMissing(root.clone()));
            }
            if !matches!(slot, Slot::Absent) {
                return Err(SessionError::AlreadyExists);
            }
            let (core, _) = SessionCore::create(&store, dir, msg.meta, None)?;
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
        let store = self.store.clone();
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
                        SessionCore::create(&store, dir, meta, Some((msg.node, baseline)))?;
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
        let outcome = self.project_outcome(msg.0.files.clone());
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
    /// The project's name and folder (none for the default project).
    pub home: Option<crate::meta::ProjectHome>,
}

impl Handler<Rebind> for SessionActor {
    type Result = AtomicResponse<Self, Result<bool, SessionError>>;

    fn handle(&mut self, msg: Rebind, _: &mut Self::Context) -> Self::Result {
        let dir = msg.dir.clone();
        let fut = self.on_core_write(move |core| core.rebind(&msg.project_id, &msg.dir, msg.home));
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
        self.remove_folder(None)
    }
}

/// Move the session's folder out of the store to `dest` (kept whole, never
/// served again) and stop: a cluster node that lost the session.
#[derive(Message, Clone)]
#[rtype(result = "Result<(), SessionError>")]
pub struct SetAside {
    pub dest: std::path::PathBuf,
}

impl Handler<SetAside> for SessionActor {
    type Result = AtomicResponse<Self, Result<(), SessionError>>;

    fn handle(&mut self, msg: SetAside, _: &mut Self::Context) -> Self::Result {
        self.remove_folder(Some(msg.dest))
    }
}

impl SessionActor {
    /// Delete the folder (or move it to `keep`), then stop.
    fn remove_folder(
        &mut self,
        keep: Option<std::path::PathBuf>,
    ) -> AtomicResponse<Self, Result<(), SessionError>> {
        // A merged pack being written in the folder is waited for.
        let lock = self.upkeep.lock.clone();
        let fut = async move { lock.lock_owned().await }
            .into_actor(self)
            .then(move |guard, act, _| {
                let store = act.store.clone();
                act.blocking(move |slot, dir| {
                    slot.live()?;
                    match &keep {
                        Some(dest) => store.set_aside_session_folder(dir, dest)?,
                        None => store.remove_session_folder(dir)?,
                    }
                    drop(guard);
                    Ok(())
                })
            });
        AtomicResponse::new(Box::pin(fut.map(|res, act, ctx| {
            if res.is_ok() {
                act.notify(ChangeKind::Deleted);
                act.slot = Slot::Absent;
                // Gone: its timers (maintenance, the handle's release) go
                // with it, and its lease is free for a session of that id.
                ctx.stop();
            }
            res
        })))
    }
}
