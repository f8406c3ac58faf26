//! Node contents, read when asked for: the nodes of the open turn are
//! kept whole (the end of the turn describes them in its commit), every
//! other node is read from its history file in the work tree, or from git
//! when its branch is not the one checked out. The index (`node_index.rs`)
//! knows where each one is.

use std::collections::{HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};

use super::core::SessionCore;
use super::error::SessionError;
use super::layout;
use super::node_index::NodeRef;
use crate::git;
use crate::node::{Node, Role};

/// Texts the registry shows for the session, kept so that telling it of a
/// change reads nothing: the latest user message's (by the node it comes
/// from) and the first one's.
#[derive(Default)]
pub(super) struct Previews {
    last: Option<(u32, String)>,
    first: Option<(u32, String)>,
    /// Nodes before this position hold no user message.
    scanned: usize,
}

impl SessionCore {
    /// A node whole, by id.
    pub fn node_full(&self, id: &str) -> Result<Node, SessionError> {
        let r = self
            .node(id)
            .ok_or_else(|| SessionError::UnknownNode(id.to_string()))?;
        self.load_node(r)
    }

    /// A node whole: kept (open turn), else its file, else its blob.
    pub fn load_node(&self, r: NodeRef<'_>) -> Result<Node, SessionError> {
        if let Some(n) = self.cached_node(r.id()) {
            return Ok(n.clone());
        }
        let rel = layout::node_rel_path(r.seq(), r.role(), r.id());
        if let Some(n) = read_file(&self.dir.join(&rel), r)? {
            return Ok(n);
        }
        for tip in self.tips()? {
            let tree = self.repo.find_commit(tip)?.tree()?;
            if let Ok(entry) = tree.get_path(&rel) {
                if let Some(n) = parse(self.repo.find_blob(entry.id())?.content(), r) {
                    return Ok(n);
                }
            }
        }
        Err(not_held(r))
    }

    /// The commits a node no longer in the work tree is looked for in:
    /// every branch's tip, then the acknowledged tips (a branch a user
    /// moved back with git still has its turns there).
    fn tips(&self) -> Result<Vec<git2::Oid>, SessionError> {
        let mut tips: Vec<git2::Oid> = git::list_branches(&self.repo)?
            .into_iter()
            .map(|t| t.oid)
            .collect();
        for (_, oid) in super::outside::acked_tips(&self.repo)? {
            if !tips.contains(&oid) {
                tips.push(oid);
            }
        }
        Ok(tips)
    }

