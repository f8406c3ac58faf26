//! `retry {session_id, node_id}`: another answer to the message a reply
//! answered. Nothing is written here: the request is offered to the
//! runners like a new message (`run_requested` with `retry_of`, the reply,
//! and `predecessor`, the message to answer); the runner that claims it
//! appends its answer with that `predecessor`, which opens the retried
//! turn on a `retry-<id>` branch (the `‹ n / m ›` switch). A retry that
//! nobody answers yet holds the session like a waiting message; stopping
//! it leaves the session as it was.

use openprogram_actors::meta::Status;
use openprogram_actors::node::Role;
use openprogram_actors::session::RUN_ACTIVE;
use serde::Deserialize;
use serde_json::{json, Value};

use super::frames::{frame, Call, Frames};

#[derive(Deserialize)]
struct Retry {
    session_id: String,
    /// The reply to answer again.
    node_id: String,
}

pub async fn retry(c: &Call<'_>, v: Value) -> Result<Frames, Value> {
    let m: Retry = c.parse(v)?;
    let engine = c.engine();
    let meta = engine.meta(&m.session_id).await.map_err(|e| c.fail(e))?;
    if meta.open_turn.is_some()
        || meta.status == Status::Running
        || c.state.runners.has_run(&m.session_id)
    {
        return Err(c.error("run_active", RUN_ACTIVE));
    }
    let chain = engine
        .branch(&m.session_id, Some(m.node_id.clone()))
        .await
        .map_err(|e| c.fail(e))?;
    let is_reply = chain
        .last()
        .is_some_and(|n| n.role == Role::Assistant && n.caller.is_none());
    if !is_reply {
        return Err(c.error(
            "invalid_input",
            "only a reply (an assistant message) can be retried",
        ));
    }
    let asked = |n: &&openprogram_actors::node::Node| n.role == Role::User && n.caller.is_none();
    let Some(user) = chain.iter().rev().find(asked) else {
        return Err(c.error("invalid_input", "this reply answers no message"));
    };
    let turn = chain.iter().filter(asked).count() as u64;
    let mut req = super::runs::request_for(engine, &m.session_id, turn, user).await;
    req.retry_of = Some(m.node_id.clone());
    req.predecessor = Some(user.id.clone());
    if !c.state.runners.answers(&req) {
        return Err(c.error(
            "no_runner",
            "no runner answers this session: start one (`openprogram runner llm`) and retry",
        ));
    }
    let runner = super::runs::dispatch(c.state, req).await;
    Ok(vec![frame(
        "retry_ack",
        json!({"session_id": m.session_id, "msg_id": user.id, "retry_of": m.node_id,
               "turn": turn, "runner": runner}),
    )])
}
