//! HTTP routes, one module per resource.

pub mod archive;
pub mod changes;
pub mod channels;
pub mod cluster_search;
pub mod health;
pub mod imports;
pub mod messages;
pub mod page_body;
pub mod projects;
pub mod provenance;
pub mod purge;
pub mod replay;
pub mod replication;
pub mod search;
pub mod secrets;
pub mod session_store;
pub mod sessions;
pub mod turns;
pub mod undo;

use actix_web::web;

pub use sessions::ForSession;

pub fn configure(cfg: &mut web::ServiceConfig) {
    // A session's and a project's routes sit in a scope of their own: the
    // scope's pattern is compiled once, the routes in it are mostly plain
    // strings. Each pattern with a `{…}` is a regular expression compiled
    // by every HTTP worker before the server answers (about 80 of them
    // were 5 ms a worker, one worker after the other, on a server's
    // start). A request the scope's routes do not take gets the same
    // JSON 404 as any unknown path; the fixed `/sessions/…` paths come
    // first, so they are never read as a session id.
    cfg.service(
        web::scope("/api")
            .route("/health", web::get().to(health::health))
            .route("/sessions", web::post().to(sessions::create))
            .route("/sessions", web::get().to(sessions::list))
            .route("/sessions/archive", web::post().to(archive::archive))
            .route("/sessions/unarchive", web::post().to(archive::unarchive))
            .route("/sessions/import", web::post().to(sessions::import))
            .service(web::scope("/sessions/{id}").configure(session_routes))
            .route("/chat/checkout", web::post().to(replay::chat_checkout))
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
            .route("/secrets", web::get().to(secrets::scan))
            .route("/purge", web::post().to(purge::purge_all))
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
            .service(web::scope("/projects/{id}").configure(project_routes)),
    );
}

/// `/api/sessions/{id}…`
fn session_routes(cfg: &mut web::ServiceConfig) {
    cfg.route("", web::get().to(sessions::get))
        .route("", web::patch().to(sessions::update))
        .route("", web::delete().to(sessions::delete))
        .route("/nodes", web::get().to(sessions::nodes))
        .route("/commits", web::get().to(sessions::commits))
        .route("/messages", web::post().to(messages::append))
        .route("/messages", web::get().to(messages::list))
        .route("/messages/{node_id}", web::patch().to(messages::update))
        .route("/turns", web::post().to(turns::end_turn))
        .route("/runs/stop", web::post().to(turns::stop_run))
        .route("/turns/{n}/revert", web::get().to(undo::preview))
        .route("/turns/{n}/revert", web::post().to(undo::revert))
        .route("/export", web::get().to(sessions::export))
        .route("/fork", web::post().to(sessions::fork))
        .route("/purge", web::post().to(purge::purge))
        .route("/purges", web::get().to(purge::list))
        .route("/branches", web::get().to(replay::branches))
        .route("/history", web::get().to(replay::history))
        .route("/checkout", web::post().to(replay::checkout))
        .route("/switch", web::post().to(replay::switch))
        .route(
            "/title/regenerate",
            web::post().to(sessions::regenerate_title),
        )
        .route("/project", web::put().to(projects::bind_session))
        .route("/working_dirs", web::post().to(sessions::add_working_dir))
        .route(
            "/working_dirs",
            web::delete().to(sessions::remove_working_dir),
        );
}

/// `/api/projects/{id}…`
fn project_routes(cfg: &mut web::ServiceConfig) {
    cfg.route("", web::get().to(projects::get))
        .route("", web::delete().to(projects::unbind))
        .route("/commits", web::get().to(projects::commits))
        .route("/agent-turns", web::get().to(undo::agent_turns))
        .route(
            "/agent-turns/{session}/{turn}/apply",
            web::post().to(undo::apply),
        )
        .route("/relocate", web::post().to(projects::relocate));
}
