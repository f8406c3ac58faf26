//! What every handler shares: the engine, the server's settings, and the
//! imports, live mirrors and runners running.

pub mod imports;
pub mod runners;

use openprogram_actors::Engine;

/// Shared state handed to every handler.
pub struct AppState {
    pub engine: Engine,
    /// Largest WebSocket frame accepted, in bytes.
    pub ws_frame_limit: usize,
    /// Turns true when the server is shutting down (WebSocket clients are
    /// sent a close frame at once).
    pub shutdown: tokio::sync::watch::Receiver<bool>,
    /// The automatic deletion rules (`[maintenance]`), shown by health.
    pub retention: serde_json::Value,
    /// A request still waiting this long is logged with its stage.
    pub slow_request: std::time::Duration,
    /// An LLM is configured for titles (`llm.base_url`).
    pub llm: bool,
    /// The imports running through `POST /api/imports`, for their progress.
    pub imports: imports::Runs,
    /// The live mirrors running (`[import] watch`, `POST /api/imports/watch`).
    pub mirrors: openprogram_actors::importers::watch::Mirrors,
    /// The agent runtimes connected as runners, and their runs.
    pub runners: std::sync::Arc<runners::Runners>,
}
