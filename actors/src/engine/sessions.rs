//! One session's life through the engine: create, append and post, the end
//! of a turn, metadata and titles, reads, branches and replay, delete.

use std::path::PathBuf;

use crate::error::EngineError;
use crate::git::CommitInfo;
use crate::ids;
use crate::manager::{Forget, Place};
use crate::messages::TitleJob;
use crate::meta::{MetaPatch, SessionMeta};
use crate::node::Node;
use crate::paths::Purpose;
use crate::project::actor::PrepareFolder;
use crate::project::registry::{Lookup, SetMembership};
use crate::project::DEFAULT_PROJECT;
use crate::session::actor::{
    Append, Create, Delete, EndTurnMsg, SetGeneratedTitle, UpdateMeta, UpdateNode,
};
use crate::session::messages::{
    Checkout, GetBranch, GetBranches, GetCommits, GetContext, GetContexts, GetHistory, GetMeta,
    GetNodes, HasNode, Switch, TitleInput,
};
use crate::session::{
    AppendOutcome, BranchInfo, CheckoutTo, ContextRecord, EndTurn, History, NewNode, NodePatch,
    Posted, SessionError, Shown, SwitchTo, TurnOutcome,
};
use crate::titler::{GenerateNow, TitleError};

use super::Engine;

impl Engine {
    pub async fn create(
        &self,
        id: &str,
        mut meta: SessionMeta,
    ) -> Result<SessionMeta, EngineError> {
        self.writable()?;
        crate::meta::check_title(&meta.title).map_err(SessionError::Invalid)?;
        let project_id = meta.project_id.clone();
        meta.project_home = self.place(id, &project_id).await?;
        let meta = self.call(id, Create { meta }).await?;
        self.attach(&project_id, id).await;
        self.created_in_cluster(id).await?;
        Ok(meta)
    }

    /// A new session bound to a real project lives inside it: record the
    /// place before the session is created.
    pub(super) async fn place(
        &self,
        id: &str,
        project_id: &str,
    ) -> Result<Option<crate::meta::ProjectHome>, EngineError> {
        if project_id == DEFAULT_PROJECT {
            return Ok(None);
        }
        ids::validate("session id", id)?;
        let (project, actor) = self.ask_projects(Lookup(project_id.to_string())).await?;
        // A folder registered by an import has no repository nor
        // `.openprogram/` yet: made now, before a session lands there.
        actor
            .send(PrepareFolder)
            .await
            .map_err(|_| EngineError::Unavailable)??;
        let dir = project.session_dir(id);
        self.ask_manager(Place {
            id: id.to_string(),
            dir,
        })
        .await?;
        Ok(Some(crate::meta::ProjectHome {
            name: project.name.clone(),
            path: project.path.clone(),
        }))
    }

    /// Record a session in (`attach`) or out of a project's session list.
    pub(super) async fn set_membership(&self, project_id: &str, session_id: &str, attach: bool) {
        if project_id != DEFAULT_PROJECT {
            let _ = self
                .projects
                .send(SetMembership {
                    project_id: project_id.into(),
                    session_id: session_id.into(),
                    attach,
                })
                .await;
        }
    }

    pub(super) async fn attach(&self, project_id: &str, session_id: &str) {
        self.set_membership(project_id, session_id, true).await;
    }

    /// Append a node; `create` makes the session on its first user message.
    pub async fn append(
        &self,
        id: &str,
        node: NewNode,
        create: Option<SessionMeta>,
    ) -> Result<AppendOutcome, EngineError> {
        self.writable()?;
        match self.post(id, node, create, false).await? {
            Posted::Appended(out) => Ok(*out),
            // Unreachable: without `queue` a busy session refuses (run_active).
            Posted::Queued { .. } => Err(SessionError::RunActive.into()),
        }
    }

    /// Post a node; with `queue`, a user message arriving while a turn is
    /// running is queued durably and opens the next turn when it ends (the
    /// busy-turn policy for channels and clients that ask for it).
    pub async fn post(
        &self,
        id: &str,
        node: NewNode,
        mut create: Option<SessionMeta>,
        queue: bool,
    ) -> Result<Posted, EngineError> {
        self.writable()?;
        if let Some(m) = &create {
            crate::meta::check_title(&m.title).map_err(SessionError::Invalid)?;
        }
        let project_id = create.as_ref().map(|m| m.project_id.clone());
        if let (Some(pid), Some(m)) = (&project_id, create.as_mut()) {
            m.project_home = self.place(id, pid).await?;
        }
        let claimed = claimed_files(&node);
        let out = self
            .call(
                id,
                Append {
                    node,
                    create,
                    queue,
                },
            )
            .await?;
        if let (Some(files), Posted::Appended(_)) = (claimed, &out) {
            self.claim_files(id, files).await;
        }
        self.replicate_open(id);
        if let Posted::Appended(o) = &out {
            metrics::counter!("openprogram_appends_total").increment(1);
            if o.created {
                self.announce_node("node_appended", id, &o.node, o.turn);
            }
            if let Some(pid) = project_id.filter(|_| o.created && o.node.seq == 1) {
                self.attach(&pid, id).await;
            }
        }
        Ok(out)
    }

