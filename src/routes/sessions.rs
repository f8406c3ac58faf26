use actix_web::{web, HttpResponse};
use openprogram_actors::ids;
use openprogram_actors::limit::LogLimit;
use openprogram_actors::meta::{MetaPatch, SessionMeta, Status};
use openprogram_actors::registry::ListQuery;
use openprogram_actors::session::CreateSpec;
use serde::{Deserialize, Serialize};

use crate::error::ApiError;
use crate::state::AppState;

/// `POST /api/sessions`: create a session explicitly (no message yet).
#[utoipa::path(post, path = "/api/sessions", tag = "sessions", summary = "Create a session", request_body(content = openprogram_actors::session::CreateSpec, description = "session id, agent, project, model"), responses((status = 201, description = "the session metadata", body = openprogram_actors::meta::SessionMeta), (status = 400, description = "invalid_id, invalid_body", body = crate::schemas::ErrorBody), (status = 404, description = "unknown_project", body = crate::schemas::ErrorBody), (status = 409, description = "session_exists", body = crate::schemas::ErrorBody), (status = 500, description = "storage_error", body = crate::schemas::ErrorBody)))]
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

/// `GET /api/sessions/{id}`: the session's metadata, plus `cwd` (where its
/// tools run) and `project_path_missing`.
#[utoipa::path(get, path = "/api/sessions/{id}", tag = "sessions", summary = "One session: metadata, cwd, project_path_missing", params(("id" = String, Path, description = "session id")), responses((status = 200, description = "the session metadata", body = crate::schemas::SessionAnswer), (status = 400, description = "invalid_id", body = crate::schemas::ErrorBody), (status = 404, description = "unknown_session", body = crate::schemas::ErrorBody), (status = 500, description = "storage_error", body = crate::schemas::ErrorBody)))]
#[tracing::instrument(name = "get_session", skip(state))]
pub async fn get(
    state: web::Data<AppState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let meta = match state.engine.meta(&id).await {
        Ok(meta) => meta,
        // Listed, but its project folder is missing: what the list knows,
        // and why the rest is unavailable.
        Err(e) if e.code() == "project_path_missing" => match state.engine.row(&id).await? {
            Some(row) => {
                let relocate = format!("/api/projects/{}/relocate", row.project_id);
                let mut view = serde_json::to_value(&row).unwrap_or_default();
                if let Some(obj) = view.as_object_mut() {
                    obj.insert("available".into(), false.into());
                    obj.insert("project_path_missing".into(), true.into());
                    obj.insert(
                        "unavailable".into(),
                        serde_json::json!({"code": e.code(), "error": e.to_string(), "relocate": relocate}),
                    );
                }
                return Ok(HttpResponse::Ok().json(view));
            }
            None => return Err(e.into()),
        },
        Err(e) => return Err(e.into()),
    };
    let (cwd, missing) = state.engine.session_cwd(&id).await?;
    let replication = state.engine.session_replication(&id);
    Ok(HttpResponse::Ok().json(SessionView {
        meta,
        cwd: cwd.display().to_string(),
        project_path_missing: missing,
        replication,
    }))
}

/// `GET /api/sessions/{id}`: the metadata and where the tools run.
#[derive(Serialize)]
struct SessionView {
    #[serde(flatten)]
    meta: SessionMeta,
    cwd: String,
    project_path_missing: bool,
    /// With replication remotes: the session's state on each.
    #[serde(skip_serializing_if = "Option::is_none")]
    replication: Option<Vec<openprogram_actors::replication::SessionView>>,
}

/// `{"session_id": …, <key>: …}`, the shape of most per-session answers.
#[derive(Serialize)]
pub struct ForSession<'a, T: Serialize> {
    pub session_id: &'a str,
    #[serde(flatten)]
    pub data: T,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[derive(utoipa::ToSchema)]
pub struct WorkingDir {
    path: String,
}

/// `POST /api/sessions/{id}/working_dirs`: add an additional working
/// directory (allowed at any time, unlike the project binding).
#[utoipa::path(post, path = "/api/sessions/{id}/working_dirs", tag = "projects", summary = "Add a working directory", params(("id" = String, Path, description = "session id")), request_body(content = crate::routes::sessions::WorkingDir, description = "{path}"), responses((status = 200, description = "{session_id, working_dirs}", body = crate::schemas::WorkingDirs), (status = 400, description = "invalid_id, invalid_body, invalid_path", body = crate::schemas::ErrorBody), (status = 404, description = "unknown_session", body = crate::schemas::ErrorBody), (status = 500, description = "storage_error", body = crate::schemas::ErrorBody)))]
#[tracing::instrument(name = "add_working_dir", skip(state, body))]
pub async fn add_working_dir(
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: web::Json<WorkingDir>,
) -> Result<HttpResponse, ApiError> {
    let meta = state.engine.add_working_dir(&id, &body.path).await?;
    Ok(working_dirs(&id, meta))
}

