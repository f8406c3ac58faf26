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
