//! `/api/session-store/*`: the session store of agent SDKs (the Claude
//! Agent SDK's `SessionStore` adapter talks to these; see the engine's
//! `session_store`). Transcripts become sessions like any other.

use actix_web::{web, HttpResponse};
use openprogram_actors::engine::{StoreAppended, StoreKey, StoredSession};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::ApiError;
use crate::state::AppState;

#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct AppendBody {
    pub key: StoreKey,
    /// Transcript entries (JSON objects with a string `type`), in order.
    #[schema(value_type = Vec<Object>)]
    pub entries: Vec<Value>,
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct KeyBody {
    pub key: StoreKey,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Loaded {
    /// Every entry stored under the key, as appended; `null` when none was.
    #[schema(value_type = Option<Vec<Object>>)]
    pub entries: Option<Vec<Value>>,
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
pub struct ProjectParams {
    pub project_key: String,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Listed {
    pub sessions: Vec<StoredSession>,
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
pub struct SubkeyParams {
    pub project_key: String,
    pub session_id: String,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Subkeys {
    pub subkeys: Vec<String>,
}

/// `POST /api/session-store/append`.
#[utoipa::path(post, path = "/api/session-store/append", tag = "session store", summary = "Store transcript entries under a key (an entry's uuid is stored once)", request_body = AppendBody, responses((status = 200, description = "what was stored", body = StoreAppended), (status = 400, description = "invalid_input, invalid_body", body = crate::schemas::ErrorBody)))]
pub async fn append(
    state: web::Data<AppState>,
    body: web::Json<AppendBody>,
) -> Result<HttpResponse, ApiError> {
    let AppendBody { key, entries } = body.into_inner();
    let stored = state.engine.store_append(&key, entries).await?;
    Ok(HttpResponse::Ok().json(stored))
}

/// `POST /api/session-store/load`.
#[utoipa::path(post, path = "/api/session-store/load", tag = "session store", summary = "Every entry stored under a key, in order", request_body = KeyBody, responses((status = 200, description = "the entries, or null", body = Loaded), (status = 400, description = "invalid_input", body = crate::schemas::ErrorBody)))]
pub async fn load(
    state: web::Data<AppState>,
    body: web::Json<KeyBody>,
) -> Result<HttpResponse, ApiError> {
    let entries = state.engine.store_load(&body.key).await?;
    Ok(HttpResponse::Ok().json(Loaded { entries }))
}

/// `GET /api/session-store/sessions`.
#[utoipa::path(get, path = "/api/session-store/sessions", tag = "session store", summary = "The main transcripts stored under a project key", params(ProjectParams), responses((status = 200, description = "session ids and last write times (ms)", body = Listed)))]
pub async fn sessions(
    state: web::Data<AppState>,
    query: web::Query<ProjectParams>,
) -> Result<HttpResponse, ApiError> {
    let sessions = state.engine.store_list(&query.project_key).await?;
    Ok(HttpResponse::Ok().json(Listed { sessions }))
}

/// `GET /api/session-store/subkeys`.
#[utoipa::path(get, path = "/api/session-store/subkeys", tag = "session store", summary = "The sub-agent transcripts (subpaths) stored under a session", params(SubkeyParams), responses((status = 200, description = "subpaths", body = Subkeys), (status = 400, description = "invalid_input", body = crate::schemas::ErrorBody)))]
pub async fn subkeys(
    state: web::Data<AppState>,
    query: web::Query<SubkeyParams>,
) -> Result<HttpResponse, ApiError> {
    let subkeys = state
        .engine
        .store_subkeys(&query.project_key, &query.session_id)
        .await?;
    Ok(HttpResponse::Ok().json(Subkeys { subkeys }))
}

/// `POST /api/session-store/delete`.
#[utoipa::path(post, path = "/api/session-store/delete", tag = "session store", summary = "Delete a transcript (the main one with its sub-agents')", request_body = KeyBody, responses((status = 200, description = "deleted (also when there was nothing)", body = Object), (status = 400, description = "invalid_input", body = crate::schemas::ErrorBody)))]
pub async fn delete(
    state: web::Data<AppState>,
    body: web::Json<KeyBody>,
) -> Result<HttpResponse, ApiError> {
    state.engine.store_delete(&body.key).await?;
    Ok(HttpResponse::Ok().json(serde_json::json!({"deleted": true})))
}
