//! `fsck`: every session's git objects and refs (through libgit2), its
//! recorded turns against its commits, `index.json` against the session
//! directories, `locations.json` and `projects.json`. Problems are listed
//! with whether `--repair` can fix them; repair does what a server's
//! startup does (`SessionCore::load`'s reconcile, the registry's startup
//! repair) and never deletes a session.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use git2::{ObjectType, Oid, Repository};

use crate::meta::SessionMeta;
use crate::registry::startup;
use crate::store::{project_folder_missing, Store};
use crate::{fsio, git};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fix {
    /// `--repair` fixes it.
    Repairable,
    /// Nothing here can: restore from a backup (or relocate a project).
    Manual,
}

#[derive(Debug, Clone)]
pub struct Problem {
    /// The session it is about, if any.
    pub session: Option<String>,
    pub what: String,
    pub fix: Fix,
}

#[derive(Debug, Default)]
pub struct Report {
    pub sessions: usize,
    pub objects: usize,
    pub problems: Vec<Problem>,
    /// What `--repair` did.
    pub repaired: Vec<String>,
}

impl Report {
    fn problem(&mut self, session: Option<&str>, what: String, fix: Fix) {
        self.problems.push(Problem {
            session: session.map(str::to_owned),
            what,
            fix,
        });
    }
}

/// Check `state_dir`; `progress` is called once per session checked.
pub fn check(store: &Store, mut progress: impl FnMut(&str)) -> std::io::Result<Report> {
    let mut report = Report::default();
    let dirs = store.all_session_folders()?;
    report.sessions = dirs.len();
    for (id, dir) in &dirs {
        check_session(id, dir, &mut report);
        progress(id);
    }
    check_index(store, &dirs, &mut report);
    check_locations(store, &mut report);
    check_projects(store.state_dir(), &mut report);
    Ok(report)
}

fn check_session(id: &str, dir: &Path, report: &mut Report) {
    if !dir.exists() {
        if project_folder_missing(dir) {
            report.problem(
                Some(id),
                format!(
                    "its project folder is missing ({}); relocate the project",
                    dir.display()
                ),
                Fix::Manual,
            );
        }
        return;
    }
    if dir.join(crate::session::legacy::UNDER_WAY).exists() {
        report.problem(
            Some(id),
            "its migration from an older layout was cut short; the next start (or `openprogram migrate`) finishes it".to_string(),
            Fix::Manual,
        );
    }
    let repo = match Repository::open(dir) {
        Ok(r) => r,
        Err(e) => {
            report.problem(
                Some(id),
                format!("not a readable git repository: {e}"),
                Fix::Manual,
            );
            return;
        }
    };
    match crate::session::outside::detached_at(&repo) {
        Ok(Some(at)) => report.problem(
            Some(id),
            format!("HEAD is detached at {at} (a `git checkout` outside the server); --repair puts it back on its branch"),
            Fix::Repairable,
        ),
        Ok(None) => {}
        Err(e) => report.problem(Some(id), format!("HEAD unreadable: {e}"), Fix::Manual),
    }
    let tips = match git::list_branches(&repo) {
        Ok(t) => t,
        Err(e) => {
            report.problem(Some(id), format!("branches unreadable: {e}"), Fix::Manual);
            return;
        }
    };
    // Branches moved back by a user's git (`reset`, `update-ref`): their
    // acknowledged commits are kept by the service's own refs.
    match crate::session::outside::acked_tips(&repo) {
        Ok(acked) => {
            for (branch, oid) in acked {
                let now = repo.refname_to_id(&branch).ok();
                let behind = match now {
                    None => true,
                    Some(at) if at == oid => false,
                    Some(at) => repo.graph_descendant_of(oid, at).unwrap_or(false),
                };
                if behind {
                    let short = branch.trim_start_matches("refs/heads/");
                    report.problem(
                        Some(id),
                        format!("branch {short} was moved back from its acknowledged commit {oid} (a `git reset` or `update-ref` outside the server); --repair puts it back"),
                        Fix::Repairable,
                    );
                } else if now.is_some_and(|at| {
                    !repo.graph_descendant_of(at, oid).unwrap_or(false) && at != oid
                }) {
                    let short = branch.trim_start_matches("refs/heads/");
                    report.problem(
                        Some(id),
                        format!("branch {short} was moved away from its acknowledged commit {oid}, which stays reachable as {}", git::acked_ref(&branch)),
                        Fix::Manual,
                    );
                }
            }
        }
        Err(e) => report.problem(Some(id), format!("refs unreadable: {e}"), Fix::Manual),
    }
    let mut seen = HashSet::new();
    for tip in &tips {
        if let Err(what) = walk_commits(&repo, tip.oid, &mut seen) {
            report.problem(
                Some(id),
                format!("branch {}: {what}", tip.name),
                Fix::Manual,
            );
        }
    }
    report.objects += seen.len();
    // A running server writes meta.json and then moves the branch: a
    // turn seen between the two is ended and committed a moment later, so
    // it is reported only when a second look, after that moment, agrees.
    let first = uncommitted_turn(dir, &tips);
    let confirmed = match first {
        Ok(Some(turn)) => {
            std::thread::sleep(std::time::Duration::from_millis(SECOND_LOOK_MS));
            match git::list_branches(&repo) {
                Ok(now) => uncommitted_turn(dir, &now).map(|t| t.filter(|t| *t == turn)),
                Err(e) => Err(format!("branches unreadable: {e}")),
            }
        }
        other => other,
    };
    match confirmed {
        Ok(Some(turn)) => report.problem(
            Some(id),
            format!("turn {turn} ended but has no commit"),
            Fix::Repairable,
        ),
        Ok(None) => {}
        Err(e) => report.problem(Some(id), e, Fix::Manual),
    }
}

