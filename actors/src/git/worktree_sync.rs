use std::collections::{HashMap, HashSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use git2::{Repository, Tree};

use super::{blobs_under, GitError};
use crate::fsio;

/// Make the files under `dirs` in the work tree those of `target` (an empty
/// tree when `None`), for a branch switch or its repair after a crash:
/// - a file of `target` that is missing is written from its blob;
/// - a file that `target` lacks is removed, but only if `removable` says
///   it is safe (the caller checks that git holds it elsewhere), so files
///   not committed yet stay;
/// - files present on both sides are left alone (committed node files
///   never change).
///
/// Files are written without a fsync each (their content is durable in
/// git) and flushed together at the end. Returns whether anything changed;
/// the caller then rebuilds the index.
pub fn sync_worktree(
    repo: &Repository,
    target: Option<&Tree<'_>>,
    dirs: &[&str],
    removable: impl Fn(&Path) -> bool,
) -> Result<bool, GitError> {
    let workdir = repo
        .workdir()
        .ok_or_else(|| git2::Error::from_str("bare repository"))?
        .to_path_buf();
    let mut wanted = HashMap::new();
    if let Some(tree) = target {
        for dir in dirs {
            wanted.extend(blobs_under(
                repo,
                tree,
                Path::new(dir),
                &mut HashSet::new(),
            )?);
        }
    }
    let mut present = HashSet::new();
    for dir in dirs {
        list_files(&workdir, Path::new(dir), &mut present)?;
    }
    let mut changed = false;
    for rel in present.iter().filter(|p| !wanted.contains_key(*p)) {
        if removable(rel) {
            fs::remove_file(workdir.join(rel))?;
            remove_empty_parents(&workdir, rel);
            changed = true;
        }
    }
    for (rel, oid) in wanted.iter().filter(|(p, _)| !present.contains(*p)) {
        let full = workdir.join(rel);
        if let Some(parent) = full.parent() {
            fs::create_dir_all(parent)?;
        }
        fsio::atomic_write_unsynced(&full, repo.find_blob(*oid)?.content())?;
        changed = true;
    }
    if changed {
        fsio::sync_filesystem(&workdir)?;
    }
    Ok(changed)
}

/// Relative paths of the files under `dir` (temp files excluded).
fn list_files(root: &Path, dir: &Path, out: &mut HashSet<PathBuf>) -> io::Result<()> {
    let entries = match fs::read_dir(root.join(dir)) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let entry = entry?;
        let rel = dir.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            list_files(root, &rel, out)?;
        } else if !entry
            .file_name()
            .to_string_lossy()
            .starts_with(fsio::TMP_PREFIX)
        {
            out.insert(rel);
        }
    }
    Ok(())
}

/// Remove the folders above `rel` that the removal left empty (git does not
/// track folders; an empty one would only be clutter).
fn remove_empty_parents(root: &Path, rel: &Path) {
    let mut dir = rel.parent();
    while let Some(d) = dir.filter(|d| d.components().count() > 1) {
        if fs::remove_dir(root.join(d)).is_err() {
            break;
        }
        dir = d.parent();
    }
}
