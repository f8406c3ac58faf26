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
/// - a file that `target` lacks is removed, but only if one of the `held`
///   trees (the branch tips) has it, so files not committed yet stay;
/// - files present on both sides are left alone (committed node files
///   never change).
///
/// Files are written without a fsync each (their content is durable in
/// git) and flushed together at the end, before the caller rebuilds the
/// index, so an index that survives a crash never lists a file whose data
/// did not. Removals need no flush: ext4 journals them in order, ahead of
/// the index's rename. Returns whether anything changed.
pub fn sync_worktree(
    repo: &Repository,
    target: Option<&Tree<'_>>,
    dirs: &[&str],
    held: &[Tree<'_>],
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
    let mut wrote = false;
    let extra: Vec<&PathBuf> = present
        .iter()
        .filter(|p| !wanted.contains_key(*p))
        .collect();
    if !extra.is_empty() {
        // Every file git holds on some branch (one walk per tip, not one
        // lookup per file).
        let mut in_git = HashSet::new();
        for tree in held {
            for dir in dirs {
                let blobs = blobs_under(repo, tree, Path::new(dir), &mut HashSet::new())?;
                in_git.extend(blobs.into_iter().map(|(p, _)| p));
            }
        }
        let mut emptied = std::collections::BTreeSet::new();
        for rel in extra.into_iter().filter(|p| in_git.contains(*p)) {
            fs::remove_file(workdir.join(rel))?;
            emptied.extend(rel.parent().map(Path::to_path_buf));
            changed = true;
        }
        remove_empty_dirs(&workdir, emptied);
    }
    for (rel, oid) in wanted.iter().filter(|(p, _)| !present.contains(*p)) {
        let full = workdir.join(rel);
        if let Some(parent) = full.parent() {
            crate::fsio::create_private_dir_all(parent)?;
        }
        fsio::atomic_write_unsynced(&full, repo.find_blob(*oid)?.content())?;
        wrote = true;
    }
    if wrote {
        fsio::sync_filesystem(&workdir)?;
    }
    Ok(changed || wrote)
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

/// Remove the folders (and their parents, below the top folder) that
/// removals left empty: git does not track folders, an empty one would only
/// be clutter. Deepest first; a folder that is not empty stays.
fn remove_empty_dirs(root: &Path, dirs: std::collections::BTreeSet<PathBuf>) {
    let mut all: std::collections::BTreeSet<PathBuf> = std::collections::BTreeSet::new();
    for d in dirs {
        let mut cursor = Some(d.as_path());
        while let Some(c) = cursor.filter(|c| c.components().count() > 1) {
            all.insert(c.to_path_buf());
            cursor = c.parent();
        }
    }
    for d in all.iter().rev() {
        let _ = fs::remove_dir(root.join(d));
    }
}
