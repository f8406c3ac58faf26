use actix_web::{web, HttpRequest, HttpResponse};
use openprogram_actors::session::EndTurn;

use crate::error::ApiError;
use crate::startup::AppState;

/// `POST /api/sessions/{id}/turns`: end the open turn with one git commit
/// (201). Repeating it for the turn just ended, named by `{"turn": N}` or
/// by the same `Idempotency-Key` header, answers 200 with the same commit.
#[utoipa::path(post, path = "/api/sessions/{id}/turns", tag = "messages", summary = "End the open turn: one commit", params(("id" = String, Path, description = "session id")), request_body(content = openprogram_actors::session::EndTurn, description = "outcome, background, duration_s, tokens, tool_calls, context, context_id, turn"), responses((status = 201, description = "the turn ended: {turn, commit, short_sha, status, project_commit?, project_commit_skipped?}", body = openprogram_actors::session::TurnOutcome), (status = 200, description = "the same end of turn again (its idempotency key)", body = openprogram_actors::session::TurnOutcome), (status = 400, description = "invalid_id, invalid_body", body = crate::openapi::ErrorBody), (status = 404, description = "unknown_session", body = crate::openapi::ErrorBody), (status = 409, description = "no_open_turn, wrong_turn, project_path_missing", body = crate::openapi::ErrorBody), (status = 503, description = "commit_pending, unavailable", body = crate::openapi::ErrorBody), (status = 500, description = "storage_error", body = crate::openapi::ErrorBody)))]
#[tracing::instrument(name = "end_turn", skip(state, body, req))]
pub async fn end_turn(
    state: web::Data<AppState>,
    id: web::Path<String>,
    req: HttpRequest,
    body: web::Json<EndTurn>,
) -> Result<HttpResponse, ApiError> {
    let mut end = body.into_inner();
    end.idempotency_key = req
        .headers()
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty());
    let outcome = state.engine.end_turn(&id, end).await?;
    Ok(if outcome.repeated {
        HttpResponse::Ok().json(outcome)
    } else {
        HttpResponse::Created().json(outcome)
    })
}
