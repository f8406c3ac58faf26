//! One remote's worker: a thread that follows the change feed, queues the
//! sessions that changed (one entry per session however many turns it
//! made: a batch pushes each once), pushes them oldest first, and backs
//! off — per session for a refused or diverged push, for the whole remote
//! when it cannot be reached. The queue and the feed cursor are saved
//! before any push, so a restart pushes what was pending.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::Recipient;
use tokio::sync::mpsc::UnboundedReceiver;

use super::batch::push_batch;
use super::open::push_open;
use super::push::{clear_stale_lock, delete_session, push_session, Pushed};
use super::remote::Layout;
use super::PushError;
use super::{now, RemoteHandle};
use crate::feed::{Cursor, Feed};
use crate::manager::Locate;

/// At most this many sessions queued from the feed; more changes wait in
/// the feed itself (it is durable), so memory stays bounded.
pub const MAX_QUEUED: usize = 10_000;
/// Sessions pushed in one round before the feed is read again.
const ROUND: usize = 256;
/// Sessions in one push to a shared remote (see `batch`; it also stops at
/// a byte budget).
const BATCH: usize = 64;
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(60);

pub enum Command {
    /// Queue these sessions (a new remote, `push --all`).
    PushAll(Vec<String>),
    /// This session wrote something it has not committed yet: pushed
    /// within `OPEN_DELAY` (see `super::open`).
    Open(String),
}

/// How long a session's writes not committed yet wait before they are
/// pushed (a turn usually commits sooner, and a reply streamed meanwhile
/// is pushed once, not at every piece).
pub const OPEN_DELAY: Duration = Duration::from_secs(5);

pub struct Worker {
    pub remote: Arc<RemoteHandle>,
    pub feed: Feed,
    pub locate: Recipient<Locate>,
    pub state_path: PathBuf,
    /// A repository to push deletions from.
    pub scratch: PathBuf,
    /// The staging repository of batched pushes (shared layout).
    pub stage: PathBuf,
    pub delete_remote: bool,
    pub commands: UnboundedReceiver<Command>,
    /// Sessions waiting out a backoff: when to try again, and the next wait.
    pub retry: HashMap<String, (Instant, Duration)>,
    /// The whole remote waiting out a backoff.
    pub remote_retry: Option<(Instant, Duration)>,
    /// Sessions whose open state this process left on the remote.
    pub open: HashSet<String>,
    /// Every session (id, folder) at the start, checked once against
    /// what was last pushed (`requeue_moved`).
    pub startup: Vec<(String, PathBuf)>,
}

impl Worker {
    /// Run until every handle on the replication is dropped.
    pub fn run(mut self) {
        let rt = match tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
        {
            Ok(rt) => rt,
            Err(e) => {
                tracing::error!(error = %e, "replication worker could not start");
                return;
            }
        };
        rt.block_on(async move {
            self.requeue_moved();
            let mut changes = self.feed.subscribe();
            loop {
                changes.borrow_and_update();
                let more = self.take_events();
                self.push_round().await;
                if more {
                    continue;
                }
                let wait = self.next_wake();
                tokio::select! {
                    _ = changes.changed() => {}
                    cmd = self.commands.recv() => match cmd {
                        Some(Command::PushAll(ids)) => self.queue(ids),
                        Some(Command::Open(id)) => self.queue_open(id),
                        None => break,
                    },
                    _ = tokio::time::sleep(wait) => {}
                }
            }
        });
    }

    fn name(&self) -> &str {
        &self.remote.config.name
    }

    /// Queue sessions (with no saved cursor yet: from the feed's end).
    pub fn queue(&mut self, ids: Vec<String>) {
        let at = now();
        let mut status = self.remote.lock_status();
        for id in ids {
            status.saved.pending.entry(id).or_insert(at);
        }
        if status.saved.cursor.is_none() {
            status.saved.cursor = self.feed.end().ok().map(|c| c.encode());
        }
        let saved = status.saved.clone();
        drop(status);
        self.save(&saved);
    }

