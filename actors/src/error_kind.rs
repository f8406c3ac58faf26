//! `ErrorKind`: how a caller classifies an error of the engine. Every
//! module's error says its kind; `error` gathers them into `EngineError`,
//! which the service maps to HTTP and WebSocket answers once. On the
//! ground floor: nothing here imports another module.

/// How a caller should classify an engine error (the service maps these to
/// HTTP statuses; the engine knows nothing of HTTP).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    BadRequest,
    NotFound,
    Conflict,
    /// Storage failed: the detail is for the log, not for the client.
    Internal,
    /// Try again later (a busy or restarting part of the engine).
    Unavailable,
    /// A service the engine calls (the LLM) failed.
    Upstream,
}

impl ErrorKind {
    /// Whether the failure is the server's (a 5xx), not the caller's.
    pub fn is_server_side(self) -> bool {
        matches!(
            self,
            ErrorKind::Internal | ErrorKind::Unavailable | ErrorKind::Upstream
        )
    }
}
