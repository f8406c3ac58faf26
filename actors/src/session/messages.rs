//! The session actor's read-only messages (from memory, or for node
//! contents read on a blocking thread) and its
//! git views: the commit log, branches, history, replay and head switches,
//! fork and export (run on a blocking thread like every git step).

use std::path::PathBuf;

use actix::prelude::*;

use super::actor::{notify_after, SessionActor};
use super::branching::{BranchInfo, CheckoutTo, History, Shown, SwitchTo};
use super::contexts::ContextRecord;
use super::error::SessionError;
use crate::git::CommitInfo;
use crate::messages::ChangeKind;
use crate::meta::SessionMeta;
use crate::node::Node;

/// Snapshot of the metadata (the live `updated_at` included).
#[derive(Message, Clone)]
#[rtype(result = "Result<SessionMeta, SessionError>")]
pub struct GetMeta;

impl Handler<GetMeta> for SessionActor {
    type Result = Result<SessionMeta, SessionError>;

    fn handle(&mut self, _: GetMeta, _: &mut Self::Context) -> Self::Result {
        let core = self.slot.live()?;
        let mut meta = core.meta().clone();
        meta.commit_pending = core.commit_is_pending();
        Ok(meta)
    }
}

/// Where the session's directory is.
#[derive(Message, Clone)]
#[rtype(result = "Result<PathBuf, SessionError>")]
pub struct GetDir;

impl Handler<GetDir> for SessionActor {
    type Result = Result<PathBuf, SessionError>;

    fn handle(&mut self, _: GetDir, _: &mut Self::Context) -> Self::Result {
        self.slot.live()?;
        Ok(self.dir.clone())
    }
}

/// The input for a title right now: the last 20 messages, and the model.
#[derive(Message, Clone)]
#[rtype(result = "Result<(String, Option<String>), SessionError>")]
pub struct TitleInput;

impl Handler<TitleInput> for SessionActor {
    type Result = AtomicResponse<Self, Result<(String, Option<String>), SessionError>>;

    fn handle(&mut self, _: TitleInput, _: &mut Self::Context) -> Self::Result {
        AtomicResponse::new(
            self.on_core(|core| Ok((core.recent_messages(20), core.meta().model.clone()))),
        )
    }
}

/// The rendered conversation ending at `head` (default: current head).
#[derive(Message, Clone)]
#[rtype(result = "Result<Vec<Node>, SessionError>")]
pub struct GetBranch {
    pub head: Option<String>,
}

impl Handler<GetBranch> for SessionActor {
    type Result = AtomicResponse<Self, Result<Vec<Node>, SessionError>>;

    fn handle(&mut self, msg: GetBranch, _: &mut Self::Context) -> Self::Result {
        AtomicResponse::new(self.on_core(move |core| core.branch(msg.head.as_deref())))
    }
}

/// Every node of every branch, in sequence order.
#[derive(Message, Clone)]
#[rtype(result = "Result<Vec<Node>, SessionError>")]
pub struct GetNodes;

impl Handler<GetNodes> for SessionActor {
    type Result = AtomicResponse<Self, Result<Vec<Node>, SessionError>>;

    fn handle(&mut self, _: GetNodes, _: &mut Self::Context) -> Self::Result {
        AtomicResponse::new(self.on_core(|core| core.nodes()))
    }
}

/// Whether the session has a node with this id (any branch).
#[derive(Message, Clone)]
#[rtype(result = "Result<bool, SessionError>")]
pub struct HasNode(pub String);

impl Handler<HasNode> for SessionActor {
    type Result = Result<bool, SessionError>;

    fn handle(&mut self, msg: HasNode, _: &mut Self::Context) -> Self::Result {
        Ok(self.slot.live()?.node(&msg.0).is_some())
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
        AtomicResponse::new(self.on_core(move |core| core.commits(msg.limit)))
    }
}

/// Every branch of the session.
#[derive(Message, Clone)]
#[rtype(result = "Result<Vec<BranchInfo>, SessionError>")]
pub struct GetBranches;

impl Handler<GetBranches> for SessionActor {
    type Result = AtomicResponse<Self, Result<Vec<BranchInfo>, SessionError>>;

    fn handle(&mut self, _: GetBranches, _: &mut Self::Context) -> Self::Result {
        AtomicResponse::new(self.on_core(|core| core.branches()))
    }
}

/// The timeline of every commit and the replay position.
#[derive(Message, Clone)]
#[rtype(result = "Result<History, SessionError>")]
pub struct GetHistory;

impl Handler<GetHistory> for SessionActor {
    type Result = AtomicResponse<Self, Result<History, SessionError>>;

    fn handle(&mut self, _: GetHistory, _: &mut Self::Context) -> Self::Result {
        AtomicResponse::new(self.on_core(|core| core.history()))
    }
}

/// The context snapshots of the path shown now, newest first.
#[derive(Message, Clone)]
#[rtype(result = "Result<Vec<ContextRecord>, SessionError>")]
pub struct GetContexts {
    pub limit: usize,
}

impl Handler<GetContexts> for SessionActor {
    type Result = AtomicResponse<Self, Result<Vec<ContextRecord>, SessionError>>;

    fn handle(&mut self, msg: GetContexts, _: &mut Self::Context) -> Self::Result {
        AtomicResponse::new(self.on_core(move |core| core.contexts(msg.limit)))
    }
}

/// One context snapshot of the path shown now.
#[derive(Message, Clone)]
#[rtype(result = "Result<ContextRecord, SessionError>")]
pub struct GetContext(pub String);

impl Handler<GetContext> for SessionActor {
    type Result = AtomicResponse<Self, Result<ContextRecord, SessionError>>;

    fn handle(&mut self, msg: GetContext, _: &mut Self::Context) -> Self::Result {
        AtomicResponse::new(self.on_core(move |core| core.context(&msg.0)))
    }
}

/// Replay: show the conversation at a commit (see `SessionCore::checkout`).
#[derive(Message, Clone)]
#[rtype(result = "Result<Shown, SessionError>")]
pub struct Checkout(pub CheckoutTo);

impl Handler<Checkout> for SessionActor {
    type Result = AtomicResponse<Self, Result<Shown, SessionError>>;

    fn handle(&mut self, msg: Checkout, _: &mut Self::Context) -> Self::Result {
        notify_after(
            self.on_core_write(move |core| core.checkout(msg.0)),
            ChangeKind::Updated,
        )
    }
}

/// Switch the head (and git's branch) (see `SessionCore::switch`).
#[derive(Message, Clone)]
#[rtype(result = "Result<Shown, SessionError>")]
pub struct Switch(pub SwitchTo);

impl Handler<Switch> for SessionActor {
    type Result = AtomicResponse<Self, Result<Shown, SessionError>>;

    fn handle(&mut self, msg: Switch, _: &mut Self::Context) -> Self::Result {
        notify_after(
            self.on_core_write(move |core| core.switch(msg.0)),
            ChangeKind::Updated,
        )
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
        AtomicResponse::new(self.on_core(move |core| {
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
        AtomicResponse::new(self.on_core(|core| core.export_bundle()))
    }
}
