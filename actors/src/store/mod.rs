//! `Store`: the state directory as the engine sees it. It owns the layout
//! (where a session lives, the session folders, `locations.json`, the
//! session list file) and the write-ahead log every durable write of a
//! session goes through. `Engine::start` builds one and passes it down: the
//! session cores, the registry's startup, search, maintenance, the CLI's
//! tools and the benches take it; nothing reaches a log through a global,
//! so two engines in one process each write their own.
//!
//! Cloning is cheap (one shared value); the log closes when the last clone
//! is dropped, or earlier with `close_log` (a graceful shutdown).

use std::collections::HashSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::fsio;
use crate::locations::Locations;
use crate::wal::{self, Change, Log, Replayed};

pub mod closed;

/// The folder of the sessions in the state directory.
pub const SESSIONS: &str = "sessions";
/// A project's own folder of this service (its sessions are in
/// `<project>/.openprogram/sessions/<id>`).
pub const OPENPROGRAM_DIR: &str = ".openprogram";
/// The session list, in the sessions folder.
pub const SESSION_LIST: &str = "index.json";

/// Every session's id and folder.
pub type SessionFolders = Vec<(String, PathBuf)>;

#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    state_dir: PathBuf,
    sessions_dir: PathBuf,
    log: Log,
    /// The entry number of the `index.json` a clean shutdown vouched for
    /// (`closed.rs`), when this opening found its mark.
    closed: Option<u64>,
    /// What every stored text passes through (none: stored as sent, for
    /// tools that only read).
    redactor: Option<Arc<crate::redact::Redactor>>,
}

/// How a store opened.
pub enum Opening {
    /// The log was replayed and is open.
    Writable(Replayed),
    /// The disk is full: the log could not be replayed (its files are
    /// rewritten in place) and stays for the next start. These session
    /// folders lack writes it holds and must not be opened.
    ReadOnly {
        pending: HashSet<PathBuf>,
        error: io::Error,
    },
}

impl Store {
    /// Open the state directory whose sessions are in `sessions_dir`:
    /// replay its log (left by a crash) and log through it from now on.
    /// Call before anything reads a session.
    pub fn open(sessions_dir: &Path) -> io::Result<(Store, Opening)> {
        fsio::create_private_dir_all(sessions_dir)?;
        // Taken before anything is written: it vouches for the state as the
        // last server left it, not for what this opening does.
        let closed = closed::take(sessions_dir)?;
        let state_dir = sessions_dir.parent().map(PathBuf::from).unwrap_or_default();
        let wal_dir = state_dir.join(wal::DIR);
        let (log, opening) = match Log::open(&wal_dir, &state_dir.join(crate::feed::DIR)) {
            Ok((log, replayed)) => (log, Opening::Writable(replayed)),
            Err(error) if fsio::is_disk_full(&error) => {
                let pending = wal::pending_roots(&wal_dir)?;
                (Log::none(), Opening::ReadOnly { pending, error })
            }
            Err(e) => return Err(e),
        };
        let mut store = Store::with_log(state_dir, sessions_dir, log);
        if let Some(inner) = Arc::get_mut(&mut store.inner) {
            inner.closed = closed;
        }
        Ok((store, opening))
    }

    /// A store without a log (engine unit tests; tools that only read):
    /// each write is made durable on its own.
    pub fn without_log(sessions_dir: &Path) -> Store {
        let state_dir = sessions_dir.parent().map(PathBuf::from).unwrap_or_default();
        Store::with_log(state_dir, sessions_dir, Log::none())
    }

    /// The store of the state directory `state_dir` (its sessions in
    /// `<state>/sessions`), opened as `open` does.
    pub fn open_state_dir(state_dir: &Path) -> io::Result<(Store, Opening)> {
        Store::open(&state_dir.join(SESSIONS))
    }

    fn with_log(state_dir: PathBuf, sessions_dir: &Path, log: Log) -> Store {
        Store {
            inner: Arc::new(Inner {
                state_dir,
                sessions_dir: sessions_dir.to_path_buf(),
                log,
                closed: None,
                redactor: None,
            }),
        }
    }

    /// Give the store its redactor; before the store is shared (clones
    /// made earlier keep none). False when it was shared already.
    pub fn set_redactor(&mut self, redactor: Arc<crate::redact::Redactor>) -> bool {
        match Arc::get_mut(&mut self.inner) {
            Some(inner) => {
                inner.redactor = Some(redactor);
                true
            }
            None => false,
        }
    }

    /// The redactor every stored text passes through.
    pub fn redactor(&self) -> Option<&crate::redact::Redactor> {
        self.inner.redactor.as_deref()
    }

