//! The log's writer thread (group commit) and its checkpoints.
//!
//! Callers block on `append` (they run on blocking threads, never on the
//! event loop). The thread takes every entry queued, writes them with one
//! `write`, flushes with one `fdatasync`, and answers them all. An answer
//! carries a `Ticket`, held while the caller writes the files in place.
//!
//! Checkpoint: when a segment is big or old enough, the thread starts a
//! new one and hands the old one to the checkpoint thread, which waits
//! for its tickets (every file it covers is then written in place),
//! `syncfs`es each filesystem those files are on, and removes it.

use std::collections::{HashMap, HashSet};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use super::entry;
use super::{Change, Fault};
use crate::fsio;

/// A segment this big is checkpointed.
const SEGMENT_BYTES: u64 = 16 << 20;
/// A segment with entries this old is checkpointed.
const SEGMENT_AGE: Duration = Duration::from_secs(30);
/// At most this many bytes go in one flush.
const BATCH_BYTES: usize = 8 << 20;

/// Held by a caller from the acknowledgement until its files are written
/// in place; the segment's checkpoint waits for every ticket.
pub struct Ticket {
    pending: Arc<AtomicUsize>,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.pending.fetch_sub(1, Ordering::SeqCst);
    }
}

struct Job {
    bytes: Vec<u8>,
    roots: Vec<PathBuf>,
    reply: Sender<io::Result<Ticket>>,
}

enum Msg {
    Append(Job),
    /// Checkpoint everything and stop; answered when done.
    Close(Sender<()>),
}

pub struct Wal {
    tx: Sender<Msg>,
    open: Arc<AtomicBool>,
    /// Serialises `close` callers.
    closing: Mutex<()>,
    /// Entries logged so far.
    entries: AtomicU64,
}

impl Wal {
    /// Log in `dir`, the first segment numbered `first` (or after any
    /// segment already there).
    pub fn spawn(dir: &Path, first: u64, fault: Option<Fault>) -> io::Result<Wal> {
        let (tx, rx) = crossbeam_channel::unbounded();
        let first = Segment::create(dir, first.max(next_number(dir)?))?;
        start(dir, first, rx, fault, Arc::default())?;
        Ok(Wal {
            tx,
            open: Arc::new(AtomicBool::new(true)),
            closing: Mutex::new(()),
            entries: AtomicU64::new(0),
        })
    }

    pub fn is_open(&self) -> bool {
        self.open.load(Ordering::SeqCst)
    }

    /// Entries logged so far.
    pub fn entries(&self) -> u64 {
        self.entries.load(Ordering::Relaxed)
    }

    /// Log `changes` as one entry; returns once it is durable.
    pub fn append(&self, changes: &[Change]) -> io::Result<Ticket> {
        self.entries.fetch_add(1, Ordering::Relaxed);
        let mut roots: Vec<PathBuf> = changes.iter().map(|c| root_of(c).to_path_buf()).collect();
        roots.dedup();
        let (reply, rx) = crossbeam_channel::bounded(1);
        let job = Job {
            bytes: entry::encode(changes),
            roots,
            reply,
        };
        self.tx
            .send(Msg::Append(job))
            .map_err(|_| io::Error::other("the write-ahead log is closed"))?;
        rx.recv()
            .map_err(|_| io::Error::other("the write-ahead log stopped"))?
    }

    pub fn close(&self) {
        let Ok(_one) = self.closing.lock() else {
            return;
        };
        if !self.open.swap(false, Ordering::SeqCst) {
            return;
        }
        let (done, rx) = crossbeam_channel::bounded(1);
        if self.tx.send(Msg::Close(done)).is_ok() {
            let _ = rx.recv();
        }
    }
}

impl Drop for Wal {
    /// The log's owner let go: every file it covers is made durable and
    /// its segments are removed.
    fn drop(&mut self) {
        self.close();
    }
}

/// Start the writer thread on `seg`, taking what `rx` brings, and the
/// checkpoint thread it hands sealed segments to; `flushes` counts the
/// flushes made.
fn start(
    dir: &Path,
    seg: Segment,
    rx: Receiver<Msg>,
    fault: Option<Fault>,
    flushes: Arc<AtomicU64>,
) -> io::Result<()> {
    let (ck_tx, ck_rx) = crossbeam_channel::unbounded::<Sealed>();
    std::thread::Builder::new()
        .name("wal-checkpoint".into())
        .spawn(move || {
            while let Ok(sealed) = ck_rx.recv() {
                sealed.checkpoint();
            }
        })?;
    let dir = dir.to_path_buf();
    std::thread::Builder::new()
        .name("wal-writer".into())
        .spawn(move || run(dir, seg, rx, ck_tx, fault, &flushes))?;
    Ok(())
}