/// How long fsck waits before it looks again at a turn that seems ended
/// without its commit.
const SECOND_LOOK_MS: u64 = 300;

/// The number of the last ended turn when no branch holds its commit.
fn uncommitted_turn(dir: &Path, tips: &[git::BranchTip]) -> Result<Option<u64>, String> {
    let meta = SessionMeta::read_lenient(&dir.join("meta.json"))
        .map_err(|e| format!("meta.json unreadable: {e}"))?;
    let committed = tips.iter().map(|t| t.trailers.last_seq).max().unwrap_or(0);
    Ok(meta
        .last_turn
        .as_ref()
        .filter(|t| t.last_seq > committed)
        .map(|t| t.number))
}

/// Every commit reachable from `start`, its trees and blobs: each must be
/// there and read back whole.
fn walk_commits(repo: &Repository, start: Oid, seen: &mut HashSet<Oid>) -> Result<(), String> {
    let odb = repo.odb().map_err(|e| e.to_string())?;
    let mut walk = repo.revwalk().map_err(|e| e.to_string())?;
    walk.push(start).map_err(|e| format!("tip {start}: {e}"))?;
    for oid in walk {
        let oid = oid.map_err(|e| format!("history unreadable: {e}"))?;
        if !seen.insert(oid) {
            continue;
        }
        read_verified(&odb, oid).map_err(|e| format!("commit {oid}: {e}"))?;
        let commit = repo
            .find_commit(oid)
            .map_err(|e| format!("commit {oid}: {e}"))?;
        walk_tree(repo, commit.tree_id(), seen)?;
    }
    Ok(())
}

fn walk_tree(repo: &Repository, tree: Oid, seen: &mut HashSet<Oid>) -> Result<(), String> {
    if !seen.insert(tree) {
        return Ok(());
    }
    let odb = repo.odb().map_err(|e| e.to_string())?;
    let damaged = |e: String| format!("missing or damaged tree {tree}: {e}");
    read_verified(&odb, tree).map_err(damaged)?;
    let tree = repo.find_tree(tree).map_err(|e| damaged(e.to_string()))?;
    for entry in tree.iter() {
        match entry.kind() {
            Some(ObjectType::Tree) => walk_tree(repo, entry.id(), seen)?,
            Some(ObjectType::Blob) if seen.insert(entry.id()) => {
                read_verified(&odb, entry.id()).map_err(|e| {
                    format!(
                        "missing or damaged object {} ({}): {e}",
                        entry.id(),
                        entry.name().unwrap_or("?")
                    )
                })?;
            }
            _ => {}
        }
    }
    Ok(())
}

/// Read object `id` and check that its content hashes to its id (the
/// server reads objects without that check: see `git::enable_fsync`).
fn read_verified(odb: &git2::Odb<'_>, id: Oid) -> Result<(), String> {
    let object = odb.read(id).map_err(|e| e.to_string())?;
    let hashed = Oid::hash_object(object.kind(), object.data()).map_err(|e| e.to_string())?;
    if hashed != id {
        return Err(format!("its content hashes to {hashed}"));
    }
    Ok(())
}