    /// The entry number of the `index.json` the last server's clean
    /// shutdown vouched for (`closed.rs`), if this opening found its mark.
    pub fn closed_cleanly(&self) -> Option<u64> {
        self.inner.closed
    }

    /// Mark a clean shutdown: the list is `index.json` with entry number
    /// `seq` (`closed.rs`). The last write of a graceful stop.
    pub fn mark_closed(&self, seq: u64) -> io::Result<()> {
        closed::mark(&self.inner.sessions_dir, seq)
    }

    // ----- layout ---------------------------------------------------------

    pub fn state_dir(&self) -> &Path {
        &self.inner.state_dir
    }

    pub fn sessions_dir(&self) -> &Path {
        &self.inner.sessions_dir
    }

    /// Where a session that has no recorded location lives.
    pub fn default_session_dir(&self, id: &str) -> PathBuf {
        self.inner.sessions_dir.join(id)
    }

    /// `index.json`, the session list.
    pub fn session_list_file(&self) -> PathBuf {
        self.inner.sessions_dir.join(SESSION_LIST)
    }

    /// `locations.json`, read now.
    pub fn locations(&self) -> Locations {
        Locations::load(&self.inner.sessions_dir)
    }

    /// Every session folder: the scan of the sessions folder (names not
    /// starting with '.') merged with `locations`, de-duplicated (a
    /// recorded location wins).
    pub fn session_folders(&self, locations: &Locations) -> io::Result<SessionFolders> {
        self.session_folders_and_leftovers(locations)
            .map(|(folders, _)| folders)
    }

    /// `session_folders`, and the folders in the sessions folder that a
    /// creation or a deletion cut short left behind (named with
    /// `fsio::TMP_PREFIX`; a start removes them): one read of the folder.
    pub fn session_folders_and_leftovers(
        &self,
        locations: &Locations,
    ) -> io::Result<(SessionFolders, Vec<PathBuf>)> {
        let sessions_dir = &self.inner.sessions_dir;
        let mut leftovers = Vec::new();
        let mut out: Vec<(String, PathBuf)> = locations
            .iter()
            .map(|(id, dir)| (id.clone(), dir.clone()))
            .collect();
        for entry in fs::read_dir(sessions_dir)? {
            // One unreadable entry never stops startup: it is logged and
            // tried again at the next start.
            let entry = match entry {
                Ok(e) => e,
                Err(e) => {
                    tracing::warn!(dir = %sessions_dir.display(), error = %e, "unreadable entry in the sessions folder; skipped");
                    continue;
                }
            };
            let name = entry.file_name().to_string_lossy().into_owned();
            let is_dir = entry.file_type().map(|t| t.is_dir()).unwrap_or(false);
            if is_dir && name.starts_with(crate::fsio::TMP_PREFIX) {
                leftovers.push(entry.path());
            } else if !name.starts_with('.') && is_dir {
                if locations.get(&name).is_some() {
                    tracing::warn!(session = %name, "session found in the state directory and in locations.json; using the recorded location");
                    continue;
                }
                out.push((name, entry.path()));
            }
        }
        Ok((out, leftovers))
    }

    /// Every session folder, with `locations.json` read now.
    pub fn all_session_folders(&self) -> io::Result<Vec<(String, PathBuf)>> {
        self.session_folders(&self.locations())
    }

    /// Delete a session folder: renamed aside first (atomic), then
    /// removed, so a crash midway leaves a `.tmp-` folder (cleared at
    /// startup), never a half-deleted session. A barrier in the log then
    /// ends what the log holds for that folder: a session created again at
    /// the same place (a channel conversation's id is fixed) never gets
    /// the deleted one's files back from a replay.
    pub fn remove_session_folder(&self, dir: &Path) -> io::Result<()> {
        match self.take_session_folder(dir)? {
            Some(aside) => fs::remove_dir_all(&aside),
            None => Ok(()),
        }
    }

    /// Move a session folder out of the store to `dest`, kept whole and
    /// never served again (a cluster node that lost the session); the log
    /// and the feed see a deletion.
    pub fn set_aside_session_folder(&self, dir: &Path, dest: &Path) -> io::Result<()> {
        let Some(aside) = self.take_session_folder(dir)? else {
            return Ok(());
        };
        let parent = dest
            .parent()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no parent"))?;
        fsio::create_private_dir_all(parent)?;
        fs::rename(&aside, dest)?;
        fsio::fsync_dir(parent)
    }

