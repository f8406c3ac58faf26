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
    pub first_preview: Option<String>,
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
    let first_preview = if has_messages {
        first_user_preview(&dir.join(layout::HISTORY))
    } else {
        None
    };
    Some(Summary {
        meta,
        preview,
        first_preview,
        has_messages,
    })
}

/// First 80 characters of the first user message (oldest first scan; it is
/// nearly always the first file).
fn first_user_preview(history: &Path) -> Option<String> {
    for a in sorted_asc(history) {
        for b in sorted_asc(&a) {
            for file in sorted_asc(&b) {
                let name = file.file_name().and_then(|n| n.to_str())?.to_string();
                if !matches!(
                    layout::parse_node_file_name(&name),
                    Some((_, Role::User, _))
                ) {
                    continue;
                }
                if let Ok(n) = fsio::read_json::<Node>(&file) {
                    if n.caller.is_none() {
                        return first_preview(&n.text());
                    }
                }
            }
        }
    }
    None
}

/// The first 80 characters of a message on one line.
pub fn first_preview(text: &str) -> Option<String> {
    let p = node::one_line_prefix(text, 80);
    (!p.trim().is_empty()).then(|| p.trim().to_string())
}

fn sorted_asc(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v = sorted_desc(dir);
    v.reverse();
    v
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
