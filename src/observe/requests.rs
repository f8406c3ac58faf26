//! One log line per request (method, route pattern, status, duration,
//! request id, session id), the request-id header, and the HTTP metrics.
//! An incoming `X-Request-Id` (visible ASCII, at most 128 characters) is
//! kept; otherwise one is made. Either way it is echoed in the response.

use std::time::Instant;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::middleware::Next;
use tracing::Instrument;

pub const REQUEST_ID: &str = "x-request-id";

/// A request older than this is logged and counted while it waits (when
/// the app gives no `server.slow_request_ms`).
const SLOW: std::time::Duration = std::time::Duration::from_secs(5);

/// The session a path names (`/api/sessions/{id}/…`).
fn session_of(path: &str) -> Option<&str> {
    let rest = path.strip_prefix("/api/sessions/")?;
    rest.split('/').next().filter(|s| !s.is_empty())
}

fn incoming_id(req: &ServiceRequest) -> Option<String> {
    let v = req.headers().get(REQUEST_ID)?.to_str().ok()?;
    let ok = !v.is_empty() && v.len() <= 128 && v.bytes().all(|b| b.is_ascii_graphic());
    ok.then(|| v.to_string())
}

pub async fn log_requests(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let started = Instant::now();
    let id = incoming_id(&req).unwrap_or_else(|| uuid::Uuid::new_v4().simple().to_string());
    let method = req.method().to_string();
    let span = tracing::info_span!("request", request_id = %id, method = %method, session_id = tracing::field::Empty);
    let path = req.path().to_string();
    let slow = req
        .app_data::<actix_web::web::Data<crate::state::AppState>>()
        .map_or(SLOW, |s| s.slow_request);
    let stage = openprogram_actors::stage::Stage::default();
    let call =
        openprogram_actors::stage::tracked(stage.clone(), next.call(req).instrument(span.clone()));
    tokio::pin!(call);
    // A request still waiting after `server.slow_request_ms` is logged
    // (with its session and the stage it waits in) and counted while it
    // waits, not only once it ends.
    let result = tokio::select! {
        r = &mut call => r,
        () = tokio::time::sleep(slow) => {
            let session = session_of(&path);
            span.in_scope(|| {
                tracing::warn!(path = %path, session = session.unwrap_or("-"), waited_ms = slow.as_millis() as u64, stage = stage.now(), "a request is still waiting");
            });
            metrics::counter!("openprogram_http_slow_requests_total").increment(1);
            call.await
        }
    };
    let elapsed = started.elapsed();
    let (route, status, session) = match &result {
        Ok(res) => (
            res.request()
                .match_pattern()
                .unwrap_or_else(|| "(unmatched)".into()),
            res.status().as_u16(),
            res.request().match_info().get("id").map(str::to_owned),
        ),
        Err(e) => (
            "(error)".to_string(),
            e.as_response_error().status_code().as_u16(),
            None,
        ),
    };
    if let Some(sid) = &session {
        span.record("session_id", tracing::field::display(sid));
    }
    span.in_scope(|| {
        tracing::info!(
            route = %route,
            status,
            duration_ms = elapsed.as_secs_f64() * 1e3,
            "request"
        )
    });
    let status_label = status.to_string();
    metrics::counter!("openprogram_http_requests_total", "method" => method.clone(), "route" => route.clone(), "status" => status_label).increment(1);
    metrics::histogram!("openprogram_http_request_duration_seconds", "method" => method, "route" => route)
        .record(elapsed.as_secs_f64());
    result.map(|mut res| {
        if let Ok(v) = HeaderValue::from_str(&id) {
            res.headers_mut()
                .insert(HeaderName::from_static(REQUEST_ID), v);
        }
        res
    })
}
