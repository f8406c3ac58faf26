//! The pack keeper: two threads that merge the small packs of sessions
//! (`git::repack`), off every session's write path. A session's actor asks
//! for a merge when it is idle, or at once when its packs pile up while it
//! is busy; a thread plans and writes the merged pack, which only adds a
//! file beside the session's objects, then retires the merged packs
//! (`git::repack::drop_packs`: marked, left in place for a grace period so
//! that a reader that listed them can still open them). The actor then
//! opens a fresh handle between two of its writes and gives the old one
//! back to the keeper, which closes it; the retired files are removed once
//! their grace is over.
//!
//! The two lanes:
//! - **busy** (normal priority, no rest): the merges of sessions whose packs
//!   pile up while they are written to, the closing of old handles and the
//!   removal of retired packs. Its work grows with the turns' own, and it
//!   must keep up with them: at the lowest priority, a saturated server gave
//!   it almost no CPU and packs (each mapped by libgit2) grew without
//!   bound, 13,669 of them after 4 minutes of 24 busy sessions.
//! - **idle** (lowest CPU and I/O priority, each merge followed by a rest as
//!   long as it took): the compressing merges of idle sessions, which may
//!   wait, and use at most half of one core.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use tokio::sync::OwnedMutexGuard;

use crate::git::{self, GitError};

/// The packs a merge retired; the session then opens a fresh handle
/// (`SessionCore::drop_merged`).
pub type Merged = Option<Vec<PathBuf>>;

/// A merge asked for and not begun yet can be withdrawn: a session let go
/// by the manager does not wait behind the other sessions' merges (its
/// actor, and with it the session's lease, would live on until then).
#[derive(Clone, Default)]
pub struct Ticket(Arc<AtomicU8>);

const QUEUED: u8 = 0;
const STARTED: u8 = 1;
const WITHDRAWN: u8 = 2;

