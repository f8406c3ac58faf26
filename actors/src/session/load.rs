//! Creating a session directory and loading one, with the crash repair
//! that loading does (`reconcile`): temp files, stale locks, a turn ended
//! but not committed, the cached head and open turn.

use std::fs;
use std::io;
use std::path::Path;

use super::contents::Previews;
use super::core::SessionCore;
use super::error::SessionError;
use super::graph::read_branch_nodes;
use super::layout::{self, GITIGNORE, GITIGNORE_BODY, META};
use super::naming::RETITLE_AT;
use super::node_index::{NodeHead, NodeIndex};
use super::wire::{AppendOutcome, NewNode};
use crate::fsio;
use crate::git;
use crate::meta::{OpenTurn, ProjectBaseline, SessionMeta, TurnRecord};
use crate::node::Node;
use crate::store::Store;

impl SessionCore {
    /// Create a session directory at `dir`, optionally with its first node,
    /// as one atomic step: everything is built in a temporary sibling folder
    /// and renamed into place, so a crash never leaves an empty shell.
    pub fn create(
        store: &Store,
        dir: &Path,
        meta: SessionMeta,
        first: Option<(NewNode, Option<ProjectBaseline>)>,
    ) -> Result<(SessionCore, Option<AppendOutcome>), SessionError> {
        let mut meta = meta;
        super::redaction::redact_new_title(store, &mut meta)?;
        if dir.exists() {
            return Err(SessionError::AlreadyExists);
        }
        let parent = dir
            .parent()
            .ok_or_else(|| SessionError::Invalid("session directory has no parent".into()))?;
        ensure_parent(parent)?;
        let built =
            fsio::build_dir_atomically(parent, "create", |tmp| -> Result<_, SessionError> {
                fsio::create_private_dir_all(tmp)?;
                let repo = git::init_session_repo(tmp)?;
                let index = git::GitIndex::load(&repo)?;
                for sub in [layout::HISTORY, layout::CONTEXT_COMMITS, layout::WORKDIR] {
                    fsio::create_private_dir_all(&tmp.join(sub))?;
                }
                fsio::atomic_write(&tmp.join(GITIGNORE), GITIGNORE_BODY.as_bytes())?;
                fsio::atomic_write_json(&tmp.join(META), &meta)?;
                let mut core = SessionCore {
                    store: store.clone(),
                    dir: tmp.to_path_buf(),
                    repo,
                    index,
                    meta,
                    dag: NodeIndex::default(),
                    open_nodes: Vec::new(),
                    previews: Previews::default(),
                    retitle_at: RETITLE_AT.to_vec(),
                    replies: 0,
                    queue: Vec::new(),
                    pending_paths: Vec::new(),
                    commit_pending: false,
                    packs: 0,
                    recent: git::RecentObjects::new(),
                    batch: None,
                    defer_apply: false,
                    deferred: None,
                };
                core.commit_session_init()?;
                let outcome = first.map(|(n, b)| core.append_with(n, b)).transpose()?;
                // What the log wrote here is under the temporary name.
                fsio::sync_tree(tmp)?;
                Ok((dir.to_path_buf(), outcome))
            });
        let outcome = match built {
            Ok(o) => o,
            // Another creator won the rename.
            Err(_) if dir.join(META).exists() => return Err(SessionError::AlreadyExists),
            Err(e) => return Err(e),
        };
        let core = SessionCore::load(store, dir)?;
        Ok((core, outcome))
    }

    /// Load a session directory, repairing what a crash may have left: temp
    /// files, stale git locks, a turn whose end was recorded but whose commit
    /// did not finish, and the cached head and open turn.
    pub fn load(store: &Store, dir: &Path) -> Result<SessionCore, SessionError> {
        let id = dir.file_name().and_then(|n| n.to_str()).map(str::to_owned);
        Self::load_as(store, dir, id.as_deref())
    }

