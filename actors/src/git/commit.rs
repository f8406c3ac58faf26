use std::path::Path;

use git2::build::TreeUpdateBuilder;
use git2::{FileMode, Oid, Repository};

use super::{head_commit, open_repo, store_signature, GitError, IndexFile};

pub struct CommitOutcome {
    pub oid: Oid,
}

/// Commit `paths` (relative to the work tree; a missing file is removed) on
/// the current branch, keeping `index` (the repository's index, held in
/// memory by the caller) in step. Refuses an empty commit.
///
/// Cost does not grow with the files already committed:
/// - the new tree is the parent tree with only the changed paths updated
///   (libgit2 rewrites just the trees above them);
/// - the new objects (blobs, those trees, the commit) are built in an
///   in-memory object database and written as **one packfile**, one durable
///   write instead of a fsynced loose file per object; small packs are
///   merged geometrically later, off the commit (`repack`, run by the
///   session's actor when it is idle);
/// - the index is updated entry by entry in memory and written from cached
///   entry bytes (`IndexFile`), never re-read.
///
/// The branch ref moves only after the pack is durable, so a crash leaves
/// either the old or the new commit.
pub fn commit_paths(
    repo: &Repository,
    index: &mut IndexFile,
    paths: &[&Path],
    message: &str,
    time: Option<i64>,
) -> Result<CommitOutcome, GitError> {
    let workdir = repo
        .workdir()
        .ok_or_else(|| git2::Error::from_str("bare repository"))?
        .to_path_buf();
    // A throwaway handle whose object database writes to memory first.
    let staging = open_repo(&workdir)?;
    let odb = staging.odb()?;
    let mempack = odb.add_new_mempack_backend(1000)?;
    let parent = head_commit(&staging)?;
    let base = match &parent {
        Some(p) => p.tree()?,
        None => staging.find_tree(staging.treebuilder(None)?.write()?)?,
    };
    let mut update = TreeUpdateBuilder::new();
    // Index changes wait until the objects they name are on disk.
    let mut staged: Vec<(&Path, Option<(std::fs::Metadata, Oid)>)> = Vec::new();
    for path in paths {
        let full = workdir.join(path);
        match std::fs::metadata(&full) {
            Ok(meta) => {
                let blob = staging.blob(&std::fs::read(&full)?)?;
                update.upsert(*path, blob, FileMode::Blob);
                staged.push((path, Some((meta, blob))));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                update.remove(*path);
                staged.push((path, None));
            }
            Err(e) => return Err(e.into()),
        }
    }
    let tree_oid = update.create_updated(&staging, &base)?;
    if parent.as_ref().is_some_and(|p| p.tree_id() == tree_oid) {
        return Err(GitError::Empty);
    }
    let tree = staging.find_tree(tree_oid)?;
    let sig = match time {
        Some(secs) => git2::Signature::new(
            "OpenProgram",
            "sessions@openprogram.local",
            &git2::Time::new(secs, 0),
        )?,
        None => store_signature()?,
    };
    let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
    let oid = staging.commit(None, &sig, &sig, message, &tree, &parents)?;

    // Exactly the objects this commit created: the commit, the root tree,
    // and along each changed path its trees and blob.
    let mut created = vec![oid, tree_oid];
    for path in paths {
        let mut prefix = std::path::PathBuf::new();
        for part in path.iter() {
            prefix.push(part);
            if let Ok(entry) = tree.get_path(&prefix) {
                created.push(entry.id());
            }
        }
    }
    created.sort();
    created.dedup();
    let mut builder = staging.packbuilder()?;
    for id in created {
        builder.insert_object(id, None)?;
    }
    builder.write(&staging.path().join("objects/pack"), 0o444)?;
    mempack.reset()?;

    let branch = staging
        .find_reference("HEAD")?
        .symbolic_target()
        .map(str::to_owned)
        .ok_or_else(|| git2::Error::from_str("HEAD is detached"))?;
    let log = format!("commit: {}", message.lines().next().unwrap_or(""));
    match &parent {
        Some(p) => staging.reference_matching(&branch, oid, true, p.id(), &log)?,
        None => staging.reference(&branch, oid, false, &log)?,
    };
    for (path, entry) in staged {
        match entry {
            Some((meta, blob)) => index.upsert(path, &meta, blob),
            None => index.remove(path),
        }
    }
    index.write()?;
    Ok(CommitOutcome { oid })
}
