//! `gc`: repack session repositories into one pack each (delta-compressed
//! by libgit2's pack builder) and drop the sample hooks that `git init`
//! leaves, reporting the `.git` sizes before and after.

use std::path::Path;

use crate::git;

#[derive(Debug, Clone, Default)]
pub struct Outcome {
    pub before: u64,
    pub after: u64,
    pub repacked: bool,
}

/// Bytes under `dir`, recursively.
pub fn size_of(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(e.path()),
                Ok(_) => total += e.metadata().map(|m| m.len()).unwrap_or(0),
                Err(_) => {}
            }
        }
    }
    total
}

/// Repack one session repository.
pub fn gc_session(dir: &Path) -> Result<Outcome, git::GitError> {
    let gitdir = dir.join(".git");
    let before = size_of(&gitdir);
    git::enable_fsync();
    let repo = git::open_repo(dir)?;
    let repacked = git::repack_all(&repo)?;
    git::remove_sample_hooks(&gitdir)?;
    Ok(Outcome {
        before,
        after: size_of(&gitdir),
        repacked,
    })
}
