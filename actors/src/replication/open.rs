//! What a session holds but has not committed yet, carried to a remote:
//! an open turn's nodes, a note written after the last commit (an undo's
//! record), messages queued behind a running turn, and `meta.json` as it
//! is now.
//!
//! They travel as one commit on top of the branch tip, under
//! `refs/openprogram/open/<branch>` on the remote only. The commit is built
//! in the worker's scratch repository, in memory (the session's objects
//! read through an alternate), so the session repository is never written
//! by replication; it replaces the previous one at each push (a forced
//! update) and is deleted once everything is committed. A restore puts
//! its files back in the work tree when its parent is the restored
//! branch's tip: the session loads with the same open turn, as after a
//! restart.

use std::fs;
use std::io;
use std::path::Path;

use git2::{Direction, FileMode, ObjectType, Oid, Repository};

use super::credentials::callbacks;
use super::error::{describe, PushError};
use super::push::send;
use super::remote::RemoteConfig;
use crate::fsio;
use crate::session::layout;

/// Local and remote refs of the open state start with this (then the
/// branch name).
pub const PREFIX: &str = "refs/openprogram/open/";

/// Files of a session that differ from its branch tip.
#[derive(Debug)]
pub struct OpenFiles {
    /// The branch HEAD is on (`main`, `retry-1`…).
    pub branch: String,
    pub tip: Oid,
    /// Paths relative to the session folder, with their bytes.
    pub files: Vec<(String, Vec<u8>)>,
}

/// The files of session folder `dir` not committed on its branch yet
/// (None when everything is committed). Only history files numbered after
/// the newest commit's last node are looked at, so the cost follows what
/// is open, not the session's length.
pub fn open_files(repo: &Repository, dir: &Path) -> Result<Option<OpenFiles>, PushError> {
    let local = |e: git2::Error| PushError::Local(describe(&e));
    let Ok(branch) = crate::git::current_branch(repo) else {
        return Ok(None);
    };
    let Some(tip) = repo
        .find_reference(&format!("refs/heads/{branch}"))
        .ok()
        .and_then(|r| r.target())
    else {
        return Ok(None);
    };
    let tree = repo
        .find_commit(tip)
        .and_then(|c| c.tree())
        .map_err(local)?;
    let committed = crate::git::list_branches(repo)
        .map_err(local)?
        .iter()
        .map(|t| t.trailers.last_seq)
        .max()
        .unwrap_or(0);
    let io_err = |e: io::Error| PushError::Local(e.to_string());
    let mut paths = history_after(dir, committed).map_err(io_err)?;
    paths.push(layout::META.to_string());
    paths.extend(queued(dir).map_err(io_err)?);
    let mut files = Vec::new();
    for rel in paths {
        let bytes = match fs::read(dir.join(&rel)) {
            Ok(b) => b,
            // Committed and moved, or taken from the queue, meanwhile.
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(io_err(e)),
        };
        let oid = Oid::hash_object(ObjectType::Blob, &bytes).map_err(local)?;
        let same = tree
            .get_path(Path::new(&rel))
            .is_ok_and(|entry| entry.id() == oid);
        if !same {
            files.push((rel, bytes));
        }
    }
    Ok((!files.is_empty()).then_some(OpenFiles { branch, tip, files }))
}

