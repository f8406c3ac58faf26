//! Startup of the registry, in the order of spec 003: load `index.json` (or
//! rebuild it from every `meta.json`), reconcile it with the session
//! directories, reset `running` to `idle`, delete empty shells, expire old
//! archived sessions, and enforce the capacity cap. Runs before the server
//! accepts requests, so no session actor exists yet.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::row::SessionRow;
use crate::fsio;
use crate::locations::Locations;
use crate::meta::{now, SessionMeta};
use crate::session::summary::read_summary;
use crate::store::{project_folder_missing, Store};

/// The automatic-deletion policy (all of it configurable; 0 turns a rule off).
#[derive(Debug, Clone)]
pub struct Policy {
    /// Delete sessions without any message older than this many seconds.
    pub empty_shell_max_age_s: f64,
    /// Delete archived sessions idle for longer than this many days (off
    /// unless configured; idle counts from the later of the last turn and
    /// the archiving).
    pub archive_ttl_days: f64,
    /// Above this many sessions, delete the oldest archived ones (off
    /// unless configured).
    pub max_sessions: usize,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            empty_shell_max_age_s: 3600.0,
            archive_ttl_days: 0.0,
            max_sessions: 0,
        }
    }
}

#[derive(Debug, Default)]
pub struct Report {
    /// Sessions deleted here that had a `locations.json` entry, and entries
    /// pointing at no valid session: the caller drops them.
    pub dropped_locations: Vec<String>,
    pub rebuilt: bool,
    pub repaired: usize,
    pub reset_running: usize,
    pub deleted: Vec<(String, &'static str)>,
    /// Archived rows given this start as their archiving time.
    pub archived_stamped: usize,
    /// Sessions converted from an older layout (see `session::legacy`).
    pub migrated: Vec<(String, crate::session::legacy::Migrated)>,
    /// Sessions an error kept from migrating (tried again next start).
    pub migration_failed: Vec<(String, String)>,
}

pub struct Loaded {
    pub rows: HashMap<String, Arc<SessionRow>>,
    pub report: Report,
    /// Where each listed session lives.
    pub dirs: HashMap<String, PathBuf>,
    /// The last journal entry number seen (the next change is numbered after).
    pub seq: u64,
}

/// When `dir`'s `meta.json` was last modified (seconds since the epoch);
/// `None` when it cannot be read (then the session is read again, to be
/// safe).
fn meta_mtime(dir: &Path) -> Option<f64> {
    let t = fs::metadata(dir.join("meta.json")).ok()?.modified().ok()?;
    Some(
        t.duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0),
    )
}

/// Whether a `meta.json` modified at `mtime` changed after `written_at`.
fn changed_since(mtime: Option<f64>, written_at: f64) -> bool {
    mtime.is_none_or(|secs| secs + 1.0 >= written_at)
}

/// The rows of `index.json` by id, with the journal's later changes applied.
pub struct Snapshot {
    /// When the snapshot was taken.
    pub written_at: f64,
    pub rows: HashMap<String, Arc<SessionRow>>,
}

/// Threads that read session folders at startup: the work waits on the
/// file system more than on the CPU (a cold cache), so more than the cores.
const READERS: usize = 8;

/// Remove the half-built session folders of a creation (or the half-
/// removed ones of a deletion) that a crash cut short. One that cannot be
/// removed is logged and left for the next start: it never stops this one.
fn remove_leftovers(leftovers: &[PathBuf]) {
    for path in leftovers {
        tracing::warn!(path = %path.display(), "removing an interrupted session creation or deletion");
        if let Err(e) = fs::remove_dir_all(path) {
            tracing::warn!(path = %path.display(), error = %e, "could not remove it; trying again at the next start");
        }
    }
}

/// `f` of every session folder of `dirs`, spread over `READERS` threads,
/// keeping the `Some` answers in the order of `dirs`. Every `LOG_EVERY`
/// the progress is logged as `what`.
pub(super) fn scan<'a, T: Send>(
    dirs: &'a [(String, PathBuf)],
    what: &'static str,
    f: impl Fn(&'a (String, PathBuf)) -> Option<T> + Sync,
) -> Vec<T> {
    // A thread is worth its start for 256 folders.
    scan_items(dirs, 256, what, f)
}

