//! Building and running the application: state directory, engine actors,
//! HTTP server, and the graceful shutdown (drain requests, then flush).

use std::fs::File;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};

use actix_service::{IntoServiceFactory, ServiceFactoryExt};
use actix_web::dev::Server;
use actix_web::{web, App};
use openprogram_actors::engine::EngineConfig;
use openprogram_actors::registry::Policy;
use openprogram_actors::titler::LlmConfig;
use openprogram_actors::{fsio, Engine};

use crate::config::{Config, ConfigError};
use crate::error;
use crate::routes;

pub use crate::state::AppState;

use crate::client::{ServerInfo, LOCK_FILE, SERVER_INFO};

#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("state directory {path}: {source}")]
    StateDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot join the cluster: {0}")]
    Cluster(String),
    #[error("another openprogram server is using {0}")]
    Locked(PathBuf),
    #[error("cannot listen on {bind}: {source}")]
    Bind {
        bind: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

pub struct Application {
    server: Server,
    engine: Engine,
    shutdown: tokio::sync::watch::Sender<bool>,
    addr: SocketAddr,
    state_dir: PathBuf,
    _lock: File,
}

impl Application {
    pub fn build(config: &Config) -> Result<Application, StartupError> {
        let state_dir = config.state_dir()?;
        let sessions_dir = state_dir.join("sessions");
        let dir_err = |source| StartupError::StateDir {
            path: state_dir.clone(),
            source,
        };
        let lock = claim_state_dir(&state_dir, &sessions_dir)?;
        let m = &config.maintenance;
        let started = std::time::Instant::now();
        let (mut engine, report) =
            Engine::start(engine_config(config, sessions_dir)).map_err(dir_err)?;
        if config.cluster.enabled() {
            let cluster = join_cluster(config, &engine)?;
            engine.attach_cluster(cluster);
        }
        tracing::info!(
            rebuilt = report.rebuilt,
            repaired = report.repaired,
            reset_running = report.reset_running,
            deleted = report.deleted.len(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "session registry loaded"
        );
        crate::observe::metrics::install();
        let mirrors = start_mirror(config, &engine)?;
        let (shutdown, shutdown_rx) = tokio::sync::watch::channel(false);
        let runners = std::sync::Arc::new(crate::state::runners::Runners::default());
        actix_web::rt::spawn(crate::state::runners::follow_turns(
            runners.clone(),
            engine.clone(),
            engine.subscribe(),
        ));
        actix_web::rt::spawn(crate::ws::runs::follow_released(
            runners.clone(),
            engine.clone(),
        ));
        let state = web::Data::new(AppState {
            engine: engine.clone(),
            ws_frame_limit: config.server.body_limit,
            shutdown: shutdown_rx,
            slow_request: std::time::Duration::from_millis(config.server.slow_request_ms.max(1)),
            retention: serde_json::json!({
                "empty_shell_max_age_s": m.empty_shell_max_age_s,
                "archive_ttl_days": m.archive_ttl_days,
                "max_sessions": m.max_sessions,
            }),
            llm: !config.llm.base_url.trim().is_empty(),
            imports: Default::default(),
            mirrors,
            runners,
        });
        let listener =
            TcpListener::bind(&config.server.bind).map_err(|source| StartupError::Bind {
                bind: config.server.bind.clone(),
                source,
            })?;
        let addr = listener.local_addr()?;
        let perimeter = web::Data::new(perimeter(config, &state_dir, addr).map_err(dir_err)?);
        let mcp = web::Data::new(crate::mcp::http::McpService::new(
            crate::mcp::MemoryServer::new(
                engine.clone(),
                format!("http://{addr}"),
                config.mcp.allow_writes,
            ),
            config.server.body_limit,
        ));
        let server = http_server(config, state, perimeter, mcp, listener)?;
        let info = ServerInfo {
            url: format!("http://{addr}"),
            pid: std::process::id(),
            started_at: openprogram_actors::meta::now(),
        };
        match fsio::atomic_write_json(&state_dir.join(SERVER_INFO), &info) {
            // Started on a full disk (reads only): the address is in the log.
            Err(e) if engine.read_only() => {
                tracing::warn!(error = %e, "server.json not written");
            }
            other => other?,
        }
        if engine.read_only() {
            eprintln!(
                "openprogram: the disk holding {} is full; serving reads only. Free some space and restart.",
                state_dir.display()
            );
        }
        start_builtin_runner(config, addr, &state_dir);
        // What the start read and let go of goes back before the first
        // answer (a 10,000-session start frees megabytes at once).
        crate::observe::allocator::return_freed_pages();
        tracing::info!(url = %info.url, state_dir = %state_dir.display(), "openprogram listening");
        Ok(Application {
            server,
            engine,
            shutdown,
            addr,
            state_dir,
            _lock: lock,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serve until SIGINT or SIGTERM, then shut down (`run_until`). A
    /// second signal exits at once, after one more flush.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        let engine = self.engine.clone();
        let info_file = self.state_dir.join(SERVER_INFO);
        self.run_until(async move {
            wait_for_signal().await;
            actix_web::rt::spawn(async move {
                wait_for_signal().await;
                tracing::warn!("second signal: exiting now");
                engine.flush().await;
                let _ = std::fs::remove_file(&info_file);
                std::process::exit(0);
            });
        })
        .await
    }

    /// Serve until `stop` resolves. Then: write index.json first (so a
    /// supervisor's kill after its grace period loses nothing), send every
    /// WebSocket client a close frame, stop accepting, let in-flight
    /// requests (and their commits) finish, write index.json again, close
    /// the write-ahead log and clean up. (The test suite runs servers in
    /// its own process this way, stopped by a channel.)
    pub async fn run_until(
        self,
        stop: impl std::future::Future<Output = ()> + 'static,
    ) -> std::io::Result<()> {
        let handle = self.server.handle();
        let (engine, shutdown) = (self.engine.clone(), self.shutdown);
        let info_file = self.state_dir.join(SERVER_INFO);
        actix_web::rt::spawn(async move {
            stop.await;
            let started = std::time::Instant::now();
            tracing::info!("shutdown requested: flushing the registry, closing WebSocket clients, draining requests");
            engine.flush().await;
            engine
                .stop_maintenance(std::time::Duration::from_secs(5))
                .await;
            let _ = shutdown.send(true);
            handle.stop(true).await;
            tracing::info!(
                elapsed_ms = started.elapsed().as_millis() as u64,
                "requests drained"
            );
        });
        let result = self.server.await;
        // A cluster node stops renewing: its sessions go to their replicas
        // when its leases end.
        if let Some(cluster) = self.engine.cluster() {
            cluster.stop();
        }
        // Requests are drained; persist what they changed.
        self.engine.flush().await;
        self.engine.close_log().await;
        self.engine.mark_closed().await;
        let _ = std::fs::remove_file(info_file);
        tracing::info!("openprogram stopped");
        result
    }
}

/// SIGTERM or Ctrl-C.
pub async fn wait_for_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, "no SIGTERM handler; waiting for Ctrl-C only");
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

async fn not_found() -> Result<actix_web::HttpResponse, error::ApiError> {
    Err(error::ApiError::not_found("no such route"))
}

/// Make the state directory (private: every transcript is in it) and take
/// its lock: one server per state directory, so a session repository has
/// one writer. (Leftovers of creations a crash cut short are removed by the
/// engine's start, as it lists the session folders.)
pub(crate) fn claim_state_dir(
    state_dir: &Path,
    sessions_dir: &Path,
) -> Result<std::fs::File, StartupError> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir_err = |source| StartupError::StateDir {
        path: state_dir.to_path_buf(),
        source,
    };
    fsio::create_private_dir_all(sessions_dir).map_err(dir_err)?;
    fsio::make_dir_private(state_dir).map_err(dir_err)?;
    fsio::make_dir_private(sessions_dir).map_err(dir_err)?;
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(fsio::FILE_MODE)
        .open(state_dir.join(LOCK_FILE))
        .map_err(dir_err)?;
    if lock.try_lock().is_err() {
        return Err(StartupError::Locked(state_dir.to_path_buf()));
    }
    Ok(lock)
}

/// The live mirror of `[import] watch`: an unknown tool stops the start
/// (a typo would otherwise mirror nothing, silently).
fn start_mirror(
    config: &Config,
    engine: &Engine,
) -> Result<openprogram_actors::importers::watch::Mirrors, StartupError> {
    use openprogram_actors::importers::{watch, Tool};
    let settle = std::time::Duration::from_secs(config.import.settle_s);
    let mirrors = watch::Mirrors::new(engine.clone(), settle);
    let mut tools = Vec::new();
    for name in &config.import.watch {
        let tool = Tool::parse(name.trim()).ok_or_else(|| {
            StartupError::Config(ConfigError::Invalid(format!(
                "import.watch: no importer for '{name}' (known: {})",
                Tool::NAMES.join(", ")
            )))
        })?;
        tools.push(tool);
    }
    for tool in tools {
        mirrors.start(tool, Vec::new());
    }
    Ok(mirrors)
}

/// The engine alone on a state directory no server holds, for a command
/// that writes through it (`import`): the same lock and settings as
/// `serve`. Call inside an actix system; the lock is held while the file
/// lives.
pub fn start_engine(config: &Config) -> Result<(Engine, std::fs::File), StartupError> {
    let state_dir = config.state_dir()?;
    let sessions_dir = state_dir.join("sessions");
    let lock = claim_state_dir(&state_dir, &sessions_dir)?;
    let (engine, _) = Engine::start(engine_config(config, sessions_dir)).map_err(|source| {
        StartupError::StateDir {
            path: state_dir.clone(),
            source,
        }
    })?;
    Ok((engine, lock))
}

/// `[cluster]`: connect to PostgreSQL, migrate, renew once, start the
/// lease threads. A node listening beyond loopback needs `server.token`
/// (the same on every node: it is what nodes send each other).
fn join_cluster(
    config: &Config,
    engine: &Engine,
) -> Result<openprogram_actors::cluster::Cluster, StartupError> {
    let c = &config.cluster;
    let token = Some(config.server.token.trim().to_string()).filter(|t| !t.is_empty());
    let loopback = config
        .server
        .bind
        .parse::<SocketAddr>()
        .is_ok_and(|a| a.ip().is_loopback());
    if !loopback && token.is_none() {
        return Err(StartupError::Cluster(
            "a cluster node listening beyond loopback needs server.token, the same on every node"
                .into(),
        ));
    }
    let cluster_config = openprogram_actors::cluster::ClusterConfig {
        postgres_url: c.postgres_url.clone(),
        node_id: c.node_id.clone(),
        advertise: c.advertise.clone(),
        lease: std::time::Duration::from_millis(c.lease_ms),
        token,
    };
    openprogram_actors::cluster::Cluster::start(cluster_config, engine.store().clone())
        .map_err(|e| StartupError::Cluster(e.to_string()))
}

/// The engine's settings from the configuration.
fn engine_config(config: &Config, sessions_dir: PathBuf) -> EngineConfig {
    let m = &config.maintenance;
    EngineConfig {
        sessions_dir,
        cache_cap: config.store.session_cache_cap,
        policy: Policy {
            empty_shell_max_age_s: m.empty_shell_max_age_s,
            archive_ttl_days: m.archive_ttl_days,
            max_sessions: m.max_sessions,
        },
        index_debounce: std::time::Duration::from_millis(config.registry.index_debounce_ms),
        llm: LlmConfig {
            base_url: config.llm.base_url.clone(),
            model: config.llm.model.clone(),
            api_key: config.llm.api_key.clone(),
            timeout: std::time::Duration::from_secs(config.llm.timeout),
        },
        title_concurrency: config.llm.concurrency,
        retitle_at: config.titles.retitle_at.clone(),
        allowed_roots: config.projects.allowed_roots.clone(),
        search: config.search.enabled,
        retired_pack_grace: std::time::Duration::from_secs(m.retired_pack_grace_s),
        import_limits: openprogram_actors::git::ImportLimits {
            max_unpacked: config.store.import_max_unpacked,
            max_objects: config.store.import_max_objects,
        },
        replication: openprogram_actors::replication::ReplicationConfig {
            remotes: config.replication.remotes.clone(),
            delete_remote: config.replication.delete_remote,
        },
        redaction: config.redaction.clone(),
    }
}

/// What every request passes: the Host and Origin rules, the token (always
/// off loopback), the time limits. Listening beyond this machine is said
/// on the terminal, with where the token is.
fn perimeter(
    config: &Config,
    state_dir: &Path,
    addr: SocketAddr,
) -> std::io::Result<crate::security::Perimeter> {
    let (token, token_file) =
        crate::security::token::load_or_create(state_dir, &config.server.token)?;
    let hosts = crate::security::hosts::HostRules::new(
        addr,
        &config.server.allowed_hosts,
        &config.server.allowed_origins,
    );
    let demand_token = config.server.require_token || !hosts.loopback_bind();
    if !hosts.loopback_bind() {
        let place = token_file.as_ref().map_or_else(
            || "the configured server.token".to_string(),
            |p| p.display().to_string(),
        );
        // Printed, not only logged: whoever starts it must see this.
        eprintln!(
            "openprogram: listening on {addr}, beyond this machine. Every request must send \
             \"Authorization: Bearer <token>\"; the token is in {place}."
        );
    }
    Ok(crate::security::Perimeter {
        hosts,
        token: demand_token.then_some(token),
        request_timeout: std::time::Duration::from_secs(config.server.request_timeout.max(1)),
        frame_limit: config.server.body_limit,
    })
}

/// The HTTP server on `listener`, running: the perimeter and the request
/// log around the routes, the web UI, `/ws` and `/metrics`.
fn http_server(
    config: &Config,
    state: web::Data<AppState>,
    perimeter: web::Data<crate::security::Perimeter>,
    mcp: web::Data<crate::mcp::http::McpService>,
    listener: TcpListener,
) -> std::io::Result<actix_web::dev::Server> {
    let body_limit = config.server.body_limit;
    let addr = listener.local_addr()?;
    let request_timeout = std::time::Duration::from_secs(config.server.request_timeout.max(1));
    let mut builder = actix_server::Server::build()
        .disable_signals()
        .shutdown_timeout(config.server.shutdown_timeout);
    if config.server.workers > 0 {
        builder = builder.workers(config.server.workers);
    }
    let shutdown = builder.graceful_shutdown_signal();
    let app = move || {
        App::new()
            .app_data(state.clone())
            .app_data(perimeter.clone())
            // Inside the perimeter: a request is checked before it is
            // forwarded to another node.
            .wrap(actix_web::middleware::from_fn(crate::cluster::route))
            .wrap(actix_web::middleware::from_fn(crate::security::guard))
            // Outermost: refused requests are logged and counted too.
            .wrap(actix_web::middleware::from_fn(
                crate::observe::requests::log_requests,
            ))
            .app_data(
                web::JsonConfig::default()
                    .limit(body_limit)
                    .error_handler(|e, _| error::json_error(e)),
            )
            .app_data(web::QueryConfig::default().error_handler(|e, _| error::query_error(e)))
            .app_data(web::PathConfig::default().error_handler(|e, _| error::path_error(e)))
            // Before the `/api` scope, which answers every path under it.
            .route(
                "/api/openapi.json",
                web::get().to(crate::openapi::openapi_json),
            )
            .configure(routes::configure)
            // Before the cluster's own scope, which answers every path under it.
            .service(
                web::resource("/cluster/v1/ws-action")
                    .app_data(web::PayloadConfig::new(crate::cluster::PUSH_LIMIT))
                    .route(web::post().to(crate::ws::forward::ws_action)),
            )
            .configure(crate::cluster::configure)
            .configure(crate::web::configure)
            .route("/ws", web::get().to(crate::ws::connect))
            .service(
                web::resource("/mcp")
                    .app_data(mcp.clone())
                    .app_data(web::PayloadConfig::new(body_limit))
                    .route(web::route().to(crate::mcp::http::serve)),
            )
            .route("/metrics", web::get().to(crate::observe::metrics::scrape))
            .default_service(web::to(not_found))
    };
    // As actix-web's own server builds it, over a stream that gives the
    // HTTP layer's own refusals a JSON body (see `connection`).
    let server = builder.listen("openprogram-http", listener, move || {
        let shutdown = shutdown.clone();
        let routes = app()
            .into_factory()
            .map_err(|e: actix_web::Error| e.error_response());
        let http = actix_http::HttpService::build()
            .graceful_shutdown_signal(move || {
                let signal = shutdown.clone();
                async move { signal.notified().await }
            })
            .client_request_timeout(request_timeout)
            .local_addr(addr)
            .finish(actix_service::map_config(routes, |_| {
                actix_web::dev::AppConfig::default()
            }));
        actix_service::fn_service(|io: actix_rt::net::TcpStream| async move {
            let peer = io.peer_addr().ok();
            Ok::<_, actix_http::error::DispatchError>((
                crate::connection::Answered::new(io),
                actix_http::Protocol::Http1,
                peer,
            ))
        })
        .and_then(http)
    })?;
    Ok(server.run())
}

/// `[runner] builtin = "llm"`: the built-in runner, on a thread of its own,
/// connected to this server over loopback like any other runner.
fn start_builtin_runner(config: &Config, addr: std::net::SocketAddr, state_dir: &std::path::Path) {
    match config.runner.builtin.trim() {
        "" => {}
        "llm" if config.llm.base_url.trim().is_empty() => {
            tracing::warn!("runner.builtin = \"llm\" but no LLM is configured (llm.base_url): no runner started");
        }
        "llm" => {
            let ip = if addr.ip().is_unspecified() {
                std::net::IpAddr::from([127, 0, 0, 1])
            } else {
                addr.ip()
            };
            let cfg = crate::runner::RunnerConfig {
                url: format!("http://{}", std::net::SocketAddr::new(ip, addr.port())),
                token: crate::security::token::read(state_dir),
                name: "llm".into(),
                llm: config.llm.clone(),
            };
            let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let spawned = std::thread::Builder::new()
                .name("runner-llm".into())
                .spawn(move || crate::runner::run(cfg, stop));
            if let Err(e) = spawned {
                tracing::warn!(error = %e, "the built-in runner did not start");
            }
        }
        other => tracing::warn!(
            runner = other,
            "unknown runner.builtin (only \"llm\" is built in): no runner started"
        ),
    }
}
