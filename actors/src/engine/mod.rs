//! `Engine`: the async facade the service (or any embedder) calls. Each
//! call resolves the session's actor through the manager and sends it one
//! message; a request that meets an actor which just stopped is retried once
//! on a fresh actor. Every method answers `EngineError`.
//!
//! This file starts the actors and holds the plumbing and the registry
//! reads; `sessions` (one session's life), `projects` (projects, binding,
//! relocation) and `transfer` (fork, import, export) hold the rest.

mod changes;
mod cluster;
mod projects;
mod provenance;
pub mod purge;
mod replication;
mod search;
mod session_store;
mod sessions;
mod transfer;
mod turns;
mod undo;
mod verify;

pub use changes::{ChangeItem, ChangesPage, MAX_CHANGES, MAX_WAIT};
pub use projects::Relocation;
pub use provenance::{Pointer, Resolved, MAX_POINTERS};
pub use search::{HitPlace, SearchQuery, SearchResult, SessionHits};
pub use session_store::{
    StoreAppended, StoreKey, StoredSession, MAX_ENTRIES as MAX_STORE_ENTRIES,
    SOURCE as STORE_SOURCE,
};
pub use turns::WholeTurn;
pub use undo::{Undone, MAX_REVERT_TURNS};

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use actix::prelude::*;

use crate::error::EngineError;
use crate::events::Hub;
use crate::locations::LocationsWriter;
use crate::manager::{LiveCount, SessionManager, SetNaming, Via, ViaError};
use crate::messages::SessionChanged;
use crate::paths::PathPolicy;
use crate::project::registry as projects_state;
use crate::project::{ProjectError, ProjectRegistry};
use crate::registry::actor::{Flush, GetRow, List, Members, Settled, Stats};
use crate::registry::startup::{self, Report};
use crate::registry::writer::Writer;
use crate::registry::{ListQuery, Page, Policy, RegistryStats, SessionRegistry, SessionRow};
use crate::session::actor::Naming;
use crate::session::{SessionActor, SessionError};
use crate::store::{Opening, Store};

pub use crate::git::ImportLimits;
use crate::titler::{LlmConfig, Titler};

/// How to run the engine.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// `<state>/sessions`.
    pub sessions_dir: PathBuf,
    /// Live session actors kept (LRU).
    pub cache_cap: usize,
    /// Automatic deletion rules applied at startup.
    pub policy: Policy,
    /// Interval of the debounced index writes.
    pub index_debounce: Duration,
    /// The LLM used for session titles (an empty base URL: none).
    pub llm: LlmConfig,
    /// At most this many title requests at once.
    pub title_concurrency: usize,
    /// Assistant-reply counts at which an LLM title is made.
    pub retitle_at: Vec<u32>,
    /// Folders accepted as projects or working directories whatever the
    /// system-folder rules (`projects.allowed_roots`).
    pub allowed_roots: Vec<PathBuf>,
    /// Caps on what an imported bundle may unpack to.
    pub import_limits: ImportLimits,
    /// Keep the full-text index (`[search] enabled`).
    pub search: bool,
    /// How long a pack merged into another stays readable beside it
    /// before its files are removed.
    pub retired_pack_grace: Duration,
    /// Git remotes every session is pushed to (`[replication]`).
    pub replication: crate::replication::ReplicationConfig,
    /// What is done with secrets in stored text (`[redaction]`).
    pub redaction: crate::redact::RedactionConfig,
}

#[derive(Clone)]
pub struct Engine {
    /// The state directory's layout and write-ahead log.
    store: Store,
    paths: std::sync::Arc<PathPolicy>,
    import_limits: ImportLimits,
    manager: Addr<SessionManager>,
    registry: Addr<SessionRegistry>,
    projects: Addr<ProjectRegistry>,
    titler: Addr<Titler>,
    titler_counts: std::sync::Arc<crate::titler::actor::Counts>,
    /// None when search is turned off.
    search: Option<Addr<crate::search::Search>>,
    /// Sessions waiting for the search indexer (None when search is off).
    search_backlog: Option<crate::search::Backlog>,
    keeper: crate::pack_keeper::PackKeeper,
    /// None without remotes (or when read-only).
    replication: Option<crate::replication::Replication>,
    /// None without `[cluster]`.
    cluster: Option<crate::cluster::Cluster>,
    hub: Hub,
    /// Started on a full disk: reads only (`writable`).
    read_only: bool,
}

