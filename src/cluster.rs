//! The service's side of a cluster (docs/CLUSTER.md): requests for a
//! session another node owns are forwarded to it once; the node-to-node
//! routes take replica pushes and show the node's view.

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::{header, Method, StatusCode};
use actix_web::middleware::Next;
use actix_web::{web, HttpMessage, HttpRequest, HttpResponse};
use futures_util::StreamExt;
use openprogram_actors::cluster::{Cluster, ClusterError, Place};
use openprogram_actors::EngineError;

use crate::error::ApiError;
use crate::state::AppState;

/// Set on a forwarded request: the node that forwarded it.
pub const FORWARDED_BY: &str = "X-OpenProgram-Forwarded-By";

/// Largest replica push taken (a whole session's history the first time).
pub const PUSH_LIMIT: usize = 1 << 30;

/// Requests bodies forwarded at most this large.
const FORWARD_LIMIT: usize = 256 << 20;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::scope("/cluster/v1")
            .app_data(web::PayloadConfig::new(PUSH_LIMIT))
            .route("/status", web::get().to(status))
            .route("/replicas/{id}", web::post().to(receive))
            .route("/replicas/{id}", web::delete().to(drop_replica)),
    );
}

pub fn cluster_of(state: &AppState) -> Result<Cluster, ApiError> {
    state
        .engine
        .cluster()
        .cloned()
        .ok_or_else(|| ApiError::not_found("this server is not a cluster node"))
}

pub fn api(e: ClusterError) -> ApiError {
    let seen = match &e {
        ClusterError::StaleEpoch { seen, .. } => Some(*seen),
        _ => None,
    };
    let mut err = ApiError::from(EngineError::from(e));
    if let Some(seen) = seen {
        err.details = Some(serde_json::json!({ "seen": seen }));
    }
    err
}

async fn status(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(cluster_of(&state)?.status()))
}

async fn receive(
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let cluster = cluster_of(&state)?;
    let id = id.into_inner();
    let refs = web::block(move || cluster.receive(&id, &body))
        .await
        .map_err(|_| ApiError::from(EngineError::Unavailable))?
        .map_err(api)?;
    Ok(HttpResponse::Ok().json(serde_json::json!({ "refs": refs })))
}

async fn drop_replica(
    state: web::Data<AppState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let cluster = cluster_of(&state)?;
    let id = id.into_inner();
    web::block(move || cluster.drop_replica(&id))
        .await
        .map_err(|_| ApiError::from(EngineError::Unavailable))?
        .map_err(api)?;
    Ok(HttpResponse::NoContent().finish())
}

/// The session a path is about: `/api/sessions/{id}` and below (not the
/// collection's own routes).
fn session_in_path(path: &str) -> Option<&str> {
    let rest = path.strip_prefix("/api/sessions/")?;
    let id = rest.split('/').next().filter(|s| !s.is_empty())?;
    let collection = matches!(id, "archive" | "unarchive" | "import") && !rest.contains('/');
    (!collection).then_some(id)
}

/// Where session `id` is served (a write claims a session nobody holds).
pub async fn locate(cluster: &Cluster, id: &str, write: bool) -> Result<Place, ClusterError> {
    if let Some(p) = cluster.place_fast(id) {
        return Ok(p);
    }
    let (c, id) = (cluster.clone(), id.to_string());
    web::block(move || {
        if write {
            c.place_write(&id)
        } else {
            c.place(&id)
        }
    })
    .await
    .unwrap_or_else(|_| Err(ClusterError::Database("lookup not run".into())))
}

fn error_response(e: &ApiError) -> HttpResponse {
    actix_web::ResponseError::error_response(e)
}

