//! The live mirror: while the server runs, the tools' folders are watched
//! (inotify, through the `notify` crate) and every file that changes is
//! imported again a moment later, so a turn shows up here as soon as the
//! tool has written its end. A catch-up pass over every folder runs at
//! start (what changed while the server was down), and files that still
//! hold a turn being written are looked at again until it is over.
//!
//! One task imports at a time; the watcher's thread only records which
//! files changed (a set, so a burst of writes costs one import).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use notify::{RecursiveMode, Watcher};
use serde::Serialize;

use super::{discover, ImportOptions, Tool};
use crate::engine::Engine;

/// How long a burst of writes to one file is waited out before importing.
const DEBOUNCE: Duration = Duration::from_millis(150);
/// How often files with a turn still being written are looked at again,
/// and missing folders looked for.
const RECHECK: Duration = Duration::from_secs(5);

/// The files that changed since the last import, shared with the
/// watcher's thread.
#[derive(Default)]
struct Changed {
    files: Mutex<BTreeSet<PathBuf>>,
    wake: tokio::sync::Notify,
}

/// A mirror: its tool and the folders it follows (none: the tool's own).
type MirrorKey = (Tool, Vec<PathBuf>);

/// The mirrors a server runs: each tool (and folders) once, however many
/// times it is asked for (the configuration, `POST /api/imports/watch`).
#[derive(Clone)]
pub struct Mirrors {
    engine: Engine,
    settle: Duration,
    running: Arc<Mutex<BTreeSet<MirrorKey>>>,
    status: Statuses,
}

/// How a tool's mirror is doing (`openprogram import doctor`).
#[derive(Debug, Clone, Default, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MirrorStatus {
    pub tool: String,
    /// The folders watched now.
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<String>))]
    pub folders: Vec<PathBuf>,
    /// Imports run, and when the last one ended (seconds since the epoch).
    pub imports: u64,
    pub last_import_at: Option<f64>,
    /// Seconds from the tool's last write of the files an import wrote
    /// turns from to the end of that import: the last, and the largest.
    pub last_lag_s: Option<f64>,
    pub max_lag_s: Option<f64>,
    /// Files holding a turn still being written, looked at again.
    pub files_waiting: u64,
    /// The last problems (an import that failed, files that could not be
    /// read), newest last.
    pub errors: Vec<String>,
}

type Statuses = Arc<Mutex<BTreeMap<Tool, MirrorStatus>>>;

/// Problems kept per mirror.
const ERRORS_KEPT: usize = 20;

impl Mirrors {
    pub fn new(engine: Engine, settle: Duration) -> Mirrors {
        Mirrors {
            engine,
            settle,
            running: Arc::default(),
            status: Statuses::default(),
        }
    }

    /// Every mirror's status, by tool.
    pub fn status(&self) -> Vec<MirrorStatus> {
        self.status
            .lock()
            .map(|s| s.values().cloned().collect())
            .unwrap_or_default()
    }

    /// Mirror `tool` from `roots` (none: its own folders) until the actix
    /// system stops; false when that mirror runs already. Call on the
    /// actix system.
    pub fn start(&self, tool: Tool, roots: Vec<PathBuf>) -> bool {
        let fresh = self
            .running
            .lock()
            .map(|mut r| r.insert((tool, roots.clone())))
            .unwrap_or(false);
        if fresh {
            let given = (!roots.is_empty()).then_some(roots);
            let m = Mirror {
                engine: self.engine.clone(),
                tool,
                settle: self.settle,
                status: self.status.clone(),
            };
            actix_rt::spawn(async move { m.run(given).await });
        }
        fresh
    }
}

/// One tool's mirror. `settle`: how long a file must stay untouched for
/// its last turn to count as over without the tool's own end-of-turn mark.
struct Mirror {
    engine: Engine,
    tool: Tool,
    settle: Duration,
    status: Statuses,
}

impl Mirror {
    fn update(&self, f: impl FnOnce(&mut MirrorStatus)) {
        if let Ok(mut all) = self.status.lock() {
            let s = all.entry(self.tool).or_insert_with(|| MirrorStatus {
                tool: self.tool.as_str().into(),
                ..MirrorStatus::default()
            });
            f(s);
        }
    }

    fn problem(&self, what: String) {
        self.update(|s| {
            s.errors.push(format!("{:.0} {what}", crate::meta::now()));
            let extra = s.errors.len().saturating_sub(ERRORS_KEPT);
            s.errors.drain(..extra);
        });
    }
}

/// The folders to watch: the given ones, else the tool's own; Aider's
/// are the registered projects (asked again at each check, so a project
/// registered later is followed too).
async fn roots_of(engine: &Engine, tool: Tool, given: &Option<Vec<PathBuf>>) -> Vec<PathBuf> {
    match (given, tool) {
        (Some(r), _) => r.clone(),
        (None, Tool::Aider) => engine
            .projects()
            .await
            .map(|ps| ps.into_iter().map(|p| p.path).collect())
            .unwrap_or_default(),
        (None, _) => super::default_roots(tool),
    }
}

