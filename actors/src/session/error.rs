//! The session core's error, classified by the engine's `ErrorKind`.

use crate::error_kind::ErrorKind;
use crate::git::GitError;
use crate::ids::IdError;

/// Text of the busy-turn refusal, as the spec words it.
pub const RUN_ACTIVE: &str =
    "a run is currently active in this session — wait for it to finish or stop it first";

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error(transparent)]
    InvalidId(#[from] IdError),
    #[error("unknown session")]
    NotFound,
    #[error("session already exists")]
    AlreadyExists,
    #[error("unknown node '{0}'")]
    UnknownNode(String),
    #[error("predecessor '{0}' does not exist")]
    UnknownPredecessor(String),
    #[error("caller '{0}' does not exist")]
    UnknownCaller(String),
    #[error("caller '{0}' is not an assistant message of the open turn: a tool or code node answers a call made in the current turn (runtime nodes use the caller \"ROOT\")")]
    InvalidCaller(String),
    #[error("{0} nodes need a name")]
    MissingName(&'static str),
    #[error("tool nodes need a caller (the assistant node that called the tool)")]
    MissingCaller,
    #[error("invalid input: {0}")]
    Invalid(String),
    #[error("{0}")]
    InvalidPath(String),
    #[error("no open turn: send a user message first")]
    NoOpenTurn,
    #[error("{}", RUN_ACTIVE)]
    RunActive,
    #[error("node '{0}' belongs to an ended turn and is immutable")]
    Immutable(String),
    #[error("node '{0}' already exists with another role")]
    NodeConflict(String),
    #[error("session is full: at most 999999 nodes")]
    Full,
    #[error("storage error: {0}")]
    Git(#[from] GitError),
    #[error("storage error: {0}")]
    Io(#[from] std::io::Error),
    #[error("session is temporarily unavailable, retry")]
    Unavailable,
    #[error("project is frozen after the first turn")]
    Frozen,
    #[error("commit '{0}' is not a turn of this session")]
    UnknownCommit(String),
    #[error("node '{0}' is not committed yet (its turn is still open)")]
    NotCommitted(String),
    #[error("the session has no turn to fork from yet")]
    NoTurns,
    #[error("invalid bundle: {0}")]
    BadBundle(String),
    /// A secret in a write to a project whose redaction mode refuses them.
    #[error("the text holds a secret ({kind}) in {field}, and this session's project refuses secrets: remove it and send again")]
    Secret { kind: String, field: String },
    #[error("unknown branch '{0}'")]
    UnknownBranch(String),
    #[error("context '{0}' is not a context of this session's current path")]
    UnknownContext(String),
    #[error("{0}")]
    NoSuchTurn(String),
    #[error("turn {given} is not the open turn ({open})")]
    WrongTurn { given: u64, open: u64 },
    #[error("the project folder {} is missing (moved or renamed?): relocate the project to its new folder to open this session again", .0.display())]
    ProjectPathMissing(std::path::PathBuf),
    #[error("turn {0} is ended but its commit could not be made yet; it is retried in the background, retry later")]
    CommitPending(u64),
    /// The session's repository was changed from outside the server in a
    /// way a write would build on wrongly; says what and how to fix it.
    #[error("{0}")]
    RepositoryChanged(String),
    /// This session's files lack acknowledged writes that the
    /// write-ahead log holds (the server started on a full disk): it is
    /// not shown without them, until a restart's replay puts them back.
    #[error("this session has acknowledged writes waiting in the write-ahead log that could not be put in its files (a full disk, or a failed write): free some space and restart the server")]
    AwaitingReplay,
    /// Acknowledged writes of this session could not be put in its files
    /// (the disk filled after they were logged): they are written again
    /// as soon as the disk takes them, and the session is served then.
    #[error("this session has acknowledged writes that the full disk refused; they are kept in the write-ahead log and written as soon as there is space: free some space and try again")]
    WritesWaiting,
}

impl SessionError {
    /// A write refused because the disk is full (`ENOSPC`, `EDQUOT`):
    /// 503 `storage_full`, nothing was acknowledged; retry once there is
    /// space.
    pub fn is_disk_full(&self) -> bool {
        let io = match self {
            SessionError::Io(e) | SessionError::Git(GitError::Io(e)) => Some(e),
            _ => None,
        };
        match io {
            Some(e) => crate::fsio::is_disk_full(e),
            None => matches!(self, SessionError::Git(GitError::Git(g))
                if g.class() == git2::ErrorClass::Os
                    && g.message().contains("No space left on device")),
        }
    }
}

impl From<git2::Error> for SessionError {
    fn from(e: git2::Error) -> Self {
        SessionError::Git(GitError::Git(e))
    }
}

impl SessionError {
    pub fn kind(&self) -> ErrorKind {
        use SessionError::*;
        match self {
            InvalidId(_)
            | UnknownPredecessor(_)
            | UnknownCaller(_)
            | InvalidCaller(_)
            | MissingName(_)
            | MissingCaller
            | Invalid(_)
            | InvalidPath(_)
            | BadBundle(_)
            | Secret { .. } => ErrorKind::BadRequest,
            NotFound | UnknownNode(_) | UnknownCommit(_) | UnknownBranch(_) | UnknownContext(_)
            | NoSuchTurn(_) => ErrorKind::NotFound,
            AlreadyExists
            | NoOpenTurn
            | RunActive
            | Immutable(_)
            | NodeConflict(_)
            | Full
            | Frozen
            | NotCommitted(_)
            | NoTurns
            | WrongTurn { .. }
            | ProjectPathMissing(_)
            | RepositoryChanged(_) => ErrorKind::Conflict,
            e if e.is_disk_full() => ErrorKind::Unavailable,
            Git(_) | Io(_) => ErrorKind::Internal,
            Unavailable | CommitPending(_) | AwaitingReplay | WritesWaiting => {
                ErrorKind::Unavailable
            }
        }
    }

    /// A stable machine-readable code for clients.
    pub fn code(&self) -> &'static str {
        use SessionError::*;
        match self {
            InvalidId(_) => "invalid_id",
            NotFound => "unknown_session",
            AlreadyExists => "session_exists",
            UnknownNode(_) => "unknown_node",
            UnknownPredecessor(_) => "unknown_predecessor",
            UnknownCaller(_) => "unknown_caller",
            InvalidCaller(_) => "invalid_caller",
            MissingName(_) => "missing_name",
            MissingCaller => "missing_caller",
            Invalid(_) => "invalid_input",
            InvalidPath(_) => "invalid_path",
            NoOpenTurn => "no_open_turn",
            RunActive => "run_active",
            Immutable(_) => "node_immutable",
            NodeConflict(_) => "node_conflict",
            Full => "session_full",
            e if e.is_disk_full() => "storage_full",
            Git(_) | Io(_) => "storage_error",
            Unavailable => "unavailable",
            Frozen => "project_frozen",
            UnknownCommit(_) => "unknown_commit",
            NotCommitted(_) => "node_not_committed",
            NoTurns => "no_turns",
            BadBundle(_) => "invalid_bundle",
            Secret { .. } => "secret_refused",
            UnknownBranch(_) => "unknown_branch",
            UnknownContext(_) => "unknown_context",
            NoSuchTurn(_) => "no_such_turn",
            WrongTurn { .. } => "wrong_turn",
            ProjectPathMissing(_) => "project_path_missing",
            CommitPending(_) => "commit_pending",
            RepositoryChanged(_) => "repository_changed",
            AwaitingReplay | WritesWaiting => "storage_full",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_disk_is_a_clear_503_not_a_storage_error() {
        let full = SessionError::Io(std::io::Error::from(std::io::ErrorKind::StorageFull));
        assert_eq!(
            (full.kind(), full.code()),
            (ErrorKind::Unavailable, "storage_full")
        );
        let enospc = SessionError::Git(GitError::Io(std::io::Error::from_raw_os_error(28)));
        assert_eq!(enospc.code(), "storage_full");
        let other = SessionError::Io(std::io::Error::from(std::io::ErrorKind::PermissionDenied));
        assert_eq!(
            (other.kind(), other.code()),
            (ErrorKind::Internal, "storage_error")
        );
        let engine = crate::EngineError::from(full);
        assert!(engine.client_message().contains("disk is full"));
    }
}
