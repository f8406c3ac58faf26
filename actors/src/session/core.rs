//! `SessionCore`: one session's repository, its history files and the
//! in-memory DAG built from them. All methods block (file and git I/O); the
//! session actor runs them on a blocking thread, one at a time.
//!
//! The history files are the event log. `meta.json` caches the head, the
//! open turn and the count of ended turns; `load` repairs that cache from the
//! files and from the trailers of the last commit, so a crash at any point
//! leaves a state that loading completes.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use git2::Repository;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::branching::read_branch_nodes;
use super::commit_message::TurnSummary;
use super::error::SessionError;
use super::layout::{self, GITIGNORE, GITIGNORE_BODY, META};
use crate::fsio;
use crate::git::{self, GitError};
use crate::ids;
use crate::meta::{
    now, OpenTurn, ProjectBaseline, ProjectOutcome, SessionMeta, Status, TurnRecord,
};
use crate::node::{self, Node, Role};

/// A node as a client sends it; the store fills in seq and timestamps.
#[derive(Debug, Clone, Deserialize)]
pub struct NewNode {
    #[serde(default)]
    pub id: Option<String>,
    pub role: Role,
    #[serde(default)]
    pub content: Value,
    #[serde(default)]
    pub predecessor: Option<String>,
    #[serde(default)]
    pub caller: Option<String>,
    #[serde(default)]
    pub metadata: Map<String, Value>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub output: Option<Value>,
}

/// Changes to a node of the open turn (filling the assistant placeholder).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodePatch {
    #[serde(default)]
    pub content: Option<Value>,
    /// Merged key by key into the node's metadata.
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
    #[serde(default)]
    pub output: Option<Value>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    #[default]
    Ok,
    Failed,
    NeedsInput,
}

/// The end-of-turn call, with what the client reports about the turn.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndTurn {
    #[serde(default)]
    pub outcome: Outcome,
    /// A background turn ends as `done` + `unread`.
    #[serde(default)]
    pub background: bool,
    #[serde(default)]
    pub duration_s: Option<f64>,
    #[serde(default)]
    pub tokens: Option<u64>,
    #[serde(default)]
    pub tool_calls: Option<u64>,
    /// Optional LLM context snapshot, stored in `context/commits/<id>.json`.
    #[serde(default)]
    pub context: Option<Value>,
    #[serde(default)]
    pub context_id: Option<String>,
}

/// Session fields a creator may set.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateSpec {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub agent_id: Option<String>,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub source: Option<String>,
    #[serde(default)]
    pub channel: Option<String>,
    #[serde(default)]
    pub account_id: Option<String>,
    #[serde(default)]
    pub peer_display: Option<String>,
    #[serde(default)]
    pub peer_id: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub group: Option<String>,
    /// Bind the new session to a project: its repository lands inside it.
    #[serde(default)]
    pub project_id: Option<String>,
}

impl CreateSpec {
    pub fn into_meta(self, id: String) -> SessionMeta {
        let mut meta = SessionMeta::new(id, now());
        if let Some(v) = self.agent_id {
            meta.agent_id = v;
        }
        if let Some(v) = self.title {
            meta.title = v;
        }
        if let Some(v) = self.source {
            meta.source = v;
        }
        meta.channel = self.channel;
        meta.account_id = self.account_id;
        meta.peer_display = self.peer_display;
        meta.peer_id = self.peer_id;
        meta.model = self.model;
        meta.group = self.group;
        if let Some(p) = self.project_id {
            meta.project_id = p;
        }
        meta
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct AppendOutcome {
    pub node: Node,
    /// False when the node id already existed (an idempotent retry).
    pub created: bool,
    /// The turn this node belongs to, if one is open.
    pub turn: Option<u64>,
    /// Set when this user message first closed a turn left open by a crash.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub closed_interrupted_turn: Option<TurnOutcome>,
}

#[derive(Debug, Clone, Serialize)]
pub struct TurnOutcome {
    pub turn: u64,
    pub commit: String,
    pub short_sha: String,
    pub status: Status,
    /// The agent's commit in the bound project, if one was made.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project_commit: Option<String>,
    /// Why the agent's changes were not committed (for the UI banner).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project_commit_skipped: Option<serde_json::Value>,
    /// An LLM title is due (internal: handed to the titler).
    #[serde(skip)]
    pub title_plan: Option<TitlePlan>,
    /// The next turn, opened at once by the oldest queued user message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_turn: Option<Box<AppendOutcome>>,
}

/// A user message waiting for the running turn to end.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Queued {
    pub id: String,
    pub content: Value,
    #[serde(default)]
    pub metadata: Map<String, Value>,
    pub queued_at: f64,
    /// Arrival order.
    pub position: u64,
}

/// What posting a user message did: appended it (opening a turn) or queued
/// it behind the running turn.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum Posted {
    Appended(Box<AppendOutcome>),
    Queued {
        message_id: String,
        position: u64,
        queue_length: usize,
    },
}

/// An LLM naming pass the end of a turn made due.
#[derive(Debug, Clone)]
pub struct TitlePlan {
    pub pass: u32,
    pub input: String,
    pub expected_title: Option<String>,
}

/// Default thresholds: LLM titles at the 1st, 6th, 16th and 40th reply.
pub const RETITLE_AT: [u32; 4] = [1, 6, 16, 40];

/// The `caller` of runtime nodes that hang off no node (e.g. a relocation).
pub const ROOT_CALLER: &str = "ROOT";

