//! Projects: a user's working directory under git (which folders may be
//! one is `crate::paths`).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The logical default project: the user's home, never a repository.
pub const DEFAULT_PROJECT: &str = "default";
/// Folder inside a project that holds its session repositories.
pub use crate::store::OPENPROGRAM_DIR;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum ProjectStatus {
    #[default]
    Active,
    Paused,
    Done,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Project {
    pub id: String,
    pub name: String,
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub path: PathBuf,
    #[serde(default)]
    pub status: ProjectStatus,
    #[serde(default)]
    pub created_at: f64,
    /// (`session_ids` in the original system's file.)
    #[serde(default, alias = "session_ids")]
    pub sessions: Vec<String>,
}

impl Project {
    /// Where a session bound to this project keeps its repository.
    pub fn session_dir(&self, session_id: &str) -> PathBuf {
        self.path
            .join(OPENPROGRAM_DIR)
            .join("sessions")
            .join(session_id)
    }
}

/// `<state>/projects/projects.json`.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct ProjectsFile {
    pub projects: Vec<Project>,
}

/// `projects.json` as found on disk: this version's, or the original
/// system's `{id: {id, name, path, is_default, session_ids, status,
/// created_at}}` (its default project is logical here and is skipped).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum AnyProjectsFile {
    Current(ProjectsFile),
    Original(std::collections::BTreeMap<String, OriginalProject>),
}

#[derive(Debug, Deserialize)]
pub struct OriginalProject {
    #[serde(flatten)]
    pub project: Project,
    #[serde(default)]
    pub is_default: bool,
}

impl AnyProjectsFile {
    pub fn into_projects(self) -> Vec<Project> {
        match self {
            AnyProjectsFile::Current(f) => f.projects,
            AnyProjectsFile::Original(map) => map
                .into_values()
                .filter(|p| !p.is_default && p.project.id != DEFAULT_PROJECT)
                .map(|p| p.project)
                .collect(),
        }
    }
}