    /// `load` for a session whose directory is not (yet) named after it:
    /// an import is loaded and verified in its temporary folder first.
    pub fn load_as(
        store: &Store,
        dir: &Path,
        id: Option<&str>,
    ) -> Result<SessionCore, SessionError> {
        // A purge a kill interrupted is finished before anything is read.
        if dir.join(".git").join(super::purge::PENDING).exists() {
            super::purge::finish_pending(store, dir)?;
        }
        let mut meta = match SessionMeta::read_lenient(&dir.join(META)) {
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
        if let Some(id) = id {
            meta.id = id.to_string();
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
        // A pack staged while its log entry was flushed, under a temporary
        // name, and left by a kill before it was put in place: the log
        // holds the turn's objects if the entry was flushed, and replay
        // wrote them in place. Nothing else of this session is being
        // written now; a merge of a session let go and loaded again may
        // lose its temporary file and fails harmlessly (its packs stay).
        fsio::remove_tmp_files(&repo.path().join("objects/pack"))?;
        // A `git checkout <commit>` run in the folder: back on the branch,
        // and the work tree re-synced below.
        let reattached = super::outside::reattach(&repo, dir, &meta)?;
        // A branch moved back with git: on its acknowledged commit again,
        // and the work tree re-synced below.
        let restored = super::outside::restore_acked(&repo, dir)?;
        let (index, index_repaired) = git::GitIndex::load_checked(&repo)?;
        let index_repaired = index_repaired || reattached || !restored.is_empty();
        // The open turn's nodes are kept whole; the others are read when
        // asked for.
        let ended = meta.last_turn.as_ref().map_or(0, |t| t.last_seq);
        let (mut nodes, open_nodes) = read_history(&dir.join(layout::HISTORY), ended)?;
        // The work tree holds the current branch (all of it unless a switch
        // was cut short); the other branches live in git. HEAD may be on a
        // branch with no commit yet (a retry of the first turn, cut short
        // by a crash), whose work tree lacks the nodes of the others.
        let branches = git::list_branches(&repo)?;
        let current = git::current_branch(&repo).ok();
        let single_branch = match branches.as_slice() {
            [] => true,
            [only] => Some(&only.name) == current.as_ref(),
            _ => false,
        };
        if index_repaired || !single_branch {
            let more = read_branch_nodes(&repo, &nodes)?;
            nodes.extend(more);
        }
        let mut core = SessionCore {
            store: store.clone(),
            dir: dir.to_path_buf(),
            repo,
            index,
            meta,
            dag: NodeIndex::build(nodes),
            open_nodes,
            previews: Previews::default(),
            retitle_at: RETITLE_AT.to_vec(),
            replies: 0,
            queue: Vec::new(),
            pending_paths: Vec::new(),
            commit_pending: false,
            packs: 0,
            recent: git::RecentObjects::new(),
            batch: None,
            defer_apply: false,
            deferred: None,
        };
        core.packs = git::repack::pack_count(core.repo.path());
        core.replies = core.dag.iter().filter(|n| n.is_reply()).count() as u32;
        core.load_queue()?;
        if fs::read(dir.join(GITIGNORE)).ok().as_deref() != Some(GITIGNORE_BODY.as_bytes()) {
            fsio::atomic_write(&dir.join(GITIGNORE), GITIGNORE_BODY.as_bytes())?;
        }
        core.reconcile(index_repaired)?;
        core.announce_restored(&restored)?;
        core.keep_turn_user();
        core.refresh_previews();
        // Loading read every tree of HEAD (the index check) and the tips of
        // every branch: a fresh handle lets go of the pack windows those
        // reads mapped, so a loaded session holds only what its next
        // writes read.
        core.repo = git::open_repo(dir)?;
        Ok(core)
    }

    /// `index_repaired`: the index was behind HEAD, so the work tree may be
    /// too (a commit or a branch switch was cut short).
    fn reconcile(&mut self, index_repaired: bool) -> Result<(), SessionError> {
        let (pending, committed_seq, mut dirty) = self.reconcile_last_turn()?;
        dirty |= self.replay_head();
        let (detected, opened) = self.recover_open_turn();
        dirty |= opened;
        // HEAD must be on the branch the open turn commits to.
        if let (Some(open), None) = (self.meta.open_turn.clone(), &pending) {
            if let Some(opener) = self.turn_opener(open.first_seq).map(|n| n.id().to_string()) {
                self.place_turn(&opener)?;
            }
            if detected {
                let number = git::head_trailers(&self.repo)?.turn + 1;
                if let Some(t) = self.meta.open_turn.as_mut() {
                    t.number = number;
                }
            }
        }
        if let Some(last) = self.dag.iter().rev().find(|n| n.is_conversational()) {
            self.meta.updated_at = self.meta.updated_at.max(last.created_at());
        }
        if dirty {
            self.write_meta()?;
        }
        // Commit last, so the commit holds the repaired meta.json.
        if let Some(record) = pending {
            self.commit_interrupted_turn(record, committed_seq)?;
        }
        // A branch switch cut short leaves the work tree between branches.
        if index_repaired && self.sync_worktree_to_head()? {
            tracing::warn!(session = %self.meta.id, "work tree re-synced with HEAD");
        }
        Ok(())
    }

    /// The last recorded end of turn against git: the turn whose commit
    /// did not happen (to commit), or `meta.json` restored from a commit
    /// whose own rename a crash lost. Turns end one after another whatever
    /// their branch, so the last sequence number of the newest commit on
    /// any branch tells whether the last recorded end was committed.
    /// Returns (the pending turn, the last committed seq, meta changed).
    fn reconcile_last_turn(&mut self) -> Result<(Option<TurnRecord>, u64, bool), SessionError> {
        let tips = git::list_branches(&self.repo)?;
        let newest = tips.iter().max_by_key(|t| t.trailers.last_seq);
        let committed_seq = newest.map_or(0, |t| t.trailers.last_seq);
        if self.ended_seq() > committed_seq {
            return Ok((self.meta.last_turn.clone(), committed_seq, false));
        }
        let Some(tip) = newest.filter(|_| self.ended_seq() < committed_seq) else {
            return Ok((None, committed_seq, false));
        };
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
        Ok((None, committed_seq, true))
    }

    /// Move the head over nodes appended since it was last saved; whether
    /// it moved.
    fn replay_head(&mut self) -> bool {
        let mut head = self.meta.head.clone().filter(|h| self.dag.contains(h));
        let from = head
            .as_deref()
            .and_then(|h| self.node(h))
            .map_or(0, |n| n.seq());
        for n in self.dag.iter().filter(|n| n.seq() > from) {
            if n.is_conversational() && n.predecessor_id() == head.as_deref() {
                head = Some(n.id().to_string());
            }
        }
        if head == self.meta.head {
            return false;
        }
        self.meta.head = head;
        true
    }

    /// The open turn: the user node that opened it must exist; a node that
    /// opens a turn (a user message or a retried answer), written just
    /// before a crash (meta not yet saved), opens it. Returns (a turn was
    /// found open this way, meta changed).
    fn recover_open_turn(&mut self) -> (bool, bool) {
        let ended = self.ended_seq();
        match &self.meta.open_turn {
            Some(open) if !self.dag.contains(&open.user_node) => {
                self.meta.open_turn = None;
                (false, true)
            }
            Some(_) => (false, false),
            None => {
                let Some(opener) = self
                    .dag
                    .iter()
                    .find(|n| n.seq() > ended && n.is_conversational())
                else {
                    return (false, false);
                };
                // The project's tree at the turn's start is unknown now.
                let project = (self.meta.project_id != crate::project::DEFAULT_PROJECT)
                    .then(|| ProjectBaseline::unknown("the turn was recovered after a restart"));
                self.meta.open_turn = Some(OpenTurn {
                    number: 0, // set once the turn's branch is known
                    user_node: self.answered_user_node(opener),
                    first_seq: ended + 1,
                    started_at: opener.created_at(),
                    project,
                });
                (true, true)
            }
        }
    }

    /// Commit a turn whose end was recorded but whose commit a crash cut
    /// short. Startup validation (spec 001 §6): turns before it that git
    /// lacks too are committed first, one commit per turn. A commit that
    /// fails again is left pending (the actor retries it).
    fn commit_interrupted_turn(
        &mut self,
        mut record: TurnRecord,
        committed_seq: u64,
    ) -> Result<(), SessionError> {
        if record.first_seq > committed_seq + 1 {
            let last = self.meta.last_turn.clone();
            let earlier = self.backfill_before(record.first_seq)?;
            tracing::warn!(session = %self.meta.id, turns = earlier, "committed turns missing from git");
            self.meta.last_turn = last;
        }
        record.number = git::head_trailers(&self.repo)?.turn + 1;
        self.meta.turn_count = record.number;
        self.meta.last_turn = Some(record.clone());
        self.write_meta()?;
        tracing::warn!(session = %self.meta.id, turn = record.number, "committing a turn interrupted by a crash");
        if let Err(e) = self.commit_turn(&record) {
            tracing::error!(session = %self.meta.id, turn = record.number, error = %e, "the turn's commit failed again; it stays pending");
            self.commit_pending = true;
        }
        Ok(())
    }
}

/// Why a session's directory is not there: its project folder is missing
/// (409), or the session is gone (404).
pub(super) fn vanished(dir: &Path) -> SessionError {
    let project = dir
        .parent()
        .and_then(Path::parent)
        .filter(|op| {
            op.file_name()
                .is_some_and(|n| n == crate::project::OPENPROGRAM_DIR)
        })
        .and_then(Path::parent);
    match project {
        Some(root) if !root.exists() => SessionError::ProjectPathMissing(root.to_path_buf()),
        _ => SessionError::NotFound,
    }
}

/// The folder a new session goes in must exist, or be the `.openprogram/
/// sessions` folder of a project folder that exists: a project folder that
/// was moved away is never recreated (409 `project_path_missing`).
fn ensure_parent(parent: &Path) -> Result<(), SessionError> {
    if parent.is_dir() {
        return Ok(());
    }
    let project = parent
        .parent()
        .filter(|op| {
            op.file_name()
                .is_some_and(|n| n == crate::project::OPENPROGRAM_DIR)
        })
        .and_then(Path::parent);
    match project {
        Some(root) if root.is_dir() => {
            fsio::create_dir_durable(parent)?;
            if let Some(op) = parent.parent() {
                fsio::make_dir_private(op)?;
            }
            Ok(())
        }
        Some(root) => Err(SessionError::ProjectPathMissing(root.to_path_buf())),
        None => Err(SessionError::ProjectPathMissing(parent.to_path_buf())),
    }
}

/// Read every node file under `history/`, removing temp-file leftovers:
/// what the index keeps of each, and whole the nodes after `ended` (the
/// open turn's). Unreadable files are logged and skipped (they are still
/// on disk).
fn read_history(history: &Path, ended: u64) -> Result<(Vec<NodeHead>, Vec<Node>), SessionError> {
    let mut nodes = Vec::new();
    let mut open = Vec::new();
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
                    Ok(n) if n.seq == seq && n.role == role && n.id == id => {
                        if n.seq > ended {
                            open.push(n.clone());
                        }
                        nodes.push(NodeHead::from(n));
                    }
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
    open.sort_by_key(|n| n.seq);
    Ok((nodes, open))
}
