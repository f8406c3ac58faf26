//! The context snapshots of a session (`context/commits/<id>.json`, stored
//! with the end of a turn): which turn's commit brought each one, on the
//! path shown now (the current branch, or the replayed line).

use std::collections::HashMap;
use std::path::Path;

use git2::{Oid, Repository};
use serde::Serialize;
use serde_json::Value;

use super::core::SessionCore;
use super::error::SessionError;
use super::graph::Graph;
use super::layout;

/// One context snapshot and the turn commit that stored it.
#[derive(Debug, Clone, Serialize)]
pub struct ContextRecord {
    /// The context id (its file name without `.json`).
    pub id: String,
    /// The turn commit that stored (or last changed) it.
    pub commit: String,
    pub turn: u64,
    /// The node the turn ended on.
    pub head_node: Option<String>,
    /// The commit's time (the turn's end), seconds since the epoch.
    pub created_at: i64,
    /// The next older snapshot on the same path.
    pub previous: Option<String>,
    /// The snapshot as stored (`null` when the file is not valid JSON).
    pub content: Value,
}

/// The snapshot files of one commit's tree: name (without `.json`) → blob.
fn snapshots(repo: &Repository, commit: Oid) -> Result<HashMap<String, Oid>, SessionError> {
    let tree = repo.find_commit(commit)?.tree()?;
    let Ok(entry) = tree.get_path(Path::new(layout::CONTEXT_COMMITS)) else {
        return Ok(HashMap::new());
    };
    let Ok(dir) = repo.find_tree(entry.id()) else {
        return Ok(HashMap::new());
    };
    Ok(dir
        .iter()
        .filter_map(|e| {
            let name = e.name()?.strip_suffix(".json")?.to_owned();
            Some((name, e.id()))
        })
        .collect())
}

impl SessionCore {
    /// The snapshots stored by the turns of the path shown now, newest
    /// first, at most `limit` of them.
    pub fn contexts(&self, limit: usize) -> Result<Vec<ContextRecord>, SessionError> {
        let graph = Graph::read(self)?;
        let (branch, shown) = self.shown(&graph);
        let line = graph.line(&branch);
        let start = shown
            .and_then(|s| line.iter().position(|o| *o == s))
            .unwrap_or(0);
        let mut out: Vec<ContextRecord> = Vec::new();
        let mut here = match line.get(start) {
            Some(oid) => snapshots(&self.repo, *oid)?,
            None => return Ok(out),
        };
        for (i, oid) in line.iter().enumerate().skip(start) {
            if out.len() >= limit {
                break;
            }
            let before = match line.get(i + 1) {
                Some(parent) => snapshots(&self.repo, *parent)?,
                None => HashMap::new(),
            };
            let Some(row) = graph.row(*oid) else { break };
            let mut added: Vec<(&String, &Oid)> = here
                .iter()
                .filter(|(name, blob)| before.get(*name) != Some(*blob))
                .collect();
            added.sort();
            for (name, blob) in added {
                let content = self
                    .repo
                    .find_blob(*blob)
                    .ok()
                    .and_then(|b| serde_json::from_slice(b.content()).ok())
                    .unwrap_or(Value::Null);
                out.push(ContextRecord {
                    id: name.clone(),
                    commit: oid.to_string(),
                    turn: row.trailers.turn,
                    head_node: row.trailers.head_node.clone(),
                    created_at: row.time,
                    previous: None,
                    content,
                });
            }
            here = before;
        }
        out.truncate(limit);
        let ids: Vec<String> = out.iter().map(|c| c.id.clone()).collect();
        for (record, older) in out.iter_mut().zip(ids.iter().skip(1)) {
            record.previous = Some(older.clone());
        }
        Ok(out)
    }

    /// One snapshot of the path shown now, by id.
    pub fn context(&self, id: &str) -> Result<ContextRecord, SessionError> {
        self.contexts(usize::MAX)?
            .into_iter()
            .find(|c| c.id == id)
            .ok_or_else(|| SessionError::UnknownContext(id.to_string()))
    }
}
