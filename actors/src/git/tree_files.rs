use std::collections::HashSet;
use std::path::{Path, PathBuf};

use git2::{ObjectType, Oid, Repository, Tree};

/// The blobs under folder `dir` of `tree`, as (path, id). Subtrees whose id
/// is already in `seen` are skipped (and every visited one is added), so
/// walking several branch tips reads each shared folder once.
pub fn blobs_under(
    repo: &Repository,
    tree: &Tree<'_>,
    dir: &Path,
    seen: &mut HashSet<Oid>,
) -> Result<Vec<(PathBuf, Oid)>, git2::Error> {
    let mut out = Vec::new();
    if let Ok(entry) = tree.get_path(dir) {
        if entry.kind() == Some(ObjectType::Tree) {
            walk(repo, entry.id(), dir.to_path_buf(), seen, &mut out)?;
        }
    }
    Ok(out)
}

fn walk(
    repo: &Repository,
    oid: Oid,
    path: PathBuf,
    seen: &mut HashSet<Oid>,
    out: &mut Vec<(PathBuf, Oid)>,
) -> Result<(), git2::Error> {
    if !seen.insert(oid) {
        return Ok(());
    }
    let tree = repo.find_tree(oid)?;
    for entry in tree.iter() {
        let Some(name) = entry.name() else { continue };
        match entry.kind() {
            Some(ObjectType::Tree) => walk(repo, entry.id(), path.join(name), seen, out)?,
            Some(ObjectType::Blob) => out.push((path.join(name), entry.id())),
            _ => {}
        }
    }
    Ok(())
}
