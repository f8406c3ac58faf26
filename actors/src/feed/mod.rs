//! The change feed: every commit of a session, every agent commit in a
//! project, and a session's deletion or archiving, in the order they were
//! made durable, for pipelines that follow what changed
//! (`GET /api/changes`).
//!
//! An event travels in the same write-ahead log entry as the change it
//! describes, so it is durable exactly when that change is. The log's
//! writer thread appends the events of each flushed batch to the feed's
//! segments, in log order, each record naming the log position it came
//! from; after a crash, replay appends the events of the entries logged
//! after the feed's last record. So the feed never misses a change and
//! never holds one twice. A record is shown to readers only once the
//! files of its entry are in place (`Shared::visible`), so a reader that
//! follows an event to the session finds the commit there.
//!
//! Cursors are opaque: the next sequence number with the segment and
//! offset where it starts, so reading from one is a seek.

mod reader;
pub mod record;
mod writer;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

pub use reader::{Cursor, FeedError, Page};
pub use record::LogPosition;
pub use writer::FeedWriter;

/// The feed's folder in the state directory.
pub const DIR: &str = "changes";

/// What changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// A commit in a session's repository (`turn` names the turn it
    /// ended; none for the session's first commit).
    Commit,
    /// The agent's commit in the session's project for a turn.
    ProjectCommit,
    SessionDeleted,
    SessionArchived,
    SessionUnarchived,
    /// A branch a user's git moved back, put back on its acknowledged
    /// commit (`commit`) at a load or before a write: replicas follow it
    /// again.
    BranchRestored,
    /// The session's history was rewritten by a purge (`purge` names the
    /// record that maps old commits to new; `commit` is the new HEAD).
    SessionPurged,
}

/// One event of the feed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChangeEvent {
    pub kind: ChangeKind,
    pub session_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u64>,
    /// The commit (a session commit, or for `project_commit` the commit in
    /// the project's repository).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// For `project_commit`: the session commit of the same turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_commit: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub node_ids: Vec<String>,
    /// For `session_purged`: the purge record's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub purge: Option<String>,
    /// When it happened (seconds since the epoch; a commit's own time).
    pub time: f64,
}

impl ChangeEvent {
    pub fn new(kind: ChangeKind, session_id: &str, time: f64) -> ChangeEvent {
        ChangeEvent {
            kind,
            session_id: session_id.to_string(),
            project_id: None,
            branch: None,
            turn: None,
            commit: None,
            session_commit: None,
            node_ids: Vec::new(),
            purge: None,
            time,
        }
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }
}

/// The part readers and the appending side share.
pub struct Shared {
    dir: PathBuf,
    state: Mutex<Visibility>,
    notify: tokio::sync::watch::Sender<u64>,
}

#[derive(Default)]
struct Visibility {
    /// The last sequence number written to a segment.
    written: u64,
    /// First sequence numbers of batches written whose files are not in
    /// place yet.
    applying: BTreeSet<u64>,
}

impl Visibility {
    fn visible(&self) -> u64 {
        match self.applying.first() {
            Some(first) => first.saturating_sub(1).min(self.written),
            None => self.written,
        }
    }
}

impl Shared {
    pub fn new(dir: &Path, written: u64) -> Arc<Shared> {
        let (notify, _) = tokio::sync::watch::channel(written);
        Arc::new(Shared {
            dir: dir.to_path_buf(),
            state: Mutex::new(Visibility {
                written,
                applying: BTreeSet::new(),
            }),
            notify,
        })
    }

    /// The last sequence number readers may see.
    pub fn visible(&self) -> u64 {
        self.state.lock().map(|s| s.visible()).unwrap_or(0)
    }

    /// Records up to `written` are in the segments; those from each of
    /// `applying` on wait for their entry's files (`Hold`).
    pub fn written(self: &Arc<Self>, written: u64, applying: &[u64]) -> Vec<Hold> {
        let visible = match self.state.lock() {
            Ok(mut s) => {
                s.applying.extend(applying.iter().copied());
                s.written = s.written.max(written);
                s.visible()
            }
            Err(_) => return Vec::new(),
        };
        self.notify.send_replace(visible);
        applying
            .iter()
            .map(|first| Hold {
                shared: self.clone(),
                first: *first,
            })
            .collect()
    }

    fn applied(&self, first: u64) {
        let visible = match self.state.lock() {
            Ok(mut s) => {
                s.applying.remove(&first);
                s.visible()
            }
            Err(_) => return,
        };
        self.notify.send_replace(visible);
    }
}

/// Held while an entry's files are written in place: its records become
/// visible when it is dropped.
pub struct Hold {
    shared: Arc<Shared>,
    first: u64,
}

impl Drop for Hold {
    fn drop(&mut self) {
        self.shared.applied(self.first);
    }
}

/// A reader's handle on the feed (cheap to clone).
#[derive(Clone)]
pub struct Feed {
    shared: Arc<Shared>,
}

impl Feed {
    pub fn new(shared: Arc<Shared>) -> Feed {
        Feed { shared }
    }

    /// The last sequence number readers may see.
    pub fn visible(&self) -> u64 {
        self.shared.visible()
    }

    /// Wait (at most `limit`) until every event written before this call
    /// is visible: an answered write's files may still be going in place
    /// (a whole turn is answered once its entry is durable), and a reader
    /// that asks after the answer sees its event.
    pub async fn settle(&self, limit: std::time::Duration) {
        let written = match self.shared.state.lock() {
            Ok(s) if s.visible() < s.written => s.written,
            _ => return,
        };
        let mut rx = self.subscribe();
        let _ = tokio::time::timeout(limit, rx.wait_for(|v| *v >= written)).await;
    }

    /// Changes to the visible sequence number (long-poll, streams).
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.shared.notify.subscribe()
    }

    /// Up to `limit` events after `cursor` (from the oldest kept without
    /// one), and the cursor to continue from.
    pub fn read(&self, cursor: Option<&Cursor>, limit: usize) -> Result<Page, FeedError> {
        reader::read(&self.shared.dir, cursor, limit, self.visible())
    }

    /// A cursor after every event visible now (follow only what comes).
    pub fn end(&self) -> Result<Cursor, FeedError> {
        reader::end(&self.shared.dir, self.visible())
    }
}

#[cfg(test)]
mod tests;
