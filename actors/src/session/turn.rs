//! The end of a turn: its record in `meta.json`, its status, and its one
//! git commit.

use std::path::{Path, PathBuf};

use super::commit_message::TurnSummary;
use super::core::{Deferred, SessionCore};
use super::error::SessionError;
use super::layout::{self, GITIGNORE, META};
use super::node_index::NodeRef;
use super::wire::{EndTurn, Outcome, TurnOutcome};
use crate::fsio;
use crate::git::{self, GitError};
use crate::ids;
use crate::meta::{now, ProjectOutcome, Status, TurnRecord};
use crate::node::{Node, Role};
use crate::wal;

impl SessionCore {
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

    pub(super) fn end_turn_inner(
        &mut self,
        req: EndTurn,
        interrupted: bool,
        project: Option<ProjectOutcome>,
    ) -> Result<TurnOutcome, SessionError> {
        if self.commit_pending && self.meta.open_turn.is_none() {
            // The client retries an end whose commit failed: try it now.
            self.retry_pending_commit()?;
            let last = self.meta.last_turn.as_ref().map(|t| t.number);
            let again = EndTurn {
                turn: req.turn.or(last),
                ..req
            };
            if let Some(done) = self.repeated_end(&again)? {
                return Ok(done);
            }
            return Err(SessionError::NoOpenTurn);
        }
        if !interrupted {
            if let Some(done) = self.repeated_end(&req)? {
                return Ok(done);
            }
        }
        let open = self
            .meta
            .open_turn
            .clone()
            .ok_or(SessionError::NoOpenTurn)?;
        if let Some(given) = req.turn.filter(|t| *t != open.number) {
            return Err(SessionError::WrongTurn {
                given,
                open: open.number,
            });
        }
        if req.outcome == Outcome::Cancelled && !interrupted {
            self.mark_stopped(open.first_seq)?;
        }
        let idempotency_key = req.idempotency_key.clone();
        let context_file = self.write_context(req.context, req.context_id, open.number)?;
        let ended_at = req.at.unwrap_or_else(now);
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
            idempotency_key,
            outcome: req.outcome.recorded(),
            error: req.error.map(|e| e.chars().take(2000).collect()),
        };
        let (status, unread) = self.status_after(interrupted, req.outcome, req.background);
        self.meta.status = status;
        self.meta.unread = unread;
        let title_plan = self.title_plan(open.first_seq);
        self.meta.open_turn = None;
        self.meta.turn_count = open.number;
        self.meta.last_turn = Some(record.clone());
        // One log entry holds this meta.json and the commit of it.
        let sha = match self.commit_turn(&record) {
            Ok(sha) => sha,
            Err(e) => {
                // The turn is ended (meta.json says so); its commit is
                // retried, and it will be this turn's own commit.
                tracing::error!(session = %self.meta.id, turn = record.number, error = %e, "the turn's commit failed; it stays pending and is retried");
                self.commit_pending = true;
                return Err(SessionError::CommitPending(record.number));
            }
        };
        let (project_commit, project_commit_skipped) = self.outcome_fields(project);
        Ok(TurnOutcome {
            turn: open.number,
            short_sha: git::short_sha(&sha),
            commit: sha,
            status,
            project_commit,
            project_commit_skipped,
            title_plan,
            next_turn: None,
            repeated: false,
        })
    }

    /// The turn's context snapshot, written to `context-commits/` (named
    /// `context_id`, else after the turn); its path in the session.
    fn write_context(
        &self,
        context: Option<serde_json::Value>,
        context_id: Option<String>,
        turn: u64,
    ) -> Result<Option<String>, SessionError> {
        if let Some(cid) = &context_id {
            ids::validate("context id", cid)?;
            if context.is_none() {
                return Err(SessionError::Invalid(
                    "context_id names the context of the turn: send it with context".into(),
                ));
            }
        }
        let Some(ctx) = context else {
            return Ok(None);
        };
        let cid = context_id.unwrap_or_else(|| format!("turn-{turn:06}"));
        ids::validate("context id", &cid)?;
        let rel = layout::context_rel_path(&cid);
        fsio::create_private_dir_all(&self.dir.join(layout::CONTEXT_COMMITS))?;
        fsio::atomic_write_json(&self.dir.join(&rel), &ctx)?;
        Ok(Some(rel.to_string_lossy().into_owned()))
    }

    /// The session's status and unread mark once a turn ends. A channel's
    /// turn is a background one: nobody watches it happen, so it ends
    /// `done` + `unread` (the sidebar's blue dot).
    fn status_after(
        &self,
        interrupted: bool,
        outcome: Outcome,
        background: bool,
    ) -> (Status, bool) {
        let background = background || self.meta.channel.is_some();
        match (interrupted, outcome, background) {
            (true, _, _) => (Status::Idle, self.meta.unread),
            (_, Outcome::Failed, _) => (Status::Failed, self.meta.unread),
            (_, Outcome::Cancelled, _) => (Status::Idle, self.meta.unread),
            (_, Outcome::NeedsInput, _) => (Status::NeedsInput, self.meta.unread),
            (_, Outcome::Ok, true) => (Status::Done, true),
            (_, Outcome::Ok, false) => (Status::Idle, self.meta.unread),
        }
    }

    /// A stopped turn: its last reply (the partial answer) says so
    /// (`metadata.stopped: true`), committed with it.
    fn mark_stopped(&mut self, first_seq: u64) -> Result<(), SessionError> {
        let reply = self
            .open_nodes
            .iter()
            .rev()
            .find(|n| n.seq >= first_seq && n.role == Role::Assistant && n.caller.is_none())
            .map(|n| n.id.clone());
        let Some(id) = reply else {
            return Ok(());
        };
        let mut metadata = serde_json::Map::new();
        metadata.insert("stopped".into(), serde_json::Value::Bool(true));
        let patch = super::wire::NodePatch {
            metadata: Some(metadata),
            ..Default::default()
        };
        self.update_node(&id, patch).map(|_| ())
    }

    /// Make the commit of the ended turn whose commit failed. `Ok` when
    /// there is none pending or it is made now.
    pub fn retry_pending_commit(&mut self) -> Result<(), SessionError> {
        if !self.commit_pending {
            return Ok(());
        }
        let Some(record) = self.meta.last_turn.clone() else {
            self.commit_pending = false;
            return Ok(());
        };
        match self.commit_turn(&record) {
            Ok(_) => {
                tracing::info!(session = %self.meta.id, turn = record.number, "the pending commit is made");
                self.commit_pending = false;
                Ok(())
            }
            Err(e) => {
                tracing::warn!(session = %self.meta.id, turn = record.number, error = %e, "the pending commit failed again");
                Err(SessionError::CommitPending(record.number))
            }
        }
    }

    pub fn commit_is_pending(&self) -> bool {
        self.commit_pending
    }

    /// A repeated end of the turn that was just ended (the client names
    /// it, or sends its `Idempotency-Key` again): its commit, once more.
    fn repeated_end(&self, req: &EndTurn) -> Result<Option<TurnOutcome>, SessionError> {
        let Some(last) = &self.meta.last_turn else {
            return Ok(None);
        };
        let open = self.meta.open_turn.as_ref().map(|t| t.number);
        let by_turn = req.turn == Some(last.number) && open != Some(last.number);
        let by_key = req.idempotency_key.is_some() && req.idempotency_key == last.idempotency_key;
        if !(by_turn || by_key) {
            return Ok(None);
        }
        let Some(tip) = git::list_branches(&self.repo)?
            .into_iter()
            .find(|t| t.trailers.last_seq == last.last_seq)
        else {
            return Ok(None);
        };
        let commit = tip.oid.to_string();
        let (project_commit, project_commit_skipped) = self.outcome_fields(last.project.clone());
        Ok(Some(TurnOutcome {
            turn: last.number,
            short_sha: git::short_sha(&commit),
            commit,
            status: self.meta.status,
            project_commit,
            project_commit_skipped,
            title_plan: None,
            next_turn: None,
            repeated: true,
        }))
    }

    /// The root commit of a new session, `session init`: its `.gitignore`
    /// and first `meta.json`, so every branch forks visibly from a shared
    /// history (a retry of turn 1 too).
    pub(super) fn commit_session_init(&mut self) -> Result<(), SessionError> {
        let message = format!(
            "session init\n\n{}: {}\n",
            git::trailers_keys::SESSION,
            self.meta.id
        );
        let paths = vec![PathBuf::from(GITIGNORE), PathBuf::from(META)];
        self.write_commit(
            paths,
            &message,
            self.meta.created_at as i64,
            FeedNote::default(),
            None,
        )?;
        Ok(())
    }

    /// Commit the files of one ended turn. Deterministic from the files and
    /// the record, so the repair after a crash makes the same commit.
    pub(super) fn commit_turn(&mut self, record: &TurnRecord) -> Result<String, SessionError> {
        // Nodes are in sequence order: the turn's are at the end (kept
        // whole while it is open, so nothing is read here).
        let mut turn_refs: Vec<NodeRef<'_>> = self
            .dag
            .iter()
            .rev()
            .take_while(|n| n.seq() >= record.first_seq)
            .filter(|n| n.seq() <= record.last_seq)
            .collect();
        turn_refs.reverse();
        // A turn on a new branch also brings the nodes of its path that the
        // parent commit lacks (a retry: the user message it answers again).
        // HEAD and its branch read once for the whole commit.
        let head = match &self.batch {
            Some(g) => g.head.clone(),
            None => git::Head::read(&self.repo)?,
        };
        let parent_head = self.trailers_at(head.tip)?.head_node;
        let opener = turn_refs.iter().find(|n| n.is_conversational()).copied();
        // A turn continued after it ended builds on its own first commit:
        // its path is there already.
        let continued = parent_head
            .as_deref()
            .and_then(|h| self.node(h))
            .is_some_and(|h| h.seq() >= record.first_seq);
        let extra_refs = match opener {
            Some(o) if !continued => self.path_nodes_since(o, parent_head.as_deref()),
            _ => Vec::new(),
        };
        // A retried answer: the message line names the user message.
        let user_text = opener.filter(|o| o.role() != Role::User).map(|o| {
            self.node_full(&self.answered_user_node(o))
                .map(|n| n.text())
                .unwrap_or_default()
        });
        let turn_nodes = self.load_nodes(&turn_refs)?;
        let extras = self.load_nodes(&extra_refs)?;
        for n in &extras {
            let path = self.dir.join(layout::node_rel_path(n.seq, n.role, &n.id));
            if !path.exists() {
                self.write_node(n)?;
            }
        }
        let branch = head.short_name().to_string();
        let turn_nodes: Vec<&Node> = turn_nodes.iter().collect();
        let described: Vec<&Node> = extras.iter().chain(turn_nodes.iter().copied()).collect();
        let mut summary = TurnSummary::from_nodes(&self.meta.id, record.number, &turn_nodes);
        if let Some(text) = user_text {
            summary.user_text = text;
        }
        summary.branch = Some(&branch);
        summary.duration_s = record.duration_s.unwrap_or(0.0);
        if let Some(tc) = record.tool_calls {
            summary.tool_calls = tc;
        }
        summary.tokens = record.tokens;
        summary.head = record.head.as_deref();
        summary.last_seq = record.last_seq;
        if let Some(ProjectOutcome::Committed { commit, .. }) = &record.project {
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
        // The commit carries the turn's own end time, so a commit redone
        // after a crash (or backfilled from an older layout) is the same.
        let note = FeedNote {
            turn: Some(record.number),
            node_ids: turn_nodes.iter().map(|n| n.id.clone()).collect(),
            project_commit: match &record.project {
                Some(ProjectOutcome::Committed { commit, .. }) => Some(commit.clone()),
                _ => None,
            },
        };
        let commit =
            self.write_commit(paths, &message, record.ended_at as i64, note, Some(head))?;
        self.settle(record.last_seq);
        Ok(commit)
    }

    /// Commit `paths` (and what `pending_paths` holds) with `message` at
    /// time `at`: `meta.json` as the session holds it now is written with
    /// the commit, in one log entry (also when the commit fails: the
    /// turn's end is recorded, and its commit is retried). A whole turn's
    /// gathered changes (`batch`) lead that entry, and the commit takes
    /// their files from it.
    /// `head`: where HEAD is, when the caller read it (else read here).
    pub(super) fn write_commit(
        &mut self,
        mut paths: Vec<PathBuf>,
        message: &str,
        at: i64,
        note: FeedNote,
        head: Option<git::Head>,
    ) -> Result<String, SessionError> {
        self.finish_deferred()?;
        paths.extend(self.pending_paths.iter().cloned());
        let refs: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
        let time = at;
        let at = Some(at);
        let started = std::time::Instant::now();
        let meta = self.meta_bytes()?;
        let meta_path = self.dir.join(META);
        // Taken out, not ended: until the entry is flushed the session is
        // still gathering (a failed flush drops it from memory).
        let mut changes = self
            .batch
            .as_mut()
            .map(|g| std::mem::take(&mut g.changes))
            .unwrap_or_default();
        // The last meta.json wins: the ones gathered before are dropped.
        changes.retain(|c| !matches!(c, wal::Change::Put { path, .. } if *path == meta_path));
        let prepared = {
            let mut overrides: Vec<(&Path, &[u8])> = changes
                .iter()
                .filter_map(|c| match c {
                    wal::Change::Put { path, bytes, .. } => path
                        .strip_prefix(&self.dir)
                        .ok()
                        .map(|rel| (rel, bytes.as_slice())),
                    _ => None,
                })
                .collect();
            overrides.push((Path::new(META), meta.as_slice()));
            let head = match head {
                Some(h) => Ok(h),
                None => git::Head::read(&self.repo),
            };
            head.and_then(|head| {
                git::prepare_commit(
                    &self.repo,
                    &mut self.recent,
                    head,
                    &refs,
                    &overrides,
                    message,
                    at,
                )
            })
        };
        changes.push(self.meta_change(meta));
        let oid = match prepared {
            Ok(mut p) => {
                let oid = p.oid;
                let feed = self.feed_changes(&p, time, note);
                changes.append(&mut p.changes);
                changes.extend(feed);
                if std::mem::take(&mut self.defer_apply) {
                    let flushed = self.store.flush(changes)?;
                    self.batch = None;
                    self.deferred = Some(Deferred { flushed, commit: p });
                } else {
                    self.store.commit(changes)?;
                    self.batch = None;
                    git::finish_commit(&self.repo, &mut self.index, p)?;
                }
                self.packs += 1;
                oid
            }
            Err(GitError::Empty) => {
                self.store.commit(changes)?;
                self.batch = None;
                match git::head_commit(&self.repo)? {
                    Some(c) => c.id(),
                    None => return Err(GitError::Empty.into()),
                }
            }
            Err(e) => {
                self.store.commit(changes)?;
                self.batch = None;
                return Err(e.into());
            }
        };
        metrics::histogram!("openprogram_commit_duration_seconds")
            .record(started.elapsed().as_secs_f64());
        self.pending_paths.clear();
        Ok(oid.to_string())
    }
}

