//! The project registry actor: sole owner of `<state>/projects/projects.json`
//! and of the per-project actors. Changes are written atomically and
//! durably on a blocking thread, one at a time.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use actix::prelude::*;
use serde::Serialize;

use super::actor::{ProjectActor, SetPath};
use super::error::ProjectError;
use super::folder;
use super::model::{
    AnyProjectsFile, Project, ProjectStatus, ProjectsFile, DEFAULT_PROJECT, OPENPROGRAM_DIR,
};
use crate::messages::{ProjectNames, SetProjectNames};
use crate::paths::{PathPolicy, Purpose};
use crate::{fsio, ids, meta::now};

pub const FILE: &str = "projects.json";

/// The registry's data, moved onto a blocking thread for each change.
pub struct State {
    file: PathBuf,
    policy: PathPolicy,
    projects: BTreeMap<String, Project>,
}

impl State {
    /// Load `projects.json` (missing: no projects). A damaged file stops
    /// startup with a clear error rather than being overwritten.
    pub fn load(state_dir: &Path, policy: PathPolicy) -> std::io::Result<State> {
        let file = state_dir.join("projects").join(FILE);
        let projects = match fsio::read_json::<AnyProjectsFile>(&file) {
            Ok(f) => f
                .into_projects()
                .into_iter()
                .map(|p| (p.id.clone(), p))
                .collect(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
            Err(e) => {
                return Err(std::io::Error::new(
                    e.kind(),
                    format!("{}: {e}", file.display()),
                ));
            }
        };
        Ok(State {
            file,
            policy,
            projects,
        })
    }

    /// Projects that restored sessions name and `projects.json` lacks
    /// (a state folder restored from a remote): registered again with the
    /// name and folder the sessions recorded, the sessions listed as
    /// theirs; a listed project gets the restored sessions it lacks. How
    /// many projects were added. (Run by `restore`, which holds the state
    /// folder's lock: no registry actor runs.)
    pub fn register_restored(
        state_dir: &Path,
        restored: &[(String, String, crate::meta::ProjectHome)],
    ) -> std::io::Result<usize> {
        if restored.is_empty() {
            return Ok(0);
        }
        let mut state = State::load(state_dir, PathPolicy::new(state_dir, Vec::new()))?;
        let mut added = 0;
        for (session, project_id, home) in restored {
            let project = state.projects.entry(project_id.clone()).or_insert_with(|| {
                added += 1;
                Project {
                    id: project_id.clone(),
                    name: home.name.clone(),
                    path: home.path.clone(),
                    status: Default::default(),
                    created_at: crate::meta::now(),
                    sessions: Vec::new(),
                }
            });
            if !project.sessions.contains(session) {
                project.sessions.push(session.clone());
            }
        }
        state.save()?;
        Ok(added)
    }

    fn save(&self) -> std::io::Result<()> {
        if let Some(dir) = self.file.parent() {
            fsio::create_dir_durable(dir)?;
        }
        let file = ProjectsFile {
            projects: self.projects.values().cloned().collect(),
        };
        fsio::atomic_write_json(&self.file, &file)
    }
}

/// A project as listed (the original's fields): the registry entry plus
/// what is true right now. `session_ids` are the sessions bound to it now
/// (the engine fills them in from the session registry, so a deleted
/// session leaves and the default project counts its own).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ProjectView {
    pub id: String,
    pub name: String,
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub path: PathBuf,
    pub status: ProjectStatus,
    pub created_at: f64,
    pub is_default: bool,
    /// The folder no longer exists (moved or renamed): relocate repairs it.
    pub path_missing: bool,
    pub session_count: usize,
    pub session_ids: Vec<String>,
}

impl ProjectView {
    fn of(project: &Project) -> ProjectView {
        ProjectView {
            id: project.id.clone(),
            name: project.name.clone(),
            path_missing: !project.path.is_dir(),
            path: project.path.clone(),
            status: project.status,
            created_at: project.created_at,
            is_default: false,
            session_count: project.sessions.len(),
            session_ids: project.sessions.clone(),
        }
    }

    /// The default project: the home folder, named after it (or "Home").
    pub fn default_project() -> ProjectView {
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_default();
        ProjectView {
            id: DEFAULT_PROJECT.into(),
            name: default_name(&home),
            path: home,
            status: ProjectStatus::Active,
            created_at: 0.0,
            is_default: true,
            path_missing: false,
            session_count: 0,
            session_ids: Vec::new(),
        }
    }

    /// Show `members` (the sessions bound now) as the project's sessions.
    pub fn with_members(mut self, members: Vec<String>) -> ProjectView {
        self.session_count = members.len();
        self.session_ids = members;
        self
    }
}

/// The default project's name: the home folder's name, or "Home".
fn default_name(home: &Path) -> String {
    home.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "Home".into())
}

