use actix_web::{web, HttpRequest, HttpResponse};
use openprogram_actors::session::{CreateSpec, EndTurn, NewNode, TurnOutcome};
use openprogram_actors::Engine;
use serde::Deserialize;
use serde_json::Value;

use crate::error::ApiError;
use crate::state::AppState;

/// The body of `POST /turns`: the end-of-turn fields, and for a whole turn
/// in one request its `nodes` (and the session's fields when it creates
/// the session).
pub struct TurnBody {
    pub nodes: Option<Vec<NewNode>>,
    pub session: Option<CreateSpec>,
    pub end: EndTurn,
}

impl<'de> Deserialize<'de> for TurnBody {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let mut fields = serde_json::Map::<String, Value>::deserialize(d)?;
        let nodes = match fields.remove("nodes") {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                Vec::<NewNode>::deserialize(v)
                    .map_err(|e| D::Error::custom(format!("nodes: {e}")))?,
            ),
        };
        let session = match fields.remove("session") {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                CreateSpec::deserialize(v)
                    .map_err(|e| D::Error::custom(format!("session: {e}")))?,
            ),
        };
        if session.is_some() && nodes.is_none() {
            return Err(D::Error::custom(
                "session: only a whole turn (with nodes) creates a session",
            ));
        }
        let end = EndTurn::deserialize(Value::Object(fields)).map_err(D::Error::custom)?;
        Ok(TurnBody {
            nodes,
            session,
            end,
        })
    }
}

/// `POST /api/sessions/{id}/turns`: end the open turn with one git commit
/// (201). Repeating it for the turn just ended, named by `{"turn": N}` or
/// by the same `Idempotency-Key` header, answers 200 with the same commit.
/// With `nodes`, a whole turn in one request: the nodes are checked
/// together (a bad one rejects the turn, nothing written), appended in
/// order and the turn ended (`{session_id, nodes, turn, commit, …}`).
#[utoipa::path(post, path = "/api/sessions/{id}/turns", tag = "messages", summary = "End the open turn (or write a whole turn): one commit", params(("id" = String, Path, description = "session id")), request_body(content = crate::schemas::TurnRequest, description = "outcome, background, duration_s, tokens, tool_calls, context, context_id, turn; nodes (and session) for a whole turn"), responses((status = 201, description = "the turn ended: {turn, commit, short_sha, status, project_commit?, project_commit_skipped?}", body = crate::schemas::TurnAnswer), (status = 200, description = "the same end of turn again (its idempotency key)", body = crate::schemas::TurnAnswer), (status = 400, description = "invalid_id, invalid_body, invalid_input, missing_name, missing_caller, invalid_caller, unknown_predecessor", body = crate::schemas::ErrorBody), (status = 404, description = "unknown_session", body = crate::schemas::ErrorBody), (status = 409, description = "no_open_turn, wrong_turn, run_active, project_path_missing", body = crate::schemas::ErrorBody), (status = 503, description = "commit_pending, unavailable", body = crate::schemas::ErrorBody), (status = 500, description = "storage_error", body = crate::schemas::ErrorBody)))]
#[tracing::instrument(name = "end_turn", skip(state, body, req))]
pub async fn end_turn(
    state: web::Data<AppState>,
    id: web::Path<String>,
    req: HttpRequest,
    body: web::Json<TurnBody>,
) -> Result<HttpResponse, ApiError> {
    let TurnBody {
        nodes,
        session,
        mut end,
    } = body.into_inner();
    end.idempotency_key = req
        .headers()
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty());
    if let Some(nodes) = nodes {
        super::messages::check_session_id(session.as_ref(), &id)?;
        let create = session.unwrap_or_default().into_meta(id.to_string());
        let turn = state.engine.whole_turn(&id, nodes, create, end).await?;
        announce_skipped(&state.engine, &id, &turn.outcome);
        let body = super::ForSession {
            session_id: id.as_str(),
            data: &turn,
        };
        return Ok(if turn.outcome.repeated {
            HttpResponse::Ok().json(body)
        } else {
            HttpResponse::Created().json(body)
        });
    }
    let outcome = state.engine.end_turn(&id, end).await?;
    announce_skipped(&state.engine, &id, &outcome);
    Ok(if outcome.repeated {
        HttpResponse::Ok().json(outcome)
    } else {
        HttpResponse::Created().json(outcome)
    })
}

/// The warning of spec 001 §3.4 when the user's tree was dirty.
const SKIPPED_DIRTY: &str =
    "you have uncommitted changes, the agent's edits won't be auto-committed for now";

/// Announce a skipped project commit to every WebSocket client (the UI
/// shows the warning), as the original's `chat_response`
/// `project_commit_skipped`: the outcome's data, and the sentence worded
/// from its code.
pub fn announce_skipped(engine: &Engine, id: &str, outcome: &TurnOutcome) {
    let Some(skip) = outcome
        .project_commit_skipped
        .as_ref()
        .filter(|_| !outcome.repeated)
    else {
        return;
    };
    let message = match skip["code"].as_str() {
        Some("dirty_tree") => SKIPPED_DIRTY.to_string(),
        _ => format!(
            "the agent's edits were not auto-committed: {}",
            skip["reason"]
                .as_str()
                .unwrap_or("the project is not available")
        ),
    };
    engine.publish(
        "chat_response",
        serde_json::json!({
            "type": "project_commit_skipped",
            "session_id": id,
            "project_id": skip["project_id"],
            "path": skip["path"],
            "reason": skip["code"],
            "message": message,
            "detail": skip["reason"],
            "dirty_paths": skip["dirty_paths"],
            "held": skip["held"],
        }),
    );
}

/// `POST /api/sessions/{id}/runs/stop`: stop the running turn. The runner
/// answering it is told (`run_cancelled`); the turn ends `cancelled` (the
/// session `idle`), its nodes kept and committed.
#[utoipa::path(post, path = "/api/sessions/{id}/runs/stop", tag = "messages", summary = "Stop the running turn (its runner is told; the turn ends cancelled, committed)", params(("id" = String, Path, description = "session id")), responses((status = 200, description = "the turn ended: {turn, commit, short_sha, status}", body = crate::schemas::TurnAnswer), (status = 404, description = "unknown_session", body = crate::schemas::ErrorBody), (status = 409, description = "no_open_turn", body = crate::schemas::ErrorBody)))]
pub async fn stop_run(
    state: web::Data<AppState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let outcome = crate::state::runners::stop(&state, &id).await?;
    Ok(HttpResponse::Ok().json(outcome))
}
