//! Undo over HTTP: a project's agent turns (committed and held), a held
//! turn applied, the preview and the revert of a session's turns.

use actix_web::{web, HttpResponse};
use serde::{Deserialize, Serialize};

use crate::error::ApiError;
use crate::state::AppState;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentTurnsQuery {
    #[serde(default)]
    pub limit: openprogram_actors::limit::LogLimit,
}

/// `{project_id, sessions: [{session_id, turns}]}`.
#[derive(Serialize, utoipa::ToSchema)]
pub struct AgentTurnsPage {
    pub project_id: String,
    pub sessions: Vec<openprogram_actors::project::agent_turns::SessionTurns>,
}

/// `GET /api/projects/{id}/agent-turns[?limit=N]`: the agent's turns per
/// session, committed on the branch and held under private refs.
#[utoipa::path(get, path = "/api/projects/{id}/agent-turns", tag = "projects", summary = "The agent's turns in the project, committed and held, per session", params(("id" = String, Path, description = "project id"), ("limit" = Option<usize>, Query, description = "most turns (default 100, at most 10,000)")), responses((status = 200, description = "{project_id, sessions}", body = crate::routes::undo::AgentTurnsPage), (status = 400, description = "invalid_query", body = crate::schemas::ErrorBody), (status = 404, description = "unknown_project", body = crate::schemas::ErrorBody), (status = 409, description = "no_project, project_path_missing", body = crate::schemas::ErrorBody), (status = 500, description = "storage_error", body = crate::schemas::ErrorBody)))]
#[tracing::instrument(name = "agent_turns", skip(state))]
pub async fn agent_turns(
    state: web::Data<AppState>,
    id: web::Path<String>,
    query: web::Query<AgentTurnsQuery>,
) -> Result<HttpResponse, ApiError> {
    let sessions = state.engine.agent_turns(&id, query.limit.get()).await?;
    Ok(HttpResponse::Ok().json(AgentTurnsPage {
        project_id: id.into_inner(),
        sessions,
    }))
}

/// `POST /api/projects/{id}/agent-turns/{session}/{turn}/apply`: land a
/// held turn on the project's branch (a clean tree; conflicts refused
/// with their paths).
#[utoipa::path(post, path = "/api/projects/{id}/agent-turns/{session}/{turn}/apply", tag = "projects", summary = "Apply a held agent turn onto the project's branch", params(("id" = String, Path, description = "project id"), ("session" = String, Path, description = "session id"), ("turn" = u64, Path, description = "turn number")), responses((status = 201, description = "the new commit", body = openprogram_actors::engine::Undone), (status = 400, description = "invalid_id, invalid_input", body = crate::schemas::ErrorBody), (status = 404, description = "unknown_project, no_agent_turn", body = crate::schemas::ErrorBody), (status = 409, description = "dirty_tree, conflict, nothing_to_apply, project_path_missing", body = crate::schemas::ErrorBody), (status = 500, description = "storage_error", body = crate::schemas::ErrorBody)))]
#[tracing::instrument(name = "apply_agent_turn", skip(state))]
pub async fn apply(
    state: web::Data<AppState>,
    path: web::Path<(String, String, u64)>,
) -> Result<HttpResponse, ApiError> {
    let (project, session, turn) = path.into_inner();
    let done = state
        .engine
        .apply_agent_turn(&project, &session, turn)
        .await?;
    Ok(HttpResponse::Created().json(done))
}

/// `?through=M`: undo turns `n..=M` of the session (newest first, one
/// commit).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RevertQuery {
    #[serde(default)]
    pub through: Option<u64>,
}

/// The turn numbers `n..=through`.
pub fn turn_range(n: u64, through: Option<u64>) -> Result<Vec<u64>, ApiError> {
    let last = through.unwrap_or(n);
    let max = openprogram_actors::engine::MAX_REVERT_TURNS as u64;
    if n == 0 || last < n || last - n >= max {
        return Err(ApiError::bad_request(
            "invalid_input",
            format!(
                "turns: from a turn number ≥ 1 through one at or after it, at most {max} turns"
            ),
        ));
    }
    Ok((n..=last).collect())
}

/// `GET /api/sessions/{id}/turns/{n}/revert[?through=M]`: what undoing
/// the turn(s) would change, or why it cannot be done now.
#[utoipa::path(get, path = "/api/sessions/{id}/turns/{n}/revert", tag = "projects", summary = "Preview undoing a turn's changes in the project", params(("id" = String, Path, description = "session id"), ("n" = u64, Path, description = "turn number"), ("through" = Option<u64>, Query, description = "last turn of a range")), responses((status = 200, description = "{turns, diff, refusals, can_revert}", body = openprogram_actors::project::undo::RevertPreview), (status = 400, description = "invalid_id, invalid_input, invalid_query", body = crate::schemas::ErrorBody), (status = 404, description = "unknown_session, unknown_project, no_agent_turn", body = crate::schemas::ErrorBody), (status = 409, description = "no_project, project_path_missing", body = crate::schemas::ErrorBody), (status = 500, description = "storage_error", body = crate::schemas::ErrorBody)))]
#[tracing::instrument(name = "revert_preview", skip(state))]
pub async fn preview(
    state: web::Data<AppState>,
    path: web::Path<(String, u64)>,
    query: web::Query<RevertQuery>,
) -> Result<HttpResponse, ApiError> {
    let (id, n) = path.into_inner();
    let turns = turn_range(n, query.through)?;
    let preview = state.engine.revert_preview(&id, turns).await?;
    Ok(HttpResponse::Ok().json(preview))
}

/// `POST /api/sessions/{id}/turns/{n}/revert[?through=M]`: one new commit
/// undoing the turn(s)' agent commits; refused (409, nothing changed) on a
/// dirty tree, later commits on the same files (listed), a merge.
#[utoipa::path(post, path = "/api/sessions/{id}/turns/{n}/revert", tag = "projects", summary = "Undo a turn's changes in the project (one new commit)", params(("id" = String, Path, description = "session id"), ("n" = u64, Path, description = "turn number"), ("through" = Option<u64>, Query, description = "last turn of a range")), responses((status = 201, description = "the revert commit and the session's node", body = openprogram_actors::engine::Undone), (status = 400, description = "invalid_id, invalid_input, invalid_query", body = crate::schemas::ErrorBody), (status = 404, description = "unknown_session, unknown_project, no_agent_turn", body = crate::schemas::ErrorBody), (status = 409, description = "dirty_tree, changed_since, merge_commit, not_on_branch, conflict, no_project, project_path_missing", body = crate::schemas::ErrorBody), (status = 500, description = "storage_error", body = crate::schemas::ErrorBody)))]
#[tracing::instrument(name = "revert_turns", skip(state))]
pub async fn revert(
    state: web::Data<AppState>,
    path: web::Path<(String, u64)>,
    query: web::Query<RevertQuery>,
) -> Result<HttpResponse, ApiError> {
    let (id, n) = path.into_inner();
    let turns = turn_range(n, query.through)?;
    let done = state.engine.revert_turns(&id, turns).await?;
    Ok(HttpResponse::Created().json(done))
}