/// Every project's name, for the rows of the session list.
fn names_of(state: &State) -> ProjectNames {
    ProjectNames {
        names: state
            .projects
            .values()
            .map(|p| (p.id.clone(), p.name.clone()))
            .collect(),
        default_name: ProjectView::default_project().name,
    }
}

pub struct ProjectRegistry {
    names: Option<Recipient<SetProjectNames>>,
    state: Option<State>,
    actors: HashMap<String, Addr<ProjectActor>>,
}

impl ProjectRegistry {
    pub fn new(state: State) -> ProjectRegistry {
        ProjectRegistry {
            names: None,
            state: Some(state),
            actors: HashMap::new(),
        }
    }

    fn blocking<R, F>(&mut self, f: F) -> ResponseActFuture<Self, Result<R, ProjectError>>
    where
        R: Send + 'static,
        F: FnOnce(&mut State) -> Result<R, ProjectError> + Send + 'static,
    {
        let Some(mut state) = self.state.take() else {
            return Box::pin(fut::ready(Err(ProjectError::Unavailable)));
        };
        let job = tokio::task::spawn_blocking(move || {
            let r = f(&mut state);
            (state, r)
        });
        Box::pin(job.into_actor(self).map(|joined, act, ctx| match joined {
            Ok((state, r)) => {
                act.state = Some(state);
                r
            }
            Err(_) => {
                ctx.stop();
                Err(ProjectError::Unavailable)
            }
        }))
    }

    /// Tell `to` every project's name at start and after each change (the
    /// session list shows them).
    pub fn with_names(mut self, to: Recipient<SetProjectNames>) -> ProjectRegistry {
        self.names = Some(to);
        self
    }

    fn announce_names(&self) {
        if let (Some(to), Some(state)) = (&self.names, &self.state) {
            to.do_send(SetProjectNames(names_of(state)));
        }
    }

    /// Run a change, then announce the names.
    fn changing<R, F>(&mut self, f: F) -> AtomicResponse<Self, Result<R, ProjectError>>
    where
        R: Send + 'static,
        F: FnOnce(&mut State) -> Result<R, ProjectError> + Send + 'static,
    {
        AtomicResponse::new(Box::pin(self.blocking(f).map(
            |res, act: &mut ProjectRegistry, _| {
                if res.is_ok() {
                    act.announce_names();
                }
                res
            },
        )))
    }

    fn actor(&mut self, project: &Project) -> Addr<ProjectActor> {
        self.actors
            .entry(project.id.clone())
            .or_insert_with(|| ProjectActor::new(project.path.clone()).start())
            .clone()
    }

    fn get(&self, id: &str) -> Result<&Project, ProjectError> {
        if id == DEFAULT_PROJECT {
            return Err(ProjectError::DefaultProject("used as a repository"));
        }
        self.state
            .as_ref()
            .ok_or(ProjectError::Unavailable)?
            .projects
            .get(id)
            .ok_or(ProjectError::NotFound)
    }
}

impl Actor for ProjectRegistry {
    type Context = Context<Self>;

    fn started(&mut self, _: &mut Context<Self>) {
        self.announce_names();
    }
}

/// Register a directory as a project (idempotent: the same folder always
/// gives the same project). Reuses its `.git/` or initialises one.
#[derive(Message)]
#[rtype(result = "Result<(Project, bool), ProjectError>")]
pub struct ResolveProject {
    pub path: String,
    pub name: Option<String>,
    /// The id to give a new registration (the one the folder's sessions
    /// already name), with those sessions.
    pub reuse: Option<(String, Vec<String>)>,
    /// Make the folder ready for live sessions now (`folder::prepare`);
    /// an import only registers it.
    pub prepare: bool,
}

impl Handler<ResolveProject> for ProjectRegistry {
    type Result = AtomicResponse<Self, Result<(Project, bool), ProjectError>>;

    fn handle(&mut self, msg: ResolveProject, _: &mut Context<Self>) -> Self::Result {
        self.changing(move |state| {
            let dir = state
                .policy
                .resolve(&msg.path, Purpose::Project)
                .map_err(ProjectError::InvalidPath)?;
            if let Some(p) = state.projects.values().find(|p| p.path == dir) {
                return Ok((p.clone(), false));
            }
            check_folder(&dir)?;
            if msg.prepare {
                folder::prepare(&dir)?;
            }
            let name = msg
                .name
                .filter(|n| !n.trim().is_empty())
                .or_else(|| dir.file_name().map(|n| n.to_string_lossy().into_owned()))
                .unwrap_or_else(|| "project".into());
            let (id, sessions) = match msg.reuse {
                Some((id, sessions)) if !state.projects.contains_key(&id) => (id, sessions),
                _ => (stable_id(&dir, &state.projects), Vec::new()),
            };
            let project = Project {
                id,
                name,
                path: dir,
                status: ProjectStatus::Active,
                created_at: now(),
                sessions,
            };
            state.projects.insert(project.id.clone(), project.clone());
            state.save()?;
            Ok((project, true))
        })
    }
}

