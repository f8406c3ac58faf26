//! The pack keeper: one thread that merges the small packs of sessions
//! (`git::repack`), off every session's write path. A session's actor asks
//! for a merge when it is idle (or when its packs pile up); this thread
//! plans and writes the merged pack, which only adds a file beside the
//! session's objects, then moves the merged packs out of `objects/pack`
//! then retires the merged packs (`git::repack::drop_packs`: marked, left
//! in place for a grace period so that a reader that listed them can still
//! open them). The actor then opens a fresh handle between two of its
//! writes and gives the old one back to this thread, which closes it; the
//! retired files are removed once their grace is over. One merge at a time
//! for the whole server, each followed by a rest as long as it took, so
//! maintenance uses at most half of one core.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use tokio::sync::OwnedMutexGuard;

use crate::git::{self, GitError};

/// The packs a merge retired; the session then opens a fresh handle
/// (`SessionCore::drop_merged`).
pub type Merged = Option<Vec<PathBuf>>;

enum Job {
    Merge {
        git_dir: PathBuf,
        /// At most this many objects merged (a busy session).
        cap: Option<usize>,
        /// Held until the merged pack is written: a deletion of the
        /// session waits for it.
        guard: OwnedMutexGuard<()>,
        reply: tokio::sync::oneshot::Sender<Result<Merged, GitError>>,
    },
    /// A session let go of the merged packs: close its old repository
    /// handle (its maps of them); the files go once their grace is over
    /// (`git::repack::purge_merged`).
    Retire {
        git_dir: PathBuf,
        old: git2::Repository,
    },
}

#[derive(Default)]
struct Shared {
    stop: AtomicBool,
    busy: Mutex<bool>,
    idle: Condvar,
}

#[derive(Clone)]
pub struct PackKeeper {
    tx: Sender<Job>,
    shared: Arc<Shared>,
}

impl PackKeeper {
    /// The keeper's thread; retired packs are removed `grace` after
    /// their merge.
    pub fn spawn(grace: Duration) -> std::io::Result<PackKeeper> {
        let (tx, rx) = crossbeam_channel::unbounded();
        let shared = Arc::new(Shared::default());
        let s = shared.clone();
        std::thread::Builder::new()
            .name("pack-keeper".into())
            .spawn(move || run(rx, s, grace))?;
        Ok(PackKeeper { tx, shared })
    }

    /// Merge the packs of the repository at `git_dir` if it has too many;
    /// the merged packs are returned for the session to drop.
    pub async fn merge(
        &self,
        git_dir: PathBuf,
        cap: Option<usize>,
        guard: OwnedMutexGuard<()>,
    ) -> Result<Merged, GitError> {
        self.submit(git_dir, cap, guard).await.unwrap_or(Ok(None))
    }

    /// `merge`, answered on the returned channel (for callers outside an
    /// async runtime: the benchmark).
    pub fn submit(
        &self,
        git_dir: PathBuf,
        cap: Option<usize>,
        guard: OwnedMutexGuard<()>,
    ) -> tokio::sync::oneshot::Receiver<Result<Merged, GitError>> {
        let (reply, rx) = tokio::sync::oneshot::channel();
        let job = Job::Merge {
            git_dir,
            cap,
            guard,
            reply,
        };
        // A keeper gone answers nothing: the receiver sees it closed.
        let _ = self.tx.send(job);
        rx
    }

    /// After a merge, the session at `git_dir` opened a fresh handle: close
    /// the `old` one on the keeper's thread (unmapping a few hundred packs
    /// took the session's step 3–11 ms), and remove the retired packs once
    /// their grace is over.
    pub fn retire(&self, git_dir: PathBuf, old: git2::Repository) {
        let _ = self.tx.send(Job::Retire { git_dir, old });
    }

    /// Take no new merge, and wait up to `within` for the one running.
    /// True when none is left running.
    pub fn stop(&self, within: Duration) -> bool {
        self.shared.stop.store(true, Ordering::SeqCst);
        let Ok(busy) = self.shared.busy.lock() else {
            return false;
        };
        match self
            .shared
            .idle
            .wait_timeout_while(busy, within, |busy| *busy)
        {
            Ok((busy, _)) => !*busy,
            Err(_) => false,
        }
    }
}

