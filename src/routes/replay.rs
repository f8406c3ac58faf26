//! Branches, replay and head switches (spec 001 §2.3–2.4).

use actix_web::{web, HttpResponse};
use openprogram_actors::session::{CheckoutTo, SwitchTo};
use serde_json::json;

use crate::error::ApiError;
use crate::state::AppState;

/// `GET /api/sessions/{id}/branches`: every branch, which one is current.
#[utoipa::path(get, path = "/api/sessions/{id}/branches", tag = "history", summary = "Branches (main, retry-*, replay-*)", params(("id" = String, Path, description = "session id")), responses((status = 200, description = "{session_id, branches}", body = crate::schemas::BranchesPage), (status = 400, description = "invalid_id", body = crate::schemas::ErrorBody), (status = 404, description = "unknown_session", body = crate::schemas::ErrorBody), (status = 500, description = "storage_error", body = crate::schemas::ErrorBody)))]
#[tracing::instrument(name = "branches", skip(state))]
pub async fn branches(
    state: web::Data<AppState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let branches = state.engine.branches(&id).await?;
    let current = branches.iter().find(|b| b.current).map(|b| b.name.clone());
    Ok(HttpResponse::Ok().json(json!({"current": current, "branches": branches})))
}

/// `GET /api/sessions/{id}/history`: one row per commit of every branch,
/// newest first, with the replay position ("turn k of n").
#[utoipa::path(get, path = "/api/sessions/{id}/history", tag = "history", summary = "Every commit of every branch, and the position", params(("id" = String, Path, description = "session id")), responses((status = 200, description = "{session_id, branch, position, commits}", body = openprogram_actors::session::History), (status = 400, description = "invalid_id", body = crate::schemas::ErrorBody), (status = 404, description = "unknown_session", body = crate::schemas::ErrorBody), (status = 500, description = "storage_error", body = crate::schemas::ErrorBody)))]
#[tracing::instrument(name = "history", skip(state))]
pub async fn history(
    state: web::Data<AppState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(state.engine.history(&id).await?))
}

/// `POST /api/sessions/{id}/checkout`: replay to a commit (`commit`), a turn
/// of the current line (`turn`) or one step (`step`: prev, next, latest).
#[utoipa::path(post, path = "/api/sessions/{id}/checkout", tag = "history", summary = "Replay to a commit, a turn or a step", params(("id" = String, Path, description = "session id")), request_body(content = openprogram_actors::session::CheckoutTo, description = "commit | turn | step"), responses((status = 200, description = "the position and the messages", body = openprogram_actors::session::Shown), (status = 400, description = "invalid_id, invalid_body, invalid_input", body = crate::schemas::ErrorBody), (status = 404, description = "unknown_session, unknown_commit, no_such_turn", body = crate::schemas::ErrorBody), (status = 409, description = "no_turns", body = crate::schemas::ErrorBody), (status = 500, description = "storage_error", body = crate::schemas::ErrorBody)))]
#[tracing::instrument(name = "checkout", skip(state, body))]
pub async fn checkout(
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: web::Json<CheckoutTo>,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(state.engine.checkout(&id, body.into_inner()).await?))
}

/// `POST /api/sessions/{id}/switch`: move the head to a node (`node_id`) or
/// to a branch's tip (`branch`); git checks out the branch that holds it.
#[utoipa::path(post, path = "/api/sessions/{id}/switch", tag = "history", summary = "Move the head to a node or branch", params(("id" = String, Path, description = "session id")), request_body(content = openprogram_actors::session::SwitchTo, description = "node_id | branch"), responses((status = 200, description = "the position and the messages", body = openprogram_actors::session::Shown), (status = 400, description = "invalid_id, invalid_body, invalid_input", body = crate::schemas::ErrorBody), (status = 404, description = "unknown_session, unknown_branch, unknown_node", body = crate::schemas::ErrorBody), (status = 500, description = "storage_error", body = crate::schemas::ErrorBody)))]
#[tracing::instrument(name = "switch", skip(state, body))]
pub async fn switch(
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: web::Json<SwitchTo>,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(state.engine.switch(&id, body.into_inner()).await?))
}

/// The original web client's sibling navigator and "branch from here".
#[derive(Debug, serde::Deserialize, utoipa::ToSchema)]
pub struct ChatCheckout {
    session_id: String,
    msg_id: String,
}

/// `POST /api/chat/checkout {session_id, msg_id}`: the original web client's
/// head move (its `‹ N / M ›` arrows and "Branch into a new conversation"):
/// as `POST /api/sessions/{session_id}/switch {node_id: msg_id}`, answered
/// `{session_id, head_id}`.
#[utoipa::path(post, path = "/api/chat/checkout", tag = "history", summary = "Move the head to a message (the original web client's route)", request_body(content = crate::routes::replay::ChatCheckout, description = "{session_id, msg_id}"), responses((status = 200, description = "{session_id, head_id}", body = crate::schemas::HeadMoved), (status = 400, description = "invalid_id, invalid_body", body = crate::schemas::ErrorBody), (status = 404, description = "unknown_session, unknown_node", body = crate::schemas::ErrorBody), (status = 409, description = "node_not_committed", body = crate::schemas::ErrorBody), (status = 500, description = "storage_error", body = crate::schemas::ErrorBody)))]
#[tracing::instrument(name = "chat_checkout", skip(state, body))]
pub async fn chat_checkout(
    state: web::Data<AppState>,
    body: web::Json<ChatCheckout>,
) -> Result<HttpResponse, ApiError> {
    let ChatCheckout { session_id, msg_id } = body.into_inner();
    let to = SwitchTo {
        node_id: Some(msg_id.clone()),
        branch: None,
    };
    state.engine.switch(&session_id, to).await?;
    Ok(HttpResponse::Ok().json(json!({"session_id": session_id, "head_id": msg_id})))
}
