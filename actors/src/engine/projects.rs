//! Projects through the engine: registering and listing them, binding a
//! session, where a session's tools run, and relocating a moved folder.

use std::path::PathBuf;

use crate::error::EngineError;
use crate::ids;
use crate::manager::{Moved, Relocated};
use crate::meta::{now, SessionMeta};
use crate::node::Role;
use crate::project::actor::{AgentCommitInfo, Log};
use crate::project::registry::{
    Claim, FindClaim, GetProject, ListProjects, Lookup, Relocate, ResolveProject, Unbind,
};
use crate::project::{Project, ProjectError, ProjectView, DEFAULT_PROJECT};
use crate::session::actor::{Append, Rebind};
use crate::session::messages::GetDir;
use crate::session::{NewNode, Posted, SessionError, ROOT_CALLER};

use super::Engine;

/// What a relocation did.
#[derive(Debug, Clone, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Relocation {
    pub ok: bool,
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub old_path: PathBuf,
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub path: PathBuf,
    pub project: Project,
    /// The relocate nodes appended (one per session named or bound).
    pub node_ids: Vec<String>,
}

impl Engine {
    /// Bind a session to a project (`set_session_project`). Naming the
    /// project it already has always succeeds; another project only while
    /// the session has no turn (its repository moves into that project).
    pub async fn bind(&self, id: &str, project_id: &str) -> Result<SessionMeta, EngineError> {
        self.writable()?;
        let current = self.meta(id).await?;
        if current.project_id == project_id {
            return Ok(current);
        }
        // The freeze is judged before the project is looked up (the
        // original's order of errors); the session actor checks it again.
        if current.last_turn.is_some() || current.open_turn.is_some() {
            return Err(SessionError::Frozen.into());
        }
        let (dir, home) = if project_id == DEFAULT_PROJECT {
            (None, None)
        } else {
            let (project, _) = self.ask_projects(Lookup(project_id.to_string())).await?;
            let home = crate::meta::ProjectHome {
                name: project.name.clone(),
                path: project.path.clone(),
            };
            (Some(project.session_dir(id)), Some(home))
        };
        let target = dir
            .clone()
            .unwrap_or_else(|| self.store.default_session_dir(id));
        self.call(
            id,
            Rebind {
                project_id: project_id.to_string(),
                dir: target,
                home,
            },
        )
        .await?;
        self.ask_manager(Moved {
            id: id.to_string(),
            dir,
        })
        .await?;
        self.set_membership(&current.project_id, id, false).await;
        self.attach(project_id, id).await;
        self.publish_projects().await;
        self.meta(id).await
    }

    /// The directory the session's tools run in: its project's folder; the
    /// session's own `workdir/` when that folder is missing or the project
    /// was unbound (never silently the home directory); the home directory
    /// for the default project. The flag says the project folder is missing.
    pub async fn session_cwd(&self, id: &str) -> Result<(PathBuf, bool), EngineError> {
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
            .await?
            .join(crate::session::layout::WORKDIR);
        Ok(match self.projects.send(Lookup(meta.project_id)).await {
            Ok(Ok((p, _))) => {
                let path = p.path.clone();
                let present = tokio::task::spawn_blocking(move || path.is_dir())
                    .await
                    .unwrap_or(false);
                if present {
                    (p.path, false)
                } else {
                    (own, true)
                }
            }
            _ => (own, false),
        })
    }

    /// Register a folder as a project (the same folder always gives the
    /// same id). A folder that is a registered project moved elsewhere (its
    /// `.openprogram/sessions/` holds that project's sessions and the old
    /// path is gone) claims the project back: it is relocated, keeping its
    /// id and sessions.
    pub async fn resolve_project(
        &self,
        path: &str,
        name: Option<String>,
    ) -> Result<(Project, bool), EngineError> {
        self.register_folder(path, name, true).await
    }

    /// `resolve_project`; `prepare`: the folder gets its repository and
    /// `.openprogram/` now (else when a live session first works there:
    /// an import registers a folder and writes nothing into it).
    pub async fn register_folder(
        &self,
        path: &str,
        name: Option<String>,
        prepare: bool,
    ) -> Result<(Project, bool), EngineError> {
        self.writable()?;
        let claim = self
            .ask_projects(FindClaim {
                path: path.to_string(),
            })
            .await?;
        let reuse = match claim {
            Some(Claim::Moved(id)) => {
                tracing::info!(project = %id, path, "a moved project folder was registered again: relocating it");
                let relocation = self.relocate_project(&id, path, None).await?;
                return Ok((relocation.project, false));
            }
            Some(Claim::Unbound(id, sessions)) => Some((id, sessions)),
            None => None,
        };
        let resolved = self
            .ask_projects(ResolveProject {
                reuse,
                path: path.to_string(),
                name,
                prepare,
            })
            .await?;
        if resolved.1 {
            self.publish_projects().await;
        }
        Ok(resolved)
    }

    /// Every project, the default one first, each with the sessions bound
    /// to it now (from the session registry: live, and the default project
    /// counts its own).
    pub async fn projects(&self) -> Result<Vec<ProjectView>, EngineError> {
        let views = self.ask_projects(ListProjects).await?;
        let mut members = self.members().await?;
        Ok(views
            .into_iter()
            .map(|v| {
                let ids = members.remove(&v.id).unwrap_or_default();
                v.with_members(ids)
            })
            .collect())
    }

