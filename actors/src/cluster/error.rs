//! What the cluster reports to the engine's callers.

/// Why a cluster operation did not happen.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum ClusterError {
    /// PostgreSQL could not be reached or refused a statement.
    #[error("the cluster database: {0}")]
    Database(String),
    /// This node's lease ran out (PostgreSQL unreachable, the process was
    /// stopped): it acknowledges nothing until the next renewal.
    #[error("this node's lease has expired; it acknowledges no write until it renews (retry)")]
    LeaseExpired,
    /// Another node owns the session now (taken over, or being taken).
    #[error("session {0} is moving to another node; retry")]
    Moving(String),
    /// No replica took the turn: committed on the owner, not acknowledged.
    #[error("no replica node took the turn ({0}); it is committed on this node and not acknowledged: retry with the same Idempotency-Key")]
    ReplicaUnavailable(String),
    /// A replica push carried an older epoch than the replica has seen:
    /// the sender lost the session.
    #[error(
        "stale epoch {got} (the replica has seen {seen}): this node no longer owns the session"
    )]
    StaleEpoch { got: i64, seen: i64 },
    /// The replica lacks objects the push builds on: send everything.
    #[error("the replica lacks objects the push builds on")]
    ReplicaBehind,
    /// A replica push that cannot be read.
    #[error("bad replica push: {0}")]
    BadPush(String),
    /// The local repository or replica area failed.
    #[error("{0}")]
    Local(String),
}

impl ClusterError {
    pub fn kind(&self) -> crate::ErrorKind {
        match self {
            ClusterError::BadPush(_) => crate::ErrorKind::BadRequest,
            ClusterError::StaleEpoch { .. } | ClusterError::ReplicaBehind => {
                crate::ErrorKind::Conflict
            }
            ClusterError::Local(_) => crate::ErrorKind::Internal,
            _ => crate::ErrorKind::Unavailable,
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            ClusterError::Database(_) => "cluster_database",
            ClusterError::LeaseExpired => "lease_expired",
            ClusterError::Moving(_) => "session_moving",
            ClusterError::ReplicaUnavailable(_) => "replica_unavailable",
            ClusterError::StaleEpoch { .. } => "stale_epoch",
            ClusterError::ReplicaBehind => "replica_behind",
            ClusterError::BadPush(_) => "bad_replica_push",
            ClusterError::Local(_) => "cluster_local",
        }
    }
}

impl From<postgres::Error> for ClusterError {
    /// With the server's own words when it refused (the error's display
    /// alone is "db error").
    fn from(e: postgres::Error) -> Self {
        match e.as_db_error() {
            Some(db) => ClusterError::Database(format!(
                "{}: {} (SQLSTATE {})",
                db.severity(),
                db.message(),
                db.code().code()
            )),
            None => ClusterError::Database(e.to_string()),
        }
    }
}

impl From<git2::Error> for ClusterError {
    fn from(e: git2::Error) -> Self {
        ClusterError::Local(e.message().to_string())
    }
}

impl From<std::io::Error> for ClusterError {
    fn from(e: std::io::Error) -> Self {
        ClusterError::Local(e.to_string())
    }
}
