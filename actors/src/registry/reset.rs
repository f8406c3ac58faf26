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
use super::startup::{scan, scan_items, Report};
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
    report: &mut Report,
) {
    let running: Vec<(String, PathBuf)> = rows
        .values()
        .filter(|r| r.status == Status::Running)
        .filter_map(|r| Some((r.id.clone(), dir_of.get(&r.id)?.clone())))
        .collect();
    if store.is_logged() {
        through_log(store, &running);
    } else {
        renamed(&running);
    }
    for (id, _) in &running {
        if let Some(row) = rows.get_mut(id) {
            Arc::make_mut(row).status = Status::Idle;
            report.reset_running += 1;
        }
    }
}

/// The `meta.json` image of a running session reset to idle.
fn idle_image(dir: &Path) -> std::io::Result<(PathBuf, Vec<u8>)> {
    let path = dir.join(META);
    let mut meta = SessionMeta::read_lenient(&path)?;
    meta.status = Status::Idle;
    let bytes = fsio::json_bytes(&meta)?;
    Ok((path, bytes))
}

fn warn(id: &str, e: &std::io::Error) {
    // Listed as idle anyway.
    tracing::warn!(session = %id, error = %e, "could not reset a running status in meta.json");
}

fn through_log(store: &Store, running: &[(String, PathBuf)]) {
    let batches: Vec<&[(String, PathBuf)]> = running.chunks(BATCH).collect();
    // The batches spread over the scan's threads: their entries share the
    // log's flushes.
    scan_items(&batches, 1, "resetting running sessions", |batch| {
        commit_batch(store, batch);
        None::<()>
    });
}

/// One log entry: the idle images of `batch`'s sessions.
fn commit_batch(store: &Store, batch: &[(String, PathBuf)]) {
    let mut changes = Vec::with_capacity(batch.len());
    for (id, dir) in batch {
        match idle_image(dir) {
            Ok((path, bytes)) => changes.push(Change::Put {
                root: dir.clone(),
                path,
                bytes,
            }),
            Err(e) => warn(id, &e),
        }
    }
    if let Err(e) = store.commit(changes) {
        tracing::warn!(sessions = batch.len(), error = %e, "could not reset a batch of running sessions");
    }
}

fn renamed(running: &[(String, PathBuf)]) {
    scan(running, "resetting running sessions", |(id, dir)| {
        let reset =
            idle_image(dir).and_then(|(path, bytes)| fsio::atomic_write_unsynced(&path, &bytes));
        if let Err(e) = reset {
            warn(id, &e);
        }
        None::<()>
    });
    let parents: std::collections::BTreeSet<&Path> =
        running.iter().filter_map(|(_, d)| d.parent()).collect();
    for parent in parents {
        if let Err(e) = fsio::sync_filesystem(parent) {
            tracing::warn!(dir = %parent.display(), error = %e, "could not flush the reset sessions");
        }
    }
}
