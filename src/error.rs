//! The one API error type: every failure leaves as
//! `{"error": "<message>", "code": "<code>"}` with a 4xx/5xx status.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use openprogram_actors::{EngineError, ErrorKind};

#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    /// What a refusal names beyond its message (paths, commits): merged
    /// into the body.
    pub details: Option<serde_json::Value>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code,
            message: message.into(),
            details: None,
        }
    }

    /// The error's JSON body: `{error, code}` and any details.
    pub fn body(&self) -> serde_json::Value {
        let mut body = serde_json::json!({"error": self.message, "code": self.code});
        if let (Some(serde_json::Value::Object(extra)), Some(obj)) =
            (&self.details, body.as_object_mut())
        {
            for (k, v) in extra {
                if k != "code" && k != "message" {
                    obj.insert(k.clone(), v.clone());
                }
            }
        }
        body
    }

    pub fn bad_request(code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, code, message)
    }

    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, "not_found", message)
    }
}

/// Count an error answer by its code (`openprogram_errors_total`).
pub fn count_error(code: &str) {
    metrics::counter!("openprogram_errors_total", "code" => code.to_string()).increment(1);
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.status
    }

    fn error_response(&self) -> HttpResponse {
        count_error(self.code);
        let mut resp = HttpResponse::build(self.status);
        // Worth retrying soon: a pending commit, a restarting actor.
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            resp.insert_header(("Retry-After", "2"));
        }
        resp.json(self.body())
    }
}

/// The one mapping of engine errors to HTTP (the WebSocket actions use it
/// too, through `ApiError`). A 5xx carries its code and a short generic
/// message; the detail goes to the log.
impl From<EngineError> for ApiError {
    fn from(e: EngineError) -> ApiError {
        let kind = e.kind();
        let status = match kind {
            ErrorKind::BadRequest => StatusCode::BAD_REQUEST,
            ErrorKind::NotFound => StatusCode::NOT_FOUND,
            ErrorKind::Conflict => StatusCode::CONFLICT,
            ErrorKind::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            ErrorKind::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            ErrorKind::Upstream => StatusCode::BAD_GATEWAY,
        };
        match e.code() {
            // A cluster's passing states (a takeover, a lease being
            // renewed): counted, not logged per request.
            "session_moving" | "lease_expired" => {
                tracing::debug!(code = e.code(), error = %e, "request refused for now")
            }
            _ if kind.is_server_side() => {
                tracing::error!(code = e.code(), error = %e, "request failed")
            }
            _ => {}
        }
        let mut api = ApiError::new(status, e.code(), e.client_message());
        api.details = e.details();
        api
    }
}

/// A payload failure as a JSON error: a stalled body is 408.
fn payload_error(e: &actix_web::error::PayloadError) -> ApiError {
    use actix_web::error::PayloadError as P;
    match e {
        P::Io(io) if io.kind() == std::io::ErrorKind::TimedOut => ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            "request_timeout",
            io.to_string(),
        ),
        P::Overflow => ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            e.to_string(),
        ),
        _ => ApiError::bad_request("invalid_body", e.to_string()),
    }
}

/// Read a raw body of at most `limit` bytes (for the routes that take no
/// JSON), with the same JSON errors as the extractors.
pub async fn read_body(
    mut body: actix_web::web::Payload,
    limit: usize,
) -> Result<Vec<u8>, ApiError> {
    use futures_util::StreamExt;
    let mut out = Vec::new();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| payload_error(&e))?;
        if out.len() + chunk.len() > limit {
            return Err(ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "body_too_large",
                format!("the body is larger than {limit} bytes"),
            ));
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

/// Body, query and path extractor failures as JSON 4xx errors.
pub fn json_error(err: actix_web::error::JsonPayloadError) -> actix_web::Error {
    use actix_web::error::JsonPayloadError as J;
    let api = match &err {
        J::OverflowKnownLength { .. } | J::Overflow { .. } => ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            err.to_string(),
        ),
        J::ContentType => ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "expected Content-Type: application/json",
        ),
        J::Payload(p) => payload_error(p),
        _ => ApiError::bad_request("invalid_body", err.to_string()),
    };
    api.into()
}

pub fn query_error(err: actix_web::error::QueryPayloadError) -> actix_web::Error {
    ApiError::bad_request("invalid_query", err.to_string()).into()
}

pub fn path_error(err: actix_web::error::PathError) -> actix_web::Error {
    ApiError::bad_request("invalid_path", err.to_string()).into()
}
