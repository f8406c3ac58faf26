//! One session's repository pushed to one remote with libgit2: every
//! branch whose tip differs, fast-forward only (a remote branch with
//! commits this session lacks is reported as diverged and left alone).

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use git2::{Direction, Oid, PushOptions, Repository};

use super::credentials::callbacks;
use super::error::{describe, PushError};
use super::remote::RemoteConfig;

/// What a push did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pushed {
    /// The session's HEAD commit at the time of the push.
    pub head: Option<String>,
    /// Refs updated on the remote (0: it was up to date).
    pub updated: usize,
}

/// Push `session_id`'s branches from its folder `dir` to `remote`.
pub fn push_session(
    remote: &RemoteConfig,
    session_id: &str,
    dir: &Path,
) -> Result<Pushed, PushError> {
    let repo = crate::git::open_repo(dir).map_err(|e| PushError::Local(describe(&e)))?;
    let local = local_branches(&repo).map_err(|e| PushError::Local(describe(&e)))?;
    let head = repo
        .head()
        .ok()
        .and_then(|h| h.target())
        .map(|o| o.to_string());
    let url = remote.url_for(session_id);
    let mut anon = repo
        .remote_anonymous(&url)
        .map_err(|e| PushError::Unreachable(describe(&e)))?;
    let mut conn = anon
        .connect_auth(Direction::Push, Some(callbacks(remote)), None)
        .map_err(|e| PushError::Unreachable(describe(&e)))?;
    let advertised: Vec<(String, Oid)> = conn
        .list()
        .map_err(|e| PushError::Unreachable(describe(&e)))?
        .iter()
        .map(|h| (h.name().to_string(), h.oid()))
        .collect();
    let mut specs = Vec::new();
    let mut diverged = Vec::new();
    let purges = crate::session::purge::records(dir).unwrap_or_default();
    for (name, oid) in &local {
        let target = remote.remote_ref(session_id, name);
        match advertised.iter().find(|(n, _)| *n == target) {
            Some((_, theirs)) if theirs == oid => {}
            Some((_, theirs)) => {
                let ours_follows = repo.find_commit(*theirs).is_ok()
                    && repo.graph_descendant_of(*oid, *theirs).unwrap_or(false);
                if ours_follows {
                    specs.push(format!("{name}:{target}"));
                } else if purged_into(&repo, &purges, *theirs, *oid)
                    || set_aside_here(&repo, session_id, *theirs, *oid)
                {
                    // A lease: libgit2 names the advertised commit as the
                    // old value, so a remote moved since refuses it.
                    specs.push(format!("+{name}:{target}"));
                } else {
                    diverged.push(target);
                }
            }
            None => specs.push(format!("{name}:{target}")),
        }
    }
    let updated = specs.len();
    if !specs.is_empty() {
        let refused = send(remote, conn.remote(), &specs)?;
        if !refused.is_empty() {
            let refs: Vec<&str> = refused.iter().map(|(n, _)| n.as_str()).collect();
            return Err(PushError::Refused {
                refs: refs.join(", "),
                message: refused[0].1.clone(),
            });
        }
    }
    if !diverged.is_empty() {
        return Err(PushError::Diverged(diverged.join(", ")));
    }
    Ok(Pushed { head, updated })
}

/// Whether the remote's `theirs` is a commit a purge of this session
/// rewrote into `ours` or one of its ancestors: the remote holds the
/// history from before the purge, which the rewritten branch replaces.
/// Any other commit there is a divergence, never overwritten.
pub fn purged_into(
    repo: &Repository,
    purges: &[crate::session::purge::PurgeRecord],
    theirs: Oid,
    ours: Oid,
) -> bool {
    let Some(new) = crate::session::purge::PurgeRecord::resolve(purges, &theirs.to_string())
        .and_then(|n| Oid::from_str(&n).ok())
    else {
        return false;
    };
    new == ours || repo.graph_descendant_of(ours, new).unwrap_or(false)
}