fn reads_only(method: &Method) -> bool {
    matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// Middleware: a request for a session is served here when this node owns
/// it, forwarded once to the owner otherwise; `503 session_moving` while a
/// takeover runs; `503 lease_expired` for a write once this node's lease
/// ran out.
pub async fn route(
    mut req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let cluster = req
        .app_data::<web::Data<AppState>>()
        .and_then(|s| s.engine.cluster().cloned());
    let (Some(cluster), Some(id)) = (cluster, session_in_path(req.path()).map(str::to_string))
    else {
        return Ok(next.call(req).await?.map_into_boxed_body());
    };
    let write = !reads_only(req.method());
    let place = locate(&cluster, &id, write).await;
    let answer = |e: ClusterError| {
        let mut resp = error_response(&api(e));
        resp.headers_mut()
            .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
        resp
    };
    match place {
        Err(e) => Ok(req.into_response(answer(e))),
        Ok(Place::Moving) => {
            let id = session_in_path(req.path()).unwrap_or_default().to_string();
            Ok(req.into_response(answer(ClusterError::Moving(id))))
        }
        Ok(Place::Local) => {
            if !reads_only(req.method()) && !cluster.lease_ok() {
                return Ok(req.into_response(answer(ClusterError::LeaseExpired)));
            }
            Ok(next.call(req).await?.map_into_boxed_body())
        }
        Ok(Place::Forward { node, url }) => {
            if req.headers().contains_key(FORWARDED_BY) {
                let id = session_in_path(req.path()).unwrap_or_default().to_string();
                return Ok(req.into_response(answer(ClusterError::Moving(id))));
            }
            let mut payload = req.take_payload();
            let mut body = web::BytesMut::new();
            while let Some(chunk) = payload.next().await {
                let chunk: web::Bytes = chunk?;
                body.extend_from_slice(&chunk);
                if body.len() > FORWARD_LIMIT {
                    return Ok(req.into_response(error_response(&ApiError::new(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        "payload_too_large",
                        "the body is too large to forward",
                    ))));
                }
            }
            let forwarded = forward(&cluster, req.request(), &url, body.freeze()).await;
            tracing::debug!(to = %node, path = %req.path(), "forwarded");
            Ok(req.into_response(forwarded))
        }
    }
}

/// For a route whose session is named in its body (a channel message): the
/// answer when another node serves session `id` (forwarded there, with
/// `body`), None when this node does.
pub async fn serve_elsewhere(
    state: &AppState,
    req: &HttpRequest,
    id: &str,
    body: Vec<u8>,
) -> Option<HttpResponse> {
    let cluster = state.engine.cluster()?.clone();
    let place = locate(&cluster, id, true).await;
    let refuse = |e: ClusterError| {
        let mut resp = error_response(&api(e));
        resp.headers_mut()
            .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
        Some(resp)
    };
    match place {
        Err(e) => refuse(e),
        Ok(Place::Moving) => refuse(ClusterError::Moving(id.to_string())),
        Ok(Place::Local) if !cluster.lease_ok() => refuse(ClusterError::LeaseExpired),
        Ok(Place::Local) => None,
        Ok(Place::Forward { .. }) if req.headers().contains_key(FORWARDED_BY) => {
            refuse(ClusterError::Moving(id.to_string()))
        }
        Ok(Place::Forward { url, .. }) => {
            Some(forward(&cluster, req, &url, web::Bytes::from(body)).await)
        }
    }
}

/// Send the request to the owner at `base` and answer what it answered.
async fn forward(
    cluster: &Cluster,
    req: &HttpRequest,
    base: &str,
    body: web::Bytes,
) -> HttpResponse {
    let url = format!(
        "{}{}",
        base.trim_end_matches('/'),
        req.uri().path_and_query().map_or("", |p| p.as_str())
    );
    let method = req.method().to_string();
    let mut headers: Vec<(String, String)> = req
        .headers()
        .iter()
        .filter(|(n, _)| {
            !matches!(
                n.as_str(),
                "host"
                    | "content-length"
                    | "connection"
                    | "transfer-encoding"
                    | "keep-alive"
                    | "upgrade"
                    | "origin"
            )
        })
        .filter_map(|(n, v)| Some((n.to_string(), v.to_str().ok()?.to_string())))
        .collect();
    if !headers.iter().any(|(n, _)| n == "authorization") {
        if let Some(t) = cluster.token() {
            headers.push(("authorization".into(), format!("Bearer {t}")));
        }
    }
    headers.push((FORWARDED_BY.to_string(), cluster.node_id().to_string()));
    let sent = web::block(move || {
        let agent = ureq::AgentBuilder::new()
            .timeout_connect(std::time::Duration::from_secs(2))
            .timeout(std::time::Duration::from_secs(120))
            .build();
        let mut r = agent.request(&method, &url);
        for (n, v) in &headers {
            r = r.set(n, v);
        }
        let resp = match r.send_bytes(&body) {
            Ok(resp) | Err(ureq::Error::Status(_, resp)) => resp,
            Err(e) => return Err(e.to_string()),
        };
        let status = resp.status();
        let kept: Vec<(String, String)> = resp
            .headers_names()
            .into_iter()
            .filter(|n| {
                !matches!(
                    n.as_str(),
                    "content-length" | "connection" | "transfer-encoding" | "keep-alive" | "date"
                )
            })
            .filter_map(|n| resp.header(&n).map(|v| (n.clone(), v.to_string())))
            .collect();
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut resp.into_reader(), &mut bytes)
            .map_err(|e| e.to_string())?;
        Ok((status, kept, bytes))
    })
    .await;
    match sent {
        Ok(Ok((status, kept, bytes))) => {
            let mut out = HttpResponse::build(
                StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY),
            );
            for (n, v) in kept {
                out.insert_header((n, v));
            }
            out.body(bytes)
        }
        other => {
            let e = match other {
                Ok(Err(e)) => e,
                _ => "the forwarding thread stopped".to_string(),
            };
            let mut resp = error_response(&ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "session_moving",
                format!("the session's owner could not be reached ({e}); retry"),
            ));
            resp.headers_mut()
                .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
            resp
        }
    }
}