/// `scan` of any `items`, at least `min_chunk` of them to a thread.
pub(super) fn scan_items<'a, I: Sync, T: Send>(
    items: &'a [I],
    min_chunk: usize,
    what: &'static str,
    f: impl Fn(&'a I) -> Option<T> + Sync,
) -> Vec<T> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let chunk = items.len().div_ceil(READERS).max(min_chunk.max(1));
    let (f, done) = (&f, &AtomicUsize::new(0));
    let started = std::time::Instant::now();
    std::thread::scope(|scope| {
        let parts: Vec<_> = items
            .chunks(chunk)
            .enumerate()
            .map(|(part, items_part)| {
                scope.spawn(move || {
                    let mut last_log = started;
                    let mut out = Vec::new();
                    for item in items_part {
                        out.extend(f(item));
                        let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                        if part == 0 && last_log.elapsed() >= LOG_EVERY {
                            tracing::info!(done = n, of = items.len(), "{what}");
                            last_log = std::time::Instant::now();
                        }
                    }
                    out
                })
            })
            .collect();
        parts
            .into_iter()
            .flat_map(|p| p.join().unwrap_or_default())
            .collect()
    })
}

const LOG_EVERY: std::time::Duration = std::time::Duration::from_secs(3);

/// `index.json` with the journal's later changes applied.
pub struct Listing {
    pub index: io::Result<Snapshot>,
    /// When each journaled row was last changed (others: the snapshot's
    /// `written_at`).
    pub as_of: HashMap<String, f64>,
    /// The journal had entries (startup folds them into a new snapshot).
    pub journaled: bool,
    /// The last entry number.
    pub seq: u64,
}

/// The session list as last written: the snapshot, then the journal's
/// entries after it, in order. A journal without a readable snapshot is
/// not used (the list is rebuilt from the sessions then).
pub fn listing(store: &Store) -> Listing {
    let index = super::list_file::read(&store.session_list_file());
    let entries = super::journal::read(&store.sessions_dir().join(super::journal::JOURNAL));
    let journaled = !entries.is_empty();
    let mut seq = index.as_ref().map_or(0, |i| i.seq);
    let mut as_of: HashMap<String, f64> = HashMap::new();
    let index = index.map(|index| {
        let mut by_id: HashMap<String, Arc<SessionRow>> =
            HashMap::with_capacity(index.sessions.len());
        by_id.extend(index.sessions.into_iter().map(|r| (r.id.clone(), r)));
        for e in entries.into_iter().filter(|e| e.seq > index.seq) {
            seq = seq.max(e.seq);
            if let Some(row) = e.row {
                as_of.insert(row.id.clone(), e.at);
                by_id.insert(row.id.clone(), Arc::new(row));
            } else if let Some(id) = e.deleted {
                as_of.insert(id.clone(), e.at);
                by_id.remove(&id);
            }
        }
        Snapshot {
            written_at: index.written_at,
            rows: by_id,
        }
    });
    Listing {
        index,
        as_of,
        journaled,
        seq,
    }
}

fn row_of(dir: &Path) -> Option<Arc<SessionRow>> {
    read_row(dir).map(|(row, _)| row)
}

/// A session's row from its own files, and its `meta.json` as stored when
/// that says `running` (see `Running`).
fn read_row(dir: &Path) -> Option<(Arc<SessionRow>, Option<SessionMeta>)> {
    read_summary(dir).map(|s| {
        let row = SessionRow::from_meta(&s.meta, s.preview, s.first_preview);
        (Arc::new(row), s.running_as_stored)
    })
}

/// The `meta.json` of each session read from its files that a crash left
/// `running`, as stored: the reset rewrites it without reading it again.
pub(super) type Running = HashMap<String, SessionMeta>;

