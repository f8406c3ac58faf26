//! Runners: agent runtimes connected over the WebSocket that answer what
//! people type in the composer. A runner registers (`register_runner
//! {name, sessions: "all" | {projects: […]} | {sessions: […]}}`); a user
//! message sent with `chat` is offered to every matching runner as
//! `run_requested {session_id, turn, msg_id, text, project_id, cwd,
//! history_cursor}`; the first `claim_run` wins (the others get
//! `run_taken`), so two runners never answer the same message. A runner
//! that disconnects releases its runs, which are offered again; requests
//! nobody claimed wait for the next runner that registers. The run ends
//! with its turn (`turn_ended`), or when the user stops it (`stop_run`,
//! `POST /api/sessions/{id}/runs/stop`: the runner gets `run_cancelled`).

use std::collections::HashMap;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio::sync::mpsc;

/// Frames queued for one runner; a runner that does not read them is
/// not waited for (its frames are dropped and it is offered nothing more
/// until it reads).
pub const RUNNER_QUEUE: usize = 256;

/// Which sessions a runner answers.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(untagged)]
pub enum Scope {
    /// `"all"`.
    All(AllTag),
    Projects {
        projects: Vec<String>,
    },
    Sessions {
        sessions: Vec<String>,
    },
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "lowercase")]
pub enum AllTag {
    All,
}

impl Scope {
    fn matches(&self, req: &RunRequest) -> bool {
        match self {
            Scope::All(_) => true,
            Scope::Projects { projects } => projects.contains(&req.project_id),
            Scope::Sessions { sessions } => sessions.contains(&req.session_id),
        }
    }
}

/// A user message waiting for (or being answered by) a runner.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RunRequest {
    pub session_id: String,
    pub turn: u64,
    pub msg_id: String,
    pub text: String,
    pub project_id: String,
    /// The bound project's folder (where a coding agent works).
    pub cwd: Option<String>,
    /// The change feed's cursor when the message was stored: what a
    /// runner reads to follow the session from there.
    pub history_cursor: Option<String>,
}

struct Runner {
    name: String,
    scope: Scope,
    tx: mpsc::Sender<String>,
}

struct Run {
    req: RunRequest,
    claimed_by: Option<u64>,
    /// The reply as the original web client has been sent it (its
    /// `chat_response` stream): the assistant node and its text so far.
    streamed: Option<(String, String)>,
}

#[derive(Default)]
struct Inner {
    next: u64,
    runners: HashMap<u64, Runner>,
    /// One run per session (a session has one open turn).
    runs: HashMap<String, Run>,
}

/// The registered runners and the runs between them (in `AppState`).
#[derive(Default)]
pub struct Runners {
    inner: Mutex<Inner>,
}

fn text_frame(kind: &str, data: Value) -> String {
    json!({"type": kind, "data": data}).to_string()
}

impl Inner {
    /// Offer `req` to every runner that matches it but `except`; how many.
    fn offer(&self, req: &RunRequest, except: Option<u64>) -> usize {
        let frame = text_frame("run_requested", json!(req));
        self.runners
            .iter()
            .filter(|(id, r)| Some(**id) != except && r.scope.matches(req))
            .filter(|(_, r)| r.tx.try_send(frame.clone()).is_ok())
            .count()
    }
}

impl Runners {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Register a runner; the runs waiting for one that it matches are
    /// offered to it at once.
    pub fn register(&self, name: String, scope: Scope, tx: mpsc::Sender<String>) -> (u64, usize) {
        let mut inner = self.lock();
        inner.next += 1;
        let id = inner.next;
        let waiting: Vec<RunRequest> = inner
            .runs
            .values()
            .filter(|r| r.claimed_by.is_none() && scope.matches(&r.req))
            .map(|r| r.req.clone())
            .collect();
        for req in &waiting {
            let _ = tx.try_send(text_frame("run_requested", json!(req)));
        }
        inner.runners.insert(id, Runner { name, scope, tx });
        metrics::gauge!("openprogram_runners").set(inner.runners.len() as f64);
        (id, waiting.len())
    }

    /// A runner is gone: its runs are released and offered again.
    pub fn unregister(&self, id: u64) {
        let mut inner = self.lock();
        if inner.runners.remove(&id).is_none() {
            return;
        }
        metrics::gauge!("openprogram_runners").set(inner.runners.len() as f64);
        let released: Vec<RunRequest> = inner
            .runs
            .values_mut()
            .filter(|r| r.claimed_by == Some(id))
            .map(|r| {
                r.claimed_by = None;
                r.req.clone()
            })
            .collect();
        for req in &released {
            tracing::info!(session = %req.session_id, "a runner left mid-run: the run is offered again");
            inner.offer(req, None);
        }
    }

