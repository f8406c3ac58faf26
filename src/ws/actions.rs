//! WebSocket actions: each returns the frames for the client that sent it.
//! Changes reach every client (the sender included) through the event hub.

use openprogram_actors::limit::LogLimit;
use openprogram_actors::meta::MetaPatch;
use openprogram_actors::node::Role;
use openprogram_actors::registry::ListQuery;
use openprogram_actors::session::{CheckoutTo, CreateSpec, NewNode, Posted, SwitchTo, RUN_ACTIVE};
use openprogram_actors::EngineError;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::error::ApiError;
use crate::startup::AppState;

pub fn frame(kind: &str, data: Value) -> String {
    json!({ "type": kind, "data": data }).to_string()
}

pub fn error_frame(action: Option<&str>, error: &str) -> String {
    frame("action_error", json!({ "action": action, "error": error }))
}

/// An engine failure as an `action_error` frame, with the same code and
/// message an HTTP client gets (the one mapping in `crate::error`).
fn failed(action: &str, e: EngineError) -> Vec<String> {
    let e = ApiError::from(e);
    vec![frame(
        "action_error",
        json!({ "action": action, "error": e.message, "code": e.code }),
    )]
}

/// Actions that may take seconds (an LLM call, a work-tree rewrite): the
/// connection runs them beside its loop, so pings, broadcasts and other
/// replies keep flowing.
pub fn is_slow(text: &str) -> bool {
    #[derive(Deserialize)]
    struct Peek {
        action: Option<String>,
        #[serde(default)]
        title: Option<String>,
    }
    let Ok(p) = serde_json::from_str::<Peek>(text) else {
        return false;
    };
    match p.action.as_deref() {
        Some("rename_session") => p.title.as_deref().is_none_or(|t| t.trim().is_empty()),
        Some("git_switch") => true,
        _ => false,
    }
}

pub async fn sessions_list_frame(state: &AppState, query: ListQuery) -> String {
    match state.engine.list(query).await {
        Ok(page) => typed_frame(
            "sessions_list",
            crate::routes::ListPage {
                total: page.total,
                sessions: page.sessions.iter().map(|r| r.client()).collect(),
            },
        ),
        Err(e) => error_frame(Some("list_sessions"), &e.to_string()),
    }
}

fn parse<T: for<'de> Deserialize<'de>>(action: &str, v: Value) -> Result<T, Vec<String>> {
    serde_json::from_value(v)
        .map_err(|e| vec![error_frame(Some(action), &format!("invalid fields: {e}"))])
}

#[derive(Deserialize)]
struct Flags {
    session_id: String,
    pinned: Option<bool>,
    archived: Option<bool>,
    unread: Option<bool>,
    #[serde(
        default,
        deserialize_with = "openprogram_actors::meta::double_option::deserialize"
    )]
    group: Option<Option<String>>,
}

#[derive(Deserialize)]
struct Rename {
    session_id: String,
    #[serde(default)]
    title: String,
}

#[derive(Deserialize)]
struct SessionRef {
    session_id: String,
}

#[derive(Deserialize)]
struct SessionLog {
    session_id: String,
    #[serde(default)]
    limit: LogLimit,
}

/// A frame naming a session, its other fields shaped as the HTTP body of
/// the same operation (`CheckoutTo`, `SwitchTo`).
#[derive(Deserialize)]
struct OnSession<T> {
    session_id: String,
    #[serde(flatten)]
    body: T,
}

/// A frame `{"type": kind, "data": data}` from a typed value.
fn typed_frame(kind: &str, data: impl Serialize) -> String {
    #[derive(Serialize)]
    struct Frame<'a, T: Serialize> {
        #[serde(rename = "type")]
        kind: &'a str,
        data: T,
    }
    serde_json::to_string(&Frame { kind, data }).unwrap_or_default()
}

/// A reply frame: `data` with the session id beside its fields.
fn session_frame(kind: &str, session_id: &str, data: impl Serialize) -> String {
    typed_frame(kind, crate::routes::ForSession { session_id, data })
}

#[derive(Deserialize)]
struct ListProjects {
    #[serde(default)]
    session_id: Option<String>,
}

#[derive(Deserialize)]
struct CreateProject {
    path: String,
    #[serde(default)]
    name: Option<String>,
}

#[derive(Deserialize)]
struct SetProject {
    session_id: String,
    project_id: String,
}

#[derive(Deserialize)]
struct RelocateProject {
    project_id: String,
    path: String,
    #[serde(default)]
    session_id: Option<String>,
}

#[derive(Deserialize)]
struct Chat {
    #[serde(default)]
    session_id: Option<String>,
    #[serde(default)]
    project_id: Option<String>,
    #[serde(default, alias = "text")]
    content: Value,
    #[serde(default)]
    message_id: Option<String>,
    /// Queue instead of refusing while a turn is running.
    #[serde(default)]
    queue: bool,
    #[serde(default)]
    model: Option<String>,
}

pub async fn handle(state: &AppState, text: &str) -> Vec<String> {
    let mut v: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return vec![error_frame(None, &format!("malformed frame: {e}"))],
    };
    let Some(obj) = v.as_object_mut() else {
        return vec![error_frame(None, "malformed frame: expected an object")];
    };
    let Some(action) = obj
        .remove("action")
        .and_then(|a| a.as_str().map(str::to_owned))
    else {
        return vec![error_frame(None, "malformed frame: missing \"action\"")];
    };
    match dispatch(state, &action, v).await {
        Ok(frames) | Err(frames) => frames,
    }
}

