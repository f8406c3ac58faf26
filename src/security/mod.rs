//! The perimeter, one middleware in front of every route and the WebSocket
//! upgrade, in this order:
//! 1. `Host` must name this server (`hosts.rs`) → else 403 `forbidden_host`;
//! 2. an `Origin` must be the server's own or configured → else 403
//!    `forbidden_origin`; configured cross origins get CORS headers, and
//!    their preflights an answer;
//! 3. the token, when the server demands one (`token.rs`) → else 401
//!    `unauthorized` (not for the web UI's page and assets, which hold no
//!    data: the page asks for the token);
//! 4. a body must have the route's content type → else 415;
//! 5. a body (or a WebSocket frame) that stalls is cut off (`stall.rs`).
//!
//! See docs/SECURITY.md for the threat model.

pub mod hosts;
pub mod stall;
pub mod token;

use std::time::Duration;

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{Payload, ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderValue};
use actix_web::http::{Method, StatusCode};
use actix_web::middleware::Next;
use actix_web::{web, HttpMessage, HttpResponse, ResponseError};

use crate::error::ApiError;
use hosts::{Cross, HostRules};

/// The routes whose body is a git bundle rather than JSON.
pub const BUNDLE_ROUTE: &str = "/api/sessions/import";
/// Replica pushes between cluster nodes: a git pack, not JSON.
pub const REPLICA_ROUTE: &str = "/cluster/v1/replicas/";

/// Whether a route's body is binary (a bundle, a replica push).
fn binary_body(path: &str) -> bool {
    path == BUNDLE_ROUTE || path.starts_with(REPLICA_ROUTE)
}

/// What the perimeter checks, built once at startup.
pub struct Perimeter {
    pub hosts: HostRules,
    /// `Some` when every request must carry it.
    pub token: Option<String>,
    pub request_timeout: Duration,
    /// Largest WebSocket frame, in bytes.
    pub frame_limit: usize,
}

fn refuse(status: StatusCode, code: &'static str, message: &str) -> HttpResponse {
    ApiError::new(status, code, message).error_response()
}

/// The middleware (`App::wrap(from_fn(security::guard))`).
pub async fn guard(
    mut req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let Some(p) = req.app_data::<web::Data<Perimeter>>().cloned() else {
        return Ok(req.into_response(refuse(
            StatusCode::INTERNAL_SERVER_ERROR,
            "misconfigured",
            "the security perimeter is not configured",
        )));
    };
    match check(&req, &p) {
        Verdict::Answer(resp) => Ok(req.into_response(resp)),
        Verdict::Pass(cross) => {
            let payload = req.take_payload();
            let guarded: std::pin::Pin<
                Box<
                    dyn futures_util::Stream<
                        Item = Result<actix_web::web::Bytes, actix_web::error::PayloadError>,
                    >,
                >,
            > = if req.path() == "/ws" {
                Box::pin(stall::FrameGuard::new(
                    payload,
                    p.frame_limit,
                    p.request_timeout,
                ))
            } else {
                // `/mcp` checks its own body (a JSON-RPC batch is an array).
                let json = !binary_body(req.path()) && req.path() != "/mcp";
                Box::pin(stall::BodyDeadline::new(payload, p.request_timeout, json))
            };
            let guarded = Payload::Stream { payload: guarded };
            req.set_payload(guarded);
            let mut res = next.call(req).await?.map_into_boxed_body();
            if let Some(origin) = cross {
                cors_headers(res.headers_mut(), &origin);
            }
            Ok(res)
        }
    }
}

enum Verdict {
    /// Answered here: a refusal, or a preflight's answer.
    Answer(HttpResponse),
    /// Served; with the cross origin to answer CORS for.
    Pass(Option<HeaderValue>),
}

fn check(req: &ServiceRequest, p: &Perimeter) -> Verdict {
    let headers = req.headers();
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .or_else(|| req.uri().authority().map(|a| a.to_string()));
    let Some(host) = host.filter(|h| p.hosts.host_allowed(h)) else {
        return Verdict::Answer(refuse(
            StatusCode::FORBIDDEN,
            "forbidden_host",
            "this server does not answer to that Host (see server.allowed_hosts)",
        ));
    };
    let mut cross = None;
    if let Some(origin) = headers.get(header::ORIGIN) {
        let allowed = origin
            .to_str()
            .ok()
            .and_then(|o| p.hosts.origin_allowed(o, &host));
        match allowed {
            None => {
                return Verdict::Answer(refuse(
                    StatusCode::FORBIDDEN,
                    "forbidden_origin",
                    "requests from this page's origin are not allowed (see server.allowed_origins)",
                ))
            }
            Some(Cross::Yes) => cross = Some(origin.clone()),
            Some(Cross::No) => {}
        }
    }
    if req.method() == Method::OPTIONS
        && headers.contains_key(header::ACCESS_CONTROL_REQUEST_METHOD)
    {
        let mut resp = HttpResponse::NoContent().finish();
        if let Some(origin) = &cross {
            cors_headers(resp.headers_mut(), origin);
            let h = resp.headers_mut();
            h.insert(
                header::ACCESS_CONTROL_ALLOW_METHODS,
                HeaderValue::from_static("GET, POST, PUT, PATCH, DELETE"),
            );
            h.insert(
                header::ACCESS_CONTROL_ALLOW_HEADERS,
                HeaderValue::from_static("authorization, content-type, x-request-id"),
            );
            h.insert(
                header::ACCESS_CONTROL_MAX_AGE,
                HeaderValue::from_static("600"),
            );
        }
        return Verdict::Answer(resp);
    }
    if let Some(expected) = p
        .token
        .as_ref()
        .filter(|_| !crate::web::is_ui_path(req.path()))
    {
        let ok = token::presented(req).is_some_and(|t| token::matches(expected, &t));
        if !ok {
            let mut resp = refuse(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "send the API token as \"Authorization: Bearer <token>\" (see <state>/token)",
            );
            resp.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return Verdict::Answer(resp);
        }
    }
    if let Some(resp) = content_type_refusal(req) {
        return Verdict::Answer(resp);
    }
    Verdict::Pass(cross)
}

/// A body must be JSON, except the bundle of an import and a replica push.
fn content_type_refusal(req: &ServiceRequest) -> Option<HttpResponse> {
    let headers = req.headers();
    let length = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let has_body = length.is_some_and(|l| l > 0) || headers.contains_key(header::TRANSFER_ENCODING);
    if !has_body {
        return None;
    }
    let ct = req.content_type().to_ascii_lowercase();
    let (ok, wanted) = if binary_body(req.path()) {
        (
            ct == "application/x-git-bundle" || ct == "application/octet-stream",
            "application/x-git-bundle (or application/octet-stream)",
        )
    } else {
        (ct == "application/json", "application/json")
    };
    (!ok).then(|| {
        refuse(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            &format!("expected Content-Type: {wanted}"),
        )
    })
}

fn cors_headers(h: &mut header::HeaderMap, origin: &HeaderValue) {
    h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
    h.insert(header::VARY, HeaderValue::from_static("Origin"));
}