    pub async fn update_node(
        &self,
        id: &str,
        node_id: &str,
        patch: NodePatch,
    ) -> Result<Node, EngineError> {
        self.writable()?;
        let node = self
            .call(
                id,
                UpdateNode {
                    node_id: node_id.to_string(),
                    patch,
                },
            )
            .await?;
        self.announce_node("node_updated", id, &node, None);
        self.replicate_open(id);
        Ok(node)
    }

    /// Live replies: every node appended or filled is broadcast to the
    /// WebSocket clients (`node_appended`, `node_updated`), so a UI shows
    /// a reply while it is written. The hub is bounded: a client that
    /// falls behind is resynced, never queued without end.
    pub(super) fn announce_node(&self, kind: &str, id: &str, node: &Node, turn: Option<u64>) {
        #[derive(serde::Serialize)]
        struct Announced<'a> {
            session_id: &'a str,
            node: &'a Node,
            #[serde(skip_serializing_if = "Option::is_none")]
            turn: Option<u64>,
        }
        self.hub.publish_data(
            kind,
            &Announced {
                session_id: id,
                node,
                turn,
            },
        );
    }

    /// `turn_ended {session_id, turn, commit, status}` to every client.
    pub(super) fn announce_end(&self, id: &str, outcome: &TurnOutcome) {
        if !outcome.repeated {
            self.publish(
                "turn_ended",
                serde_json::json!({"session_id": id, "turn": outcome.turn,
                    "commit": outcome.commit, "status": outcome.status}),
            );
        }
    }

    /// End the open turn. A skipped project commit is in the outcome
    /// (`project_commit_skipped`, with its `code`); the service announces
    /// it to the clients.
    pub async fn end_turn(&self, id: &str, req: EndTurn) -> Result<TurnOutcome, EngineError> {
        self.writable()?;
        req.check_files()?;
        let outcome = self.call(id, EndTurnMsg(req)).await?;
        if !outcome.repeated {
            metrics::counter!("openprogram_turns_total").increment(1);
        }
        self.announce_end(id, &outcome);
        self.replicate_turn(id).await?;
        Ok(outcome)
    }

    pub async fn update_meta(
        &self,
        id: &str,
        patch: MetaPatch,
    ) -> Result<SessionMeta, EngineError> {
        self.writable()?;
        if let Some(t) = &patch.title {
            crate::meta::check_title(t).map_err(SessionError::Invalid)?;
        }
        let meta = self.call(id, UpdateMeta(patch)).await?;
        // On a cluster node: acknowledged once its replica has it too.
        self.replicate_in_cluster(id).await?;
        Ok(meta)
    }

    /// Add an additional working directory (allowed at any time, unlike
    /// the project binding): an absolute path to an existing directory,
    /// stored resolved. The file-system checks run on the blocking pool.
    pub async fn add_working_dir(&self, id: &str, path: &str) -> Result<SessionMeta, EngineError> {
        self.writable()?;
        let (paths, raw) = (self.paths.clone(), path.to_string());
        let dir = tokio::task::spawn_blocking(move || paths.resolve(&raw, Purpose::WorkingDir))
            .await
            .map_err(|_| EngineError::Unavailable)?
            .map_err(SessionError::InvalidPath)?;
        let patch = MetaPatch {
            add_working_dir: Some(dir),
            ..MetaPatch::default()
        };
        self.update_meta(id, patch).await
    }

    /// Remove an additional working directory (as given, or resolved).
    pub async fn remove_working_dir(
        &self,
        id: &str,
        path: &str,
    ) -> Result<SessionMeta, EngineError> {
        self.writable()?;
        let p = PathBuf::from(path);
        let dir = tokio::task::spawn_blocking(move || p.canonicalize().unwrap_or(p))
            .await
            .map_err(|_| EngineError::Unavailable)?;
        let patch = MetaPatch {
            remove_working_dir: Some(dir),
            ..MetaPatch::default()
        };
        self.update_meta(id, patch).await
    }

    /// A rename: a typed title is written and locks the title against
    /// automatic naming; an empty one asks the LLM for a title instead,
    /// without the lock (spec 003 "rename").
    pub async fn rename_or_regenerate(
        &self,
        id: &str,
        title: &str,
    ) -> Result<SessionMeta, EngineError> {
        self.writable()?;
        let title = title.trim();
        if title.is_empty() {
            return self.regenerate_title(id).await;
        }
        let patch = MetaPatch {
            title: Some(title.to_string()),
            user_titled: Some(true),
            ..MetaPatch::default()
        };
        self.update_meta(id, patch).await
    }

    /// Ask the LLM for a title now, from the last 20 messages, and write it
    /// (it does not set the user's lock).
    pub async fn regenerate_title(&self, id: &str) -> Result<SessionMeta, EngineError> {
        self.writable()?;
        let (input, model) = self.call(id, TitleInput).await?;
        let job = TitleJob {
            session_id: id.to_string(),
            pass: 0,
            input,
            model,
            expected_title: None,
        };
        let title = self
            .titler
            .send(GenerateNow(job))
            .await
            .map_err(|_| TitleError::Busy)??;
        self.call(id, SetGeneratedTitle(title)).await
    }

    pub async fn meta(&self, id: &str) -> Result<SessionMeta, EngineError> {
        self.call(id, GetMeta).await
    }

    pub async fn branch(&self, id: &str, head: Option<String>) -> Result<Vec<Node>, EngineError> {
        self.call(id, GetBranch { head }).await
    }

    pub async fn nodes(&self, id: &str) -> Result<Vec<Node>, EngineError> {
        self.call(id, GetNodes).await
    }

    /// Whether session `id` has a node `node` (any branch).
    pub async fn has_node(&self, id: &str, node: &str) -> Result<bool, EngineError> {
        self.call(id, HasNode(node.to_string())).await
    }

    pub async fn commits(&self, id: &str, limit: usize) -> Result<Vec<CommitInfo>, EngineError> {
        self.call(id, GetCommits { limit }).await
    }

    /// Every branch of the session (`main`, `retry-*`, `replay-*`).
    pub async fn branches(&self, id: &str) -> Result<Vec<BranchInfo>, EngineError> {
        self.call(id, GetBranches).await
    }

    /// The timeline of every commit, with the replay position.
    pub async fn history(&self, id: &str) -> Result<History, EngineError> {
        self.call(id, GetHistory).await
    }

    /// The context snapshots stored by the turns of the path shown now,
    /// newest first.
    pub async fn contexts(
        &self,
        id: &str,
        limit: usize,
    ) -> Result<Vec<ContextRecord>, EngineError> {
        self.call(id, GetContexts { limit }).await
    }

    /// One context snapshot of the path shown now.
    pub async fn context(&self, id: &str, context_id: &str) -> Result<ContextRecord, EngineError> {
        self.call(id, GetContext(context_id.to_string())).await
    }

    /// Replay: show the conversation at a commit, a turn or one step away.
    pub async fn checkout(&self, id: &str, to: CheckoutTo) -> Result<Shown, EngineError> {
        self.writable()?;
        self.call(id, Checkout(to)).await
    }

    /// Switch the head to a node or a branch (git checks out its branch).
    pub async fn switch(&self, id: &str, to: SwitchTo) -> Result<Shown, EngineError> {
        self.writable()?;
        self.call(id, Switch(to)).await
    }

    /// Delete a session and everything in its directory.
    /// The session leaves its project's list too.
    pub async fn delete(&self, id: &str) -> Result<(), EngineError> {
        self.writable()?;
        let project_id = self.row(id).await?.map(|r| r.project_id);
        self.call(id, Delete).await?;
        self.ask_manager(Forget { id: id.to_string() }).await?;
        if let Some(pid) = project_id {
            self.set_membership(&pid, id, false).await;
        }
        self.deleted_in_cluster(id).await
    }
}

/// The files a node says the agent is changing (`metadata.files`, a list
/// of paths inside the project), at most `MAX_TURN_FILES`.
fn claimed_files(node: &NewNode) -> Option<Vec<String>> {
    let list = node.metadata.get("files")?.as_array()?;
    let files: Vec<String> = list
        .iter()
        .filter_map(|v| v.as_str())
        .take(crate::session::MAX_TURN_FILES)
        .map(str::to_owned)
        .collect();
    let check = EndTurn {
        files: Some(files),
        ..EndTurn::default()
    };
    // Paths that could not be inside a project are not claims.
    check.check_files().ok()?;
    check.files.filter(|f| !f.is_empty())
}

impl Engine {
    /// An open turn of a project-bound session claims `files` (see
    /// `project::actor::ClaimFiles`).
    async fn claim_files(&self, id: &str, files: Vec<String>) {
        let Ok(meta) = self.meta(id).await else {
            return;
        };
        if meta.project_id == crate::project::DEFAULT_PROJECT || meta.open_turn.is_none() {
            return;
        }
        let claim = crate::project::actor::ClaimFiles {
            session_id: id.to_string(),
            files,
        };
        crate::project::turn::claim(self.projects.clone(), meta.project_id, claim).await;
    }
}
