//! A claimed session made servable on this node: its replica repository
//! restored into `<state>/sessions/` (a folder this node had for it before
//! is set aside first), registered with the engine, pushed to its new first
//! replica; then served. A session lost to another node is set aside.

use std::path::PathBuf;
use std::sync::atomic::Ordering;

use super::db::LeaseRow;
use super::{lock, Cluster};
use crate::replication::{Layout, RemoteConfig};

/// Work only the engine can do, sent by the cluster's threads; each
/// answers on its `reply`.
pub enum Adoption {
    /// A restored session folder to load and list.
    Adopt {
        id: String,
        reply: crossbeam_channel::Sender<Result<(), String>>,
    },
    /// Stop serving the session and move its folder to `dest`.
    SetAside {
        id: String,
        dest: PathBuf,
        reply: crossbeam_channel::Sender<Result<(), String>>,
    },
}

/// Attempts at making one claimed session servable.
const ATTEMPTS: u32 = 50;

impl Cluster {
    pub(super) fn takeover_loop(&self, rx: crossbeam_channel::Receiver<LeaseRow>) {
        while let Ok(row) = rx.recv() {
            let mut attempt = 0;
            loop {
                if self.inner.stop.load(Ordering::Relaxed) {
                    return;
                }
                attempt += 1;
                match self.make_servable(&row) {
                    Ok(()) => {
                        tracing::info!(session = %row.session, epoch = row.epoch, "taken over");
                        break;
                    }
                    Err(e) if attempt < ATTEMPTS => {
                        tracing::warn!(session = %row.session, error = %e, attempt, "takeover failed; retrying");
                        std::thread::sleep(self.retry_pause());
                    }
                    Err(e) => {
                        tracing::error!(session = %row.session, error = %e, "takeover gave up; the session stays moving until a restart");
                        break;
                    }
                }
            }
        }
    }

    fn make_servable(&self, row: &LeaseRow) -> Result<(), String> {
        let id = &row.session;
        let store = &self.inner.store;
        let dir = store.default_session_dir(id);
        if dir.exists() {
            self.engine_does(|reply| Adoption::SetAside {
                id: id.clone(),
                dest: self.fenced_dir(id, row.epoch - 1),
                reply,
            })?;
        }
        let remote = RemoteConfig {
            name: "cluster".into(),
            url: format!(
                "file://{}/{{session_id}}.git",
                self.inner.replicas.root().display()
            ),
            ..RemoteConfig::default()
        };
        debug_assert_eq!(remote.layout(), Layout::PerSession);
        let held = self.inner.replicas.hold(id);
        let done = crate::replication::restore::restore(
            store,
            &remote,
            std::slice::from_ref(id),
            &Default::default(),
            |_| {},
        )
        .map_err(|e| e.to_string())?;
        drop(held);
        if let Some((_, why)) = done.failed.first() {
            return Err(why.clone());
        }
        if done.restored.is_empty() && done.present.is_empty() {
            // Claimed for a write that never made an acknowledged turn:
            // there is nothing to serve, and the lease goes.
            let me = self.inner.config.node_id.clone();
            self.with_db(|c| super::db::release(c, id, &me))
                .map_err(|e| e.to_string())?;
            lock(&self.inner.state).owned.remove(id);
            lock(&self.inner.moving).remove(id);
            tracing::info!(session = %id, "taken over with no copy (never acknowledged): released");
            return Ok(());
        }
        // A rename or flag acknowledged after the last turn travelled as
        // the replica's meta file: the newer of the two is the session's.
        self.newer_meta(id, &dir)?;
        self.engine_does(|reply| Adoption::Adopt {
            id: id.clone(),
            reply,
        })?;
        lock(&self.inner.moving).remove(id);
        // Two copies again before anything new is acknowledged: the first
        // end of turn pushes everything to the new first replica anyway.
        if let Err(e) = self.replicate(id, &dir) {
            tracing::warn!(session = %id, error = %e, "the new replica has no copy yet");
        }
        Ok(())
    }

    /// At a start: the sessions on this disk that another node took over
    /// while this one was away are set aside (a node only learns of losses
    /// it sees happen otherwise). Blocking.
    pub fn set_aside_foreign(&self, ids: Vec<String>) -> Result<usize, super::ClusterError> {
        let me = self.inner.config.node_id.clone();
        let foreign = self.with_db(|c| super::db::held_elsewhere(c, &me, &ids))?;
        for (id, epoch) in &foreign {
            tracing::warn!(session = %id, epoch, "taken over while this node was away: the local copy is set aside");
            self.set_aside(id, *epoch);
        }
        Ok(foreign.len())
    }

    fn newer_meta(&self, id: &str, dir: &std::path::Path) -> Result<(), String> {
        let pushed = self.inner.replicas.dir(id).join(super::replica::META_FILE);
        let Ok(pushed) = crate::fsio::read_json::<serde_json::Value>(&pushed) else {
            return Ok(());
        };
        let path = dir.join(crate::session::layout::META);
        let restored: serde_json::Value = crate::fsio::read_json(&path).unwrap_or_default();
        let newer = pushed["updated_at"].as_f64().unwrap_or(0.0)
            >= restored["updated_at"].as_f64().unwrap_or(0.0);
        if newer && pushed["id"] == restored["id"] && pushed != restored {
            crate::fsio::atomic_write_json(&path, &pushed).map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// Where a lost session's folder is kept.
    fn fenced_dir(&self, id: &str, epoch: i64) -> PathBuf {
        self.inner
            .store
            .state_dir()
            .join(super::DIR)
            .join("fenced")
            .join(format!("{id}-{epoch}"))
    }

    /// A session another node owns now: its actor stops, its folder is kept
    /// in `cluster/fenced/`.
    pub(super) fn set_aside(&self, id: &str, epoch: i64) {
        if !self.inner.store.default_session_dir(id).exists() {
            return;
        }
        let dest = self.fenced_dir(id, epoch);
        if let Err(e) = self.engine_does(|reply| Adoption::SetAside {
            id: id.to_string(),
            dest,
            reply,
        }) {
            tracing::error!(session = %id, error = %e, "lost session not set aside");
        }
    }

    fn engine_does(
        &self,
        make: impl FnOnce(crossbeam_channel::Sender<Result<(), String>>) -> Adoption,
    ) -> Result<(), String> {
        let (reply, answer) = crossbeam_channel::bounded(1);
        let tx = lock(&self.inner.adoptions)
            .clone()
            .ok_or("the engine has not attached the cluster")?;
        tx.send(make(reply)).map_err(|_| "the engine stopped")?;
        answer
            .recv_timeout(std::time::Duration::from_secs(60))
            .map_err(|_| "the engine did not answer".to_string())?
    }
}
