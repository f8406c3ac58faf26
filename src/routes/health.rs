use actix_web::{web, HttpResponse};

use crate::startup::AppState;

#[utoipa::path(get, path = "/api/health", tag = "operations", summary = "Liveness, version, registry counts", responses((status = 200, description = "ok", body = serde_json::Value), (status = 500, description = "storage_error", body = crate::openapi::ErrorBody)))]
#[tracing::instrument(name = "health", skip(state))]
pub async fn health(state: web::Data<AppState>) -> HttpResponse {
    HttpResponse::Ok().json(serde_json::json!({
        "status": "ok",
        "version": env!("CARGO_PKG_VERSION"),
        "live_sessions": state.engine.live_sessions().await,
        "registry": state.engine.registry_stats().await,
    }))
}
