//! WebSocket actions on projects (the composer chip and the projects page
//! of the original web client). Their replies carry `ok` and, on failure,
//! `error` with the original's wording, as that client expects.

use openprogram_actors::registry::ListQuery;
use serde::Deserialize;
use serde_json::{json, Value};

use super::frames::{frame, reply_error, Call, Frames};

#[derive(Deserialize)]
struct ListProjects {
    #[serde(default)]
    session_id: Option<String>,
}

/// `projects_list {projects, current_project_id, session_id}`: the
/// session's project when a session is named (its id echoed, so a client
/// matches the reply), else null.
async fn projects_list(c: &Call<'_>, session_id: Option<String>) -> Result<Value, Value> {
    let projects = c.engine().projects().await.map_err(|e| c.fail(e))?;
    let current = match &session_id {
        Some(sid) => c
            .engine()
            .row(sid)
            .await
            .map_err(|e| c.fail(e))?
            .map(|r| r.project_id),
        None => None,
    };
    Ok(frame(
        "projects_list",
        json!({ "projects": projects, "current_project_id": current, "session_id": session_id }),
    ))
}

pub async fn list(c: &Call<'_>, v: Value) -> Result<Frames, Value> {
    let r: ListProjects = c.parse(v)?;
    // An empty id is no session (the original client sends "" for a new
    // chat and keeps only a reply naming none).
    let session_id = r.session_id.filter(|s| !s.is_empty());
    Ok(vec![projects_list(c, session_id).await?])
}

#[derive(Deserialize)]
struct CreateProject {
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    name: Option<String>,
}

/// `create_project {path, name?}` → `project_created {ok, project, error}`
/// then `projects_list`.
pub async fn create(c: &Call<'_>, v: Value) -> Result<Frames, Value> {
    let r: CreateProject = c.parse(v)?;
    let Some(path) = r.path.filter(|p| !p.trim().is_empty()) else {
        return Ok(vec![frame(
            "project_created",
            json!({ "ok": false, "project": null, "error": "path is required", "code": "invalid_fields" }),
        )]);
    };
    let reply = match c.engine().resolve_project(&path, r.name).await {
        Ok((project, created)) => {
            let view = c
                .engine()
                .project(&project.id)
                .await
                .map_err(|e| c.fail(e))?;
            json!({ "ok": true, "project": view, "created": created, "error": null })
        }
        Err(e) => {
            let (error, code) = reply_error(e);
            json!({ "ok": false, "project": null, "error": error, "code": code })
        }
    };
    Ok(vec![
        frame("project_created", reply),
        projects_list(c, None).await?,
    ])
}

#[derive(Deserialize)]
struct SetProject {
    #[serde(default)]
    session_id: Option<String>,
    #[serde(default)]
    project_id: Option<String>,
}

/// `set_session_project` (also `add_session_to_project`, spec 001's name)
/// → `session_project_set {ok, session_id, project_id, error}`. Errors in
/// the original's order: both ids required, the freeze, an unknown
/// project. Naming the session's own project always succeeds (the draft
/// flow re-sends it after the first turn).
pub async fn set(c: &Call<'_>, v: Value) -> Result<Frames, Value> {
    let r: SetProject = c.parse(v)?;
    let reply = |ok: bool, project_id: Option<&str>, error: Option<String>, code: Option<&str>| {
        frame(
            "session_project_set",
            json!({ "ok": ok, "session_id": r.session_id, "project_id": project_id, "error": error, "code": code }),
        )
    };
    let (Some(sid), Some(pid)) = (
        r.session_id.as_deref().filter(|s| !s.is_empty()),
        r.project_id.as_deref().filter(|s| !s.is_empty()),
    ) else {
        return Ok(vec![reply(
            false,
            r.project_id.as_deref(),
            Some("session_id and project_id are required".into()),
            Some("invalid_fields"),
        )]);
    };
    Ok(vec![match c.engine().bind(sid, pid).await {
        Ok(meta) => reply(true, Some(&meta.project_id), None, None),
        Err(e) => {
            let (error, code) = reply_error(e);
            reply(false, Some(pid), Some(error), Some(code))
        }
    }])
}

#[derive(Deserialize)]
struct Relocate {
    #[serde(default)]
    project_id: Option<String>,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    session_id: Option<String>,
}

/// `relocate_project {project_id, path, session_id?}` →
/// `project_relocated {ok, session_id, project_id, old_path, path, node_id,
/// error}` then `projects_list`.
pub async fn relocate(c: &Call<'_>, v: Value) -> Result<Frames, Value> {
    let r: Relocate = c.parse(v)?;
    let base = json!({
        "session_id": r.session_id,
        "project_id": r.project_id,
        "old_path": null,
        "path": r.path,
        "node_id": null,
    });
    let with = |mut base: Value, fields: Value| {
        if let (Some(b), Some(f)) = (base.as_object_mut(), fields.as_object()) {
            b.extend(f.clone());
        }
        frame("project_relocated", base)
    };
    let (Some(pid), Some(path)) = (
        r.project_id.as_deref().filter(|s| !s.is_empty()),
        r.path.as_deref().filter(|s| !s.is_empty()),
    ) else {
        return Ok(vec![with(
            base,
            json!({ "ok": false, "error": "project_id and path are required", "code": "invalid_fields" }),
        )]);
    };
    let relocated = c
        .engine()
        .relocate_project(pid, path, r.session_id.clone())
        .await;
    let reply = match relocated {
        Ok(rel) => with(
            base,
            json!({
                "ok": true,
                "error": null,
                "old_path": rel.old_path,
                "path": rel.path,
                "node_id": rel.node_ids.first(),
                "node_ids": rel.node_ids,
            }),
        ),
        Err(e) => {
            let (error, code) = reply_error(e);
            with(base, json!({ "ok": false, "error": error, "code": code }))
        }
    };
    Ok(vec![reply, projects_list(c, r.session_id).await?])
}

#[derive(Deserialize)]
struct ProjectRef {
    #[serde(default)]
    project_id: Option<String>,
}

/// `list_project_sessions {project_id}` → `project_sessions {project_id,
/// sessions: [{id, title, created_at, preview}]}`, newest created first.
pub async fn sessions(c: &Call<'_>, v: Value) -> Result<Frames, Value> {
    let r: ProjectRef = c.parse(v)?;
    let Some(pid) = r.project_id.filter(|p| !p.is_empty()) else {
        return Err(c.error("invalid_fields", "project_id is required"));
    };
    let page = c
        .engine()
        .list(ListQuery::everything(Some(pid.clone())))
        .await
        .map_err(|e| c.fail(e))?;
    let mut rows: Vec<_> = page.sessions.iter().collect();
    rows.sort_by(|a, b| b.created_at.total_cmp(&a.created_at));
    let sessions: Vec<Value> = rows
        .iter()
        .map(|r| json!({ "id": r.id, "title": r.display_title(), "created_at": r.created_at, "preview": r.preview }))
        .collect();
    Ok(vec![frame(
        "project_sessions",
        json!({ "project_id": pid, "sessions": sessions }),
    )])
}
