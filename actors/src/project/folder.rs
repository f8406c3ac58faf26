//! What a project's folder needs before the service works in it: a git
//! repository (the user's own, or one made for the agent's commits) and
//! `.openprogram/`, ignored by that repository, where the project's live
//! sessions keep theirs. Registering a folder for an import needs neither:
//! both are made when a live session first works there.

use std::path::Path;

use git2::Repository;

use super::model::OPENPROGRAM_DIR;
use crate::{fsio, git};

/// The folder's repository, made when the folder has none.
pub fn repository(dir: &Path) -> Result<Repository, git2::Error> {
    match git::open_repo(dir) {
        Ok(repo) => Ok(repo),
        Err(e) if e.code() == git2::ErrorCode::NotFound && !dir.join(".git").exists() => {
            tracing::info!(folder = %dir.display(), "the project's folder had no git repository: one is made for the agent's commits");
            git::init_repo(dir)
        }
        Err(e) => Err(e),
    }
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
pub fn prepare(dir: &Path) -> Result<(), super::error::ProjectError> {
    repository(dir)?;
    prepare_openprogram_dir(dir)?;
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
        // The user's own repository is kept as it is.
        let head_before = std::fs::read(dir.path().join(".git/HEAD")).unwrap();
        prepare(dir.path()).unwrap();
        assert_eq!(
            std::fs::read(dir.path().join(".git/HEAD")).unwrap(),
            head_before
        );
    }
}
