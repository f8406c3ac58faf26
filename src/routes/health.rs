use actix_web::{web, HttpResponse};

use crate::state::AppState;

#[utoipa::path(get, path = "/api/health", tag = "operations", summary = "Liveness, version, registry counts", responses((status = 200, description = "ok", body = crate::schemas::Health), (status = 500, description = "storage_error", body = crate::schemas::ErrorBody)))]
#[tracing::instrument(name = "health", skip(state))]
pub async fn health(state: web::Data<AppState>) -> HttpResponse {
    let read_only = state.engine.read_only();
    HttpResponse::Ok().json(serde_json::json!({
        // `read_only`: started on a full disk; reads are served, writes
        // refused with 503 `storage_full` until a restart with space free.
        "status": if read_only { "read_only" } else { "ok" },
        "read_only": read_only,
        "version": env!("CARGO_PKG_VERSION"),
        "live_sessions": state.engine.live_sessions().await,
        "registry": state.engine.registry_stats().await,
        // What startup deletes on its own (0: the rule is off).
        "retention": state.retention,
        // Titles from an LLM (regenerating one needs it).
        "llm": state.llm,
    }))
}