impl Mirror {
    async fn run(self, given: Option<Vec<PathBuf>>) {
        let (engine, tool) = (&self.engine, self.tool);
        let mut roots = roots_of(engine, tool, &given).await;
        let changed = Arc::new(Changed::default());
        let sink = changed.clone();
        let watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
            let Ok(event) = res else { return };
            if matches!(event.kind, notify::EventKind::Access(_)) {
                return;
            }
            let wanted: Vec<PathBuf> = event
                .paths
                .into_iter()
                .filter_map(|p| super::history_file_of(tool, &p))
                .collect();
            if wanted.is_empty() {
                return;
            }
            if let Ok(mut files) = sink.files.lock() {
                files.extend(wanted);
            }
            sink.wake.notify_one();
        });
        let mut watcher = match watcher {
            Ok(w) => w,
            Err(e) => {
                tracing::error!(tool = tool.as_str(), error = %e, "the live mirror cannot watch files");
                return;
            }
        };
        let mut watched: BTreeSet<PathBuf> = BTreeSet::new();
        let mut waiting: BTreeSet<PathBuf> = BTreeSet::new();
        // The catch-up pass: everything, once the folders are watched (so a
        // write during the pass is seen too).
        watch_roots(&mut watcher, &roots, &mut watched, tool);
        self.update(|s| s.folders = watched.iter().cloned().collect());
        let all = {
            let roots = roots.clone();
            tokio::task::spawn_blocking(move || discover(tool, &roots))
                .await
                .unwrap_or_default()
        };
        self.import(all, &mut waiting).await;
        loop {
            let _ = tokio::time::timeout(RECHECK, changed.wake.notified()).await;
            tokio::time::sleep(DEBOUNCE).await;
            if tool == Tool::Aider {
                roots = roots_of(engine, tool, &given).await;
            }
            let appeared = watch_roots(&mut watcher, &roots, &mut watched, tool);
            if !appeared.is_empty() {
                self.update(|s| s.folders = watched.iter().cloned().collect());
            }
            let mut files: Vec<PathBuf> = match changed.files.lock() {
                Ok(mut f) => std::mem::take(&mut *f).into_iter().collect(),
                Err(_) => Vec::new(),
            };
            // A folder that appeared since the last check (the tool's first
            // run): what the tool wrote before it was watched is read whole.
            if !appeared.is_empty() {
                let found = tokio::task::spawn_blocking(move || discover(tool, &appeared))
                    .await
                    .unwrap_or_default();
                files.extend(found);
            }
            files.extend(waiting.iter().cloned());
            files.sort();
            files.dedup();
            if !files.is_empty() {
                self.import(files, &mut waiting).await;
            }
        }
    }
}

/// Watch the roots that exist and are not watched yet (a tool installed
/// after the server started is picked up at the next check). Returns the
/// roots newly watched.
fn watch_roots(
    watcher: &mut notify::RecommendedWatcher,
    roots: &[PathBuf],
    watched: &mut BTreeSet<PathBuf>,
    tool: Tool,
) -> Vec<PathBuf> {
    let mut appeared = Vec::new();
    for given in roots {
        // A file (opencode's database) is watched through its folder,
        // where its write-ahead file changes too.
        let (root, mode) = match (given.is_file(), tool) {
            (true, _) => match given.parent() {
                Some(dir) => (dir.to_path_buf(), RecursiveMode::NonRecursive),
                None => continue,
            },
            // Aider's file is at the top of its repository: the folder alone.
            (false, Tool::Aider) => (given.clone(), RecursiveMode::NonRecursive),
            (false, _) => (given.clone(), RecursiveMode::Recursive),
        };
        if watched.contains(&root) || !root.is_dir() {
            continue;
        }
        let root = &root;
        match watcher.watch(root, mode) {
            Ok(()) => {
                tracing::info!(tool = tool.as_str(), folder = %root.display(), "live mirror watching");
                watched.insert(root.clone());
                appeared.push(given.clone());
            }
            Err(e) => {
                tracing::warn!(tool = tool.as_str(), folder = %root.display(), error = %e, "the live mirror cannot watch a folder")
            }
        }
    }
    appeared
}

impl Mirror {
    async fn import(&self, files: Vec<PathBuf>, waiting: &mut BTreeSet<PathBuf>) {
        let tool = self.tool;
        let opts = ImportOptions {
            tool,
            paths: files.clone(),
            since: None,
            dry_run: false,
            projects: true,
            settle: self.settle,
        };
        // The tool's last write of these files, for the lag.
        let written = {
            let files = files.clone();
            tokio::task::spawn_blocking(move || newest_write(&files))
                .await
                .unwrap_or(None)
        };
        match self.engine.import_history(opts, &|_| {}).await {
            Ok(sum) => {
                for f in &files {
                    waiting.remove(f);
                }
                waiting.extend(sum.open_files.iter().cloned());
                let wrote = sum.turns + sum.turns_continued > 0;
                let now = crate::meta::now();
                let waiting_n = waiting.len() as u64;
                self.update(|s| {
                    s.imports += 1;
                    s.last_import_at = Some(now);
                    s.files_waiting = waiting_n;
                    if let (true, Some(at)) = (wrote, written) {
                        let lag = (now - at).max(0.0);
                        s.last_lag_s = Some(lag);
                        s.max_lag_s = Some(s.max_lag_s.map_or(lag, |m| m.max(lag)));
                    }
                });
                for e in &sum.errors {
                    self.problem(format!("{}: {}", e.file, e.reason));
                }
                if sum.turns > 0 || !sum.errors.is_empty() {
                    tracing::info!(
                        tool = tool.as_str(),
                        turns = sum.turns,
                        sessions_new = sum.sessions_new,
                        errors = sum.errors.len(),
                        "live mirror imported"
                    );
                }
            }
            Err(e) => {
                tracing::warn!(tool = tool.as_str(), error = %e, "live mirror import failed; retried at the next change");
                self.problem(format!("an import failed: {e}"));
                waiting.extend(files);
            }
        }
    }
}

/// The newest modification time of `files` (seconds since the epoch).
fn newest_write(files: &[PathBuf]) -> Option<f64> {
    files
        .iter()
        .filter_map(|f| std::fs::metadata(f).ok()?.modified().ok())
        .filter_map(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_secs_f64())
        .reduce(f64::max)
}