fn working_dirs(id: &str, meta: SessionMeta) -> HttpResponse {
    #[derive(Serialize)]
    struct WorkingDirs {
        working_dirs: Vec<std::path::PathBuf>,
    }
    HttpResponse::Ok().json(ForSession {
        session_id: id,
        data: WorkingDirs {
            working_dirs: meta.working_dirs,
        },
    })
}

/// `DELETE /api/sessions/{id}/working_dirs?path=…`: remove one.
#[utoipa::path(delete, path = "/api/sessions/{id}/working_dirs", tag = "projects", summary = "Remove a working directory (?path=)", params(("id" = String, Path, description = "session id")), responses((status = 200, description = "{session_id, working_dirs}", body = crate::schemas::WorkingDirs), (status = 400, description = "invalid_id, invalid_query", body = crate::schemas::ErrorBody), (status = 404, description = "unknown_session", body = crate::schemas::ErrorBody), (status = 500, description = "storage_error", body = crate::schemas::ErrorBody)))]
#[tracing::instrument(name = "remove_working_dir", skip(state, query))]
pub async fn remove_working_dir(
    state: web::Data<AppState>,
    id: web::Path<String>,
    query: web::Query<WorkingDir>,
) -> Result<HttpResponse, ApiError> {
    let meta = state.engine.remove_working_dir(&id, &query.path).await?;
    Ok(working_dirs(&id, meta))
}

/// `GET /api/sessions/{id}/nodes`: every node, in sequence order.
#[utoipa::path(get, path = "/api/sessions/{id}/nodes", tag = "messages", summary = "Every node of the session graph", params(("id" = String, Path, description = "session id")), responses((status = 200, description = "{session_id, nodes}", body = crate::schemas::NodesPage), (status = 400, description = "invalid_id", body = crate::schemas::ErrorBody), (status = 404, description = "unknown_session", body = crate::schemas::ErrorBody), (status = 500, description = "storage_error", body = crate::schemas::ErrorBody)))]
#[tracing::instrument(name = "list_nodes", skip(state))]
pub async fn nodes(
    state: web::Data<AppState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    #[derive(Serialize)]
    struct Nodes {
        nodes: Vec<openprogram_actors::node::Node>,
    }
    let nodes = state.engine.nodes(&id).await?;
    Ok(HttpResponse::Ok().json(ForSession {
        session_id: &id,
        data: Nodes { nodes },
    }))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommitsQuery {
    #[serde(default)]
    pub limit: LogLimit,
}

/// `GET /api/sessions/{id}/commits[?limit=N]`: the turn commits, newest first.
#[utoipa::path(get, path = "/api/sessions/{id}/commits", tag = "history", summary = "The current branch commits, newest first", params(("id" = String, Path, description = "session id")), responses((status = 200, description = "{session_id, commits}", body = crate::schemas::CommitsPage), (status = 400, description = "invalid_id, invalid_query", body = crate::schemas::ErrorBody), (status = 404, description = "unknown_session", body = crate::schemas::ErrorBody), (status = 500, description = "storage_error", body = crate::schemas::ErrorBody)))]
#[tracing::instrument(name = "list_commits", skip(state))]
pub async fn commits(
    state: web::Data<AppState>,
    id: web::Path<String>,
    query: web::Query<CommitsQuery>,
) -> Result<HttpResponse, ApiError> {
    #[derive(Serialize)]
    struct Commits {
        commits: Vec<openprogram_actors::git::CommitInfo>,
    }
    let commits = state.engine.commits(&id, query.limit.get()).await?;
    Ok(HttpResponse::Ok().json(ForSession {
        session_id: &id,
        data: Commits { commits },
    }))
}

/// `GET /api/sessions`: the session list, from memory.
#[utoipa::path(get, path = "/api/sessions", tag = "sessions", summary = "The session list, from memory", responses((status = 200, description = "{total, sessions}", body = crate::schemas::SessionsPage), (status = 400, description = "invalid_query", body = crate::schemas::ErrorBody), (status = 500, description = "storage_error", body = crate::schemas::ErrorBody)))]
#[tracing::instrument(name = "list_sessions", skip(state))]
pub async fn list(
    state: web::Data<AppState>,
    query: web::Query<ListQuery>,
) -> Result<HttpResponse, ApiError> {
    let page = state.engine.list_all(query.into_inner()).await?;
    Ok(HttpResponse::Ok()
        .content_type("application/json")
        .body(super::page_body::PageBody(page.json())))
}

/// Fields a client may change with `PATCH /api/sessions/{id}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[derive(utoipa::ToSchema)]
pub struct SessionPatch {
    title: Option<String>,
    pinned: Option<bool>,
    archived: Option<bool>,
    unread: Option<bool>,
    status: Option<Status>,
    #[serde(
        default,
        deserialize_with = "openprogram_actors::meta::double_option::deserialize"
    )]
    group: Option<Option<String>>,
}

