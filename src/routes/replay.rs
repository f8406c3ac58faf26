//! Branches, replay and head switches (spec 001 §2.3–2.4).

use actix_web::{web, HttpResponse};
use openprogram_actors::session::{CheckoutTo, SwitchTo};
use serde_json::json;

use crate::error::ApiError;
use crate::startup::AppState;

/// `GET /api/sessions/{id}/branches`: every branch, which one is current.
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
#[tracing::instrument(name = "history", skip(state))]
pub async fn history(
    state: web::Data<AppState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(state.engine.history(&id).await?))
}

/// `POST /api/sessions/{id}/checkout`: replay to a commit (`commit`), a turn
/// of the current line (`turn`) or one step (`step`: prev, next, latest).
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
#[tracing::instrument(name = "switch", skip(state, body))]
pub async fn switch(
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: web::Json<SwitchTo>,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(state.engine.switch(&id, body.into_inner()).await?))
}
