use actix_web::{web, HttpResponse};
use openprogram_actors::ids;
use openprogram_actors::session::CreateSpec;
use serde::Deserialize;

use crate::error::ApiError;
use crate::startup::AppState;

/// `POST /api/sessions`: create a session explicitly (no message yet).
#[tracing::instrument(name = "create_session", skip(state, body))]
pub async fn create(
    state: web::Data<AppState>,
    body: web::Json<CreateSpec>,
) -> Result<HttpResponse, ApiError> {
    let spec = body.into_inner();
    let id = spec.id.clone().unwrap_or_else(ids::new_id);
    let meta = state.engine.create(&id, spec.into_meta(id.clone())).await?;
    Ok(HttpResponse::Created().json(meta))
}

/// `GET /api/sessions/{id}`: the session's metadata.
#[tracing::instrument(name = "get_session", skip(state))]
pub async fn get(
    state: web::Data<AppState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(state.engine.meta(&id).await?))
}

/// `GET /api/sessions/{id}/nodes`: every node, in sequence order.
#[tracing::instrument(name = "list_nodes", skip(state))]
pub async fn nodes(
    state: web::Data<AppState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let nodes = state.engine.nodes(&id).await?;
    Ok(HttpResponse::Ok().json(serde_json::json!({"session_id": id.as_str(), "nodes": nodes})))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommitsQuery {
    limit: Option<usize>,
}

/// Largest `limit` accepted by the commit log.
const MAX_COMMITS: usize = 10_000;

/// `GET /api/sessions/{id}/commits[?limit=N]`: the turn commits, newest first.
#[tracing::instrument(name = "list_commits", skip(state))]
pub async fn commits(
    state: web::Data<AppState>,
    id: web::Path<String>,
    query: web::Query<CommitsQuery>,
) -> Result<HttpResponse, ApiError> {
    let limit = query.limit.unwrap_or(100);
    if limit == 0 || limit > MAX_COMMITS {
        return Err(ApiError::bad_request(
            "invalid_query",
            format!("limit must be 1..={MAX_COMMITS}"),
        ));
    }
    let commits = state.engine.commits(&id, limit).await?;
    Ok(HttpResponse::Ok().json(serde_json::json!({"session_id": id.as_str(), "commits": commits})))
}
