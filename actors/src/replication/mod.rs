//! Replication: every session pushed to git remotes as it changes, and
//! restored from them. Each `[[replication.remotes]]` entry gets a worker
//! thread that follows the change feed (`worker`); a `sync` remote is
//! also pushed before an end of turn is acknowledged (`push_now`). Pushes
//! are libgit2's (`push`), fast-forward only. `restore` brings sessions
//! back from a remote into a state directory.

pub mod batch;
pub mod credentials;
pub mod error;
pub mod open;
pub mod push;
pub mod remote;
pub mod restore;
pub mod state;
pub mod transport;
mod worker;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use actix::Recipient;
use serde::Serialize;

pub use error::{PushError, ReplicationError};
pub use remote::{Layout, Mode, RemoteConfig};

use crate::feed::Feed;
use crate::manager::Locate;
use state::{Saved, Status};
use worker::{Command, Worker};

/// The replication folder in the state directory.
pub const DIR: &str = "replication";

/// `[replication]`.
#[derive(Debug, Clone, Default)]
pub struct ReplicationConfig {
    pub remotes: Vec<RemoteConfig>,
    /// A deleted session's remote copy is deleted too (default: kept).
    pub delete_remote: bool,
}

impl ReplicationConfig {
    pub fn check(&self) -> Result<(), String> {
        let mut names = HashSet::new();
        for r in &self.remotes {
            r.check()?;
            if !names.insert(r.name.as_str()) {
                return Err(format!("replication remote {:?} is named twice", r.name));
            }
        }
        Ok(())
    }
}

/// Sessions being pushed to one remote: a session is pushed by one thread
/// at a time (the worker, or an end of turn of a `sync` remote).
#[derive(Default)]
pub struct SessionLocks {
    busy: Mutex<HashSet<String>>,
    freed: Condvar,
}

pub struct Held<'a> {
    locks: &'a SessionLocks,
    id: String,
}

impl SessionLocks {
    pub fn hold(&self, id: &str) -> Held<'_> {
        let mut busy = self.busy.lock().unwrap_or_else(|p| p.into_inner());
        while busy.contains(id) {
            busy = self.freed.wait(busy).unwrap_or_else(|p| p.into_inner());
        }
        busy.insert(id.to_string());
        Held {
            locks: self,
            id: id.to_string(),
        }
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        let mut busy = self.locks.busy.lock().unwrap_or_else(|p| p.into_inner());
        busy.remove(&self.id);
        self.locks.freed.notify_all();
    }
}

/// One remote as the engine holds it.
pub struct RemoteHandle {
    pub config: RemoteConfig,
    status: Mutex<Status>,
    locks: SessionLocks,
    commands: tokio::sync::mpsc::UnboundedSender<Command>,
    /// Sessions with an `Open` command on its way to the worker.
    touched: Mutex<HashSet<String>>,
    /// The worker's scratch repository (open states are built there).
    scratch: PathBuf,
}

impl RemoteHandle {
    fn lock_status(&self) -> MutexGuard<'_, Status> {
        self.status.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A push of session `id` made outside the worker, in the remote's
    /// state: pushed, or failed and queued for the worker (the feed holds
    /// it too). The error, when it failed.
    fn record<'a>(
        &self,
        id: &str,
        result: &'a Result<push::Pushed, PushError>,
    ) -> Result<(), &'a PushError> {
        let at = now();
        let mut status = self.lock_status();
        match result {
            Ok(p) => {
                status.saved.pending.remove(id);
                status.pushed(id, p.head.clone(), at);
                Ok(())
            }
            Err(error) => {
                status.saved.pending.entry(id.to_string()).or_insert(at);
                status.failed(id, error, at);
                Err(error)
            }
        }
    }

    /// Mark (`on`) or clear `id` as having an `Open` command in flight;
    /// true when the mark is new.
    fn touched(&self, id: &str, on: bool) -> bool {
        let mut set = self.touched.lock().unwrap_or_else(|p| p.into_inner());
        if on {
            set.insert(id.to_string())
        } else {
            set.remove(id)
        }
    }
}