/// `PATCH /api/sessions/{id}`: change title and flags. Only the fields
/// given are written; the list order (updated_at) is not touched. A title
/// typed by the user locks it against automatic naming.
#[utoipa::path(patch, path = "/api/sessions/{id}", tag = "sessions", summary = "Rename, pin, archive, group, mark read", params(("id" = String, Path, description = "session id")), request_body(content = crate::routes::sessions::SessionPatch, description = "title, pinned, archived, group, unread, status"), responses((status = 200, description = "the session metadata", body = openprogram_actors::meta::SessionMeta), (status = 400, description = "invalid_id, invalid_body", body = crate::schemas::ErrorBody), (status = 404, description = "unknown_session", body = crate::schemas::ErrorBody), (status = 500, description = "storage_error", body = crate::schemas::ErrorBody)))]
#[tracing::instrument(name = "update_session", skip(state, body))]
pub async fn update(
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: web::Json<SessionPatch>,
) -> Result<HttpResponse, ApiError> {
    let p = body.into_inner();
    // An empty rename asks the LLM for a title instead (no lock).
    if p.title.as_deref().is_some_and(|t| t.trim().is_empty()) && !only_title(&p) {
        return Err(ApiError::bad_request(
            "invalid_body",
            "an empty title (regenerate) cannot be combined with other fields",
        ));
    }
    if let (Some(title), true) = (&p.title, only_title(&p)) {
        return Ok(HttpResponse::Ok().json(state.engine.rename_or_regenerate(&id, title).await?));
    }
    let user_titled = p.title.is_some().then_some(true);
    let patch = MetaPatch {
        title: p.title.map(|t| t.trim().to_string()),
        pinned: p.pinned,
        archived: p.archived,
        unread: p.unread,
        status: p.status,
        group: p.group,
        user_titled,
        ..MetaPatch::default()
    };
    if patch.is_empty() {
        return Err(ApiError::bad_request("invalid_body", "nothing to update"));
    }
    let meta = state.engine.update_meta(&id, patch).await?;
    Ok(HttpResponse::Ok().json(meta))
}

/// Whether the patch changes the title and nothing else (a rename).
fn only_title(p: &SessionPatch) -> bool {
    p.pinned.is_none()
        && p.archived.is_none()
        && p.unread.is_none()
        && p.status.is_none()
        && p.group.is_none()
}

/// `DELETE /api/sessions/{id}`: remove the session directory (with `.git/`)
/// and its registry row.
#[utoipa::path(delete, path = "/api/sessions/{id}", tag = "sessions", summary = "Delete a session and its repository", params(("id" = String, Path, description = "session id")), responses((status = 200, description = "{session_id, deleted: true}", body = crate::schemas::Deleted), (status = 400, description = "invalid_id", body = crate::schemas::ErrorBody), (status = 404, description = "unknown_session", body = crate::schemas::ErrorBody), (status = 500, description = "storage_error", body = crate::schemas::ErrorBody)))]
#[tracing::instrument(name = "delete_session", skip(state))]
pub async fn delete(
    state: web::Data<AppState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    #[derive(Serialize)]
    struct Deleted {
        deleted: bool,
    }
    state.engine.delete(&id).await?;
    Ok(HttpResponse::Ok().json(ForSession {
        session_id: &id,
        data: Deleted { deleted: true },
    }))
}

/// `POST /api/sessions/{id}/title/regenerate`: ask the LLM for a title now
/// (from the last 20 messages). It does not lock the title.
#[utoipa::path(post, path = "/api/sessions/{id}/title/regenerate", tag = "sessions", summary = "Make a new title with the LLM now", params(("id" = String, Path, description = "session id")), responses((status = 200, description = "the session metadata", body = openprogram_actors::meta::SessionMeta), (status = 400, description = "invalid_id", body = crate::schemas::ErrorBody), (status = 404, description = "unknown_session", body = crate::schemas::ErrorBody), (status = 502, description = "llm_failed", body = crate::schemas::ErrorBody), (status = 503, description = "llm_not_configured, unavailable", body = crate::schemas::ErrorBody), (status = 500, description = "storage_error", body = crate::schemas::ErrorBody)))]
#[tracing::instrument(name = "regenerate_title", skip(state))]
pub async fn regenerate_title(
    state: web::Data<AppState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(state.engine.regenerate_title(&id).await?))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
