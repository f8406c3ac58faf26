//! `/ws`: the WebSocket protocol (actix-ws, actorless). Client frames are
//! `{"action": ..., ...}`, server frames `{"type": ..., "data": ...}`.
//! Every client also receives the broadcasts of the event hub. A client that
//! falls behind is resynced with a fresh `sessions_list`; one that stops
//! reading (a send that does not complete in time) is dropped. Neither ever
//! delays the other clients or a writer.
//!
//! Quick actions run in the socket's loop, in arrival order, so a client
//! gets each reply before the broadcasts it causes. Slow ones (see
//! `actions::is_slow`: an LLM call, a branch switch that rewrites the work
//! tree) run in tasks of their own, so pings, broadcasts and other replies
//! keep flowing while they run; their replies arrive when they finish.

pub(crate) mod actions;
mod branches;
mod contexts;
mod files;
pub mod forward;
pub(crate) mod frames;
mod projects;
mod retry;

pub mod runs;
mod runtime;
mod sessions;
mod transcript;
mod undo;

use std::sync::Arc;
use std::time::{Duration, Instant};

use actix_web::{web, HttpRequest, HttpResponse};
use actix_ws::{AggregatedMessage, Session};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::{mpsc, Semaphore};

use crate::state::AppState;

const HEARTBEAT: Duration = Duration::from_secs(5);
const CLIENT_TIMEOUT: Duration = Duration::from_secs(20);
/// A send to a client that takes longer than this drops the client.
const SEND_TIMEOUT: Duration = Duration::from_secs(5);
/// Slow actions of one connection running at once (more wait in order).
const SLOW_IN_FLIGHT: usize = 4;

#[tracing::instrument(name = "ws_connect", skip_all)]
pub async fn connect(
    req: HttpRequest,
    body: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, actix_web::Error> {
    let (response, session, stream) = actix_ws::handle(&req, body)?;
    let stream = stream
        .max_frame_size(state.ws_frame_limit)
        .aggregate_continuations()
        .max_continuation_size(state.ws_frame_limit);
    let events = state.engine.subscribe();
    actix_web::rt::spawn(run(session, stream, events, state.into_inner()));
    Ok(response)
}

/// Send one frame; `false` when the client is gone or too slow.
async fn send(session: &mut Session, frame: &str) -> bool {
    matches!(
        tokio::time::timeout(SEND_TIMEOUT, session.text(frame.to_string())).await,
        Ok(Ok(()))
    )
}

/// Runs a connection's slow actions in tasks of their own; their replies
/// come back on one channel that the socket's loop forwards.
struct SlowActions {
    permits: Arc<Semaphore>,
    replies: mpsc::Sender<Vec<String>>,
    state: Arc<AppState>,
}

impl SlowActions {
    fn new(state: Arc<AppState>) -> (SlowActions, mpsc::Receiver<Vec<String>>) {
        let (replies, rx) = mpsc::channel(SLOW_IN_FLIGHT);
        let permits = Arc::new(Semaphore::new(SLOW_IN_FLIGHT));
        (
            SlowActions {
                permits,
                replies,
                state,
            },
            rx,
        )
    }

    /// Start `text` beside the loop if it is slow and a slot is free;
    /// otherwise hand it back to be run in order.
    fn try_spawn(&self, text: String) -> Option<String> {
        if !actions::is_slow(&text) {
            return Some(text);
        }
        let Ok(permit) = self.permits.clone().try_acquire_owned() else {
            return Some(text);
        };
        let (state, replies) = (self.state.clone(), self.replies.clone());
        actix_web::rt::spawn(async move {
            let frames = actions::handle(&state, &text).await;
            let _ = replies.send(frames).await;
            drop(permit);
        });
        None
    }
}

/// Counts the client out of `openprogram_ws_clients` however it ends,
/// and unregisters it if it was a runner (its runs are offered again).
struct ClientGone {
    state: Arc<AppState>,
    runner: Option<u64>,
}

impl Drop for ClientGone {
    fn drop(&mut self) {
        metrics::gauge!("openprogram_ws_clients").decrement(1.0);
        if let Some(id) = self.runner {
            self.state.runners.unregister(id);
        }
    }
}

async fn run(
    mut session: Session,
    mut stream: actix_ws::AggregatedMessageStream,
    mut events: tokio::sync::broadcast::Receiver<openprogram_actors::events::Event>,
    state: Arc<AppState>,
) {
    let mut heartbeat = tokio::time::interval(HEARTBEAT);
    let mut last_seen = Instant::now();
    let (slow, mut replies) = SlowActions::new(state.clone());
    let mut shutdown = state.shutdown.clone();
    metrics::gauge!("openprogram_ws_clients").increment(1.0);
    let mut gone = ClientGone {
        state: state.clone(),
        runner: None,
    };
    // Frames for this client as a runner (run offers, cancellations).
    let (runner_tx, mut runner_rx) = mpsc::channel::<String>(crate::state::runners::RUNNER_QUEUE);
    loop {
        tokio::select! {
            // The server is stopping: a close frame at once ("going away").
            _ = shutdown.wait_for(|stopping| *stopping) => {
                let _ = session.close(Some(actix_ws::CloseCode::Away.into())).await;
                return;
            }
            msg = stream.recv() => {
                last_seen = Instant::now();
                let frames = match msg {
                    Some(Ok(AggregatedMessage::Text(text))) => {
                        match runs::connection_action(&state, &text, &runner_tx, &mut gone.runner).await {
                            Some(frames) => frames,
                            None => match slow.try_spawn(text.to_string()) {
                                // Quick actions run in order, their reply
                                // before the broadcasts they cause.
                                Some(text) => actions::handle(&state, &text).await,
                                None => continue,
                            },
                        }
                    }
                    Some(Ok(AggregatedMessage::Binary(_))) => vec![actions::error_frame("binary frames are not supported; send JSON text")],
                    Some(Ok(AggregatedMessage::Ping(bytes))) => {
                        if session.pong(&bytes).await.is_err() { break; }
                        continue;
                    }
                    Some(Ok(AggregatedMessage::Pong(_))) => continue,
                    Some(Ok(AggregatedMessage::Close(_))) | None => break,
                    Some(Err(e)) => {
                        // Oversized or malformed frame: tell the client, keep going.
                        vec![actions::error_frame(&format!("bad frame: {e}"))]
                    }
                };
                for frame in frames {
                    if !send(&mut session, &frame).await { return; }
                }
            }
            Some(frame) = runner_rx.recv() => {
                if !send(&mut session, &frame).await { return; }
            }
            Some(frames) = replies.recv() => {
                for frame in frames {
                    if !send(&mut session, &frame).await { return; }
                }
            }
            ev = events.recv() => match ev {
                Ok(ev) => {
                    if !send(&mut session, &ev.frame).await { return; }
                }
                Err(RecvError::Lagged(missed)) => {
                    tracing::warn!(missed, "websocket client lagged; resyncing");
                    metrics::counter!("openprogram_ws_frames_dropped_total").increment(missed);
                    let frame = actions::sessions_list_frame(&state).await;
                    if !send(&mut session, &frame).await { return; }
                }
                Err(RecvError::Closed) => break,
            },
            _ = heartbeat.tick() => {
                if last_seen.elapsed() > CLIENT_TIMEOUT {
                    tracing::info!("websocket client timed out");
                    break;
                }
                if tokio::time::timeout(SEND_TIMEOUT, session.ping(b"")).await.map_or(true, |r| r.is_err()) {
                    return;
                }
            }
        }
    }
    let _ = session.close(None).await;
}
