//! The live mirror: while the server runs, the tools' folders are watched
//! (inotify, through the `notify` crate) and every file that changes is
//! imported again a moment later, so a turn shows up here as soon as the
//! tool has written its end. A catch-up pass over every folder runs at
//! start (what changed while the server was down), and files that still
//! hold a turn being written are looked at again until it is over.
//!
//! One task imports at a time; the watcher's thread only records which
//! files changed (a set, so a burst of writes costs one import).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use notify::{RecursiveMode, Watcher};

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
}

impl Mirrors {
    pub fn new(engine: Engine, settle: Duration) -> Mirrors {
        Mirrors {
            engine,
            settle,
            running: Arc::default(),
        }
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
            spawn(self.engine.clone(), vec![tool], self.settle, given);
        }
        fresh
    }
}

/// Mirror `tools` into `engine` until the actix system stops. `settle`:
/// how long a file must stay untouched for its last turn to count as over
/// without the tool's own end-of-turn mark. `roots`: folders to watch
/// instead of the tools' own (tests).
pub fn spawn(engine: Engine, tools: Vec<Tool>, settle: Duration, roots: Option<Vec<PathBuf>>) {
    for tool in tools {
        let engine = engine.clone();
        let roots = roots.clone();
        actix_rt::spawn(async move {
            mirror(engine, tool, settle, roots).await;
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

async fn mirror(engine: Engine, tool: Tool, settle: Duration, given: Option<Vec<PathBuf>>) {
    let mut roots = roots_of(&engine, tool, &given).await;
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
    let all = {
        let roots = roots.clone();
        tokio::task::spawn_blocking(move || discover(tool, &roots))
            .await
            .unwrap_or_default()
    };
    import(&engine, tool, settle, all, &mut waiting).await;
    loop {
        let _ = tokio::time::timeout(RECHECK, changed.wake.notified()).await;
        tokio::time::sleep(DEBOUNCE).await;
        if tool == Tool::Aider {
            roots = roots_of(&engine, tool, &given).await;
        }
        let appeared = watch_roots(&mut watcher, &roots, &mut watched, tool);
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
            import(&engine, tool, settle, files, &mut waiting).await;
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

async fn import(
    engine: &Engine,
    tool: Tool,
    settle: Duration,
    files: Vec<PathBuf>,
    waiting: &mut BTreeSet<PathBuf>,
) {
    let opts = ImportOptions {
        tool,
        paths: files.clone(),
        since: None,
        dry_run: false,
        projects: true,
        settle,
    };
    match engine.import_history(opts, &|_| {}).await {
        Ok(sum) => {
            for f in &files {
                waiting.remove(f);
            }
            waiting.extend(sum.open_files.iter().cloned());
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
            waiting.extend(files);
        }
    }
}
