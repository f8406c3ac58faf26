//! The write-ahead log of the sessions' hot path, with group commit across
//! sessions.
//!
//! A durable write of a session (a node file, `meta.json`, the pack, index
//! and branch ref of a turn's commit) is first appended to the log as one
//! entry holding the new bytes, and acknowledged once the log is flushed:
//! one `fdatasync` serves every entry that queued meanwhile, whichever
//! sessions they come from. Only then are the files written in place,
//! without a fsync of their own. A checkpoint later makes them durable in
//! bulk (`syncfs`) and drops the log segment that held them. After a crash
//! (or a power loss that took files the page cache held), startup replays
//! the log before anything reads a session (`replay`).
//!
//! The log is an owned value (`Log`), held by the state directory's
//! `Store`; without one (`Log::none()`: engine unit tests, a server
//! serving reads only) the same calls write each file with its own fsyncs.

mod checkpoint;
mod entry;
#[cfg(test)]
mod entry_props;
mod replay;
mod spare;
mod unapplied;
mod writer;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use git2::Oid;

use crate::feed::{self, Feed, FeedWriter, LogPosition};
pub use replay::{pending_roots, Replayed};
pub use writer::Ticket;

/// One change a log entry carries. `root` is the session folder it
/// belongs to: replay applies nothing to a root that no longer exists (the
/// session was deleted or moved since), and creates no folder above it.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// Replace the file `path` with `bytes`.
    Put {
        root: PathBuf,
        path: PathBuf,
        bytes: Vec<u8>,
    },
    /// Remove the file `path`.
    Remove { root: PathBuf, path: PathBuf },
    /// Move the loose ref `name` of `git_dir` from `old` (`None`: absent)
    /// to `new`; replay moves it only if it still holds `old`.
    Ref {
        root: PathBuf,
        git_dir: PathBuf,
        name: String,
        old: Option<Oid>,
        new: Oid,
    },
    /// Everything logged before for `root` is durable by other means
    /// (its files were rewritten and synced outside the log): replay skips
    /// those changes.
    Barrier { root: PathBuf },
    /// An event for the change feed (`crate::feed`), durable with the
    /// changes it describes: the log's writer appends it to the feed once
    /// the entry is flushed, replay once more if a crash came between.
    Feed { root: PathBuf, event: Vec<u8> },
}

impl Change {
    /// A file under `.git/objects` (a pack, its index): named by its
    /// content, so writing it early or twice writes the same bytes.
    pub fn is_content_addressed(&self) -> bool {
        match self {
            Change::Put { path, .. } => {
                let mut parts = path.components().map(|c| c.as_os_str());
                parts.any(|p| p == ".git") && parts.next().is_some_and(|p| p == "objects")
            }
            _ => false,
        }
    }
}

/// A test of the crash paths, chosen with `OPENPROGRAM_WAL_FAULT`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fault {
    /// SIGKILL the process after a flush, before it is acknowledged.
    KillBeforeAck,
    /// SIGKILL the process when an entry is about to be flushed: nothing
    /// of it reaches the log.
    KillBeforeFlush,
    /// SIGKILL the process once a whole turn is answered early, before
    /// its files are written (`Flushed::apply_answered`).
    KillAfterAnswer,
    /// Never checkpoint: the log keeps every entry until the process
    /// dies, so a test can take away the files a power loss would take
    /// (those not yet synced) and check that replay brings them back.
    NoCheckpoint,
}

impl Fault {
    /// The fault a test asked for in `OPENPROGRAM_WAL_FAULT`: only in a
    /// build with the `faults` feature, which only the test suite enables
    /// (a product build ignores the variable).
    fn from_env() -> Option<Fault> {
        if !cfg!(feature = "faults") {
            return None;
        }
        match std::env::var("OPENPROGRAM_WAL_FAULT").ok()?.as_str() {
            "kill-before-ack" => Some(Fault::KillBeforeAck),
            "kill-before-flush" => Some(Fault::KillBeforeFlush),
            "no-checkpoint" => Some(Fault::NoCheckpoint),
            "kill-after-answer" => Some(Fault::KillAfterAnswer),
            _ => None,
        }
    }
}

/// The log's folder in the state directory.
pub const DIR: &str = "wal";

/// Under a session's `.git`: one file per branch the log has moved, the
/// branch's previous value, exchanged with the ref at the next move
/// (`fsio::replace_ref`). git never reads this folder.
pub const REF_SPARES: &str = "openprogram-spare";

