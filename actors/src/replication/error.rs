//! What replication reports: per push, per remote, to the caller of a
//! `sync` end of turn.

/// Why a push did not land.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum PushError {
    /// The remote could not be reached or refused the credentials: the
    /// whole remote waits (backoff), not just this session.
    #[error("remote unreachable: {0}")]
    Unreachable(String),
    /// The remote refused the update (a hook, a permission, a lock).
    #[error("the remote refused {refs}: {message}")]
    Refused { refs: String, message: String },
    /// The remote's branch has commits this session does not: it is
    /// reported and never overwritten.
    #[error("the remote diverged on {0} (never force-pushed; see OPERATIONS)")]
    Diverged(String),
    /// The session's own repository could not be read (deleted meanwhile).
    #[error("the session's repository: {0}")]
    Local(String),
}

impl PushError {
    /// A short word for metrics and listings.
    pub fn code(&self) -> &'static str {
        match self {
            PushError::Unreachable(_) => "unreachable",
            PushError::Refused { .. } => "refused",
            PushError::Diverged(_) => "diverged",
            PushError::Local(_) => "local",
        }
    }

    /// Whether the whole remote is the problem (not this session).
    pub fn remote_wide(&self) -> bool {
        matches!(self, PushError::Unreachable(_))
    }
}

/// A `sync` remote did not take an ended turn.
#[derive(Debug, Clone, thiserror::Error)]
#[error("turn committed here but not yet on remote '{remote}' ({error}); it stays queued and is pushed again in the background")]
pub struct ReplicationError {
    pub remote: String,
    pub error: PushError,
}

impl ReplicationError {
    pub fn kind(&self) -> crate::ErrorKind {
        crate::ErrorKind::Unavailable
    }

    pub fn code(&self) -> &'static str {
        "replication_pending"
    }
}

/// A libgit2 error as text safe to show: its message only (never a URL
/// with credentials: libgit2's messages name the host, not the userinfo).
pub fn describe(e: &git2::Error) -> String {
    crate::replication::remote::redact_in(e.message())
}