/// A remote as `GET /api/replication` lists it.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RemoteView {
    pub name: String,
    /// The URL (any password cut out).
    pub url: String,
    /// `async` or `sync`.
    pub mode: &'static str,
    /// `shared` (one repository, `refs/sessions/<id>/…`) or `per_session`.
    pub layout: &'static str,
    /// Sessions with changes not on the remote yet.
    pub queue: usize,
    /// Seconds the oldest of them has waited.
    pub lag_seconds: f64,
    pub pushes: u64,
    pub failures: u64,
    pub sessions_pushed: usize,
    pub last_push_at: Option<f64>,
    /// `{code, message, at}` of the last failure.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub last_error: Option<state::Failure>,
}

/// One session on one remote (`replication` in `GET /api/sessions/{id}`).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SessionView {
    pub remote: String,
    /// The session's HEAD commit at its last push (null: never pushed).
    pub commit: Option<String>,
    pub pushed_at: Option<f64>,
    /// Changes of this session are waiting for the remote.
    pub pending: bool,
    pub lag_seconds: f64,
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub error: Option<state::Failure>,
}

/// The running replication (cheap to clone).
#[derive(Clone)]
pub struct Replication {
    remotes: Arc<Vec<Arc<RemoteHandle>>>,
}

pub fn now() -> f64 {
    crate::meta::now()
}

impl Replication {
    /// Start a worker per remote. A remote seen for the first time queues
    /// every session of `sessions` (id, folder): it catches up on its own;
    /// a known one queues those whose HEAD is not the commit it last
    /// pushed (a branch put back by a restart's replay, say).
    pub fn start(
        config: &ReplicationConfig,
        state_dir: &Path,
        feed: Feed,
        locate: Recipient<Locate>,
        sessions: impl Fn() -> Vec<(String, PathBuf)>,
    ) -> std::io::Result<Replication> {
        config
            .check()
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        let dir = state_dir.join(DIR);
        crate::fsio::create_private_dir_all(&dir)?;
        let mut remotes = Vec::new();
        for rc in &config.remotes {
            let state_path = dir.join(format!("{}.json", rc.name));
            let saved = Saved::load(&state_path)?;
            let fresh = saved.is_none();
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
            let handle = Arc::new(RemoteHandle {
                config: rc.clone(),
                status: Mutex::new(Status {
                    saved: saved.unwrap_or_default(),
                    ..Status::default()
                }),
                locks: SessionLocks::default(),
                commands: tx,
                touched: Mutex::default(),
                scratch: dir.join(format!("{}.scratch.git", rc.name)),
            });
            let mut worker = Worker {
                remote: handle.clone(),
                feed: feed.clone(),
                locate: locate.clone(),
                state_path,
                scratch: dir.join(format!("{}.scratch.git", rc.name)),
                stage: dir.join(format!("{}.stage.git", rc.name)),
                delete_remote: config.delete_remote,
                commands: rx,
                retry: Default::default(),
                remote_retry: None,
                open: Default::default(),
                startup: Vec::new(),
            };
            if fresh {
                worker.queue(sessions().into_iter().map(|(id, _)| id).collect());
            } else {
                worker.startup = sessions();
            }
            tracing::info!(remote = %rc.name, url = %remote::redact(&rc.url), mode = rc.mode.as_str(), layout = rc.layout().as_str(), queued = handle.lock_status().saved.pending.len(), "replication started");
            std::thread::Builder::new()
                .name(format!("replicate-{}", rc.name))
                .spawn(move || worker.run())?;
            remotes.push(handle);
        }
        Ok(Replication {
            remotes: Arc::new(remotes),
        })
    }

    pub fn is_empty(&self) -> bool {
        self.remotes.is_empty()
    }

    pub fn has_sync(&self) -> bool {
        self.remotes.iter().any(|r| r.config.mode == Mode::Sync)
    }

    /// After a purge: push `id` (in folder `dir`) to every remote now
    /// (blocking), the rewritten branches replacing the old ones under a
    /// lease. The remotes that did not take it, with why (kept queued).
    pub fn push_purged(&self, id: &str, dir: &Path) -> Vec<String> {
        let mut failed = Vec::new();
        for r in self.remotes.iter() {
            let result = {
                let _held = r.locks.hold(id);
                push::push_session(&r.config, id, dir).and_then(|p| {
                    // The open state built on the old tip goes too.
                    open::push_open(&r.config, &r.scratch, id, dir, true)?;
                    // A local remote keeps nothing the old history held.
                    if let Some(path) = push::local_path(&r.config.url_for(id)) {
                        if let Err(e) = git2::Repository::open_bare(&path)
                            .map_err(crate::git::GitError::from)
                            .and_then(|repo| crate::git::rewrite::keep_only_reachable(&repo))
                        {
                            tracing::warn!(remote = %r.config.name, error = %e, "the local remote keeps unreachable objects");
                        }
                    }
                    Ok(p)
                })
            };
            if let Err(error) = r.record(id, &result) {
                failed.push(format!("{}: {error}", r.config.name));
            }
        }
        failed
    }

