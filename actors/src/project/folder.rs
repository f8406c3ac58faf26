//! What a project's folder needs before the service works in it: a git
//! repository (the user's own, or one made for the agent's commits) and
//! `.openprogram/`, ignored by that repository, where the project's live
//! sessions keep theirs. Registering a folder for an import needs neither:
//! both are made when a live session first works there.

use std::path::Path;

use git2::Repository;

use super::error::ProjectError;
use super::model::OPENPROGRAM_DIR;
use crate::{fsio, git};

/// Folders that keep the service from committing what a project folder
/// holds when it makes its repository (their files would all go into its
/// first commit).
const BLOCKERS: [&str; 11] = [
    "node_modules",
    ".venv",
    "venv",
    "env",
    "__pycache__",
    "target",
    "build",
    "dist",
    ".next",
    ".gradle",
    "vendor",
];

/// Set in a repository the service made, until its first commit is there.
const MADE_HERE: &str = "openprogram.baselinePending";

/// The folder's repository, made when the folder has none: the files
/// already there are its first commit (`openprogram: baseline
/// (pre-existing files)`, or an empty `openprogram: project init`), so the
/// agent's first turn starts from a clean tree. A folder holding one of
/// `BLOCKERS` gets the repository without that commit: the user commits
/// what to keep (until then the agent's turns are held, not committed).
pub fn repository(dir: &Path) -> Result<Repository, ProjectError> {
    match git::open_repo(dir) {
        Ok(repo) => {
            // Made here and cut short before its first commit (the
            // configuration is read only while HEAD is unborn).
            let pending = repo.head().is_err()
                && repo
                    .config()
                    .and_then(|c| c.get_bool(MADE_HERE))
                    .unwrap_or(false);
            if pending {
                baseline_commit(&repo)?;
            }
            Ok(repo)
        }
        Err(e) if e.code() == git2::ErrorCode::NotFound && !dir.join(".git").exists() => {
            let repo = git::init_repo(dir)?;
            match BLOCKERS.iter().find(|b| dir.join(b).is_dir()) {
                Some(b) => {
                    tracing::info!(folder = %dir.display(), holds = %b, "the project's folder had no git repository: one is made for the agent's commits, with nothing committed (the folder holds a dependency or build folder); the agent's turns are held until the user commits what to keep");
                }
                None => {
                    tracing::info!(folder = %dir.display(), "the project's folder had no git repository: one is made for the agent's commits, its files the first commit");
                    repo.config()?.set_bool(MADE_HERE, true)?;
                    baseline_commit(&repo)?;
                }
            }
            Ok(repo)
        }
        Err(e) => Err(e.into()),
    }
}

/// The first commit of a repository made here: every file the folder
/// holds (what its ignore files leave), by the service.
fn baseline_commit(repo: &Repository) -> Result<(), git2::Error> {
    let mut index = repo.index()?;
    index.add_all(["*"].iter(), git2::IndexAddOption::DEFAULT, None)?;
    index.write()?;
    let tree = repo.find_tree(index.write_tree()?)?;
    let sig = git2::Signature::now("OpenProgram", "agent@openprogram.local")?;
    let message = if tree.is_empty() {
        "openprogram: project init"
    } else {
        "openprogram: baseline (pre-existing files)"
    };
    repo.commit(Some("HEAD"), &sig, &sig, message, &tree, &[])?;
    repo.config()?.remove(MADE_HERE)?;
    Ok(())
}

/// `.openprogram/sessions/`, private, with a `.gitignore` of everything.
pub fn prepare_openprogram_dir(dir: &Path) -> std::io::Result<()> {
    let op = dir.join(OPENPROGRAM_DIR);
    fsio::create_dir_durable(&op.join("sessions"))?;
    fsio::make_dir_private(&op)?;
    fsio::make_dir_private(&op.join("sessions"))?;
    let ignore = op.join(".gitignore");
    if !ignore.exists() {
        fsio::atomic_write(&ignore, b"*\n")?;
    }
    Ok(())
}

/// Both, for a folder a live session is about to work in.
pub fn prepare(dir: &Path) -> Result<(), ProjectError> {
    // The service's folder first: ignored, so never in the first commit.
    prepare_openprogram_dir(dir)?;
    repository(dir)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_gets_a_repository_and_its_ignored_folder_once() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "a").unwrap();
        prepare(dir.path()).unwrap();
        assert!(dir.path().join(".git").is_dir());
        let ignore = dir.path().join(OPENPROGRAM_DIR).join(".gitignore");
        assert_eq!(std::fs::read_to_string(&ignore).unwrap(), "*\n");
        // What was there is the first commit; the service's folder is not.
        let repo = Repository::open(dir.path()).unwrap();
        let head = repo.head().unwrap().peel_to_commit().unwrap();
        assert_eq!(
            head.message(),
            Some("openprogram: baseline (pre-existing files)")
        );
        let tree = head.tree().unwrap();
        let names: Vec<_> = tree
            .iter()
            .filter_map(|e| e.name().map(str::to_owned))
            .collect();
        assert_eq!(names, ["a.txt"]);
        let mut opts = git2::StatusOptions::new();
        opts.include_ignored(false).include_untracked(true);
        assert!(repo.statuses(Some(&mut opts)).unwrap().is_empty());
        // The user's own repository is kept as it is.
        let head_before = std::fs::read(dir.path().join(".git/HEAD")).unwrap();
        prepare(dir.path()).unwrap();
        assert_eq!(
            std::fs::read(dir.path().join(".git/HEAD")).unwrap(),
            head_before
        );
    }

    #[test]
    fn a_folder_with_a_dependency_folder_gets_no_first_commit() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("node_modules")).unwrap();
        std::fs::write(dir.path().join("node_modules/x.js"), "x").unwrap();
        let repo = repository(dir.path()).unwrap();
        assert!(repo.head().is_err(), "nothing committed");
    }

    #[test]
    fn a_repository_made_here_and_cut_short_gets_its_first_commit_later() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("b.txt"), "b").unwrap();
        let repo = git::init_repo(dir.path()).unwrap();
        repo.config().unwrap().set_bool(MADE_HERE, true).unwrap();
        drop(repo);
        let repo = repository(dir.path()).unwrap();
        assert!(repo.head().is_ok());
        assert!(repo.statuses(None).unwrap().is_empty());
        // A user's own empty repository is left as it is.
        let mine = tempfile::tempdir().unwrap();
        std::fs::write(mine.path().join("c.txt"), "c").unwrap();
        git::init_repo(mine.path()).unwrap();
        assert!(repository(mine.path()).unwrap().head().is_err());
    }
}
