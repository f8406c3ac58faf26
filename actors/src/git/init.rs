use std::path::Path;

use git2::{Repository, RepositoryInitOptions};

/// `git init` a directory with `main` as the initial branch.
pub fn init_repo(dir: &Path) -> Result<Repository, git2::Error> {
    let mut opts = RepositoryInitOptions::new();
    opts.initial_head("main").mkdir(false);
    Repository::init_opts(dir, &opts)
}

/// Open an existing repository exactly at `dir` (no upward search).
pub fn open_repo(dir: &Path) -> Result<Repository, git2::Error> {
    Repository::open_ext(
        dir,
        git2::RepositoryOpenFlags::NO_SEARCH,
        std::iter::empty::<&std::ffi::OsStr>(),
    )
}
