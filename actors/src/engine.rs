//! `Engine`: the async facade the service (or any embedder) calls. Each
//! call resolves the session's actor through the manager and sends it one
//! message; a request that meets an actor which just stopped is retried once
//! on a fresh actor.

use std::path::PathBuf;

use actix::prelude::*;

use crate::git::CommitInfo;
use crate::manager::{LiveCount, Resolve, SessionManager};
use crate::meta::{MetaPatch, SessionMeta};
use crate::node::Node;
use crate::session::actor::{
    Append, Create, EndTurnMsg, GetBranch, GetCommits, GetMeta, GetNodes, UpdateMeta, UpdateNode,
};
use crate::session::{
    AppendOutcome, EndTurn, NewNode, NodePatch, SessionActor, SessionChanged, SessionError,
    TurnOutcome,
};

#[derive(Clone)]
pub struct Engine {
    manager: Addr<SessionManager>,
}

impl Engine {
    /// Start the engine's manager on the current arbiter.
    pub fn start(
        sessions_dir: PathBuf,
        cache_cap: usize,
        events: Option<Recipient<SessionChanged>>,
    ) -> Engine {
        crate::git::enable_fsync();
        Engine {
            manager: SessionManager::new(sessions_dir, cache_cap, events).start(),
        }
    }

    async fn call<M>(&self, id: &str, msg: M) -> Result<M::Result, SessionError>
    where
        M: Message + Clone + Send + 'static,
        M::Result: Send,
        SessionActor: Handler<M>,
    {
        for _ in 0..2 {
            let addr = self
                .manager
                .send(Resolve { id: id.to_string() })
                .await
                .map_err(|_| SessionError::Unavailable)??;
            match addr.send(msg.clone()).await {
                Ok(r) => return Ok(r),
                Err(MailboxError::Closed) => continue,
                Err(MailboxError::Timeout) => return Err(SessionError::Unavailable),
            }
        }
        Err(SessionError::Unavailable)
    }

    pub async fn create(&self, id: &str, meta: SessionMeta) -> Result<SessionMeta, SessionError> {
        self.call(id, Create { meta }).await?
    }

    /// Append a node; `create` makes the session on its first user message.
    pub async fn append(
        &self,
        id: &str,
        node: NewNode,
        create: Option<SessionMeta>,
    ) -> Result<AppendOutcome, SessionError> {
        self.call(id, Append { node, create }).await?
    }

    pub async fn update_node(
        &self,
        id: &str,
        node_id: &str,
        patch: NodePatch,
    ) -> Result<Node, SessionError> {
        self.call(
            id,
            UpdateNode {
                node_id: node_id.to_string(),
                patch,
            },
        )
        .await?
    }

    pub async fn end_turn(&self, id: &str, req: EndTurn) -> Result<TurnOutcome, SessionError> {
        self.call(id, EndTurnMsg(req)).await?
    }

    pub async fn update_meta(
        &self,
        id: &str,
        patch: MetaPatch,
    ) -> Result<SessionMeta, SessionError> {
        self.call(id, UpdateMeta(patch)).await?
    }

    pub async fn meta(&self, id: &str) -> Result<SessionMeta, SessionError> {
        self.call(id, GetMeta).await?
    }

    pub async fn branch(&self, id: &str, head: Option<String>) -> Result<Vec<Node>, SessionError> {
        self.call(id, GetBranch { head }).await?
    }

    pub async fn nodes(&self, id: &str) -> Result<Vec<Node>, SessionError> {
        self.call(id, GetNodes).await?
    }

    pub async fn commits(&self, id: &str, limit: usize) -> Result<Vec<CommitInfo>, SessionError> {
        self.call(id, GetCommits { limit }).await?
    }

    pub async fn live_sessions(&self) -> usize {
        self.manager.send(LiveCount).await.unwrap_or(0)
    }
}
