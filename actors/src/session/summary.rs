//! What the registry needs to know about a session directory without
//! loading it: its metadata, the preview of its latest user message, the
//! time of its latest conversational node, and whether it has any node.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use super::layout::{self, META};
use crate::fsio;
use crate::meta::SessionMeta;
use crate::node::{self, Node, Role};

pub struct Summary {
    pub meta: SessionMeta,
    pub preview: Option<String>,
    pub first_preview: Option<String>,
    pub has_messages: bool,
    /// `meta.json` as stored, when it says `running` (a crash left it so):
    /// what the startup's reset rewrites, without reading it again.
    pub running_as_stored: Option<SessionMeta>,
}

/// `None` when the directory is not a valid session (no parsable meta.json:
/// spec 000 §3.2 says such directories are skipped, never an error).
pub fn read_summary(dir: &Path) -> Option<Summary> {
    let mut meta = SessionMeta::read_lenient(&dir.join(META)).ok()?;
    let running_as_stored = (meta.status == crate::meta::Status::Running).then(|| meta.clone());
    if let Some(name) = dir.file_name().and_then(|n| n.to_str()) {
        meta.id = name.to_string();
    }
    let mut preview = None;
    let mut has_messages = false;
    let mut latest_conversational = None;
    let history = dir.join(layout::HISTORY);
    let mut seen = Seen::default();
    // Walk the history newest first: history/<AA>/<BB>/<files>, names sort
    // chronologically, so the scan usually stops after a few files.
    'outer: for a in seen.listing(&history).iter().rev() {
        for b in seen.listing(a).iter().rev() {
            for file in seen.listing(b).iter().rev() {
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
                let Some(n) = seen.node(file) else {
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
        first_user_preview(&history, &mut seen)
    } else {
        None
    };
    Some(Summary {
        meta,
        preview,
        first_preview,
        has_messages,
        running_as_stored,
    })
}

/// First 80 characters of the first user message (oldest first scan; it is
/// nearly always the first file).
fn first_user_preview(history: &Path, seen: &mut Seen) -> Option<String> {
    for a in seen.listing(history).iter() {
        for b in seen.listing(a).iter() {
            for file in seen.listing(b).iter() {
                let name = file.file_name().and_then(|n| n.to_str())?;
                if !matches!(layout::parse_node_file_name(name), Some((_, Role::User, _))) {
                    continue;
                }
                if let Some(n) = seen.node(file) {
                    if n.caller.is_none() {
                        return first_preview(&n.text());
                    }
                }
            }
        }
    }
    None
}

/// The folders listed and the nodes read while one session is summarized:
/// the newest-first and the oldest-first walks meet in the same folders
/// (one folder of each level for a session of up to 10,000 nodes), and
/// often at the same node, so each is read once.
#[derive(Default)]
struct Seen {
    listings: HashMap<PathBuf, std::rc::Rc<[PathBuf]>>,
    nodes: HashMap<PathBuf, std::rc::Rc<Node>>,
}

impl Seen {
    /// The entries of `dir`, sorted by name (oldest first).
    fn listing(&mut self, dir: &Path) -> std::rc::Rc<[PathBuf]> {
        self.listings
            .entry(dir.to_path_buf())
            .or_insert_with(|| sorted_asc(dir).into())
            .clone()
    }

    fn node(&mut self, file: &Path) -> Option<std::rc::Rc<Node>> {
        if let Some(n) = self.nodes.get(file) {
            return Some(n.clone());
        }
        let n = std::rc::Rc::new(fsio::read_json::<Node>(file).ok()?);
        self.nodes.insert(file.to_path_buf(), n.clone());
        Some(n)
    }
}

/// The first 80 characters of a message on one line.
pub fn first_preview(text: &str) -> Option<String> {
    let p = node::one_line_prefix(text, 80);
    (!p.trim().is_empty()).then(|| p.trim().to_string())
}

fn sorted_asc(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<_> = match fs::read_dir(dir) {
        Ok(entries) => entries.filter_map(|e| e.ok().map(|e| e.path())).collect(),
        Err(_) => Vec::new(),
    };
    v.sort();
    v
}

/// Entries a session directory may hold. Anything else is something the
/// store does not understand, and it keeps the directory.
const KNOWN: [&str; 9] = [
    ".git",
    ".gitignore",
    "meta.json",
    "history",
    "context",
    "workdir",
    "queue",
    "messages",
    "legacy",
];

/// Whether `dir` is an empty shell that startup may delete: no file at all
/// under `history/` (any layout), `messages/` (spec 001's), `context/` or
/// `queue/`, no commit beyond an initial one, and nothing the store does
/// not know. Anything unclear keeps the directory (and is logged).
pub fn is_empty_shell(dir: &Path) -> bool {
    let Ok(entries) = fs::read_dir(dir) else {
        return false;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !KNOWN.contains(&name.as_str()) && !name.starts_with(fsio::TMP_PREFIX) {
            tracing::warn!(dir = %dir.display(), entry = %name, "unknown entry in an empty-looking session; kept");
            return false;
        }
    }
    for sub in [
        layout::HISTORY,
        "messages",
        "context",
        layout::QUEUE,
        "legacy",
    ] {
        if has_any_file(&dir.join(sub)) {
            return false;
        }
    }
    let commits = crate::git::open_repo(dir)
        .ok()
        .and_then(|repo| {
            let head = crate::git::head_commit(&repo).ok()??;
            let mut walk = repo.revwalk().ok()?;
            walk.push(head.id()).ok()?;
            Some(walk.take(2).count())
        })
        .unwrap_or(0);
    commits <= 1
}

fn has_any_file(dir: &Path) -> bool {
    let Ok(entries) = fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|e| match e.file_type() {
        Ok(t) if t.is_dir() => has_any_file(&e.path()),
        Ok(_) => true,
        Err(_) => true,
    })
}
