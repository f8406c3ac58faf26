//! A commit's new trees, built from its parent's: the trees along the
//! changed paths are parsed, edited and written out in git's format, the
//! rest of the parent's tree is only named.
//!
//! Written here rather than with libgit2's `git_tree_create_updated`: that
//! needs a repository for its objects, and a commit's staging repository
//! was made (and its git configuration read, for the path checks) once
//! per turn, a fifth of a commit's preparation. The trees are the ones
//! libgit2 writes for the same edits (a test compares them): entries in
//! git's order, a folder left empty by a removal dropped, an upserted file
//! given mode 100644.

use std::cmp::Ordering;
use std::path::Path;

use git2::{ObjectType, Oid};

use super::GitError;

/// One change: the path's new blob (mode 100644), or `None` to remove it.
pub type Edit<'a> = (&'a Path, Option<Oid>);

/// What an edit made.
pub struct Edited {
    /// The new root tree.
    pub root: Oid,
    /// Each tree whose id changed, with its bytes (the root first when it
    /// changed).
    pub trees: Vec<(Oid, Vec<u8>)>,
    /// The blobs put where the parent held something else.
    pub new_blobs: Vec<Oid>,
}

const TREE_MODE: &[u8] = b"40000";
const BLOB_MODE: &[u8] = b"100644";

struct Entry {
    mode: Vec<u8>,
    name: Vec<u8>,
    id: Oid,
}

impl Entry {
    fn is_tree(&self) -> bool {
        self.mode == TREE_MODE
    }
}

