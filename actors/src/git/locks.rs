use std::fs;
use std::io;
use std::path::Path;

/// Remove `*.lock` files that a killed process left in a git directory
/// (`index.lock`, `HEAD.lock`, `refs/heads/<b>.lock`). Only safe for a
/// caller that is the sole writer of the repository.
pub fn remove_stale_locks(git_dir: &Path) -> io::Result<usize> {
    fn walk(dir: &Path, removed: &mut usize, depth: usize) -> io::Result<()> {
        let entries = match fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        for entry in entries {
            let entry = entry?;
            let path = entry.path();
            let ty = entry.file_type()?;
            if ty.is_dir() && depth > 0 {
                walk(&path, removed, depth - 1)?;
            } else if ty.is_file() && path.extension().is_some_and(|e| e == "lock") {
                fs::remove_file(&path)?;
                *removed += 1;
            }
        }
        Ok(())
    }
    let mut removed = 0;
    walk(git_dir, &mut removed, 0)?;
    walk(&git_dir.join("refs"), &mut removed, 8)?;
    Ok(removed)
}
