//! The session actor: the only writer of one session's repository.
//!
//! Every mutation moves the `SessionCore` into a blocking thread and back
//! inside an `AtomicResponse`, so operations on one session run strictly one
//! after another, git work never runs on an event-loop thread, and no lock
//! guards the core. Reads are answered from memory.

use std::path::PathBuf;
use std::sync::Arc;

use actix::prelude::*;
use tokio::sync::{Mutex, OwnedMutexGuard};

use std::future::Future;
use std::pin::Pin;

use super::branching::{BranchInfo, CheckoutTo, History, Shown, SwitchTo};
use super::core::{
    AppendOutcome, EndTurn, NewNode, NodePatch, Posted, SessionCore, TitlePlan, TurnOutcome,
};
use super::error::SessionError;
use crate::git::AgentCommit;
use crate::git::CommitInfo;
use crate::meta::{MetaPatch, SessionMeta};
use crate::meta::{ProjectBaseline, ProjectOutcome};
use crate::node::Node;
use crate::node::Role;
use crate::project::actor::{CommitTurn, Status as ProjectStatusMsg};
use crate::project::registry::Lookup;
use crate::project::{ProjectRegistry, DEFAULT_PROJECT};
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

pub struct SessionActor {
    dir: PathBuf,
    projects: Option<Addr<ProjectRegistry>>,
    naming: Option<Naming>,
    /// `None` while an operation runs on a blocking thread.
    slot: Option<Slot>,
    lease: Option<Arc<Mutex<()>>>,
    _guard: Option<OwnedMutexGuard<()>>,
    events: Option<Recipient<SessionChanged>>,
}

