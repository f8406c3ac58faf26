//! `SessionCore`: one session's repository, its history files and the
//! in-memory DAG built from them; this file holds the struct, its reads and
//! the shared write helpers. The other concerns are `impl SessionCore`
//! blocks of their own: `load` (creation, loading, crash repair), `append`,
//! `turn` (end of turn and the commit), `queue`, `transfer` (fork, import,
//! export), `naming` (title plan), `rebind` and `branching`.
//!
//! All methods block (file and git I/O); the session actor runs them on a
//! blocking thread, one at a time. The history files are the event log.
//! `meta.json` caches the head, the open turn and the count of ended turns;
//! loading repairs that cache from the files and from the trailers of the
//! last commit, so a crash at any point leaves a state that loading
//! completes.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use git2::Repository;

use super::contents::Previews;
use super::error::SessionError;
use super::layout::{self, META};
use super::node_index::{NodeIndex, NodeRef};
use super::queue::Queued;
use crate::fsio;
use crate::git;
use crate::meta::{ProjectBaseline, SessionMeta};
use crate::node::{Node, Role};
use crate::store::Store;
use crate::wal;

pub struct SessionCore {
    /// The state directory: its write-ahead log takes every durable write.
    pub(super) store: Store,
    pub(super) dir: PathBuf,
    pub(super) repo: Repository,
    /// The repository's index, kept in memory and updated per commit.
    pub(super) index: git::GitIndex,
    pub(super) meta: SessionMeta,
    /// Every node of every branch, in sequence order, without contents.
    pub(super) dag: NodeIndex,
    /// The open turn's nodes, whole (the others are read on demand).
    pub(super) open_nodes: Vec<Node>,
    /// The texts the registry's previews come from.
    pub(super) previews: Previews,
    /// Assistant-reply counts at which an LLM title is due.
    pub(super) retitle_at: Vec<u32>,
    /// Assistant replies (no caller) among `nodes`, kept up to date so the
    /// end of a turn need not count them.
    pub(super) replies: u32,
    /// User messages queued behind the running turn, in arrival order.
    pub(super) queue: Vec<Queued>,
    /// Paths (added or removed) that the next turn commit also records:
    /// the files a migration moved.
    pub(super) pending_paths: Vec<PathBuf>,
    /// The last turn ended but its commit failed (a full disk, a refused
    /// write): it is retried, and no new turn opens until it is made.
    pub(super) commit_pending: bool,
    /// Packs in the repository (one more per commit; fewer after
    /// maintenance merged some).
    pub(super) packs: usize,
    /// The last commit's commit and tree objects: the next commit builds
    /// on them without reading the packs.
    pub(super) recent: git::RecentObjects,
    /// While a whole turn is written (`whole.rs`): its changes, gathered
    /// into the one log entry its commit makes.
    pub(super) batch: Option<Gathered>,
    /// The next commit's files are written after the answer: it leaves
    /// them in `deferred` (a whole turn answered once its entry is
    /// durable).
    pub(super) defer_apply: bool,
    /// A commit durable in the log whose files are not written yet;
    /// `finish_deferred` writes them before anything else reads the
    /// session.
    pub(super) deferred: Option<Deferred>,
}

/// A commit whose log entry is flushed, its files and the git index not
/// written yet.
pub(super) struct Deferred {
    pub flushed: wal::Flushed,
    pub commit: git::PreparedCommit,
}

/// A whole turn's writes while it is gathered, and the branch tip it
/// continues (read once when the gathering starts: nothing moves a ref
/// until the turn's commit).
pub(super) struct Gathered {
    pub changes: Vec<wal::Change>,
    /// HEAD's branch and its tip, read when the gathering started.
    pub head: git::Head,
}

impl SessionCore {
    // ----- reads ----------------------------------------------------------

    pub fn id(&self) -> &str {
        &self.meta.id
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn meta(&self) -> &SessionMeta {
        &self.meta
    }

    pub fn node(&self, id: &str) -> Option<NodeRef<'_>> {
        self.dag.get(id)
    }

    /// How many nodes the session has (every branch).
    pub fn node_count(&self) -> usize {
        self.dag.len()
    }

    pub fn last_seq(&self) -> u64 {
        self.dag.last().map_or(0, |n| n.seq())
    }