fn set_busy(shared: &Shared, value: bool) {
    if let Ok(mut busy) = shared.busy.lock() {
        *busy = value;
    }
    shared.idle.notify_all();
}

/// Give the keeper's thread the lowest CPU and disk priority: a merge's
/// compression and its pack's fsync then wait for the turns' own work and
/// flushes instead of delaying them (the end of turn's p99 was 4× its
/// p50 with merges running, 1.8× without). Best effort.
fn lower_priority() {
    // SAFETY: plain syscalls about the calling thread (who = 0); on Linux
    // the nice value and the I/O priority are per thread.
    let (nice, io) = unsafe {
        (
            libc::setpriority(libc::PRIO_PROCESS, 0, 19),
            // IOPRIO_WHO_PROCESS, this thread, IOPRIO_CLASS_IDLE << 13.
            libc::syscall(libc::SYS_ioprio_set, 1, 0, 3 << 13),
        )
    };
    if nice != 0 || io != 0 {
        tracing::debug!("pack keeper: priority not lowered");
    }
}

fn run(rx: Receiver<Job>, shared: Arc<Shared>, grace: Duration) {
    lower_priority();
    // Sessions with retired packs, and when their grace is over.
    let mut due: std::collections::HashMap<PathBuf, Instant> = Default::default();
    loop {
        let next = due.values().min().copied();
        let job = match next {
            Some(at) => match rx.recv_deadline(at) {
                Ok(job) => Some(job),
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => None,
                Err(crossbeam_channel::RecvTimeoutError::Disconnected) => break,
            },
            None => match rx.recv() {
                Ok(job) => Some(job),
                Err(_) => break,
            },
        };
        let now = Instant::now();
        let ready: Vec<PathBuf> = due
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(dir, _)| dir.clone())
            .collect();
        for dir in ready {
            due.remove(&dir);
            purge(&dir, grace);
        }
        let Some(job) = job else {
            continue;
        };
        let stopping = shared.stop.load(Ordering::SeqCst);
        let (git_dir, cap, guard, reply) = match job {
            Job::Merge { reply, .. } if stopping => {
                let _ = reply.send(Ok(None));
                continue;
            }
            Job::Retire { old, .. } if stopping => {
                drop(old);
                continue;
            }
            Job::Retire { git_dir, old } => {
                set_busy(&shared, true);
                drop(old);
                set_busy(&shared, false);
                // A little after the grace, so that every mark is due.
                due.insert(git_dir, Instant::now() + grace + Duration::from_millis(50));
                continue;
            }
            Job::Merge {
                git_dir,
                cap,
                guard,
                reply,
            } => (git_dir, cap, guard, reply),
        };
        set_busy(&shared, true);
        let started = Instant::now();
        let result = merge_one(&git_dir, cap, grace);
        set_busy(&shared, false);
        let took = started.elapsed();
        drop(guard);
        let _ = reply.send(result);
        // A rest as long as the work: at most half of one core.
        if !shared.stop.load(Ordering::SeqCst) {
            std::thread::sleep(took.min(Duration::from_secs(5)));
        }
    }
}

/// Remove a session's retired packs whose grace is over; a failure only
/// leaves duplicates behind, removed at its next merge.
fn purge(git_dir: &std::path::Path, grace: Duration) {
    if let Err(e) = git::repack::purge_merged(git_dir, grace) {
        tracing::debug!(git_dir = %git_dir.display(), error = %e, "retired packs not removed yet");
    }
}

fn merge_one(
    git_dir: &std::path::Path,
    cap: Option<usize>,
    grace: Duration,
) -> Result<Merged, GitError> {
    // What an earlier merge retired and a crash or a stop left behind.
    purge(git_dir, grace);
    let Some(victims) = git::repack::plan(git_dir, cap)? else {
        return Ok(None);
    };
    let repo = git2::Repository::open(git_dir)?;
    let written = if cap.is_some() {
        // Busy: copied, to keep up with the turns; compressed once idle.
        git::repack::build_copy(&repo, &victims)?
    } else {
        git::repack::build(&repo, &victims)?
    };
    git::repack::drop_packs(&victims, &written)?;
    Ok(Some(
        victims.into_iter().filter(|v| *v != written).collect(),
    ))
}
