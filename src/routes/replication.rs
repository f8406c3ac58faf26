//! `GET /api/replication`: the git remotes every session is pushed to,
//! with their queue, lag, counters and last error; `POST
//! /api/replication/push`: queue every session for one remote (or all),
//! to catch up a new or emptied remote.

use actix_web::{web, HttpResponse};
use openprogram_actors::replication::RemoteView;
use serde::{Deserialize, Serialize};

use crate::error::ApiError;
use crate::state::AppState;

#[derive(Serialize, utoipa::ToSchema)]
pub struct RemotesAnswer {
    pub remotes: Vec<RemoteView>,
}

/// `GET /api/replication`.
#[utoipa::path(get, path = "/api/replication", tag = "replication", summary = "The replication remotes and their state", responses((status = 200, description = "every configured remote: name, url (no password), mode, layout, queue, lag_seconds, pushes, failures, sessions_pushed, last_push_at, last_error", body = RemotesAnswer)))]
pub async fn remotes(state: web::Data<AppState>) -> HttpResponse {
    HttpResponse::Ok().json(RemotesAnswer {
        remotes: state.engine.replication_remotes(),
    })
}

#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PushRequest {
    /// The remote to catch up (default: every remote).
    #[serde(default)]
    pub remote: Option<String>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct PushAnswer {
    /// Sessions queued.
    pub queued: usize,
}

/// `POST /api/replication/push`.
#[utoipa::path(post, path = "/api/replication/push", tag = "replication", summary = "Queue every session for a remote (push --all)", request_body(content = PushRequest, description = "remote (optional)"), responses((status = 202, description = "the sessions are queued", body = PushAnswer), (status = 400, description = "invalid_body", body = crate::schemas::ErrorBody), (status = 404, description = "unknown_remote", body = crate::schemas::ErrorBody), (status = 503, description = "storage_full", body = crate::schemas::ErrorBody)))]
#[tracing::instrument(name = "replication_push", skip(state, body))]
pub async fn push(
    state: web::Data<AppState>,
    body: Option<web::Json<PushRequest>>,
) -> Result<HttpResponse, ApiError> {
    let req = body.map(|b| b.into_inner()).unwrap_or_default();
    let queued = state.engine.replicate_all(req.remote).await?;
    Ok(HttpResponse::Accepted().json(PushAnswer { queued }))
}
