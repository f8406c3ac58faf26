use std::path::{Path, PathBuf};

use git2::{ObjectType, Oid, Repository};

use super::{pack, store_signature, tree_edit, GitError, GitIndex, RecentObjects};
use crate::wal::{self, Change};

pub struct CommitOutcome {
    pub oid: Oid,
}

/// A commit built but not yet on disk: its pack, index and branch move as
/// log changes (`crate::wal`), and the index entries to update once they
/// are applied (`finish_commit`).
pub struct PreparedCommit {
    pub oid: Oid,
    /// Pack, pack index, branch ref: in the order they must be applied.
    pub changes: Vec<Change>,
    staged: Vec<(PathBuf, Option<Oid>)>,
}

/// Commit `paths` (relative to the work tree; a missing file is removed) on
/// the current branch, keeping `index` in step: `prepare_commit`, its
/// changes written durably one by one (no log), `finish_commit`.
pub fn commit_paths(
    repo: &Repository,
    index: &mut GitIndex,
    paths: &[&Path],
    message: &str,
    time: Option<i64>,
) -> Result<CommitOutcome, GitError> {
    let head = Head::read(repo)?;
    let prepared = prepare_commit(
        repo,
        &mut RecentObjects::new(),
        head,
        paths,
        &[],
        message,
        time,
    )?;
    let oid = prepared.oid;
    wal::apply_durably(&prepared.changes)?;
    finish_commit(repo, index, prepared)?;
    Ok(CommitOutcome { oid })
}

/// Build the commit of `paths` (relative to the work tree; a missing file
/// is removed) on the current branch; `overrides` give the new content of
/// paths not yet written (the caller logs them with the commit). Refuses
/// an empty commit.
///
/// Cost does not grow with the files already committed:
/// - the new tree is the parent tree with only the changed paths updated
///   (`tree_edit`: just the trees above them are read and rewritten);
/// - the new objects (blobs, those trees, the commit) are hashed here and
///   packed whole by `pack::write_pack` (no delta search), one log change
///   instead of a fsynced loose file per object; small packs are merged
///   geometrically later, off the commit (`repack`, run by the session's
///   actor when it is idle);
/// - the index is updated entry by entry in memory and written from cached
///   entry bytes (`GitIndex`), never re-read (`finish_commit`).
///
/// The branch ref is the last change, after the pack: applied in order, a
/// crash leaves either the old or the new commit.
/// `head` is where HEAD is, read by the caller (`Head::read`).
#[allow(clippy::too_many_arguments)]
pub fn prepare_commit(
    repo: &Repository,
    recent: &mut RecentObjects,
    head: Head,
    paths: &[&Path],
    overrides: &[(&Path, &[u8])],
    message: &str,
    time: Option<i64>,
) -> Result<PreparedCommit, GitError> {
    let workdir = repo
        .workdir()
        .ok_or_else(|| git2::Error::from_str("bare repository"))?
        .to_path_buf();
    let Head {
        branch,
        tip: parent_id,
    } = head;
    // What the new objects build on comes from `recent` when the parent
    // is the last commit made here, else from the session's packs.
    let mut read = |id: Oid| -> Result<Vec<u8>, GitError> {
        match recent.get(id) {
            Some((_, bytes)) => Ok(bytes.to_vec()),
            None => Ok(repo.odb()?.read(id)?.data().to_vec()),
        }
    };
    let base = match parent_id {
        Some(id) => Some(tree_of_commit(&read(id)?)?),
        None => None,
    };
    let (blobs, staged) = stage_paths(&workdir, paths, overrides)?;
    let edits: Vec<tree_edit::Edit<'_>> = staged.iter().map(|(p, b)| (p.as_path(), *b)).collect();
    let edited = tree_edit::edit_tree(&mut read, base, &edits)?;
    if base == Some(edited.root) {
        return Err(GitError::Empty);
    }
    let sig = match time {
        Some(secs) => git2::Signature::new(
            "OpenProgram",
            "sessions@openprogram.local",
            &git2::Time::new(secs, 0),
        )?,
        None => store_signature()?,
    };
    let parents: Vec<Oid> = parent_id.into_iter().collect();
    let commit = commit_object(edited.root, &parents, &sig, message);
    let oid = Oid::hash_object(ObjectType::Commit, &commit)?;

    let mut objects = vec![(oid, ObjectType::Commit, commit)];
    for (id, bytes) in edited.trees {
        objects.push((id, ObjectType::Tree, bytes));
    }
    for (id, bytes) in blobs {
        if edited.new_blobs.contains(&id) {
            objects.push((id, ObjectType::Blob, bytes));
        }
    }
    objects.sort_by_key(|(id, _, _)| *id);
    objects.dedup_by_key(|(id, _, _)| *id);
    let files = pack::write_pack(&objects)?;
    recent.replace(&objects);

    // The acknowledged tip's own previous value, not the branch's: a
    // branch that never had one (a fork's, a retry's, one made before the
    // service kept them) gets it from its first commit on, in a replay of
    // the log too (which moves a ref only from the value it expects).
    let acked_before = repo.refname_to_id(&acked_ref(&branch)).ok();
    let pack_dir = repo.path().join("objects/pack");
    let root = workdir.clone();
    let changes = vec![
        Change::Put {
            root: root.clone(),
            path: pack_dir.join(format!("{}.pack", files.name)),
            bytes: files.pack,
        },
        Change::Put {
            root: root.clone(),
            path: pack_dir.join(format!("{}.idx", files.name)),
            bytes: files.idx,
        },
        Change::Ref {
            root: root.clone(),
            git_dir: repo.path().to_path_buf(),
            name: branch.clone(),
            old: parent_id,
            new: oid,
        },
        // The service's own record of the branch's acknowledged tip: what
        // a user's `git reset` or `update-ref` of the branch cannot take
        // (the start puts the branch back; `git gc` keeps its commits).
        Change::Ref {
            root,
            git_dir: repo.path().to_path_buf(),
            name: acked_ref(&branch),
            old: acked_before,
            new: oid,
        },
    ];
    Ok(PreparedCommit {
        oid,
        changes,
        staged,
    })
}