/// A project's id, the same for a folder every time it is registered (as
/// the original system made them): `proj_` + the first 8 hex digits of the
/// SHA-1 of the lower-cased resolved path, more digits on a collision.
fn stable_id(dir: &Path, taken: &BTreeMap<String, Project>) -> String {
    use sha1::{Digest, Sha1};
    let digest = Sha1::digest(dir.to_string_lossy().to_lowercase().as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    for len in [8, 12, 16, 40] {
        let id = format!("proj_{}", hex.chars().take(len).collect::<String>());
        if taken.get(&id).is_none_or(|p| p.path == dir) {
            return id;
        }
    }
    format!("proj_{}", ids::new_id())
}

/// Which project a folder's own sessions say they belong to: the sessions
/// in `dir/.openprogram/sessions/` all name one project id in their
/// `meta.json`. That project is `Moved` when it is registered at a path
/// that is gone, `Unbound` when it is not registered any more; a copy of a
/// folder whose project still exists claims nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    Moved(String),
    Unbound(String, Vec<String>),
}

#[derive(Message)]
#[rtype(result = "Result<Option<Claim>, ProjectError>")]
pub struct FindClaim {
    pub path: String,
}

impl Handler<FindClaim> for ProjectRegistry {
    type Result = AtomicResponse<Self, Result<Option<Claim>, ProjectError>>;

    fn handle(&mut self, msg: FindClaim, _: &mut Context<Self>) -> Self::Result {
        AtomicResponse::new(self.blocking(move |state| {
            let Ok(dir) = state.policy.resolve(&msg.path, Purpose::Project) else {
                return Ok(None);
            };
            if state.projects.values().any(|p| p.path == dir) {
                return Ok(None);
            }
            let mut sessions = Vec::new();
            let mut named = std::collections::BTreeSet::new();
            let folder = dir.join(OPENPROGRAM_DIR).join("sessions");
            for e in std::fs::read_dir(&folder).into_iter().flatten().flatten() {
                let sid = e.file_name().to_string_lossy().into_owned();
                if sid.starts_with('.') {
                    continue;
                }
                if let Ok(meta) =
                    crate::meta::SessionMeta::read_lenient(&e.path().join("meta.json"))
                {
                    named.insert(meta.project_id);
                    sessions.push(sid);
                }
            }
            let mut ids = named.into_iter().filter(|id| id != DEFAULT_PROJECT);
            let (Some(id), None) = (ids.next(), ids.next()) else {
                return Ok(None);
            };
            Ok(match state.projects.get(&id) {
                Some(p) if !p.path.is_dir() => Some(Claim::Moved(id)),
                Some(_) => None,
                None => Some(Claim::Unbound(id, sessions)),
            })
        }))
    }
}

/// Before anything is created in a folder to be a project: it must be the
/// server user's own (git refuses to work in another user's repository,
/// so a `.git` made there first would be left behind unusable) and
/// writable by it. Either refusal is the caller's to fix: 400.
fn check_folder(dir: &Path) -> Result<(), ProjectError> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(dir)?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(ProjectError::InvalidPath(format!(
            "{} belongs to another user (uid {}, the server runs as uid {me}); git refuses to work in another user's folder",
            dir.display(),
            meta.uid()
        )));
    }
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return Err(ProjectError::InvalidPath("a path with a NUL byte".into()));
    };
    // SAFETY: `c` is a valid NUL-terminated path that outlives the call.
    if unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) } != 0 {
        return Err(ProjectError::InvalidPath(format!(
            "the server cannot write in {} ({}); make it writable for the server's user",
            dir.display(),
            std::io::Error::last_os_error()
        )));
    }
    Ok(())
}

#[derive(Message)]
#[rtype(result = "Result<Vec<ProjectView>, ProjectError>")]
pub struct ListProjects;

impl Handler<ListProjects> for ProjectRegistry {
    type Result = AtomicResponse<Self, Result<Vec<ProjectView>, ProjectError>>;

    fn handle(&mut self, _: ListProjects, _: &mut Context<Self>) -> Self::Result {
        AtomicResponse::new(self.blocking(|state| {
            let mut out = vec![ProjectView::default_project()];
            out.extend(state.projects.values().map(ProjectView::of));
            Ok(out)
        }))
    }
}

#[derive(Message)]
#[rtype(result = "Result<ProjectView, ProjectError>")]
pub struct GetProject(pub String);