pub struct SessionCore {
    pub(super) dir: PathBuf,
    pub(super) repo: Repository,
    /// The repository's index, kept in memory and updated per commit.
    pub(super) index: git::IndexFile,
    pub(super) meta: SessionMeta,
    /// All nodes of every branch, in sequence order.
    pub(super) nodes: Vec<Node>,
    pub(super) by_id: HashMap<String, usize>,
    /// Assistant-reply counts at which an LLM title is due.
    retitle_at: Vec<u32>,
    /// Assistant replies (no caller) among `nodes`, kept up to date so the
    /// end of a turn need not count them.
    replies: u32,
    /// User messages queued behind the running turn, in arrival order.
    queue: Vec<Queued>,
}

impl SessionCore {
    // ----- creation and loading -------------------------------------------

    /// Create a session directory at `dir`, optionally with its first node,
    /// as one atomic step: everything is built in a temporary sibling folder
    /// and renamed into place, so a crash never leaves an empty shell.
    pub fn create(
        dir: &Path,
        meta: SessionMeta,
        first: Option<(NewNode, Option<ProjectBaseline>)>,
    ) -> Result<(SessionCore, Option<AppendOutcome>), SessionError> {
        if dir.exists() {
            return Err(SessionError::AlreadyExists);
        }
        let parent = dir
            .parent()
            .ok_or_else(|| SessionError::Invalid("session directory has no parent".into()))?;
        let built =
            fsio::build_dir_atomically(parent, "create", |tmp| -> Result<_, SessionError> {
                fs::create_dir(tmp)?;
                let repo = git::init_session_repo(tmp)?;
                let index = git::IndexFile::load(&repo)?;
                for sub in [layout::HISTORY, layout::CONTEXT_COMMITS, layout::WORKDIR] {
                    fs::create_dir_all(tmp.join(sub))?;
                }
                fsio::atomic_write(&tmp.join(GITIGNORE), GITIGNORE_BODY.as_bytes())?;
                fsio::atomic_write_json(&tmp.join(META), &meta)?;
                let mut core = SessionCore {
                    dir: tmp.to_path_buf(),
                    repo,
                    index,
                    meta,
                    nodes: Vec::new(),
                    by_id: HashMap::new(),
                    retitle_at: RETITLE_AT.to_vec(),
                    replies: 0,
                    queue: Vec::new(),
                };
                let outcome = first.map(|(n, b)| core.append_with(n, b)).transpose()?;
                for sub in ["context", layout::HISTORY] {
                    fsio::fsync_dir(&tmp.join(sub))?;
                }
                Ok((dir.to_path_buf(), outcome))
            });
        let outcome = match built {
            Ok(o) => o,
            // Another creator won the rename.
            Err(_) if dir.join(META).exists() => return Err(SessionError::AlreadyExists),
            Err(e) => return Err(e),
        };
        let core = SessionCore::load(dir)?;
        Ok((core, outcome))
    }

