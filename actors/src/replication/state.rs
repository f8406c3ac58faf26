//! A remote's replication state: what is queued (saved in
//! `<state>/replication/<remote>.json`, so a pending push survives a
//! restart) and what the listings show (last push per session, errors,
//! counters).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::error::PushError;
use crate::fsio;

/// The part of the state that is saved.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Saved {
    /// The change feed's cursor after the last event taken into `pending`.
    pub cursor: Option<String>,
    /// Sessions with changes not yet on the remote, with when the oldest
    /// of them was seen (seconds since the epoch).
    pub pending: BTreeMap<String, f64>,
    /// Deleted sessions whose remote copy is to be deleted too.
    pub deletions: BTreeSet<String>,
    /// The last successful push of each session.
    pub pushed: BTreeMap<String, PushedAt>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PushedAt {
    /// The session's HEAD commit when it was pushed.
    pub commit: Option<String>,
    pub at: f64,
}

impl Saved {
    /// The saved state, or None when the remote is new here.
    pub fn load(path: &Path) -> std::io::Result<Option<Saved>> {
        match fsio::read_json(path) {
            Ok(s) => Ok(Some(s)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            // A damaged file (it is written atomically, so only by hand):
            // start over from a full push.
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                tracing::warn!(path = %path.display(), error = %e, "replication state unreadable; every session is pushed again");
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        fsio::atomic_write_json(path, self)
    }
}

/// A session's last failure on this remote.
#[derive(Debug, Clone, Serialize)]
pub struct Failure {
    pub code: &'static str,
    pub message: String,
    pub at: f64,
}

/// Everything the worker keeps and the listings read.
#[derive(Debug, Default)]
pub struct Status {
    pub saved: Saved,
    pub errors: HashMap<String, Failure>,
    pub pushes: u64,
    pub failures: u64,
    pub last_error: Option<Failure>,
    pub last_push_at: Option<f64>,
}

impl Status {
    pub fn failed(&mut self, session: &str, e: &PushError, at: f64) {
        let f = Failure {
            code: e.code(),
            message: e.to_string(),
            at,
        };
        self.failures += 1;
        self.last_error = Some(f.clone());
        self.errors.insert(session.to_string(), f);
    }

    pub fn pushed(&mut self, session: &str, commit: Option<String>, at: f64) {
        self.pushes += 1;
        self.last_push_at = Some(at);
        self.errors.remove(session);
        self.saved
            .pushed
            .insert(session.to_string(), PushedAt { commit, at });
    }

    /// Seconds the oldest queued change has waited.
    pub fn lag(&self, now: f64) -> f64 {
        self.saved
            .pending
            .values()
            .map(|since| (now - since).max(0.0))
            .fold(0.0, f64::max)
    }
}