/// The registry's startup: the rows of every session, repaired, with the
/// automatic deletions of `policy` applied and the snapshot rewritten when
/// anything changed.
///
/// `closed`: the entry number of the `index.json` a clean shutdown
/// vouched for (`store/closed.rs`), when nothing was replayed from the
/// log. With that very list and an empty journal, its rows are taken
/// without looking at each session's `meta.json`.
pub fn open(
    store: &Store,
    locations: &Locations,
    policy: &Policy,
    closed: Option<u64>,
) -> io::Result<Loaded> {
    let mut report = Report::default();
    // `index.json` is parsed on a thread of its own while the session
    // folders are listed and each one's `meta.json` is looked at: the
    // two were most of a large start, one after the other.
    // Without an `index.json` every session is read whole: no stats.
    let snapshot = store.session_list_file().exists();
    let (listing, found) = std::thread::scope(|scope| {
        let parsing = scope.spawn(|| listing(store));
        let found = store
            .session_folders_and_leftovers(locations)
            .map(|(dirs, leftovers)| {
                remove_leftovers(&leftovers);
                let mtimes = if snapshot && closed.is_none() {
                    scan(
                        &dirs,
                        "checking the sessions against index.json",
                        |(_, dir)| Some(meta_mtime(dir)),
                    )
                } else {
                    Vec::new()
                };
                (dirs, mtimes)
            });
        (parsing.join(), found)
    });
    let listing = listing.map_err(|_| io::Error::other("reading index.json failed"))?;
    let (dirs, mut mtimes) = found?;
    let vouched =
        closed.is_some_and(|seq| listing.index.is_ok() && listing.seq == seq && !listing.journaled);
    if closed.is_some() && !vouched && snapshot {
        // The mark names another list (or the journal moved on since):
        // every session is checked as after a crash.
        mtimes = scan(
            &dirs,
            "checking the sessions against index.json",
            |(_, dir)| Some(meta_mtime(dir)),
        );
    }
    let mtimes = (!vouched).then_some(mtimes.as_slice());
    let (journaled, seq) = (listing.journaled, listing.seq);
    let (mut rows, running) = read_rows(store, &dirs, mtimes, listing, &mut report);
    let dir_of: HashMap<String, PathBuf> = dirs.into_iter().collect();
    super::reset::reset_running(store, &mut rows, &dir_of, running, &mut report);
    apply_policy(store, policy, &mut rows, &dir_of, locations, &mut report);
    for (id, dir) in locations.iter() {
        if !dir.exists() && project_folder_missing(dir) {
            // A moved project: the entry is what relocate repairs.
            continue;
        }
        if !rows.contains_key(id) && !report.dropped_locations.contains(id) {
            tracing::warn!(session = %id, "locations.json names no valid session; dropping the entry");
            report.dropped_locations.push(id.clone());
        }
    }
    if report.rebuilt
        || report.repaired > 0
        || report.reset_running > 0
        || !report.deleted.is_empty()
        || report.archived_stamped > 0
        || journaled
    {
        write_snapshot(store, &rows, seq, journaled)?;
    }
    let dirs = dir_of
        .into_iter()
        .filter(|(id, _)| rows.contains_key(id))
        .collect();
    Ok(Loaded {
        rows,
        report,
        dirs,
        seq,
    })
}