    pub async fn project(&self, id: &str) -> Result<ProjectView, EngineError> {
        let view = self.ask_projects(GetProject(id.to_string())).await?;
        let ids = self.members().await?.remove(id).unwrap_or_default();
        Ok(view.with_members(ids))
    }

    /// A read-only listing of one folder of a registered project (see
    /// `project::files`).
    pub async fn project_files(
        &self,
        id: &str,
        rel: &str,
    ) -> Result<crate::project::files::Listing, EngineError> {
        self.in_project_folder(id, rel, crate::project::files::list)
            .await
    }

    /// The text of one file of a registered project (see
    /// `project::files::read`).
    pub async fn project_file(
        &self,
        id: &str,
        rel: &str,
    ) -> Result<crate::project::files::FileText, EngineError> {
        self.in_project_folder(id, rel, crate::project::files::read)
            .await
    }

    /// Run `f(project folder, rel)` on the blocking pool. The default
    /// project (the home folder) has no folder of its own to read.
    async fn in_project_folder<T: Send + 'static>(
        &self,
        id: &str,
        rel: &str,
        f: fn(&std::path::Path, &str) -> Result<T, ProjectError>,
    ) -> Result<T, EngineError> {
        if id == DEFAULT_PROJECT {
            return Err(ProjectError::DefaultProject("listed").into());
        }
        let (project, _) = self.ask_projects(Lookup(id.to_string())).await?;
        let rel = rel.to_string();
        tokio::task::spawn_blocking(move || f(&project.path, &rel))
            .await
            .map_err(|_| EngineError::Unavailable)?
            .map_err(EngineError::from)
    }

    /// Broadcast the fresh `projects_list` after a change of projects.
    pub(super) async fn publish_projects(&self) {
        match self.projects().await {
            Ok(projects) => self.hub.publish(
                "projects_list",
                serde_json::json!({ "projects": projects }),
                None,
            ),
            Err(e) => tracing::warn!(error = %e, "projects_list broadcast skipped"),
        }
    }

    /// The agent's commits in a project, newest first.
    pub async fn project_commits(
        &self,
        id: &str,
        limit: usize,
    ) -> Result<Vec<AgentCommitInfo>, EngineError> {
        let (_, actor) = self.ask_projects(Lookup(id.to_string())).await?;
        match actor.send(Log { limit }).await {
            Ok(Ok(commits)) => Ok(commits),
            // A folder that moved away has no commits to show.
            Ok(Err(ProjectError::PathMissing(_))) => Ok(Vec::new()),
            Ok(Err(e)) => Err(e.into()),
            Err(_) => Err(EngineError::Unavailable),
        }
    }

    /// Remove a project's registration (its repository and sessions stay).
    pub async fn unbind_project(&self, id: &str) -> Result<Project, EngineError> {
        self.writable()?;
        let project = self.ask_projects(Unbind(id.to_string())).await?;
        self.publish_projects().await;
        Ok(project)
    }

    /// Repair a project whose folder moved: keep its id, point it at `path`,
    /// move its sessions' recorded locations, and record the move in the
    /// graph of `session_id` (or of every session bound to the project).
    pub async fn relocate_project(
        &self,
        id: &str,
        path: &str,
        session_id: Option<String>,
    ) -> Result<Relocation, EngineError> {
        self.writable()?;
        if let Some(sid) = &session_id {
            ids::validate("session id", sid)?;
        }
        let (old, project) = self
            .ask_projects(Relocate {
                id: id.to_string(),
                path: path.to_string(),
            })
            .await?;
        self.ask_manager(Relocated {
            old: old.clone(),
            new: project.path.clone(),
        })
        .await?;
        let targets = match session_id {
            Some(sid) => vec![sid],
            None => self
                .members()
                .await?
                .remove(&project.id)
                .unwrap_or_default(),
        };
        let mut node_ids = Vec::new();
        for sid in targets {
            let node = relocate_node(&project, &old);
            let append = Append {
                node,
                create: None,
                queue: false,
            };
            if let Posted::Appended(out) = self.call(&sid, append).await? {
                self.replicate_open(&sid);
                node_ids.push(out.node.id);
            }
        }
        self.publish_projects().await;
        Ok(Relocation {
            ok: true,
            old_path: old,
            path: project.path.clone(),
            project,
            node_ids,
        })
    }
}

/// The runtime node that records a relocation in a session's graph (spec
/// 003 "relocate"): called by ROOT, so the head stays where it is.
fn relocate_node(project: &Project, old: &std::path::Path) -> NewNode {
    let mut metadata = serde_json::Map::new();
    metadata.insert("display".into(), "runtime".into());
    metadata.insert("project_id".into(), project.id.clone().into());
    metadata.insert("old_path".into(), old.display().to_string().into());
    metadata.insert("new_path".into(), project.path.display().to_string().into());
    metadata.insert("relocated_at".into(), now().into());
    // The original's id form: "reloc_" and 10 hex digits.
    let hex: String = ids::new_id().chars().take(10).collect();
    NewNode {
        id: Some(format!("reloc_{hex}")),
        role: Role::Code,
        content: serde_json::Value::Null,
        predecessor: None,
        caller: Some(ROOT_CALLER.into()),
        metadata,
        name: Some("project/relocate".into()),
        output: Some(format!("{} → {}", old.display(), project.path.display()).into()),
        at: None,
    }
}
