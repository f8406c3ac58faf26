//! Projects: a user's working directory under git (which folders may be
//! one is `crate::paths`).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The logical default project: the user's home, never a repository.
pub const DEFAULT_PROJECT: &str = "default";
/// Folder inside a project that holds its session repositories.
pub const OPENPROGRAM_DIR: &str = ".openprogram";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ProjectStatus {
    #[default]
    Active,
    Paused,
    Done,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Project {
    pub id: String,
    pub name: String,
    pub path: PathBuf,
    #[serde(default)]
    pub status: ProjectStatus,
    pub created_at: f64,
    #[serde(default)]
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
