//! What the registry needs to know about a session directory without
//! loading it: its metadata, the preview of its latest user message, the
//! time of its latest conversational node, and whether it has any node.

use std::fs;
use std::path::Path;

use super::layout::{self, META};
use crate::fsio;
use crate::meta::SessionMeta;
use crate::node::{self, Node, Role};

pub struct Summary {
    pub meta: SessionMeta,
    pub preview: Option<String>,
    pub has_messages: bool,
}

/// `None` when the directory is not a valid session (no parsable meta.json:
/// spec 000 §3.2 says such directories are skipped, never an error).
pub fn read_summary(dir: &Path) -> Option<Summary> {
    let mut meta: SessionMeta = fsio::read_json(&dir.join(META)).ok()?;
    if let Some(name) = dir.file_name().and_then(|n| n.to_str()) {
        meta.id = name.to_string();
    }
    let mut preview = None;
    let mut has_messages = false;
    let mut latest_conversational = None;
    // Walk the history newest first: history/<AA>/<BB>/<files>, names sort
    // chronologically, so the scan usually stops after a few files.
    'outer: for a in sorted_desc(&dir.join(layout::HISTORY)) {
        for b in sorted_desc(&a) {
            for file in sorted_desc(&b) {
                let Some(name) = file.file_name().and_then(|n| n.to_str()) else {
                    continue;
                };
                let Some((_, role, _)) = layout::parse_node_file_name(name) else {
                    continue;
                };
                has_messages = true;
                if !matches!(role, Role::User | Role::Assistant) {
                    continue;
                }
                let Ok(n) = fsio::read_json::<Node>(&file) else {
                    continue;
                };
                if n.caller.is_some() {
                    continue;
                }
                latest_conversational.get_or_insert(n.created_at);
                if role == Role::User {
                    preview = node::preview(&n.text());
                    break 'outer;
                }
            }
        }
    }
    if let Some(t) = latest_conversational {
        meta.updated_at = meta.updated_at.max(t);
    }
    Some(Summary {
        meta,
        preview,
        has_messages,
    })
}

fn sorted_desc(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = match fs::read_dir(dir) {
        Ok(entries) => entries.filter_map(|e| e.ok().map(|e| e.path())).collect(),
        Err(_) => Vec::new(),
    };
    v.sort();
    v.reverse();
    v
}
