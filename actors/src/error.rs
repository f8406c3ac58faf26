//! `EngineError`: the one error type on the engine's surface. Each module
//! keeps its own error (`SessionError`, `ProjectError`, `TitleError`); the
//! engine wraps them here, and a caller (the HTTP routes, the WebSocket
//! actions, the CLI) classifies any failure with `kind()` and `code()`.

use crate::project::ProjectError;
use crate::session::SessionError;
use crate::titler::TitleError;

pub use crate::error_kind::ErrorKind;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error(transparent)]
    Project(#[from] ProjectError),
    #[error(transparent)]
    Title(#[from] TitleError),
    #[error(transparent)]
    Search(#[from] crate::search::SearchError),
    #[error(transparent)]
    Feed(#[from] crate::feed::FeedError),
    /// A `sync` remote did not take an ended turn (committed here).
    #[error(transparent)]
    Replication(#[from] crate::replication::ReplicationError),
    /// The cluster refused or could not place the write (docs/CLUSTER.md).
    #[error(transparent)]
    Cluster(#[from] crate::cluster::ClusterError),
    #[error("no replication remote named '{0}'")]
    UnknownRemote(String),
    /// An actor's mailbox is closed (the engine is stopping).
    #[error("the engine is unavailable, retry")]
    Unavailable,
    /// The server started on a full disk: it serves reads and refuses
    /// every write until it is restarted with space free.
    #[error(
        "the server started on a full disk and serves reads only: free some space and restart it"
    )]
    ReadOnly,
}

impl From<crate::ids::IdError> for EngineError {
    fn from(e: crate::ids::IdError) -> Self {
        EngineError::Session(e.into())
    }
}

impl From<std::io::Error> for EngineError {
    fn from(e: std::io::Error) -> Self {
        EngineError::Session(e.into())
    }
}

impl EngineError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            EngineError::Session(e) => e.kind(),
            EngineError::Project(e) => e.kind(),
            EngineError::Title(e) => e.kind(),
            EngineError::Search(e) => e.kind(),
            EngineError::Feed(e) => e.kind(),
            EngineError::Replication(e) => e.kind(),
            EngineError::Cluster(e) => e.kind(),
            EngineError::UnknownRemote(_) => ErrorKind::NotFound,
            EngineError::Unavailable | EngineError::ReadOnly => ErrorKind::Unavailable,
        }
    }

    /// A stable machine-readable code for clients.
    pub fn code(&self) -> &'static str {
        match self {
            EngineError::Session(e) => e.code(),
            EngineError::Project(e) => e.code(),
            EngineError::Title(e) => e.code(),
            EngineError::Search(e) => e.code(),
            EngineError::Feed(e) => e.code(),
            EngineError::Replication(e) => e.code(),
            EngineError::Cluster(e) => e.code(),
            EngineError::UnknownRemote(_) => "unknown_remote",
            EngineError::Unavailable => "unavailable",
            EngineError::ReadOnly => "storage_full",
        }
    }

    /// What a client is told: the error itself for its own mistakes, a
    /// short generic sentence for a storage failure (whose detail — paths,
    /// git messages — goes to the log only).
    pub fn client_message(&self) -> String {
        if matches!(
            self,
            EngineError::ReadOnly
                | EngineError::Session(SessionError::AwaitingReplay | SessionError::WritesWaiting)
        ) {
            return self.to_string();
        }
        if self.code() == "storage_full" {
            return "the disk is full: nothing was written; free some space and retry".into();
        }
        match self.kind() {
            ErrorKind::Internal => {
                "the server could not store or read the data; see the server log".into()
            }
            _ => self.to_string(),
        }
    }

    /// What a refusal names beyond its message (paths, commits), merged
    /// into the error's body.
    pub fn details(&self) -> Option<serde_json::Value> {
        match self {
            EngineError::Project(e) => e.details(),
            EngineError::Replication(e) => Some(serde_json::json!({
                "remote": e.remote, "reason": e.error.code()
            })),
            _ => None,
        }
    }

    /// Whether the session does not exist.
    pub fn is_unknown_session(&self) -> bool {
        matches!(self, EngineError::Session(SessionError::NotFound))
    }

    /// Whether this is the session's "a turn is running" refusal.
    pub fn is_run_active(&self) -> bool {
        matches!(self, EngineError::Session(SessionError::RunActive))
    }
}
