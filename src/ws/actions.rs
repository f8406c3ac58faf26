//! The WebSocket action table: each client frame `{"action": ..., ...}`
//! is answered with the frames for the client that sent it; changes reach
//! every client (the sender included) through the event hub. Keys an
//! action does not know are ignored, and a `request_id` is echoed at the
//! top level of every reply frame.

use openprogram_actors::node::Role;
use openprogram_actors::session::{CreateSpec, NewNode, Posted, RUN_ACTIVE};
use serde::Deserialize;
use serde_json::{json, Value};

use super::frames::{action_error, frame, to_text, Call, Frames};
use super::{branches, contexts, files, projects, runtime, sessions, transcript, undo};
use crate::state::AppState;

/// Actions that may take seconds (an LLM call, a work-tree rewrite, many
/// deletions): the connection runs them beside its loop, so pings,
/// broadcasts and other replies keep flowing.
pub fn is_slow(text: &str) -> bool {
    #[derive(Deserialize)]
    struct Peek {
        action: Option<String>,
        #[serde(default)]
        title: Option<Value>,
    }
    let Ok(p) = serde_json::from_str::<Peek>(text) else {
        return false;
    };
    match p.action.as_deref() {
        Some("rename_session") => p
            .title
            .as_ref()
            .and_then(Value::as_str)
            .is_none_or(|t| t.trim().is_empty()),
        Some("git_switch" | "clear_sessions") => true,
        _ => false,
    }
}

/// The `sessions_list` frame (also the resync of a client that lagged).
pub async fn sessions_list_frame(state: &AppState) -> String {
    list_reply(state, "list_sessions", None).await
}

/// Actions answered (after their own frames, if any) with the
/// `sessions_list` frame, which `sessions::list_text` makes.
const LISTED: [&str; 2] = ["list_sessions", "clear_sessions"];

/// The `sessions_list` frame for `action`, or its error frame.
async fn list_reply(state: &AppState, action: &str, request_id: Option<&Value>) -> String {
    match sessions::list_text(state, request_id).await {
        Ok(text) => text,
        Err(e) => {
            let c = Call {
                state,
                action,
                session_id: None,
            };
            to_text(vec![c.fail(e)], request_id).concat()
        }
    }
}

/// A frame that is not an action at all.
pub fn error_frame(error: &str) -> String {
    action_error(None, None, error, "malformed_frame").to_string()
}

pub async fn handle(state: &AppState, text: &str) -> Vec<String> {
    if let Some(answered) = super::forward::ws_forward(state, text).await {
        return answered;
    }
    handle_here(state, text).await
}

/// Answer an action on this node (a cluster node forwards the actions
/// of sessions another node owns; see `super::forward::ws_forward`).
pub async fn handle_here(state: &AppState, text: &str) -> Vec<String> {
    let mut v: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return vec![error_frame(&format!("malformed frame: {e}"))],
    };
    let Some(obj) = v.as_object_mut() else {
        return vec![error_frame("malformed frame: expected an object")];
    };
    let request_id = obj.remove("request_id");
    let Some(action) = obj
        .remove("action")
        .and_then(|a| a.as_str().map(str::to_owned))
    else {
        return to_text(
            vec![action_error(
                None,
                None,
                "malformed frame: missing \"action\"",
                "malformed_frame",
            )],
            request_id.as_ref(),
        );
    };
    let c = Call::for_frame(state, &action, obj);
    let (frames, listed) = match dispatch(&c, v).await {
        Ok(frames) => (frames, LISTED.contains(&action.as_str())),
        Err(error) => (vec![error], false),
    };
    let mut out = to_text(frames, request_id.as_ref());
    if listed {
        out.push(list_reply(state, &action, request_id.as_ref()).await);
    }
    out
}

