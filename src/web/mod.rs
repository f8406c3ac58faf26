//! The web UI: plain ES modules, a stylesheet and one page, embedded in the
//! binary (no network, no build step). `/`, and the deep links `/s/<id>`,
//! `/s/<id>/turn/<n>` and `/projects/<id>`, answer the page; the page's
//! modules route on the client. The assets carry no data, so they need no
//! token (the page asks for one when the API demands it); the Host and
//! Origin checks apply as everywhere.

use actix_web::http::header;
use actix_web::{web, HttpResponse};

use crate::error::ApiError;

/// The page, and each asset under `/assets/` with its content type.
const PAGE: &str = include_str!("assets/index.html");
const ASSETS: &[(&str, &str, &str)] = &[
    (
        "style.css",
        "text/css; charset=utf-8",
        include_str!("assets/style.css"),
    ),
    ("app.js", JS, include_str!("assets/app.js")),
    ("api.js", JS, include_str!("assets/api.js")),
    ("sidebar.js", JS, include_str!("assets/sidebar.js")),
    ("chat.js", JS, include_str!("assets/chat.js")),
    ("markdown.js", JS, include_str!("assets/markdown.js")),
    ("replay.js", JS, include_str!("assets/replay.js")),
    ("graph.js", JS, include_str!("assets/graph.js")),
    ("projects.js", JS, include_str!("assets/projects.js")),
    ("menu.js", JS, include_str!("assets/menu.js")),
    ("composer.js", JS, include_str!("assets/composer.js")),
    ("undo.js", JS, include_str!("assets/undo.js")),
    ("icon.svg", "image/svg+xml", include_str!("assets/icon.svg")),
];
const JS: &str = "text/javascript; charset=utf-8";

/// Scripts and styles from this origin only, no inline script, no plugin,
/// no framing: a message that slipped past the renderer still could not
/// run code.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// Whether a path is the UI's (no token needed to load it).
pub fn is_ui_path(path: &str) -> bool {
    path == "/"
        || path == "/favicon.ico"
        || path.starts_with("/assets/")
        || path.starts_with("/s/")
        || path == "/projects"
        || path.starts_with("/projects/")
        || path == RUNNERS_DOC
}

/// The runners' walk-through, linked from the composer's "no agent
/// connected" notice (served as text: it carries no data).
const RUNNERS_DOC: &str = "/docs/RUNNERS.md";

async fn runners_doc() -> HttpResponse {
    secured(HttpResponse::Ok())
        .content_type("text/plain; charset=utf-8")
        .body(include_str!("../../docs/RUNNERS.md"))
}

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/", web::get().to(page))
        .route("/s/{tail:.*}", web::get().to(page))
        .route("/projects", web::get().to(page))
        .route("/projects/{tail:.*}", web::get().to(page))
        .route("/favicon.ico", web::get().to(favicon))
        .route("/assets/{name}", web::get().to(asset))
        .route(RUNNERS_DOC, web::get().to(runners_doc));
}

fn secured(mut b: actix_web::HttpResponseBuilder) -> actix_web::HttpResponseBuilder {
    b.insert_header((header::CONTENT_SECURITY_POLICY, CSP))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::REFERRER_POLICY, "no-referrer"))
        .insert_header((header::CACHE_CONTROL, "no-cache"));
    b
}

async fn page() -> HttpResponse {
    secured(HttpResponse::Ok())
        .content_type("text/html; charset=utf-8")
        .body(PAGE)
}

async fn favicon() -> HttpResponse {
    asset_response("icon.svg").unwrap_or_else(|| HttpResponse::NotFound().finish())
}

fn asset_response(name: &str) -> Option<HttpResponse> {
    let (_, ct, body) = ASSETS.iter().find(|(n, _, _)| *n == name)?;
    Some(secured(HttpResponse::Ok()).content_type(*ct).body(*body))
}

async fn asset(name: web::Path<String>) -> Result<HttpResponse, ApiError> {
    asset_response(&name).ok_or_else(|| ApiError::not_found("no such asset"))
}