    /// Push `id` (in folder `dir`) to every `sync` remote now (blocking):
    /// the first failure is the answer. The worker's queue keeps the
    /// change either way, so a failure is retried in the background.
    pub fn push_now(&self, id: &str, dir: &Path) -> Result<(), ReplicationError> {
        for r in self.remotes.iter().filter(|r| r.config.mode == Mode::Sync) {
            let result = {
                let _held = r.locks.hold(id);
                match push::push_session(&r.config, id, dir) {
                    Err(e) if push::clear_stale_lock(&r.config, id, &e) => {
                        push::push_session(&r.config, id, dir)
                    }
                    other => other,
                }
            };
            match r.record(id, &result) {
                Ok(()) => {
                    metrics::counter!("openprogram_replication_pushes_total", "remote" => r.config.name.clone()).increment(1);
                }
                Err(error) => {
                    metrics::counter!("openprogram_replication_failures_total", "remote" => r.config.name.clone(), "reason" => error.code()).increment(1);
                    return Err(ReplicationError {
                        remote: r.config.name.clone(),
                        error: error.clone(),
                    });
                }
            }
        }
        Ok(())
    }

    /// Session `id` wrote something it has not committed yet: every remote
    /// gets it within `worker::OPEN_DELAY`. One command per session is in
    /// flight at a time, so a streamed reply costs no memory here.
    pub fn touch(&self, id: &str) {
        for r in self.remotes.iter() {
            if r.touched(id, true) {
                let _ = r.commands.send(Command::Open(id.to_string()));
            }
        }
    }

    /// Queue `ids` on `remote` (every remote when None). False when no
    /// remote has that name.
    pub fn push_all(&self, remote: Option<&str>, ids: Vec<String>) -> bool {
        let mut any = false;
        for r in self
            .remotes
            .iter()
            .filter(|r| remote.is_none_or(|n| n == r.config.name))
        {
            any = true;
            let _ = r.commands.send(Command::PushAll(ids.clone()));
        }
        any
    }

    pub fn remotes(&self) -> Vec<RemoteView> {
        let at = now();
        self.remotes
            .iter()
            .map(|r| {
                let s = r.lock_status();
                RemoteView {
                    name: r.config.name.clone(),
                    url: remote::redact(&r.config.url),
                    mode: r.config.mode.as_str(),
                    layout: r.config.layout().as_str(),
                    queue: s.saved.pending.len(),
                    lag_seconds: s.lag(at),
                    pushes: s.pushes,
                    failures: s.failures,
                    sessions_pushed: s.saved.pushed.len(),
                    last_push_at: s.last_push_at,
                    last_error: s.last_error.clone(),
                }
            })
            .collect()
    }

    pub fn session(&self, id: &str) -> Vec<SessionView> {
        let at = now();
        self.remotes
            .iter()
            .map(|r| {
                let s = r.lock_status();
                let pushed = s.saved.pushed.get(id);
                let since = s.saved.pending.get(id);
                SessionView {
                    remote: r.config.name.clone(),
                    commit: pushed.and_then(|p| p.commit.clone()),
                    pushed_at: pushed.map(|p| p.at),
                    pending: since.is_some(),
                    lag_seconds: since.map(|t| (at - t).max(0.0)).unwrap_or(0.0),
                    error: s.errors.get(id).cloned(),
                }
            })
            .collect()
    }

    /// A configured remote by name.
    pub fn remote(&self, name: &str) -> Option<&RemoteConfig> {
        self.remotes
            .iter()
            .find(|r| r.config.name == name)
            .map(|r| &r.config)
    }
}

/// Where the state of `remote` is kept (for tools).
pub fn state_file(state_dir: &Path, remote: &str) -> PathBuf {
    state_dir.join(DIR).join(format!("{remote}.json"))
}