async fn dispatch(c: &Call<'_>, v: Value) -> Result<Frames, Value> {
    match c.action {
        // Answered with the list alone (`LISTED`).
        "list_sessions" => Ok(Vec::new()),
        "update_session_flags" => sessions::update_flags(c, v).await,
        "rename_session" => sessions::rename(c, v).await,
        "delete_session" => sessions::delete(c, v).await,
        "mark_session_read" => sessions::mark_read(c, v).await,
        "get_run_state" => sessions::run_state(c, v).await,
        "clear_sessions" => sessions::clear(c).await,
        "add_session_workdir" => sessions::workdir(c, v, true).await,
        "remove_session_workdir" => sessions::workdir(c, v, false).await,
        "list_session_workdirs" => sessions::list_workdirs(c, v).await,
        "git_session_log" => sessions::git_log(c, v).await,
        "git_history" => sessions::git_history(c, v).await,
        "git_branches" => sessions::git_branches(c, v).await,
        "git_checkout" => sessions::git_checkout(c, v, "git_checkout").await,
        "git_session_checkout" => sessions::git_checkout(c, v, "git_session_checkout").await,
        "git_switch" => sessions::git_switch(c, v).await,
        "rewind_list" => branches::rewind_list(c, v).await,
        "rewind" => branches::rewind(c, v).await,
        "retry" => super::retry::retry(c, v).await,
        "load_session" => transcript::load(c, v).await,
        "list_branches" => branches::list(c, v).await,
        "checkout_branch" => branches::checkout(c, v).await,
        "list_context_commits" => contexts::list(c, v).await,
        "get_context_commit_detail" => contexts::detail(c, v).await,
        "project_file_tree" => files::tree(c, v).await,
        "project_file_read" => files::read(c, v).await,
        "project_file_write" | "project_file_create" | "project_file_rename"
        | "project_file_copy" | "project_file_delete" | "project_file_reveal" => {
            Ok(files::refuse_write(c, &v))
        }
        "set_attended" => Ok(runtime::attended(&v)),
        "set_sandbox" => Ok(runtime::sandbox(&v)),
        "list_permission_rules" => Ok(runtime::permission_rules(&v)),
        "get_project_config" => Ok(runtime::project_config(&v)),
        "list_turn_files" => undo::list_turn_files(c, v).await,
        "turn_file_diff" => undo::turn_file_diff(c, v).await,
        "revert_turn" => undo::revert_turn(c, v).await,
        "revert_preview" => undo::revert_preview(c, v).await,
        "agent_turns" => undo::agent_turns(c, v).await,
        "apply_agent_turn" => undo::apply_agent_turn(c, v).await,
        "list_projects" => projects::list(c, v).await,
        "create_project" => projects::create(c, v).await,
        "set_session_project" | "add_session_to_project" => projects::set(c, v).await,
        "relocate_project" => projects::relocate(c, v).await,
        "list_project_sessions" => projects::sessions(c, v).await,
        "remove_project" => Err(c.error(
            "unsupported",
            "projects are not removed from the web client; a project's folder, repository and sessions stay (DELETE /api/projects/{id} unregisters it)",
        )),
        "chat" => chat(c, v).await,
        "stop_run" => stop_run(c, v).await,
        "write_turn" => write_turn(c, v).await,
        "search_sessions" => search(c, v).await,
        other => Err(c.error("unknown_action", &format!("unknown action '{other}'"))),
    }
}

/// `search_sessions {q, project_id?, role?, archived?, since?, until?,
/// limit?, offset?, group?}` → `search_results {q, total, hits | sessions}`:
/// the fields and answer of `GET /api/search`.
async fn search(c: &Call<'_>, v: Value) -> Result<Frames, Value> {
    let params: crate::routes::search::SearchParams = c.parse(v)?;
    let q = params.q.clone();
    let query = params
        .into_query()
        .map_err(|e| c.error(e.code, &e.message))?;
    let found = c.engine().search(query).await.map_err(|e| c.fail(e))?;
    let answer = crate::routes::search::SearchAnswer::from(found);
    let mut data = serde_json::to_value(answer).unwrap_or_default();
    if let Some(obj) = data.as_object_mut() {
        obj.insert("q".into(), q.into());
    }
    Ok(vec![frame("search_results", data)])
}

/// `write_turn {session_id, nodes, session?, <end-of-turn fields>,
/// idempotency_key?}` → `turn_written {session_id, nodes, turn, commit, …}`:
/// a whole turn in one frame, as `POST /api/sessions/{id}/turns` with
/// `nodes`. Failures are `action_error` with the HTTP codes.
async fn write_turn(c: &Call<'_>, mut v: Value) -> Result<Frames, Value> {
    let Some(obj) = v.as_object_mut() else {
        return Err(c.error("invalid_fields", "expected an object"));
    };
    let sid = match obj.remove("session_id") {
        Some(Value::String(s)) if !s.is_empty() => s,
        _ => return Err(c.error("invalid_fields", "session_id is required")),
    };
    let key = match obj.remove("idempotency_key") {
        None | Some(Value::Null) => None,
        Some(Value::String(k)) => Some(k),
        Some(_) => return Err(c.error("invalid_fields", "idempotency_key: expected a string")),
    };
    let body: crate::routes::turns::TurnBody = c.parse(v)?;
    let Some(nodes) = body.nodes else {
        return Err(c.error("invalid_fields", "nodes is required"));
    };
    let mut end = body.end;
    end.idempotency_key = key.filter(|k| !k.trim().is_empty());
    let create = body.session.unwrap_or_default().into_meta(sid.clone());
    let turn = c
        .engine()
        .whole_turn(&sid, nodes, create, end)
        .await
        .map_err(|e| c.fail(e))?;
    crate::routes::turns::announce_skipped(c.engine(), &sid, &turn.outcome);
    Ok(vec![frame(
        "turn_written",
        crate::routes::ForSession {
            session_id: &sid,
            data: &turn,
        },
    )])
}

