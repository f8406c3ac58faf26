//! `GET /api/secrets`: what is already stored, scanned for secrets
//! (sessions, turns, nodes, kinds and counts; never a secret).

use actix_web::{web, HttpResponse};
use openprogram_actors::maintenance::secrets::ScanReport;

use crate::error::ApiError;
use crate::state::AppState;

/// `GET /api/secrets`.
#[utoipa::path(get, path = "/api/secrets", tag = "secrets", summary = "Scan what is stored for secrets", responses((status = 200, description = "sessions_scanned, nodes_scanned, secrets, and each session holding any: its kinds with count, turns and node ids (never the secret)", body = ScanReport)))]
pub async fn scan(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let report = state.engine.scan_secrets().await?;
    Ok(HttpResponse::Ok().json(report))
}
