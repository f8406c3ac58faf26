//! `Engine`: the async facade the service (or any embedder) calls. Each
//! call resolves the session's actor through the manager and sends it one
//! message; a request that meets an actor which just stopped is retried once
//! on a fresh actor.

use std::path::PathBuf;
use std::time::Duration;

use actix::prelude::*;

use crate::events::Hub;
use crate::git::CommitInfo;
use crate::ids;
use crate::locations::Locations;
use crate::manager::{
    Forget, LiveCount, Moved, Place, Relocated, Resolve, SessionManager, SetNaming,
};
use crate::meta::now;
use crate::meta::{MetaPatch, SessionMeta};
use crate::node::Node;
use crate::node::Role;
use crate::project::actor::{AgentCommitInfo, Log};
use crate::project::registry::{
    self as projects, GetProject, ListProjects, Lookup, ResolveProject, SetMembership, Unbind,
};
use crate::project::{Project, ProjectError, ProjectRegistry, ProjectView, DEFAULT_PROJECT};
use crate::registry::actor::{Flush, GetRow, List, Stats};
use crate::registry::startup::{self, Report};
use crate::registry::writer::Writer;
use crate::registry::{ListQuery, Page, Policy, Registry, RegistryStats, SessionRow};
use crate::session::actor::{
    Append, Create, Delete, EndTurnMsg, Export, ForkTo, GetBranch, GetCommits, GetDir, GetMeta,
    GetNodes, Rebind, UpdateMeta, UpdateNode,
};
use crate::session::actor::{Checkout, GetBranches, GetHistory, Switch};
use crate::session::actor::{Naming, SetGeneratedTitle, TitleInput};
use crate::session::{
    AppendOutcome, EndTurn, NewNode, NodePatch, Posted, SessionActor, SessionChanged, SessionCore,
    SessionError, TurnOutcome, ROOT_CALLER,
};
use crate::session::{BranchInfo, CheckoutTo, History, Shown, SwitchTo};
use crate::titler::{GenerateNow, LlmConfig, TitleError, TitleJob, Titler};

/// How to run the engine.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// `<state>/sessions`.
    pub sessions_dir: PathBuf,
    /// Live session actors kept (LRU).
    pub cache_cap: usize,
    /// Automatic deletion rules applied at startup.
    pub policy: Policy,
    /// Interval of the debounced index writes.
    pub index_debounce: Duration,
    /// The LLM used for session titles (an empty base URL: none).
    pub llm: LlmConfig,
    /// At most this many title requests at once.
    pub title_concurrency: usize,
    /// Assistant-reply counts at which an LLM title is made.
    pub retitle_at: Vec<u32>,
}

#[derive(Clone)]
pub struct Engine {
    sessions_dir: PathBuf,
    manager: Addr<SessionManager>,
    registry: Addr<Registry>,
    projects: Addr<ProjectRegistry>,
    titler: Addr<Titler>,
    hub: Hub,
}

/// What a relocation did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Relocation {
    pub ok: bool,
    pub old_path: PathBuf,
    pub path: PathBuf,
    pub project: Project,
    /// The relocate nodes appended (one per session named or bound).
    pub node_ids: Vec<String>,
}