/// The ref holding a branch's last acknowledged commit
/// (`refs/openprogram/acked/<branch>`).
pub fn acked_ref(branch: &str) -> String {
    let short = branch.strip_prefix("refs/heads/").unwrap_or(branch);
    format!("{ACKED_PREFIX}{short}")
}

/// Where the acknowledged tips are kept.
pub const ACKED_PREFIX: &str = "refs/openprogram/acked/";

/// Every branch's tip acknowledged as it is now (a session that arrives
/// whole, e.g. an imported bundle): a user's `git reset` of one of them is
/// put back on that tip, never committed again under another id.
pub fn acknowledge_branches(repo: &git2::Repository) -> Result<(), git2::Error> {
    let mut tips = Vec::new();
    for item in repo.branches(Some(git2::BranchType::Local))? {
        let (branch, _) = item?;
        if let (Some(name), Some(oid)) = (branch.get().name(), branch.get().target()) {
            tips.push((name.to_string(), oid));
        }
    }
    for (name, oid) in tips {
        repo.reference(&acked_ref(&name), oid, true, "acknowledged")?;
    }
    Ok(())
}

/// The root tree named on the first line of a raw commit object.
fn tree_of_commit(raw: &[u8]) -> Result<Oid, GitError> {
    raw.strip_prefix(b"tree ")
        .and_then(|rest| rest.get(..40))
        .and_then(|hex| std::str::from_utf8(hex).ok())
        .and_then(|hex| Oid::from_str(hex).ok())
        .ok_or_else(|| git2::Error::from_str("corrupt commit object").into())
}

/// The commit object `git_commit_create` writes for these fields, in
/// git's format: the tree, the parents, author and committer (the same
/// signature), a blank line, the message as given. Written here rather
/// than by libgit2: its commit creation loads the repository's
/// configuration, and the staging repository of each turn is new, so
/// every turn read the global and system git configuration files (about
/// twenty system calls and a parse of each before the turn's flush).
fn commit_object(tree: Oid, parents: &[Oid], sig: &git2::Signature<'_>, message: &str) -> Vec<u8> {
    let when = sig.when();
    let offset = when.offset_minutes();
    let sign = if offset < 0 { '-' } else { '+' };
    let who = format!(
        "{} <{}> {} {sign}{:02}{:02}",
        sig.name().unwrap_or_default(),
        sig.email().unwrap_or_default(),
        when.seconds(),
        offset.abs() / 60,
        offset.abs() % 60,
    );
    let mut out = format!("tree {tree}\n");
    for p in parents {
        out.push_str(&format!("parent {p}\n"));
    }
    out.push_str(&format!("author {who}\ncommitter {who}\n\n"));
    out.push_str(message);
    out.into_bytes()
}

