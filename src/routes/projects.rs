//! Projects: the user's working directories under git.

use actix_web::{web, HttpResponse};
use serde::Deserialize;

use crate::error::ApiError;
use crate::state::AppState;

/// `GET /api/projects`: every project (the default one first), with
/// `session_count` and `path_missing`.
#[utoipa::path(get, path = "/api/projects", tag = "projects", summary = "Every project, the default first", responses((status = 200, description = "{projects}", body = crate::schemas::ProjectsPage), (status = 500, description = "storage_error", body = crate::schemas::ErrorBody)))]
#[tracing::instrument(name = "list_projects", skip(state))]
pub async fn list(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let projects = state.engine.projects().await?;
    Ok(HttpResponse::Ok().json(serde_json::json!({ "projects": projects })))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[derive(utoipa::ToSchema)]
pub struct CreateBody {
    path: String,
    #[serde(default)]
    name: Option<String>,
}

/// `POST /api/projects`: register a directory (idempotent: the same folder
/// always gives the same project). 201 when new, 200 when it existed.
#[utoipa::path(post, path = "/api/projects", tag = "projects", summary = "Register a directory as a project", request_body(content = crate::routes::projects::CreateBody, description = "{path, name?}"), responses((status = 201, description = "new project", body = openprogram_actors::project::ProjectView), (status = 200, description = "already registered", body = openprogram_actors::project::ProjectView), (status = 400, description = "invalid_body, invalid_path", body = crate::schemas::ErrorBody), (status = 500, description = "storage_error", body = crate::schemas::ErrorBody)))]
#[tracing::instrument(name = "create_project", skip(state, body))]
pub async fn create(
    state: web::Data<AppState>,
    body: web::Json<CreateBody>,
) -> Result<HttpResponse, ApiError> {
    let CreateBody { path, name } = body.into_inner();
    let (project, created) = state.engine.resolve_project(&path, name).await?;
    let view = state.engine.project(&project.id).await?;
    Ok(if created {
        HttpResponse::Created()
    } else {
        HttpResponse::Ok()
    }
    .json(view))
}

/// `GET /api/projects/{id}`.
#[utoipa::path(get, path = "/api/projects/{id}", tag = "projects", summary = "One project", params(("id" = String, Path, description = "project id")), responses((status = 200, description = "the project", body = openprogram_actors::project::ProjectView), (status = 404, description = "unknown_project", body = crate::schemas::ErrorBody), (status = 500, description = "storage_error", body = crate::schemas::ErrorBody)))]
#[tracing::instrument(name = "get_project", skip(state))]
pub async fn get(
    state: web::Data<AppState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(state.engine.project(&id).await?))
}

/// `GET /api/projects/{id}/commits[?limit=N]`: the agent's commits.
#[utoipa::path(get, path = "/api/projects/{id}/commits", tag = "projects", summary = "The agent's commits in the project", params(("id" = String, Path, description = "project id")), responses((status = 200, description = "{project_id, commits}", body = crate::schemas::ProjectCommits), (status = 400, description = "invalid_query", body = crate::schemas::ErrorBody), (status = 404, description = "unknown_project", body = crate::schemas::ErrorBody), (status = 500, description = "storage_error", body = crate::schemas::ErrorBody)))]
#[tracing::instrument(name = "project_commits", skip(state))]
pub async fn commits(
    state: web::Data<AppState>,
    id: web::Path<String>,
    query: web::Query<super::sessions::CommitsQuery>,
) -> Result<HttpResponse, ApiError> {
    let commits = state.engine.project_commits(&id, query.limit.get()).await?;
    Ok(HttpResponse::Ok()
        .json(serde_json::json!({ "project_id": id.as_str(), "commits": commits })))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[derive(utoipa::ToSchema)]
pub struct RelocateBody {
    path: String,
    #[serde(default)]
    session_id: Option<String>,
}

/// `POST /api/projects/{id}/relocate`: the folder moved; keep the id.
#[utoipa::path(post, path = "/api/projects/{id}/relocate", tag = "projects", summary = "Point a moved project at its new folder", params(("id" = String, Path, description = "project id")), request_body(content = crate::routes::projects::RelocateBody, description = "{path, session_id?}"), responses((status = 200, description = "the relocation", body = openprogram_actors::engine::Relocation), (status = 400, description = "invalid_body, invalid_path", body = crate::schemas::ErrorBody), (status = 404, description = "unknown_project", body = crate::schemas::ErrorBody), (status = 409, description = "default_project", body = crate::schemas::ErrorBody), (status = 500, description = "storage_error", body = crate::schemas::ErrorBody)))]
#[tracing::instrument(name = "relocate_project", skip(state, body))]
pub async fn relocate(
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: web::Json<RelocateBody>,
) -> Result<HttpResponse, ApiError> {
    let RelocateBody { path, session_id } = body.into_inner();
    let relocation = state
        .engine
        .relocate_project(&id, &path, session_id)
        .await?;
    Ok(HttpResponse::Ok().json(relocation))
}

/// `DELETE /api/projects/{id}`: unbind. The user's `.git/` and the session
/// repositories stay; sessions keep their `project_id`.
#[utoipa::path(delete, path = "/api/projects/{id}", tag = "projects", summary = "Unregister a project (its folder stays)", params(("id" = String, Path, description = "project id")), responses((status = 200, description = "{project_id, unbound: true}", body = crate::schemas::Unbound), (status = 404, description = "unknown_project", body = crate::schemas::ErrorBody), (status = 409, description = "default_project", body = crate::schemas::ErrorBody), (status = 500, description = "storage_error", body = crate::schemas::ErrorBody)))]
#[tracing::instrument(name = "unbind_project", skip(state))]
pub async fn unbind(
    state: web::Data<AppState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let project = state.engine.unbind_project(&id).await?;
    Ok(HttpResponse::Ok().json(serde_json::json!({ "project_id": project.id, "unbound": true })))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[derive(utoipa::ToSchema)]
pub struct BindBody {
    project_id: String,
}

/// `PUT /api/sessions/{id}/project`: bind a session to a project.
#[utoipa::path(put, path = "/api/sessions/{id}/project", tag = "projects", summary = "Bind a session to a project", params(("id" = String, Path, description = "session id")), request_body(content = crate::routes::projects::BindBody, description = "{project_id}"), responses((status = 200, description = "the session metadata", body = openprogram_actors::meta::SessionMeta), (status = 400, description = "invalid_id, invalid_body", body = crate::schemas::ErrorBody), (status = 404, description = "unknown_session, unknown_project", body = crate::schemas::ErrorBody), (status = 409, description = "project_frozen", body = crate::schemas::ErrorBody), (status = 500, description = "storage_error", body = crate::schemas::ErrorBody)))]
#[tracing::instrument(name = "set_session_project", skip(state, body))]
pub async fn bind_session(
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: web::Json<BindBody>,
) -> Result<HttpResponse, ApiError> {
    let meta = state.engine.bind(&id, &body.project_id).await?;
    Ok(HttpResponse::Ok().json(meta))
}