impl Engine {
    /// Run the registry's startup maintenance (blocking: call it before
    /// serving), then start the registry and session manager actors on the
    /// current arbiter.
    pub fn start(config: EngineConfig) -> std::io::Result<(Engine, Report)> {
        crate::git::enable_fsync();
        std::fs::create_dir_all(&config.sessions_dir)?;
        let locations = Locations::load(&config.sessions_dir);
        let loaded = startup::open(&config.sessions_dir, &locations, &config.policy)?;
        let state_dir = config
            .sessions_dir
            .parent()
            .map(PathBuf::from)
            .unwrap_or_default();
        let hub = Hub::new();
        let projects = ProjectRegistry::new(projects::State::load(&state_dir)?)
            .with_hub(hub.clone())
            .start();
        let writer = Writer::spawn(config.sessions_dir.join(startup::INDEX))?;
        let registry = Registry::new(loaded.rows.into_values(), writer, config.index_debounce)
            .with_hub(hub.clone())
            .start();
        let mut locations = locations;
        for id in &loaded.report.dropped_locations {
            locations.remove(id)?;
        }
        let manager = SessionManager::new(
            config.sessions_dir.clone(),
            locations,
            config.cache_cap,
            Some(registry.clone().recipient::<SessionChanged>()),
            Some(projects.clone()),
        )
        .start();
        let titler = Titler::new(
            config.llm,
            config.title_concurrency,
            manager.clone().recipient(),
        )
        .start();
        manager.do_send(SetNaming(Naming {
            titler: titler.clone(),
            retitle_at: config.retitle_at,
        }));
        Ok((
            Engine {
                sessions_dir: config.sessions_dir.clone(),
                manager,
                registry,
                projects,
                titler,
                hub,
            },
            loaded.report,
        ))
    }

    async fn call<M>(&self, id: &str, msg: M) -> Result<M::Result, SessionError>
    where
        M: Message + Clone + Send + 'static,
        M::Result: Send,
        SessionActor: Handler<M>,
    {
        for _ in 0..2 {
            let addr = self
                .manager
                .send(Resolve { id: id.to_string() })
                .await
                .map_err(|_| SessionError::Unavailable)??;
            match addr.send(msg.clone()).await {
                Ok(r) => return Ok(r),
                Err(MailboxError::Closed) => continue,
                Err(MailboxError::Timeout) => return Err(SessionError::Unavailable),
            }
        }
        Err(SessionError::Unavailable)
    }

    pub async fn create(&self, id: &str, meta: SessionMeta) -> Result<SessionMeta, ProjectError> {
        let project_id = meta.project_id.clone();
        self.place(id, &project_id).await?;
        let meta = self.call(id, Create { meta }).await??;
        self.attach(&project_id, id).await;
        Ok(meta)
    }

    /// A new session bound to a real project lives inside it: record the
    /// place before the session is created.
    async fn place(&self, id: &str, project_id: &str) -> Result<(), ProjectError> {
        if project_id == DEFAULT_PROJECT {
            return Ok(());
        }
        ids::validate("session id", id).map_err(SessionError::from)?;
        let (project, _) = self.ask_projects(Lookup(project_id.to_string())).await?;
        let dir = project.session_dir(id);
        self.manager
            .send(Place {
                id: id.to_string(),
                dir,
            })
            .await
            .map_err(|_| ProjectError::Unavailable)??;
        Ok(())
    }

    /// Ask the project registry; a stopped mailbox is `Unavailable`.
    async fn ask_projects<M, R>(&self, msg: M) -> Result<R, ProjectError>
    where
        M: Message<Result = Result<R, ProjectError>> + Send + 'static,
        R: Send + 'static,
        ProjectRegistry: Handler<M>,
    {
        self.projects
            .send(msg)
            .await
            .map_err(|_| ProjectError::Unavailable)?
    }

    async fn attach(&self, project_id: &str, session_id: &str) {
        if project_id != DEFAULT_PROJECT {
            let _ = self
                .projects
                .send(SetMembership {
                    project_id: project_id.into(),
                    session_id: session_id.into(),
                    attach: true,
                })
                .await;
        }
    }

    /// Append a node; `create` makes the session on its first user message.
    pub async fn append(
        &self,
        id: &str,
        node: NewNode,
        create: Option<SessionMeta>,
    ) -> Result<AppendOutcome, ProjectError> {
        match self.post(id, node, create, false).await? {
            Posted::Appended(out) => Ok(*out),
            // Unreachable: without `queue` a busy session refuses (run_active).
            Posted::Queued { .. } => Err(ProjectError::Unavailable),
        }
    }

