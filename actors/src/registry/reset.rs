//! Crash recovery at startup: nothing runs, so every session listed as
//! `running` becomes `idle`, in the list and in its `meta.json`.
//!
//! With the write-ahead log, the new `meta.json` images go through it as a
//! session's own writes do: one log entry per batch of sessions, made
//! durable by one flush, then each file overwritten in place (a torn write
//! is replayed from the entry). Without a log, each file is replaced by a
//! renamed temporary one, unsynced, and one `syncfs` per folder of sessions
//! follows (a reset lost to a crash is made again at the next start).
//!
//! Measured at 10,301 running sessions on a fresh ext4 (2 cores): the
//! renamed temporary files took 1.1–1.2 s of the start (a new inode and a
//! rename each, then the `syncfs`); through the log, see BENCHMARKS.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::row::SessionRow;
use super::startup::{scan_items, Report, Running};
use crate::fsio;
use crate::meta::{SessionMeta, Status};
use crate::session::layout::META;
use crate::store::Store;
use crate::wal::Change;

/// Sessions per log entry (their `meta.json` images, about 1 KB each).
const BATCH: usize = 256;

pub(super) fn reset_running(
    store: &Store,
    rows: &mut HashMap<String, Arc<SessionRow>>,
    dir_of: &HashMap<String, PathBuf>,
    mut stored: Running,
    report: &mut Report,
) {
    let running: Vec<Reset> = rows
        .values()
        .filter(|r| r.status == Status::Running)
        .filter_map(|r| {
            Some(Reset {
                id: r.id.clone(),
                dir: dir_of.get(&r.id)?.clone(),
                stored: stored.remove(&r.id),
            })
        })
        .collect();
    if running.is_empty() {
        return;
    }
    let started = std::time::Instant::now();
    if store.is_logged() {
        through_log(store, &running);
    } else {
        renamed(&running);
    }
    tracing::info!(
        sessions = running.len(),
        elapsed_ms = started.elapsed().as_millis() as u64,
        "sessions left running by a crash reset to idle"
    );
    for Reset { id, .. } in &running {
        if let Some(row) = rows.get_mut(id) {
            Arc::make_mut(row).status = Status::Idle;
            report.reset_running += 1;
        }
    }
}

/// A running session to reset.
struct Reset {
    id: String,
    dir: PathBuf,
    /// Its `meta.json` as the startup read it from its files; `None` when
    /// its row came from `index.json` (the file is read here then).
    stored: Option<SessionMeta>,
}

impl Reset {
    /// The `meta.json` image of the session reset to idle.
    fn idle_image(&self) -> std::io::Result<(PathBuf, Vec<u8>)> {
        let path = self.dir.join(META);
        let mut meta = match &self.stored {
            Some(meta) => meta.clone(),
            None => SessionMeta::read_lenient(&path)?,
        };
        meta.status = Status::Idle;
        let bytes = fsio::json_bytes(&meta)?;
        Ok((path, bytes))
    }
}

fn warn(id: &str, e: &std::io::Error) {
    // Listed as idle anyway.
    tracing::warn!(session = %id, error = %e, "could not reset a running status in meta.json");
}

fn through_log(store: &Store, running: &[Reset]) {
    let batches: Vec<&[Reset]> = running.chunks(BATCH).collect();
    // The batches spread over the scan's threads: their entries share the
    // log's flushes.
    scan_items(&batches, 1, "resetting running sessions", |batch| {
        commit_batch(store, batch);
        None::<()>
    });
}

/// One log entry: the idle images of `batch`'s sessions.
fn commit_batch(store: &Store, batch: &[Reset]) {
    let mut changes = Vec::with_capacity(batch.len());
    for reset in batch {
        match reset.idle_image() {
            Ok((path, bytes)) => changes.push(Change::Put {
                root: reset.dir.clone(),
                path,
                bytes,
            }),
            Err(e) => warn(&reset.id, &e),
        }
    }
    if let Err(e) = store.commit(changes) {
        tracing::warn!(sessions = batch.len(), error = %e, "could not reset a batch of running sessions");
    }
}

fn renamed(running: &[Reset]) {
    scan_items(running, 256, "resetting running sessions", |reset| {
        let written = reset
            .idle_image()
            .and_then(|(path, bytes)| fsio::atomic_write_unsynced(&path, &bytes));
        if let Err(e) = written {
            warn(&reset.id, &e);
        }
        None::<()>
    });
    let parents: std::collections::BTreeSet<&Path> =
        running.iter().filter_map(|r| r.dir.parent()).collect();
    for parent in parents {
        if let Err(e) = fsio::sync_filesystem(parent) {
            tracing::warn!(dir = %parent.display(), error = %e, "could not flush the reset sessions");
        }
    }
}