    /// A user message to answer: offered to the matching runners; how many
    /// got it (0: it waits for one).
    pub fn offer(&self, req: RunRequest) -> usize {
        let mut inner = self.lock();
        let n = inner.offer(&req, None);
        inner.runs.insert(
            req.session_id.clone(),
            Run {
                req,
                claimed_by: None,
                streamed: None,
            },
        );
        n
    }

    /// Whether a run of `session_id` is known.
    pub fn has_run(&self, session_id: &str) -> bool {
        self.lock().runs.contains_key(session_id)
    }

    /// Keep `req` as a waiting run (offered to runners that register).
    pub fn keep_waiting(&self, req: RunRequest) {
        self.lock()
            .runs
            .entry(req.session_id.clone())
            .or_insert(Run {
                req,
                claimed_by: None,
                streamed: None,
            });
    }

    /// Whether any registered runner matches `req`.
    pub fn has_runner_for(&self, req: &RunRequest) -> bool {
        self.lock().runners.values().any(|r| r.scope.matches(req))
    }

    /// `runner` claims the run of `session_id` for `msg_id`.
    pub fn claim(
        &self,
        runner: u64,
        session_id: &str,
        msg_id: &str,
    ) -> Result<RunRequest, &'static str> {
        let mut inner = self.lock();
        let Some(scope) = inner.runners.get(&runner).map(|r| r.scope.clone()) else {
            return Err("not_a_runner");
        };
        // Only a run offered to this runner (its scope) can be claimed.
        let Some(run) = inner
            .runs
            .get_mut(session_id)
            .filter(|r| r.req.msg_id == msg_id && scope.matches(&r.req))
        else {
            return Err("unknown_run");
        };
        match run.claimed_by {
            Some(by) if by == runner => return Ok(run.req.clone()),
            Some(_) => return Err("run_taken"),
            None => run.claimed_by = Some(runner),
        }
        let req = run.req.clone();
        let taken = text_frame(
            "run_taken",
            json!({"session_id": session_id, "msg_id": msg_id}),
        );
        for (id, r) in &inner.runners {
            if *id != runner && r.scope.matches(&req) {
                let _ = r.tx.try_send(taken.clone());
            }
        }
        Ok(req)
    }

    /// The name of the runner answering `session_id`, if one claimed it.
    pub fn claimer(&self, session_id: &str) -> Option<String> {
        let inner = self.lock();
        let by = inner.runs.get(session_id)?.claimed_by?;
        inner.runners.get(&by).map(|r| r.name.clone())
    }

    /// The turn of `session_id` ended: its run is over. The user message
    /// it answered and the reply's text, for the original client's
    /// closing `chat_response`.
    pub fn finish(&self, session_id: &str) -> Option<(String, String)> {
        let run = self.lock().runs.remove(session_id)?;
        let text = run.streamed.map(|(_, t)| t).unwrap_or_default();
        Some((run.req.msg_id, text))
    }

    /// An assistant node of `session_id` now reads `text`: what the
    /// original client has not been sent yet (the user message it answers,
    /// the new text), when a run is answering that session. A reply that
    /// starts over (another node, or text that does not extend what was
    /// sent) is sent whole.
    pub fn stream(&self, session_id: &str, node_id: &str, text: &str) -> Option<(String, String)> {
        let mut inner = self.lock();
        let run = inner.runs.get_mut(session_id)?;
        let delta = match &run.streamed {
            Some((id, sent)) if id == node_id && text.starts_with(sent.as_str()) => text
                .strip_prefix(sent.as_str())
                .unwrap_or_default()
                .to_string(),
            Some((id, sent)) if id != node_id && !sent.is_empty() => format!("\n\n{text}"),
            _ => text.to_string(),
        };
        let whole = match &run.streamed {
            Some((id, sent)) if id != node_id && !sent.is_empty() => format!("{sent}\n\n{text}"),
            _ => text.to_string(),
        };
        run.streamed = Some((node_id.to_string(), whole));
        (!delta.is_empty()).then(|| (run.req.msg_id.clone(), delta))
    }

    /// The user stops the run of `session_id`: the runner answering it is
    /// told (`run_cancelled`). The user message of the run, if there was
    /// one.
    pub fn cancel(&self, session_id: &str) -> Option<String> {
        let mut inner = self.lock();
        let run = inner.runs.remove(session_id)?;
        if let Some(r) = run.claimed_by.and_then(|by| inner.runners.get(&by)) {
            let _ = r.tx.try_send(text_frame(
                "run_cancelled",
                json!({"session_id": session_id, "msg_id": run.req.msg_id}),
            ));
        }
        Some(run.req.msg_id)
    }
}

