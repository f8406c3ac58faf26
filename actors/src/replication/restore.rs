//! Sessions brought back from a remote into a state directory, and a
//! state directory compared with a remote.
//!
//! A restored session is its branches fetched into a new session
//! repository, HEAD on the branch it last committed on (`main` on a
//! tie), the tree checked out: its `meta.json` (title, flags, project) and
//! history as last committed, then what it had not committed yet (its
//! open state, `super::open`). It is built in a temporary folder, loaded
//! and checked there, then moved into place; a session already in the
//! state directory is left alone.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use git2::{FetchOptions, Oid, Repository};

use super::credentials::callbacks;
use super::error::{describe, PushError};
use super::push::{list_remote, local_branches};
use super::remote::{is_session_ref, split_shared_ref, Layout, RemoteConfig};
use crate::fsio;
use crate::session::layout;
use crate::session::SessionCore;
use crate::store::Store;

/// Each session on the remote with its refs (branches `refs/heads/…` and
/// open states, `super::open`) and their commits. A per-session remote cannot be listed: `ids` names the
/// sessions to look for there.
pub fn remote_sessions(
    remote: &RemoteConfig,
    ids: &[String],
) -> Result<BTreeMap<String, Vec<(String, Oid)>>, PushError> {
    let mut out: BTreeMap<String, Vec<(String, Oid)>> = BTreeMap::new();
    match remote.layout() {
        Layout::Shared => {
            for (name, oid) in list_remote(remote, &remote.url)? {
                if let Some((id, branch)) = split_shared_ref(&name) {
                    if ids.is_empty() || ids.iter().any(|i| i == id) {
                        out.entry(id.to_string()).or_default().push((branch, oid));
                    }
                }
            }
        }
        Layout::PerSession => {
            for id in ids {
                let refs: Vec<(String, Oid)> = list_remote(remote, &remote.url_for(id))?
                    .into_iter()
                    .filter(|(n, _)| is_session_ref(n))
                    .collect();
                if !refs.is_empty() {
                    out.insert(id.clone(), refs);
                }
            }
        }
    }
    for refs in out.values_mut() {
        refs.sort();
    }
    Ok(out)
}

/// What a restore did.
#[derive(Debug, Default)]
pub struct Restored {
    pub restored: Vec<String>,
    /// Projects registered again from the restored sessions' records.
    pub projects: usize,
    /// Already in the state directory (left as it is).
    pub present: Vec<String>,
    pub failed: Vec<(String, String)>,
}

/// Restore the sessions of `remote` (only `ids` when given) that the state
/// directory lacks; `taken`: ids of sessions living elsewhere (project
/// folders).
pub fn restore(
    store: &Store,
    remote: &RemoteConfig,
    ids: &[String],
    taken: &HashSet<String>,
    mut progress: impl FnMut(&str),
) -> Result<Restored, PushError> {
    if remote.layout() == Layout::PerSession && ids.is_empty() {
        return Err(PushError::Local(
            "a remote with one repository per session cannot be listed: name the sessions (--session ID)".into(),
        ));
    }
    let sessions = remote_sessions(remote, ids)?;
    let mut out = Restored::default();
    let mut homes = Vec::new();
    for (id, refs) in sessions {
        progress(&id);
        if crate::ids::validate("session id", &id).is_err() {
            out.failed.push((id, "not a session id".into()));
            continue;
        }
        if taken.contains(&id) || store.default_session_dir(&id).exists() {
            out.present.push(id);
            continue;
        }
        match restore_one(store, remote, &id, &refs) {
            Ok(meta) => {
                if let Some(home) = meta.project_home {
                    homes.push((id.clone(), meta.project_id, home));
                }
                out.restored.push(id)
            }
            Err(e) => out.failed.push((id, e)),
        }
    }
    // The project registry went with the state folder: the projects the
    // sessions were bound to are listed again.
    out.projects = crate::project::registry::State::register_restored(store.state_dir(), &homes)
        .map_err(|e| PushError::Local(format!("the project registry: {e}")))?;
    Ok(out)
}

/// Why one session was not restored (shown as text).
#[derive(Debug)]
struct Failed(String);

impl From<std::io::Error> for Failed {
    fn from(e: std::io::Error) -> Self {
        Failed(e.to_string())
    }
}

impl From<String> for Failed {
    fn from(e: String) -> Self {
        Failed(e)
    }
}

fn restore_one(
    store: &Store,
    remote: &RemoteConfig,
    id: &str,
    refs: &[(String, Oid)],
) -> Result<crate::meta::SessionMeta, String> {
    let sessions_dir = store.sessions_dir();
    let git = |e: git2::Error| Failed(describe(&e));
    fsio::build_dir_atomically(sessions_dir, "restore", |tmp| -> Result<_, Failed> {
        let repo = crate::git::init_session_repo(tmp).map_err(git)?;
        fetch(&repo, remote, id, refs)?;
        // What the remote holds was acknowledged: a user's `git reset` of
        // a restored branch is put back on it.
        crate::git::acknowledge_branches(&repo).map_err(git)?;
        let head = newest_branch(&repo, refs).ok_or(Failed("no branch to restore".into()))?;
        repo.set_head(&head).map_err(git)?;
        repo.checkout_head(Some(git2::build::CheckoutBuilder::new().force()))
            .map_err(git)?;
        // What was written but not committed yet, as the remote last got it.
        let tip = repo.refname_to_id(&head).map_err(git)?;
        let branch = head.strip_prefix("refs/heads/").unwrap_or(&head);
        super::open::put_back(&repo, tmp, branch, tip)?;
        let meta: crate::meta::SessionMeta = fsio::read_json(&tmp.join(layout::META))
            .map_err(|e| Failed(format!("no valid meta.json: {e}")))?;
        if meta.id != id {
            return Err(Failed(format!("its meta.json names session {}", meta.id)));
        }
        fsio::create_private_dir_all(&tmp.join(layout::WORKDIR))?;
        drop(repo);
        SessionCore::load_as(store, tmp, Some(id))
            .map_err(|e| Failed(format!("the restored session does not load: {e}")))?;
        fsio::make_private(tmp)?;
        Ok((sessions_dir.join(id), meta))
    })
    .map_err(|f| f.0)
}

