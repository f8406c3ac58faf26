//! A sealed segment's checkpoint: its files made durable in place, then
//! the segment dropped (or made the next spare). Runs on the
//! `wal-checkpoint` thread.

use std::fs;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::writer::SEGMENT_BYTES;
use crate::fsio;

/// A segment that takes no more entries, waiting for its checkpoint.
pub(super) struct Sealed {
    pub(super) dir: PathBuf,
    pub(super) path: PathBuf,
    pub(super) pending: Arc<AtomicUsize>,
    pub(super) filesystems: Vec<PathBuf>,
    /// Bytes of entries written to it.
    pub(super) size: u64,
    /// Its file may become the next spare (nothing past `size`).
    pub(super) recycle: bool,
    pub(super) keep: bool,
    /// The log's flag: once a segment is kept, so is every later one
    /// (replay applies segments in order; a later one dropped would have
    /// its files overwritten by the kept one's older images).
    pub(super) keep_all: Arc<AtomicBool>,
}

impl Sealed {
    /// Make the segment's files durable in place, then drop the segment
    /// (its file becomes the next spare when none is ready).
    pub(super) fn checkpoint(self) {
        let started = Instant::now();
        // Every file the segment covers is written in place once its
        // tickets are back (each is held for a few writes).
        while self.pending.load(Ordering::SeqCst) > 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        if self.size > 0 {
            for fs_dir in &self.filesystems {
                if let Err(e) = fsio::sync_filesystem(fs_dir) {
                    // The segment stays; startup replays it.
                    tracing::error!(dir = %fs_dir.display(), error = %e, "checkpoint: syncfs failed; the log segment is kept");
                    return;
                }
            }
        }
        if self.keep {
            self.keep_all.store(true, Ordering::SeqCst);
            tracing::warn!(path = %self.path.display(), "checkpoint: the change feed lacks events of this segment; it is kept (and every later one) for startup to replay");
            return;
        }
        if self.keep_all.load(Ordering::SeqCst) {
            tracing::warn!(path = %self.path.display(), "checkpoint: an earlier entry's files could not be written; the segment is kept for startup to replay");
            return;
        }
        // Its file becomes the next spare when none is ready (its entries
        // zeroed: as many bytes as it holds), else it goes.
        let recycled = match self.recycle {
            true => super::spare::recycle(&self.dir, &self.path, self.size, SEGMENT_BYTES),
            false => Ok(false),
        };
        let gone = match recycled {
            Ok(true) => Ok(()),
            Ok(false) => fs::remove_file(&self.path).and_then(|_| fsio::fsync_dir(&self.dir)),
            // Renamed away already: only the spare is missing (a full
            // disk); the next one is made later.
            Err(e) if !self.path.exists() => {
                tracing::debug!(error = %e, "checkpoint: the segment was not made the next spare");
                Ok(())
            }
            Err(e) => Err(e),
        };
        if let Err(e) = gone {
            tracing::warn!(path = %self.path.display(), error = %e, "checkpoint: segment not removed; startup replays it");
        }
        metrics::counter!("openprogram_wal_checkpoints_total").increment(1);
        tracing::debug!(
            took_ms = started.elapsed().as_millis() as u64,
            "wal checkpoint"
        );
    }
}

/// The checkpoint thread's work: a sealed segment, or the next segment
/// to make ahead (`spare`) in a log folder.
pub(super) enum Checkpoint {
    Sealed(Sealed),
    Spare(PathBuf),
    /// Answered once everything sent before it is done (a closing log).
    Drained(crossbeam_channel::Sender<()>),
    /// Answered once everything sent before it is done, with whether
    /// every segment went (none kept for replay).
    Barrier(crossbeam_channel::Sender<bool>, Arc<AtomicBool>),
}
