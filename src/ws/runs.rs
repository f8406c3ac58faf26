//! The runner actions and the runs' steps on the engine: the connection's
//! `register_runner` and `claim_run`, the offer of a composer message
//! (`dispatch`), stopping a run, naming the runner on the turn, and the
//! waiting messages recovered after a restart. The hub itself is
//! `runners::Runners`.

use serde::Deserialize;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use crate::state::runners::{AllTag, RunRequest, Scope};

#[derive(Deserialize)]
struct Register {
    name: String,
    #[serde(default = "all")]
    sessions: Scope,
}

fn all() -> Scope {
    Scope::All(AllTag::All)
}

#[derive(Deserialize)]
struct Claim {
    session_id: String,
    msg_id: String,
}

/// The connection's side of the runner actions (`register_runner`,
/// `claim_run`): they need the connection itself, so the socket's loop
/// answers them; `None` for every other frame.
pub async fn connection_action(
    state: &crate::state::AppState,
    text: &str,
    tx: &mpsc::Sender<String>,
    id: &mut Option<u64>,
) -> Option<Vec<String>> {
    if !(text.contains("register_runner") || text.contains("claim_run")) {
        return None;
    }
    let mut v: Value = serde_json::from_str(text).ok()?;
    let obj = v.as_object_mut()?;
    let request_id = obj.remove("request_id");
    let action = obj.remove("action")?.as_str()?.to_string();
    let c = super::frames::Call::for_frame(state, &action, obj);
    let frames = match action.as_str() {
        "register_runner" => match c.parse::<Register>(v) {
            Ok(r) if r.name.trim().is_empty() || r.name.len() > 200 => {
                vec![c.error("invalid_fields", "name: 1 to 200 bytes")]
            }
            Ok(r) => {
                if let Some(old) = id.take() {
                    state.runners.unregister(old);
                }
                // Messages left waiting by an earlier run of the server.
                recover_waiting(state).await;
                let (new, offered) = state
                    .runners
                    .register(r.name.clone(), r.sessions, tx.clone());
                *id = Some(new);
                tracing::info!(runner = %r.name, offered, "runner registered");
                vec![super::frames::frame(
                    "runner_registered",
                    json!({"runner_id": new, "name": r.name, "offered": offered}),
                )]
            }
            Err(e) => vec![e],
        },
        "claim_run" => match c.parse::<Claim>(v) {
            Ok(claim) => {
                match id.map(|me| state.runners.claim(me, &claim.session_id, &claim.msg_id)) {
                    None => vec![c.error("not_a_runner", "register_runner first")],
                    Some(Err(code)) => vec![c.error(
                    code,
                    match code {
                        "run_taken" => "another runner claimed this run",
                        "unknown_run" => {
                            "no run waits for this message (answered, stopped, or never offered)"
                        }
                        _ => "register_runner first",
                    },
                )],
                    Some(Ok(req)) => {
                        let patch = openprogram_actors::meta::MetaPatch {
                            status: Some(openprogram_actors::meta::Status::Running),
                            ..Default::default()
                        };
                        if let Err(e) = state.engine.update_meta(&req.session_id, patch).await {
                            tracing::warn!(session = %req.session_id, error = %e, "claimed run: status not set");
                        }
                        name_runner(state, &req).await;
                        vec![super::frames::frame("run_claimed", json!(req))]
                    }
                }
            }
            Err(e) => vec![e],
        },
        _ => return None,
    };
    Some(super::frames::to_text(frames, request_id.as_ref()))
}

/// What to offer for a user message that opened `turn` of `session_id`.
pub async fn request_for(
    engine: &openprogram_actors::Engine,
    session_id: &str,
    turn: u64,
    node: &openprogram_actors::node::Node,
) -> RunRequest {
    let project_id = engine
        .meta(session_id)
        .await
        .map(|m| m.project_id)
        .unwrap_or_else(|_| "default".into());
    let cwd = match project_id.as_str() {
        "default" => None,
        pid => engine
            .project(pid)
            .await
            .ok()
            .map(|p| p.path.display().to_string()),
    };
    let history_cursor = engine
        .changes(Some("latest"), 1, std::time::Duration::ZERO)
        .await
        .ok()
        .map(|p| p.next_cursor);
    RunRequest {
        session_id: session_id.to_string(),
        turn,
        msg_id: node.id.clone(),
        text: node.text(),
        project_id,
        cwd,
        history_cursor,
        retry_of: None,
        predecessor: None,
    }
}

