//! The session actor: the only writer of one session's repository.
//!
//! Every mutation moves the `SessionCore` into a blocking thread and back
//! inside an `AtomicResponse`, so operations on one session run strictly one
//! after another, git work never runs on an event-loop thread, and no lock
//! guards the core. Reads of metadata are answered from memory; node
//! contents are read on the blocking thread too. The read-only and
//! git-view messages are in `messages.rs`, those that change the session
//! in `writes.rs`.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use actix::prelude::*;
use tokio::sync::{Mutex, OwnedMutexGuard};

use super::core::SessionCore;
use super::error::SessionError;
use super::naming::TitlePlan;
use super::wire::AppendOutcome;
use crate::messages::{ChangeKind, SessionChanged, TitleJob};
use crate::meta::ProjectBaseline;
use crate::project::{self, ProjectRegistry, DEFAULT_PROJECT};
use crate::store::Store;

/// Where naming jobs go, and when they are due.
#[derive(Clone)]
pub struct Naming {
    pub titler: Recipient<TitleJob>,
    pub retitle_at: Vec<u32>,
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
    /// The state directory the session's writes go through.
    pub(super) store: Store,
    pub(super) dir: PathBuf,
    pub(super) projects: Option<Addr<ProjectRegistry>>,
    naming: Option<Naming>,
    pub(super) slot: Slot,
    lease: Option<Arc<Mutex<()>>>,
    _guard: Option<OwnedMutexGuard<()>>,
    pub(super) events: Option<Recipient<SessionChanged>>,
    /// A retry of a pending commit is scheduled.
    retrying: bool,
    /// Pack maintenance (`upkeep.rs`).
    pub(super) upkeep: super::upkeep::Upkeep,
}

/// First wait before a failed commit is tried again; it doubles up to the
/// cap while the disk keeps refusing.
pub(super) const RETRY_FIRST: std::time::Duration = std::time::Duration::from_secs(1);
const RETRY_CAP: std::time::Duration = std::time::Duration::from_secs(60);

/// A future the actor waits on before its blocking step.
pub(super) type Pending<T> = Pin<Box<dyn Future<Output = T>>>;

impl SessionActor {
    pub fn new(
        store: Store,
        dir: PathBuf,
        lease: Arc<Mutex<()>>,
        events: Option<Recipient<SessionChanged>>,
        projects: Option<Addr<ProjectRegistry>>,
        naming: Option<Naming>,
    ) -> Self {
        SessionActor {
            store,
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
    pub(super) fn retry_commit_later(
        &mut self,
        ctx: &mut Context<Self>,
        delay: std::time::Duration,
    ) {
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
            let mut result = f(&mut slot, &dir);
            if let Slot::Live(core) = &mut slot {
                // Files of a commit answered early are written before the
                // actor takes its next message.
                if let Err(e) = core.finish_deferred() {
                    result = result.and(Err(e));
                }
                // What `notify` tells the registry, read here, off the
                // event loop.
                core.refresh_previews();
            }
            (slot, result)
        });
        Box::pin(job.into_actor(self).map(|joined, act, ctx| match joined {
            Ok((slot, result)) => {
                act.slot = slot;
                if act.store.awaits_replay(&act.dir) {
                    // Acknowledged writes its files lack: nothing is served
                    // from memory or disk until a restart replays them.
                    tracing::error!(dir = %act.dir.display(), "the session's files could not be written; it waits for a restart's replay");
                    act.slot = Slot::Busy;
                    ctx.stop();
                    return result;
                }
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

    pub(super) fn notify(&self, kind: ChangeKind) {
        let (Some(events), Ok(core)) = (&self.events, self.slot.live()) else {
            return;
        };
        events.do_send(core.changed(kind));
    }

    /// The project's working tree as a turn baseline, for a session bound
    /// to a real project (`None` for the default project).
    pub(super) fn baseline_of(
        &self,
        project_id: Option<String>,
    ) -> Pending<Option<ProjectBaseline>> {
        match (project_id, self.projects.clone()) {
            (Some(pid), Some(projects)) if pid != DEFAULT_PROJECT => {
                Box::pin(async move { Some(project::turn::baseline(projects, pid).await) })
            }
            _ => Box::pin(std::future::ready(None)),
        }
    }

    /// Open the next turn with the oldest queued message (recording the
    /// project baseline first, like any user message).
    pub(super) fn open_queued_turn(
        &mut self,
    ) -> ResponseActFuture<Self, Result<Option<AppendOutcome>, SessionError>> {
        let project_id = self.slot.live().map(|c| c.meta().project_id.clone()).ok();
        let baseline = self.baseline_of(project_id);
        Box::pin(baseline.into_actor(self).then(|baseline, act, _| {
            act.on_core_write(move |core| core.start_queued_turn(baseline))
        }))
    }

    /// Hand a due naming pass to the titler (fire and forget).
    pub(super) fn request_title(&self, plan: Option<TitlePlan>) {
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
        let (store, dir) = (self.store.clone(), self.dir.clone());
        let load = async move {
            let guard = lease.lock_owned().await;
            let loaded =
                tokio::task::spawn_blocking(move || match SessionCore::load(&store, &dir) {
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

pub use super::writes::{
    Append, Create, Delete, EndTurnMsg, Rebind, SetAside, SetGeneratedTitle, UpdateMeta, UpdateNode,
};
