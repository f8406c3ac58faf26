//! The OpenAPI 3 document of the HTTP API, generated from the route
//! handlers' `#[utoipa::path]` attributes, served at `/api/openapi.json`.

use actix_web::HttpResponse;
use utoipa::OpenApi;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "openprogram-memory",
        description = "Entity memory for AI agents, kept in git: sessions, turns, branches, projects. The WebSocket protocol at /ws is described in docs/API.md."
    ),
    paths(
        crate::routes::health::health,
        crate::routes::sessions::create,
        crate::routes::sessions::list,
        crate::routes::archive::archive,
        crate::routes::archive::unarchive,
        crate::routes::sessions::import,
        crate::routes::sessions::get,
        crate::routes::sessions::update,
        crate::routes::sessions::delete,
        crate::routes::sessions::nodes,
        crate::routes::sessions::commits,
        crate::routes::messages::append,
        crate::routes::messages::list,
        crate::routes::messages::update,
        crate::routes::turns::end_turn,
        crate::routes::sessions::export,
        crate::routes::sessions::fork,
        crate::routes::replay::branches,
        crate::routes::replay::history,
        crate::routes::replay::checkout,
        crate::routes::replay::switch,
        crate::routes::replay::chat_checkout,
        crate::routes::sessions::regenerate_title,
        crate::routes::projects::bind_session,
        crate::routes::sessions::add_working_dir,
        crate::routes::sessions::remove_working_dir,
        crate::routes::channels::post,
        crate::routes::projects::list,
        crate::routes::projects::create,
        crate::routes::projects::get,
        crate::routes::projects::unbind,
        crate::routes::projects::commits,
        crate::routes::projects::relocate,
        crate::routes::undo::agent_turns,
        crate::routes::undo::apply,
        crate::routes::undo::preview,
        crate::routes::undo::revert,
        crate::routes::search::search,
        crate::routes::search::reindex,
        crate::routes::imports::run,
        crate::routes::imports::list,
        crate::routes::imports::watch,
        crate::routes::provenance::resolve,
        crate::routes::turns::stop_run,
        crate::routes::changes::list,
        crate::routes::changes::stream,
        crate::routes::replication::remotes,
        crate::routes::replication::push,
        crate::routes::secrets::scan,
        crate::routes::purge::purge,
        crate::routes::purge::purge_all,
        crate::routes::purge::list,
        crate::routes::session_store::append,
        crate::routes::session_store::load,
        crate::routes::session_store::sessions,
        crate::routes::session_store::subkeys,
        crate::routes::session_store::delete,
        crate::observe::metrics::scrape,
        openapi_json,
    ),
    components(schemas(crate::schemas::ErrorBody))
)]
pub struct ApiDoc;

/// `GET /api/openapi.json`.
#[utoipa::path(get, path = "/api/openapi.json", tag = "operations", summary = "This document", responses((status = 200, description = "the OpenAPI 3.1 document", body = Object)))]
pub async fn openapi_json() -> HttpResponse {
    HttpResponse::Ok().json(ApiDoc::openapi())
}

#[cfg(test)]
mod tests {
    /// Every schema the document references is collected, and none
    /// recurses forever (types that contain each other break the cycle
    /// with `no_recursion`).
    #[test]
    fn the_document_builds_with_every_schema() {
        let doc = serde_json::to_value(<super::ApiDoc as utoipa::OpenApi>::openapi()).unwrap();
        let schemas = doc["components"]["schemas"].as_object().unwrap();
        for name in [
            "SessionMeta",
            "Node",
            "TurnOutcome",
            "Shown",
            "ProjectView",
            "SearchAnswer",
        ] {
            assert!(schemas.contains_key(name), "{name} is missing");
        }
    }
}