    /// Load a session directory, repairing what a crash may have left: temp
    /// files, stale git locks, a turn whose end was recorded but whose commit
    /// did not finish, and the cached head and open turn.
    pub fn load(dir: &Path) -> Result<SessionCore, SessionError> {
        let mut meta: SessionMeta = match fsio::read_json(&dir.join(META)) {
            Ok(m) => m,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::InvalidData
                ) =>
            {
                return Err(SessionError::NotFound)
            }
            Err(e) => return Err(e.into()),
        };
        if let Some(name) = dir.file_name().and_then(|n| n.to_str()) {
            meta.id = name.to_string();
        }
        fsio::remove_tmp_files(dir)?;
        let repo = if dir.join(".git").exists() {
            let repo = git::open_repo(dir)?;
            git::disable_reflogs(&repo)?;
            repo
        } else {
            git::init_session_repo(dir)?
        };
        git::remove_stale_locks(repo.path())?;
        let (index, index_repaired) = git::IndexFile::load_checked(&repo)?;
        let mut nodes = read_history(&dir.join(layout::HISTORY))?;
        // The work tree holds the current branch (all of it unless a switch
        // was cut short); the other branches live in git.
        let single_branch = git::list_branches(&repo)?.len() <= 1;
        if index_repaired || !single_branch {
            nodes.extend(read_branch_nodes(&repo, &nodes)?);
            nodes.sort_by_key(|n| n.seq);
        }
        let by_id = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.id.clone(), i))
            .collect();
        let mut core = SessionCore {
            dir: dir.to_path_buf(),
            repo,
            index,
            meta,
            nodes,
            by_id,
            retitle_at: RETITLE_AT.to_vec(),
            replies: 0,
            queue: Vec::new(),
        };
        core.replies = core.nodes.iter().filter(|n| is_reply(n)).count() as u32;
        core.load_queue()?;
        if fs::read(dir.join(GITIGNORE)).ok().as_deref() != Some(GITIGNORE_BODY.as_bytes()) {
            fsio::atomic_write(&dir.join(GITIGNORE), GITIGNORE_BODY.as_bytes())?;
        }
        core.reconcile(index_repaired)?;
        Ok(core)
    }

    /// `index_repaired`: the index was behind HEAD, so the work tree may be
    /// too (a commit or a branch switch was cut short).
    fn reconcile(&mut self, index_repaired: bool) -> Result<(), SessionError> {
        // Turns end one after another whatever their branch, so the last
        // sequence number of the newest commit on any branch tells whether
        // the last recorded end of turn was committed.
        let tips = git::list_branches(&self.repo)?;
        let newest = tips.iter().max_by_key(|t| t.trailers.last_seq);
        let committed_seq = newest.map_or(0, |t| t.trailers.last_seq);
        let mut dirty = false;
        // A turn whose end was recorded but whose commit did not happen.
        let mut pending = None;
        if self.ended_seq() > committed_seq {
            pending = self.meta.last_turn.clone();
        } else if let Some(tip) = newest.filter(|_| self.ended_seq() < committed_seq) {
            let on_head = git::head_commit(&self.repo)?.is_some_and(|c| c.id() == tip.oid);
            if let Some(meta) = self.committed_meta(tip.oid)? {
                if on_head {
                    // The commit exists but the rename of its meta.json was
                    // lost in a crash: the committed meta.json is the one.
                    tracing::warn!(session = %self.meta.id, turn = tip.trailers.turn, "restoring meta.json from the last commit");
                    let id = self.meta.id.clone();
                    self.meta = meta;
                    self.meta.id = id;
                    self.meta.turn_count = tip.trailers.turn;
                } else {
                    // A meta.json checked out from an older commit (an
                    // imported repository whose newest turn is on another
                    // branch): only the record of the last turn moves on.
                    self.meta.last_turn = meta.last_turn;
                }
            }
            dirty = true;
        }
        // Replay the head over nodes appended since it was last saved.
        let mut head = self
            .meta
            .head
            .clone()
            .filter(|h| self.by_id.contains_key(h));
        let from = head.as_ref().map_or(0, |h| self.nodes[self.by_id[h]].seq);
        for n in self.nodes.iter().filter(|n| n.seq > from) {
            if n.is_conversational() && n.predecessor == head {
                head = Some(n.id.clone());
            }
        }
        if head != self.meta.head {
            self.meta.head = head;
            dirty = true;
        }
        // The open turn: the user node that opened it must exist; a node
        // that opens a turn (a user message or a retried answer), written
        // just before a crash (meta not yet saved), opens it.
        let ended = self.ended_seq();
        let mut detected = false;
        match &self.meta.open_turn {
            Some(open) if !self.by_id.contains_key(&open.user_node) => {
                self.meta.open_turn = None;
                dirty = true;
            }
            Some(_) => {}
            None => {
                if let Some(opener) = self
                    .nodes
                    .iter()
                    .find(|n| n.seq > ended && n.is_conversational())
                {
                    // The project's tree at the turn's start is unknown now.
                    let project =
                        (self.meta.project_id != crate::project::DEFAULT_PROJECT).then(|| {
                            ProjectBaseline {
                                clean: false,
                                dirty_paths: Vec::new(),
                                reason: Some("the turn was recovered after a restart".into()),
                            }
                        });
                    self.meta.open_turn = Some(OpenTurn {
                        number: 0, // set once the turn's branch is known
                        user_node: self.answered_user_node(opener),
                        first_seq: ended + 1,
                        started_at: opener.created_at,
                        project,
                    });
                    detected = true;
                    dirty = true;
                }
            }
        }
        // HEAD must be on the branch the open turn commits to.
        if let (Some(open), None) = (self.meta.open_turn.clone(), &pending) {
            if let Some(opener) = self.turn_opener(open.first_seq).map(|n| n.id.clone()) {
                self.place_turn(&opener)?;
            }
            if detected {
                let number = git::head_trailers(&self.repo)?.turn + 1;
                if let Some(t) = self.meta.open_turn.as_mut() {
                    t.number = number;
                }
            }
        }
        if let Some(last) = self.nodes.iter().rev().find(|n| n.is_conversational()) {
            self.meta.updated_at = self.meta.updated_at.max(last.created_at);
        }
        if dirty {
            self.write_meta()?;
        }
        // Commit last, so the commit holds the repaired meta.json.
        if let Some(record) = pending {
            tracing::warn!(session = %self.meta.id, turn = record.number, "committing a turn interrupted by a crash");
            self.commit_turn(&record)?;
        }
        // A branch switch cut short leaves the work tree between branches.
        if index_repaired && self.sync_worktree_to_head()? {
            tracing::warn!(session = %self.meta.id, "work tree re-synced with HEAD");
        }
        Ok(())
    }

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

    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    pub fn node(&self, id: &str) -> Option<&Node> {
        self.by_id.get(id).map(|&i| &self.nodes[i])
    }

    pub fn last_seq(&self) -> u64 {
        self.nodes.last().map_or(0, |n| n.seq)
    }

    /// Text of the latest user message on the current path (for previews):
    /// the nearest one behind the head, usually a step or two away.
    pub fn last_user_text(&self) -> Option<String> {
        let head = self.meta.head.as_deref().and_then(|h| self.node(h))?;
        let user = self.answered_user_node(head);
        self.node(&user)
            .filter(|n| n.role == Role::User)
            .map(Node::text)
    }

    /// Text of the first user message (for titles).
    pub fn first_user_text(&self) -> Option<String> {
        self.nodes
            .iter()
            .find(|n| n.role == Role::User && n.caller.is_none())
            .map(Node::text)
    }

    /// The rendered conversation ending at `head` (default: the current
    /// head): the chain of predecessors from the root, each node followed by
    /// the nodes it called (tool results), in sequence order.
    pub fn branch(&self, head: Option<&str>) -> Result<Vec<Node>, SessionError> {
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
            if chain.len() > self.nodes.len() {
                break; // a cycle in hand-edited files; never loop forever
            }
            cursor = n.predecessor.as_deref().and_then(|p| self.node(p));
        }
        chain.reverse();
        let mut called: HashMap<&str, Vec<&Node>> = HashMap::new();
        for n in &self.nodes {
            if let Some(c) = n.caller.as_deref() {
                called.entry(c).or_default().push(n);
            }
        }
        let mut out = Vec::with_capacity(chain.len());
        for n in chain {
            out.push(n.clone());
            if let Some(children) = called.get(n.id.as_str()) {
                out.extend(children.iter().map(|c| (*c).clone()));
            }
        }
        Ok(out)
    }

    pub fn commits(&self, limit: usize) -> Result<Vec<git::CommitInfo>, SessionError> {
        Ok(git::log(&self.repo, limit)?)
    }

    // ----- writes ---------------------------------------------------------

    /// Append a node. Acknowledged only once its file (and, when the node
    /// opens a turn, `meta.json`) is durable.
    pub fn append(&mut self, new: NewNode) -> Result<AppendOutcome, SessionError> {
        self.append_with(new, None)
    }

    /// Append; a user message that opens a turn records `baseline`, the
    /// bound project's working tree at that moment.
    pub fn append_with(
        &mut self,
        new: NewNode,
        baseline: Option<ProjectBaseline>,
    ) -> Result<AppendOutcome, SessionError> {
        let id = match &new.id {
            Some(id) => {
                ids::validate("node id", id)?;
                id.clone()
            }
            None => ids::new_id(),
        };
        if let Some(existing) = self.node(&id) {
            if existing.role != new.role {
                return Err(SessionError::NodeConflict(id));
            }
            return Ok(AppendOutcome {
                node: existing.clone(),
                created: false,
                turn: self.meta.open_turn.as_ref().map(|t| t.number),
                closed_interrupted_turn: None,
            });
        }
        if new.role.needs_name() && new.name.as_deref().is_none_or(str::is_empty) {
            return Err(SessionError::MissingName(if new.role == Role::Tool {
                "tool"
            } else {
                "code"
            }));
        }
        if let Some(c) = &new.caller {
            if c != ROOT_CALLER && !self.by_id.contains_key(c) {
                return Err(SessionError::UnknownCaller(c.clone()));
            }
        } else if new.role == Role::Tool {
            return Err(SessionError::MissingCaller);
        }
        if let Some(p) = &new.predecessor {
            if !self.by_id.contains_key(p) {
                return Err(SessionError::UnknownPredecessor(p.clone()));
            }
        }
        let conversational =
            new.caller.is_none() && matches!(new.role, Role::User | Role::Assistant);
        let opens_turn = self.opens_turn(&new);
        let mut closed = None;
        if opens_turn {
            closed = self.close_interrupted_turn()?;
        } else if matches!(new.role, Role::Assistant | Role::Tool) && self.meta.open_turn.is_none()
        {
            return Err(SessionError::NoOpenTurn);
        }
        let seq = self.last_seq() + 1;
        if seq > layout::MAX_SEQ {
            return Err(SessionError::Full);
        }
        let predecessor = if conversational {
            new.predecessor.or_else(|| self.meta.head.clone())
        } else {
            new.predecessor
        };
        let node = Node {
            id: id.clone(),
            role: new.role,
            content: new.content,
            predecessor,
            caller: new.caller,
            seq,
            created_at: now(),
            metadata: new.metadata,
            name: new.name,
            output: new.output,
        };
        self.write_node(&node)?;
        self.by_id.insert(id.clone(), self.nodes.len());
        self.replies += u32::from(is_reply(&node));
        self.nodes.push(node.clone());
        if opens_turn {
            // A turn that does not continue the current branch's tip gets
            // a branch of its own (a retry, or a message sent from a replay).
            if let Err(e) = self.place_turn(&id) {
                self.forget_last_node();
                return Err(e);
            }
        }
        if conversational {
            let off_chain = node.predecessor != self.meta.head;
            self.meta.head = Some(id.clone());
            self.meta.updated_at = node.created_at;
            if opens_turn {
                self.meta.open_turn = Some(OpenTurn {
                    number: git::head_trailers(&self.repo)?.turn + 1,
                    user_node: self.answered_user_node(&node),
                    first_seq: self.ended_seq() + 1,
                    started_at: node.created_at,
                    project: baseline,
                });
                self.meta.status = Status::Running;
                self.meta.viewing = None;
                // Repaired from the user node if this rename is lost.
                self.write_meta_turn()?;
            } else if off_chain {
                // Replay cannot follow a jump; persist the head now.
                self.write_meta()?;
            }
        }
        Ok(AppendOutcome {
            node,
            created: true,
            turn: self.meta.open_turn.as_ref().map(|t| t.number),
            closed_interrupted_turn: closed,
        })
    }

    /// Whether appending `new` opens a turn: a user message does, and so
    /// does a retried answer (an assistant node whose predecessor already
    /// has a conversational child from an earlier turn).
    pub fn opens_turn(&self, new: &NewNode) -> bool {
        if new.caller.is_some() {
            return false;
        }
        match new.role {
            Role::User => true,
            Role::Assistant => {
                let p = new.predecessor.as_deref().or(self.meta.head.as_deref());
                match (p.and_then(|p| self.node(p)), &self.meta.open_turn) {
                    (Some(p), Some(open)) if p.seq >= open.first_seq => false,
                    (Some(p), _) => self.nodes.iter().any(|n| {
                        n.is_conversational() && n.predecessor.as_deref() == Some(p.id.as_str())
                    }),
                    (None, _) => false,
                }
            }
            _ => false,
        }
    }

    /// Before a new turn opens (or the head moves): a running turn refuses
    /// it; a turn left open by a crash is closed (and committed) first.
    pub(super) fn close_interrupted_turn(&mut self) -> Result<Option<TurnOutcome>, SessionError> {
        let Some(open) = &self.meta.open_turn else {
            return Ok(None);
        };
        if self.meta.status == Status::Running {
            return Err(SessionError::RunActive);
        }
        let skipped = open.project.as_ref().map(|_| ProjectOutcome::Skipped {
            reason: "the turn was interrupted by a restart".into(),
            dirty_paths: Vec::new(),
        });
        self.end_turn_inner(EndTurn::default(), true, skipped)
            .map(Some)
    }

    /// Undo the append of the last node (its turn could not be placed).
    fn forget_last_node(&mut self) {
        if let Some(node) = self.nodes.pop() {
            self.by_id.remove(&node.id);
            self.replies -= u32::from(is_reply(&node));
            let _ = fs::remove_file(
                self.dir
                    .join(layout::node_rel_path(node.seq, node.role, &node.id)),
            );
        }
    }

    /// The user message a turn answers: its opener, or for a retried
    /// answer the nearest user message before it.
    pub(super) fn answered_user_node(&self, opener: &Node) -> String {
        let mut cursor = Some(opener);
        while let Some(n) = cursor {
            if n.role == Role::User && n.caller.is_none() {
                return n.id.clone();
            }
            cursor = n.predecessor.as_deref().and_then(|p| self.node(p));
        }
        opener.id.clone()
    }

    /// The node that opened the turn starting at `first_seq`.
    pub(super) fn turn_opener(&self, first_seq: u64) -> Option<&Node> {
        self.nodes
            .iter()
            .find(|n| n.seq >= first_seq && n.is_conversational())
    }

    /// Fill or amend a node of the open turn.
    pub fn update_node(&mut self, id: &str, patch: NodePatch) -> Result<Node, SessionError> {
        let &i = self
            .by_id
            .get(id)
            .ok_or_else(|| SessionError::UnknownNode(id.to_string()))?;
        match &self.meta.open_turn {
            Some(open) if self.nodes[i].seq >= open.first_seq => {}
            _ => return Err(SessionError::Immutable(id.to_string())),
        }
        let mut node = self.nodes[i].clone();
        if let Some(c) = patch.content {
            node.content = c;
        }
        if let Some(m) = patch.metadata {
            node.metadata.extend(m);
        }
        if let Some(o) = patch.output {
            node.output = Some(o);
        }
        self.write_node(&node)?;
        self.nodes[i] = node.clone();
        Ok(node)
    }

    /// End the open turn: record it in `meta.json`, then make its one commit.
    /// Acknowledged only once the commit exists.
    /// `project` is what the bound project's actor did (or why it skipped).
    pub fn end_turn(
        &mut self,
        req: EndTurn,
        project: Option<ProjectOutcome>,
    ) -> Result<TurnOutcome, SessionError> {
        self.end_turn_inner(req, false, project)
    }

    fn end_turn_inner(
        &mut self,
        req: EndTurn,
        interrupted: bool,
        project: Option<ProjectOutcome>,
    ) -> Result<TurnOutcome, SessionError> {
        let open = self
            .meta
            .open_turn
            .clone()
            .ok_or(SessionError::NoOpenTurn)?;
        let context_file = match req.context {
            Some(ctx) => {
                let cid = req
                    .context_id
                    .unwrap_or_else(|| format!("turn-{:06}", open.number));
                ids::validate("context id", &cid)?;
                let rel = layout::context_rel_path(&cid);
                fs::create_dir_all(self.dir.join(layout::CONTEXT_COMMITS))?;
                fsio::atomic_write_json(&self.dir.join(&rel), &ctx)?;
                Some(rel.to_string_lossy().into_owned())
            }
            None => None,
        };
        let ended_at = now();
        let record = TurnRecord {
            number: open.number,
            first_seq: open.first_seq,
            last_seq: self.last_seq(),
            head: self.meta.head.clone(),
            duration_s: Some(
                req.duration_s
                    .unwrap_or((ended_at - open.started_at).max(0.0)),
            ),
            tokens: req.tokens,
            tool_calls: req.tool_calls,
            context_file,
            ended_at,
            project: project.clone(),
        };
        let (status, unread) = match (interrupted, req.outcome, req.background) {
            (true, _, _) => (Status::Idle, self.meta.unread),
            (_, Outcome::Failed, _) => (Status::Failed, self.meta.unread),
            (_, Outcome::NeedsInput, _) => (Status::NeedsInput, self.meta.unread),
            (_, Outcome::Ok, true) => (Status::Done, true),
            (_, Outcome::Ok, false) => (Status::Idle, self.meta.unread),
        };
        self.meta.status = status;
        self.meta.unread = unread;
        let title_plan = self.title_plan(open.first_seq);
        self.meta.open_turn = None;
        self.meta.turn_count = open.number;
        self.meta.last_turn = Some(record.clone());
        // The commit below holds this meta.json; if a crash loses the rename
        // after the commit, loading restores it from HEAD.
        self.write_meta_turn()?;
        let sha = self.commit_turn(&record)?;
        let (project_commit, project_commit_skipped) = match project {
            Some(ProjectOutcome::Committed { commit }) => (Some(commit), None),
            Some(ProjectOutcome::Skipped {
                reason,
                dirty_paths,
            }) => (
                None,
                Some(
                    serde_json::json!({"warning": "project_commit_skipped", "reason": reason, "dirty_paths": dirty_paths}),
                ),
            ),
            _ => (None, None),
        };
        Ok(TurnOutcome {
            turn: open.number,
            short_sha: sha[..7].to_string(),
            commit: sha,
            status,
            project_commit,
            project_commit_skipped,
            title_plan,
            next_turn: None,
        })
    }

    /// Bind a session that has no turn yet to another project, moving its
    /// repository to `dir`. Naming the project it already has always
    /// succeeds; after the first turn any other project is refused.
    pub fn rebind(&mut self, project_id: &str, dir: &Path) -> Result<bool, SessionError> {
        if self.meta.project_id == project_id {
            return Ok(false);
        }
        if self.meta.last_turn.is_some() || self.meta.open_turn.is_some() {
            return Err(SessionError::Frozen);
        }
        if dir != self.dir {
            if dir.exists() {
                return Err(SessionError::AlreadyExists);
            }
            let parent = dir
                .parent()
                .ok_or_else(|| SessionError::Invalid("no parent".into()))?;
            fsio::create_dir_durable(parent)?;
            fs::rename(&self.dir, dir)?;
            fsio::fsync_dir(parent)?;
            if let Some(old_parent) = self.dir.parent() {
                fsio::fsync_dir(old_parent)?;
            }
            self.dir = dir.to_path_buf();
            self.repo = git::open_repo(&self.dir)?;
            self.index = git::IndexFile::load(&self.repo)?;
        }
        self.meta.project_id = project_id.to_string();
        self.write_meta()?;
        Ok(true)
    }

    /// Post a user message: while a turn is running it is queued durably
    /// (the next turn opens with it when this one ends), otherwise appended.
    /// A message id already stored or queued is not stored again.
    pub fn post(
        &mut self,
        new: NewNode,
        baseline: Option<ProjectBaseline>,
    ) -> Result<Posted, SessionError> {
        let busy = self.meta.open_turn.is_some() && self.meta.status == Status::Running;
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
            if self.by_id.contains_key(id) {
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

    fn load_queue(&mut self) -> Result<(), SessionError> {
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
                Ok(q) if self.by_id.contains_key(&q.id) => fs::remove_file(&path)?,
                Ok(q) => self.queue.push(q),
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "unreadable queued message; skipped")
                }
            }
        }
        Ok(())
    }

    /// Fork this session into a new one at `dest`: its repository holds the
    /// history up to `commit` (a turn commit of this session), or up to the
    /// turn that committed `node_id`, or up to HEAD; its `meta.json` records
    /// `forked_from`. Built in a temporary folder and renamed into place.
    pub fn fork(
        &self,
        commit: Option<&str>,
        node_id: Option<&str>,
        dest: &Path,
        new_id: &str,
    ) -> Result<String, SessionError> {
        let oid = self.fork_point(commit, node_id)?;
        if dest.exists() {
            return Err(SessionError::AlreadyExists);
        }
        let parent = dest
            .parent()
            .ok_or_else(|| SessionError::Invalid("no parent".into()))?;
        fsio::build_dir_atomically(parent, "fork", |tmp| -> Result<_, SessionError> {
            git::fork_repo(&self.repo, oid, tmp)?;
            fs::create_dir_all(tmp.join(layout::WORKDIR))?;
            let mut meta: SessionMeta = fsio::read_json(&tmp.join(META))?;
            let now = now();
            meta.id = new_id.to_string();
            meta.forked_from = Some(crate::meta::ForkedFrom {
                session_id: self.meta.id.clone(),
                commit: oid.to_string(),
            });
            meta.status = Status::Idle;
            meta.open_turn = None;
            meta.viewing = None;
            meta.unread = false;
            meta.pinned = false;
            meta.archived = false;
            meta.created_at = now;
            meta.updated_at = now;
            fsio::atomic_write_json(&tmp.join(META), &meta)?;
            Ok((dest.to_path_buf(), ()))
        })?;
        Ok(oid.to_string())
    }

    /// Register a git bundle of a session as a new session under
    /// `sessions_dir`: its own id if free (or `wanted`), else a new one.
    /// Built in a temporary folder and renamed into place; a damaged or
    /// foreign bundle leaves nothing behind. Returns the session id.
    pub fn import(
        bytes: &[u8],
        sessions_dir: &Path,
        wanted: Option<&str>,
    ) -> Result<String, SessionError> {
        fsio::build_dir_atomically(sessions_dir, "import", |tmp| -> Result<_, SessionError> {
            git::read_bundle(bytes, tmp).map_err(|e| SessionError::BadBundle(e.to_string()))?;
            let mut meta: SessionMeta = fsio::read_json(&tmp.join(META)).map_err(|_| {
                SessionError::BadBundle("not an openprogram session (no valid meta.json)".into())
            })?;
            let free = |id: &str| {
                ids::validate("session id", id).is_ok() && !sessions_dir.join(id).exists()
            };
            let id = wanted
                .or(Some(meta.id.as_str()))
                .filter(|id| free(id))
                .map(str::to_owned)
                .unwrap_or_else(ids::new_id);
            meta.id = id.clone();
            meta.status = Status::Idle;
            meta.open_turn = None;
            meta.viewing = None;
            meta.project_id = crate::project::DEFAULT_PROJECT.into();
            fsio::atomic_write_json(&tmp.join(META), &meta)?;
            fs::create_dir_all(tmp.join(layout::WORKDIR))?;
            Ok((sessions_dir.join(&id), id))
        })
    }

    /// A git bundle of every branch (see `git::write_bundle`).
    pub fn export_bundle(&self) -> Result<Vec<u8>, SessionError> {
        if git::head_commit(&self.repo)?.is_none() {
            return Err(SessionError::NoTurns);
        }
        Ok(git::write_bundle(&self.repo)?)
    }

    /// The commit a fork starts from (see `fork`).
    fn fork_point(
        &self,
        commit: Option<&str>,
        node_id: Option<&str>,
    ) -> Result<git2::Oid, SessionError> {
        // Every commit of every branch.
        let log = git::all_commits(&self.repo)?;
        if log.is_empty() {
            return Err(SessionError::NoTurns);
        }
        match (commit, node_id) {
            (Some(_), Some(_)) => Err(SessionError::Invalid(
                "give either commit or node_id, not both".into(),
            )),
            (Some(c), None) => {
                let found = log.iter().find(|l| {
                    let sha = l.oid.to_string();
                    sha == c || (c.len() >= 7 && sha.starts_with(c))
                });
                Ok(found
                    .ok_or_else(|| SessionError::UnknownCommit(c.to_string()))?
                    .oid)
            }
            (None, Some(n)) => {
                let node = self
                    .node(n)
                    .ok_or_else(|| SessionError::UnknownNode(n.to_string()))?;
                // The turn commit that committed the node: the one with the
                // smallest last sequence that covers it and holds its file.
                let rel = layout::node_rel_path(node.seq, node.role, &node.id);
                let mut covering: Vec<&git::CommitRow> = log
                    .iter()
                    .filter(|l| l.trailers.last_seq >= node.seq)
                    .collect();
                covering.sort_by_key(|l| l.trailers.last_seq);
                for l in covering {
                    if self.repo.find_commit(l.oid)?.tree()?.get_path(&rel).is_ok() {
                        return Ok(l.oid);
                    }
                }
                Err(SessionError::NotCommitted(n.to_string()))
            }
            (None, None) => git::head_commit(&self.repo)?
                .map(|c| c.id())
                .ok_or(SessionError::NoTurns),
        }
    }

    /// Set the assistant-reply counts at which an LLM title is due.
    pub fn set_retitle_at(&mut self, thresholds: Vec<u32>) {
        self.retitle_at = thresholds;
    }

    /// Naming at the end of a turn (spec 003 `_maybe_auto_title`): never
    /// when the user named the session; when this turn's replies crossed a
    /// threshold, an LLM pass is due, and on the first one the phase-1
    /// title (the first user message, cut) is set at once.
    fn title_plan(&mut self, turn_first_seq: u64) -> Option<TitlePlan> {
        if self.meta.user_titled {
            return None;
        }
        // Nodes are in sequence order: this turn's are at the end.
        let in_turn = self
            .nodes
            .iter()
            .rev()
            .take_while(|n| n.seq >= turn_first_seq)
            .filter(|n| is_reply(n))
            .count() as u32;
        let after = self.replies;
        let before = after - in_turn;
        let pass = self
            .retitle_at
            .iter()
            .enumerate()
            .filter(|(_, t)| before < **t && **t <= after)
            .map(|(i, _)| i as u32 + 1)
            .max()?;
        let excerpt = |n: &Node| -> String { n.text().chars().take(500).collect() };
        let mut expected_title = None;
        let input = if pass == 1 {
            let user = self
                .first_user_text()
                .map(|t| t.chars().take(500).collect::<String>())
                .unwrap_or_default();
            let reply = self
                .nodes
                .iter()
                .find(|n| is_reply(n))
                .map(excerpt)
                .unwrap_or_default();
            if !self.meta.auto_titled {
                self.meta.title = crate::titler::text::title_from_text(&user);
                self.meta.auto_titled = true;
                self.meta.title_gen_count = 1;
            }
            expected_title = Some(self.meta.title.clone());
            format!("User: {user}\n\nAssistant: {reply}")
        } else {
            self.recent_messages(20)
        };
        Some(TitlePlan {
            pass,
            input,
            expected_title,
        })
    }

    /// The last `n` conversational messages of the current branch, as text
    /// for an LLM ("User: …" / "Assistant: …", each at most 500 characters).
    pub fn recent_messages(&self, n: usize) -> String {
        let branch = self.branch(None).unwrap_or_default();
        let conv: Vec<&Node> = branch.iter().filter(|m| m.is_conversational()).collect();
        conv[conv.len().saturating_sub(n)..]
            .iter()
            .map(|m| {
                let who = if m.role == Role::User {
                    "User"
                } else {
                    "Assistant"
                };
                format!("{who}: {}", m.text().chars().take(500).collect::<String>())
            })
            .collect::<Vec<_>>()
            .join("\n\n")
    }

    /// Write a generated title under the race rules: never over a title the
    /// user typed, and on the first pass only if the title is still the
    /// phase-1 one. `force` (an explicit regenerate) skips both rules.
    pub fn apply_title(
        &mut self,
        title: &str,
        pass: u32,
        expected: Option<&str>,
        force: bool,
    ) -> Result<bool, SessionError> {
        if !force && (self.meta.user_titled || expected.is_some_and(|e| e != self.meta.title)) {
            return Ok(false);
        }
        if self.meta.title == title && self.meta.auto_titled {
            return Ok(false);
        }
        let gen = if force {
            self.meta.title_gen_count
        } else {
            pass + 1
        };
        self.update_meta(|m| {
            m.title = title.to_string();
            m.auto_titled = true;
            m.title_gen_count = gen;
        })?;
        Ok(true)
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
        let previous = std::mem::replace(&mut self.meta, next);
        if let Err(e) = self.write_meta() {
            self.meta = previous;
            return Err(e);
        }
        Ok(&self.meta)
    }

    // ----- internals ------------------------------------------------------

    /// Last sequence number covered by an ended turn.
    fn ended_seq(&self) -> u64 {
        self.meta.last_turn.as_ref().map_or(0, |r| r.last_seq)
    }

    pub(super) fn write_node(&self, node: &Node) -> Result<(), SessionError> {
        let path = self
            .dir
            .join(layout::node_rel_path(node.seq, node.role, &node.id));
        if let Some(parent) = path.parent() {
            if !parent.exists() {
                fsio::create_dir_durable(parent)?;
                if let Some(grand) = parent.parent() {
                    fsio::fsync_dir(grand)?;
                }
            }
        }
        fsio::atomic_write_json(&path, node)?;
        Ok(())
    }

    fn write_meta(&self) -> Result<(), SessionError> {
        fsio::atomic_write_json(&self.dir.join(META), &self.meta)?;
        Ok(())
    }

    /// `meta.json` as commit `oid` holds it.
    fn committed_meta(&self, oid: git2::Oid) -> Result<Option<SessionMeta>, SessionError> {
        let commit = self.repo.find_commit(oid)?;
        let Ok(entry) = commit.tree()?.get_path(Path::new(META)) else {
            return Ok(None);
        };
        let blob = self.repo.find_blob(entry.id())?;
        Ok(serde_json::from_slice(blob.content()).ok())
    }

    /// `meta.json` at a turn boundary: data durable, rename made durable by
    /// the commit that follows or repaired at load (see `reconcile`).
    fn write_meta_turn(&self) -> Result<(), SessionError> {
        let mut bytes = serde_json::to_vec_pretty(&self.meta).map_err(std::io::Error::other)?;
        bytes.push(b'\n');
        fsio::atomic_replace_data_synced(&self.dir.join(META), &bytes)?;
        Ok(())
    }

    /// Commit the files of one ended turn. Deterministic from the files and
    /// the record, so the repair after a crash makes the same commit.
    fn commit_turn(&mut self, record: &TurnRecord) -> Result<String, SessionError> {
        // Nodes are in sequence order: the turn's are at the end.
        let mut turn_nodes: Vec<&Node> = self
            .nodes
            .iter()
            .rev()
            .take_while(|n| n.seq >= record.first_seq)
            .filter(|n| n.seq <= record.last_seq)
            .collect();
        turn_nodes.reverse();
        // A turn on a new branch also brings the nodes of its path that the
        // parent commit lacks (a retry: the user message it answers again).
        let parent_head = git::head_trailers(&self.repo)?.head_node;
        let opener = turn_nodes.iter().find(|n| n.is_conversational()).copied();
        let extras = match opener {
            Some(o) => self.path_nodes_since(o, parent_head.as_deref()),
            None => Vec::new(),
        };
        for n in &extras {
            let path = self.dir.join(layout::node_rel_path(n.seq, n.role, &n.id));
            if !path.exists() {
                self.write_node(n)?;
            }
        }
        let branch = git::current_branch(&self.repo)?;
        let described: Vec<&Node> = extras.iter().chain(turn_nodes.iter()).copied().collect();
        let mut summary = TurnSummary::from_nodes(&self.meta.id, record.number, &turn_nodes);
        if opener.is_some_and(|o| o.role != Role::User) {
            // A retried answer: the message line names the user message.
            let user = opener.map(|o| self.answered_user_node(o));
            summary.user_text = user
                .and_then(|u| self.node(&u))
                .map(Node::text)
                .unwrap_or_default();
        }
        summary.branch = Some(&branch);
        summary.duration_s = record.duration_s.unwrap_or(0.0);
        if let Some(tc) = record.tool_calls {
            summary.tool_calls = tc;
        }
        summary.tokens = record.tokens;
        summary.head = record.head.as_deref();
        summary.last_seq = record.last_seq;
        if let Some(ProjectOutcome::Committed { commit }) = &record.project {
            summary.project_commit = Some(commit.as_str());
        }
        let message = summary.message();
        let mut paths: Vec<PathBuf> = described
            .iter()
            .map(|n| layout::node_rel_path(n.seq, n.role, &n.id))
            .collect();
        paths.push(PathBuf::from(META));
        paths.push(PathBuf::from(GITIGNORE));
        if let Some(ctx) = &record.context_file {
            paths.push(PathBuf::from(ctx));
        }
        let refs: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
        let oid = match git::commit_paths(&self.repo, &mut self.index, &refs, &message) {
            Ok(o) => {
                if o.repacked {
                    self.repo = git::open_repo(&self.dir)?;
                }
                o.oid
            }
            Err(GitError::Empty) => match git::head_commit(&self.repo)? {
                Some(c) => c.id(),
                None => return Err(GitError::Empty.into()),
            },
            Err(e) => return Err(e.into()),
        };
        Ok(oid.to_string())
    }
}

/// An assistant reply (not a runtime node called by another).
fn is_reply(n: &Node) -> bool {
    n.role == Role::Assistant && n.caller.is_none()
}

/// Read every node file under `history/`, removing temp-file leftovers.
/// Unreadable files are logged and skipped (they are still on disk).
fn read_history(history: &Path) -> Result<Vec<Node>, SessionError> {
    let mut nodes = Vec::new();
    let mut stack = vec![history.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = match fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e.into()),
        };
        for entry in entries {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            if entry.file_type()?.is_dir() {
                stack.push(path);
            } else if name.starts_with(fsio::TMP_PREFIX) {
                fs::remove_file(&path)?;
            } else if let Some((seq, role, id)) = layout::parse_node_file_name(&name) {
                match fsio::read_json::<Node>(&path) {
                    Ok(n) if n.seq == seq && n.role == role && n.id == id => nodes.push(n),
                    Ok(_) => {
                        tracing::warn!(path = %path.display(), "node file name and content disagree; skipped")
                    }
                    Err(e) => {
                        tracing::warn!(path = %path.display(), error = %e, "unreadable node file; skipped")
                    }
                }
            }
        }
    }
    nodes.sort_by_key(|n| n.seq);
    Ok(nodes)
}

pub use node::preview;
