//! A history rewritten: every commit reachable from the repository's refs,
//! parents first, each blob passed through `edit_blob` (by its file name)
//! and each message through `edit_message`; everything else kept — the
//! trees' shape and modes, authors, committers, times, parents. A commit
//! whose tree, parents and message come out the same keeps its id, so a
//! second rewrite of a rewritten history changes nothing.
//!
//! The new objects are made in memory; then one pack holding every object
//! the rewritten refs reach is written beside the others (fsynced). Refs
//! are not moved here: the caller records the moves first
//! (`session::purge`), then moves them, then `expunge` drops the rest.

use std::collections::HashMap;
use std::path::Path;

use git2::{ObjectType, Oid, Repository, Sort};

use super::GitError;

/// A ref whose commit was rewritten.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefMove {
    pub name: String,
    pub old: Oid,
    pub new: Oid,
}

/// What a rewrite made.
#[derive(Debug, Default)]
pub struct Rewrite {
    /// Every rewritten commit, old and new, parents first.
    pub commits: Vec<(Oid, Oid)>,
    /// The refs to move.
    pub refs: Vec<RefMove>,
    /// Distinct blobs changed.
    pub blobs: usize,
    /// The pack written (`pack-<hash>`), holding every object the moved
    /// refs and the others reach; none when nothing changed.
    pub pack: Option<String>,
}

struct Rewriter<'r, B, M> {
    repo: &'r Repository,
    edit_blob: B,
    edit_message: M,
    trees: HashMap<(Oid, String), Oid>,
    blobs: HashMap<(Oid, String), Oid>,
    changed_blobs: usize,
}

impl<B, M> Rewriter<'_, B, M>
where
    B: FnMut(&str, &[u8]) -> Option<Vec<u8>>,
    M: FnMut(&str) -> Option<String>,
{
    fn tree(&mut self, oid: Oid, path: &str) -> Result<Oid, GitError> {
        let key = (oid, path.to_string());
        if let Some(done) = self.trees.get(&key) {
            return Ok(*done);
        }
        let tree = self.repo.find_tree(oid)?;
        let mut changes: Vec<(String, Oid, i32)> = Vec::new();
        for entry in tree.iter() {
            let Some(name) = entry.name() else { continue };
            let new = match entry.kind() {
                Some(ObjectType::Tree) => self.tree(entry.id(), &format!("{path}{name}/"))?,
                Some(ObjectType::Blob) => self.blob(entry.id(), name)?,
                _ => entry.id(),
            };
            if new != entry.id() {
                changes.push((name.to_string(), new, entry.filemode()));
            }
        }
        let new = if changes.is_empty() {
            oid
        } else {
            let mut builder = self.repo.treebuilder(Some(&tree))?;
            for (name, id, mode) in changes {
                builder.insert(name, id, mode)?;
            }
            builder.write()?
        };
        self.trees.insert(key, new);
        Ok(new)
    }

    fn blob(&mut self, oid: Oid, name: &str) -> Result<Oid, GitError> {
        let key = (oid, name.to_string());
        if let Some(done) = self.blobs.get(&key) {
            return Ok(*done);
        }
        let blob = self.repo.find_blob(oid)?;
        let new = match (self.edit_blob)(name, blob.content()) {
            Some(bytes) if bytes != blob.content() => {
                self.changed_blobs += 1;
                self.repo.blob(&bytes)?
            }
            _ => oid,
        };
        self.blobs.insert(key, new);
        Ok(new)
    }
}

/// Every direct ref of `repo` naming a commit.
pub fn commit_refs(repo: &Repository) -> Result<Vec<(String, Oid)>, GitError> {
    let mut out = Vec::new();
    for r in repo.references()? {
        let r = r?;
        let (Some(name), Some(oid)) = (r.name(), r.target()) else {
            continue;
        };
        if repo.find_commit(oid).is_ok() {
            out.push((name.to_string(), oid));
        }
    }
    out.sort();
    Ok(out)
}

