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

/// The blobs under folder `dir` that `new` has and `old` lacks by path
/// (what a diff calls added), as ids. Only subtrees whose ids differ are
/// read, so the cost follows the change, not the tree: a turn's commit in
/// the `history/<d1d2>/<d3d4>/` layout reads three trees on each side.
pub fn blobs_added_under(
    repo: &Repository,
    old: Option<&Tree<'_>>,
    new: &Tree<'_>,
    dir: &Path,
) -> Result<Vec<Oid>, git2::Error> {
    let mut out = Vec::new();
    let subtree = |tree: &Tree<'_>| -> Option<Oid> {
        let entry = tree.get_path(dir).ok()?;
        (entry.kind() == Some(ObjectType::Tree)).then(|| entry.id())
    };
    if let Some(n) = subtree(new) {
        added(repo, old.and_then(subtree), n, &mut out)?;
    }
    Ok(out)
}

fn added(
    repo: &Repository,
    old: Option<Oid>,
    new: Oid,
    out: &mut Vec<Oid>,
) -> Result<(), git2::Error> {
    if old == Some(new) {
        return Ok(());
    }
    let old = old.map(|o| repo.find_tree(o)).transpose()?;
    let new = repo.find_tree(new)?;
    for entry in new.iter() {
        let Some(name) = entry.name() else { continue };
        let before = old.as_ref().and_then(|t| t.get_name(name));
        match entry.kind() {
            Some(ObjectType::Tree) => {
                let before = before
                    .filter(|b| b.kind() == Some(ObjectType::Tree))
                    .map(|b| b.id());
                added(repo, before, entry.id(), out)?;
            }
            Some(ObjectType::Blob) if before.is_none() => out.push(entry.id()),
            _ => {}
        }
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A tree of `files` (path, content), built from the empty tree.
    fn tree_of<'r>(repo: &'r Repository, files: &[(&str, &str)]) -> Tree<'r> {
        let empty = repo.treebuilder(None).unwrap().write().unwrap();
        let base = repo.find_tree(empty).unwrap();
        let mut update = git2::build::TreeUpdateBuilder::new();
        for (path, content) in files {
            let blob = repo.blob(content.as_bytes()).unwrap();
            update.upsert(*path, blob, git2::FileMode::Blob);
        }
        let id = update.create_updated(repo, &base).unwrap();
        repo.find_tree(id).unwrap()
    }

    /// The same answer as libgit2's diff (added deltas under the folder),
    /// over new files, changed files, new folders and files outside it.
    #[test]
    fn added_blobs_match_a_diff() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let old = tree_of(
            &repo,
            &[
                ("history/00/00/000001-u.json", "one"),
                ("history/00/00/000002-a.json", "two"),
                ("meta.json", "m1"),
            ],
        );
        let new = tree_of(
            &repo,
            &[
                ("history/00/00/000001-u.json", "one"),
                ("history/00/00/000002-a.json", "two, edited"),
                ("history/00/00/000003-t.json", "three"),
                ("history/00/01/000100-u.json", "hundred"),
                ("meta.json", "m2"),
                ("other/new.json", "outside"),
            ],
        );
        let dir_path = Path::new("history");
        let mut ours = blobs_added_under(&repo, Some(&old), &new, dir_path).unwrap();
        let mut opts = git2::DiffOptions::new();
        opts.pathspec("history");
        let diff = repo
            .diff_tree_to_tree(Some(&old), Some(&new), Some(&mut opts))
            .unwrap();
        let mut theirs: Vec<Oid> = diff
            .deltas()
            .filter(|d| d.status() == git2::Delta::Added)
            .map(|d| d.new_file().id())
            .collect();
        ours.sort();
        theirs.sort();
        assert_eq!(ours.len(), 2);
        assert_eq!(ours, theirs);
        // From nothing: every blob under the folder.
        assert_eq!(
            blobs_added_under(&repo, None, &new, dir_path)
                .unwrap()
                .len(),
            4
        );
        // Nothing changed: nothing read below the root.
        assert!(blobs_added_under(&repo, Some(&new), &new, dir_path)
            .unwrap()
            .is_empty());
    }
}