/// Whether the remote's `theirs` is a commit this session made and then
/// set aside: a turn committed but not acknowledged when the server was
/// killed, pushed in between, and committed again by the restart (with
/// other times, so another id). It is in this repository, its trailers
/// name this session, no local ref reaches it (nothing acknowledged is in
/// it: every acknowledged commit stays on a ref), and its parent is in
/// `ours`: only that one commit is replaced on the remote, under a lease.
/// A commit made anywhere else is not here, and stays a divergence.
pub fn set_aside_here(repo: &Repository, session_id: &str, theirs: Oid, ours: Oid) -> bool {
    let Ok(commit) = repo.find_commit(theirs) else {
        return false;
    };
    let ours_session = crate::git::Trailers::parse(commit.message().unwrap_or_default())
        .session
        .is_some_and(|s| s == session_id);
    let parent_kept = commit
        .parent_id(0)
        .is_ok_and(|p| p == ours || repo.graph_descendant_of(ours, p).unwrap_or(false));
    if !ours_session || !parent_kept {
        return false;
    }
    let Ok(refs) = repo.references() else {
        return false;
    };
    for r in refs.flatten() {
        let Some(tip) = r.target() else {
            continue;
        };
        if tip == theirs || repo.graph_descendant_of(tip, theirs).unwrap_or(true) {
            return false;
        }
    }
    true
}

/// Push `specs` over the connected `remote`: the refs the server refused,
/// with its message for each.
pub(super) fn send(
    config: &RemoteConfig,
    remote: &mut git2::Remote<'_>,
    specs: &[String],
) -> Result<Vec<(String, String)>, PushError> {
    let mut refused: Vec<(String, String)> = Vec::new();
    let mut cbs = callbacks(config);
    cbs.push_update_reference(|name, status| {
        if let Some(msg) = status {
            refused.push((name.to_string(), msg.to_string()));
        }
        Ok(())
    });
    let mut opts = PushOptions::new();
    opts.remote_callbacks(cbs);
    remote
        .push(specs, Some(&mut opts))
        .map_err(|e| classify(&e))?;
    drop(opts);
    Ok(refused)
}

/// A failed push: a refusal by the server (its hooks, a non-fast-forward
/// it saw) or a transport failure.
pub(super) fn classify(e: &git2::Error) -> PushError {
    let text = describe(e);
    match e.code() {
        git2::ErrorCode::NotFastForward => PushError::Diverged(text),
        _ if e.class() == git2::ErrorClass::Net
            || e.class() == git2::ErrorClass::Ssh
            || e.class() == git2::ErrorClass::Http
            || e.class() == git2::ErrorClass::Ssl
            || e.code() == git2::ErrorCode::Auth =>
        {
            PushError::Unreachable(text)
        }
        _ => PushError::Refused {
            refs: String::new(),
            message: text,
        },
    }
}

/// Every `refs/heads/*` of the repository with its commit.
pub fn local_branches(repo: &Repository) -> Result<Vec<(String, Oid)>, git2::Error> {
    let mut out = Vec::new();
    for r in repo.references_glob("refs/heads/*")? {
        let r = r?;
        if let (Some(name), Some(oid)) = (r.name(), r.target()) {
            out.push((name.to_string(), oid));
        }
    }
    out.sort();
    Ok(out)
}

/// The refs a remote URL advertises (no local repository needed).
pub fn list_remote(remote: &RemoteConfig, url: &str) -> Result<Vec<(String, Oid)>, PushError> {
    let mut anon =
        git2::Remote::create_detached(url).map_err(|e| PushError::Unreachable(describe(&e)))?;
    let conn = anon
        .connect_auth(Direction::Fetch, Some(callbacks(remote)), None)
        .map_err(|e| PushError::Unreachable(describe(&e)))?;
    let heads = conn
        .list()
        .map_err(|e| PushError::Unreachable(describe(&e)))?;
    Ok(heads
        .iter()
        .map(|h| (h.name().to_string(), h.oid()))
        .collect())
}