/// Rewrite the history of the repository at `dir` (see the module doc).
pub fn rewrite<B, M>(dir: &Path, edit_blob: B, edit_message: M) -> Result<Rewrite, GitError>
where
    B: FnMut(&str, &[u8]) -> Option<Vec<u8>>,
    M: FnMut(&str) -> Option<String>,
{
    let repo = super::open_repo(dir)?;
    let odb = repo.odb()?;
    // New objects stay in memory until the pack holds them.
    let _mempack = odb.add_new_mempack_backend(1000)?;
    let refs = commit_refs(&repo)?;
    let mut walk = repo.revwalk()?;
    walk.set_sorting(Sort::TOPOLOGICAL | Sort::REVERSE)?;
    for (_, oid) in &refs {
        walk.push(*oid)?;
    }
    let mut w = Rewriter {
        repo: &repo,
        edit_blob,
        edit_message,
        trees: HashMap::new(),
        blobs: HashMap::new(),
        changed_blobs: 0,
    };
    let mut map: HashMap<Oid, Oid> = HashMap::new();
    let mut out = Rewrite::default();
    for oid in walk {
        let oid = oid?;
        let commit = repo.find_commit(oid)?;
        let tree = w.tree(commit.tree_id(), "")?;
        let parents: Vec<Oid> = commit
            .parent_ids()
            .map(|p| map.get(&p).copied().unwrap_or(p))
            .collect();
        let raw = commit.message_raw().unwrap_or("");
        let message = (w.edit_message)(raw);
        let same_parents = parents
            .iter()
            .eq(commit.parent_ids().collect::<Vec<_>>().iter());
        if tree == commit.tree_id() && same_parents && message.is_none() {
            continue;
        }
        let new_tree = repo.find_tree(tree)?;
        let parent_commits = parents
            .iter()
            .map(|p| repo.find_commit(*p))
            .collect::<Result<Vec<_>, _>>()?;
        let parent_refs: Vec<&git2::Commit<'_>> = parent_commits.iter().collect();
        let buf = repo.commit_create_buffer(
            &commit.author(),
            &commit.committer(),
            message.as_deref().unwrap_or(raw),
            &new_tree,
            &parent_refs,
        )?;
        let text = std::str::from_utf8(&buf)
            .map_err(|e| git2::Error::from_str(&format!("commit buffer: {e}")))?;
        let new = odb.write(ObjectType::Commit, text.as_bytes())?;
        if new != oid {
            map.insert(oid, new);
            out.commits.push((oid, new));
        }
    }
    out.blobs = w.changed_blobs;
    out.refs = refs
        .iter()
        .filter_map(|(name, old)| {
            map.get(old).map(|new| RefMove {
                name: name.clone(),
                old: *old,
                new: *new,
            })
        })
        .collect();
    if out.commits.is_empty() {
        return Ok(out);
    }
    // One pack of everything the refs reach once moved.
    let mut builder = repo.packbuilder()?;
    let mut reach = repo.revwalk()?;
    for (_, oid) in &refs {
        reach.push(map.get(oid).copied().unwrap_or(*oid))?;
    }
    builder.insert_walk(&mut reach)?;
    let pack_dir = repo.path().join("objects/pack");
    super::enable_fsync();
    builder.write(&pack_dir, 0o444)?;
    out.pack = builder.name().map(|n| format!("pack-{n}"));
    if out.pack.is_none() {
        return Err(git2::Error::from_str("the rewritten pack has no name").into());
    }
    crate::fsio::fsync_dir(&pack_dir)?;
    Ok(out)
}

/// Every file holding objects: packs (with their indexes) and loose
/// objects.
fn object_files(objects: &Path) -> Result<Vec<std::path::PathBuf>, GitError> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(objects)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let loose = name.len() == 2 && name.chars().all(|c| c.is_ascii_hexdigit());
        if loose || name == "pack" {
            for f in std::fs::read_dir(entry.path())? {
                let path = f?.path();
                if path.is_file() {
                    out.push(path);
                }
            }
        }
    }
    Ok(out)
}

/// Drop every object of the repository at `git_dir` not in the pack
/// `keep` (`pack-<hash>`): the other packs, loose objects, and what lists
/// them (a multi-pack index, the markers of merged packs, reflogs). With
/// `only`, just those files go (the ones there before `keep` was built:
/// a concurrent writer's new objects stay). The caller made sure `keep`
/// holds everything the refs reach.
pub fn expunge(
    git_dir: &Path,
    keep: &str,
    only: Option<&[std::path::PathBuf]>,
) -> Result<(), GitError> {
    let objects = git_dir.join("objects");
    let pack_dir = objects.join("pack");
    if !pack_dir.join(format!("{keep}.idx")).exists() {
        return Err(git2::Error::from_str(&format!("{keep} is not in the repository")).into());
    }
    let all;
    let files = match only {
        Some(f) => f,
        None => {
            all = object_files(&objects)?;
            &all
        }
    };
    for path in files {
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        if stem == keep && path.parent() == Some(pack_dir.as_path()) {
            continue;
        }
        match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
            _ => {}
        }
    }
    // Loose folders left empty go (one still written to stays).
    for entry in std::fs::read_dir(&objects)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.len() == 2 && name.chars().all(|c| c.is_ascii_hexdigit()) {
            let _ = std::fs::remove_dir(entry.path());
        }
    }
    crate::fsio::fsync_dir(&pack_dir)?;
    let _ = std::fs::remove_file(objects.join("info/packs"));
    for gone in [super::repack::MERGED, "logs"] {
        match std::fs::remove_dir_all(git_dir.join(gone)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
            _ => {}
        }
    }
    for gone in ["ORIG_HEAD", "FETCH_HEAD"] {
        let _ = std::fs::remove_file(git_dir.join(gone));
    }
    crate::fsio::fsync_dir(&objects)?;
    crate::fsio::fsync_dir(git_dir)?;
    Ok(())
}

/// Pack every object the refs of `repo` reach into one pack and drop the
/// objects that were there before (`expunge`): a replica, or a local
/// remote, after a purge. Safe beside a writer pushing other refs: what it
/// adds meanwhile stays. Returns the pack kept (none: no ref).
pub fn keep_only_reachable(repo: &Repository) -> Result<Option<String>, GitError> {
    let before = object_files(&repo.path().join("objects"))?;
    let refs = commit_refs(repo)?;
    if refs.is_empty() {
        return Ok(None);
    }
    let mut builder = repo.packbuilder()?;
    let mut reach = repo.revwalk()?;
    for (_, oid) in &refs {
        reach.push(*oid)?;
    }
    builder.insert_walk(&mut reach)?;
    let pack_dir = repo.path().join("objects/pack");
    super::enable_fsync();
    builder.write(&pack_dir, 0o444)?;
    let name = builder
        .name()
        .map(|n| format!("pack-{n}"))
        .ok_or_else(|| git2::Error::from_str("the pack has no name"))?;
    crate::fsio::fsync_dir(&pack_dir)?;
    expunge(repo.path(), &name, Some(&before))?;
    Ok(Some(name))
}
