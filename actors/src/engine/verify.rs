//! Startup validation (spec 001 §6, "validate DAG seq vs git commit count
//! on startup, trigger a backfill on mismatch"), in the background once the
//! server is up: every session whose recorded last turn is newer than its
//! newest commit (a branch moved back from outside, a commit lost with a
//! disk) or whose HEAD was detached from outside is loaded, and loading
//! repairs it (`SessionCore::load`: the missing turns are committed again,
//! HEAD goes back on its branch). The scan reads one `meta.json` and the
//! branch tips of each session, on a blocking thread; sessions that need
//! nothing are never loaded.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::Engine;
use crate::git;
use crate::meta::SessionMeta;

/// The check starts this long after the engine: it opens every session's
/// repository, which would share the cores with the server's first answers
/// (as the search index's startup pass, which waits as long).
const START_AFTER: Duration = Duration::from_millis(500);

/// Whether the session at `dir` needs the repair a load does.
pub fn needs_repair(dir: &Path) -> bool {
    let Ok(meta) = SessionMeta::read_lenient(&dir.join("meta.json")) else {
        return false;
    };
    let Ok(repo) = git2::Repository::open(dir) else {
        return false;
    };
    if crate::session::outside::detached_at(&repo).is_ok_and(|d| d.is_some()) {
        return true;
    }
    let Some(ended) = meta.last_turn.as_ref().map(|t| t.last_seq) else {
        return false;
    };
    let committed = git::list_branches(&repo)
        .map(|tips| tips.iter().map(|t| t.trailers.last_seq).max().unwrap_or(0))
        .unwrap_or(u64::MAX);
    ended > committed
}

impl Engine {
    /// Check `sessions` (id and folder) in the background, from
    /// `START_AFTER` on, and load those that need a repair. Returns at once.
    pub fn verify_in_background(&self, sessions: Arc<HashMap<String, PathBuf>>) {
        let engine = self.clone();
        actix::spawn(async move {
            actix::clock::sleep(START_AFTER).await;
            let found = tokio::task::spawn_blocking(move || {
                sessions
                    .iter()
                    .filter(|(_, dir)| needs_repair(dir))
                    .map(|(id, _)| id.clone())
                    .collect::<Vec<String>>()
            })
            .await
            .unwrap_or_default();
            for id in found {
                match engine.meta(&id).await {
                    Ok(m) => {
                        tracing::warn!(session = %id, turns = m.turn_count, "startup validation: session repaired")
                    }
                    Err(e) => {
                        tracing::error!(session = %id, error = %e, "startup validation: session could not be repaired")
                    }
                }
            }
        });
    }
}

impl Engine {
    /// Every stored session scanned for secrets (`crate::maintenance::secrets`),
    /// on the blocking pool.
    pub async fn scan_secrets(
        &self,
    ) -> Result<crate::maintenance::secrets::ScanReport, crate::error::EngineError> {
        let store = self.store.clone();
        tokio::task::spawn_blocking(move || {
            store
                .redactor()
                .map(|r| crate::maintenance::secrets::scan_store(&store, r, || {}))
                .unwrap_or_default()
        })
        .await
        .map_err(|_| crate::error::EngineError::Unavailable)
    }
}