    /// Sessions whose HEAD commit is not the one last pushed: a branch
    /// moved without a commit of this process (put back by a restart's
    /// replay of the log, by the start's repair of a user's `git reset`)
    /// is pushed again.
    fn requeue_moved(&mut self) {
        let folders = std::mem::take(&mut self.startup);
        if folders.is_empty() {
            return;
        }
        let pushed: HashMap<String, String> = {
            let status = self.remote.lock_status();
            status
                .saved
                .pushed
                .iter()
                .filter(|(id, _)| !status.saved.pending.contains_key(*id))
                .filter_map(|(id, p)| p.commit.clone().map(|c| (id.clone(), c)))
                .collect()
        };
        let moved: Vec<String> = folders
            .into_iter()
            .filter(|(id, dir)| {
                let Some(last) = pushed.get(id) else {
                    return false;
                };
                let head = crate::git::open_repo(dir)
                    .ok()
                    .and_then(|r| r.head().ok().and_then(|h| h.target()));
                head.is_some_and(|h| h.to_string() != *last)
            })
            .map(|(id, _)| id)
            .collect();
        if !moved.is_empty() {
            tracing::info!(remote = %self.name(), sessions = moved.len(), "sessions whose HEAD moved since their last push queued again");
            self.queue(moved);
        }
    }

    /// Queue a session that wrote something not committed yet, due after
    /// `OPEN_DELAY` (a session already queued keeps its place).
    fn queue_open(&mut self, id: String) {
        self.remote.touched(&id, false);
        let mut status = self.remote.lock_status();
        if status.saved.pending.contains_key(&id) {
            return;
        }
        status.saved.pending.insert(id.clone(), now());
        drop(status);
        self.retry
            .entry(id)
            .or_insert((Instant::now() + OPEN_DELAY, FIRST_BACKOFF));
    }

    /// After a round's pushes: each pushed session's open state brought up
    /// to date on the remote (a failure there fails the session's push).
    fn push_open_states(
        &mut self,
        results: Vec<(String, Result<Pushed, PushError>)>,
        located: &[(String, PathBuf)],
    ) -> Vec<(String, Result<Pushed, PushError>)> {
        results
            .into_iter()
            .map(|(id, result)| {
                let Some((_, dir)) = located.iter().find(|(i, _)| *i == id) else {
                    return (id, result);
                };
                let result = result.and_then(|pushed| {
                    let was_open = self.open.contains(&id);
                    let _held = self.remote.locks.hold(&id);
                    match push_open(&self.remote.config, &self.scratch, &id, dir, was_open)? {
                        true => self.open.insert(id.clone()),
                        false => self.open.remove(&id),
                    };
                    Ok(pushed)
                });
                (id, result)
            })
            .collect()
    }