async fn dispatch(state: &AppState, action: &str, v: Value) -> Result<Vec<String>, Vec<String>> {
    let engine = &state.engine;
    Ok(match action {
        "list_sessions" => vec![sessions_list_frame(state, parse(action, v)?).await],
        "update_session_flags" => {
            let f: Flags = parse(action, v)?;
            let patch = MetaPatch {
                pinned: f.pinned,
                archived: f.archived,
                unread: f.unread,
                group: f.group,
                ..Default::default()
            };
            if patch.is_empty() {
                return Err(vec![error_frame(Some(action), "no flag given")]);
            }
            engine
                .update_meta(&f.session_id, patch)
                .await
                .map_err(|e| failed(action, e))?;
            Vec::new()
        }
        "rename_session" => {
            let r: Rename = parse(action, v)?;
            engine
                .rename_or_regenerate(&r.session_id, &r.title)
                .await
                .map_err(|e| failed(action, e))?;
            Vec::new()
        }
        "delete_session" => {
            let r: SessionRef = parse(action, v)?;
            engine
                .delete(&r.session_id)
                .await
                .map_err(|e| failed(action, e))?;
            Vec::new()
        }
        "mark_session_read" => {
            let r: SessionRef = parse(action, v)?;
            engine
                .update_meta(
                    &r.session_id,
                    MetaPatch {
                        unread: Some(false),
                        ..Default::default()
                    },
                )
                .await
                .map_err(|e| failed(action, e))?;
            Vec::new()
        }
        "list_projects" => {
            let r: ListProjects = parse(action, v)?;
            let projects = engine.projects().await.map_err(|e| failed(action, e))?;
            vec![frame(
                "projects_list",
                json!({ "projects": projects, "session_id": r.session_id }),
            )]
        }
        "create_project" => {
            let r: CreateProject = parse(action, v)?;
            let (project, created) = engine
                .resolve_project(&r.path, r.name)
                .await
                .map_err(|e| failed(action, e))?;
            vec![frame(
                "project_created",
                json!({ "project": project, "created": created }),
            )]
        }
        "set_session_project" => {
            let r: SetProject = parse(action, v)?;
            let meta = engine
                .bind(&r.session_id, &r.project_id)
                .await
                .map_err(|e| failed(action, e))?;
            vec![frame(
                "session_project_set",
                json!({ "session_id": meta.id, "project_id": meta.project_id }),
            )]
        }
        "relocate_project" => {
            let r: RelocateProject = parse(action, v)?;
            let rel = engine
                .relocate_project(&r.project_id, &r.path, r.session_id)
                .await
                .map_err(|e| failed(action, e))?;
            vec![frame(
                "project_relocated",
                json!({ "ok": rel.ok, "old_path": rel.old_path, "path": rel.path, "node_id": rel.node_ids.first(), "node_ids": rel.node_ids }),
            )]
        }
        "git_session_log" => {
            let r: SessionLog = parse(action, v)?;
            let commits = engine
                .commits(&r.session_id, r.limit.get())
                .await
                .map_err(|e| failed(action, e))?;
            vec![frame(
                "git_session_log",
                json!({ "session_id": r.session_id, "commits": commits }),
            )]
        }
        "git_history" => {
            let r: SessionRef = parse(action, v)?;
            let history = engine
                .history(&r.session_id)
                .await
                .map_err(|e| failed(action, e))?;
            vec![session_frame("git_history", &r.session_id, history)]
        }
        "git_checkout" => {
            let r: OnSession<CheckoutTo> = parse(action, v)?;
            let shown = engine
                .checkout(&r.session_id, r.body)
                .await
                .map_err(|e| failed(action, e))?;
            vec![session_frame("git_checkout", &r.session_id, shown)]
        }
        "git_branches" => {
            let r: SessionRef = parse(action, v)?;
            let branches = engine
                .branches(&r.session_id)
                .await
                .map_err(|e| failed(action, e))?;
            vec![session_frame(
                "git_branches",
                &r.session_id,
                json!({ "branches": branches }),
            )]
        }
        "git_switch" => {
            let r: OnSession<SwitchTo> = parse(action, v)?;
            let shown = engine
                .switch(&r.session_id, r.body)
                .await
                .map_err(|e| failed(action, e))?;
            vec![session_frame("git_switch", &r.session_id, shown)]
        }
        "chat" => chat(state, parse(action, v)?).await,
        other => {
            return Err(vec![error_frame(
                Some(other),
                &format!("unknown action '{other}'"),
            )])
        }
    })
}

/// A user message from a UI: creates the session on the first frame (with
/// that frame's project, so the repo lands inside it), or refuses while a
/// turn is running unless the client asked for queueing.
async fn chat(state: &AppState, c: Chat) -> Vec<String> {
    let session_id = c.session_id.unwrap_or_else(openprogram_actors::ids::new_id);
    let spec = CreateSpec {
        project_id: c.project_id,
        model: c.model,
        ..CreateSpec::default()
    };
    let node = NewNode {
        id: c.message_id,
        role: Role::User,
        content: c.content,
        predecessor: None,
        caller: None,
        metadata: Default::default(),
        name: None,
        output: None,
    };
    match state
        .engine
        .post(
            &session_id,
            node,
            Some(spec.into_meta(session_id.clone())),
            c.queue,
        )
        .await
    {
        Ok(Posted::Appended(out)) => vec![frame(
            "chat_ack",
            json!({ "session_id": session_id, "message_id": out.node.id, "turn": out.turn, "queued": false }),
        )],
        Ok(Posted::Queued {
            message_id,
            position,
            ..
        }) => vec![frame(
            "chat_ack",
            json!({ "session_id": session_id, "message_id": message_id, "queued": true, "position": position }),
        )],
        Err(e) if e.is_run_active() => vec![frame(
            "chat_response",
            json!({ "session_id": session_id, "error": "run_active", "message": RUN_ACTIVE }),
        )],
        Err(e) => failed("chat", e),
    }
}
