//! `Engine`: the async facade the service (or any embedder) calls. Each
//! call resolves the session's actor through the manager and sends it one
//! message; a request that meets an actor which just stopped is retried once
//! on a fresh actor.

use std::path::PathBuf;
use std::time::Duration;

use actix::prelude::*;

use crate::git::CommitInfo;
use crate::locations::Locations;
use crate::manager::{Forget, LiveCount, Resolve, SessionManager};
use crate::meta::{MetaPatch, SessionMeta};
use crate::node::Node;
use crate::registry::actor::{Flush, GetRow, List, Stats};
use crate::registry::startup::{self, Report};
use crate::registry::writer::Writer;
use crate::registry::{ListQuery, Page, Policy, Registry, RegistryStats, SessionRow};
use crate::session::actor::{
    Append, Create, Delete, EndTurnMsg, GetBranch, GetCommits, GetMeta, GetNodes, UpdateMeta,
    UpdateNode,
};
use crate::session::{
    AppendOutcome, EndTurn, NewNode, NodePatch, SessionActor, SessionChanged, SessionError,
    TurnOutcome,
};

/// How to run the engine.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// `<state>/sessions`.
    pub sessions_dir: PathBuf,
    /// Live session actors kept (LRU).
    pub cache_cap: usize,
    /// Automatic deletion rules applied at startup.
    pub policy: Policy,
    /// Interval of the debounced index writes.
    pub index_debounce: Duration,
}

#[derive(Clone)]
pub struct Engine {
    manager: Addr<SessionManager>,
    registry: Addr<Registry>,
}

impl Engine {
    /// Run the registry's startup maintenance (blocking: call it before
    /// serving), then start the registry and session manager actors on the
    /// current arbiter.
    pub fn start(config: EngineConfig) -> std::io::Result<(Engine, Report)> {
        crate::git::enable_fsync();
        std::fs::create_dir_all(&config.sessions_dir)?;
        let locations = Locations::load(&config.sessions_dir);
        let loaded = startup::open(&config.sessions_dir, &locations, &config.policy)?;
        let writer = Writer::spawn(config.sessions_dir.join(startup::INDEX))?;
        let registry =
            Registry::new(loaded.rows.into_values(), writer, config.index_debounce).start();
        let mut locations = locations;
        for id in &loaded.report.dropped_locations {
            locations.remove(id)?;
        }
        let manager = SessionManager::new(
            config.sessions_dir,
            locations,
            config.cache_cap,
            Some(registry.clone().recipient::<SessionChanged>()),
        )
        .start();
        Ok((Engine { manager, registry }, loaded.report))
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

    /// Delete a session and everything in its directory.
    pub async fn delete(&self, id: &str) -> Result<(), SessionError> {
        self.call(id, Delete).await??;
        self.manager
            .send(Forget { id: id.to_string() })
            .await
            .map_err(|_| SessionError::Unavailable)??;
        Ok(())
    }

    /// The session list, from memory.
    pub async fn list(&self, query: ListQuery) -> Result<Page, SessionError> {
        self.registry
            .send(List(query))
            .await
            .map_err(|_| SessionError::Unavailable)
    }

    /// One registry row, from memory.
    pub async fn row(&self, id: &str) -> Result<Option<SessionRow>, SessionError> {
        self.registry
            .send(GetRow(id.to_string()))
            .await
            .map_err(|_| SessionError::Unavailable)
    }

    /// Write index.json now and wait for it (graceful shutdown).
    pub async fn flush(&self) {
        let _ = self.registry.send(Flush).await;
    }

    pub async fn registry_stats(&self) -> Option<RegistryStats> {
        self.registry.send(Stats).await.ok()
    }

    pub async fn live_sessions(&self) -> usize {
        self.manager.send(LiveCount).await.unwrap_or(0)
    }
}
