//! Naming: a session actor hands a due naming pass to the titler
//! (`TitleJob`, fire and forget); the titler sends the title back to the
//! session through the manager (`ApplyTitle`).

use actix::prelude::*;

/// What to name, and how the result may be written.
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct TitleJob {
    pub session_id: String,
    /// 1 for the first LLM pass, k for the k-th threshold.
    pub pass: u32,
    /// The conversation excerpt given to the LLM.
    pub input: String,
    /// The session's own model, preferred over the configured one.
    pub model: Option<String>,
    /// On the first pass: write only if the title is still this (phase 1).
    pub expected_title: Option<String>,
}

/// A title to write, sent to the session (through the manager).
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct ApplyTitle {
    pub session_id: String,
    pub title: String,
    pub pass: u32,
    pub expected_title: Option<String>,
    /// An explicit "regenerate": ignores the automatic-naming race rules
    /// (but never sets the user lock).
    pub force: bool,
}
