//! The log's writer thread (group commit) and its checkpoints.
//!
//! Callers hand an entry over with `submit` and block on its `wait` (they
//! run on blocking threads, never on the event loop). The thread takes
//! every entry queued, writes them with one `write`, flushes with one
//! `fdatasync`, and answers them all. An answer carries a `Ticket`, held
//! while the caller writes the files in place.
//!
//! Checkpoint: when a segment is big or old enough, the thread starts a
//! new one and hands the old one to the checkpoint thread, which waits
//! for its tickets (every file it covers is then written in place),
//! `syncfs`es each filesystem those files are on, and removes it.

use std::collections::{HashMap, HashSet};
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use super::checkpoint::{Checkpoint, Sealed};
use super::entry;
use super::{Change, Fault, FeedLink};
use crate::feed::LogPosition;
use crate::fsio;

/// A segment this big is checkpointed.
pub(super) const SEGMENT_BYTES: u64 = 16 << 20;
/// A segment with entries this old is checkpointed.
const SEGMENT_AGE: Duration = Duration::from_secs(30);
/// At most this many bytes go in one flush.
const BATCH_BYTES: usize = 8 << 20;

/// Held by a caller from the acknowledgement until its files are written
/// in place; the segment's checkpoint waits for every ticket.
pub struct Ticket {
    pending: Arc<AtomicUsize>,
    /// Set by `keep`: no segment is dropped from then on.
    keep_all: Arc<AtomicBool>,
    /// The entry's change feed records, shown to readers once it drops.
    _feed: Option<crate::feed::Hold>,
}

impl Ticket {
    /// The entry's files could not all be written in place: its segment
    /// and every later one stay for startup to replay (a later segment
    /// dropped before an older one is replayed would be overwritten by
    /// it).
    pub fn keep(self) {
        self.keep_all.store(true, Ordering::SeqCst);
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.pending.fetch_sub(1, Ordering::SeqCst);
    }
}

/// An entry handed to the writer, not yet answered.
pub struct Flushing {
    rx: Receiver<io::Result<Ticket>>,
}

impl Flushing {
    /// Wait until the entry is durable (or its flush failed).
    pub fn wait(self) -> io::Result<Ticket> {
        self.rx
            .recv()
            .map_err(|_| io::Error::other("the write-ahead log stopped"))?
    }
}

struct Job {
    bytes: Vec<u8>,
    roots: Vec<PathBuf>,
    /// The entry's change feed events.
    feed: Vec<Vec<u8>>,
    reply: Sender<io::Result<Ticket>>,
}

