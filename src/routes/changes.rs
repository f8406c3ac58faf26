//! `GET /api/changes`: the change feed (every session commit, agent
//! project commit, deletion and archiving, in the order they were made
//! durable) after a cursor, optionally waiting for the next event
//! (long-poll); `GET /api/changes/stream`: the same as server-sent events.

use std::collections::VecDeque;
use std::time::Duration;

use actix_web::{web, HttpRequest, HttpResponse};
use openprogram_actors::engine::{ChangeItem, ChangesPage, MAX_WAIT};
use openprogram_actors::limit::Limit;
use openprogram_actors::Engine;
use serde::Deserialize;

use crate::error::ApiError;
use crate::state::AppState;

#[derive(Debug, Deserialize, utoipa::IntoParams)]
pub struct ChangesParams {
    /// The cursor of the last event read (`next_cursor`, or an event's
    /// `cursor`); none: from the oldest event; `latest`: only what comes
    /// from now on.
    #[serde(default)]
    pub since: Option<String>,
    /// At most this many events (1–1000, default 100).
    #[serde(default)]
    #[param(value_type = Option<usize>)]
    pub limit: Limit<100, 1000>,
    /// Seconds to wait for the next event when there is none yet (0–60).
    #[serde(default)]
    pub wait: Option<f64>,
}

fn wait_of(wait: Option<f64>) -> Result<Duration, ApiError> {
    match wait {
        None => Ok(Duration::ZERO),
        Some(w) if w.is_finite() && (0.0..=MAX_WAIT.as_secs_f64()).contains(&w) => {
            Ok(Duration::from_secs_f64(w))
        }
        Some(w) => Err(ApiError::bad_request(
            "invalid_input",
            format!("wait must be 0..={} seconds, not {w}", MAX_WAIT.as_secs()),
        )),
    }
}

/// `GET /api/changes`.
#[utoipa::path(get, path = "/api/changes", tag = "changes", summary = "The change feed after a cursor (long-poll with wait)", params(ChangesParams), responses((status = 200, description = "a page of events and the cursor to continue from", body = ChangesPage), (status = 400, description = "invalid_cursor, invalid_input", body = crate::schemas::ErrorBody), (status = 404, description = "cursor_expired", body = crate::schemas::ErrorBody)))]
pub async fn list(
    state: web::Data<AppState>,
    query: web::Query<ChangesParams>,
) -> Result<HttpResponse, ApiError> {
    let q = query.into_inner();
    let wait = wait_of(q.wait)?;
    let mut shutdown = state.shutdown.clone();
    tokio::select! {
        page = state.engine.changes(q.since.as_deref(), q.limit.get(), wait) => {
            Ok(HttpResponse::Ok().json(page?))
        }
        // The server is stopping: the reader asks again (elsewhere, later).
        _ = shutdown.wait_for(|stopping| *stopping) => {
            Err(openprogram_actors::EngineError::Unavailable.into())
        }
    }
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
pub struct StreamParams {
    /// As for `GET /api/changes`; a `Last-Event-ID` header wins.
    #[serde(default)]
    pub since: Option<String>,
}

/// How long a stream stays quiet before a keep-alive comment.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

struct Stream {
    engine: Engine,
    shutdown: tokio::sync::watch::Receiver<bool>,
    cursor: Option<String>,
    pending: VecDeque<ChangeItem>,
    done: bool,
}

fn frame(item: &ChangeItem) -> web::Bytes {
    let data = serde_json::to_string(item).unwrap_or_default();
    web::Bytes::from(format!(
        "id: {}\nevent: change\ndata: {data}\n\n",
        item.cursor
    ))
}

/// `GET /api/changes/stream`.
#[utoipa::path(get, path = "/api/changes/stream", tag = "changes", summary = "The change feed as server-sent events (id: the event's cursor)", params(StreamParams), responses((status = 200, description = "text/event-stream: `change` events, each `data` one event as in GET /api/changes", content_type = "text/event-stream", body = String), (status = 400, description = "invalid_cursor", body = crate::schemas::ErrorBody)))]
pub async fn stream(
    state: web::Data<AppState>,
    req: HttpRequest,
    query: web::Query<StreamParams>,
) -> Result<HttpResponse, ApiError> {
    let since = req
        .headers()
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .or(query.into_inner().since);
    // Checked before the stream starts, so a bad cursor is a 400.
    let first = state
        .engine
        .changes(since.as_deref(), 100, Duration::ZERO)
        .await?;
    let start = Stream {
        engine: state.engine.clone(),
        shutdown: state.shutdown.clone(),
        cursor: Some(first.next_cursor.clone()),
        pending: first.events.into(),
        done: false,
    };
    let body = futures_util::stream::unfold(start, |mut s| async move {
        if s.done {
            return None;
        }
        if let Some(item) = s.pending.pop_front() {
            let bytes = frame(&item);
            return Some((Ok::<_, actix_web::Error>(bytes), s));
        }
        let next = tokio::select! {
            next = s.engine.changes(s.cursor.as_deref(), 100, KEEP_ALIVE) => next,
            // The server is stopping: the stream ends (the client
            // reconnects with Last-Event-ID).
            _ = s.shutdown.wait_for(|stopping| *stopping) => return None,
        };
        match next {
            Ok(page) if page.events.is_empty() => {
                Some((Ok(web::Bytes::from_static(b": keep-alive\n\n")), s))
            }
            Ok(page) => {
                s.cursor = Some(page.next_cursor);
                s.pending = page.events.into();
                let item = s.pending.pop_front()?;
                Some((Ok(frame(&item)), s))
            }
            Err(e) => {
                s.done = true;
                let data = serde_json::json!({"code": e.code(), "error": e.client_message()});
                Some((
                    Ok(web::Bytes::from(format!("event: error\ndata: {data}\n\n"))),
                    s,
                ))
            }
        }
    });
    Ok(HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header(("cache-control", "no-store"))
        .insert_header(("x-accel-buffering", "no"))
        .streaming(body))
}
