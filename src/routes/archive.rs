//! `POST /api/sessions/archive` and `/unarchive`, exactly as spec 003 names
//! them: body `{"session_id": ...}`.

use actix_web::{web, HttpResponse};
use openprogram_actors::meta::MetaPatch;
use serde::Deserialize;

use crate::error::ApiError;
use crate::state::AppState;

#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct ArchiveBody {
    #[serde(default)]
    session_id: Option<String>,
}

async fn set_archived(
    state: &AppState,
    body: Option<web::Json<ArchiveBody>>,
    archived: bool,
) -> Result<HttpResponse, ApiError> {
    let id = body
        .and_then(|b| b.into_inner().session_id)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| ApiError::bad_request("session_id_required", "session_id required"))?;
    let patch = MetaPatch {
        archived: Some(archived),
        ..MetaPatch::default()
    };
    state.engine.update_meta(&id, patch).await?;
    Ok(HttpResponse::Ok().json(Archived {
        session_id: id,
        archived,
    }))
}

/// The answer of archive and unarchive (as the original system's).
#[derive(serde::Serialize)]
struct Archived {
    session_id: String,
    archived: bool,
}

#[utoipa::path(post, path = "/api/sessions/archive", tag = "sessions", summary = "Archive a session", request_body(content = crate::routes::archive::ArchiveBody, description = "{session_id}"), responses((status = 200, description = "{session_id, archived: true}", body = crate::schemas::Archived), (status = 400, description = "invalid_body", body = crate::schemas::ErrorBody), (status = 404, description = "unknown_session", body = crate::schemas::ErrorBody), (status = 500, description = "storage_error", body = crate::schemas::ErrorBody)))]
#[tracing::instrument(name = "archive_session", skip(state, body))]
pub async fn archive(
    state: web::Data<AppState>,
    body: Option<web::Json<ArchiveBody>>,
) -> Result<HttpResponse, ApiError> {
    set_archived(&state, body, true).await
}

#[utoipa::path(post, path = "/api/sessions/unarchive", tag = "sessions", summary = "Unarchive a session", request_body(content = crate::routes::archive::ArchiveBody, description = "{session_id}"), responses((status = 200, description = "{session_id, archived: false}", body = crate::schemas::Archived), (status = 400, description = "invalid_body", body = crate::schemas::ErrorBody), (status = 404, description = "unknown_session", body = crate::schemas::ErrorBody), (status = 500, description = "storage_error", body = crate::schemas::ErrorBody)))]
#[tracing::instrument(name = "unarchive_session", skip(state, body))]
pub async fn unarchive(
    state: web::Data<AppState>,
    body: Option<web::Json<ArchiveBody>>,
) -> Result<HttpResponse, ApiError> {
    set_archived(&state, body, false).await
}