fn check_index(store: &Store, dirs: &[(String, PathBuf)], report: &mut Report) {
    // With the journal's later changes, as startup reads it.
    let index = match startup::listing(store).index {
        Ok(i) => i,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            report.problem(None, "index.json is missing".into(), Fix::Repairable);
            return;
        }
        Err(e) => {
            report.problem(None, format!("index.json unreadable: {e}"), Fix::Repairable);
            return;
        }
    };
    let on_disk: HashMap<&str, &PathBuf> = dirs.iter().map(|(i, d)| (i.as_str(), d)).collect();
    let listed: HashSet<&str> = index.rows.keys().map(String::as_str).collect();
    for row in index.rows.values() {
        match on_disk.get(row.id.as_str()) {
            None => report.problem(
                Some(&row.id),
                "index.json lists it but its directory is missing".into(),
                Fix::Repairable,
            ),
            Some(dir) if !dir.exists() && !project_folder_missing(dir) => report.problem(
                Some(&row.id),
                "index.json lists it but its directory is missing".into(),
                Fix::Repairable,
            ),
            _ => {}
        }
    }
    for (id, dir) in dirs {
        if dir.join("meta.json").is_file() && !listed.contains(id.as_str()) {
            report.problem(Some(id), "not listed in index.json".into(), Fix::Repairable);
        }
    }
}

fn check_locations(store: &Store, report: &mut Report) {
    let locations = store.locations();
    for (id, dir) in locations.iter() {
        if !dir.exists() && !project_folder_missing(dir) {
            report.problem(
                Some(id),
                format!("locations.json points at {}, which is gone", dir.display()),
                Fix::Repairable,
            );
        }
    }
}

fn check_projects(state_dir: &Path, report: &mut Report) {
    let path = state_dir
        .join("projects")
        .join(crate::project::registry::FILE);
    match std::fs::read(&path) {
        Ok(bytes) => {
            if let Err(e) = serde_json::from_slice::<serde_json::Value>(&bytes) {
                report.problem(None, format!("projects.json unreadable: {e}"), Fix::Manual);
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => report.problem(None, format!("projects.json unreadable: {e}"), Fix::Manual),
    }
}

/// Repair what startup would: each session with a repairable problem is
/// loaded (its crash repair commits an ended turn, restores meta.json, the
/// index and the work tree), then the registry's startup repair rewrites
/// index.json and drops dead locations. Nothing is deleted.
pub fn repair(store: &Store, report: &mut Report) -> std::io::Result<()> {
    let dirs: HashMap<String, PathBuf> = store.all_session_folders()?.into_iter().collect();
    let sessions: HashSet<String> = report
        .problems
        .iter()
        .filter(|p| p.fix == Fix::Repairable)
        .filter_map(|p| p.session.clone())
        .collect();
    for id in &sessions {
        let Some(dir) = dirs.get(id).filter(|d| d.join("meta.json").is_file()) else {
            continue;
        };
        git::enable_fsync();
        match crate::session::SessionCore::load(store, dir) {
            Ok(_) => report.repaired.push(format!("{id}: loaded and repaired")),
            Err(e) => report.repaired.push(format!("{id}: could not repair: {e}")),
        }
    }
    let mut locations = store.locations();
    // Keep every session (no retention rules): repair only.
    let policy = crate::registry::Policy {
        empty_shell_max_age_s: 0.0,
        archive_ttl_days: 0.0,
        max_sessions: 0,
    };
    let loaded = startup::open(store, &locations, &policy, None)?;
    let mut dropped = false;
    for id in &loaded.report.dropped_locations {
        dropped |= locations.remove(id);
        report
            .repaired
            .push(format!("{id}: dead locations.json entry dropped"));
    }
    if dropped {
        locations.save_now()?;
    }
    // A fresh snapshot, whatever startup thought of the old one.
    let mut rows: Vec<&crate::registry::SessionRow> = loaded.rows.values().map(|r| &**r).collect();
    rows.sort_by_key(|r| r.order_key());
    let bytes = crate::registry::list_file::encode(crate::meta::now(), loaded.seq, rows)?;
    fsio::atomic_write(&store.session_list_file(), &bytes)?;
    report
        .repaired
        .push("index.json rewritten from the sessions".into());
    Ok(())
}
