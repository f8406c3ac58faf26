//! The index writer: a dedicated thread that writes `index.json` snapshots
//! atomically and durably, newest first. Snapshots that queue up while a
//! write is in flight are coalesced into one write of the newest, so a burst
//! of changes costs one write and no change is lost.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crossbeam_channel::{Receiver, Sender};
use serde::{Deserialize, Serialize};

use super::row::SessionRow;
use crate::fsio;

/// The on-disk shape of `index.json`.
#[derive(Debug, Serialize, Deserialize)]
pub struct IndexFile {
    pub version: u32,
    /// When this snapshot was taken (seconds since the epoch).
    pub written_at: f64,
    pub sessions: Vec<SessionRow>,
}

pub struct Job {
    pub rows: Vec<Arc<SessionRow>>,
    pub taken_at: f64,
    pub done: Option<tokio::sync::oneshot::Sender<()>>,
}

#[derive(Clone)]
pub struct Writer {
    tx: Sender<Job>,
    writes: Arc<AtomicU64>,
}

impl Writer {
    pub fn spawn(path: PathBuf) -> std::io::Result<Writer> {
        let (tx, rx) = crossbeam_channel::unbounded();
        let writes = Arc::new(AtomicU64::new(0));
        let counter = writes.clone();
        std::thread::Builder::new()
            .name("registry-writer".into())
            .spawn(move || run(path, rx, counter))?;
        Ok(Writer { tx, writes })
    }

    pub fn submit(&self, job: Job) {
        if self.tx.send(job).is_err() {
            tracing::error!("registry writer is gone; index.json not written");
        }
    }

    /// Number of index.json writes so far.
    pub fn writes(&self) -> u64 {
        self.writes.load(Ordering::Relaxed)
    }
}

#[derive(Serialize)]
struct IndexFileRef<'a> {
    version: u32,
    written_at: f64,
    sessions: Vec<&'a SessionRow>,
}

fn run(path: PathBuf, rx: Receiver<Job>, writes: Arc<AtomicU64>) {
    while let Ok(first) = rx.recv() {
        let mut job = first;
        let mut waiters = Vec::new();
        // Coalesce: keep only the newest snapshot, answer every waiter.
        while let Ok(next) = rx.try_recv() {
            waiters.extend(job.done.take());
            job = next;
        }
        waiters.extend(job.done.take());
        let file = IndexFileRef {
            version: 1,
            written_at: job.taken_at,
            sessions: job.rows.iter().map(|r| r.as_ref()).collect(),
        };
        match serde_json::to_vec(&file)
            .map_err(std::io::Error::other)
            .and_then(|b| fsio::atomic_write(&path, &b))
        {
            Ok(()) => {
                writes.fetch_add(1, Ordering::Relaxed);
                metrics::counter!("openprogram_registry_writes_total").increment(1);
            }
            Err(e) => {
                tracing::error!(path = %path.display(), error = %e, "index.json write failed")
            }
        }
        for w in waiters {
            let _ = w.send(());
        }
    }
}