/// A state directory's write-ahead log, owned by its `Store`: every
/// durable write of a session goes through `commit`. `Log::none()` (engine
/// unit tests, a server started on a full disk) writes each change with
/// its own fsyncs instead. Dropping the last handle closes the log
/// (`close`).
pub struct Log {
    writer: Option<writer::Wal>,
    /// The change feed the log appends its entries' events to.
    feed: Option<FeedLink>,
    /// Flushed entries whose files could not be written in place: written
    /// again once the disk takes them (`retry_unapplied`), or by startup's
    /// replay.
    unapplied: Unapplied,
    fault: Option<Fault>,
}

use unapplied::Unapplied;

/// An entry that is durable in the log, its files not written in place
/// yet: `apply` (or, once its caller was answered, `apply_answered`)
/// writes them. Holding one keeps the segment's checkpoint waiting.
/// Dropped unapplied (or failing after the answer) it loses nothing: its
/// segment and every later one stay for startup to replay, and its
/// sessions refuse requests until its files are written (`Log::
/// retry_unapplied`, once the disk has room) or replayed.
#[must_use = "a flushed entry's files are written by `apply`"]
pub struct Flushed {
    state: FlushedState,
}

enum FlushedState {
    /// Written already (no log: each change with its own fsyncs).
    Done,
    Logged {
        changes: Vec<Change>,
        /// Packs and indexes staged under temporary names during the flush.
        early: Vec<Option<crate::fsio::Staged>>,
        ticket: Option<Ticket>,
        unapplied: Unapplied,
        fault: Option<Fault>,
    },
}

impl Flushed {
    /// `apply` for an entry whose caller was answered already (a test's
    /// `kill-after-answer` fault kills the process here, once the answer
    /// has had time to reach its client).
    pub fn apply_answered(mut self) -> io::Result<()> {
        if let FlushedState::Logged {
            fault: Some(Fault::KillAfterAnswer),
            ..
        } = &self.state
        {
            std::thread::sleep(std::time::Duration::from_millis(300));
            // SAFETY: kill(2) on our own pid.
            unsafe {
                libc::kill(libc::getpid(), libc::SIGKILL);
            }
        }
        let written = self.write_files();
        if written.is_ok() {
            self.state = FlushedState::Done;
        }
        // Failed: dropped unapplied, it keeps its segment and its sessions
        // wait for its files (the answer is out).
        written
    }

    /// Write the entry's files in place, in order. A failure is the
    /// caller's to answer and repair (a turn's commit is retried, a node
    /// write refused), as for a write that failed before its flush: the
    /// segment is checkpointed as usual.
    pub fn apply(mut self) -> io::Result<()> {
        let written = self.write_files();
        self.state = FlushedState::Done;
        written
    }

    /// The entry's files in place, in order (a staged write that failed
    /// is done in its place).
    fn write_files(&mut self) -> io::Result<()> {
        let FlushedState::Logged { changes, early, .. } = &mut self.state else {
            return Ok(());
        };
        changes
            .iter()
            .zip(early.iter_mut())
            .try_for_each(|(c, staged)| match staged.take() {
                Some(s) => s.publish().or_else(|_| apply(c, false)),
                None => apply(c, false),
            })
    }
}

impl Drop for Flushed {
    /// Not applied (its apply failed, or nobody called it).
    fn drop(&mut self) {
        if let FlushedState::Logged {
            changes,
            ticket,
            unapplied,
            ..
        } = &mut self.state
        {
            unapplied.keep(std::mem::take(changes));
            if let Some(t) = ticket.take() {
                t.keep();
            }
            tracing::error!("a flushed log entry's files were not written in place: its segment is kept and its sessions wait until the disk takes them");
        }
    }
}

/// The change feed's appending side, shared by the log's writer thread
/// and the writes made without the log (after it closed).
#[derive(Clone)]
pub struct FeedLink {
    pub writer: Arc<Mutex<FeedWriter>>,
    pub shared: Arc<feed::Shared>,
}