#[derive(Deserialize)]
struct StopRun {
    session_id: String,
}

/// `stop_run {session_id}` → `run_stopped {session_id, turn, commit,
/// status}`: the runner is told (`run_cancelled`), the open turn ends
/// `cancelled`, its nodes committed.
async fn stop_run(c: &Call<'_>, v: Value) -> Result<Frames, Value> {
    let m: StopRun = c.parse(v)?;
    let out = crate::state::runners::stop(c.state, &m.session_id)
        .await
        .map_err(|e| c.fail(e))?;
    Ok(vec![frame(
        "run_stopped",
        json!({"session_id": m.session_id, "turn": out.turn, "commit": out.commit, "status": out.status}),
    )])
}

#[derive(Deserialize)]
struct Chat {
    #[serde(default)]
    session_id: Option<String>,
    #[serde(default)]
    project_id: Option<String>,
    #[serde(default, alias = "content")]
    text: Value,
    #[serde(default, alias = "msg_id")]
    message_id: Option<String>,
    /// Queue instead of refusing while a turn is running.
    #[serde(default)]
    queue: bool,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    permission_mode: Option<String>,
}

/// `chat`: a user message from a UI. The first frame of a draft creates
/// the session (with that frame's project, so the repo lands inside it)
/// before anything else is written. While a turn runs it is refused with
/// `chat_response {type: "error", code: "run_active"}` and no ack, unless
/// the client asked for queueing. A dispatched message is followed by a
/// `sessions_list` broadcast, as in the original.
async fn chat(c: &Call<'_>, v: Value) -> Result<Frames, Value> {
    let m: Chat = c.parse(v)?;
    let session_id = m
        .session_id
        .clone()
        .unwrap_or_else(openprogram_actors::ids::new_id);
    // A retry waiting for its runner holds the session (no turn is open
    // yet for the engine to refuse with).
    if c.state.runners.is_retry(&session_id) {
        return Ok(vec![frame(
            "chat_response",
            json!({ "type": "error", "code": "run_active", "content": RUN_ACTIVE, "session_id": session_id }),
        )]);
    }
    let spec = CreateSpec {
        project_id: m.project_id,
        model: m.model,
        ..CreateSpec::default()
    };
    let node = NewNode {
        id: m.message_id,
        role: Role::User,
        content: m.text.clone(),
        predecessor: None,
        caller: None,
        metadata: Default::default(),
        name: None,
        output: None,
        at: None,
    };
    let posted = c
        .engine()
        .post(
            &session_id,
            node,
            Some(spec.into_meta(session_id.clone())),
            m.queue,
        )
        .await;
    let permission_mode = m.permission_mode.unwrap_or_else(|| "ask".into());
    let execution_id = format!("exec_{}", openprogram_actors::ids::new_id());
    let ack = match posted {
        Ok(Posted::Appended(out)) => {
            // A message that opened a turn goes to the runners.
            let runner = match out.turn.filter(|_| out.created) {
                Some(turn) => {
                    let req =
                        super::runs::request_for(c.engine(), &session_id, turn, &out.node).await;
                    super::runs::dispatch(c.state, req).await
                }
                None => Value::Null,
            };
            json!({
                "session_id": session_id,
                "msg_id": out.node.id,
                "text": out.node.text(),
                "execution_id": execution_id,
                "permission_mode": permission_mode,
                "turn": out.turn,
                "queued": false,
                "runner": runner,
            })
        }
        Ok(Posted::Queued {
            message_id,
            position,
            ..
        }) => json!({
            "session_id": session_id,
            "msg_id": message_id,
            "text": m.text.as_str().map(str::to_owned).unwrap_or_else(|| m.text.to_string()),
            "execution_id": execution_id,
            "permission_mode": permission_mode,
            "queued": true,
            "position": position,
        }),
        Err(e) if e.is_run_active() => {
            return Ok(vec![frame(
                "chat_response",
                json!({ "type": "error", "code": "run_active", "content": RUN_ACTIVE, "session_id": session_id }),
            )])
        }
        Err(e) => return Err(c.fail(e)),
    };
    if c.engine().hub().listening() {
        match sessions::list_text(c.state, None).await {
            Ok(frame) => c.engine().hub().publish_frame(frame),
            Err(e) => tracing::warn!(error = %e, "sessions_list broadcast skipped"),
        }
    }
    Ok(vec![frame("chat_ack", ack)])
}
