//! Purge: a session's history rewritten with its secrets replaced
//! (`POST /api/sessions/{id}/purge`, every session with `POST
//! /api/purge`), and the record of the purges made (`GET
//! /api/sessions/{id}/purges`), which maps old commit ids to new ones.

use actix_web::{web, HttpResponse};
use openprogram_actors::engine::purge::Purged;
use openprogram_actors::session::purge::PurgeRecord;
use serde::Deserialize;

use crate::error::ApiError;
use crate::state::AppState;

#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
pub struct PurgeBody {
    /// Who asks (kept in the record; default `api`).
    #[serde(default)]
    by: Option<String>,
    /// For `POST /api/purge`: must be true.
    #[serde(default)]
    all: bool,
}

fn by_of(body: &Option<web::Json<PurgeBody>>) -> String {
    body.as_ref()
        .and_then(|b| b.by.clone())
        .filter(|b| !b.trim().is_empty())
        .map(|b| b.chars().take(200).collect())
        .unwrap_or_else(|| "api".into())
}

/// `POST /api/sessions/{id}/purge`.
#[utoipa::path(post, path = "/api/sessions/{id}/purge", tag = "secrets", summary = "Rewrite the session's history with its secrets replaced", params(("id" = String, Path, description = "session id")), request_body(content = PurgeBody, description = "by (optional)"), responses((status = 200, description = "the purge record (null when nothing held a secret) and the remotes or replicas that did not take the rewritten branches", body = Purged), (status = 400, description = "invalid_id", body = crate::schemas::ErrorBody), (status = 404, description = "unknown_session", body = crate::schemas::ErrorBody), (status = 503, description = "unavailable", body = crate::schemas::ErrorBody)))]
#[tracing::instrument(name = "purge_session", skip(state, body))]
pub async fn purge(
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: Option<web::Json<PurgeBody>>,
) -> Result<HttpResponse, ApiError> {
    let done = state.engine.purge(&id, &by_of(&body)).await?;
    Ok(HttpResponse::Ok().json(done))
}

/// `POST /api/purge`.
#[utoipa::path(post, path = "/api/purge", tag = "secrets", summary = "Purge every session", request_body(content = PurgeBody, description = "all: true (required), by"), responses((status = 200, description = "the sessions purged", body = Vec<Purged>), (status = 400, description = "invalid_body", body = crate::schemas::ErrorBody)))]
#[tracing::instrument(name = "purge_all", skip(state, body))]
pub async fn purge_all(
    state: web::Data<AppState>,
    body: Option<web::Json<PurgeBody>>,
) -> Result<HttpResponse, ApiError> {
    if !body.as_ref().is_some_and(|b| b.all) {
        return Err(ApiError::bad_request(
            "invalid_body",
            "purging every session takes {\"all\": true}",
        ));
    }
    let done = state.engine.purge_all(&by_of(&body)).await?;
    Ok(HttpResponse::Ok().json(done))
}

/// `GET /api/sessions/{id}/purges`.
#[utoipa::path(get, path = "/api/sessions/{id}/purges", tag = "secrets", summary = "The purges of the session (old and new commit ids)", params(("id" = String, Path, description = "session id")), responses((status = 200, description = "the purge records, oldest first", body = Vec<PurgeRecord>), (status = 404, description = "unknown_session", body = crate::schemas::ErrorBody)))]
pub async fn list(
    state: web::Data<AppState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(state.engine.purges(&id).await?))
}