impl Engine {
    /// Run the registry's startup maintenance (blocking: call it before
    /// serving), then start the registry and session manager actors on the
    /// current arbiter.
    pub fn start(config: EngineConfig) -> std::io::Result<(Engine, Report)> {
        crate::git::enable_fsync();
        match crate::fsio::raise_open_files() {
            Ok(n) => tracing::debug!(open_files = n, "open-file limit"),
            Err(e) => tracing::warn!(error = %e, "the open-file limit could not be raised"),
        }
        // Before anything reads a session: what the log holds goes back in
        // place. On a disk that is full, the log cannot be replayed (its
        // files are rewritten in place): it stays as it is, for the next
        // start, and this one serves reads only (`EngineError::ReadOnly`).
        let (mut store, opening) = Store::open(&config.sessions_dir)?;
        let redactor = crate::redact::Redactor::new(&config.redaction, store.state_dir())
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string()))?;
        store.set_redactor(std::sync::Arc::new(redactor));
        let mut closed = store.closed_cleanly();
        let (read_only, pending) = match opening {
            Opening::Writable(replayed) => {
                log_replay(&replayed);
                if replayed.entries > 0 {
                    // Whatever the mark says, the log had writes for the
                    // sessions: check them all.
                    closed = None;
                }
                (false, Default::default())
            }
            Opening::ReadOnly { pending, error } => {
                closed = None;
                // Sessions whose files lack what the log holds are not shown.
                tracing::error!(error = %error, sessions_waiting = pending.len(), "the disk is full: the write-ahead log was not replayed; serving reads only until a restart with space free");
                (true, pending)
            }
        };
        let state_dir = store.state_dir().to_path_buf();
        // The search index opens on its own thread while the list is read.
        // Read-only: no search (its index is written as it is read) and no
        // automatic deletions.
        let opening = (config.search && !read_only).then(|| {
            let state_dir = state_dir.clone();
            std::thread::spawn(move || crate::search::Opened::open(&state_dir))
        });
        let mut locations = store.locations();
        let policy = if read_only {
            // Started on a full disk: no automatic deletions.
            Policy {
                empty_shell_max_age_s: 0.0,
                archive_ttl_days: 0.0,
                max_sessions: 0,
            }
        } else {
            config.policy.clone()
        };
        let loaded = startup::open(&store, &locations, &policy, closed)?;
        drop_locations(&mut locations, &loaded.report.dropped_locations)?;
        let hub = Hub::new();
        let paths = PathPolicy::new(&state_dir, config.allowed_roots.clone());
        let writer = Writer::spawn(store.session_list_file())?;
        // Where each session lives: one map, shared by search and the
        // startup validation.
        let dirs = std::sync::Arc::new(loaded.dirs);
        let search = match opening {
            Some(opening) => Some(start_search(opening, &loaded.rows, dirs.clone())?),
            None => None,
        };
        let (search_backlog, search) = search.unzip();
        let mut registry =
            SessionRegistry::new(loaded.rows, writer, config.index_debounce, loaded.seq)
                .with_hub(hub.clone());
        if let Some(search) = &search {
            registry = registry.with_search(search.clone().recipient());
        }
        let registry = registry.start();
        let projects =
            ProjectRegistry::new(projects_state::State::load(&state_dir, paths.clone())?)
                .with_names(registry.clone().recipient())
                .start();
        let writer = LocationsWriter::spawn(locations.path().to_path_buf())?;
        let keeper = crate::pack_keeper::PackKeeper::spawn(
            config.retired_pack_grace,
            Some(crate::pack_keeper::forget_through_log(store.clone())),
        )?;
        let manager = SessionManager::new(
            store.clone(),
            locations,
            writer,
            config.cache_cap,
            Some(registry.clone().recipient::<SessionChanged>()),
            Some(projects.clone()),
        )
        .with_pack_keeper(keeper.clone())
        .with_pending(pending)
        .start();
        let replication = match store.feed() {
            Some(feed) if !read_only && !config.replication.remotes.is_empty() => {
                let scan = store.clone();
                Some(crate::replication::Replication::start(
                    &config.replication,
                    &state_dir,
                    feed,
                    manager.clone().recipient(),
                    move || scan.all_session_folders().unwrap_or_default(),
                )?)
            }
            _ => None,
        };
        let (titler, titler_counts) = start_titler(
            config.llm,
            config.title_concurrency,
            config.retitle_at,
            &manager,
        );
        let engine = Engine {
            store,
            paths: std::sync::Arc::new(paths),
            import_limits: config.import_limits,
            manager,
            registry,
            projects,
            titler,
            titler_counts,
            search,
            search_backlog,
            keeper,
            replication,
            cluster: None,
            hub,
            read_only,
        };
        if !read_only {
            engine.verify_in_background(dirs);
        }
        Ok((engine, loaded.report))
    }

    /// The state directory this engine serves.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Whether this engine started on a full disk and refuses writes.
    pub fn read_only(&self) -> bool {
        self.read_only
    }

    /// `ReadOnly` when the engine refuses writes; every method that
    /// writes starts with it.
    pub(crate) fn writable(&self) -> Result<(), EngineError> {
        if self.read_only {
            return Err(EngineError::ReadOnly);
        }
        Ok(())
    }

    /// Send `msg` to the session's actor (started if needed) and return
    /// its answer. A request that meets an actor which just stopped is
    /// retried once on a fresh actor.
    async fn call<M, R>(&self, id: &str, msg: M) -> Result<R, EngineError>
    where
        M: Message<Result = Result<R, SessionError>> + Clone + Send + 'static,
        R: Send + 'static,
        SessionActor: Handler<M>,
    {
        for _ in 0..2 {
            crate::stage::enter("the session's actor: its queue or its write");
            let sent = self
                .manager
                .send(Via(id.to_string(), msg.clone(), crate::stage::current()))
                .await
                .map_err(|_| EngineError::Unavailable);
            crate::stage::enter("its handler");
            let sent = sent?;
            match sent {
                Ok(r) => return Ok(r?),
                Err(ViaError::Closed) => continue,
                Err(ViaError::Resolve(e)) => return Err(e.into()),
                Err(ViaError::Timeout) => return Err(SessionError::Unavailable.into()),
            }
        }
        Err(SessionError::Unavailable.into())
    }

    /// Ask the session manager (its answers are I/O results).
    async fn ask_manager<M, R>(&self, msg: M) -> Result<R, EngineError>
    where
        M: Message<Result = std::io::Result<R>> + Send + 'static,
        R: Send + 'static,
        SessionManager: Handler<M>,
    {
        crate::stage::enter("the session manager");
        let answer = self.manager.send(msg).await;
        crate::stage::enter("its handler");
        Ok(answer.map_err(|_| EngineError::Unavailable)??)
    }

    /// Ask the project registry; a stopped mailbox is `Unavailable`.
    async fn ask_projects<M, R>(&self, msg: M) -> Result<R, EngineError>
    where
        M: Message<Result = Result<R, ProjectError>> + Send + 'static,
        R: Send + 'static,
        ProjectRegistry: Handler<M>,
    {
        crate::stage::enter("the project registry");
        let answer = self.projects.send(msg).await;
        crate::stage::enter("its handler");
        Ok(answer.map_err(|_| EngineError::Unavailable)??)
    }

    /// The session list, from memory.
    pub async fn list(&self, query: ListQuery) -> Result<Page, EngineError> {
        self.registry
            .send(List(query))
            .await
            .map_err(|_| EngineError::Unavailable)
    }

    /// One registry row, from memory.
    pub async fn row(&self, id: &str) -> Result<Option<SessionRow>, EngineError> {
        self.registry
            .send(GetRow(id.to_string()))
            .await
            .map_err(|_| EngineError::Unavailable)
    }

    /// Which sessions each project holds now, from memory.
    async fn members(&self) -> Result<HashMap<String, Vec<String>>, EngineError> {
        self.registry
            .send(Members)
            .await
            .map_err(|_| EngineError::Unavailable)
    }

    /// Write index.json now and wait for it (graceful shutdown).
    pub async fn flush(&self) {
        let _ = self.registry.send(Flush).await;
    }

    /// The last step of a graceful stop, after `close_log`: when the list
    /// has not changed since the flush that wrote `index.json` whole,
    /// leave the clean-shutdown mark (`store/closed.rs`), so the next start
    /// need not look at every session's `meta.json`.
    pub async fn mark_closed(&self) {
        let Ok(Some(seq)) = self.registry.send(Settled).await else {
            tracing::debug!(
                "the session list changed after its last write: no clean-shutdown mark"
            );
            return;
        };
        let store = self.store.clone();
        match tokio::task::spawn_blocking(move || store.mark_closed(seq)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "clean-shutdown mark not written; the next start checks every session")
            }
            Err(_) => {}
        }
    }

    /// Start no more pack merges and wait (up to `within`) for the one
    /// running, so a shutdown never cuts one short (graceful shutdown).
    pub async fn stop_maintenance(&self, within: std::time::Duration) {
        let keeper = self.keeper.clone();
        let stopped = tokio::task::spawn_blocking(move || keeper.stop(within)).await;
        if !matches!(stopped, Ok(true)) {
            tracing::warn!("a pack merge was still running at shutdown; its pack is left beside the old ones (harmless, merged again later)");
        }
    }

    /// Flush the write-ahead log and make every file it covers durable
    /// (the last step of a shutdown; later writes sync on their own).
    pub async fn close_log(&self) {
        let store = self.store.clone();
        let _ = tokio::task::spawn_blocking(move || store.close_log()).await;
    }

    pub async fn registry_stats(&self) -> Option<RegistryStats> {
        self.registry.send(Stats).await.ok()
    }

    /// Broadcast a frame to every client (e.g. the service's `sessions_list`
    /// after a chat message is dispatched).
    pub fn publish(&self, kind: &str, data: serde_json::Value) {
        self.hub.publish(kind, data, None);
    }

    /// The event hub clients subscribe to.
    pub fn hub(&self) -> &crate::events::Hub {
        &self.hub
    }

    /// Subscribe to the change events every client should see.
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<crate::events::Event> {
        self.hub.subscribe()
    }

    /// The titler's queue and in-flight requests.
    pub fn titler_stats(&self) -> crate::titler::actor::TitlerStats {
        self.titler_counts.stats()
    }

    /// Sessions queued for the search indexer or being indexed.
    pub fn search_backlog(&self) -> Option<usize> {
        self.search_backlog
            .as_ref()
            .map(crate::search::Backlog::get)
    }

    pub async fn live_sessions(&self) -> usize {
        self.manager.send(LiveCount).await.unwrap_or(0)
    }
}

