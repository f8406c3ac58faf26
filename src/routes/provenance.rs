//! `POST /api/provenance/resolve`: provenance pointers (spec 000 §5)
//! resolved to the nodes as their commit holds them, each with its own
//! status (see the engine's `provenance`).

use actix_web::{web, HttpResponse};
use openprogram_actors::engine::{Pointer, Resolved, MAX_POINTERS};
use serde::{Deserialize, Serialize};

use crate::error::ApiError;
use crate::state::AppState;

/// One pointer, or many.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum ResolveRequest {
    Many { pointers: Vec<Pointer> },
    One(Pointer),
}

/// The answer: one result per pointer, in order.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ResolveAnswer {
    pub results: Vec<Resolved>,
}

/// `POST /api/provenance/resolve`.
#[utoipa::path(post, path = "/api/provenance/resolve", tag = "provenance", summary = "Resolve provenance pointers to the nodes as their commit holds them", request_body = ResolveRequest, responses((status = 200, description = "one result per pointer, each with its status", body = ResolveAnswer), (status = 400, description = "invalid_input, invalid_body", body = crate::schemas::ErrorBody)))]
pub async fn resolve(
    state: web::Data<AppState>,
    body: web::Json<ResolveRequest>,
) -> Result<HttpResponse, ApiError> {
    let pointers = match body.into_inner() {
        ResolveRequest::Many { pointers } => pointers,
        ResolveRequest::One(p) => vec![p],
    };
    if pointers.len() > MAX_POINTERS {
        return Err(ApiError::bad_request(
            "invalid_input",
            format!(
                "at most {MAX_POINTERS} pointers per request (got {})",
                pointers.len()
            ),
        ));
    }
    let results = state.engine.resolve_provenance(pointers).await;
    Ok(HttpResponse::Ok().json(ResolveAnswer { results }))
}
