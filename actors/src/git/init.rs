use std::path::Path;

use git2::{Repository, RepositoryInitOptions};

/// `git init` a directory with `main` as the initial branch.
pub fn init_repo(dir: &Path) -> Result<Repository, git2::Error> {
    let mut opts = RepositoryInitOptions::new();
    opts.initial_head("main").mkdir(false);
    Repository::init_opts(dir, &opts)
}

/// `git init` a session repository: like `init_repo`, without reflogs
/// (see `disable_reflogs`).
pub fn init_session_repo(dir: &Path) -> Result<Repository, git2::Error> {
    let repo = init_repo(dir)?;
    disable_reflogs(&repo)?;
    // libgit2 follows the umask; the session's git folder is private.
    crate::fsio::make_dir_private(repo.path())
        .map_err(|e| git2::Error::from_str(&format!("{}: {e}", repo.path().display())))?;
    Ok(repo)
}

/// Session repositories never rewrite a ref and keep their history in the
/// commits, so reflogs add nothing there but four fsyncs per turn.
pub fn disable_reflogs(repo: &Repository) -> Result<(), git2::Error> {
    let mut config = repo.config()?;
    if config.get_bool("core.logAllRefUpdates").ok() != Some(false) {
        config.set_bool("core.logAllRefUpdates", false)?;
        // libgit2 keeps appending to a reflog that exists.
        let _ = std::fs::remove_dir_all(repo.path().join("logs"));
    }
    Ok(())
}

/// Open an existing repository exactly at `dir` (no upward search).
pub fn open_repo(dir: &Path) -> Result<Repository, git2::Error> {
    Repository::open_ext(
        dir,
        git2::RepositoryOpenFlags::NO_SEARCH,
        std::iter::empty::<&std::ffi::OsStr>(),
    )
}