/// The titler, answering to `manager`, which hands it the naming jobs of
/// every session it starts from now on.
fn start_titler(
    llm: LlmConfig,
    concurrency: usize,
    retitle_at: Vec<u32>,
    manager: &Addr<SessionManager>,
) -> (Addr<Titler>, std::sync::Arc<crate::titler::actor::Counts>) {
    let titler = Titler::new(llm, concurrency, manager.clone().recipient());
    let counts = titler.counts();
    let titler = titler.start();
    manager.do_send(SetNaming(Naming {
        titler: titler.clone().recipient(),
        retitle_at,
    }));
    (titler, counts)
}

/// Remove the `locations.json` entries startup found dead (and save it if
/// any was there).
fn drop_locations(
    locations: &mut crate::locations::Locations,
    ids: &[String],
) -> std::io::Result<()> {
    let mut dropped = false;
    for id in ids {
        dropped |= locations.remove(id);
    }
    if dropped {
        locations.save_now()?;
    }
    Ok(())
}

/// Say what a replay of the write-ahead log did, if it found anything.
fn log_replay(replayed: &crate::wal::Replayed) {
    if replayed.entries > 0 {
        tracing::info!(
            segments = replayed.segments,
            entries = replayed.entries,
            applied = replayed.applied,
            skipped = replayed.skipped,
            torn = replayed.torn,
            "write-ahead log replayed"
        );
    }
}

type SearchStart = (crate::search::Backlog, Addr<crate::search::Search>);

/// The search index, opened on its own thread (`opening`), caught up with
/// the listed sessions, and its actor started.
fn start_search(
    opening: std::thread::JoinHandle<tantivy::Result<crate::search::Opened>>,
    rows: &HashMap<String, std::sync::Arc<crate::registry::SessionRow>>,
    dirs: std::sync::Arc<HashMap<String, PathBuf>>,
) -> std::io::Result<SearchStart> {
    let opened = opening
        .join()
        .map_err(|_| std::io::Error::other("search index: opening panicked"))?
        .map_err(|e| std::io::Error::other(format!("search index: {e}")))?;
    let search = opened.catch_up_known(rows.values().cloned().collect(), dirs);
    Ok((search.backlog(), search.start()))
}
