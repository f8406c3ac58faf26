//! The durable queue of user messages that arrive while a turn runs
//! (`queue/NNNNNNNN-<id>.json`); the next turn opens with the oldest.

use std::fs;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::core::SessionCore;
use super::error::SessionError;
use super::layout;
use super::wire::{AppendOutcome, NewNode, Posted};
use crate::fsio;
use crate::ids;
use crate::meta::{now, ProjectBaseline};
use crate::node::Role;

/// A user message waiting for the running turn to end.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Queued {
    pub id: String,
    pub content: Value,
    #[serde(default)]
    pub metadata: Map<String, Value>,
    pub queued_at: f64,
    /// Arrival order.
    pub position: u64,
}

impl SessionCore {
    /// Post a user message: while a turn is running it is queued durably
    /// (the next turn opens with it when this one ends), otherwise appended.
    /// A message id already stored or queued is not stored again.
    pub fn post(
        &mut self,
        mut new: NewNode,
        baseline: Option<ProjectBaseline>,
    ) -> Result<Posted, SessionError> {
        let busy = self.meta.open_turn.is_some() && self.meta.run_holds();
        let opens_turn = new.role == Role::User && new.caller.is_none();
        if let Some(id) = &new.id {
            ids::validate("node id", id)?;
            if let Some(q) = self.queue.iter().find(|q| &q.id == id) {
                return Ok(Posted::Queued {
                    message_id: q.id.clone(),
                    position: q.position,
                    queue_length: self.queue.len(),
                });
            }
            if self.dag.contains(id) {
                return self
                    .append_with(new, baseline)
                    .map(|o| Posted::Appended(Box::new(o)));
            }
        }
        if !(busy && opens_turn) {
            return self
                .append_with(new, baseline)
                .map(|o| Posted::Appended(Box::new(o)));
        }
        self.redact_new(&mut new)?;
        let position = self.queue.last().map_or(1, |q| q.position + 1);
        let q = Queued {
            id: new.id.unwrap_or_else(ids::new_id),
            content: new.content,
            metadata: new.metadata,
            queued_at: now(),
            position,
        };
        let dir = self.dir.join(layout::QUEUE);
        if !dir.exists() {
            fsio::create_dir_durable(&dir)?;
        }
        fsio::atomic_write_json(&dir.join(format!("{position:08}-{}.json", q.id)), &q)?;
        let message_id = q.id.clone();
        self.queue.push(q);
        Ok(Posted::Queued {
            message_id,
            position,
            queue_length: self.queue.len(),
        })
    }

    /// Whether a queued message waits and no turn is open to hold it.
    pub fn next_queued_ready(&self) -> bool {
        !self.queue.is_empty() && self.meta.open_turn.is_none()
    }

    /// Open the next turn with the oldest queued message. The node is
    /// appended (durably) before its queue file is removed, so a crash in
    /// between keeps it exactly once (`load_queue` drops the duplicate).
    pub fn start_queued_turn(
        &mut self,
        baseline: Option<ProjectBaseline>,
    ) -> Result<Option<AppendOutcome>, SessionError> {
        if !self.next_queued_ready() {
            return Ok(None);
        }
        let q = self.queue.remove(0);
        let node = NewNode {
            id: Some(q.id.clone()),
            role: Role::User,
            content: q.content.clone(),
            predecessor: None,
            caller: None,
            metadata: q.metadata.clone(),
            name: None,
            output: None,
            at: None,
        };
        let out = match self.append_with(node, baseline) {
            Ok(o) => o,
            Err(e) => {
                self.queue.insert(0, q);
                return Err(e);
            }
        };
        let _ = fs::remove_file(
            self.dir
                .join(layout::QUEUE)
                .join(format!("{:08}-{}.json", q.position, q.id)),
        );
        Ok(Some(out))
    }

    pub fn queue_len(&self) -> usize {
        self.queue.len()
    }

    pub(super) fn load_queue(&mut self) -> Result<(), SessionError> {
        let dir = self.dir.join(layout::QUEUE);
        let Ok(entries) = fs::read_dir(&dir) else {
            return Ok(());
        };
        let mut files: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        files.sort();
        for path in files {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if name.starts_with(fsio::TMP_PREFIX) {
                fs::remove_file(&path)?;
                continue;
            }
            match fsio::read_json::<Queued>(&path) {
                // Already turned into a node before a crash: drop the copy.
                Ok(q) if self.dag.contains(&q.id) => fs::remove_file(&path)?,
                Ok(q) => self.queue.push(q),
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "unreadable queued message; skipped")
                }
            }
        }
        Ok(())
    }
}
