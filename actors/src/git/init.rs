use std::path::Path;

use git2::{Repository, RepositoryInitOptions};

/// `git init` a directory with `main` as the initial branch.
pub fn init_repo(dir: &Path) -> Result<Repository, git2::Error> {
    let mut opts = RepositoryInitOptions::new();
    opts.initial_head("main").mkdir(false);
    Repository::init_opts(dir, &opts)
}

/// `git init` a session repository: like `init_repo`, without reflogs
/// (see `disable_reflogs`) and without sample hooks or a description
/// (64 KiB per session that nothing runs: libgit2 runs no hooks).
pub fn init_session_repo(dir: &Path) -> Result<Repository, git2::Error> {
    let mut opts = RepositoryInitOptions::new();
    opts.initial_head("main")
        .mkdir(false)
        .external_template(false);
    let repo = Repository::init_opts(dir, &opts)?;
    disable_reflogs(&repo)?;
    // Even without a template libgit2 writes `hooks/README.sample` and a
    // `description` (gitweb's): a disk block each that nothing reads.
    remove_sample_hooks(repo.path())?;
    match std::fs::remove_file(repo.path().join("description")) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(git2::Error::from_str(&format!("description: {e}")));
        }
        _ => {}
    }
    // And the empty folders of its template (`hooks`, `info` with its
    // commented-out `exclude`, `objects/info`, `refs/tags`): a disk block
    // each; git makes them again when it needs one.
    let git_dir = repo.path();
    let _ = std::fs::remove_file(git_dir.join("info/exclude"));
    for empty in ["hooks", "info", "objects/info", "refs/tags"] {
        let _ = std::fs::remove_dir(git_dir.join(empty));
    }
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

/// Remove `hooks/*.sample` from a git directory (older session repos were
/// made with them).
pub fn remove_sample_hooks(gitdir: &Path) -> Result<(), git2::Error> {
    let hooks = gitdir.join("hooks");
    for e in std::fs::read_dir(&hooks).into_iter().flatten().flatten() {
        if e.file_name().to_string_lossy().ends_with(".sample") {
            std::fs::remove_file(e.path())
                .map_err(|err| git2::Error::from_str(&format!("{}: {err}", e.path().display())))?;
        }
    }
    Ok(())
}