/// The row of every session: from the snapshot when the session did not
/// change since, from its own files when it did (migrating an older
/// layout first), or all from the files when there is no snapshot.
/// `mtimes`: when each of `dirs`' `meta.json` was modified, in the same
/// order; `None` when a clean shutdown vouched for the snapshot (only
/// sessions missing from it are read).
fn read_rows(
    store: &Store,
    dirs: &[(String, PathBuf)],
    mtimes: Option<&[Option<f64>]>,
    listing: Listing,
    report: &mut Report,
) -> (HashMap<String, Arc<SessionRow>>, Running) {
    let Listing { index, as_of, .. } = listing;
    let mut running = Running::new();
    // A session changed after the snapshot (or missing from it) is read
    // from its own files; the rest is taken as is. Only those are looked
    // at for an older layout too: a session this version wrote and left
    // unchanged needs no migration, so startup stays one stat per session.
    let stale: std::collections::HashSet<String> = match &index {
        // (A reader thread that died leaves its part out: every session is
        // then read from its files.)
        Ok(index) if mtimes.is_none() => dirs
            .iter()
            .filter(|(id, _)| !index.rows.contains_key(id))
            .map(|(id, _)| id.clone())
            .collect(),
        Ok(index) if mtimes.is_some_and(|m| m.len() == dirs.len()) => dirs
            .iter()
            .zip(mtimes.unwrap_or_default())
            .filter(|((id, _), mtime)| {
                !index.rows.contains_key(id)
                    || changed_since(**mtime, as_of.get(id).copied().unwrap_or(index.written_at))
            })
            .map(|((id, _), _)| id.clone())
            .collect(),
        _ => dirs.iter().map(|(id, _)| id.clone()).collect(),
    };
    let candidates: Vec<(String, PathBuf)> = dirs
        .iter()
        .filter(|(id, _)| stale.contains(id))
        .cloned()
        .collect();
    migrate_legacy(store, &candidates, report);
    let mut rows: HashMap<String, Arc<SessionRow>> = HashMap::with_capacity(dirs.len());
    match index {
        Ok(index) => {
            let mut known = index.rows;
            for (id, dir) in dirs {
                // An unchanged session's meta.json was just found; only a
                // stale one can be missing altogether.
                let row = if !stale.contains(id) {
                    known.remove(id)
                } else if !dir.exists() && project_folder_missing(dir) {
                    // In a project folder that moved away: still listed,
                    // from the snapshot, until relocate brings it back.
                    tracing::warn!(session = %id, dir = %dir.display(), "the session's project folder is missing; kept until the project is relocated");
                    known.remove(id)
                } else {
                    report.repaired += 1;
                    read_row(dir).map(|(row, stored)| {
                        if let Some(meta) = stored {
                            running.insert(id.clone(), meta);
                        }
                        row
                    })
                };
                if let Some(row) = row {
                    rows.insert(id.clone(), row);
                }
            }
            report.repaired += known.keys().filter(|id| !rows.contains_key(*id)).count();
        }
        Err(e) => {
            if e.kind() != io::ErrorKind::NotFound {
                tracing::warn!(error = %e, "index.json unreadable; rebuilding it from the sessions");
            }
            report.rebuilt = true;
            let started = std::time::Instant::now();
            for (id, row, stored) in scan(dirs, "rebuilding the session list", |(id, dir)| {
                read_row(dir).map(|(row, stored)| (id.clone(), row, stored))
            }) {
                if let Some(meta) = stored {
                    running.insert(id.clone(), meta);
                }
                rows.insert(id, row);
            }
            tracing::info!(
                sessions = rows.len(),
                elapsed_ms = started.elapsed().as_millis() as u64,
                "session list rebuilt from the session directories"
            );
        }
    }
    (rows, running)
}

