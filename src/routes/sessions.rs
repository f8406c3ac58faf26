use actix_web::{web, HttpResponse};
use openprogram_actors::ids;
use openprogram_actors::meta::{MetaPatch, Status};
use openprogram_actors::registry::query::MAX_LIMIT;
use openprogram_actors::registry::{ListQuery, SessionRow};
use openprogram_actors::session::CreateSpec;
use serde::Deserialize;

use crate::error::ApiError;
use crate::startup::AppState;

/// `POST /api/sessions`: create a session explicitly (no message yet).
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
#[tracing::instrument(name = "get_session", skip(state))]
pub async fn get(
    state: web::Data<AppState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let meta = state.engine.meta(&id).await?;
    let (cwd, missing) = state.engine.session_cwd(&id).await?;
    let mut v = serde_json::to_value(meta).unwrap_or_default();
    if let Some(obj) = v.as_object_mut() {
        obj.insert("cwd".into(), cwd.display().to_string().into());
        obj.insert("project_path_missing".into(), missing.into());
    }
    Ok(HttpResponse::Ok().json(v))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkingDir {
    path: String,
}

/// `POST /api/sessions/{id}/working_dirs`: add an additional working
/// directory (allowed at any time, unlike the project binding).
#[tracing::instrument(name = "add_working_dir", skip(state, body))]
pub async fn add_working_dir(
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: web::Json<WorkingDir>,
) -> Result<HttpResponse, ApiError> {
    let p = std::path::Path::new(&body.path);
    if !p.is_absolute() {
        return Err(ApiError::bad_request(
            "invalid_path",
            "path must be absolute",
        ));
    }
    let dir = p
        .canonicalize()
        .ok()
        .filter(|d| d.is_dir())
        .ok_or_else(|| {
            ApiError::bad_request("invalid_path", "path is not an existing directory")
        })?;
    let patch = MetaPatch {
        add_working_dir: Some(dir),
        ..MetaPatch::default()
    };
    let meta = state.engine.update_meta(&id, patch).await?;
    Ok(HttpResponse::Ok()
        .json(serde_json::json!({"session_id": id.as_str(), "working_dirs": meta.working_dirs})))
}

/// `DELETE /api/sessions/{id}/working_dirs?path=…`: remove one.
#[tracing::instrument(name = "remove_working_dir", skip(state, query))]
pub async fn remove_working_dir(
    state: web::Data<AppState>,
    id: web::Path<String>,
    query: web::Query<WorkingDir>,
) -> Result<HttpResponse, ApiError> {
    let p = std::path::PathBuf::from(&query.path);
    let dir = p.canonicalize().unwrap_or(p);
    let patch = MetaPatch {
        remove_working_dir: Some(dir),
        ..MetaPatch::default()
    };
    let meta = state.engine.update_meta(&id, patch).await?;
    Ok(HttpResponse::Ok()
        .json(serde_json::json!({"session_id": id.as_str(), "working_dirs": meta.working_dirs})))
}

/// `GET /api/sessions/{id}/nodes`: every node, in sequence order.
#[tracing::instrument(name = "list_nodes", skip(state))]
pub async fn nodes(
    state: web::Data<AppState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let nodes = state.engine.nodes(&id).await?;
    Ok(HttpResponse::Ok().json(serde_json::json!({"session_id": id.as_str(), "nodes": nodes})))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommitsQuery {
    limit: Option<usize>,
}

/// Largest `limit` accepted by the commit log.
const MAX_COMMITS: usize = 10_000;

/// `GET /api/sessions/{id}/commits[?limit=N]`: the turn commits, newest first.
#[tracing::instrument(name = "list_commits", skip(state))]
pub async fn commits(
    state: web::Data<AppState>,
    id: web::Path<String>,
    query: web::Query<CommitsQuery>,
) -> Result<HttpResponse, ApiError> {
    let limit = query.limit.unwrap_or(100);
    if limit == 0 || limit > MAX_COMMITS {
        return Err(ApiError::bad_request(
            "invalid_query",
            format!("limit must be 1..={MAX_COMMITS}"),
        ));
    }
    let commits = state.engine.commits(&id, limit).await?;
    Ok(HttpResponse::Ok().json(serde_json::json!({"session_id": id.as_str(), "commits": commits})))
}

/// A registry row as clients see it: the 15 fields, the preview, and the
/// project (filled in when listing).
pub fn present(row: SessionRow) -> serde_json::Value {
    let project = serde_json::json!({ "id": row.project_id });
    let title = row.display_title();
    let mut v = serde_json::to_value(row).unwrap_or_default();
    if let Some(obj) = v.as_object_mut() {
        obj.remove("project_id");
        obj.remove("first_preview");
        obj.insert("project".into(), project);
        obj.insert("title".into(), title.into());
    }
    v
}

/// `GET /api/sessions`: the session list, from memory.
#[tracing::instrument(name = "list_sessions", skip(state))]
pub async fn list(
    state: web::Data<AppState>,
    query: web::Query<ListQuery>,
) -> Result<HttpResponse, ApiError> {
    let query = query.into_inner();
    if query.limit.is_some_and(|l| l == 0 || l > MAX_LIMIT) {
        return Err(ApiError::bad_request(
            "invalid_query",
            format!("limit must be 1..={MAX_LIMIT}"),
        ));
    }
    let page = state.engine.list(query).await?;
    let sessions: Vec<serde_json::Value> = page.sessions.into_iter().map(present).collect();
    Ok(HttpResponse::Ok().json(serde_json::json!({"total": page.total, "sessions": sessions})))
}

/// Fields a client may change with `PATCH /api/sessions/{id}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
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
#[tracing::instrument(name = "update_session", skip(state, body))]
pub async fn update(
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: web::Json<SessionPatch>,
) -> Result<HttpResponse, ApiError> {
    let p = body.into_inner();
    // An empty rename asks the LLM for a title instead (no lock).
    if p.title.as_deref().is_some_and(|t| t.trim().is_empty()) {
        if p.pinned.is_some()
            || p.archived.is_some()
            || p.unread.is_some()
            || p.status.is_some()
            || p.group.is_some()
        {
            return Err(ApiError::bad_request(
                "invalid_body",
                "an empty title (regenerate) cannot be combined with other fields",
            ));
        }
        return regenerate_title(state, id).await;
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

/// `DELETE /api/sessions/{id}`: remove the session directory (with `.git/`)
/// and its registry row.
#[tracing::instrument(name = "delete_session", skip(state))]
pub async fn delete(
    state: web::Data<AppState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    state.engine.delete(&id).await?;
    Ok(HttpResponse::Ok().json(serde_json::json!({"session_id": id.as_str(), "deleted": true})))
}

/// `POST /api/sessions/{id}/title/regenerate`: ask the LLM for a title now
/// (from the last 20 messages). It does not lock the title.
#[tracing::instrument(name = "regenerate_title", skip(state))]
pub async fn regenerate_title(
    state: web::Data<AppState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    use actix_web::http::StatusCode;
    use openprogram_actors::titler::TitleError;
    match state.engine.regenerate_title(&id).await? {
        Ok(meta) => Ok(HttpResponse::Ok().json(meta)),
        Err(TitleError::NotConfigured) => Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "llm_not_configured",
            "no LLM is configured for titles",
        )),
        Err(TitleError::Busy) => Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            "the titler is busy, retry",
        )),
        Err(e @ TitleError::Llm(_)) => Err(ApiError::new(
            StatusCode::BAD_GATEWAY,
            "llm_failed",
            e.to_string(),
        )),
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForkBody {
    #[serde(default)]
    commit: Option<String>,
    #[serde(default)]
    node_id: Option<String>,
}

/// `POST /api/sessions/{id}/fork`: a new session holding this one's history
/// up to `commit` (or up to the turn that committed `node_id`, or up to the
/// last turn), which then lives on its own.
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
#[tracing::instrument(name = "export_session", skip(state))]
pub async fn export(
    state: web::Data<AppState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let bundle = state.engine.export(&id).await?;
    Ok(HttpResponse::Ok()
        .content_type("application/x-git-bundle")
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
#[tracing::instrument(name = "import_session", skip(state, body))]
pub async fn import(
    state: web::Data<AppState>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let meta = state.engine.import(body.to_vec()).await?;
    Ok(HttpResponse::Created().json(meta))
}
