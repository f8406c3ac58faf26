//! `/mcp`: the MCP server over the streamable HTTP transport, hosted by
//! actix beside the REST routes (so the same Host/Origin/token perimeter
//! and body limits apply; the SDK's own Host check is off, ours is the one).
//!
//! The SDK's `StreamableHttpService` is a tower service over the `http`
//! crate's types; actix has its own. The adapter copies the request in
//! (method, URI, headers, the body read whole) and the answer out. The
//! service runs stateless with JSON answers (no MCP session to keep, no
//! server-sent stream held open), so every answer is a finite body, read
//! whole before it is sent.

use std::sync::Arc;

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use super::MemoryServer;

/// The service `/mcp` hands requests to (one per server).
#[derive(Clone)]
pub struct McpService(Arc<StreamableHttpService<MemoryServer, NeverSessionManager>>);

impl McpService {
    pub fn new(server: MemoryServer, body_limit: usize) -> McpService {
        let config = StreamableHttpServerConfig::default()
            .disable_allowed_hosts()
            .with_legacy_session_mode(false)
            .with_json_response(true)
            .with_sse_keep_alive(None)
            .with_max_request_body_bytes(body_limit);
        McpService(Arc::new(StreamableHttpService::new(
            move || Ok(server.clone()),
            Arc::new(NeverSessionManager::default()),
            config,
        )))
    }
}

/// Any method on `/mcp`.
pub async fn serve(req: HttpRequest, body: web::Bytes, svc: web::Data<McpService>) -> HttpResponse {
    use actix_web::ResponseError;
    // A message that is not JSON, or not a JSON-RPC object or batch, is
    // refused here with the service's own error (the MCP layer would
    // answer an empty 415).
    if req.method() == actix_web::http::Method::POST {
        match serde_json::from_slice::<serde_json::Value>(&body) {
            Ok(serde_json::Value::Object(_) | serde_json::Value::Array(_)) => {}
            Ok(_) => {
                return crate::error::ApiError::bad_request(
                    "invalid_body",
                    "an MCP message is a JSON-RPC object (or a batch of them)",
                )
                .error_response()
            }
            Err(e) => {
                return crate::error::ApiError::bad_request(
                    "invalid_body",
                    format!("an MCP message is JSON: {e}"),
                )
                .error_response()
            }
        }
    }
    let mut builder = http::Request::builder()
        .method(req.method().as_str())
        .uri(req.uri().to_string());
    for (name, value) in req.headers() {
        builder = builder.header(name.as_str(), value.as_bytes());
    }
    let request = match builder.body(Full::new(Bytes::from(body.to_vec()))) {
        Ok(r) => r,
        Err(e) => {
            return crate::error::ApiError::bad_request("invalid_input", e.to_string())
                .error_response();
        }
    };
    let answer = svc.0.handle(request).await;
    let (parts, body) = answer.into_parts();
    let bytes = match body.collect().await {
        Ok(c) => c.to_bytes(),
        Err(never) => match never {},
    };
    let status = StatusCode::from_u16(parts.status.as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
    // The MCP layer's own refusals (a wrong content type, a missing
    // session header) come with a plain or empty body: given the
    // service's JSON error, with its code.
    let json = parts
        .headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json") || v.starts_with("text/event-stream"));
    if status.is_client_error() && !json {
        let code = match status {
            StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported_media_type",
            StatusCode::NOT_ACCEPTABLE => "not_acceptable",
            StatusCode::NOT_FOUND => "not_found",
            StatusCode::METHOD_NOT_ALLOWED => "method_not_allowed",
            _ => "invalid_input",
        };
        let said = String::from_utf8_lossy(&bytes).trim().to_string();
        let message = if said.is_empty() {
            status.canonical_reason().unwrap_or("refused").to_string()
        } else {
            said
        };
        return crate::error::ApiError::new(status, code, message).error_response();
    }
    let mut out = HttpResponse::build(status);
    for (name, value) in &parts.headers {
        out.append_header((name.as_str(), value.as_bytes()));
    }
    out.body(bytes.to_vec())
}