/// The automatic deletions: empty shells, archived sessions past their
/// retention, the oldest archived ones over the capacity cap.
fn apply_policy(
    store: &Store,
    policy: &Policy,
    rows: &mut HashMap<String, Arc<SessionRow>>,
    dir_of: &HashMap<String, PathBuf>,
    locations: &Locations,
    report: &mut Report,
) {
    let now = now();
    let mut doomed: Vec<(String, &'static str)> = Vec::new();
    if policy.empty_shell_max_age_s > 0.0 {
        for row in rows.values() {
            if row.preview.is_none()
                && now - row.created_at > policy.empty_shell_max_age_s
                && dir_of
                    .get(&row.id)
                    .is_some_and(|d| crate::session::summary::is_empty_shell(d))
            {
                doomed.push((row.id.clone(), "empty shell"));
            }
        }
    }
    if policy.archive_ttl_days > 0.0 || policy.max_sessions > 0 {
        report.archived_stamped = stamp_archived(rows, now);
    }
    if policy.archive_ttl_days > 0.0 {
        let ttl = policy.archive_ttl_days * 86_400.0;
        for row in rows.values() {
            if row.archived && now - idle_since(row) > ttl {
                doomed.push((
                    row.id.clone(),
                    "archived and idle past the retention period",
                ));
            }
        }
    }
    for (id, _) in &doomed {
        rows.remove(id);
    }
    if policy.max_sessions > 0 && rows.len() > policy.max_sessions {
        let mut archived: Vec<&SessionRow> =
            rows.values().map(|r| &**r).filter(|r| r.archived).collect();
        archived.sort_by(|a, b| idle_since(a).total_cmp(&idle_since(b)));
        let excess = rows.len() - policy.max_sessions;
        let extra: Vec<String> = archived.iter().take(excess).map(|r| r.id.clone()).collect();
        for id in extra {
            rows.remove(&id);
            doomed.push((id, "oldest archived session over the capacity cap"));
        }
    }
    for (id, reason) in doomed {
        let Some(dir) = dir_of.get(&id) else {
            continue;
        };
        tracing::warn!(session = %id, reason, "deleting session automatically (maintenance rule)");
        if let Err(e) = store.remove_session_folder(dir) {
            // Kept (and listed) until a later start manages it.
            tracing::warn!(session = %id, error = %e, "could not delete the session; kept");
            if let Some(row) = row_of(dir) {
                rows.insert(id.clone(), row);
            }
            continue;
        }
        if locations.get(&id).is_some() {
            report.dropped_locations.push(id.clone());
        }
        report.deleted.push((id, reason));
    }
}

/// When a session was last touched by its user: the later of its last
/// content and its archiving (an imported conversation's turns may be
/// years old; archiving it today is today's action).
pub fn idle_since(row: &SessionRow) -> f64 {
    row.archived_at
        .map_or(row.updated_at, |a| a.max(row.updated_at))
}

/// Archived rows that do not say when (archived before the time was kept)
/// count as archived at this start: a rule may only delete them later.
fn stamp_archived(rows: &mut HashMap<String, Arc<SessionRow>>, now: f64) -> usize {
    let mut stamped = 0;
    for row in rows.values_mut() {
        if row.archived && row.archived_at.is_none() {
            let mut with = (**row).clone();
            with.archived_at = Some(now);
            *row = Arc::new(with);
            stamped += 1;
        }
    }
    stamped
}

/// Write `index.json` from `rows`; the journal is emptied once the
/// snapshot holds it. A full disk leaves the old snapshot and the journal
/// (a later start writes it).
fn write_snapshot(
    store: &Store,
    rows: &HashMap<String, Arc<SessionRow>>,
    seq: u64,
    journaled: bool,
) -> io::Result<()> {
    let mut sessions: Vec<&SessionRow> = rows.values().map(|r| &**r).collect();
    sessions.sort_by_key(|r| r.order_key());
    let written = super::list_file::encode(now(), seq, sessions)
        .and_then(|bytes| fsio::atomic_write(&store.session_list_file(), &bytes));
    let written = match written {
        Err(e) if fsio::is_disk_full(&e) => {
            tracing::warn!(error = %e, "index.json not rewritten: the disk is full");
            false
        }
        other => other.map(|()| true)?,
    };
    if journaled && written {
        let journal = store.sessions_dir().join(super::journal::JOURNAL);
        let file = fs::OpenOptions::new().write(true).open(&journal)?;
        file.set_len(0)?;
        fsio::sync_file(&file)?;
    }
    Ok(())
}

/// The one-time backfill of sessions in an older layout, with progress in
/// the log every few seconds and a summary at the end.
fn migrate_legacy(store: &Store, dirs: &[(String, PathBuf)], report: &mut Report) {
    use crate::session::legacy;
    let todo: Vec<&(String, PathBuf)> =
        scan(dirs, "looking for sessions of an older layout", |session| {
            legacy::needs_migration(&session.1).then_some(session)
        });
    if todo.is_empty() {
        return;
    }
    tracing::info!(
        sessions = todo.len(),
        "migrating sessions from an older layout"
    );
    let mut last_log = std::time::Instant::now();
    for (i, (id, dir)) in todo.iter().enumerate() {
        match legacy::migrate(store, dir) {
            Ok(m) => {
                for (file, why) in &m.skipped {
                    tracing::warn!(session = %id, file = %file.display(), reason = %why, "not migrated");
                }
                report.migrated.push((id.clone(), m));
            }
            Err(e) => {
                tracing::error!(session = %id, error = %e, "migration failed; the session is left as it was (`openprogram migrate` tries again)");
                report.migration_failed.push((id.clone(), e.to_string()));
            }
        }
        if last_log.elapsed() > std::time::Duration::from_secs(3) {
            tracing::info!(done = i + 1, of = todo.len(), "migrating sessions");
            last_log = std::time::Instant::now();
        }
    }
    let turns: usize = report.migrated.iter().map(|(_, m)| m.turns).sum();
    let nodes: usize = report.migrated.iter().map(|(_, m)| m.nodes).sum();
    let skipped: usize = report.migrated.iter().map(|(_, m)| m.skipped.len()).sum();
    tracing::info!(
        sessions = report.migrated.len(),
        turns,
        nodes,
        skipped,
        failed = report.migration_failed.len(),
        "migration finished"
    );
}