/// Where HEAD is: the branch it names (never detached) and that branch's
/// commit (none yet on an unborn branch). Read once per commit: each read
/// is `HEAD` and the ref file, four system calls apiece.
#[derive(Debug, Clone)]
pub struct Head {
    /// The full ref name (`refs/heads/main`).
    pub branch: String,
    pub tip: Option<Oid>,
}

impl Head {
    pub fn read(repo: &Repository) -> Result<Head, GitError> {
        let branch = repo
            .find_reference("HEAD")?
            .symbolic_target()
            .map(str::to_owned)
            .ok_or_else(|| git2::Error::from_str("HEAD is detached"))?;
        let tip = match repo.refname_to_id(&branch) {
            Ok(id) => Some(id),
            Err(e) if e.code() == git2::ErrorCode::NotFound => None,
            Err(e) => return Err(e.into()),
        };
        Ok(Head { branch, tip })
    }

    /// The branch's short name (`main`).
    pub fn short_name(&self) -> &str {
        self.branch
            .strip_prefix("refs/heads/")
            .unwrap_or(&self.branch)
    }
}

/// A path the index updates once the commit is on disk: its new blob, or
/// none (removed).
type Staged = (PathBuf, Option<Oid>);

/// Each path's content (from `overrides`, else the work tree) hashed as a
/// blob, with its bytes; and the index changes to make once the objects
/// are on disk (a missing file is removed).
#[allow(clippy::type_complexity)]
fn stage_paths(
    workdir: &Path,
    paths: &[&Path],
    overrides: &[(&Path, &[u8])],
) -> Result<(Vec<(Oid, Vec<u8>)>, Vec<Staged>), GitError> {
    let mut blobs = Vec::with_capacity(paths.len());
    let mut staged: Vec<Staged> = Vec::with_capacity(paths.len());
    for path in paths {
        let given = overrides
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, b)| b.to_vec());
        let content = match given {
            Some(bytes) => Some(bytes),
            None => match std::fs::read(workdir.join(path)) {
                Ok(bytes) => Some(bytes),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => return Err(e.into()),
            },
        };
        match content {
            Some(bytes) => {
                let blob = Oid::hash_object(ObjectType::Blob, &bytes)?;
                staged.push((path.to_path_buf(), Some(blob)));
                blobs.push((blob, bytes));
            }
            None => staged.push((path.to_path_buf(), None)),
        }
    }
    Ok((blobs, staged))
}

/// After the prepared commit's changes (and the files it names) are
/// applied: update and write the index.
pub fn finish_commit(
    repo: &Repository,
    index: &mut GitIndex,
    prepared: PreparedCommit,
) -> Result<(), GitError> {
    let workdir = repo
        .workdir()
        .ok_or_else(|| git2::Error::from_str("bare repository"))?;
    for (path, entry) in prepared.staged {
        match entry {
            Some(blob) => {
                let file = workdir.join(&path);
                let meta = std::fs::metadata(&file).map_err(|e| {
                    std::io::Error::new(e.kind(), format!("{}: {e}", file.display()))
                })?;
                index.upsert(&path, &meta, blob)?;
            }
            None => index.remove(&path)?,
        }
    }
    index
        .write()
        .map_err(|e| std::io::Error::new(e.kind(), format!("the index: {e}")))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The object written here is the one libgit2 writes for the same
    /// fields (same id), with and without parents, in any time zone.
    #[test]
    fn a_commit_object_is_the_one_libgit2_writes() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let tree = repo.treebuilder(None).unwrap().write().unwrap();
        let t = repo.find_tree(tree).unwrap();
        let mut parents: Vec<Oid> = Vec::new();
        for (i, offset) in [0, 330, -480].into_iter().enumerate() {
            let sig = git2::Signature::new(
                "OpenProgram",
                "sessions@openprogram.local",
                &git2::Time::new(1_700_000_000 + i as i64, offset),
            )
            .unwrap();
            let message = format!("turn {i}\n\nOpenProgram-Turn: {i}\n");
            let found: Vec<git2::Commit<'_>> = parents
                .iter()
                .map(|p| repo.find_commit(*p).unwrap())
                .collect();
            let refs: Vec<&git2::Commit<'_>> = found.iter().collect();
            let theirs = repo.commit(None, &sig, &sig, &message, &t, &refs).unwrap();
            let ours = repo
                .odb()
                .unwrap()
                .write(
                    git2::ObjectType::Commit,
                    &commit_object(tree, &parents, &sig, &message),
                )
                .unwrap();
            assert_eq!(ours, theirs);
            parents = vec![theirs];
        }
    }
}