/// Delete every branch of `session_id` on the remote (a deleted session
/// with `delete_remote`), from `scratch`, any repository.
pub fn delete_session(
    remote: &RemoteConfig,
    session_id: &str,
    scratch: &Repository,
) -> Result<usize, PushError> {
    let url = remote.url_for(session_id);
    let mut anon = scratch
        .remote_anonymous(&url)
        .map_err(|e| PushError::Unreachable(describe(&e)))?;
    let mut conn = anon
        .connect_auth(Direction::Push, Some(callbacks(remote)), None)
        .map_err(|e| PushError::Unreachable(describe(&e)))?;
    let specs: Vec<String> = conn
        .list()
        .map_err(|e| PushError::Unreachable(describe(&e)))?
        .iter()
        .filter(|h| remote.local_ref(session_id, h.name()).is_some())
        .map(|h| format!(":{}", h.name()))
        .collect();
    if specs.is_empty() {
        return Ok(0);
    }
    let mut opts = PushOptions::new();
    opts.remote_callbacks(callbacks(remote));
    conn.remote()
        .push(&specs, Some(&mut opts))
        .map_err(|e| classify(&e))?;
    Ok(specs.len())
}

/// A ref lock older than this in a local remote belongs to no push.
pub const STALE_LOCK: Duration = Duration::from_secs(10);

/// A push to a local remote (`file://` or a path) refused because a ref
/// is locked: libgit2 writes such a remote from this process, so a kill
/// during a push leaves its `.lock` file behind and every later push of
/// that ref is refused. A lock inside the remote older than `STALE_LOCK`
/// (a push holds one for milliseconds) is removed; true when one was.
pub fn clear_stale_lock(remote: &RemoteConfig, session_id: &str, error: &PushError) -> bool {
    let PushError::Refused { message, .. } = error else {
        return false;
    };
    let Some(lock) = locked_file(message) else {
        return false;
    };
    let url = remote.url_for(session_id);
    let Some(root) = local_path(&url) else {
        return false;
    };
    let (Ok(root), Some(name)) = (root.canonicalize(), lock.file_name()) else {
        return false;
    };
    // The lock's folder resolved, so that `..` cannot lead out of the remote.
    let Some(folder) = lock.parent().and_then(|p| p.canonicalize().ok()) else {
        return false;
    };
    let lock = folder.join(name);
    let stale = std::fs::symlink_metadata(&lock)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .is_some_and(|age| age >= STALE_LOCK);
    if !stale || !lock.starts_with(&root) || lock.extension().is_none_or(|e| e != "lock") {
        return false;
    }
    match std::fs::remove_file(&lock) {
        Ok(()) => {
            tracing::warn!(remote = %remote.name, lock = %lock.display(), "removed a lock a killed push left in the local remote");
            true
        }
        Err(_) => false,
    }
}

/// The file named by libgit2's "failed to lock file '…'".
fn locked_file(message: &str) -> Option<PathBuf> {
    let rest = message.split("failed to lock file '").nth(1)?;
    let path = rest.split('\'').next()?;
    Some(PathBuf::from(path))
}

