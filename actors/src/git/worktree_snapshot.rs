//! The working tree as a tree object, and the paths that differ between
//! two trees: how a turn's baseline and end are compared without touching
//! the user's index, HEAD, stash or files.

use git2::{DiffOptions, IndexAddOption, Oid, Repository};

/// The working tree now (tracked and untracked files, ignored ones left
/// out) as a tree object. Built in an in-memory copy of the repository's
/// index opened on a separate handle, never written back: the blobs of
/// changed files land in the object database (unreferenced until a commit
/// names them, so `git gc` prunes them in time), nothing else changes.
/// The index's stat cache keeps unchanged files from being read.
pub fn worktree_snapshot(repo: &Repository) -> Result<Oid, git2::Error> {
    let scratch = Repository::open(repo.path())?;
    let mut index = scratch.index()?;
    index.add_all(["*"], IndexAddOption::DEFAULT, None)?;
    index.update_all(["*"], None)?;
    let tree = index.write_tree()?;
    // Drop the in-memory changes before the handle goes (nothing is
    // written, this only keeps the copy from being reused by mistake).
    index.read(true)?;
    Ok(tree)
}

/// The tree HEAD points at; the empty tree on an unborn branch.
pub fn head_tree_id(repo: &Repository) -> Result<Oid, git2::Error> {
    match super::head_commit(repo)? {
        Some(c) => Ok(c.tree_id()),
        None => empty_tree(repo),
    }
}

/// The id of the empty tree (written if the repository lacks it).
pub fn empty_tree(repo: &Repository) -> Result<Oid, git2::Error> {
    repo.treebuilder(None)?.write()
}

/// The file paths (slash-separated, sorted) that differ between trees `a`
/// and `b`: added, modified, deleted, mode changes; no rename detection (a
/// rename is its two paths).
pub fn changed_paths(repo: &Repository, a: Oid, b: Oid) -> Result<Vec<String>, git2::Error> {
    if a == b {
        return Ok(Vec::new());
    }
    let (ta, tb) = (repo.find_tree(a)?, repo.find_tree(b)?);
    let mut opts = DiffOptions::new();
    opts.include_typechange(true);
    let diff = repo.diff_tree_to_tree(Some(&ta), Some(&tb), Some(&mut opts))?;
    let mut out: Vec<String> = Vec::new();
    for d in diff.deltas() {
        for f in [d.old_file(), d.new_file()] {
            if let Some(p) = f.path().and_then(|p| p.to_str()) {
                out.push(p.to_string());
            }
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// Whether `path` is `spec` or inside the folder `spec` (a client's list
/// of files may name folders).
pub fn path_matches(path: &str, spec: &str) -> bool {
    let spec = spec.trim_end_matches('/');
    if spec.is_empty() || spec == "." {
        return true;
    }
    path == spec
        || path
            .strip_prefix(spec)
            .is_some_and(|rest| rest.starts_with('/'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::run_git;

    #[test]
    fn a_snapshot_leaves_the_index_alone_and_sees_untracked_files() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        run_git(dir, &["init", "-q", "-b", "main"]);
        std::fs::write(dir.join("a.txt"), "one\n").unwrap();
        std::fs::write(dir.join(".gitignore"), "*.log\n").unwrap();
        run_git(dir, &["add", "-A"]);
        run_git(
            dir,
            &[
                "-c",
                "user.name=u",
                "-c",
                "user.email=u@x",
                "commit",
                "-qm",
                "c1",
            ],
        );
        std::fs::write(dir.join("a.txt"), "two\n").unwrap();
        std::fs::write(dir.join("new.txt"), "n\n").unwrap();
        std::fs::write(dir.join("x.log"), "ignored\n").unwrap();
        // (git status refreshes the index file itself: read it after.)
        let status_before = run_git(dir, &["status", "--porcelain"]);
        let index_before = std::fs::read(dir.join(".git/index")).unwrap();

        let repo = Repository::open(dir).unwrap();
        let snap = worktree_snapshot(&repo).unwrap();
        let head = head_tree_id(&repo).unwrap();
        assert_eq!(
            changed_paths(&repo, head, snap).unwrap(),
            ["a.txt", "new.txt"]
        );
        assert_eq!(std::fs::read(dir.join(".git/index")).unwrap(), index_before);
        assert_eq!(run_git(dir, &["status", "--porcelain"]), status_before);
        assert_eq!(
            worktree_snapshot(&repo).unwrap(),
            snap,
            "the same tree again"
        );
        assert!(path_matches("src/a.rs", "src"));
        assert!(path_matches("src/a.rs", "src/"));
        assert!(!path_matches("srcx/a.rs", "src"));
        assert!(path_matches("a", "a"));
    }
}