impl Handler<GetProject> for ProjectRegistry {
    type Result = AtomicResponse<Self, Result<ProjectView, ProjectError>>;

    fn handle(&mut self, msg: GetProject, _: &mut Context<Self>) -> Self::Result {
        AtomicResponse::new(self.blocking(move |state| {
            if msg.0 == DEFAULT_PROJECT {
                return Ok(ProjectView::default_project());
            }
            state
                .projects
                .get(&msg.0)
                .map(ProjectView::of)
                .ok_or(ProjectError::NotFound)
        }))
    }
}

/// A real project and its actor (for sessions bound to it).
#[derive(Message)]
#[rtype(result = "Result<(Project, Addr<ProjectActor>), ProjectError>")]
pub struct Lookup(pub String);

impl Handler<Lookup> for ProjectRegistry {
    type Result = Result<(Project, Addr<ProjectActor>), ProjectError>;

    fn handle(&mut self, msg: Lookup, _: &mut Context<Self>) -> Self::Result {
        let project = self.get(&msg.0)?.clone();
        let actor = self.actor(&project);
        Ok((project, actor))
    }
}

/// Point a project at its new folder (after it was moved). Keeps the id.
#[derive(Message)]
#[rtype(result = "Result<(PathBuf, Project), ProjectError>")]
pub struct Relocate {
    pub id: String,
    pub path: String,
}

impl Handler<Relocate> for ProjectRegistry {
    type Result = AtomicResponse<Self, Result<(PathBuf, Project), ProjectError>>;

    fn handle(&mut self, msg: Relocate, _: &mut Context<Self>) -> Self::Result {
        if msg.id == DEFAULT_PROJECT {
            return AtomicResponse::new(Box::pin(fut::ready(Err(ProjectError::DefaultProject(
                "relocated",
            )))));
        }
        let fut = self.blocking(move |state| {
            if !state.projects.contains_key(&msg.id) {
                return Err(ProjectError::NotFound);
            }
            let dir = state
                .policy
                .resolve(&msg.path, Purpose::Project)
                .map_err(ProjectError::InvalidPath)?;
            if state
                .projects
                .values()
                .any(|p| p.path == dir && p.id != msg.id)
            {
                return Err(ProjectError::InvalidPath(
                    "another project already uses that folder".into(),
                ));
            }
            let project = state
                .projects
                .get_mut(&msg.id)
                .ok_or(ProjectError::NotFound)?;
            check_folder(&dir)?;
            let old = std::mem::replace(&mut project.path, dir.clone());
            let updated = project.clone();
            folder::prepare(&dir)?;
            state.save()?;
            Ok((old, updated))
        });
        AtomicResponse::new(Box::pin(fut.map(|res, act: &mut ProjectRegistry, _| {
            if let Ok((_, p)) = &res {
                if let Some(a) = act.actors.get(&p.id) {
                    a.do_send(SetPath(p.path.clone()));
                }
            }
            res
        })))
    }
}

/// Remove the registration only: the user's `.git/` and the session repos
/// stay, and sessions keep their `project_id` as a historical pointer.
#[derive(Message)]
#[rtype(result = "Result<Project, ProjectError>")]
pub struct Unbind(pub String);

impl Handler<Unbind> for ProjectRegistry {
    type Result = AtomicResponse<Self, Result<Project, ProjectError>>;

    fn handle(&mut self, msg: Unbind, _: &mut Context<Self>) -> Self::Result {
        if msg.0 == DEFAULT_PROJECT {
            return AtomicResponse::new(Box::pin(fut::ready(Err(ProjectError::DefaultProject(
                "unbound",
            )))));
        }
        self.actors.remove(&msg.0);
        self.changing(move |state| {
            let p = state
                .projects
                .remove(&msg.0)
                .ok_or(ProjectError::NotFound)?;
            state.save()?;
            Ok(p)
        })
    }
}

/// Record that a session belongs to (`attach`) or left a project.
#[derive(Message)]
#[rtype(result = "Result<(), ProjectError>")]
pub struct SetMembership {
    pub project_id: String,
    pub session_id: String,
    pub attach: bool,
}

impl Handler<SetMembership> for ProjectRegistry {
    type Result = AtomicResponse<Self, Result<(), ProjectError>>;

    fn handle(&mut self, msg: SetMembership, _: &mut Context<Self>) -> Self::Result {
        self.changing(move |state| {
            let Some(p) = state.projects.get_mut(&msg.project_id) else {
                return Ok(());
            };
            let present = p.sessions.contains(&msg.session_id);
            match (msg.attach, present) {
                (true, false) => p.sessions.push(msg.session_id),
                (false, true) => p.sessions.retain(|s| *s != msg.session_id),
                _ => return Err(ProjectError::Unchanged),
            }
            state.save()?;
            Ok(())
        })
    }
}
