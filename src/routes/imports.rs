//! `POST /api/imports`: another agent tool's histories imported as
//! sessions by this server (the files are read where the server runs).

use actix_web::{web, HttpResponse};
use openprogram_actors::importers::{ImportOptions, Tool};
use serde::Deserialize;

use crate::error::ApiError;
use crate::startup::AppState;

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

/// `POST /api/imports`: import, answering what was done once it is.
#[utoipa::path(post, path = "/api/imports", tag = "imports", summary = "Import another agent tool's histories as sessions", request_body = ImportRequest, responses((status = 200, description = "what was imported, skipped and refused", body = openprogram_actors::importers::ImportSummary), (status = 400, description = "unknown_tool, invalid_input", body = crate::openapi::ErrorBody), (status = 503, description = "read_only, unavailable", body = crate::openapi::ErrorBody)))]
#[tracing::instrument(name = "import_history", skip(state, body))]
pub async fn run(
    state: web::Data<AppState>,
    body: web::Json<ImportRequest>,
) -> Result<HttpResponse, ApiError> {
    let req = body.into_inner();
    let tool = Tool::parse(&req.tool).ok_or_else(|| {
        ApiError::bad_request(
            "unknown_tool",
            format!(
                "no importer for '{}' (known: {})",
                req.tool,
                Tool::NAMES.join(", ")
            ),
        )
    })?;
    let mut paths = Vec::with_capacity(req.paths.len());
    for p in req.paths {
        let path = std::path::PathBuf::from(&p);
        if !path.is_absolute() {
            return Err(ApiError::bad_request(
                "invalid_input",
                format!("an import path is absolute (got '{p}')"),
            ));
        }
        paths.push(path);
    }
    let opts = ImportOptions {
        tool,
        paths,
        since: req.since,
        dry_run: req.dry_run,
        projects: req.projects,
        settle: crate::commands::import::SETTLE,
    };
    let summary = state.engine.import_history(opts, &|_| {}).await?;
    Ok(HttpResponse::Ok().json(summary))
}
