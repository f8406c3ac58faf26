//! The replica side of a push: one bare repository per session under
//! `<state>/cluster/replicas/<id>.git`, the highest epoch it has seen in
//! `openprogram-epoch.json` beside its refs.

use std::io::Write;
use std::path::{Path, PathBuf};

use git2::{Oid, Repository};
use serde::{Deserialize, Serialize};

use super::error::ClusterError;
use super::wire::Push;
use crate::fsio;
use crate::replication::SessionLocks;

const EPOCH_FILE: &str = "openprogram-epoch.json";
/// The session's `meta.json` as its owner last pushed it.
pub const META_FILE: &str = "openprogram-meta.json";

/// The epoch a replica has seen, and from which owner.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Seen {
    epoch: i64,
    owner: String,
}

pub struct Replicas {
    root: PathBuf,
    locks: SessionLocks,
}

impl Replicas {
    pub fn new(root: PathBuf) -> Replicas {
        Replicas {
            root,
            locks: SessionLocks::default(),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn dir(&self, id: &str) -> PathBuf {
        self.root.join(format!("{id}.git"))
    }

    /// Take a push: refused when its epoch is older than one seen; the
    /// objects written (fsync'd) and every tip checked before a ref moves;
    /// the epoch recorded before the refs. The branches after.
    pub fn receive(&self, id: &str, push: &Push) -> Result<Vec<(String, Oid)>, ClusterError> {
        crate::ids::validate("session id", id).map_err(|e| ClusterError::BadPush(e.to_string()))?;
        let _held = self.locks.hold(id);
        let dir = self.dir(id);
        if !dir.exists() {
            fsio::build_dir_atomically(&self.root, "replica", |tmp| {
                Repository::init_bare(tmp)?;
                Ok::<_, ClusterError>((dir.clone(), ()))
            })?;
        }
        let repo = Repository::open_bare(&dir)?;
        let seen: Seen = fsio::read_json(&dir.join(EPOCH_FILE)).unwrap_or_default();
        if push.header.epoch < seen.epoch {
            return Err(ClusterError::StaleEpoch {
                got: push.header.epoch,
                seen: seen.epoch,
            });
        }
        // Every commit here has its whole history (a pack is only taken
        // on top of commits already here), so a base found is complete.
        for base in &push.header.base {
            let found = Oid::from_str(base)
                .ok()
                .and_then(|o| repo.find_commit(o).ok());
            if found.is_none() {
                return Err(ClusterError::ReplicaBehind);
            }
        }
        if !push.pack.is_empty() {
            let odb = repo.odb()?;
            let mut writer = odb.packwriter()?;
            writer.write_all(&push.pack)?;
            writer.commit()?;
        }
        let tips = push.tips();
        for (_, oid) in &tips {
            if repo.find_commit(*oid).is_err() {
                return Err(ClusterError::ReplicaBehind);
            }
        }
        if push.header.epoch > seen.epoch || seen.owner != push.header.owner {
            fsio::atomic_write_json(
                &dir.join(EPOCH_FILE),
                &Seen {
                    epoch: push.header.epoch,
                    owner: push.header.owner.clone(),
                },
            )?;
        }
        if let Some(meta) = &push.header.meta {
            fsio::atomic_write_json(&dir.join(META_FILE), meta)?;
        }
        for (name, oid) in &tips {
            repo.reference(name, *oid, true, "replica push")?;
        }
        let gone: Vec<String> = crate::replication::push::local_branches(&repo)?
            .into_iter()
            .map(|(n, _)| n)
            .filter(|n| !tips.iter().any(|(t, _)| t == n))
            .collect();
        for name in gone {
            repo.find_reference(&name)?.delete()?;
        }
        if let Some(head) = &push.header.head {
            if tips.iter().any(|(n, _)| n == head) {
                repo.reference_symbolic("HEAD", head, true, "replica push")?;
            }
        }
        if push.header.purged {
            // The old history goes: its objects may hold the secrets.
            crate::git::rewrite::keep_only_reachable(&repo)
                .map_err(|e| ClusterError::BadPush(e.to_string()))?;
        // Acknowledged already durable; a failed merge only leaves packs.
        } else if let Err(e) = super::replica_packs::tidy(&repo, &dir) {
            tracing::warn!(session = %id, error = %e, "replica packs not merged");
        }
        Ok(tips)
    }

    /// Hold the session's replica still (no push, no pack merge) while it
    /// is read from.
    pub fn hold(&self, id: &str) -> crate::replication::Held<'_> {
        self.locks.hold(id)
    }

    /// A deleted session's replica goes.
    pub fn remove(&self, id: &str) -> Result<(), ClusterError> {
        crate::ids::validate("session id", id).map_err(|e| ClusterError::BadPush(e.to_string()))?;
        let _held = self.locks.hold(id);
        match std::fs::remove_dir_all(self.dir(id)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
            _ => Ok(()),
        }
    }
}
