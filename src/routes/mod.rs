//! HTTP routes, one module per resource.

pub mod archive;
pub mod changes;
pub mod channels;
pub mod health;
pub mod imports;
pub mod messages;
pub mod projects;
pub mod provenance;
pub mod replay;
pub mod replication;
pub mod search;
pub mod session_store;
pub mod sessions;
pub mod turns;
pub mod undo;

use actix_web::web;

pub use sessions::ForSession;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::scope("/api")
            .route("/health", web::get().to(health::health))
            .route("/openapi.json", web::get().to(crate::openapi::openapi_json))
            .route("/sessions", web::post().to(sessions::create))
            .route("/sessions", web::get().to(sessions::list))
            .route("/sessions/archive", web::post().to(archive::archive))
            .route("/sessions/unarchive", web::post().to(archive::unarchive))
            .route("/sessions/import", web::post().to(sessions::import))
            .route("/sessions/{id}", web::get().to(sessions::get))
            .route("/sessions/{id}", web::patch().to(sessions::update))
            .route("/sessions/{id}", web::delete().to(sessions::delete))
            .route("/sessions/{id}/nodes", web::get().to(sessions::nodes))
            .route("/sessions/{id}/commits", web::get().to(sessions::commits))
            .route("/sessions/{id}/messages", web::post().to(messages::append))
            .route("/sessions/{id}/messages", web::get().to(messages::list))
            .route(
                "/sessions/{id}/messages/{node_id}",
                web::patch().to(messages::update),
            )
            .route("/sessions/{id}/turns", web::post().to(turns::end_turn))
            .route("/sessions/{id}/runs/stop", web::post().to(turns::stop_run))
            .route(
                "/sessions/{id}/turns/{n}/revert",
                web::get().to(undo::preview),
            )
            .route(
                "/sessions/{id}/turns/{n}/revert",
                web::post().to(undo::revert),
            )
            .route("/sessions/{id}/export", web::get().to(sessions::export))
            .route("/sessions/{id}/fork", web::post().to(sessions::fork))
            .route("/sessions/{id}/branches", web::get().to(replay::branches))
            .route("/sessions/{id}/history", web::get().to(replay::history))
            .route("/sessions/{id}/checkout", web::post().to(replay::checkout))
            .route("/sessions/{id}/switch", web::post().to(replay::switch))
            .route("/chat/checkout", web::post().to(replay::chat_checkout))
            .route(
                "/sessions/{id}/title/regenerate",
                web::post().to(sessions::regenerate_title),
            )
            .route(
                "/sessions/{id}/project",
                web::put().to(projects::bind_session),
            )
            .route(
                "/sessions/{id}/working_dirs",
                web::post().to(sessions::add_working_dir),
            )
            .route(
                "/sessions/{id}/working_dirs",
                web::delete().to(sessions::remove_working_dir),
            )
            .route(
                "/channels/{channel}/messages",
                web::post().to(channels::post),
            )
            .route("/search", web::get().to(search::search))
            .route("/search/reindex", web::post().to(search::reindex))
            .route("/imports", web::post().to(imports::run))
            .route("/imports", web::get().to(imports::list))
            .route("/imports/watch", web::post().to(imports::watch))
            .route("/provenance/resolve", web::post().to(provenance::resolve))
            .route("/changes", web::get().to(changes::list))
            .route("/replication", web::get().to(replication::remotes))
            .route("/replication/push", web::post().to(replication::push))
            .route(
                "/session-store/append",
                web::post().to(session_store::append),
            )
            .route("/session-store/load", web::post().to(session_store::load))
            .route(
                "/session-store/sessions",
                web::get().to(session_store::sessions),
            )
            .route(
                "/session-store/subkeys",
                web::get().to(session_store::subkeys),
            )
            .route(
                "/session-store/delete",
                web::post().to(session_store::delete),
            )
            .route("/changes/stream", web::get().to(changes::stream))
            .route("/projects", web::get().to(projects::list))
            .route("/projects", web::post().to(projects::create))
            .route("/projects/{id}", web::get().to(projects::get))
            .route("/projects/{id}", web::delete().to(projects::unbind))
            .route("/projects/{id}/commits", web::get().to(projects::commits))
            .route(
                "/projects/{id}/agent-turns",
                web::get().to(undo::agent_turns),
            )
            .route(
                "/projects/{id}/agent-turns/{session}/{turn}/apply",
                web::post().to(undo::apply),
            )
            .route(
                "/projects/{id}/relocate",
                web::post().to(projects::relocate),
            ),
    );
}
