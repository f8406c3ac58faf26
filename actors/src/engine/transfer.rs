//! Sessions leaving or entering the store as git through the engine: fork
//! (a new session from a turn), import of a bundle, export as a bundle.

use crate::error::EngineError;
use crate::ids;
use crate::manager::{Forget, Moved};
use crate::meta::SessionMeta;
use crate::project::registry::Lookup;
use crate::project::DEFAULT_PROJECT;
use crate::session::announce::AnnounceArrival;
use crate::session::messages::{Export, ForkTo};
use crate::session::SessionCore;

use super::Engine;

impl Engine {
    /// Fork session `id` into a new session (history up to `commit`, or up
    /// to the turn that committed `node_id`, or up to HEAD). The fork lives
    /// where a new session of the same project would.
    pub async fn fork(
        &self,
        id: &str,
        commit: Option<String>,
        node_id: Option<String>,
    ) -> Result<SessionMeta, EngineError> {
        self.writable()?;
        let source = self.meta(id).await?;
        let new_id = ids::new_id();
        let dest = if source.project_id == DEFAULT_PROJECT {
            self.store.default_session_dir(&new_id)
        } else {
            let (project, _) = self.ask_projects(Lookup(source.project_id.clone())).await?;
            project.session_dir(&new_id)
        };
        self.call(
            id,
            ForkTo {
                dest: dest.clone(),
                new_id: new_id.clone(),
                commit,
                node_id,
            },
        )
        .await?;
        if source.project_id != DEFAULT_PROJECT {
            self.ask_manager(Moved {
                id: new_id.clone(),
                dir: Some(dest),
            })
            .await?;
            self.attach(&source.project_id, &new_id).await;
        }
        self.announce_arrival(&new_id).await?;
        self.meta(&new_id).await
    }

    /// A session that arrived whole: its commits into the change feed.
    async fn announce_arrival(&self, id: &str) -> Result<(), EngineError> {
        self.call(id, AnnounceArrival).await.map(|_| ())
    }

    /// Register a git bundle as a new session (a new id if its id is taken).
    pub async fn import(&self, bytes: Vec<u8>) -> Result<SessionMeta, EngineError> {
        self.writable()?;
        let (store, limits) = (self.store.clone(), self.import_limits);
        // Ids of sessions in project folders are taken too.
        let taken = self
            .manager
            .send(crate::manager::Elsewhere)
            .await
            .map_err(|_| EngineError::Unavailable)?;
        let id = tokio::task::spawn_blocking(move || {
            SessionCore::import(&bytes, &store, None, limits, &taken)
        })
        .await
        .map_err(|_| EngineError::Unavailable)??;
        // An actor cached for this id (one that found no session) must go.
        self.ask_manager(Forget { id: id.clone() }).await?;
        self.announce_arrival(&id).await?;
        self.meta(&id).await
    }

    /// A git bundle of the session (every branch), for `git clone`.
    pub async fn export(&self, id: &str) -> Result<Vec<u8>, EngineError> {
        self.call(id, Export).await
    }
}
