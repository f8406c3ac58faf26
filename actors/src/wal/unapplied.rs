//! Entries acknowledged and durable in the log whose files could not be
//! written in place (the disk filled between the flush and the write):
//! their sessions refuse requests while they wait, and they are written
//! again, in log order, once the disk takes them. A restart's replay does
//! the same from the segments, which stay until then.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use super::{writer, Change};

/// One entry waiting to be written in place.
struct Waiting {
    roots: Vec<PathBuf>,
    changes: Vec<Change>,
}

/// The entries waiting, shared by the log and every `Flushed` it hands
/// out (cheap to clone).
#[derive(Clone, Default)]
pub(super) struct Unapplied {
    waiting: Arc<Mutex<Vec<Waiting>>>,
    /// A retry is under way (one at a time).
    retrying: Arc<AtomicBool>,
}

impl Unapplied {
    /// Keep an entry whose files were not (all) written.
    pub(super) fn keep(&self, changes: Vec<Change>) {
        let mut roots: Vec<PathBuf> = changes
            .iter()
            .map(|c| writer::root_of(c).to_path_buf())
            .collect();
        roots.sort();
        roots.dedup();
        let mut waiting = match self.waiting.lock() {
            Ok(w) => w,
            Err(poisoned) => poisoned.into_inner(),
        };
        waiting.push(Waiting { roots, changes });
    }

    /// Whether the session folder `root` has an entry waiting.
    pub(super) fn awaits(&self, root: &Path) -> bool {
        let waiting = match self.waiting.lock() {
            Ok(w) => w,
            Err(poisoned) => poisoned.into_inner(),
        };
        waiting.iter().any(|w| w.roots.iter().any(|r| r == root))
    }

    /// Write the waiting entries in place, oldest first, each change with
    /// its own fsyncs; an entry written is forgotten. Stops at the first
    /// that still fails (the disk is still full). The lock is held
    /// throughout, so no session of theirs is read half written.
    pub(super) fn write_waiting(&self) -> io::Result<usize> {
        let mut waiting = match self.waiting.lock() {
            Ok(w) => w,
            Err(poisoned) => poisoned.into_inner(),
        };
        let mut written = 0;
        while let Some(first) = waiting.first() {
            first
                .changes
                .iter()
                .try_for_each(|c| super::apply(c, true))?;
            waiting.remove(0);
            written += 1;
        }
        Ok(written)
    }

    /// `write_waiting` on a blocking thread of the current runtime (or a
    /// thread of its own outside one), unless one is under way already.
    pub(super) fn retry_in_background(&self) {
        if self.retrying.swap(true, Ordering::SeqCst) {
            return;
        }
        let me = self.clone();
        let job = move || {
            match me.write_waiting() {
                Ok(0) => {}
                Ok(n) => tracing::info!(
                    entries = n,
                    "acknowledged writes that the full disk refused are in place now"
                ),
                Err(e) => {
                    tracing::warn!(error = %e, "acknowledged writes still wait for disk space")
                }
            }
            me.retrying.store(false, Ordering::SeqCst);
        };
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                rt.spawn_blocking(job);
            }
            Err(_) => {
                if let Err(e) = std::thread::Builder::new()
                    .name("wal-retry".into())
                    .spawn(job)
                {
                    tracing::warn!(error = %e, "no thread for the retry of waiting writes");
                    self.retrying.store(false, Ordering::SeqCst);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_wait_in_order_until_their_files_can_be_written() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("s1");
        let put = |name: &str, bytes: &[u8]| Change::Put {
            root: root.clone(),
            path: root.join("history").join(name),
            bytes: bytes.to_vec(),
        };
        let u = Unapplied::default();
        assert!(!u.awaits(&root));
        u.keep(vec![put("a.json", b"first"), put("b.json", b"b")]);
        u.keep(vec![put("a.json", b"second")]);
        assert!(u.awaits(&root) && !u.awaits(&tmp.path().join("s2")));
        // The folder is missing (as a write the disk refused): nothing is
        // forgotten.
        assert!(u.write_waiting().is_err());
        assert!(u.awaits(&root));
        std::fs::create_dir_all(root.join("history")).unwrap();
        assert_eq!(u.write_waiting().unwrap(), 2);
        assert!(!u.awaits(&root));
        // In log order: the later entry's image is the file's.
        assert_eq!(
            std::fs::read(root.join("history/a.json")).unwrap(),
            b"second"
        );
        assert_eq!(std::fs::read(root.join("history/b.json")).unwrap(), b"b");
    }
}