    /// Post a node; with `queue`, a user message arriving while a turn is
    /// running is queued durably and opens the next turn when it ends (the
    /// busy-turn policy for channels and clients that ask for it).
    pub async fn post(
        &self,
        id: &str,
        node: NewNode,
        create: Option<SessionMeta>,
        queue: bool,
    ) -> Result<Posted, ProjectError> {
        let project_id = create.as_ref().map(|m| m.project_id.clone());
        if let Some(pid) = &project_id {
            self.place(id, pid).await?;
        }
        let out = self
            .call(
                id,
                Append {
                    node,
                    create,
                    queue,
                },
            )
            .await??;
        if let (Some(pid), Posted::Appended(o)) = (project_id, &out) {
            if o.created && o.node.seq == 1 {
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
    ) -> Result<Node, SessionError> {
        self.call(
            id,
            UpdateNode {
                node_id: node_id.to_string(),
                patch,
            },
        )
        .await?
    }

    pub async fn end_turn(&self, id: &str, req: EndTurn) -> Result<TurnOutcome, SessionError> {
        self.call(id, EndTurnMsg(req)).await?
    }

    pub async fn update_meta(
        &self,
        id: &str,
        patch: MetaPatch,
    ) -> Result<SessionMeta, SessionError> {
        self.call(id, UpdateMeta(patch)).await?
    }

    pub async fn meta(&self, id: &str) -> Result<SessionMeta, SessionError> {
        self.call(id, GetMeta).await?
    }

    pub async fn branch(&self, id: &str, head: Option<String>) -> Result<Vec<Node>, SessionError> {
        self.call(id, GetBranch { head }).await?
    }

    pub async fn nodes(&self, id: &str) -> Result<Vec<Node>, SessionError> {
        self.call(id, GetNodes).await?
    }

    pub async fn commits(&self, id: &str, limit: usize) -> Result<Vec<CommitInfo>, SessionError> {
        self.call(id, GetCommits { limit }).await?
    }

    /// Every branch of the session (`main`, `retry-*`, `replay-*`).
    pub async fn branches(&self, id: &str) -> Result<Vec<BranchInfo>, SessionError> {
        self.call(id, GetBranches).await?
    }

    /// The timeline of every commit, with the replay position.
    pub async fn history(&self, id: &str) -> Result<History, SessionError> {
        self.call(id, GetHistory).await?
    }

    /// Replay: show the conversation at a commit, a turn or one step away.
    pub async fn checkout(&self, id: &str, to: CheckoutTo) -> Result<Shown, SessionError> {
        self.call(id, Checkout(to)).await?
    }

    /// Switch the head to a node or a branch (git checks out its branch).
    pub async fn switch(&self, id: &str, to: SwitchTo) -> Result<Shown, SessionError> {
        self.call(id, Switch(to)).await?
    }

    /// Bind a session to a project (`set_session_project`). Naming the
    /// project it already has always succeeds; another project only while
    /// the session has no turn (its repository moves into that project).
    pub async fn bind(&self, id: &str, project_id: &str) -> Result<SessionMeta, ProjectError> {
        let current = self.meta(id).await?;
        if current.project_id == project_id {
            return Ok(current);
        }
        let dir = if project_id == DEFAULT_PROJECT {
            None
        } else {
            let (project, _) = self.ask_projects(Lookup(project_id.to_string())).await?;
            Some(project.session_dir(id))
        };
        let target = dir.clone().unwrap_or_else(|| self.sessions_dir.join(id));
        self.call(
            id,
            Rebind {
                project_id: project_id.to_string(),
                dir: target,
            },
        )
        .await??;
        self.manager
            .send(Moved {
                id: id.to_string(),
                dir,
            })
            .await
            .map_err(|_| ProjectError::Unavailable)??;
        if current.project_id != DEFAULT_PROJECT {
            let _ = self
                .projects
                .send(SetMembership {
                    project_id: current.project_id.clone(),
                    session_id: id.into(),
                    attach: false,
                })
                .await;
        }
        self.attach(project_id, id).await;
        Ok(self.meta(id).await?)
    }

    /// The directory the session's tools run in: its project's folder; the
    /// session's own `workdir/` when that folder is missing or the project
    /// was unbound (never silently the home directory); the home directory
    /// for the default project. The flag says the project folder is missing.
    pub async fn session_cwd(&self, id: &str) -> Result<(PathBuf, bool), SessionError> {
        let meta = self.meta(id).await?;
        if meta.project_id == DEFAULT_PROJECT {
            return Ok((
                std::env::var_os("HOME")
                    .map(PathBuf::from)
                    .unwrap_or_default(),
                false,
            ));
        }
        let own = self
            .call(id, GetDir)
            .await??
            .join(crate::session::layout::WORKDIR);
        Ok(match self.projects.send(Lookup(meta.project_id)).await {
            Ok(Ok((p, _))) if p.path.is_dir() => (p.path, false),
            Ok(Ok(_)) => (own, true),
            _ => (own, false),
        })
    }

    pub async fn resolve_project(
        &self,
        path: &str,
        name: Option<String>,
    ) -> Result<(Project, bool), ProjectError> {
        self.ask_projects(ResolveProject {
            path: path.to_string(),
            name,
        })
        .await
    }

    pub async fn projects(&self) -> Result<Vec<ProjectView>, ProjectError> {
        self.ask_projects(ListProjects).await
    }

    pub async fn project(&self, id: &str) -> Result<ProjectView, ProjectError> {
        self.ask_projects(GetProject(id.to_string())).await
    }

    /// The agent's commits in a project, newest first.
    pub async fn project_commits(
        &self,
        id: &str,
        limit: usize,
    ) -> Result<Vec<AgentCommitInfo>, ProjectError> {
        let (project, actor) = self.ask_projects(Lookup(id.to_string())).await?;
        if !project.path.is_dir() {
            return Ok(Vec::new());
        }
        actor
            .send(Log { limit })
            .await
            .map_err(|_| ProjectError::Unavailable)?
    }

    /// Remove a project's registration (its repository and sessions stay).
    pub async fn unbind_project(&self, id: &str) -> Result<Project, ProjectError> {
        self.ask_projects(Unbind(id.to_string())).await
    }

    /// Repair a project whose folder moved: keep its id, point it at `path`,
    /// move its sessions' recorded locations, and record the move in the
    /// graph of `session_id` (or of every session bound to the project).
    pub async fn relocate_project(
        &self,
        id: &str,
        path: &str,
        session_id: Option<String>,
    ) -> Result<Relocation, ProjectError> {
        if let Some(sid) = &session_id {
            ids::validate("session id", sid).map_err(SessionError::from)?;
        }
        let (old, project) = self
            .ask_projects(projects::Relocate {
                id: id.to_string(),
                path: path.to_string(),
            })
            .await?;
        self.manager
            .send(Relocated {
                old: old.clone(),
                new: project.path.clone(),
            })
            .await
            .map_err(|_| ProjectError::Unavailable)??;
        let targets = match session_id {
            Some(sid) => vec![sid],
            None => project.sessions.clone(),
        };
        let mut node_ids = Vec::new();
        for sid in targets {
            let mut metadata = serde_json::Map::new();
            metadata.insert("display".into(), "runtime".into());
            metadata.insert("project_id".into(), project.id.clone().into());
            metadata.insert("old_path".into(), old.display().to_string().into());
            metadata.insert("new_path".into(), project.path.display().to_string().into());
            metadata.insert("relocated_at".into(), now().into());
            let node = NewNode {
                id: None,
                role: Role::Code,
                content: serde_json::Value::Null,
                predecessor: None,
                caller: Some(ROOT_CALLER.into()),
                metadata,
                name: Some("project/relocate".into()),
                output: Some(format!("{} → {}", old.display(), project.path.display()).into()),
            };
            if let Posted::Appended(out) = self
                .call(
                    &sid,
                    Append {
                        node,
                        create: None,
                        queue: false,
                    },
                )
                .await??
            {
                node_ids.push(out.node.id);
            }
        }
        Ok(Relocation {
            ok: true,
            old_path: old,
            path: project.path.clone(),
            project,
            node_ids,
        })
    }

    /// Ask the LLM for a title now, from the last 20 messages, and write it
    /// (it does not set the user's lock). The first error is the session's,
    /// the second the LLM's.
    pub async fn regenerate_title(
        &self,
        id: &str,
    ) -> Result<Result<SessionMeta, TitleError>, SessionError> {
        let (input, model) = self.call(id, TitleInput).await??;
        let job = TitleJob {
            session_id: id.to_string(),
            pass: 0,
            input,
            model,
            expected_title: None,
        };
        let title = match self.titler.send(GenerateNow(job)).await {
            Ok(Ok(t)) => t,
            Ok(Err(e)) => return Ok(Err(e)),
            Err(_) => return Ok(Err(TitleError::Busy)),
        };
        Ok(Ok(self.call(id, SetGeneratedTitle(title)).await??))
    }

    /// Fork session `id` into a new session (history up to `commit`, or up
    /// to the turn that committed `node_id`, or up to HEAD). The fork lives
    /// where a new session of the same project would.
    pub async fn fork(
        &self,
        id: &str,
        commit: Option<String>,
        node_id: Option<String>,
    ) -> Result<SessionMeta, ProjectError> {
        let source = self.meta(id).await?;
        let new_id = ids::new_id();
        let dest = if source.project_id == DEFAULT_PROJECT {
            self.sessions_dir.join(&new_id)
        } else {
            let (project, _) = self.ask_projects(Lookup(source.project_id.clone())).await?;
            project.session_dir(&new_id)
        };
        self.call(
            id,
            ForkTo {
                dest: dest.clone(),
                new_id: new_id.clone(),
                commit,
                node_id,
            },
        )
        .await??;
        if source.project_id != DEFAULT_PROJECT {
            self.manager
                .send(Moved {
                    id: new_id.clone(),
                    dir: Some(dest),
                })
                .await
                .map_err(|_| ProjectError::Unavailable)??;
            self.attach(&source.project_id, &new_id).await;
        }
        Ok(self.meta(&new_id).await?)
    }

    /// Register a git bundle as a new session (a new id if its id is taken).
    pub async fn import(&self, bytes: Vec<u8>) -> Result<SessionMeta, SessionError> {
        let dir = self.sessions_dir.clone();
        let id = tokio::task::spawn_blocking(move || SessionCore::import(&bytes, &dir, None))
            .await
            .map_err(|_| SessionError::Unavailable)??;
        // An actor cached for this id (one that found no session) must go.
        self.manager
            .send(Forget { id: id.clone() })
            .await
            .map_err(|_| SessionError::Unavailable)??;
        self.meta(&id).await
    }

    /// A git bundle of the session (every branch), for `git clone`.
    pub async fn export(&self, id: &str) -> Result<Vec<u8>, SessionError> {
        self.call(id, Export).await?
    }

    /// Delete a session and everything in its directory.
    pub async fn delete(&self, id: &str) -> Result<(), SessionError> {
        self.call(id, Delete).await??;
        self.manager
            .send(Forget { id: id.to_string() })
            .await
            .map_err(|_| SessionError::Unavailable)??;
        Ok(())
    }

    /// The session list, from memory.
    pub async fn list(&self, query: ListQuery) -> Result<Page, SessionError> {
        self.registry
            .send(List(query))
            .await
            .map_err(|_| SessionError::Unavailable)
    }

    /// One registry row, from memory.
    pub async fn row(&self, id: &str) -> Result<Option<SessionRow>, SessionError> {
        self.registry
            .send(GetRow(id.to_string()))
            .await
            .map_err(|_| SessionError::Unavailable)
    }

    /// Write index.json now and wait for it (graceful shutdown).
    pub async fn flush(&self) {
        let _ = self.registry.send(Flush).await;
    }

    pub async fn registry_stats(&self) -> Option<RegistryStats> {
        self.registry.send(Stats).await.ok()
    }

    /// Subscribe to the change events every client should see.
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<crate::events::Event> {
        self.hub.subscribe()
    }

    pub async fn live_sessions(&self) -> usize {
        self.manager.send(LiveCount).await.unwrap_or(0)
    }
}
