//! Purge as the engine serves it: the session's history rewritten by its
//! actor (`session::purge`), then its search entries made again, and the
//! rewritten branches pushed to every replication remote (under a lease on
//! the old commits) and every cluster replica (which drop the old objects).

use serde::Serialize;

use super::Engine;
use crate::error::EngineError;
use crate::manager::Locate;
use crate::registry::ListQuery;
use crate::session::purge::{Purge, PurgeRecord};

/// What a purge of one session did.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Purged {
    pub session: String,
    /// None: nothing held a secret, nothing changed.
    pub record: Option<PurgeRecord>,
    /// Remotes and replicas that did not take the rewritten branches, with
    /// why (a diverged remote is reported, never overwritten; the others
    /// are retried in the background).
    pub not_pushed: Vec<String>,
}

impl Engine {
    /// Purge session `id`; `by` names who asked.
    pub async fn purge(&self, id: &str, by: &str) -> Result<Purged, EngineError> {
        let done = self.purge_one(id, by).await?;
        if done.record.is_some() {
            // index.json written whole and its journal emptied: no line of
            // it keeps an old title or preview.
            self.flush().await;
        }
        Ok(done)
    }

    async fn purge_one(&self, id: &str, by: &str) -> Result<Purged, EngineError> {
        self.writable()?;
        let record = self.call(id, Purge { by: by.to_string() }).await?;
        let mut not_pushed = Vec::new();
        if record.is_some() {
            let dir = self.ask_manager(Locate(id.to_string())).await?;
            if let Some(search) = &self.search {
                let title = self
                    .row(id)
                    .await?
                    .map(|r| r.search_title())
                    .unwrap_or_default();
                search.do_send(crate::search::Expunge {
                    id: id.to_string(),
                    dir: dir.clone(),
                    title,
                });
            }
            let (rep, cluster) = (self.replication.clone(), self.cluster.clone());
            let sid = id.to_string();
            let pushed = tokio::task::spawn_blocking(move || {
                let mut failed = Vec::new();
                if let Some(rep) = rep {
                    failed.extend(rep.push_purged(&sid, &dir));
                }
                if let Some(cluster) = cluster {
                    failed.extend(cluster.replicate_purged(&sid, &dir));
                }
                failed
            })
            .await
            .map_err(|_| EngineError::Unavailable)?;
            not_pushed = pushed;
            self.search_flush().await;
        }
        tracing::info!(session = %id, by = %by, purged = record.is_some(), "purge");
        Ok(Purged {
            session: id.to_string(),
            record,
            not_pushed,
        })
    }

    /// Purge every session, one after another; those that changed.
    pub async fn purge_all(&self, by: &str) -> Result<Vec<Purged>, EngineError> {
        self.writable()?;
        let page = self.list(ListQuery::everything(None)).await?;
        let mut out = Vec::new();
        for row in page.sessions {
            let done = self.purge_one(&row.id, by).await?;
            if done.record.is_some() {
                out.push(done);
            }
        }
        if !out.is_empty() {
            self.flush().await;
        }
        Ok(out)
    }

    /// The purges recorded for session `id`, oldest first.
    pub async fn purges(&self, id: &str) -> Result<Vec<PurgeRecord>, EngineError> {
        self.meta(id).await?;
        let dir = self.ask_manager(Locate(id.to_string())).await?;
        tokio::task::spawn_blocking(move || crate::session::purge::records(&dir))
            .await
            .map_err(|_| EngineError::Unavailable)?
            .map_err(EngineError::from)
    }
}