/// The folder of a local remote's URL (None: a network remote).
pub(super) fn local_path(url: &str) -> Option<PathBuf> {
    if let Some(path) = url.strip_prefix("file://") {
        return Some(PathBuf::from(path));
    }
    (!url.contains("://") && url.starts_with('/')).then(|| PathBuf::from(url))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(lock: &Path) -> PushError {
        PushError::Refused {
            refs: "refs/sessions/s/heads/main".into(),
            message: format!(
                "the remote refused refs/sessions/s/heads/main: failed to lock file '{}' for writing: ",
                lock.display()
            ),
        }
    }

    fn age(path: &Path, secs: u64) {
        std::fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(SystemTime::now() - Duration::from_secs(secs))
            .unwrap();
    }

    fn commit(repo: &Repository, parent: Option<Oid>, message: &str, at: i64) -> Oid {
        let sig = git2::Signature::new("t", "t@t", &git2::Time::new(at, 0)).unwrap();
        let tree = repo
            .find_tree(repo.treebuilder(None).unwrap().write().unwrap())
            .unwrap();
        let parents: Vec<git2::Commit> = parent
            .map(|p| repo.find_commit(p).unwrap())
            .into_iter()
            .collect();
        let refs: Vec<&git2::Commit> = parents.iter().collect();
        repo.commit(None, &sig, &sig, message, &tree, &refs)
            .unwrap()
    }

    #[test]
    fn only_a_commit_this_session_made_and_set_aside_is_replaced_on_the_remote() {
        let tmp = tempfile::tempdir().unwrap();
        let local = Repository::init(tmp.path().join("s1")).unwrap();
        let init = commit(&local, None, "session init", 1);
        let turn = "turn 1: hi\n\nOpenprogram-Session: s1\nOpenprogram-Turn: 1\n";
        // Committed, pushed, never acknowledged; the restart made it again.
        let lost = commit(&local, Some(init), turn, 2);
        let again = commit(&local, Some(init), turn, 3);
        local
            .reference("refs/heads/main", again, true, "t")
            .unwrap();
        local
            .reference("refs/openprogram/acked/main", again, true, "t")
            .unwrap();
        let remote_dir = tmp.path().join("memory.git");
        let remote_repo = Repository::init_bare(&remote_dir).unwrap();
        drop(remote_repo);
        // What the remote had before the kill.
        local.reference("refs/heads/was", lost, true, "t").unwrap();
        let config = RemoteConfig {
            name: "disk".into(),
            url: format!("file://{}", remote_dir.display()),
            ..RemoteConfig::default()
        };
        let mut r = local.remote_anonymous(&config.url).unwrap();
        r.push(&["refs/heads/was:refs/sessions/s1/heads/main"], None)
            .unwrap();
        local
            .find_reference("refs/heads/was")
            .unwrap()
            .delete()
            .unwrap();
        assert!(set_aside_here(&local, "s1", lost, again));
        assert!(
            !set_aside_here(&local, "other", lost, again),
            "another session's"
        );
        let pushed = push_session(&config, "s1", &tmp.path().join("s1")).unwrap();
        assert_eq!(pushed.updated, 1);
        let remote_repo = Repository::open_bare(&remote_dir).unwrap();
        assert_eq!(
            remote_repo
                .refname_to_id("refs/sessions/s1/heads/main")
                .unwrap(),
            again
        );
        // A commit some ref here still reaches is not set aside; one made
        // elsewhere (not in this repository) is a divergence.
        local
            .reference("refs/openprogram/kept/x", lost, true, "t")
            .unwrap();
        assert!(!set_aside_here(&local, "s1", lost, again));
        let elsewhere = Repository::init(tmp.path().join("other")).unwrap();
        let init2 = commit(&elsewhere, None, "session init", 1);
        let foreign = commit(&elsewhere, Some(init2), turn, 9);
        assert!(!set_aside_here(&local, "s1", foreign, again));
    }

    #[test]
    fn only_an_old_lock_inside_a_local_remote_is_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("memory.git");
        let refs = repo.join("refs/sessions/s/heads");
        std::fs::create_dir_all(&refs).unwrap();
        let lock = refs.join("main.lock");
        let outside = tmp.path().join("other.lock");
        std::fs::write(&lock, "").unwrap();
        std::fs::write(&outside, "").unwrap();
        let mut remote = RemoteConfig {
            name: "disk".into(),
            url: format!("file://{}", repo.display()),
            ..RemoteConfig::default()
        };
        // A push holding it now.
        assert!(!clear_stale_lock(&remote, "s", &refused(&lock)));
        assert!(lock.exists());
        age(&lock, 60);
        age(&outside, 60);
        assert!(!clear_stale_lock(&remote, "s", &refused(&outside)));
        let sneaky = refs.join("../../../../other.lock");
        assert!(!clear_stale_lock(&remote, "s", &refused(&sneaky)));
        assert!(outside.exists());
        assert!(clear_stale_lock(&remote, "s", &refused(&lock)));
        assert!(!lock.exists());
        // A network remote's files are not ours to touch.
        std::fs::write(&lock, "").unwrap();
        age(&lock, 60);
        remote.url = "git://127.0.0.1/memory.git".into();
        assert!(!clear_stale_lock(&remote, "s", &refused(&lock)));
        assert!(lock.exists());
    }
}