impl Ticket {
    /// Withdraw the merge unless it began; true when withdrawn.
    pub fn withdraw(&self) -> bool {
        self.0
            .compare_exchange(QUEUED, WITHDRAWN, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    }

    /// The keeper begins the merge unless it was withdrawn.
    fn start(&self) -> bool {
        self.0
            .compare_exchange(QUEUED, STARTED, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    }
}

enum Job {
    Merge {
        ticket: Ticket,
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

#[derive(Clone, Copy, PartialEq)]
enum Lane {
    Busy,
    Idle,
}

#[derive(Default)]
struct Shared {
    stop: AtomicBool,
    /// Jobs running on either lane.
    running: Mutex<usize>,
    idle: Condvar,
}

#[derive(Clone)]
pub struct PackKeeper {
    busy: Sender<Job>,
    idle: Sender<Job>,
    shared: Arc<Shared>,
}

impl PackKeeper {
    /// The keeper's two threads; retired packs are removed `grace` after
    /// their merge.
    pub fn spawn(grace: Duration, forget: Option<Forget>) -> std::io::Result<PackKeeper> {
        let shared = Arc::new(Shared::default());
        let purging = Purging { grace, forget };
        let mut senders = Vec::new();
        for (lane, name) in [
            (Lane::Busy, "pack-keeper"),
            (Lane::Idle, "pack-keeper-idle"),
        ] {
            let (tx, rx) = crossbeam_channel::unbounded();
            let s = shared.clone();
            let purging = purging.clone();
            std::thread::Builder::new()
                .name(name.into())
                .spawn(move || run(lane, rx, s, purging))?;
            senders.push(tx);
        }
        let idle = senders
            .pop()
            .ok_or_else(|| std::io::Error::other("no idle lane"))?;
        let busy = senders
            .pop()
            .ok_or_else(|| std::io::Error::other("no busy lane"))?;
        Ok(PackKeeper { busy, idle, shared })
    }

    /// Merge the packs of the repository at `git_dir` if it has too many;
    /// the merged packs are returned for the session to drop.
    pub async fn merge(
        &self,
        git_dir: PathBuf,
        cap: Option<usize>,
        guard: OwnedMutexGuard<()>,
        ticket: Ticket,
    ) -> Result<Merged, GitError> {
        self.submit_with(git_dir, cap, guard, ticket)
            .await
            .unwrap_or(Ok(None))
    }

    /// `merge`, answered on the returned channel (for callers outside an
    /// async runtime: the benchmark). A capped merge (a busy session) goes
    /// to the busy lane, the others to the idle lane.
    pub fn submit(
        &self,
        git_dir: PathBuf,
        cap: Option<usize>,
        guard: OwnedMutexGuard<()>,
    ) -> tokio::sync::oneshot::Receiver<Result<Merged, GitError>> {
        self.submit_with(git_dir, cap, guard, Ticket::default())
    }

    /// `submit`, withdrawable through `ticket` until it begins.
    fn submit_with(
        &self,
        git_dir: PathBuf,
        cap: Option<usize>,
        guard: OwnedMutexGuard<()>,
        ticket: Ticket,
    ) -> tokio::sync::oneshot::Receiver<Result<Merged, GitError>> {
        let (reply, rx) = tokio::sync::oneshot::channel();
        let lane = if cap.is_some() {
            &self.busy
        } else {
            &self.idle
        };
        let job = Job::Merge {
            ticket,
            git_dir,
            cap,
            guard,
            reply,
        };
        // A keeper gone answers nothing: the receiver sees it closed.
        let _ = lane.send(job);
        rx
    }

    /// After a merge, the session at `git_dir` opened a fresh handle: close
    /// the `old` one on the busy lane (unmapping a few hundred packs took
    /// the session's step 3–11 ms), and remove the retired packs once
    /// their grace is over.
    pub fn retire(&self, git_dir: PathBuf, old: git2::Repository) {
        let _ = self.busy.send(Job::Retire { git_dir, old });
    }

    /// Take no new merge, and wait up to `within` for the ones running.
    /// True when none is left running.
    pub fn stop(&self, within: Duration) -> bool {
        self.shared.stop.store(true, Ordering::SeqCst);
        let Ok(running) = self.shared.running.lock() else {
            return false;
        };
        match self
            .shared
            .idle
            .wait_timeout_while(running, within, |running| *running > 0)
        {
            Ok((running, _)) => *running == 0,
            Err(_) => false,
        }
    }
}

/// One more (`true`) or one fewer job running.
fn set_running(shared: &Shared, started: bool) {
    if let Ok(mut running) = shared.running.lock() {
        if started {
            *running += 1;
        } else {
            *running = running.saturating_sub(1);
        }
    }
    shared.idle.notify_all();
}

/// Give the idle lane's thread the lowest CPU and disk priority: a
/// compressing merge and its pack's fsync then wait for the turns' own
/// work and flushes instead of delaying them (the end of turn's p99 was
/// 4× its p50 with merges running, 1.8× without). Best effort.
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

fn run(lane: Lane, rx: Receiver<Job>, shared: Arc<Shared>, purging: Purging) {
    let grace = purging.grace;
    if lane == Lane::Idle {
        lower_priority();
    }
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
            purging.purge(&dir);
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
                set_running(&shared, true);
                drop(old);
                set_running(&shared, false);
                // A little after the grace, so that every mark is due.
                due.insert(git_dir, Instant::now() + grace + Duration::from_millis(50));
                continue;
            }
            // Withdrawn while it waited: nothing to do, no rest.
            Job::Merge { ticket, reply, .. } if !ticket.start() => {
                let _ = reply.send(Ok(None));
                continue;
            }
            Job::Merge {
                git_dir,
                cap,
                guard,
                reply,
                ..
            } => (git_dir, cap, guard, reply),
        };
        set_running(&shared, true);
        let started = Instant::now();
        let result = merge_one(&git_dir, cap, &purging);
        set_running(&shared, false);
        let took = started.elapsed();
        drop(guard);
        let _ = reply.send(result);
        // The idle lane rests as long as it worked: at most half a core.
        if lane == Lane::Idle && !shared.stop.load(Ordering::SeqCst) {
            std::thread::sleep(took.min(Duration::from_secs(5)));
        }
    }
}

/// How the files of a retired pack are removed: `(git_dir, files)`. The
/// engine logs the removal in the write-ahead log (which removes them), so
/// a replay of entries that wrote those packs removes them again.
pub type Forget = Arc<dyn Fn(&std::path::Path, &[PathBuf]) -> std::io::Result<()> + Send + Sync>;

/// When and how retired packs go.
#[derive(Clone)]
struct Purging {
    grace: Duration,
    forget: Option<Forget>,
}

impl Purging {
    /// Remove a session's retired packs whose grace is over; a failure
    /// only leaves duplicates behind, removed at its next merge.
    fn purge(&self, git_dir: &std::path::Path) {
        let purged = match &self.forget {
            Some(forget) => git::repack::purge_merged_with(git_dir, self.grace, &mut |files| {
                forget(git_dir, files)
            }),
            None => git::repack::purge_merged(git_dir, self.grace),
        };
        if let Err(e) = purged {
            tracing::debug!(git_dir = %git_dir.display(), error = %e, "retired packs not removed yet");
        }
    }
}

fn merge_one(
    git_dir: &std::path::Path,
    cap: Option<usize>,
    purging: &Purging,
) -> Result<Merged, GitError> {
    // What an earlier merge retired and a crash or a stop left behind.
    let started = Instant::now();
    purging.purge(git_dir);
    let purged = started.elapsed();
    let Some(victims) = git::repack::plan(git_dir, cap)? else {
        return Ok(None);
    };
    let planned = started.elapsed();
    let repo = git2::Repository::open(git_dir)?;
    let written = if cap.is_some() {
        // Busy: copied, to keep up with the turns; compressed once idle.
        git::repack::build_copy(&repo, &victims)?
    } else {
        git::repack::build(&repo, &victims)?
    };
    let built = started.elapsed();
    git::repack::drop_packs(&victims, &written)?;
    tracing::debug!(
        git_dir = %git_dir.display(),
        packs = victims.len(),
        busy = cap.is_some(),
        purge_ms = purged.as_millis() as u64,
        plan_ms = (planned - purged).as_millis() as u64,
        build_ms = (built - planned).as_millis() as u64,
        drop_ms = (started.elapsed() - built).as_millis() as u64,
        "merge"
    );
    Ok(Some(
        victims.into_iter().filter(|v| *v != written).collect(),
    ))
}

/// Retired packs removed through `store`'s write-ahead log: a replay of
/// the entries that wrote them (a crash before their checkpoint) removes
/// them again instead of bringing them back.
pub fn forget_through_log(store: crate::store::Store) -> Forget {
    Arc::new(move |git_dir: &std::path::Path, files: &[PathBuf]| {
        let root = git_dir.parent().unwrap_or(git_dir).to_path_buf();
        store.commit(
            files
                .iter()
                .map(|f| crate::wal::Change::Remove {
                    root: root.clone(),
                    path: f.clone(),
                })
                .collect(),
        )
    })
}
