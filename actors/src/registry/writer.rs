//! The index writer: a dedicated thread that owns `index.json` and
//! `index.journal`. A change is a journal append (one fsync, however many
//! sessions there are); changes that queue up while a write is in flight go
//! out in one append (one fsync for all). A snapshot writes `index.json`
//! atomically and durably, then empties the journal; snapshots that queue
//! up are coalesced into one write of the newest, so no change is lost.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crossbeam_channel::{Receiver, Sender};
use serde::{Deserialize, Serialize};

use super::journal::{self, Entry};
use super::row::SessionRow;
use crate::fsio;

/// The on-disk shape of `index.json`.
#[derive(Debug, Serialize, Deserialize)]
pub struct SessionListFile {
    pub version: u32,
    /// When this snapshot was taken (seconds since the epoch).
    pub written_at: f64,
    /// The last journal entry it includes (0: none).
    #[serde(default)]
    pub seq: u64,
    pub sessions: Vec<SessionRow>,
}

pub type Done = Option<tokio::sync::oneshot::Sender<()>>;

pub enum Job {
    /// Every row, including the journal up to `seq`.
    Snapshot {
        rows: Vec<Arc<SessionRow>>,
        taken_at: f64,
        seq: u64,
        done: Done,
    },
    /// Changes since the last job; `durable`: fsynced before `done` is
    /// answered (else written and left to the kernel: see `journal::append`).
    Append {
        entries: Vec<Entry>,
        done: Done,
        durable: bool,
    },
}

#[derive(Clone)]
pub struct Writer {
    tx: Sender<Job>,
    writes: Arc<AtomicU64>,
}

impl Writer {
    /// `path` is `index.json`; the journal lies beside it.
    pub fn spawn(path: PathBuf) -> std::io::Result<Writer> {
        let journal_path = path.with_file_name(journal::JOURNAL);
        let journal = journal::open(&journal_path)?;
        if let Some(dir) = path.parent() {
            // The journal's name is durable before anything relies on it.
            fsio::fsync_dir(dir)?;
        }
        let (tx, rx) = crossbeam_channel::unbounded();
        let writes = Arc::new(AtomicU64::new(0));
        let counter = writes.clone();
        std::thread::Builder::new()
            .name("registry-writer".into())
            .spawn(move || run(path, journal, rx, counter))?;
        Ok(Writer { tx, writes })
    }

    pub fn submit(&self, job: Job) {
        if self.tx.send(job).is_err() {
            tracing::error!("registry writer is gone; the session list is not written");
        }
    }

    /// Writes of index.json or the journal so far.
    pub fn writes(&self) -> u64 {
        self.writes.load(Ordering::Relaxed)
    }
}

fn run(path: PathBuf, mut journal: std::fs::File, rx: Receiver<Job>, writes: Arc<AtomicU64>) {
    let mut next: Option<Job> = None;
    loop {
        let Some(first) = next.take().or_else(|| rx.recv().ok()) else {
            return;
        };
        let mut waiters = Vec::new();
        match first {
            Job::Append {
                mut entries,
                done,
                mut durable,
            } => {
                waiters.extend(done);
                // Group: every append already queued goes in this write.
                while let Ok(j) = rx.try_recv() {
                    match j {
                        Job::Append {
                            entries: more,
                            done,
                            durable: d,
                        } => {
                            entries.extend(more);
                            waiters.extend(done);
                            durable |= d;
                        }
                        snapshot => {
                            next = Some(snapshot);
                            break;
                        }
                    }
                }
                match journal::append(&mut journal, &entries, durable || !waiters.is_empty()) {
                    Ok(()) => count(&writes),
                    Err(e) => {
                        tracing::error!(path = %path.display(), error = %e, "index.journal append failed; startup rereads the sessions changed since index.json")
                    }
                }
            }
            Job::Snapshot {
                mut rows,
                mut taken_at,
                mut seq,
                done,
            } => {
                waiters.extend(done);
                // Coalesce: only the newest of the snapshots queued.
                while let Ok(j) = rx.try_recv() {
                    match j {
                        Job::Snapshot {
                            rows: r,
                            taken_at: t,
                            seq: s,
                            done,
                        } => {
                            (rows, taken_at, seq) = (r, t, s);
                            waiters.extend(done);
                        }
                        append => {
                            next = Some(append);
                            break;
                        }
                    }
                }
                let written =
                    super::list_file::encode(taken_at, seq, rows.iter().map(|r| r.as_ref()))
                        .and_then(|b| fsio::atomic_write(&path, &b));
                match written {
                    Ok(()) => {
                        count(&writes);
                        // Only once the snapshot is durable.
                        if let Err(e) = journal::clear(&mut journal) {
                            tracing::warn!(error = %e, "index.journal not emptied; its entries are older than index.json and skipped");
                        }
                    }
                    Err(e) => {
                        tracing::error!(path = %path.display(), error = %e, "index.json write failed")
                    }
                }
            }
        }
        for w in waiters {
            let _ = w.send(());
        }
    }
}

fn count(writes: &AtomicU64) {
    writes.fetch_add(1, Ordering::Relaxed);
    metrics::counter!("openprogram_registry_writes_total").increment(1);
}
