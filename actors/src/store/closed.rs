//! The mark of a clean shutdown (`sessions/index.closed`): a server that
//! drained its requests, wrote `index.json` whole and closed its log says
//! so, naming the snapshot's entry number. The next start that finds the
//! mark, the same `index.json`, an empty journal and nothing in the log to
//! replay takes the list as it is, without looking at every session's
//! `meta.json` (one stat per session: a quarter of a 10,000-session start).
//!
//! The mark is taken away by whoever opens the store next (`Store::open`:
//! the server, and every offline tool that writes), before anything is
//! written, so it never outlives the state it vouches for. What it cannot
//! see: a `meta.json` edited by hand while the server was stopped (the
//! next change of that session, or a start after a crash, corrects the
//! row); documented in OPERATIONS.

use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::fsio;

/// The mark's file name, in the sessions folder.
pub const CLOSED: &str = "index.closed";

#[derive(Serialize, Deserialize)]
struct Mark {
    /// The entry number of the `index.json` written at the shutdown.
    seq: u64,
}

/// Leave the mark: the list written at this shutdown is `index.json` with
/// entry number `seq`. Durable before it returns.
pub fn mark(sessions_dir: &Path, seq: u64) -> io::Result<()> {
    fsio::atomic_write_json(&sessions_dir.join(CLOSED), &Mark { seq })
}

/// Take the mark away (durably) and return the entry number it named, if
/// there was one. An unreadable mark counts as none.
pub fn take(sessions_dir: &Path) -> io::Result<Option<u64>> {
    let path = sessions_dir.join(CLOSED);
    let seq = match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice::<Mark>(&bytes).ok().map(|m| m.seq),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    std::fs::remove_file(&path)?;
    fsio::fsync_dir(sessions_dir)?;
    Ok(seq)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mark_is_read_once() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(take(dir.path()).unwrap(), None);
        mark(dir.path(), 42).unwrap();
        assert_eq!(take(dir.path()).unwrap(), Some(42));
        assert_eq!(take(dir.path()).unwrap(), None);
        // A damaged mark vouches for nothing, and is gone too.
        std::fs::write(dir.path().join(CLOSED), b"{\"se").unwrap();
        assert_eq!(take(dir.path()).unwrap(), None);
        assert!(!dir.path().join(CLOSED).exists());
    }
}