/// Follow the engine's events: a run ends with its turn.
///
/// The original web client shows a reply live from `chat_response`
/// frames: each fill of the run's assistant node is also sent as
/// `chat_response {type: "stream_event", msg_id, session_id, event: {type:
/// "text", text: <the new text>}}`, and the end as `chat_response {type:
/// "result", msg_id, session_id, content}` (`msg_id`: the user message).
pub async fn follow_turns(
    runners: std::sync::Arc<Runners>,
    engine: openprogram_actors::Engine,
    mut events: tokio::sync::broadcast::Receiver<openprogram_actors::events::Event>,
) {
    use tokio::sync::broadcast::error::RecvError;
    loop {
        let ev = match events.recv().await {
            Ok(ev) => ev,
            Err(RecvError::Lagged(_)) => continue,
            Err(RecvError::Closed) => return,
        };
        let kind = ["\"turn_ended\"", "\"node_updated\"", "\"node_appended\""]
            .into_iter()
            .find(|k| ev.frame.contains(k));
        let Some(kind) = kind else {
            continue;
        };
        let v: Value = serde_json::from_str(&ev.frame).unwrap_or_default();
        let data = &v["data"];
        let Some(sid) = data["session_id"].as_str() else {
            continue;
        };
        if kind == "\"turn_ended\"" {
            if let Some((msg_id, text)) = runners.finish(sid) {
                engine.publish(
                    "chat_response",
                    json!({"type": "result", "msg_id": msg_id, "session_id": sid, "content": text}),
                );
            }
            continue;
        }
        let node = &data["node"];
        if node["role"] != "assistant" {
            continue;
        }
        let text = match &node["content"] {
            Value::String(s) => s.clone(),
            Value::Null => String::new(),
            other => other.to_string(),
        };
        let id = node["id"].as_str().unwrap_or_default();
        if let Some((msg_id, delta)) = runners.stream(sid, id, &text) {
            engine.publish(
                "chat_response",
                json!({"type": "stream_event", "msg_id": msg_id, "session_id": sid,
                       "event": {"type": "text", "text": delta}}),
            );
        }
    }
}

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
    state: &crate::startup::AppState,
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
    let c = super::frames::Call {
        state,
        action: &action,
        session_id: obj
            .get("session_id")
            .and_then(Value::as_str)
            .map(str::to_owned),
    };
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
    }
}

/// Offer a user message to the runners. With none to answer it, the
/// session waits (`needs_input`: not `running`, which nothing would end).
/// The ack's `runner` field: `{offered, waiting}`.
pub async fn dispatch(state: &crate::startup::AppState, req: RunRequest) -> Value {
    let matching = state.runners.has_runner_for(&req);
    let session_id = req.session_id.clone();
    let offered = state.runners.offer(req);
    if !matching {
        let patch = openprogram_actors::meta::MetaPatch {
            status: Some(openprogram_actors::meta::Status::NeedsInput),
            ..Default::default()
        };
        if let Err(e) = state.engine.update_meta(&session_id, patch).await {
            tracing::warn!(session = %session_id, error = %e, "waiting message: status not set");
        }
    }
    json!({"offered": offered, "waiting": !matching})
}

/// Stop the run of `session_id`: its runner is told, the open turn ends
/// `cancelled` (the session `failed`), its nodes kept and committed.
pub async fn stop(
    state: &crate::startup::AppState,
    session_id: &str,
) -> Result<openprogram_actors::session::TurnOutcome, openprogram_actors::EngineError> {
    if let Some(msg_id) = state.runners.cancel(session_id) {
        // The original web client closes the reply it was streaming.
        state.engine.publish(
            "chat_response",
            json!({"type": "cancelled", "msg_id": msg_id, "session_id": session_id}),
        );
    }
    let end = openprogram_actors::session::EndTurn {
        outcome: openprogram_actors::session::Outcome::Cancelled,
        ..Default::default()
    };
    state.engine.end_turn(session_id, end).await
}

/// The turn names its runner: `metadata.runner` on the user message (a
/// node of the open turn), shown by the web UI.
async fn name_runner(state: &crate::startup::AppState, req: &RunRequest) {
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
async fn recover_waiting(state: &crate::startup::AppState) {
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