impl FeedLink {
    /// Append the feed events of `changes` and make them durable (a write
    /// made without the log).
    fn append_durably(&self, changes: &[Change]) -> io::Result<()> {
        let events: Vec<(LogPosition, &[u8])> = changes
            .iter()
            .filter_map(|c| match c {
                Change::Feed { event, .. } => Some((LogPosition::default(), event.as_slice())),
                _ => None,
            })
            .collect();
        if events.is_empty() {
            return Ok(());
        }
        let mut w = self
            .writer
            .lock()
            .map_err(|_| io::Error::other("change feed: a writer panicked"))?;
        w.append(&events)?;
        w.sync()?;
        let written = w.next_seq() - 1;
        drop(w);
        drop(self.shared.written(written, &[]));
        Ok(())
    }
}

impl Log {
    /// Replay the log in `dir` (left by a crash), then start logging
    /// there. Call before any session of the state directory is read. The
    /// change feed is in `feed_dir`.
    pub fn open(dir: &Path, feed_dir: &Path) -> io::Result<(Log, Replayed)> {
        crate::fsio::create_private_dir_all(dir)?;
        let mut feed = FeedWriter::open(feed_dir)?;
        let replayed = replay::replay(dir, Some(&mut feed))?;
        // Log positions only grow, also past a clean shutdown that left
        // no segment: the feed's last record names the last one used.
        let first = replayed.last_segment.max(feed.last_position().segment) + 1;
        let link = FeedLink {
            shared: feed::Shared::new(feed_dir, feed.next_seq() - 1),
            writer: Arc::new(Mutex::new(feed)),
        };
        let fault = Fault::from_env();
        let writer = writer::Wal::spawn(dir, first, fault, Some(link.clone()))?;
        Ok((
            Log {
                writer: Some(writer),
                feed: Some(link),
                unapplied: Unapplied::default(),
                fault,
            },
            replayed,
        ))
    }

    /// No log: each change is written durably on its own.
    pub fn none() -> Log {
        Log {
            writer: None,
            feed: None,
            unapplied: Unapplied::default(),
            fault: None,
        }
    }

    /// The change feed's readers' side (none without a log).
    pub fn feed(&self) -> Option<Feed> {
        self.feed.as_ref().map(|l| Feed::new(l.shared.clone()))
    }

    /// Whether writes go through an open log.
    pub fn is_logged(&self) -> bool {
        self.writer.as_ref().is_some_and(writer::Wal::is_open)
    }

    /// Entries logged since the log was opened (0 without one).
    pub fn entries(&self) -> u64 {
        self.writer.as_ref().map_or(0, writer::Wal::entries)
    }

    /// Flush the log and make every file it covers durable, then stop
    /// taking entries (shutdown). Later writes fall back to their own
    /// fsyncs.
    pub fn close(&self) {
        if let Some(w) = &self.writer {
            w.close();
        }
    }

    /// Make every entry logged so far durable in place and drop the
    /// segments holding them (a purge: no segment keeps the bytes it
    /// rewrote). Without a log, or a closed one: nothing is kept anyway.
    pub fn checkpoint_now(&self) -> io::Result<()> {
        match &self.writer {
            Some(w) if w.is_open() => {
                if w.checkpoint_now(std::time::Duration::from_secs(120)) {
                    Ok(())
                } else {
                    Err(io::Error::other(
                        "the write-ahead log keeps a segment for replay; try again after a restart",
                    ))
                }
            }
            _ => Ok(()),
        }
    }

    /// Whether the session folder `root` has a flushed entry whose files
    /// could not be written: only a restart's replay puts them back.
    pub fn awaits_replay(&self, root: &Path) -> bool {
        self.unapplied.awaits(root)
    }

    /// Write the entries whose files the disk refused, in the background
    /// (their sessions are served again once they are in place).
    pub fn retry_unapplied(&self) {
        self.unapplied.retry_in_background();
    }

    /// Make `changes` durable, then apply them in order. With a log: one
    /// entry, acknowledged at the group flush, then the files are written
    /// without fsync. Without: each change is written durably on its own.
    pub fn commit(&self, changes: Vec<Change>) -> io::Result<()> {
        self.flush(changes)?.apply()
    }