enum Msg {
    Append(Job),
    /// Checkpoint everything and stop; answered when done.
    Close(Sender<()>),
    /// Seal the current segment and answer once every segment up to it is
    /// checkpointed and gone (true), or kept for replay (false).
    Checkpoint(Sender<bool>),
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
    pub fn spawn(
        dir: &Path,
        first: u64,
        fault: Option<Fault>,
        feed: Option<FeedLink>,
    ) -> io::Result<Wal> {
        let (tx, rx) = crossbeam_channel::unbounded();
        // The first start of a log folder makes its first spare here (a
        // later start takes the one its predecessor made): every segment
        // is made ahead.
        if let Err(e) = super::spare::prepare(dir) {
            tracing::debug!(error = %e, "the first log segment was not made ahead");
        }
        let first = Segment::create(dir, first.max(next_number(dir)?))?;
        start(dir, first, rx, fault, feed, Arc::default())?;
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
    #[cfg(test)]
    pub fn append(&self, changes: &[Change]) -> io::Result<Ticket> {
        self.submit(changes)?.wait()
    }

    /// Hand `changes` to the writer as one entry; `Flushing::wait` returns
    /// once it is durable. The caller may do other work meanwhile.
    pub fn submit(&self, changes: &[Change]) -> io::Result<Flushing> {
        self.entries.fetch_add(1, Ordering::Relaxed);
        let mut roots: Vec<PathBuf> = changes.iter().map(|c| root_of(c).to_path_buf()).collect();
        roots.dedup();
        let (reply, rx) = crossbeam_channel::bounded(1);
        let feed = changes
            .iter()
            .filter_map(|c| match c {
                Change::Feed { event, .. } => Some(event.clone()),
                _ => None,
            })
            .collect();
        let job = Job {
            bytes: entry::encode(changes),
            roots,
            feed,
            reply,
        };
        self.tx
            .send(Msg::Append(job))
            .map_err(|_| io::Error::other("the write-ahead log is closed"))?;
        Ok(Flushing { rx })
    }

    /// Seal the current segment and wait until it and every earlier one
    /// are checkpointed: no segment then holds an entry logged before
    /// this call. False when one is kept for replay (or the log closed).
    pub fn checkpoint_now(&self, timeout: std::time::Duration) -> bool {
        let (done, rx) = crossbeam_channel::bounded(1);
        if self.tx.send(Msg::Checkpoint(done)).is_err() {
            return false;
        }
        rx.recv_timeout(timeout).unwrap_or(false)
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
    feed: Option<FeedLink>,
    flushes: Arc<AtomicU64>,
) -> io::Result<()> {
    let (ck_tx, ck_rx) = crossbeam_channel::unbounded::<Checkpoint>();
    std::thread::Builder::new()
        .name("wal-checkpoint".into())
        .spawn(move || {
            while let Ok(job) = ck_rx.recv() {
                match job {
                    Checkpoint::Sealed(sealed) => sealed.checkpoint(),
                    Checkpoint::Spare(dir) => {
                        if let Err(e) = super::spare::prepare(&dir) {
                            tracing::debug!(error = %e, "the next log segment was not made ahead");
                        }
                    }
                    Checkpoint::Drained(done) => {
                        let _ = done.send(());
                    }
                    Checkpoint::Barrier(done, keep_all) => {
                        let _ = done.send(!keep_all.load(Ordering::SeqCst));
                    }
                }
            }
        })?;
    // The segment after `seg`, made ahead.
    let _ = ck_tx.send(Checkpoint::Spare(dir.to_path_buf()));
    let dir = dir.to_path_buf();
    std::thread::Builder::new()
        .name("wal-writer".into())
        .spawn(move || {
            run(
                dir,
                seg,
                rx,
                Writer {
                    checkpoints: ck_tx,
                    fault,
                    feed,
                    feed_backlog: Vec::new(),
                    flushes,
                    keep_all: Arc::default(),
                },
            )
        })?;
    Ok(())
}

pub(super) fn root_of(c: &Change) -> &Path {
    match c {
        Change::Put { root, .. }
        | Change::Remove { root, .. }
        | Change::Ref { root, .. }
        | Change::Barrier { root }
        | Change::Feed { root, .. } => root,
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
    /// Entries written to it (the next one's position).
    entries: u32,
    first_entry: Option<Instant>,
    pending: Arc<AtomicUsize>,
    /// A folder on each filesystem written to through this segment.
    filesystems: HashMap<u64, PathBuf>,
    known_roots: HashSet<PathBuf>,
    /// A write to it failed: past `size` it may hold part of an entry.
    failed: bool,
}

impl Segment {
    /// Segment `number`: the spare made ahead when there is one, else a
    /// new empty file. Entries are written at `size`, never appended.
    fn create(dir: &Path, number: u64) -> io::Result<Segment> {
        let path = dir.join(format!("{number:016}.log"));
        let file = match super::spare::take(dir, &path)? {
            Some(file) => file,
            None => OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(fsio::FILE_MODE)
                .open(&path)?,
        };
        fsio::fsync_dir(dir)?;
        let mut filesystems = HashMap::new();
        filesystems.insert(fs::metadata(dir)?.dev(), dir.to_path_buf());
        Ok(Segment {
            dir: dir.to_path_buf(),
            path,
            number,
            file,
            size: 0,
            entries: 0,
            first_entry: None,
            pending: Arc::new(AtomicUsize::new(0)),
            filesystems,
            known_roots: HashSet::new(),
            failed: false,
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

    /// No more entries; `keep`: the checkpoint leaves the segment for
    /// startup to replay (change feed events of it are not in the feed);
    /// `keep_all`: the log's flag that keeps this segment and every later
    /// one (set by `keep` too).
    fn seal(self, keep: bool, keep_all: &Arc<AtomicBool>) -> Sealed {
        Sealed {
            keep_all: keep_all.clone(),
            dir: self.dir,
            path: self.path,
            pending: self.pending,
            filesystems: self.filesystems.into_values().collect(),
            size: self.size,
            recycle: !self.failed,
            keep,
        }
    }
}

/// The writer thread's own state besides the open segment.
struct Writer {
    checkpoints: Sender<Checkpoint>,
    fault: Option<Fault>,
    feed: Option<FeedLink>,
    /// Change feed events of flushed entries that could not be appended
    /// yet (a full disk): tried again first at the next flush; meanwhile
    /// the segments holding them are kept for startup to replay.
    feed_backlog: Vec<(LogPosition, Vec<u8>)>,
    /// Flushes made.
    flushes: Arc<AtomicU64>,
    /// Once set (an entry whose files could not be written), the
    /// checkpoints make segments durable but drop none of them.
    keep_all: Arc<AtomicBool>,
}

impl Writer {
    /// Start a new segment, handing the current one to the checkpoint
    /// thread (`poisoned` cleared when it could).
    fn rotate(&self, dir: &Path, seg: Segment, poisoned: &mut bool) -> Segment {
        match Segment::create(dir, seg.number + 1) {
            Ok(next) => {
                *poisoned = false;
                let sealed = seg.seal(!self.feed_backlog.is_empty(), &self.keep_all);
                let _ = self.checkpoints.send(Checkpoint::Sealed(sealed));
                let _ = self.checkpoints.send(Checkpoint::Spare(dir.to_path_buf()));
                next
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot start a new log segment; the current one is kept");
                seg
            }
        }
    }

    /// Append the change feed events of a flushed `batch` (its entries
    /// numbered from `first_entry` in segment `segment`); the holds that
    /// keep each job's records from readers until its files are in place,
    /// in batch order.
    fn feed_batch(
        &mut self,
        segment: u64,
        first_entry: u32,
        batch: &[Job],
    ) -> Vec<Option<crate::feed::Hold>> {
        let Some(link) = self.feed.clone() else {
            return batch.iter().map(|_| None).collect();
        };
        if batch.iter().all(|j| j.feed.is_empty()) && self.feed_backlog.is_empty() {
            return batch.iter().map(|_| None).collect();
        }
        let backlog = self.feed_backlog.len();
        let mut events: Vec<(LogPosition, &[u8])> = self
            .feed_backlog
            .iter()
            .map(|(at, e)| (*at, e.as_slice()))
            .collect();
        // The index in `events` of each job's first event.
        let mut starts = Vec::with_capacity(batch.len());
        for (i, job) in batch.iter().enumerate() {
            starts.push(events.len());
            let at = LogPosition {
                segment,
                entry: first_entry + i as u32,
            };
            events.extend(job.feed.iter().map(|e| (at, e.as_slice())));
        }
        let appended = link
            .writer
            .lock()
            .map_err(|_| io::Error::other("change feed: a writer panicked"))
            .and_then(|mut w| {
                let first = w.append(&events)?;
                Ok((first, w.next_seq() - 1))
            });
        match appended {
            Ok((first, written)) => {
                self.feed_backlog.clear();
                let applying: Vec<u64> = batch
                    .iter()
                    .zip(&starts)
                    .filter(|(j, _)| !j.feed.is_empty())
                    .map(|(_, s)| first + *s as u64)
                    .collect();
                let mut holds = link.shared.written(written, &applying).into_iter();
                batch
                    .iter()
                    .map(|j| (!j.feed.is_empty()).then(|| holds.next()).flatten())
                    .collect()
            }
            Err(e) => {
                tracing::error!(error = %e, "change feed: events not appended; tried again at the next flush");
                let new: Vec<(LogPosition, Vec<u8>)> = events[backlog..]
                    .iter()
                    .map(|(at, e)| (*at, e.to_vec()))
                    .collect();
                self.feed_backlog.extend(new);
                batch.iter().map(|_| None).collect()
            }
        }
    }
}

fn run(dir: PathBuf, mut seg: Segment, rx: Receiver<Msg>, mut w: Writer) {
    let fault = w.fault;
    let mut batch: Vec<Job> = Vec::new();
    // A failed write may have left a torn entry that no new segment
    // replaced: nothing is acknowledged until one is started.
    let mut poisoned = false;
    loop {
        let first = match rx.recv_timeout(Duration::from_secs(1)) {
            Ok(m) => m,
            Err(RecvTimeoutError::Timeout) => {
                if poisoned || seg.due(fault) {
                    seg = w.rotate(&dir, seg, &mut poisoned);
                }
                continue;
            }
            Err(RecvTimeoutError::Disconnected) => return,
        };
        let mut close = None;
        let mut barriers = Vec::new();
        let mut bytes = 0;
        let mut next = Some(first);
        while let Some(m) = next.take() {
            match m {
                Msg::Append(job) => {
                    bytes += job.bytes.len();
                    batch.push(job);
                }
                Msg::Close(done) => close = Some(done),
                Msg::Checkpoint(done) => barriers.push(done),
            }
            if close.is_none() && bytes < BATCH_BYTES {
                next = rx.try_recv().ok();
            }
        }
        if poisoned {
            seg = w.rotate(&dir, seg, &mut poisoned);
        }
        if !batch.is_empty() {
            if fault == Some(Fault::KillBeforeFlush) {
                // SAFETY: kill(2) on our own pid.
                unsafe {
                    libc::kill(libc::getpid(), libc::SIGKILL);
                }
            }
            let first_entry = seg.entries;
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
            let holds = match &ok {
                Ok(()) => w.feed_batch(seg.number, first_entry, &batch),
                Err(_) => Vec::new(),
            };
            let mut holds = holds.into_iter();
            // Counted before the answers: whoever is answered sees it.
            metrics::counter!("openprogram_wal_flushes_total").increment(1);
            w.flushes.fetch_add(1, Ordering::Relaxed);
            for job in batch.drain(..) {
                let answer = match &ok {
                    Ok(()) => {
                        seg.pending.fetch_add(1, Ordering::SeqCst);
                        Ok(Ticket {
                            pending: seg.pending.clone(),
                            keep_all: w.keep_all.clone(),
                            _feed: holds.next().flatten(),
                        })
                    }
                    Err(e) => Err(io::Error::new(e.kind(), e.to_string())),
                };
                let _ = job.reply.send(answer);
            }
            // A failed write may leave a torn entry: later entries go to a
            // new segment, so that replay reads past it.
            poisoned |= failed;
            if poisoned || seg.due(fault) {
                seg = w.rotate(&dir, seg, &mut poisoned);
            }
        }
        if !barriers.is_empty() && close.is_none() {
            if seg.entries > 0 {
                seg = w.rotate(&dir, seg, &mut poisoned);
            }
            for done in barriers.drain(..) {
                let _ = w
                    .checkpoints
                    .send(Checkpoint::Barrier(done, w.keep_all.clone()));
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
            // The segments sealed before are checkpointed first.
            let (drained, wait) = crossbeam_channel::bounded(1);
            if w.checkpoints.send(Checkpoint::Drained(drained)).is_ok() {
                let _ = wait.recv();
            }
            let number = seg.number;
            let sealed = seg.seal(!w.feed_backlog.is_empty(), &w.keep_all);
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
    let started = Instant::now();
    let written = seg.file.write_all_at(&all, seg.size).and_then(|()| {
        metrics::counter!("openprogram_fsyncs_total").increment(1);
        seg.file.sync_data()
    });
    metrics::histogram!("openprogram_wal_flush_seconds").record(started.elapsed().as_secs_f64());
    if let Err(e) = written {
        seg.failed = true;
        return Err(e);
    }
    seg.size += all.len() as u64;
    seg.entries += batch.len() as u32;
    seg.first_entry.get_or_insert_with(Instant::now);
    metrics::histogram!("openprogram_wal_batch_entries").record(batch.len() as f64);
    Ok(())
}

#[cfg(test)]
#[path = "writer_tests.rs"]
mod tests;
