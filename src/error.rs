//! The one API error type: every failure leaves as
//! `{"error": "<message>", "code": "<code>"}` with a 4xx/5xx status.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use openprogram_actors::project::ProjectError;
use openprogram_actors::session::{ErrorKind, SessionError};

#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code,
            message: message.into(),
        }
    }

    pub fn bad_request(code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, code, message)
    }

    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, "not_found", message)
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.status
    }

    fn error_response(&self) -> HttpResponse {
        HttpResponse::build(self.status)
            .json(serde_json::json!({"error": self.message, "code": self.code}))
    }
}

impl From<SessionError> for ApiError {
    fn from(e: SessionError) -> ApiError {
        ApiError::from_kind(e.kind(), e.code(), e.to_string())
    }
}

impl From<ProjectError> for ApiError {
    fn from(e: ProjectError) -> ApiError {
        ApiError::from_kind(e.kind(), e.code(), e.to_string())
    }
}

impl ApiError {
    fn from_kind(kind: ErrorKind, code: &'static str, message: String) -> ApiError {
        let status = match kind {
            ErrorKind::BadRequest => StatusCode::BAD_REQUEST,
            ErrorKind::NotFound => StatusCode::NOT_FOUND,
            ErrorKind::Conflict => StatusCode::CONFLICT,
            ErrorKind::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            ErrorKind::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        };
        if status.is_server_error() {
            tracing::error!(error = %message, "request failed");
        }
        ApiError::new(status, code, message)
    }
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
