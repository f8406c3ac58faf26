//! `GET /metrics`: the Prometheus text format, from the `metrics` facade
//! (the engine records its counters through it) and its Prometheus
//! exporter. Gauges of the current state (sessions by status, live actors,
//! the titler's queue) are read from the engine at scrape time.

use std::sync::OnceLock;

use actix_web::{web, HttpResponse};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

use crate::state::AppState;

static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();

/// Latency buckets, in seconds, of every `*_seconds` histogram.
const BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// Install the process-wide recorder (once; later calls reuse it).
pub fn install() -> Option<&'static PrometheusHandle> {
    HANDLE
        .get_or_init(|| {
            let built = PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), BUCKETS)
                .and_then(|b| b.install_recorder());
            match built {
                Ok(handle) => {
                    describe();
                    metrics::gauge!("openprogram_build_info", "version" => env!("CARGO_PKG_VERSION"))
                        .set(1.0);
                    Some(handle)
                }
                Err(e) => {
                    tracing::warn!(error = %e, "metrics recorder not installed; /metrics will be empty");
                    None
                }
            }
        })
        .as_ref()
}

fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram, Unit};
    describe_counter!(
        "openprogram_http_requests_total",
        "HTTP requests by method, route pattern and status"
    );
    describe_histogram!(
        "openprogram_http_request_duration_seconds",
        Unit::Seconds,
        "HTTP request latency by method and route pattern"
    );
    describe_counter!("openprogram_appends_total", "nodes appended to sessions");
    describe_counter!("openprogram_turns_total", "turns ended and committed");
    describe_histogram!(
        "openprogram_commit_duration_seconds",
        Unit::Seconds,
        "time of one turn commit in the session repository"
    );
    describe_counter!(
        "openprogram_fsyncs_total",
        "fsync calls made by the store (libgit2's own are not counted)"
    );
    describe_counter!("openprogram_registry_writes_total", "index.json writes");
    describe_gauge!("openprogram_live_sessions", "session actors in memory");
    describe_gauge!("openprogram_sessions", "sessions by status");
    describe_gauge!("openprogram_ws_clients", "connected WebSocket clients");
    describe_counter!(
        "openprogram_ws_frames_dropped_total",
        "broadcast frames a lagging WebSocket client missed (it was resynced)"
    );
    describe_gauge!("openprogram_titler_queue", "title requests waiting");
    describe_gauge!(
        "openprogram_search_backlog",
        "sessions queued for the search indexer or being indexed"
    );
    describe_gauge!(
        "openprogram_titler_in_flight",
        "title requests being answered"
    );
    describe_counter!(
        "openprogram_titler_failures_total",
        "title requests that failed"
    );
    describe_counter!(
        "openprogram_maintenance_runs_total",
        "repository maintenance runs (repacks)"
    );
    describe_histogram!(
        "openprogram_maintenance_duration_seconds",
        Unit::Seconds,
        "time of one repository maintenance run"
    );
    describe_counter!(
        "openprogram_errors_total",
        "error answers by code (HTTP and WebSocket)"
    );
    describe_gauge!("openprogram_build_info", "the running version");
}

/// `GET /metrics`.
#[utoipa::path(
    get,
    path = "/metrics",
    tag = "operations",
    responses((status = 200, description = "Prometheus text format", content_type = "text/plain"))
)]
#[tracing::instrument(name = "metrics", skip(state))]
pub async fn scrape(state: web::Data<AppState>) -> HttpResponse {
    let engine = &state.engine;
    metrics::gauge!("openprogram_live_sessions").set(engine.live_sessions().await as f64);
    if let Some(stats) = engine.registry_stats().await {
        for (status, n) in &stats.by_status {
            metrics::gauge!("openprogram_sessions", "status" => status.clone()).set(*n as f64);
        }
    }
    let titler = engine.titler_stats();
    metrics::gauge!("openprogram_titler_queue").set(titler.queued as f64);
    metrics::gauge!("openprogram_titler_in_flight").set(titler.in_flight as f64);
    if let Some(n) = engine.search_backlog() {
        metrics::gauge!("openprogram_search_backlog").set(n as f64);
    }
    let body = install().map(|h| h.render()).unwrap_or_default();
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4; charset=utf-8")
        .body(body)
}