fn root_of(c: &Change) -> &Path {
    match c {
        Change::Put { root, .. }
        | Change::Remove { root, .. }
        | Change::Ref { root, .. }
        | Change::Barrier { root } => root,
    }
}

/// Segment files are `<16 digits>.log`; anything else in the folder is
/// left alone.
pub fn segment_number(name: &str) -> Option<u64> {
    let digits = name.strip_suffix(".log")?;
    (digits.len() == 16 && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

fn next_number(dir: &Path) -> io::Result<u64> {
    let mut max = 0;
    for e in fs::read_dir(dir)? {
        if let Some(n) = segment_number(&e?.file_name().to_string_lossy()) {
            max = max.max(n);
        }
    }
    Ok(max + 1)
}

struct Segment {
    dir: PathBuf,
    path: PathBuf,
    number: u64,
    file: File,
    size: u64,
    first_entry: Option<Instant>,
    pending: Arc<AtomicUsize>,
    /// A folder on each filesystem written to through this segment.
    filesystems: HashMap<u64, PathBuf>,
    known_roots: HashSet<PathBuf>,
}

impl Segment {
    fn create(dir: &Path, number: u64) -> io::Result<Segment> {
        let path = dir.join(format!("{number:016}.log"));
        let file = OpenOptions::new()
            .append(true)
            .create_new(true)
            .mode(fsio::FILE_MODE)
            .open(&path)?;
        fsio::fsync_dir(dir)?;
        let mut filesystems = HashMap::new();
        filesystems.insert(fs::metadata(dir)?.dev(), dir.to_path_buf());
        Ok(Segment {
            dir: dir.to_path_buf(),
            path,
            number,
            file,
            size: 0,
            first_entry: None,
            pending: Arc::new(AtomicUsize::new(0)),
            filesystems,
            known_roots: HashSet::new(),
        })
    }

    fn note_roots(&mut self, roots: &[PathBuf]) {
        for root in roots {
            if self.known_roots.insert(root.clone()) {
                if let Ok(meta) = fs::metadata(root) {
                    self.filesystems.entry(meta.dev()).or_insert(root.clone());
                }
            }
        }
    }

    fn due(&self, fault: Option<Fault>) -> bool {
        fault != Some(Fault::NoCheckpoint)
            && (self.size >= SEGMENT_BYTES
                || self.first_entry.is_some_and(|t| t.elapsed() >= SEGMENT_AGE))
    }

    fn seal(self) -> Sealed {
        Sealed {
            dir: self.dir,
            path: self.path,
            pending: self.pending,
            filesystems: self.filesystems.into_values().collect(),
            empty: self.size == 0,
        }
    }
}

/// A segment that takes no more entries, waiting for its checkpoint.
struct Sealed {
    dir: PathBuf,
    path: PathBuf,
    pending: Arc<AtomicUsize>,
    filesystems: Vec<PathBuf>,
    empty: bool,
}

impl Sealed {
    fn checkpoint(self) {
        let started = Instant::now();
        // Every file the segment covers is written in place once its
        // tickets are back (each is held for a few writes).
        while self.pending.load(Ordering::SeqCst) > 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        if !self.empty {
            for fs_dir in &self.filesystems {
                if let Err(e) = fsio::sync_filesystem(fs_dir) {
                    // The segment stays; startup replays it.
                    tracing::error!(dir = %fs_dir.display(), error = %e, "checkpoint: syncfs failed; the log segment is kept");
                    return;
                }
            }
        }
        if let Err(e) = fs::remove_file(&self.path).and_then(|_| fsio::fsync_dir(&self.dir)) {
            tracing::warn!(path = %self.path.display(), error = %e, "checkpoint: segment not removed; startup replays it");
        }
        metrics::counter!("openprogram_wal_checkpoints_total").increment(1);
        tracing::debug!(
            took_ms = started.elapsed().as_millis() as u64,
            "wal checkpoint"
        );
    }
}

fn run(
    dir: PathBuf,
    mut seg: Segment,
    rx: Receiver<Msg>,
    checkpoints: Sender<Sealed>,
    fault: Option<Fault>,
    flushes: &AtomicU64,
) {
    let mut batch: Vec<Job> = Vec::new();
    // A failed write may have left a torn entry that no new segment
    // replaced: nothing is acknowledged until one is started.
    let mut poisoned = false;
    loop {
        let first = match rx.recv_timeout(Duration::from_secs(1)) {
            Ok(m) => m,
            Err(RecvTimeoutError::Timeout) => {
                if poisoned || seg.due(fault) {
                    seg = rotate(&dir, seg, &checkpoints, &mut poisoned);
                }
                continue;
            }
            Err(RecvTimeoutError::Disconnected) => return,
        };
        let mut close = None;
        let mut bytes = 0;
        let mut next = Some(first);
        while let Some(m) = next.take() {
            match m {
                Msg::Append(job) => {
                    bytes += job.bytes.len();
                    batch.push(job);
                }
                Msg::Close(done) => close = Some(done),
            }
            if close.is_none() && bytes < BATCH_BYTES {
                next = rx.try_recv().ok();
            }
        }
        if poisoned {
            seg = rotate(&dir, seg, &checkpoints, &mut poisoned);
        }
        if !batch.is_empty() {
            let ok = if poisoned {
                Err(io::Error::other(
                    "the write-ahead log cannot start a new segment",
                ))
            } else {
                flush(&mut seg, &batch)
            };
            if ok.is_ok() && fault == Some(Fault::KillBeforeAck) {
                // SAFETY: kill(2) on our own pid.
                unsafe {
                    libc::kill(libc::getpid(), libc::SIGKILL);
                }
            }
            let failed = ok.is_err();
            for job in batch.drain(..) {
                let answer = match &ok {
                    Ok(()) => {
                        seg.pending.fetch_add(1, Ordering::SeqCst);
                        Ok(Ticket {
                            pending: seg.pending.clone(),
                        })
                    }
                    Err(e) => Err(io::Error::new(e.kind(), e.to_string())),
                };
                let _ = job.reply.send(answer);
            }
            metrics::counter!("openprogram_wal_flushes_total").increment(1);
            flushes.fetch_add(1, Ordering::Relaxed);
            // A failed write may leave a torn entry: later entries go to a
            // new segment, so that replay reads past it.
            poisoned |= failed;
            if poisoned || seg.due(fault) {
                seg = rotate(&dir, seg, &checkpoints, &mut poisoned);
            }
        }
        if let Some(done) = close {
            // Whatever is still queued is refused (the sender sees `is_open`
            // false and writes on its own), then a last checkpoint.
            while let Ok(m) = rx.try_recv() {
                if let Msg::Append(job) = m {
                    let _ = job
                        .reply
                        .send(Err(io::Error::other("the write-ahead log is closed")));
                }
            }
            let number = seg.number;
            let sealed = seg.seal();
            sealed.checkpoint();
            tracing::debug!(segment = number, "write-ahead log closed");
            let _ = done.send(());
            return;
        }
    }
}

fn flush(seg: &mut Segment, batch: &[Job]) -> io::Result<()> {
    let mut all = Vec::with_capacity(batch.iter().map(|j| j.bytes.len()).sum());
    for job in batch {
        all.extend_from_slice(&job.bytes);
    }
    for job in batch {
        seg.note_roots(&job.roots);
    }
    seg.file.write_all(&all)?;
    metrics::counter!("openprogram_fsyncs_total").increment(1);
    seg.file.sync_data()?;
    seg.size += all.len() as u64;
    seg.first_entry.get_or_insert_with(Instant::now);
    metrics::histogram!("openprogram_wal_batch_entries").record(batch.len() as f64);
    Ok(())
}

fn rotate(dir: &Path, seg: Segment, checkpoints: &Sender<Sealed>, poisoned: &mut bool) -> Segment {
    match Segment::create(dir, seg.number + 1) {
        Ok(next) => {
            *poisoned = false;
            let _ = checkpoints.send(seg.seal());
            next
        }
        Err(e) => {
            tracing::error!(error = %e, "cannot start a new log segment; the current one is kept");
            seg
        }
    }
}

#[cfg(test)]
#[path = "writer_tests.rs"]
mod tests;