/// Apply `edits` to the tree `base` (none: an empty tree); `read` gives a
/// tree's bytes by id.
pub fn edit_tree(
    read: &mut dyn FnMut(Oid) -> Result<Vec<u8>, GitError>,
    base: Option<Oid>,
    edits: &[Edit<'_>],
) -> Result<Edited, GitError> {
    let mut split: Vec<(Vec<&[u8]>, Option<Oid>)> = Vec::with_capacity(edits.len());
    for (path, blob) in edits {
        split.push((components(path)?, *blob));
    }
    let mut out = Edited {
        root: Oid::zero(),
        trees: Vec::new(),
        new_blobs: Vec::new(),
    };
    let items: Vec<(&[&[u8]], Option<Oid>)> = split.iter().map(|(c, b)| (&c[..], *b)).collect();
    out.root = match edit_level(read, base, &items, &mut out)? {
        Some(id) => id,
        // Everything removed: the empty tree.
        None => {
            let id = Oid::hash_object(ObjectType::Tree, &[])?;
            if base != Some(id) {
                out.trees.push((id, Vec::new()));
            }
            id
        }
    };
    out.trees.reverse();
    Ok(out)
}

/// The path's components as bytes; a path git refuses (empty, `.`, `..`,
/// `.git`, a NUL) is an error, as libgit2's is.
fn components(path: &Path) -> Result<Vec<&[u8]>, GitError> {
    use std::os::unix::ffi::OsStrExt;
    let parts: Vec<&[u8]> = path.as_os_str().as_bytes().split(|&b| b == b'/').collect();
    let bad = parts.iter().any(|p| {
        p.is_empty()
            || *p == b"."
            || *p == b".."
            || p.eq_ignore_ascii_case(b".git")
            || p.contains(&0)
    });
    if bad {
        return Err(git2::Error::from_str(&format!("invalid path '{}'", path.display())).into());
    }
    Ok(parts)
}

/// Edit one tree level; `None` when it ends up empty (dropped by its
/// parent). New trees are pushed to `out` children first.
fn edit_level(
    read: &mut dyn FnMut(Oid) -> Result<Vec<u8>, GitError>,
    base: Option<Oid>,
    edits: &[(&[&[u8]], Option<Oid>)],
    out: &mut Edited,
) -> Result<Option<Oid>, GitError> {
    let mut entries = match base {
        Some(id) => parse(&read(id)?)?,
        None => Vec::new(),
    };
    let mut names: Vec<&[u8]> = edits.iter().map(|(c, _)| c[0]).collect();
    names.sort_unstable();
    names.dedup();
    for name in names {
        let here: Vec<&(&[&[u8]], Option<Oid>)> =
            edits.iter().filter(|(c, _)| c[0] == name).collect();
        let at = entries.iter().position(|e| e.name == name);
        // A file at this level: the last edit of it wins.
        if let Some((_, blob)) = here.iter().rev().find(|(c, _)| c.len() == 1) {
            match (blob, at) {
                (Some(id), Some(i)) => {
                    if entries[i].id != *id {
                        out.new_blobs.push(*id);
                    }
                    entries[i].id = *id;
                    entries[i].mode = BLOB_MODE.to_vec();
                }
                (Some(id), None) => {
                    out.new_blobs.push(*id);
                    entries.push(Entry {
                        mode: BLOB_MODE.to_vec(),
                        name: name.to_vec(),
                        id: *id,
                    });
                }
                (None, Some(i)) => {
                    entries.remove(i);
                }
                (None, None) => {}
            }
            continue;
        }
        // A folder: its edits one level down.
        let deeper: Vec<(&[&[u8]], Option<Oid>)> =
            here.iter().map(|(c, b)| (&c[1..], *b)).collect();
        let sub_base = at.filter(|&i| entries[i].is_tree()).map(|i| entries[i].id);
        match (edit_level(read, sub_base, &deeper, out)?, at) {
            (Some(id), Some(i)) => {
                entries[i].id = id;
                entries[i].mode = TREE_MODE.to_vec();
            }
            (Some(id), None) => entries.push(Entry {
                mode: TREE_MODE.to_vec(),
                name: name.to_vec(),
                id,
            }),
            (None, Some(i)) => {
                entries.remove(i);
            }
            (None, None) => {}
        }
    }
    if entries.is_empty() {
        return Ok(None);
    }
    entries.sort_by(git_order);
    let bytes = serialize(&entries);
    let id = Oid::hash_object(ObjectType::Tree, &bytes)?;
    if base != Some(id) {
        out.trees.push((id, bytes));
    }
    Ok(Some(id))
}

/// git's order of tree entries: by name, a folder's name compared as if
/// it ended with `/`.
fn git_order(a: &Entry, b: &Entry) -> Ordering {
    let key = |e: &Entry| -> Vec<u8> {
        let mut k = e.name.clone();
        if e.is_tree() {
            k.push(b'/');
        }
        k
    };
    key(a).cmp(&key(b))
}

fn serialize(entries: &[Entry]) -> Vec<u8> {
    let mut out = Vec::with_capacity(entries.iter().map(|e| e.name.len() + 28).sum());
    for e in entries {
        out.extend_from_slice(&e.mode);
        out.push(b' ');
        out.extend_from_slice(&e.name);
        out.push(0);
        out.extend_from_slice(e.id.as_bytes());
    }
    out
}

/// A tree object's entries: `<mode> <name>\0<20-byte id>` each.
fn parse(bytes: &[u8]) -> Result<Vec<Entry>, GitError> {
    let corrupt = || GitError::from(git2::Error::from_str("corrupt tree object"));
    let mut entries = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        let space = rest.iter().position(|&b| b == b' ').ok_or_else(corrupt)?;
        let nul = rest.iter().position(|&b| b == 0).ok_or_else(corrupt)?;
        if nul < space || rest.len() < nul + 21 {
            return Err(corrupt());
        }
        entries.push(Entry {
            mode: rest[..space].to_vec(),
            name: rest[space + 1..nul].to_vec(),
            id: Oid::from_bytes(&rest[nul + 1..nul + 21])?,
        });
        rest = &rest[nul + 21..];
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;
    use git2::build::TreeUpdateBuilder;
    use git2::{FileMode, Repository};
    use std::path::PathBuf;

    fn reader(repo: &Repository) -> impl FnMut(Oid) -> Result<Vec<u8>, GitError> + '_ {
        move |id| Ok(repo.odb()?.read(id)?.data().to_vec())
    }

    /// libgit2's tree for the same edits on the same base.
    fn theirs(repo: &Repository, base: Oid, edits: &[(PathBuf, Option<Oid>)]) -> Oid {
        let mut update = TreeUpdateBuilder::new();
        for (p, b) in edits {
            match b {
                Some(id) => update.upsert(p, *id, FileMode::Blob),
                None => update.remove(p),
            };
        }
        update
            .create_updated(repo, &repo.find_tree(base).unwrap())
            .unwrap()
    }

    /// Random edits (adds, rewrites, removals, in nested folders, names
    /// that sort differently as files and as folders) give libgit2's
    /// trees, every new tree written is readable, and nothing unchanged is
    /// written again.
    #[test]
    fn edits_give_the_trees_libgit2_writes() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let names = ["a", "a.b", "a-b", "b", "history", "meta.json", "z0", "a0"];
        let mut seed = 7u64;
        let mut next = |n: usize| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 33) as usize) % n
        };
        let mut base = repo.treebuilder(None).unwrap().write().unwrap();
        let (mut changed, mut removed) = (0, 0);
        for round in 0..300 {
            let mut edits: Vec<(PathBuf, Option<Oid>)> = Vec::new();
            for _ in 0..1 + next(5) {
                let depth = 1 + next(3);
                let mut path: PathBuf = (0..depth).map(|_| names[next(names.len())]).collect();
                let blob = if next(3) == 0 {
                    // A removal, mostly of a file the tree holds.
                    let mut held = Vec::new();
                    repo.find_tree(base)
                        .unwrap()
                        .walk(git2::TreeWalkMode::PreOrder, |dir, e| {
                            if e.kind() == Some(git2::ObjectType::Blob) {
                                held.push(PathBuf::from(format!("{dir}{}", e.name().unwrap())));
                            }
                            git2::TreeWalkResult::Ok
                        })
                        .unwrap();
                    if !held.is_empty() && next(4) != 0 {
                        path = held[next(held.len())].clone();
                    }
                    None
                } else {
                    Some(
                        repo.blob(format!("{round}-{}", next(3)).as_bytes())
                            .unwrap(),
                    )
                };
                // libgit2 and we both refuse a path under a file and a file
                // over a folder the same edit list fills; keep to clean edits.
                if edits
                    .iter()
                    .any(|(p, _)| p.starts_with(&path) || path.starts_with(p))
                {
                    continue;
                }
                let tree = repo.find_tree(base).unwrap();
                let blocked = path
                    .ancestors()
                    .skip(1)
                    .filter(|a| !a.as_os_str().is_empty())
                    .any(|a| {
                        tree.get_path(a)
                            .is_ok_and(|e| e.kind() != Some(git2::ObjectType::Tree))
                    })
                    || tree
                        .get_path(&path)
                        .is_ok_and(|e| e.kind() == Some(git2::ObjectType::Tree));
                // libgit2 refuses to remove what is not there (here: a
                // no-op); keep to removals of files the tree holds.
                let absent = blob.is_none()
                    && !tree
                        .get_path(&path)
                        .is_ok_and(|e| e.kind() == Some(git2::ObjectType::Blob));
                if blocked || absent {
                    continue;
                }
                edits.push((path, blob));
            }
            let want = theirs(&repo, base, &edits);
            let refs: Vec<Edit<'_>> = edits.iter().map(|(p, b)| (p.as_path(), *b)).collect();
            let got = edit_tree(&mut reader(&repo), Some(base), &refs).unwrap();
            assert_eq!(got.root, want, "round {round}: {edits:?}");
            for (id, bytes) in &got.trees {
                assert_eq!(repo.odb().unwrap().read(*id).unwrap().data(), &bytes[..]);
            }
            assert_eq!(got.trees.is_empty(), want == base);
            changed += usize::from(want != base);
            removed += edits.iter().filter(|(_, b)| b.is_none()).count();
            base = want;
        }
        assert!(changed > 200 && removed > 80, "{changed} {removed}");
    }

    #[test]
    fn a_path_git_refuses_is_an_error_and_a_missing_one_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let blob = repo.blob(b"x").unwrap();
        for bad in [".git/config", "a/../b", "a/./b", "a/.GIT/x", ""] {
            let edits = [(Path::new(bad), Some(blob))];
            assert!(
                edit_tree(&mut reader(&repo), None, &edits).is_err(),
                "{bad}"
            );
        }
        // Removing what is not there changes nothing.
        let base = repo.treebuilder(None).unwrap().write().unwrap();
        let edits = [(Path::new("a/b"), None)];
        let got = edit_tree(&mut reader(&repo), Some(base), &edits).unwrap();
        assert!(got.root == base && got.trees.is_empty());
    }
}