    /// Read the feed after the cursor into the queue; true when more is
    /// there already.
    fn take_events(&mut self) -> bool {
        let mut status = self.remote.lock_status();
        if status.saved.pending.len() >= MAX_QUEUED {
            return false;
        }
        let cursor = match status.saved.cursor.as_deref().map(Cursor::parse) {
            Some(Ok(c)) => Some(c),
            Some(Err(e)) => {
                tracing::warn!(remote = %self.remote.config.name, error = %e, "replication cursor unreadable; reading the feed from its start");
                None
            }
            None => None,
        };
        let page = match self.feed.read(cursor.as_ref(), 1000) {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(remote = %self.remote.config.name, error = %e, "replication: the change feed could not be read");
                return false;
            }
        };
        if page.events.is_empty() {
            return false;
        }
        let at = now();
        let full = page.events.len() == 1000;
        for item in &page.events {
            let e = &item.event;
            let Some(id) = e["session_id"].as_str() else {
                continue;
            };
            match e["kind"].as_str() {
                Some("commit") | Some("branch_restored") | Some("session_purged") => {
                    status.saved.pending.entry(id.to_string()).or_insert(at);
                }
                Some("session_deleted") => {
                    status.saved.pending.remove(id);
                    status.saved.pushed.remove(id);
                    status.errors.remove(id);
                    if self.delete_remote {
                        status.saved.deletions.insert(id.to_string());
                    }
                }
                _ => {}
            }
        }
        status.saved.cursor = Some(page.next.encode());
        let saved = status.saved.clone();
        drop(status);
        self.save(&saved);
        full
    }

    fn save(&self, saved: &super::state::Saved) {
        if let Err(e) = saved.save(&self.state_path) {
            tracing::error!(remote = %self.remote.config.name, error = %e, "replication state not saved");
        }
    }

    /// Push the sessions whose turn has come, oldest change first.
    async fn push_round(&mut self) {
        let started = Instant::now();
        if self.remote_retry.is_some_and(|(at, _)| at > started) {
            self.report();
            return;
        }
        let (due, deletions) = {
            let status = self.remote.lock_status();
            let mut due: Vec<(f64, String)> = status
                .saved
                .pending
                .iter()
                .filter(|(id, _)| self.retry.get(*id).is_none_or(|(at, _)| *at <= started))
                .map(|(id, since)| (*since, id.clone()))
                .collect();
            due.sort_by(|a, b| a.0.total_cmp(&b.0));
            due.truncate(ROUND);
            let deletions: Vec<String> = status.saved.deletions.iter().cloned().collect();
            (due, deletions)
        };
        // Deletions first: a session deleted and made again under the same
        // id pushes its new branches only once the old ones are gone from
        // the remote (a deletion after the push would take the new ones).
        let mut changed = false;
        if !deletions.is_empty() && self.remote_retry.is_none() {
            changed |= self.delete_round(deletions);
        }
        let due: Vec<(f64, String)> = {
            let status = self.remote.lock_status();
            due.into_iter()
                .filter(|(_, id)| !status.saved.deletions.contains(id))
                .collect()
        };
        let mut located = Vec::with_capacity(due.len());
        for (_, id) in due {
            match self.locate.send(Locate(id.clone())).await {
                Ok(Ok(dir)) => located.push((id, dir)),
                _ => return,
            }
        }
        // A session the feed announced before its folder is in place (a
        // creation is acknowledged from the log) waits; one without a
        // folder for `GONE_AFTER` is gone.
        changed |= !located.is_empty();
        located.retain(|(id, dir)| {
            let ready = dir.join(".git").exists();
            if !ready {
                self.not_ready(id);
            }
            ready
        });
        let remote = self.remote.clone();
        let pushing = Instant::now();
        let batch = located.len();
        let results = match remote.config.layout() {
            // One connection for the whole round.
            Layout::Shared if !located.is_empty() => {
                let mut out = Vec::with_capacity(located.len());
                for chunk in located.chunks(BATCH) {
                    let _held: Vec<_> = chunk.iter().map(|(id, _)| remote.locks.hold(id)).collect();
                    out.extend(push_batch(&remote.config, &self.stage, chunk));
                    if out
                        .last()
                        .is_some_and(|(_, r)| r.as_ref().is_err_and(|e| e.remote_wide()))
                    {
                        break;
                    }
                }
                out
            }
            // One at a time (one URL each). A repository missing there
            // looks like an unreachable remote: only three in a row stop
            // the round.
            _ => {
                let mut out = Vec::with_capacity(located.len());
                let mut unreachable = 0;
                for (id, dir) in &located {
                    let result = {
                        let _held = remote.locks.hold(id);
                        push_session(&remote.config, id, dir)
                    };
                    match result.as_ref() {
                        Err(e) if e.remote_wide() => unreachable += 1,
                        _ => unreachable = 0,
                    }
                    out.push((id.clone(), result));
                    if unreachable >= 3 {
                        break;
                    }
                }
                out
            }
        };
        // What the pushed sessions hold but have not committed yet.
        let results = self.push_open_states(results, &located);
        // The whole remote waits only when nothing of the round got through
        // (or, for a shared remote, its one connection failed).
        let remote_down = results
            .iter()
            .all(|(_, r)| r.as_ref().is_err_and(|e| e.remote_wide()));
        if batch > 0 {
            metrics::histogram!("openprogram_replication_push_duration_seconds", "remote" => remote.config.name.clone())
                .record(pushing.elapsed().as_secs_f64());
            tracing::debug!(remote = %remote.config.name, sessions = batch, ms = pushing.elapsed().as_millis() as u64, "replication round pushed");
        }
        let dirs: HashMap<String, PathBuf> = located.into_iter().collect();
        let at = now();
        let mut status = self.remote.lock_status();
        for (id, result) in results {
            match result {
                Ok(p) => {
                    status.saved.pending.remove(&id);
                    status.pushed(&id, p.head, at);
                    self.retry.remove(&id);
                    self.remote_retry = None;
                    metrics::counter!("openprogram_replication_pushes_total", "remote" => self.remote.config.name.clone()).increment(1);
                }
                Err(super::error::PushError::Local(_))
                    if dirs.get(&id).is_none_or(|d| !d.join(".git").exists()) =>
                {
                    // Deleted meanwhile, or not in place yet.
                    drop(status);
                    self.not_ready(&id);
                    status = self.remote.lock_status();
                }
                Err(e) if clear_stale_lock(&self.remote.config, &id, &e) => {
                    // Tried again at once: the lock was a killed push's.
                    self.retry.remove(&id);
                }
                Err(e) => {
                    metrics::counter!("openprogram_replication_failures_total", "remote" => self.remote.config.name.clone(), "reason" => e.code()).increment(1);
                    tracing::warn!(remote = %self.remote.config.name, session = %id, error = %e, "replication push failed; retried later");
                    status.failed(&id, &e, at);
                    if e.remote_wide() && remote_down {
                        if self.remote_retry.is_none_or(|(at, _)| at <= Instant::now()) {
                            self.remote_retry = Some(next_backoff(self.remote_retry));
                        }
                        continue;
                    }
                    let prev = self.retry.get(&id).copied();
                    self.retry.insert(id.clone(), next_backoff(prev));
                }
            }
        }
        drop(status);
        if changed {
            let saved = self.remote.lock_status().saved.clone();
            self.save(&saved);
        }
        self.report();
    }

    /// `id` has no repository on disk: tried again in a second, unless it
    /// has been pending for `GONE_AFTER` without one (deleted: nothing is
    /// left to push). Neither is a failure.
    fn not_ready(&mut self, id: &str) {
        let mut status = self.remote.lock_status();
        let gone = status
            .saved
            .pending
            .get(id)
            .is_none_or(|since| now() - since > GONE_AFTER.as_secs_f64());
        if gone {
            status.saved.pending.remove(id);
            self.retry.remove(id);
        } else {
            self.retry.insert(
                id.to_string(),
                (Instant::now() + NOT_READY_WAIT, NOT_READY_WAIT),
            );
        }
    }

    /// Delete the remote copies of deleted sessions.
    fn delete_round(&mut self, ids: Vec<String>) -> bool {
        let scratch = match crate::git::open_repo(&self.scratch)
            .or_else(|_| git2::Repository::init_bare(&self.scratch))
        {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(remote = %self.name(), error = %e, "replication: no scratch repository for deletions");
                return false;
            }
        };
        let mut changed = false;
        for id in ids {
            let result = delete_session(&self.remote.config, &id, &scratch);
            let mut status = self.remote.lock_status();
            match result {
                Ok(n) => {
                    tracing::info!(remote = %self.remote.config.name, session = %id, refs = n, "deleted session removed from the remote");
                    status.saved.deletions.remove(&id);
                    changed = true;
                }
                Err(e) => {
                    status.failed(&id, &e, now());
                    if e.remote_wide() {
                        self.remote_retry = Some(next_backoff(self.remote_retry));
                        break;
                    }
                }
            }
        }
        changed
    }

    /// The queue and lag gauges.
    fn report(&self) {
        let status = self.remote.lock_status();
        let name = self.remote.config.name.clone();
        metrics::gauge!("openprogram_replication_queue", "remote" => name.clone())
            .set(status.saved.pending.len() as f64);
        metrics::gauge!("openprogram_replication_lag_seconds", "remote" => name)
            .set(status.lag(now()));
    }

    /// How long to sleep when nothing wakes the worker: until the next
    /// retry is due, at most a second.
    fn next_wake(&self) -> Duration {
        let now = Instant::now();
        let mut wait = Duration::from_secs(1);
        let pending_empty = self.remote.lock_status().saved.pending.is_empty();
        if let Some((at, _)) = self.remote_retry {
            wait = wait.min(at.saturating_duration_since(now));
        } else if !pending_empty {
            for (at, _) in self.retry.values() {
                wait = wait.min(at.saturating_duration_since(now));
            }
            let any_due = {
                let status = self.remote.lock_status();
                status
                    .saved
                    .pending
                    .keys()
                    .any(|id| !self.retry.contains_key(id))
            };
            if any_due {
                wait = Duration::ZERO;
            }
        }
        wait.max(Duration::from_millis(5))
    }
}

/// The next backoff after `prev`: doubling from half a second to a minute.
/// How long a session without a repository on disk waits for it.
const NOT_READY_WAIT: Duration = Duration::from_secs(1);
/// How long a pending session may lack a repository before it is taken
/// for deleted.
const GONE_AFTER: Duration = Duration::from_secs(60);

fn next_backoff(prev: Option<(Instant, Duration)>) -> (Instant, Duration) {
    let wait = match prev {
        Some((_, d)) => (d * 2).min(MAX_BACKOFF),
        None => FIRST_BACKOFF,
    };
    (Instant::now() + wait, wait)
}