fn fetch(
    repo: &Repository,
    remote: &RemoteConfig,
    id: &str,
    refs: &[(String, Oid)],
) -> Result<(), String> {
    let specs: Vec<String> = refs
        .iter()
        .map(|(local, _)| format!("{}:{local}", remote.remote_ref(id, local)))
        .collect();
    let mut anon = repo
        .remote_anonymous(&remote.url_for(id))
        .map_err(|e| describe(&e))?;
    let mut opts = FetchOptions::new();
    opts.remote_callbacks(callbacks(remote));
    opts.download_tags(git2::AutotagOption::None);
    anon.fetch(&specs, Some(&mut opts), None)
        .map_err(|e| describe(&e))?;
    // An open state is replaced at every push: only branches must not move.
    for (local, oid) in refs.iter().filter(|(n, _)| n.starts_with("refs/heads/")) {
        let got = repo.refname_to_id(local).map_err(|e| describe(&e))?;
        if got != *oid {
            return Err(format!("{local} moved on the remote during the restore"));
        }
    }
    Ok(())
}

/// The branch the session was on last: the one whose open state (files
/// not committed yet) continues its tip, else the tip whose committed
/// `meta.json` says it was updated last (commit times have whole seconds
/// only), else the newest commit; `main` on a tie.
fn newest_branch(repo: &Repository, refs: &[(String, Oid)]) -> Option<String> {
    let heads = || refs.iter().filter(|(n, _)| n.starts_with("refs/heads/"));
    let open = heads().find(|(name, tip)| {
        let branch = name.strip_prefix("refs/heads/").unwrap_or(name);
        refs.iter()
            .find(|(n, _)| *n == format!("{}{branch}", super::open::PREFIX))
            .and_then(|(_, o)| repo.find_commit(*o).ok())
            .is_some_and(|c| c.parent_id(0).ok() == Some(*tip))
    });
    if let Some((name, _)) = open {
        return Some(name.clone());
    }
    let mut best: Option<((f64, bool), String)> = None;
    for (name, oid) in heads() {
        let Ok(c) = repo.find_commit(*oid) else {
            continue;
        };
        let updated = committed_update_time(repo, &c).unwrap_or(c.time().seconds() as f64);
        let key = (updated, name == "refs/heads/main");
        if best
            .as_ref()
            .is_none_or(|(b, _)| key.0 > b.0 || (key.0 == b.0 && key.1 && !b.1))
        {
            best = Some((key, name.clone()));
        }
    }
    best.map(|b| b.1)
}

/// `updated_at` of the `meta.json` in a commit's tree.
fn committed_update_time(repo: &Repository, commit: &git2::Commit<'_>) -> Option<f64> {
    let entry = commit.tree().ok()?.get_name(layout::META)?.id();
    let blob = repo.find_blob(entry).ok()?;
    let v: serde_json::Value = serde_json::from_slice(blob.content()).ok()?;
    v["updated_at"].as_f64()
}

/// How a local session differs from its copy on a remote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    pub session: String,
    pub branch: String,
    /// `missing` (not on the remote), `behind` (the remote lacks newer
    /// commits), `differs` (the remote has another commit), `remote_only`
    /// (a session or branch only the remote has).
    pub what: &'static str,
}

/// Compare every session folder of `store` with `remote`.
pub fn compare(store: &Store, remote: &RemoteConfig) -> Result<Vec<Difference>, PushError> {
    let folders = store
        .all_session_folders()
        .map_err(|e| PushError::Local(e.to_string()))?;
    let ids: Vec<String> = folders.iter().map(|(id, _)| id.clone()).collect();
    let mut on_remote = remote_sessions(remote, &ids)?;
    let mut out = Vec::new();
    for (id, dir) in &folders {
        let mut theirs = on_remote.remove(id).unwrap_or_default();
        theirs.retain(|(n, _)| n.starts_with("refs/heads/"));
        let repo = match crate::git::open_repo(dir) {
            Ok(r) => r,
            Err(_) => continue,
        };
        let ours = local_branches(&repo).map_err(|e| PushError::Local(describe(&e)))?;
        for (branch, oid) in &ours {
            let what = match theirs.iter().find(|(b, _)| b == branch) {
                None => "missing",
                Some((_, t)) if t == oid => continue,
                Some((_, t)) if repo.graph_descendant_of(*oid, *t).unwrap_or(false) => "behind",
                Some(_) => "differs",
            };
            out.push(Difference {
                session: id.clone(),
                branch: branch.clone(),
                what,
            });
        }
        for (branch, _) in &theirs {
            if !ours.iter().any(|(b, _)| b == branch) {
                out.push(Difference {
                    session: id.clone(),
                    branch: branch.clone(),
                    what: "remote_only",
                });
            }
        }
    }
    for (id, refs) in on_remote {
        for (branch, _) in refs
            .into_iter()
            .filter(|(n, _)| n.starts_with("refs/heads/"))
        {
            out.push(Difference {
                session: id.clone(),
                branch,
                what: "remote_only",
            });
        }
    }
    Ok(out)
}

/// Whether `dir` holds a session repository (for callers checking a
/// restore target).
pub fn is_session_dir(dir: &Path) -> bool {
    dir.join(".git").is_dir() && dir.join(layout::META).is_file()
}