    /// The rendered conversation ending at `head` (default: the current
    /// head): the chain of predecessors from the root, each node followed by
    /// the nodes it called (tool results), in sequence order.
    pub fn branch(&self, head: Option<&str>) -> Result<Vec<Node>, SessionError> {
        let refs = self.branch_refs(head)?;
        self.load_nodes(&refs)
    }

    /// `branch` as positions in the index.
    pub(super) fn branch_refs(&self, head: Option<&str>) -> Result<Vec<NodeRef<'_>>, SessionError> {
        let start = match head {
            Some(h) => Some(
                self.node(h)
                    .ok_or_else(|| SessionError::UnknownNode(h.to_string()))?,
            ),
            None => self.meta.head.as_deref().and_then(|h| self.node(h)),
        };
        let mut chain = Vec::new();
        let mut cursor = start;
        while let Some(n) = cursor {
            chain.push(n);
            if chain.len() > self.dag.len() {
                break; // a cycle in hand-edited files; never loop forever
            }
            cursor = n.predecessor();
        }
        chain.reverse();
        let mut called: HashMap<&str, Vec<NodeRef<'_>>> = HashMap::new();
        // System messages (no caller) follow the node they were written
        // after; those written before any message open the conversation.
        let mut notes: HashMap<&str, Vec<NodeRef<'_>>> = HashMap::new();
        let mut opening: Vec<NodeRef<'_>> = Vec::new();
        for n in self.dag.iter() {
            if let Some(c) = n.caller_id() {
                called.entry(c).or_default().push(n);
            } else if n.role() == Role::System {
                match n.predecessor_id() {
                    Some(p) => notes.entry(p).or_default().push(n),
                    None => opening.push(n),
                }
            }
        }
        let mut out = Vec::with_capacity(chain.len() + opening.len());
        out.extend(opening);
        for n in chain {
            out.push(n);
            for group in [&called, &notes] {
                if let Some(children) = group.get(n.id()) {
                    out.extend(children.iter().copied());
                }
            }
        }
        Ok(out)
    }

    /// The turn commits of the current branch, newest first (the
    /// `session init` root is no turn).
    pub fn commits(&self, limit: usize) -> Result<Vec<git::CommitInfo>, SessionError> {
        let mut log = git::log(&self.repo, limit.saturating_add(1))?;
        if log.last().is_some_and(git::CommitInfo::is_session_init) {
            log.pop();
        }
        log.truncate(limit);
        Ok(log)
    }

    /// The bound project's state recorded when the open turn began.
    pub fn open_turn_baseline(&self) -> Option<&ProjectBaseline> {
        self.meta
            .open_turn
            .as_ref()
            .and_then(|t| t.project.as_ref())
    }

    /// Apply `f` to the metadata and save it durably.
    pub fn update_meta(
        &mut self,
        f: impl FnOnce(&mut SessionMeta),
    ) -> Result<&SessionMeta, SessionError> {
        let mut next = self.meta.clone();
        f(&mut next);
        next.id = self.meta.id.clone();
        if next.title != self.meta.title {
            self.redact_title(&mut next.title)?;
        }
        let previous = std::mem::replace(&mut self.meta, next);
        let written = self.meta_bytes().and_then(|bytes| {
            let mut changes = vec![self.meta_change(bytes)];
            if previous.archived != self.meta.archived {
                // Archiving is an event of the change feed, durable with it.
                use crate::feed::{ChangeEvent, ChangeKind};
                let kind = if self.meta.archived {
                    ChangeKind::SessionArchived
                } else {
                    ChangeKind::SessionUnarchived
                };
                let mut e = ChangeEvent::new(kind, &self.meta.id, crate::meta::now());
                e.project_id = Some(self.meta.project_id.clone());
                changes.push(wal::Change::Feed {
                    root: self.dir.clone(),
                    event: e.to_bytes(),
                });
            }
            self.log_changes(changes)
        });
        if let Err(e) = written {
            self.meta = previous;
            return Err(e);
        }
        Ok(&self.meta)
    }

    // ----- internals ------------------------------------------------------

    /// The commit HEAD's branch points at (none on an unborn branch): the
    /// one a gathered turn read when it started, else read now.
    pub(super) fn head_tip(&self) -> Result<Option<git2::Oid>, git2::Error> {
        match &self.batch {
            Some(g) => Ok(g.head.tip),
            None => git::head_id(&self.repo),
        }
    }

    /// The trailers of HEAD's commit (all zero without commits).
    pub(super) fn head_trailers(&self) -> Result<git::Trailers, git2::Error> {
        self.trailers_at(self.head_tip()?)
    }

    /// The trailers of the branch tip `tip` (all zero without one), from
    /// the last commit kept in memory when it is that one.
    pub(super) fn trailers_at(&self, tip: Option<git2::Oid>) -> Result<git::Trailers, git2::Error> {
        match tip {
            Some(id) => self.recent.trailers_of(&self.repo, id),
            None => Ok(git::Trailers::default()),
        }
    }

    /// Last sequence number covered by an ended turn.
    pub(super) fn ended_seq(&self) -> u64 {
        self.meta.last_turn.as_ref().map_or(0, |r| r.last_seq)
    }

    /// Make `changes` durable: now, or while a whole turn is gathered, with
    /// the turn's commit (`batch`).
    pub(super) fn log_changes(&mut self, changes: Vec<wal::Change>) -> Result<(), SessionError> {
        match &mut self.batch {
            Some(batch) => batch.changes.extend(changes),
            None => self.store.commit(changes)?,
        }
        Ok(())
    }

    pub(super) fn write_node(&mut self, node: &Node) -> Result<(), SessionError> {
        let change = self.node_change(node)?;
        self.log_changes(vec![change])
    }

    /// A node and `meta.json` in one durable write (the node opening a turn).
    pub(super) fn write_node_and_meta(&mut self, node: &Node) -> Result<(), SessionError> {
        let meta = self.meta_change(self.meta_bytes()?);
        let change = self.node_change(node)?;
        self.log_changes(vec![change, meta])
    }

    /// The write of `node`'s file (its folder is made first).
    fn node_change(&self, node: &Node) -> Result<wal::Change, SessionError> {
        let path = self
            .dir
            .join(layout::node_rel_path(node.seq, node.role, &node.id));
        // A gathered turn's earlier node in the same folder saw it there
        // moments ago, in this same step.
        let seen = |parent: &Path| {
            self.batch.as_ref().is_some_and(|g| {
                g.changes.iter().any(
                    |c| matches!(c, wal::Change::Put { path, .. } if path.parent() == Some(parent)),
                )
            })
        };
        if let Some(parent) = path.parent() {
            if !seen(parent) && !parent.exists() {
                if self.store.is_logged() {
                    // Replay recreates it under the session folder.
                    fsio::create_private_dir_all(parent)?;
                } else {
                    fsio::create_dir_durable(parent)?;
                    if let Some(grand) = parent.parent() {
                        fsio::fsync_dir(grand)?;
                    }
                }
            }
        }
        Ok(wal::Change::Put {
            root: self.dir.clone(),
            path,
            bytes: fsio::json_bytes(node)?,
        })
    }

    pub(super) fn write_meta(&mut self) -> Result<(), SessionError> {
        let change = self.meta_change(self.meta_bytes()?);
        self.log_changes(vec![change])
    }

    /// `meta.json` as it is written.
    pub(super) fn meta_bytes(&self) -> Result<Vec<u8>, SessionError> {
        Ok(fsio::json_bytes(&self.meta)?)
    }

    /// The write of `meta.json` with `bytes`.
    pub(super) fn meta_change(&self, bytes: Vec<u8>) -> wal::Change {
        wal::Change::Put {
            root: self.dir.clone(),
            path: self.dir.join(META),
            bytes,
        }
    }

    /// `meta.json` as commit `oid` holds it.
    pub(super) fn committed_meta(
        &self,
        oid: git2::Oid,
    ) -> Result<Option<SessionMeta>, SessionError> {
        let commit = self.repo.find_commit(oid)?;
        let Ok(entry) = commit.tree()?.get_path(Path::new(META)) else {
            return Ok(None);
        };
        let blob = self.repo.find_blob(entry.id())?;
        Ok(serde_json::from_slice(blob.content()).ok())
    }
}

/// An assistant reply (not a runtime node called by another).
pub(super) fn is_reply(n: &Node) -> bool {
    n.role == Role::Assistant && n.caller.is_none()
}