#[derive(utoipa::ToSchema)]
pub struct ForkBody {
    #[serde(default)]
    commit: Option<String>,
    #[serde(default)]
    node_id: Option<String>,
}

/// `POST /api/sessions/{id}/fork`: a new session holding this one's history
/// up to `commit` (or up to the turn that committed `node_id`, or up to the
/// last turn), which then lives on its own.
#[utoipa::path(post, path = "/api/sessions/{id}/fork", tag = "transfer", summary = "Fork the session at a commit", params(("id" = String, Path, description = "session id")), request_body(content = crate::routes::sessions::ForkBody, description = "new_id, commit"), responses((status = 201, description = "the new session metadata", body = openprogram_actors::meta::SessionMeta), (status = 400, description = "invalid_id, invalid_body", body = crate::schemas::ErrorBody), (status = 404, description = "unknown_session, unknown_commit", body = crate::schemas::ErrorBody), (status = 409, description = "session_exists", body = crate::schemas::ErrorBody), (status = 500, description = "storage_error", body = crate::schemas::ErrorBody)))]
#[tracing::instrument(name = "fork_session", skip(state, body))]
pub async fn fork(
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: web::Json<ForkBody>,
) -> Result<HttpResponse, ApiError> {
    let ForkBody { commit, node_id } = body.into_inner();
    let meta = state.engine.fork(&id, commit, node_id).await?;
    Ok(HttpResponse::Created().json(meta))
}

/// `GET /api/sessions/{id}/export`: a git bundle of the session with all its
/// branches (`git clone <file>` accepts it).
#[utoipa::path(get, path = "/api/sessions/{id}/export", tag = "transfer", summary = "The session as a git bundle", params(("id" = String, Path, description = "session id")), responses((status = 200, description = "the git bundle (`application/octet-stream` when the request's Accept asks for it and not for `application/x-git-bundle`)", content((crate::schemas::GitBundle = "application/x-git-bundle"), (crate::schemas::GitBundle = "application/octet-stream"))), (status = 400, description = "invalid_id", body = crate::schemas::ErrorBody), (status = 404, description = "unknown_session", body = crate::schemas::ErrorBody), (status = 500, description = "storage_error", body = crate::schemas::ErrorBody)))]
#[tracing::instrument(name = "export_session", skip(state, req))]
pub async fn export(
    state: web::Data<AppState>,
    id: web::Path<String>,
    req: actix_web::HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let bundle = state.engine.export(&id).await?;
    // Generated clients ask for the generic binary type.
    let accept = req
        .headers()
        .get(actix_web::http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let content_type =
        if accept.contains("application/octet-stream") && !accept.contains("x-git-bundle") {
            "application/octet-stream"
        } else {
            "application/x-git-bundle"
        };
    Ok(HttpResponse::Ok()
        .content_type(content_type)
        .insert_header((
            "Content-Disposition",
            format!("attachment; filename=\"{id}.bundle\""),
        ))
        .body(bundle))
}

/// Largest bundle `POST /api/sessions/import` accepts.
pub const MAX_BUNDLE: usize = 256 << 20;

/// `POST /api/sessions/import`: register a git bundle (as made by export)
/// as a session; a new id if its id is taken.
#[utoipa::path(post, path = "/api/sessions/import", tag = "transfer", summary = "Import a session from a git bundle", request_body(description = "a git bundle (GET /export)", content((crate::schemas::GitBundle = "application/octet-stream"), (crate::schemas::GitBundle = "application/x-git-bundle"))), responses((status = 201, description = "the imported session metadata", body = openprogram_actors::meta::SessionMeta), (status = 400, description = "invalid_bundle", body = crate::schemas::ErrorBody), (status = 409, description = "session_exists", body = crate::schemas::ErrorBody), (status = 413, description = "body_too_large", body = crate::schemas::ErrorBody), (status = 415, description = "unsupported_media_type", body = crate::schemas::ErrorBody), (status = 500, description = "storage_error", body = crate::schemas::ErrorBody)))]
#[tracing::instrument(name = "import_session", skip(state, body))]
pub async fn import(
    state: web::Data<AppState>,
    body: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let bytes = crate::error::read_body(body, MAX_BUNDLE).await?;
    let meta = state.engine.import(bytes).await?;
    Ok(HttpResponse::Created().json(meta))
}
