//! The cluster as the engine serves it (docs/CLUSTER.md): a created
//! session's lease and first replica push, the replica push before an end
//! of turn is acknowledged, a deleted session's lease, and the work the
//! cluster's threads hand to the engine (a taken-over session to load, a
//! lost one to set aside).

use std::sync::Arc;

use super::Engine;
use crate::cluster::{Adoption, Cluster};
use crate::error::EngineError;
use crate::manager::{Forget, Locate};
use crate::registry::actor::{Names, RowsOut};
use crate::registry::{ListQuery, Page};
use crate::session::actor::SetAside;

impl Engine {
    /// Serve as a node of `cluster`: from now on every clone of this
    /// engine checks leases and pushes replicas.
    pub fn attach_cluster(&mut self, cluster: Cluster) {
        let mut rx = cluster.adoptions();
        match cluster.share_rows() {
            Ok(rows) => self.registry.do_send(RowsOut(rows)),
            Err(e) => tracing::error!(error = %e, "the cluster's session list is not written"),
        }
        match cluster.relay_events(self.hub.clone()) {
            Ok(relay) => {
                let mut events = self.hub.subscribe();
                actix::spawn(async move {
                    use tokio::sync::broadcast::error::RecvError;
                    loop {
                        match events.recv().await {
                            Ok(e) if !e.remote => {
                                if relay.send(e.frame.to_string()).is_err() {
                                    return;
                                }
                            }
                            Ok(_) => {}
                            Err(RecvError::Lagged(n)) => {
                                tracing::warn!(missed = n, "events not relayed to the other nodes");
                            }
                            Err(RecvError::Closed) => return,
                        }
                    }
                });
            }
            Err(e) => tracing::error!(error = %e, "the cluster's event relay did not start"),
        }
        self.cluster = Some(cluster.clone());
        let engine = self.clone();
        actix::spawn(async move {
            while let Some(job) = rx.recv().await {
                engine.adoption(job).await;
            }
        });
        // Sessions taken over while this node was away go aside (on the
        // blocking pool: it asks PostgreSQL and waits for the engine).
        let store = self.store.clone();
        actix::spawn(async move {
            let done = tokio::task::spawn_blocking(move || {
                let ids: Vec<String> = store
                    .all_session_folders()
                    .map(|f| f.into_iter().map(|(id, _)| id).collect())
                    .unwrap_or_default();
                cluster.set_aside_foreign(ids)
            })
            .await;
            match done {
                Ok(Ok(n)) if n > 0 => {
                    tracing::info!(sessions = n, "sessions lost while away set aside")
                }
                Ok(Err(e)) => tracing::warn!(error = %e, "sessions lost while away not checked"),
                _ => {}
            }
        });
    }

    pub fn cluster(&self) -> Option<&Cluster> {
        self.cluster.as_ref()
    }

    /// The session list clients see: the cluster's (from PostgreSQL) on a
    /// node, this engine's own otherwise.
    pub async fn list_all(&self, query: ListQuery) -> Result<Page, EngineError> {
        let Some(cluster) = self.cluster.clone() else {
            return self.list(query).await;
        };
        let names = self
            .registry
            .send(Names)
            .await
            .map_err(|_| EngineError::Unavailable)?;
        let (total, rows) = tokio::task::spawn_blocking(move || cluster.list(&query))
            .await
            .map_err(|_| EngineError::Unavailable)??;
        Ok(Page {
            total,
            sessions: rows.into_iter().map(Arc::new).collect(),
            names,
        })
    }

    async fn adoption(&self, job: Adoption) {
        match job {
            Adoption::Adopt { id, reply } => {
                let done = async {
                    self.ask_manager(Forget { id: id.clone() }).await?;
                    self.meta(&id).await.map(|_| ())
                }
                .await;
                let _ = reply.send(done.map_err(|e: EngineError| e.to_string()));
            }
            Adoption::SetAside { id, dest, reply } => {
                let done = async {
                    self.call(&id, SetAside { dest }).await?;
                    self.ask_manager(Forget { id: id.clone() }).await?;
                    Ok::<(), EngineError>(())
                }
                .await;
                let _ = reply.send(done.map_err(|e| e.to_string()));
            }
        }
    }

    async fn on_cluster<T: Send + 'static>(
        &self,
        id: &str,
        f: impl FnOnce(Cluster, String, std::path::PathBuf) -> Result<T, crate::cluster::ClusterError>
            + Send
            + 'static,
    ) -> Result<Option<T>, EngineError> {
        let Some(cluster) = self.cluster.clone() else {
            return Ok(None);
        };
        let dir = self.ask_manager(Locate(id.to_string())).await?;
        let id = id.to_string();
        crate::stage::enter("the cluster (leases, replicas)");
        let out = tokio::task::spawn_blocking(move || f(cluster, id, dir)).await;
        crate::stage::enter("its handler");
        Ok(Some(out.map_err(|_| EngineError::Unavailable)??))
    }

    pub(super) async fn created_in_cluster(&self, id: &str) -> Result<(), EngineError> {
        self.on_cluster(id, |c, id, dir| c.created(&id, &dir))
            .await
            .map(|_| ())
    }

    pub(super) async fn replicate_in_cluster(&self, id: &str) -> Result<(), EngineError> {
        self.on_cluster(id, |c, id, dir| c.replicate(&id, &dir))
            .await
            .map(|_| ())
    }

    pub(super) async fn deleted_in_cluster(&self, id: &str) -> Result<(), EngineError> {
        self.on_cluster(id, |c, id, _| c.deleted(&id))
            .await
            .map(|_| ())
    }
}