/// Offer a user message to the runners. With none to answer it, the
/// session waits (`needs_input`: not `running`, which nothing would end).
/// The ack's `runner` field: `{offered, waiting}`.
pub async fn dispatch(state: &crate::state::AppState, req: RunRequest) -> Value {
    let session_id = req.session_id.clone();
    let (matching, offered) = state.runners.offer(req);
    if matching == 0 {
        let patch = openprogram_actors::meta::MetaPatch {
            status: Some(openprogram_actors::meta::Status::NeedsInput),
            ..Default::default()
        };
        if let Err(e) = state.engine.update_meta(&session_id, patch).await {
            tracing::warn!(session = %session_id, error = %e, "waiting message: status not set");
        }
    }
    json!({"offered": offered, "waiting": matching == 0})
}

/// The runs of a runner that left wait again: their sessions show
/// `needs_input` (never `running` with nobody to end it) until a runner
/// claims them or the user stops them. A run another runner claimed
/// meanwhile is left alone.
pub async fn follow_released(
    runners: std::sync::Arc<crate::state::runners::Runners>,
    engine: openprogram_actors::Engine,
) {
    let mut released = runners.released();
    while let Some(session_id) = released.recv().await {
        if !runners.waits(&session_id) {
            continue;
        }
        let patch = openprogram_actors::meta::MetaPatch {
            status: Some(openprogram_actors::meta::Status::NeedsInput),
            ..Default::default()
        };
        match engine.update_meta(&session_id, patch).await {
            Ok(_) => {
                tracing::info!(session = %session_id, "its runner left: the run waits for another")
            }
            Err(e) => {
                tracing::warn!(session = %session_id, error = %e, "released run: status not set")
            }
        }
    }
}

/// The turn names its runner: `metadata.runner` on the user message (a
/// node of the open turn), shown by the web UI.
async fn name_runner(state: &crate::state::AppState, req: &RunRequest) {
    // A retry's message belongs to an ended turn: its reply names the
    // runner instead (the runner writes it).
    if req.retry_of.is_some() {
        return;
    }
    let name = state.runners.claimer(&req.session_id).unwrap_or_default();
    let mut metadata = serde_json::Map::new();
    metadata.insert("runner".into(), Value::String(name));
    let patch = openprogram_actors::session::NodePatch {
        metadata: Some(metadata),
        ..Default::default()
    };
    if let Err(e) = state
        .engine
        .update_node(&req.session_id, &req.msg_id, patch)
        .await
    {
        tracing::warn!(session = %req.session_id, error = %e, "claimed run: the runner is not named on the turn");
    }
}

/// At most this many waiting sessions are recovered at a registration.
const RECOVER_AT_MOST: usize = 100;

/// The runs a restart forgot: sessions waiting for a runner (`needs_input`
/// with their turn still open on a user message) are kept as waiting runs,
/// so the runner registering now is offered them.
async fn recover_waiting(state: &crate::state::AppState) {
    use openprogram_actors::meta::Status;
    let query = openprogram_actors::registry::ListQuery {
        status: Some(Status::NeedsInput),
        limit: openprogram_actors::limit::ListLimit::largest(),
        ..Default::default()
    };
    let Ok(page) = state.engine.list(query).await else {
        return;
    };
    for row in page.sessions.into_iter().take(RECOVER_AT_MOST) {
        if state.runners.has_run(&row.id) {
            continue;
        }
        let Ok(meta) = state.engine.meta(&row.id).await else {
            continue;
        };
        let Some(open) = meta.open_turn else {
            continue;
        };
        let Ok(nodes) = state.engine.nodes(&row.id).await else {
            continue;
        };
        let Some(user) = nodes.iter().find(|n| n.id == open.user_node) else {
            continue;
        };
        let req = request_for(&state.engine, &row.id, open.number, user).await;
        state.runners.keep_waiting(req);
    }
}