/// The session, or its absence (an actor may exist for an id that has no
/// session yet: the first user message creates it).
struct Slot {
    core: Option<SessionCore>,
}

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
            slot: None,
            lease: Some(lease),
            _guard: None,
            events,
        }
    }

    /// Run `f` on a blocking thread with the slot, then put it back.
    fn blocking<R, F>(&mut self, f: F) -> ResponseActFuture<Self, Result<R, SessionError>>
    where
        R: Send + 'static,
        F: FnOnce(&mut Slot, &PathBuf) -> Result<R, SessionError> + Send + 'static,
    {
        let Some(mut slot) = self.slot.take() else {
            return Box::pin(fut::ready(Err(SessionError::Unavailable)));
        };
        let dir = self.dir.clone();
        let job = tokio::task::spawn_blocking(move || {
            let result = f(&mut slot, &dir);
            (slot, result)
        });
        Box::pin(job.into_actor(self).map(|joined, act, ctx| match joined {
            Ok((slot, result)) => {
                act.slot = Some(slot);
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

    fn notify(&self, kind: ChangeKind) {
        if let (Some(events), Some(core)) = (
            &self.events,
            self.slot.as_ref().and_then(|s| s.core.as_ref()),
        ) {
            events.do_send(SessionChanged {
                meta: core.meta().clone(),
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
    }

    /// Open the next turn with the oldest queued message (recording the
    /// project baseline first, like any user message).
    fn open_queued_turn(
        &mut self,
    ) -> ResponseActFuture<Self, Result<Option<AppendOutcome>, SessionError>> {
        let project_id = self.core().map(|c| c.meta().project_id.clone()).ok();
        let baseline = match (project_id, self.projects.clone()) {
            (Some(pid), Some(projects)) if pid != DEFAULT_PROJECT => {
                Box::pin(project_baseline(projects, pid)) as Pin<Box<dyn Future<Output = _>>>
            }
            _ => Box::pin(std::future::ready(None)),
        };
        Box::pin(baseline.into_actor(self).then(|baseline, act, _| {
            act.blocking(move |slot, _| {
                slot.core
                    .as_mut()
                    .ok_or(SessionError::NotFound)?
                    .start_queued_turn(baseline)
            })
        }))
    }

    /// Hand a due naming pass to the titler (fire and forget).
    fn request_title(&self, plan: Option<TitlePlan>) {
        let (Some(plan), Some(naming), Ok(core)) = (plan, &self.naming, self.core()) else {
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

    fn core(&self) -> Result<&SessionCore, SessionError> {
        match &self.slot {
            Some(Slot { core: Some(core) }) => Ok(core),
            Some(Slot { core: None }) => Err(SessionError::NotFound),
            None => Err(SessionError::Unavailable),
        }
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
                Ok(core) => Ok(Some(core)),
                Err(SessionError::NotFound) => Ok(None),
                Err(e) => Err(e),
            })
            .await;
            (guard, loaded)
        };
        ctx.wait(load.into_actor(self).map(|(guard, loaded), act, ctx| {
            act._guard = Some(guard);
            match loaded {
                Ok(Ok(mut core)) => {
                    if let (Some(c), Some(n)) = (core.as_mut(), act.naming.as_ref()) {
                        c.set_retitle_at(n.retitle_at.clone());
                    }
                    let exists = core.is_some();
                    act.slot = Some(Slot { core });
                    if exists {
                        act.notify(ChangeKind::Loaded);
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

// ----- messages -------------------------------------------------------------

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
            if slot.core.is_some() {
                return Err(SessionError::AlreadyExists);
            }
            let (core, _) = SessionCore::create(dir, msg.meta, None)?;
            let meta = core.meta().clone();
            slot.core = Some(core);
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
        let opens_turn = match self.core() {
            Ok(core) => core.opens_turn(&msg.node),
            Err(_) => msg.node.role == Role::User && msg.node.caller.is_none(),
        };
        let project_id = match self.core() {
            Ok(core) => Some(core.meta().project_id.clone()),
            Err(_) => msg.create.as_ref().map(|m| m.project_id.clone()),
        };
        let baseline = match (opens_turn, project_id, self.projects.clone()) {
            (true, Some(pid), Some(projects)) if pid != DEFAULT_PROJECT => {
                Box::pin(project_baseline(projects, pid)) as Pin<Box<dyn Future<Output = _>>>
            }
            _ => Box::pin(std::future::ready(None)),
        };
        let fut = baseline.into_actor(self).then(move |baseline, act, _| {
            act.blocking(move |slot, dir| match (&mut slot.core, msg.create) {
                (Some(core), _) if msg.queue => core.post(msg.node, baseline),
                (Some(core), _) => core
                    .append_with(msg.node, baseline)
                    .map(|o| Posted::Appended(Box::new(o))),
                (None, Some(meta)) if msg.node.role == Role::User => {
                    let (core, outcome) =
                        SessionCore::create(dir, meta, Some((msg.node, baseline)))?;
                    slot.core = Some(core);
                    outcome
                        .map(|o| Posted::Appended(Box::new(o)))
                        .ok_or(SessionError::Unavailable)
                }
                (None, _) => Err(SessionError::NotFound),
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

/// The bound project's working tree now, as a turn baseline.
async fn project_baseline(
    projects: Addr<ProjectRegistry>,
    project_id: String,
) -> Option<ProjectBaseline> {
    let not_clean = |reason: String| ProjectBaseline {
        clean: false,
        dirty_paths: Vec::new(),
        reason: Some(reason),
    };
    let (project, actor) = match projects.send(Lookup(project_id)).await {
        Ok(Ok(found)) => found,
        Ok(Err(e)) => return Some(not_clean(format!("project unavailable: {e}"))),
        Err(_) => return Some(not_clean("project service unavailable".into())),
    };
    if !project.path.is_dir() {
        return Some(not_clean(format!(
            "the project folder {} is missing",
            project.path.display()
        )));
    }
    Some(match actor.send(ProjectStatusMsg).await {
        Ok(Ok(state)) if state.is_clean() => ProjectBaseline {
            clean: true,
            dirty_paths: Vec::new(),
            reason: None,
        },
        Ok(Ok(state)) => ProjectBaseline {
            clean: false,
            reason: Some(
                state
                    .busy
                    .unwrap_or_else(|| "you had uncommitted changes when the turn began".into()),
            ),
            dirty_paths: state.dirty,
        },
        Ok(Err(e)) => not_clean(format!("project status failed: {e}")),
        Err(_) => not_clean("project service unavailable".into()),
    })
}

/// What the project does at the end of a turn, given its baseline.
async fn project_outcome(
    projects: Addr<ProjectRegistry>,
    commit: Option<CommitTurn>,
    project_id: String,
    baseline: ProjectBaseline,
) -> ProjectOutcome {
    let skipped = |reason: String, dirty_paths: Vec<String>| ProjectOutcome::Skipped {
        reason,
        dirty_paths,
    };
    let Some(commit) = commit.filter(|_| baseline.clean) else {
        return skipped(
            baseline
                .reason
                .unwrap_or_else(|| "the working tree was not clean".into()),
            baseline.dirty_paths,
        );
    };
    let actor = match projects.send(Lookup(project_id)).await {
        Ok(Ok((_, actor))) => actor,
        Ok(Err(e)) => return skipped(format!("project unavailable: {e}"), Vec::new()),
        Err(_) => return skipped("project service unavailable".into(), Vec::new()),
    };
    match actor.send(commit).await {
        Ok(Ok(AgentCommit::Committed(oid))) => ProjectOutcome::Committed {
            commit: oid.to_string(),
        },
        Ok(Ok(AgentCommit::NoChanges)) => ProjectOutcome::NoChanges,
        Ok(Ok(AgentCommit::Refused(reason))) => skipped(reason, Vec::new()),
        Ok(Err(e)) => skipped(format!("project commit failed: {e}"), Vec::new()),
        Err(_) => skipped("project service unavailable".into(), Vec::new()),
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
        AtomicResponse::new(self.blocking(move |slot, _| {
            slot.core
                .as_mut()
                .ok_or(SessionError::NotFound)?
                .update_node(&msg.node_id, msg.patch)
        }))
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
        let plan = self.core().ok().and_then(|core| {
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
        let outcome = match (plan, self.projects.clone()) {
            (Some((pid, baseline, commit)), Some(projects)) => Box::pin(async move {
                Some(project_outcome(projects, Some(commit), pid, baseline).await)
            })
                as Pin<Box<dyn Future<Output = Option<ProjectOutcome>>>>,
            (Some((pid, baseline, _)), None) => {
                Box::pin(async move { Some(project_outcome_offline(pid, baseline)) })
            }
            _ => Box::pin(std::future::ready(None)),
        };
        let fut = outcome.into_actor(self).then(move |project, act, _| {
            act.blocking(move |slot, _| {
                slot.core
                    .as_mut()
                    .ok_or(SessionError::NotFound)?
                    .end_turn(msg.0, project)
            })
        });
        let fut = fut.map(|res, act: &mut SessionActor, _| {
            if let Ok(out) = &res {
                act.request_title(out.title_plan.clone());
            }
            res
        });
        // A queued user message opens the next turn right away.
        let fut = fut.then(
            |res,
             act: &mut SessionActor,
             _|
             -> ResponseActFuture<SessionActor, Result<TurnOutcome, SessionError>> {
                let ready = act.core().map(|c| c.next_queued_ready()).unwrap_or(false);
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

/// Without a project service (an engine embedded without projects).
fn project_outcome_offline(project_id: String, baseline: ProjectBaseline) -> ProjectOutcome {
    ProjectOutcome::Skipped {
        reason: baseline
            .reason
            .unwrap_or_else(|| format!("project {project_id} is not available")),
        dirty_paths: baseline.dirty_paths,
    }
}

impl Handler<ApplyTitle> for SessionActor {
    type Result = AtomicResponse<Self, ()>;

    fn handle(&mut self, msg: ApplyTitle, _: &mut Self::Context) -> Self::Result {
        let fut = self.blocking(move |slot, _| {
            let core = slot.core.as_mut().ok_or(SessionError::NotFound)?;
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
        let fut = self.blocking(move |slot, _| {
            let core = slot.core.as_mut().ok_or(SessionError::NotFound)?;
            core.apply_title(&msg.0, 0, None, true)?;
            Ok(core.meta().clone())
        });
        notify_after(fut, ChangeKind::Updated)
    }
}

/// The input for a title right now: the last 20 messages, and the model.
#[derive(Message, Clone)]
#[rtype(result = "Result<(String, Option<String>), SessionError>")]
pub struct TitleInput;

impl Handler<TitleInput> for SessionActor {
    type Result = Result<(String, Option<String>), SessionError>;

    fn handle(&mut self, _: TitleInput, _: &mut Self::Context) -> Self::Result {
        let core = self.core()?;
        Ok((core.recent_messages(20), core.meta().model.clone()))
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
        let fut = self.blocking(move |slot, _| {
            slot.core
                .as_mut()
                .ok_or(SessionError::NotFound)?
                .rebind(&msg.project_id, &msg.dir)
        });
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
        let fut = self.blocking(move |slot, _| {
            let patch = msg.0;
            let core = slot.core.as_mut().ok_or(SessionError::NotFound)?;
            Ok(core.update_meta(|m| patch.apply(m))?.clone())
        });
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
        let fut = self.blocking(move |slot, dir| {
            if slot.core.is_none() {
                return Err(SessionError::NotFound);
            }
            crate::registry::startup::remove_session_dir(dir)?;
            Ok(())
        });
        AtomicResponse::new(Box::pin(fut.map(|res, act, _| {
            if res.is_ok() {
                act.notify(ChangeKind::Deleted);
                if let Some(slot) = act.slot.as_mut() {
                    slot.core = None;
                }
            }
            res
        })))
    }
}

/// Snapshot of the metadata (the live `updated_at` included).
#[derive(Message, Clone)]
#[rtype(result = "Result<SessionMeta, SessionError>")]
pub struct GetMeta;

impl Handler<GetMeta> for SessionActor {
    type Result = Result<SessionMeta, SessionError>;

    fn handle(&mut self, _: GetMeta, _: &mut Self::Context) -> Self::Result {
        Ok(self.core()?.meta().clone())
    }
}

/// Fork the session into a new one at `dest` (see `SessionCore::fork`).
/// Returns the commit the fork starts from.
#[derive(Message, Clone)]
#[rtype(result = "Result<String, SessionError>")]
pub struct ForkTo {
    pub dest: PathBuf,
    pub new_id: String,
    pub commit: Option<String>,
    pub node_id: Option<String>,
}

impl Handler<ForkTo> for SessionActor {
    type Result = AtomicResponse<Self, Result<String, SessionError>>;

    fn handle(&mut self, msg: ForkTo, _: &mut Self::Context) -> Self::Result {
        AtomicResponse::new(self.blocking(move |slot, _| {
            let core = slot.core.as_ref().ok_or(SessionError::NotFound)?;
            core.fork(
                msg.commit.as_deref(),
                msg.node_id.as_deref(),
                &msg.dest,
                &msg.new_id,
            )
        }))
    }
}

/// A git bundle of the session's repository (all branches).
#[derive(Message, Clone)]
#[rtype(result = "Result<Vec<u8>, SessionError>")]
pub struct Export;

impl Handler<Export> for SessionActor {
    type Result = AtomicResponse<Self, Result<Vec<u8>, SessionError>>;

    fn handle(&mut self, _: Export, _: &mut Self::Context) -> Self::Result {
        AtomicResponse::new(self.blocking(|slot, _| {
            slot.core
                .as_ref()
                .ok_or(SessionError::NotFound)?
                .export_bundle()
        }))
    }
}

/// Where the session's directory is.
#[derive(Message, Clone)]
#[rtype(result = "Result<PathBuf, SessionError>")]
pub struct GetDir;

impl Handler<GetDir> for SessionActor {
    type Result = Result<PathBuf, SessionError>;

    fn handle(&mut self, _: GetDir, _: &mut Self::Context) -> Self::Result {
        self.core()?;
        Ok(self.dir.clone())
    }
}

/// The rendered conversation ending at `head` (default: current head).
#[derive(Message, Clone)]
#[rtype(result = "Result<Vec<Node>, SessionError>")]
pub struct GetBranch {
    pub head: Option<String>,
}

impl Handler<GetBranch> for SessionActor {
    type Result = Result<Vec<Node>, SessionError>;

    fn handle(&mut self, msg: GetBranch, _: &mut Self::Context) -> Self::Result {
        self.core()?.branch(msg.head.as_deref())
    }
}

/// Every node of every branch, in sequence order.
#[derive(Message, Clone)]
#[rtype(result = "Result<Vec<Node>, SessionError>")]
pub struct GetNodes;

impl Handler<GetNodes> for SessionActor {
    type Result = Result<Vec<Node>, SessionError>;

    fn handle(&mut self, _: GetNodes, _: &mut Self::Context) -> Self::Result {
        Ok(self.core()?.nodes().to_vec())
    }
}

#[derive(Message, Clone)]
#[rtype(result = "Result<Vec<CommitInfo>, SessionError>")]
pub struct GetCommits {
    pub limit: usize,
}

impl Handler<GetCommits> for SessionActor {
    type Result = AtomicResponse<Self, Result<Vec<CommitInfo>, SessionError>>;

    fn handle(&mut self, msg: GetCommits, _: &mut Self::Context) -> Self::Result {
        AtomicResponse::new(self.blocking(move |slot, _| {
            slot.core
                .as_ref()
                .ok_or(SessionError::NotFound)?
                .commits(msg.limit)
        }))
    }
}

/// Every branch of the session.
#[derive(Message, Clone)]
#[rtype(result = "Result<Vec<BranchInfo>, SessionError>")]
pub struct GetBranches;

impl Handler<GetBranches> for SessionActor {
    type Result = AtomicResponse<Self, Result<Vec<BranchInfo>, SessionError>>;

    fn handle(&mut self, _: GetBranches, _: &mut Self::Context) -> Self::Result {
        AtomicResponse::new(
            self.blocking(|slot, _| slot.core.as_ref().ok_or(SessionError::NotFound)?.branches()),
        )
    }
}

/// The timeline of every commit and the replay position.
#[derive(Message, Clone)]
#[rtype(result = "Result<History, SessionError>")]
pub struct GetHistory;

impl Handler<GetHistory> for SessionActor {
    type Result = AtomicResponse<Self, Result<History, SessionError>>;

    fn handle(&mut self, _: GetHistory, _: &mut Self::Context) -> Self::Result {
        AtomicResponse::new(
            self.blocking(|slot, _| slot.core.as_ref().ok_or(SessionError::NotFound)?.history()),
        )
    }
}

/// Replay: show the conversation at a commit (see `SessionCore::checkout`).
#[derive(Message, Clone)]
#[rtype(result = "Result<Shown, SessionError>")]
pub struct Checkout(pub CheckoutTo);

impl Handler<Checkout> for SessionActor {
    type Result = AtomicResponse<Self, Result<Shown, SessionError>>;

    fn handle(&mut self, msg: Checkout, _: &mut Self::Context) -> Self::Result {
        let fut = self.blocking(move |slot, _| {
            slot.core
                .as_mut()
                .ok_or(SessionError::NotFound)?
                .checkout(msg.0)
        });
        notify_after(fut, ChangeKind::Updated)
    }
}

/// Switch the head (and git's branch) (see `SessionCore::switch`).
#[derive(Message, Clone)]
#[rtype(result = "Result<Shown, SessionError>")]
pub struct Switch(pub SwitchTo);

impl Handler<Switch> for SessionActor {
    type Result = AtomicResponse<Self, Result<Shown, SessionError>>;

    fn handle(&mut self, msg: Switch, _: &mut Self::Context) -> Self::Result {
        let fut = self.blocking(move |slot, _| {
            slot.core
                .as_mut()
                .ok_or(SessionError::NotFound)?
                .switch(msg.0)
        });
        notify_after(fut, ChangeKind::Updated)
    }
}

/// Send a change event after a successful mutation.
fn notify_after<R: 'static>(
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
