//! `SessionChanged`: a session actor tells the session registry (through
//! the manager's recipient) what changed, after the change is durable.

use actix::prelude::*;

use crate::meta::SessionMeta;

/// What changed in a session, for whoever keeps an index of sessions.
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct SessionChanged {
    pub meta: SessionMeta,
    /// The session's directory (its repository).
    pub dir: std::path::PathBuf,
    /// Preview from the latest user message.
    pub preview: Option<String>,
    /// First 80 characters of the first user message.
    pub first_preview: Option<String>,
    pub kind: ChangeKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    Created,
    /// Content was appended (debounced in the registry).
    Appended,
    /// Metadata or turn state changed (written through at once).
    Updated,
    /// The actor loaded the session (refreshes a row a crash left stale).
    Loaded,
    Deleted,
}
