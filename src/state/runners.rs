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

use openprogram_actors::meta::{MetaPatch, Status};
use openprogram_actors::session::TurnOutcome;
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
    /// A retry: the reply answered again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_of: Option<String>,
    /// A retry: the message the new answer follows (`msg_id`); the runner
    /// appends its reply with this `predecessor`, which opens the retried
    /// turn on a branch of its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predecessor: Option<String>,
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
    /// Where released runs are told (`Runners::released`).
    released: Option<mpsc::UnboundedSender<String>>,
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

    /// A runner is gone: its runs are released and offered again. The
    /// sessions of the runs it held (they wait again: `runs::released`).
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
            if let Some(tx) = &inner.released {
                let _ = tx.send(req.session_id.clone());
            }
        }
    }

    /// The sessions whose runs a leaving runner released, as they are
    /// released (one follower: `runs::follow_released`).
    pub fn released(&self) -> mpsc::UnboundedReceiver<String> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.lock().released = Some(tx);
        rx
    }

    /// Whether the run of `session_id` waits for a runner (known, and
    /// claimed by none).
    pub fn waits(&self, session_id: &str) -> bool {
        self.lock()
            .runs
            .get(session_id)
            .is_some_and(|r| r.claimed_by.is_none())
    }

    /// A user message to answer: offered to the matching runners. How many
    /// match it (0: it waits for one), and how many were sent it.
    pub fn offer(&self, req: RunRequest) -> (usize, usize) {
        let mut inner = self.lock();
        let matching = inner
            .runners
            .values()
            .filter(|r| r.scope.matches(&req))
            .count();
        let sent = inner.offer(&req, None);
        inner.runs.insert(
            req.session_id.clone(),
            Run {
                req,
                claimed_by: None,
                streamed: None,
            },
        );
        (matching, sent)
    }

    /// Whether any run is waiting or being answered.
    pub fn has_runs(&self) -> bool {
        !self.lock().runs.is_empty()
    }

    /// Whether a registered runner's scope takes `req`.
    pub fn answers(&self, req: &RunRequest) -> bool {
        self.lock().runners.values().any(|r| r.scope.matches(req))
    }

    /// Whether the run of `session_id` is a retry (no turn is open for it
    /// until its runner writes).
    pub fn is_retry(&self, session_id: &str) -> bool {
        self.lock()
            .runs
            .get(session_id)
            .is_some_and(|r| r.req.retry_of.is_some())
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
    /// told (`run_cancelled`). The run, if there was one.
    pub fn cancel(&self, session_id: &str) -> Option<RunRequest> {
        let mut inner = self.lock();
        let run = inner.runs.remove(session_id)?;
        if let Some(r) = run.claimed_by.and_then(|by| inner.runners.get(&by)) {
            let _ = r.tx.try_send(text_frame(
                "run_cancelled",
                json!({"session_id": session_id, "msg_id": run.req.msg_id}),
            ));
        }
        Some(run.req)
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
        // Nothing to follow while no run is waiting or answered.
        if !runners.has_runs() {
            continue;
        }
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

/// Stop the run of `session_id`: its runner is told, the open turn ends
/// `cancelled` (the session `idle` again, the partial reply marked
/// `stopped`), its nodes kept and committed. A retry stopped before its
/// runner wrote anything leaves the session as it was.
pub async fn stop(
    state: &super::AppState,
    session_id: &str,
) -> Result<openprogram_actors::session::TurnOutcome, openprogram_actors::EngineError> {
    if let Some(run) = state.runners.cancel(session_id) {
        // The original web client closes the reply it was streaming.
        state.engine.publish(
            "chat_response",
            json!({"type": "cancelled", "msg_id": run.msg_id, "session_id": session_id}),
        );
        if run.retry_of.is_some() {
            if let Some(out) = withdrawn(state, session_id).await? {
                return Ok(out);
            }
        }
    }
    let end = openprogram_actors::session::EndTurn {
        outcome: openprogram_actors::session::Outcome::Cancelled,
        ..Default::default()
    };
    state.engine.end_turn(session_id, end).await
}

/// A retry stopped before its runner wrote anything: no turn was opened,
/// so nothing ends; the session is `idle` again, at the turn it was at.
async fn withdrawn(
    state: &super::AppState,
    session_id: &str,
) -> Result<Option<TurnOutcome>, openprogram_actors::EngineError> {
    let meta = state.engine.meta(session_id).await?;
    if meta.open_turn.is_some() {
        return Ok(None);
    }
    let patch = MetaPatch {
        status: Some(Status::Idle),
        ..Default::default()
    };
    state.engine.update_meta(session_id, patch).await?;
    let tip = state
        .engine
        .branches(session_id)
        .await?
        .into_iter()
        .find(|b| b.current);
    Ok(Some(TurnOutcome {
        turn: meta.last_turn.map(|t| t.number).unwrap_or(meta.turn_count),
        commit: tip.as_ref().map(|b| b.commit.clone()).unwrap_or_default(),
        short_sha: tip.map(|b| b.short_sha).unwrap_or_default(),
        status: Status::Idle,
        project_commit: None,
        project_commit_skipped: None,
        title_plan: None,
        next_turn: None,
        repeated: false,
    }))
}
