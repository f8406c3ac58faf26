//! The project registry's and project actors' error.

use crate::error_kind::ErrorKind;

#[derive(Debug, thiserror::Error)]
pub enum ProjectError {
    #[error("{0}")]
    InvalidPath(String),
    #[error("unknown project")]
    NotFound,
    #[error("the default project cannot be {0}")]
    DefaultProject(&'static str),
    #[error("project storage error: {0}")]
    Git(git2::Error),
    #[error("project storage error: {0}")]
    Io(#[from] std::io::Error),
    #[error("the project folder {} is missing (moved or deleted?)", .0.display())]
    PathMissing(std::path::PathBuf),
    #[error("project service unavailable, retry")]
    Unavailable,
    /// Internal: a change that changed nothing (not broadcast).
    #[error("nothing changed")]
    Unchanged,
    /// No agent commit or held turn of that session and turn.
    #[error("{0}")]
    NoAgentTurn(String),
    /// An undo or apply that cannot be done as asked (nothing changed).
    #[error("{}", .0.message)]
    Refused(Box<Refusal>),
}

/// Why an undo or apply was refused, with what stands in the way.
#[derive(Debug, Clone, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Refusal {
    /// `dirty_tree`, `changed_since`, `merge_commit`, `not_on_branch`,
    /// `conflict`, `nothing_to_apply`.
    pub code: &'static str,
    pub message: String,
    /// The files concerned (dirty, conflicting, or changed since).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    /// Later commits that touched the same files.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub commits: Vec<crate::git::LaterCommit>,
}

impl Refusal {
    pub fn new(code: &'static str, message: impl Into<String>) -> Refusal {
        Refusal {
            code,
            message: message.into(),
            paths: Vec::new(),
            commits: Vec::new(),
        }
    }

    pub fn with_paths(mut self, paths: Vec<String>) -> Refusal {
        self.paths = paths;
        self
    }
}

impl ProjectError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            ProjectError::InvalidPath(_) => ErrorKind::BadRequest,
            ProjectError::NotFound => ErrorKind::NotFound,
            ProjectError::DefaultProject(_) | ProjectError::PathMissing(_) => ErrorKind::Conflict,
            ProjectError::Git(_) | ProjectError::Io(_) => ErrorKind::Internal,
            ProjectError::Unavailable => ErrorKind::Unavailable,
            ProjectError::Unchanged => ErrorKind::Conflict,
            ProjectError::NoAgentTurn(_) => ErrorKind::NotFound,
            ProjectError::Refused(_) => ErrorKind::Conflict,
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            ProjectError::InvalidPath(_) => "invalid_path",
            ProjectError::NotFound => "unknown_project",
            ProjectError::DefaultProject(_) => "default_project",
            ProjectError::PathMissing(_) => "project_path_missing",
            ProjectError::Git(_) | ProjectError::Io(_) => "storage_error",
            ProjectError::Unavailable => "unavailable",
            ProjectError::Unchanged => "unchanged",
            ProjectError::NoAgentTurn(_) => "no_agent_turn",
            ProjectError::Refused(r) => r.code,
        }
    }

    /// What a refusal names (paths, commits), for the error's body.
    pub fn details(&self) -> Option<serde_json::Value> {
        match self {
            ProjectError::Refused(r) => serde_json::to_value(r).ok(),
            _ => None,
        }
    }
}

impl From<git2::Error> for ProjectError {
    /// A repository owned by another user is the caller's to fix (git's
    /// `safe.directory` rule), not a storage failure.
    fn from(e: git2::Error) -> Self {
        if e.code() == git2::ErrorCode::Owner {
            return ProjectError::InvalidPath(
                "the folder's git repository belongs to another user; git refuses to work in it"
                    .into(),
            );
        }
        ProjectError::Git(e)
    }
}
