//! Projects: a user's working directory under git, and the rules for
//! accepting a directory as one.

use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::error::ProjectError;

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

/// Accept `raw` as a project directory: absolute, existing, a directory,
/// not the state directory (nor inside it, nor containing it), not inside an
/// `.openprogram/` folder. Symlinks are resolved before any comparison.
pub fn validate_dir(raw: &str, state_dir: &Path) -> Result<PathBuf, ProjectError> {
    let bad = |m: &str| ProjectError::InvalidPath(m.to_string());
    if raw.trim().is_empty() {
        return Err(bad("path required"));
    }
    let p = Path::new(raw);
    if !p.is_absolute() {
        return Err(bad("path must be absolute"));
    }
    let canonical = match p.canonicalize() {
        Ok(c) => c,
        Err(_) => return Err(bad("directory does not exist")),
    };
    if !canonical.is_dir() {
        return Err(bad("path is not a directory"));
    }
    let state = state_dir
        .canonicalize()
        .unwrap_or_else(|_| state_dir.to_path_buf());
    if canonical.starts_with(&state) {
        return Err(bad("path is the state directory or inside it"));
    }
    if state.starts_with(&canonical) {
        return Err(bad("path contains the state directory"));
    }
    if canonical
        .components()
        .any(|c| c == Component::Normal(OPENPROGRAM_DIR.as_ref()))
    {
        return Err(bad("path is inside an .openprogram folder"));
    }
    Ok(canonical)
}