/// History files (relative paths) numbered after `after`, reading only the
/// shard folders that can hold them.
fn history_after(dir: &Path, after: u64) -> io::Result<Vec<String>> {
    let first = after + 1;
    let start = (first / 10_000 % 100, first / 100 % 100);
    let history = dir.join(layout::HISTORY);
    let mut out = Vec::new();
    for a in numbered(&history)?.into_iter().filter(|a| *a >= start.0) {
        let outer = history.join(format!("{a:02}"));
        for b in numbered(&outer)?.into_iter().filter(|b| (a, *b) >= start) {
            let Some(entries) = read_dir_if_any(&outer.join(format!("{b:02}")))? else {
                continue;
            };
            for entry in entries {
                let name = entry?.file_name().to_string_lossy().into_owned();
                if let Some((seq, _, _)) = layout::parse_node_file_name(&name) {
                    if seq > after {
                        out.push(format!("{}/{a:02}/{b:02}/{name}", layout::HISTORY));
                    }
                }
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The entries of `dir`; None when it does not exist.
fn read_dir_if_any(dir: &Path) -> io::Result<Option<fs::ReadDir>> {
    match fs::read_dir(dir) {
        Ok(e) => Ok(Some(e)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// The two-digit shard folders in `dir`, as numbers.
fn numbered(dir: &Path) -> io::Result<Vec<u64>> {
    let Some(entries) = read_dir_if_any(dir)? else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for entry in entries {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if name.len() == 2 {
            if let Ok(n) = name.parse() {
                out.push(n);
            }
        }
    }
    Ok(out)
}

/// Messages queued behind a running turn (relative paths).
fn queued(dir: &Path) -> io::Result<Vec<String>> {
    let Some(entries) = read_dir_if_any(&dir.join(layout::QUEUE))? else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for entry in entries {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if !name.starts_with(fsio::TMP_PREFIX) {
            out.push(format!("{}/{name}", layout::QUEUE));
        }
    }
    out.sort();
    Ok(out)
}

/// Bring `remote`'s open state of session `id` (folder `dir`) up to date:
/// pushed when the session has files not committed yet, deleted there
/// when it has none but `was_open` (the remote may hold an older one).
/// Whether the remote now holds an open state. `scratch`: a bare
/// repository of the worker's own.
pub fn push_open(
    remote: &RemoteConfig,
    scratch: &Path,
    id: &str,
    dir: &Path,
    was_open: bool,
) -> Result<bool, PushError> {
    let local = |e: git2::Error| PushError::Local(describe(&e));
    let repo = crate::git::open_repo(dir).map_err(local)?;
    let open = open_files(&repo, dir)?;
    if open.is_none() && !was_open {
        return Ok(false);
    }
    let work = match Repository::open_bare(scratch) {
        Ok(r) => r,
        Err(_) => Repository::init_bare(scratch).map_err(local)?,
    };
    let odb = work.odb().map_err(local)?;
    let objects = repo.path().join("objects");
    odb.add_disk_alternate(&objects.to_string_lossy())
        .map_err(local)?;
    let _mempack = odb.add_new_mempack_backend(1000).map_err(local)?;
    let mut anon = work
        .remote_anonymous(&remote.url_for(id))
        .map_err(|e| PushError::Unreachable(describe(&e)))?;
    let mut conn = anon
        .connect_auth(Direction::Push, Some(callbacks(remote)), None)
        .map_err(|e| PushError::Unreachable(describe(&e)))?;
    let advertised: Vec<String> = conn
        .list()
        .map_err(|e| PushError::Unreachable(describe(&e)))?
        .iter()
        .map(|h| h.name().to_string())
        .collect();
    let Some(open) = open else {
        // Everything is committed: the remote's open states go.
        let prefix = remote.remote_ref(id, PREFIX);
        let specs: Vec<String> = advertised
            .iter()
            .filter(|n| n.starts_with(&prefix))
            .map(|n| format!(":{n}"))
            .collect();
        if !specs.is_empty() {
            refused(send(remote, conn.remote(), &specs)?)?;
        }
        return Ok(false);
    };
    let tip = work.find_commit(open.tip).map_err(local)?;
    let mut update = git2::build::TreeUpdateBuilder::new();
    for (rel, bytes) in &open.files {
        let blob = work.blob(bytes).map_err(local)?;
        update.upsert(rel.as_str(), blob, FileMode::Blob);
    }
    let base = tip.tree().map_err(local)?;
    let tree_id = update.create_updated(&work, &base).map_err(local)?;
    let tree = work.find_tree(tree_id).map_err(local)?;
    let sig = crate::git::store_signature().map_err(local)?;
    let message = format!(
        "openprogram: not committed yet ({} file{})\n",
        open.files.len(),
        if open.files.len() == 1 { "" } else { "s" }
    );
    let commit = work
        .commit(None, &sig, &sig, &message, &tree, &[&tip])
        .map_err(local)?;
    // A name of the scratch repository's own for the push's source, gone
    // right after (a kill in between leaves a ref nothing reads).
    let source = format!("refs/open/{id}/{}", open.branch);
    work.reference(&source, commit, true, "open state")
        .map_err(local)?;
    let target = remote.remote_ref(id, &format!("{PREFIX}{}", open.branch));
    let mut specs = vec![format!("+{source}:{target}")];
    // Open states of other branches are stale now.
    let prefix = remote.remote_ref(id, PREFIX);
    specs.extend(
        advertised
            .iter()
            .filter(|n| n.starts_with(&prefix) && **n != target)
            .map(|n| format!(":{n}")),
    );
    let sent = send(remote, conn.remote(), &specs);
    if let Ok(mut r) = work.find_reference(&source) {
        let _ = r.delete();
    }
    refused(sent?)?;
    Ok(true)
}

fn refused(answers: Vec<(String, String)>) -> Result<(), PushError> {
    match answers.first() {
        None => Ok(()),
        Some((_, message)) => Err(PushError::Refused {
            refs: answers
                .iter()
                .map(|(n, _)| n.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            message: message.clone(),
        }),
    }
}

/// After a restore checked out `branch` at `tip`: the files of its open
/// state (fetched as `PREFIX<branch>`) written back into the work tree of
/// `dir` when the state continues that tip; every fetched open ref is
/// removed either way. The number of files written.
pub fn put_back(repo: &Repository, dir: &Path, branch: &str, tip: Oid) -> Result<usize, String> {
    let mut written = 0;
    let open = repo
        .find_reference(&format!("{PREFIX}{branch}"))
        .ok()
        .and_then(|r| r.target())
        .and_then(|oid| repo.find_commit(oid).ok())
        .filter(|c| c.parent_id(0).ok() == Some(tip));
    if let Some(commit) = open {
        let base = repo
            .find_commit(tip)
            .and_then(|c| c.tree())
            .map_err(|e| describe(&e))?;
        let tree = commit.tree().map_err(|e| describe(&e))?;
        let diff = repo
            .diff_tree_to_tree(Some(&base), Some(&tree), None)
            .map_err(|e| describe(&e))?;
        for delta in diff.deltas() {
            let file = delta.new_file();
            let (Some(rel), true) = (file.path(), file.id() != Oid::zero()) else {
                continue;
            };
            if !safe_relative(rel) {
                return Err(format!("open state names {}", rel.display()));
            }
            let blob = repo.find_blob(file.id()).map_err(|e| describe(&e))?;
            let path = dir.join(rel);
            if let Some(parent) = path.parent() {
                fsio::create_private_dir_all(parent).map_err(|e| e.to_string())?;
            }
            fsio::atomic_write(&path, blob.content()).map_err(|e| e.to_string())?;
            written += 1;
        }
    }
    let names: Vec<String> = repo
        .references_glob(&format!("{PREFIX}*"))
        .map_err(|e| describe(&e))?
        .filter_map(|r| r.ok().and_then(|r| r.name().map(str::to_owned)))
        .collect();
    for name in names {
        if let Ok(mut r) = repo.find_reference(&name) {
            r.delete().map_err(|e| describe(&e))?;
        }
    }
    Ok(written)
}

/// A path inside the session folder that is one of its own kinds of file.
fn safe_relative(rel: &Path) -> bool {
    use std::path::Component;
    let first = rel.components().next();
    rel.components().all(|c| matches!(c, Component::Normal(_)))
        && matches!(first, Some(Component::Normal(f))
            if f == layout::HISTORY || f == layout::QUEUE || f == layout::META)
}
