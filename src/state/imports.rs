//! The imports running through `POST /api/imports`, with their progress.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use openprogram_actors::importers::{ImportProgress, Tool};
use serde::Serialize;

/// A file untouched this long is not being written any more.
pub const SETTLE: std::time::Duration = std::time::Duration::from_secs(60);

/// One import running.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Run {
    pub id: u64,
    pub tool: String,
    /// Files read so far, of those found.
    pub files_done: u64,
    pub files_total: u64,
    /// Turns written so far.
    pub turns: u64,
    /// When it started (seconds since the epoch).
    pub started_at: f64,
}

/// The imports running on this server.
#[derive(Default, Clone)]
pub struct Runs {
    next: Arc<AtomicU64>,
    running: Arc<Mutex<BTreeMap<u64, Run>>>,
}

impl Runs {
    pub fn start(&self, tool: Tool) -> u64 {
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        if let Ok(mut r) = self.running.lock() {
            r.insert(
                id,
                Run {
                    id,
                    tool: tool.as_str().into(),
                    files_done: 0,
                    files_total: 0,
                    turns: 0,
                    started_at: openprogram_actors::meta::now(),
                },
            );
        }
        id
    }

    pub fn update(&self, id: u64, p: ImportProgress) {
        if let Some(run) = self
            .running
            .lock()
            .ok()
            .as_mut()
            .and_then(|r| r.get_mut(&id))
        {
            run.files_done = p.files_done;
            run.files_total = p.files_total;
            run.turns = p.turns;
        }
    }

    pub fn end(&self, id: u64) {
        if let Ok(mut r) = self.running.lock() {
            r.remove(&id);
        }
    }

    pub fn list(&self) -> Vec<Run> {
        self.running
            .lock()
            .map(|r| r.values().cloned().collect())
            .unwrap_or_default()
    }
}