    /// Rename a session folder to a `.tmp-delete-` sibling, then log a
    /// barrier and the deletion's feed event; the sibling's path (None
    /// when there was no folder).
    fn take_session_folder(&self, dir: &Path) -> io::Result<Option<PathBuf>> {
        let parent = dir
            .parent()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no parent"))?;
        let aside = parent.join(format!(
            "{}delete-{}",
            fsio::TMP_PREFIX,
            crate::ids::new_id()
        ));
        match fs::rename(dir, &aside) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        }
        fsio::fsync_dir(parent)?;
        let id = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let deleted = crate::feed::ChangeEvent::new(
            crate::feed::ChangeKind::SessionDeleted,
            &id,
            crate::meta::now(),
        );
        self.commit(vec![
            Change::Barrier {
                root: dir.to_path_buf(),
            },
            Change::Feed {
                root: dir.to_path_buf(),
                event: deleted.to_bytes(),
            },
        ])?;
        Ok(Some(aside))
    }

    // ----- the log --------------------------------------------------------

    /// Make `changes` durable (one log entry, or each on its own without
    /// a log), then apply them in order.
    pub fn commit(&self, changes: Vec<Change>) -> io::Result<()> {
        self.inner.log.commit(changes)
    }

    /// Make `changes` durable; the files are written by `apply` on the
    /// answer (`wal::Log::flush`).
    pub fn flush(&self, changes: Vec<Change>) -> io::Result<crate::wal::Flushed> {
        self.inner.log.flush(changes)
    }

    /// Whether the session folder `dir` has acknowledged writes that only
    /// a restart's replay puts in place (their files could not be
    /// written).
    pub fn awaits_replay(&self, dir: &Path) -> bool {
        self.inner.log.awaits_replay(dir)
    }

    /// Write the acknowledged entries the full disk refused, in the
    /// background (`wal::Log::retry_unapplied`).
    pub fn retry_unapplied(&self) {
        self.inner.log.retry_unapplied();
    }

    /// Checkpoint every entry logged so far and drop its segments
    /// (`wal::Log::checkpoint_now`).
    pub fn checkpoint_log(&self) -> io::Result<()> {
        self.inner.log.checkpoint_now()
    }

    /// The change feed (none without a log).
    pub fn feed(&self) -> Option<crate::feed::Feed> {
        self.inner.log.feed()
    }

    /// Whether writes go through an open log.
    pub fn is_logged(&self) -> bool {
        self.inner.log.is_logged()
    }

    /// Entries the log took since the store was opened.
    pub fn log_entries(&self) -> u64 {
        self.inner.log.entries()
    }

    /// Flush the log and make every file it covers durable (the last step
    /// of a shutdown; later writes sync on their own).
    pub fn close_log(&self) {
        self.inner.log.close();
    }
}

/// The project folder a session folder inside a project
/// (`<project>/.openprogram/sessions/<id>`) belongs to.
pub fn project_of_session_folder(dir: &Path) -> Option<PathBuf> {
    let sessions = dir.parent()?;
    let own = sessions.parent()?;
    (sessions.file_name()? == SESSIONS && own.file_name()? == OPENPROGRAM_DIR)
        .then(|| own.parent().map(Path::to_path_buf))
        .flatten()
}

/// Whether `dir` (`<project>/.openprogram/sessions/<id>`) is missing
/// because its whole project folder is.
pub fn project_folder_missing(dir: &Path) -> bool {
    dir.ancestors()
        .nth(3)
        .is_some_and(|project| !project.exists())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_stores_in_one_process_log_apart() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let (sa, _) = Store::open_state_dir(a.path()).unwrap();
        let (sb, _) = Store::open_state_dir(b.path()).unwrap();
        assert!(sa.is_logged() && sb.is_logged());
        let file = a.path().join("sessions").join("x");
        fs::create_dir_all(&file).unwrap();
        sa.commit(vec![Change::Put {
            root: file.clone(),
            path: file.join("f"),
            bytes: b"one".to_vec(),
        }])
        .unwrap();
        // What a log folder holds besides zeros (segments and the next
        // one, made ahead, are zeros past their entries).
        let segments = |d: &Path| -> usize {
            fs::read_dir(d.join(wal::DIR))
                .unwrap()
                .map(|e| fs::read(e.unwrap().path()).unwrap())
                .map(|bytes| bytes.iter().filter(|b| **b != 0).count())
                .sum()
        };
        assert!(segments(a.path()) > 0, "the entry is in a's log");
        assert_eq!(segments(b.path()), 0, "b's log holds nothing of a's");
        drop(sa);
        // Dropping the store closed its log: checkpointed and emptied.
        assert_eq!(segments(a.path()), 0);
        assert_eq!(fs::read(file.join("f")).unwrap(), b"one");
    }
}