/// What the change feed says about a commit besides what the commit
/// itself names: the turn it ends, the turn's nodes, the agent's project
/// commit of that turn.
#[derive(Default)]
pub(super) struct FeedNote {
    pub turn: Option<u64>,
    pub node_ids: Vec<String>,
    pub project_commit: Option<String>,
}

impl SessionCore {
    /// The change feed events of the commit `p` (logged with it): the
    /// commit, and the agent's project commit of its turn.
    fn feed_changes(&self, p: &git::PreparedCommit, at: i64, note: FeedNote) -> Vec<wal::Change> {
        use crate::feed::{ChangeEvent, ChangeKind};
        let branch = p.changes.iter().find_map(|c| match c {
            wal::Change::Ref { name, .. } => {
                Some(name.strip_prefix("refs/heads/").unwrap_or(name).to_string())
            }
            _ => None,
        });
        let commit = p.oid.to_string();
        let mut event = ChangeEvent::new(ChangeKind::Commit, &self.meta.id, at as f64);
        event.project_id = Some(self.meta.project_id.clone());
        event.branch = branch;
        event.turn = note.turn;
        event.commit = Some(commit.clone());
        event.node_ids = note.node_ids;
        let mut out = vec![wal::Change::Feed {
            root: self.dir.clone(),
            event: event.to_bytes(),
        }];
        if let Some(pc) = note.project_commit {
            let mut e = ChangeEvent::new(ChangeKind::ProjectCommit, &self.meta.id, at as f64);
            e.project_id = Some(self.meta.project_id.clone());
            e.turn = note.turn;
            e.commit = Some(pc);
            e.session_commit = Some(commit);
            out.push(wal::Change::Feed {
                root: self.dir.clone(),
                event: e.to_bytes(),
            });
        }
        out
    }

    /// What a project outcome shows in the answer to an end of turn: the
    /// commit, or why there is none (`code`: `dirty_tree` when the user had
    /// uncommitted changes, else `unavailable`), with the project and its
    /// folder, so whoever announces it asks nothing more.
    fn outcome_fields(
        &self,
        project: Option<ProjectOutcome>,
    ) -> (Option<String>, Option<serde_json::Value>) {
        match project {
            Some(ProjectOutcome::Committed { commit, .. }) => (Some(commit), None),
            Some(ProjectOutcome::Skipped {
                reason,
                dirty_paths,
                held,
            }) => {
                let code = if dirty_paths.is_empty() {
                    "unavailable"
                } else {
                    "dirty_tree"
                };
                let path = crate::store::project_of_session_folder(&self.dir);
                (
                    None,
                    Some(serde_json::json!({
                        "warning": "project_commit_skipped",
                        "code": code,
                        "reason": reason,
                        "dirty_paths": dirty_paths,
                        "project_id": self.meta.project_id,
                        "path": path,
                        "held": held,
                    })),
                )
            }
            _ => (None, None),
        }
    }
}
