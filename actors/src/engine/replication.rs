//! Replication as the engine serves it: the `sync` push before an end of
//! turn is acknowledged, the remotes' state, a session's state on each,
//! and `push --all`. See `crate::replication`.

use super::Engine;
use crate::error::EngineError;
use crate::manager::Locate;
use crate::replication::{RemoteView, SessionView};

impl Engine {
    /// Before an end of turn is acknowledged: push the session to its
    /// first reachable replica node (in a cluster) and to every `sync`
    /// remote (nothing to do without either).
    pub(super) async fn replicate_turn(&self, id: &str) -> Result<(), EngineError> {
        self.replicate_in_cluster(id).await?;
        let Some(rep) = self.replication.clone().filter(|r| r.has_sync()) else {
            return Ok(());
        };
        let dir = self.ask_manager(Locate(id.to_string())).await?;
        let id = id.to_string();
        crate::stage::enter("the push to a sync replication remote");
        let pushed = tokio::task::spawn_blocking(move || rep.push_now(&id, &dir)).await;
        crate::stage::enter("its handler");
        pushed.map_err(|_| EngineError::Unavailable)??;
        Ok(())
    }

    /// Session `id` wrote something it does not commit yet (an open turn's
    /// node, a note, a queued message): every remote gets it soon (see
    /// `crate::replication::open`).
    pub(super) fn replicate_open(&self, id: &str) {
        if let Some(r) = &self.replication {
            r.touch(id);
        }
    }

    /// Whether a turn waits for a remote to take it (a `sync` remote).
    pub(super) fn replicates_in_sync(&self) -> bool {
        self.replication.as_ref().is_some_and(|r| r.has_sync())
    }

    /// The configured remotes and their state (empty without any).
    pub fn replication_remotes(&self) -> Vec<RemoteView> {
        self.replication
            .as_ref()
            .map(|r| r.remotes())
            .unwrap_or_default()
    }

    /// The session's state on each remote (None without replication).
    pub fn session_replication(&self, id: &str) -> Option<Vec<SessionView>> {
        self.replication
            .as_ref()
            .filter(|r| !r.is_empty())
            .map(|r| r.session(id))
    }

    /// Queue every session for `remote` (every remote when None); the
    /// number of sessions queued. `UnknownRemote` when none has that name.
    pub async fn replicate_all(&self, remote: Option<String>) -> Result<usize, EngineError> {
        self.writable()?;
        let Some(rep) = self.replication.clone() else {
            return Err(EngineError::UnknownRemote(remote.unwrap_or_default()));
        };
        if let Some(name) = &remote {
            if rep.remote(name).is_none() {
                return Err(EngineError::UnknownRemote(name.clone()));
            }
        }
        let store = self.store.clone();
        let ids: Vec<String> = tokio::task::spawn_blocking(move || store.all_session_folders())
            .await
            .map_err(|_| EngineError::Unavailable)??
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        let n = ids.len();
        rep.push_all(remote.as_deref(), ids);
        Ok(n)
    }
}
