//! Projects: the user's working directories under git.

use actix_web::{web, HttpResponse};
use serde::Deserialize;

use crate::error::ApiError;
use crate::startup::AppState;

/// `GET /api/projects`: every project (the default one first), with
/// `session_count` and `path_missing`.
#[tracing::instrument(name = "list_projects", skip(state))]
pub async fn list(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let projects = state.engine.projects().await?;
    Ok(HttpResponse::Ok().json(serde_json::json!({ "projects": projects })))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateBody {
    path: String,
    #[serde(default)]
    name: Option<String>,
}

/// `POST /api/projects`: register a directory (idempotent: the same folder
/// always gives the same project). 201 when new, 200 when it existed.
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
#[tracing::instrument(name = "get_project", skip(state))]
pub async fn get(
    state: web::Data<AppState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(state.engine.project(&id).await?))
}

/// `GET /api/projects/{id}/commits[?limit=N]`: the agent's commits.
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
pub struct RelocateBody {
    path: String,
    #[serde(default)]
    session_id: Option<String>,
}

/// `POST /api/projects/{id}/relocate`: the folder moved; keep the id.
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
pub struct BindBody {
    project_id: String,
}

/// `PUT /api/sessions/{id}/project`: bind a session to a project.
#[tracing::instrument(name = "set_session_project", skip(state, body))]
pub async fn bind_session(
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: web::Json<BindBody>,
) -> Result<HttpResponse, ApiError> {
    let meta = state.engine.bind(&id, &body.project_id).await?;
    Ok(HttpResponse::Ok().json(meta))
}