    /// Make `changes` durable; `Flushed::apply` writes them in place (the
    /// caller may answer in between: the entry is durable). Without a log
    /// they are written, each durably, before this returns.
    pub fn flush(&self, changes: Vec<Change>) -> io::Result<Flushed> {
        let done = || Flushed {
            state: FlushedState::Done,
        };
        if changes.is_empty() {
            return Ok(done());
        }
        match self.writer.as_ref().filter(|w| w.is_open()) {
            Some(w) => {
                let flushing = match w.submit(&changes) {
                    Ok(f) => f,
                    // Closed meanwhile (shutdown): write on its own.
                    Err(_) if !w.is_open() => return self.apply_durably(&changes).map(|()| done()),
                    Err(e) => return Err(e),
                };
                // Packs and their indexes are written while the entry is
                // flushed, under temporary names; each is renamed into its
                // place in turn after the flush, just before the ref that
                // makes it reachable moves. In place early, a pack stayed
                // unreachable for the whole flush, and a user's `git gc
                // --prune=now` listing it then deleted it with its objects
                // (the ref moved after the gc had read the refs).
                let early: Vec<Option<crate::fsio::Staged>> = changes
                    .iter()
                    .map(|c| match c {
                        Change::Put { path, bytes, .. } if c.is_content_addressed() => {
                            crate::fsio::stage_content_named(path, bytes).ok()
                        }
                        _ => None,
                    })
                    .collect();
                let ticket = match flushing.wait() {
                    Ok(t) => t,
                    // (The staged files are removed as `early` drops.)
                    Err(_) if !w.is_open() => return self.apply_durably(&changes).map(|()| done()),
                    Err(e) => return Err(e),
                };
                Ok(Flushed {
                    state: FlushedState::Logged {
                        changes,
                        early,
                        ticket: Some(ticket),
                        unapplied: self.unapplied.clone(),
                        fault: self.fault,
                    },
                })
            }
            None => self.apply_durably(&changes).map(|()| done()),
        }
    }

    /// Without the log: each change written durably on its own, then the
    /// feed's events.
    fn apply_durably(&self, changes: &[Change]) -> io::Result<()> {
        apply_durably(changes)?;
        match &self.feed {
            Some(link) => link.append_durably(changes),
            None => Ok(()),
        }
    }
}

/// Write `changes` in order, each with its own fsyncs (no log).
pub fn apply_durably(changes: &[Change]) -> io::Result<()> {
    changes.iter().try_for_each(|c| apply(c, true))
}

/// Write one change in place (`durable`: with its own fsyncs).
fn apply(change: &Change, durable: bool) -> io::Result<()> {
    apply_one(change, durable).map_err(|e| {
        let path = match change {
            Change::Put { path, .. } | Change::Remove { path, .. } => path.clone(),
            Change::Ref { git_dir, name, .. } => git_dir.join(name),
            Change::Barrier { root } | Change::Feed { root, .. } => root.clone(),
        };
        io::Error::new(e.kind(), format!("{}: {e}", path.display()))
    })
}

fn apply_one(change: &Change, durable: bool) -> io::Result<()> {
    use crate::fsio;
    match change {
        Change::Put { path, bytes, .. } => {
            if durable {
                fsio::atomic_write(path, bytes)
            } else if change.is_content_addressed() {
                // Packs and their indexes: other threads' libgit2 handles
                // (search, pack merges) may list them at any moment.
                fsio::write_content_named(path, bytes)
            } else if path.components().any(|c| c.as_os_str() == ".git") {
                // Other git files, read by git and libgit2 at any moment.
                fsio::atomic_write_unsynced(path, bytes)
            } else {
                // Session files, read only by their actor between writes;
                // the entry holds the whole image, so a torn write is
                // replayed.
                fsio::overwrite_unsynced(path, bytes)
            }
        }
        Change::Remove { path, .. } => {
            match std::fs::remove_file(path) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
            match (durable, path.parent()) {
                (true, Some(dir)) => fsio::fsync_dir(dir),
                _ => Ok(()),
            }
        }
        Change::Ref {
            git_dir, name, new, ..
        } => {
            let path = git_dir.join(name);
            let body = format!("{new}\n");
            let write = || {
                if durable {
                    fsio::atomic_write(&path, body.as_bytes())
                } else {
                    let spare = git_dir.join(REF_SPARES).join(name);
                    fsio::replace_ref(&path, &spare, body.as_bytes())
                }
            };
            match write() {
                // The first ref under a folder not made yet (the service's
                // own `refs/openprogram/…`): made, then written.
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    if let Some(dir) = path.parent() {
                        fsio::create_dir_durable(dir)?;
                    }
                    write()
                }
                other => other,
            }
        }
        Change::Barrier { .. } | Change::Feed { .. } => Ok(()),
    }
}
