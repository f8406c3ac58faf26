//! `POST /api/imports`: another agent tool's histories imported as
//! sessions by this server (the files are read where the server runs);
//! `GET /api/imports`: the imports running, with their progress (the CLI's
//! progress bar while the server imports).

use actix_web::{web, HttpResponse};
use openprogram_actors::importers::{ImportOptions, ImportProgress, Tool};
use serde::{Deserialize, Serialize};

use crate::error::ApiError;
use crate::state::AppState;

/// The request of `POST /api/imports`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ImportRequest {
    /// `claude-code`.
    pub tool: String,
    /// Absolute paths of files or folders; none: the tool's own folder in
    /// the server's home directory.
    #[serde(default)]
    pub paths: Vec<String>,
    /// Only files modified at or after this time (seconds since the epoch).
    #[serde(default)]
    pub since: Option<f64>,
    /// Read and count; write nothing.
    #[serde(default)]
    pub dry_run: bool,
    /// Register the conversations' working directories as projects.
    #[serde(default = "yes")]
    pub projects: bool,
}

fn yes() -> bool {
    true
}

/// The request of `POST /api/imports/watch`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WatchRequest {
    /// The tool, as for `POST /api/imports`.
    pub tool: String,
    /// Absolute folders (or files) to follow; none: the tool's own.
    #[serde(default)]
    pub paths: Vec<String>,
}

/// The answer of `POST /api/imports/watch`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Watching {
    pub tool: String,
    /// This mirror was running already.
    pub already: bool,
}

/// `POST /api/imports/watch`: follow a tool's folders from now on, as
/// `[import] watch` does (until the server stops).
#[utoipa::path(post, path = "/api/imports/watch", tag = "imports", summary = "Mirror a tool's histories live from now on", request_body = WatchRequest, responses((status = 200, description = "the mirror runs", body = Watching), (status = 400, description = "unknown_tool, invalid_input", body = crate::schemas::ErrorBody)))]
pub async fn watch(
    state: web::Data<AppState>,
    body: web::Json<WatchRequest>,
) -> Result<HttpResponse, ApiError> {
    let req = body.into_inner();
    let tool = parse_tool(&req.tool)?;
    let paths = absolute(req.paths)?;
    let fresh = state.mirrors.start(tool, paths);
    Ok(HttpResponse::Ok().json(Watching {
        tool: tool.as_str().into(),
        already: !fresh,
    }))
}

fn parse_tool(name: &str) -> Result<Tool, ApiError> {
    Tool::parse(name).ok_or_else(|| {
        ApiError::bad_request(
            "unknown_tool",
            format!(
                "no importer for '{name}' (known: {})",
                Tool::NAMES.join(", ")
            ),
        )
    })
}

fn absolute(paths: Vec<String>) -> Result<Vec<std::path::PathBuf>, ApiError> {
    paths
        .into_iter()
        .map(|p| {
            let path = std::path::PathBuf::from(&p);
            if path.is_absolute() {
                Ok(path)
            } else {
                Err(ApiError::bad_request(
                    "invalid_input",
                    format!("an import path is absolute (got '{p}')"),
                ))
            }
        })
        .collect()
}

/// The list of `GET /api/imports`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Running {
    pub running: Vec<crate::state::imports::Run>,
    /// The live mirrors and how they are doing.
    pub mirrors: Vec<openprogram_actors::importers::watch::MirrorStatus>,
}

/// `GET /api/imports`: the imports running, oldest first.
#[utoipa::path(get, path = "/api/imports", tag = "imports", summary = "The imports running, with their progress", responses((status = 200, description = "the imports running", body = Running)))]
pub async fn list(state: web::Data<AppState>) -> HttpResponse {
    HttpResponse::Ok().json(Running {
        running: state.imports.list(),
        mirrors: state.mirrors.status(),
    })
}

/// `POST /api/imports`: import, answering what was done once it is.
#[utoipa::path(post, path = "/api/imports", tag = "imports", summary = "Import another agent tool's histories as sessions", request_body = ImportRequest, responses((status = 200, description = "what was imported, skipped and refused", body = openprogram_actors::importers::ImportSummary), (status = 400, description = "unknown_tool, invalid_input", body = crate::schemas::ErrorBody), (status = 503, description = "read_only, unavailable", body = crate::schemas::ErrorBody)))]
#[tracing::instrument(name = "import_history", skip(state, body))]
pub async fn run(
    state: web::Data<AppState>,
    body: web::Json<ImportRequest>,
) -> Result<HttpResponse, ApiError> {
    let req = body.into_inner();
    let tool = parse_tool(&req.tool)?;
    let paths = absolute(req.paths)?;
    let opts = ImportOptions {
        tool,
        paths,
        since: req.since,
        dry_run: req.dry_run,
        projects: req.projects,
        settle: crate::state::imports::SETTLE,
    };
    let runs = state.imports.clone();
    let id = runs.start(tool);
    let progress = |p: ImportProgress| runs.update(id, p);
    let summary = state.engine.import_history(opts, &progress).await;
    runs.end(id);
    Ok(HttpResponse::Ok().json(summary?))
}