    /// The nodes `refs`, whole, in that order.
    pub(super) fn load_nodes(&self, refs: &[NodeRef<'_>]) -> Result<Vec<Node>, SessionError> {
        let mut out: Vec<Option<Node>> = Vec::with_capacity(refs.len());
        let mut missing: HashMap<PathBuf, usize> = HashMap::new();
        for (i, &r) in refs.iter().enumerate() {
            if let Some(n) = self.cached_node(r.id()) {
                out.push(Some(n.clone()));
                continue;
            }
            let rel = layout::node_rel_path(r.seq(), r.role(), r.id());
            let found = read_file(&self.dir.join(&rel), r)?;
            if found.is_none() {
                missing.insert(rel, i);
            }
            out.push(found);
        }
        if !missing.is_empty() {
            // The other branches' nodes: their history folders walked once
            // (folders shared between branches are read once).
            let mut seen = HashSet::new();
            for tip in self.tips()? {
                let tree = self.repo.find_commit(tip)?.tree()?;
                let history = Path::new(layout::HISTORY);
                for (path, oid) in git::blobs_under(&self.repo, &tree, history, &mut seen)? {
                    if let Some(i) = missing.remove(&path) {
                        out[i] = parse(self.repo.find_blob(oid)?.content(), refs[i]);
                    }
                }
                if missing.is_empty() {
                    break;
                }
            }
        }
        refs.iter()
            .zip(out)
            .map(|(&r, n)| n.ok_or_else(|| not_held(r)))
            .collect()
    }

    /// Every node of every branch, whole, in sequence order.
    pub fn nodes(&self) -> Result<Vec<Node>, SessionError> {
        let refs: Vec<NodeRef<'_>> = self.dag.iter().collect();
        self.load_nodes(&refs)
    }

    /// A node of the open turn, whole, without reading anything.
    pub(super) fn cached_node(&self, id: &str) -> Option<&Node> {
        let seq = self.node(id)?.seq();
        let at = self.open_nodes.binary_search_by_key(&seq, |n| n.seq).ok()?;
        self.open_nodes.get(at).filter(|n| n.id == id)
    }

    /// The model that wrote the open turn: the last reply naming one in
    /// its metadata (`metadata.model`, as runners write it), else the
    /// session's model.
    pub(super) fn turn_model(&self) -> Option<String> {
        self.open_nodes
            .iter()
            .rev()
            .filter(|n| n.role == crate::node::Role::Assistant)
            .find_map(|n| {
                n.metadata
                    .get("model")
                    .and_then(|m| m.as_str())
                    .filter(|m| !m.trim().is_empty())
                    .map(str::to_string)
            })
            .or_else(|| self.meta.model.clone().filter(|m| !m.is_empty()))
    }

    /// Keep `node` whole while its turn is open (replacing an older copy;
    /// kept in sequence order).
    pub(super) fn keep_open(&mut self, node: &Node) {
        match self.open_nodes.binary_search_by_key(&node.seq, |n| n.seq) {
            Ok(at) => self.open_nodes[at] = node.clone(),
            Err(at) => self.open_nodes.insert(at, node.clone()),
        }
    }

    /// Keep the message the open turn answers whole too (for a retried
    /// answer it belongs to an ended turn): the end of the turn names it.
    pub(super) fn keep_turn_user(&mut self) {
        let Some(id) = self.meta.open_turn.as_ref().map(|t| t.user_node.clone()) else {
            return;
        };
        if self.cached_node(&id).is_none() && self.dag.contains(&id) {
            match self.node_full(&id) {
                Ok(node) => self.keep_open(&node),
                Err(e) => {
                    tracing::warn!(session = %self.meta.id, node = %id, error = %e, "the message the turn answers could not be read")
                }
            }
        }
    }

    /// The nodes up to `last_seq` are committed: they are read from disk
    /// from now on.
    pub(super) fn settle(&mut self, last_seq: u64) {
        // The previews first, while the turn's user message is still in
        // memory (else it is read back from its file).
        self.refresh_previews();
        self.open_nodes.retain(|n| n.seq > last_seq);
    }

    /// What the registry is told of a change of `kind`: the metadata and
    /// the previews.
    pub(super) fn changed(
        &self,
        kind: crate::messages::ChangeKind,
    ) -> crate::messages::SessionChanged {
        let mut meta = self.meta().clone();
        meta.commit_pending = self.commit_is_pending();
        crate::messages::SessionChanged {
            meta,
            dir: self.dir.clone(),
            preview: self
                .last_user_text()
                .as_deref()
                .and_then(crate::node::preview),
            first_preview: self
                .first_user_text()
                .as_deref()
                .and_then(super::summary::first_preview),
            kind,
        }
    }

    /// Text of the latest user message on the current path (for previews).
    pub fn last_user_text(&self) -> Option<String> {
        self.previews.last.as_ref().map(|(_, t)| t.clone())
    }

    /// Text of the first user message (for titles).
    pub fn first_user_text(&self) -> Option<String> {
        self.previews.first.as_ref().map(|(_, t)| t.clone())
    }

    /// The kept preview texts are read again (a message they come from
    /// was amended).
    pub(super) fn forget_previews(&mut self) {
        self.previews = Previews::default();
    }

    /// Bring the kept preview texts up to date; a file is read only when
    /// the message they come from changed.
    pub(super) fn refresh_previews(&mut self) {
        // The first user message stays the first (only an append undone
        // removes a node, the last): looked for again only when unknown.
        let first = match &self.previews.first {
            Some((at, _))
                if (*at as usize) < self.dag.len() && self.dag.at(*at).is_user_message() =>
            {
                Some(*at)
            }
            _ => self
                .dag
                .iter()
                .skip(self.previews.scanned.min(self.dag.len()))
                .find(|n| n.is_user_message())
                .map(|n| n.at()),
        };
        if first.is_none() {
            self.previews.scanned = self.dag.len();
        }
        let last = self
            .meta
            .head
            .as_deref()
            .and_then(|h| self.node(h))
            .and_then(|head| {
                let user = self.answered_user_node(head);
                self.node(&user)
                    .filter(|n| n.role() == Role::User)
                    .map(|n| n.at())
            });
        let text = |at: u32| -> String {
            self.load_node(self.dag.at(at))
                .map(|n| n.text())
                .unwrap_or_default()
        };
        let fresh = |kept: &Option<(u32, String)>, want: Option<u32>| match (kept, want) {
            (Some((k, _)), Some(w)) if *k == w => None,
            (None, None) => None,
            (_, want) => Some(want.map(|w| (w, text(w)))),
        };
        let (new_first, new_last) = (
            fresh(&self.previews.first, first),
            fresh(&self.previews.last, last),
        );
        if let Some(f) = new_first {
            self.previews.first = f;
        }
        if let Some(l) = new_last {
            self.previews.last = l;
        }
    }
}

/// A node the index has but neither the work tree nor git holds.
fn not_held(r: NodeRef<'_>) -> SessionError {
    SessionError::Io(io::Error::new(
        io::ErrorKind::NotFound,
        format!("node {} has no file in the work tree or in git", r.id()),
    ))
}

/// A node file of the work tree, when there (and when it is the node).
fn read_file(path: &Path, r: NodeRef<'_>) -> Result<Option<Node>, SessionError> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(parse(&bytes, r)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.into()),
    }
}

fn parse(bytes: &[u8], r: NodeRef<'_>) -> Option<Node> {
    serde_json::from_slice::<Node>(bytes)
        .ok()
        .filter(|n| n.id == r.id() && n.seq == r.seq() && n.role == r.role())
}
