//! Durable file primitives: every rewritten file goes through a temp file,
//! fsync, rename and a directory fsync, so a crash leaves either the old or
//! the new content, never a torn file. Everything they create is private,
//! whatever the umask: files 0600, folders 0700.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Mode of every file the service writes.
pub const FILE_MODE: u32 = 0o600;
/// Mode of every folder the service creates.
pub const DIR_MODE: u32 = 0o700;

/// Raise the soft limit on open files to the hard one (1,024 by default
/// on Linux, often 524,288 hard): every live session keeps its pack files
/// open, and the search index its segments. Returns the limit now in force.
pub fn raise_open_files() -> io::Result<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit read and write the one struct given.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return Err(io::Error::last_os_error());
        }
        if lim.rlim_cur < lim.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: lim.rlim_max,
                rlim_max: lim.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) != 0 {
                return Err(io::Error::last_os_error());
            }
            lim = raised;
        }
    }
    Ok(lim.rlim_cur)
}

/// Whether `e` says the disk (or the user's quota) is full.
pub fn is_disk_full(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded
    )
}

/// Create `dir` and any missing parents, each 0700 (existing ones are left
/// as they are).
pub fn create_private_dir_all(dir: &Path) -> io::Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(dir)
}

/// Set `path` (a folder the service owns, e.g. the state directory) to 0700.
pub fn make_dir_private(path: &Path) -> io::Result<()> {
    fs::set_permissions(path, fs::Permissions::from_mode(DIR_MODE))
}

/// Make every file (0600) and folder (0700) below `dir` private, `dir`
/// included; of git's own `.git` folder only the folder itself (libgit2
/// writes its objects read-only, and it is then closed to everyone else). For trees checked out by
/// libgit2 (fork, import), which follows the umask.
pub fn make_private(dir: &Path) -> io::Result<()> {
    make_dir_private(dir)?;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d)? {
            let entry = entry?;
            let ty = entry.file_type()?;
            if ty.is_dir() {
                make_dir_private(&entry.path())?;
                if entry.file_name() != ".git" {
                    stack.push(entry.path());
                }
            } else if ty.is_file() {
                match fs::set_permissions(entry.path(), fs::Permissions::from_mode(FILE_MODE)) {
                    // Removed meanwhile by its owner (tantivy's file GC).
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    other => other?,
                }
            }
        }
    }
    Ok(())
}

/// Prefix of temporary files; loaders delete leftovers with this prefix.
pub const TMP_PREFIX: &str = ".tmp-";

/// The temporary sibling of a file named `name`: `.tmp-<name>-<uuid>`.
/// It never ends in the file's own extension: `git gc` deletes every
/// `.idx` in `objects/pack` that has no `.pack` beside it, a temporary
/// index included, while it is being written.
fn tmp_name(name: &str) -> String {
    format!("{TMP_PREFIX}{name}-{}", uuid::Uuid::new_v4().simple())
}

/// Atomically replace `path` with `bytes` and make the result durable.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    replace(path, bytes, Sync::All)
}

/// Atomically replace `path` with `bytes` whose data is durable, without
/// waiting for the rename itself to be durable: after a crash the file holds
/// either its complete old content or its complete new content. For files
/// that a later sync point or a load-time repair makes consistent.
pub fn atomic_replace_data_synced(path: &Path, bytes: &[u8]) -> io::Result<()> {
    replace(path, bytes, Sync::Data)
}

/// Atomically replace `path` with `bytes`, without waiting for the disk: for
/// copies of data that is durable elsewhere (files checked out from git),
/// made durable in bulk by `sync_filesystem`.
pub fn atomic_write_unsynced(path: &Path, bytes: &[u8]) -> io::Result<()> {
    replace(path, bytes, Sync::None)
}

/// Flush everything written to the filesystem that holds `dir` (one
/// `syncfs` instead of a fsync per file after a bulk checkout).
pub fn sync_filesystem(dir: &Path) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let handle = File::open(dir)?;
    // SAFETY: the descriptor is valid for the lifetime of `handle`.
    if unsafe { libc::syncfs(handle.as_raw_fd()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Write a file named by its content (a pack, its index) without waiting
/// for the disk: under a temporary name, then renamed. No exchange is
/// tried: there is no older version of it to swap with.
pub fn write_content_named(path: &Path, bytes: &[u8]) -> io::Result<()> {
    stage_content_named(path, bytes)?.publish()
}

/// A file written under a temporary name next to its place, not yet in
/// it (`stage_content_named`); removed when dropped unpublished.
#[derive(Debug)]
pub struct Staged {
    tmp: PathBuf,
    target: PathBuf,
    published: bool,
}

impl Staged {
    /// Rename it into its place.
    pub fn publish(mut self) -> io::Result<()> {
        fs::rename(&self.tmp, &self.target)?;
        self.published = true;
        Ok(())
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.published {
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

/// `write_content_named` in two steps: the bytes written now under a
/// temporary name (which git and libgit2 never list), the rename left to
/// `Staged::publish`.
pub fn stage_content_named(path: &Path, bytes: &[u8]) -> io::Result<Staged> {
    let (_, tmp) = temp_beside(path)?;
    let staged = Staged {
        tmp,
        target: path.to_path_buf(),
        published: false,
    };
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(FILE_MODE)
        .open(&staged.tmp)?;
    file.write_all(bytes)?;
    Ok(staged)
}

/// `path`'s folder, and a temporary name for it in that folder.
fn temp_beside(path: &Path) -> io::Result<(&Path, PathBuf)> {
    let dir = path
        .parent()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no parent"))?;
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no file name"))?;
    Ok((dir, dir.join(tmp_name(name))))
}

#[derive(Clone, Copy, PartialEq)]
enum Sync {
    /// File data, then the rename (directory fsync).
    All,
    /// File data only.
    Data,
    None,
}

fn replace(path: &Path, bytes: &[u8], sync: Sync) -> io::Result<()> {
    let (dir, tmp) = temp_beside(path)?;
    let result = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(FILE_MODE)
            .open(&tmp)?;
        file.write_all(bytes)?;
        match sync {
            Sync::None => swap_into_place(&tmp, path)?,
            Sync::All | Sync::Data => {
                sync_file(&file)?;
                fs::rename(&tmp, path)?;
            }
        }
        if sync == Sync::All {
            fsync_dir(dir)?;
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Put `new` at `target` atomically (readers see the old or the new file),
/// for a file that needs no durability of its own.
///
/// A plain rename over an existing file makes ext4 (`auto_da_alloc`) start
/// writing the new file to disk at once: 0.3 ms a rename here, and disk
/// bandwidth for data rewritten again moments later. Exchanging the two
/// names (`RENAME_EXCHANGE`) is just as atomic without that flush (0.09
/// ms); the old copy, now at `new`, is then unlinked, usually before any
/// of it was written back.
pub fn swap_into_place(new: &Path, target: &Path) -> io::Result<()> {
    match exchange(new, target) {
        Ok(()) => fs::remove_file(new),
        // No file there yet, or a filesystem without RENAME_EXCHANGE.
        Err(_) => fs::rename(new, target),
    }
}

/// Put `bytes` at `target` atomically through a file of its own kept
/// beside it, `spare`: written in place, then the two names exchanged, so
/// that `spare` holds the old content for the next time. No inode is
/// made or freed: on this VM's ext4 (no journal) every freed inode makes
/// each file creation in its group skip it for a minute or more
/// (`recently_deleted`), which under load cost a quarter of the CPU.
pub fn replace_through_spare(target: &Path, spare: &Path, bytes: &[u8]) -> io::Result<()> {
    write_spare(spare, bytes)?;
    match exchange(spare, target) {
        Ok(()) => Ok(()),
        // No file there yet, or a filesystem without RENAME_EXCHANGE.
        Err(_) => fs::rename(spare, target),
    }
}

/// Replace the git ref file `target` with `bytes` under git's lock
/// protocol, through `spare` as `replace_through_spare` does (no inode made
/// or freed): the spare, holding the new content, becomes `<ref>.lock`
/// (never over an existing one: that is git's lock, taken), is exchanged
/// with the ref, and the old ref's file goes back as the spare. While the
/// lock exists, a `git pack-refs` or `git gc` run by the user cannot prune
/// the loose ref, so it cannot delete an update it did not see; when git
/// holds the lock, this waits for it (up to 2 s). A lock older than 10 s is
/// taken as left by a crash and taken over.
pub fn replace_ref(target: &Path, spare: &Path, bytes: &[u8]) -> io::Result<()> {
    write_spare(spare, bytes)?;
    let mut lock_name = target.as_os_str().to_owned();
    lock_name.push(".lock");
    let lock = std::path::PathBuf::from(lock_name);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    loop {
        match rename_at(spare, &lock, libc::RENAME_NOREPLACE) {
            Ok(()) => break,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                let stale = fs::metadata(&lock)
                    .and_then(|m| m.modified())
                    .is_ok_and(|t| t.elapsed().is_ok_and(|age| age.as_secs() >= 10));
                if stale {
                    fs::rename(spare, &lock)?;
                    break;
                }
                if std::time::Instant::now() >= deadline {
                    return Err(io::Error::new(
                        io::ErrorKind::WouldBlock,
                        format!("{} is locked by another git process", target.display()),
                    ));
                }
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            // A filesystem without RENAME_NOREPLACE: the plain protocol.
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                return replace_through_spare(target, spare, bytes);
            }
            Err(e) => return Err(e),
        }
    }
    let placed = match exchange(&lock, target) {
        // The old ref's file is the spare of the next time.
        Ok(()) => fs::rename(&lock, spare),
        // No loose ref (packed by git): the lock becomes it.
        Err(_) => fs::rename(&lock, target),
    };
    if placed.is_err() {
        // Never leave git's lock behind.
        let _ = fs::remove_file(&lock);
    }
    placed
}

/// `bytes` into the spare file, in place (made with its folder the first
/// time).
fn write_spare(spare: &Path, bytes: &[u8]) -> io::Result<()> {
    match overwrite_unsynced(spare, bytes) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if let Some(dir) = spare.parent() {
                create_private_dir_all(dir)?;
            }
            overwrite_unsynced(spare, bytes)
        }
        other => other,
    }
}

/// `renameat2` with `flags`.
fn rename_at(a: &Path, b: &Path, flags: libc::c_uint) -> io::Result<()> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &Path| CString::new(p.as_os_str().as_bytes()).map_err(io::Error::other);
    let (from, to) = (c(a)?, c(b)?);
    // SAFETY: both arguments are valid NUL-terminated paths that outlive
    // the call; AT_FDCWD with absolute or cwd-relative paths is allowed.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            flags,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Rename `from` to `to`, failing (`AlreadyExists`) when `to` exists.
pub fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    rename_at(from, to, libc::RENAME_NOREPLACE)
}

/// Exchange the names of two files (`RENAME_EXCHANGE`), atomically.
fn exchange(a: &Path, b: &Path) -> io::Result<()> {
    rename_at(a, b, libc::RENAME_EXCHANGE)
}

/// Write `bytes` over `path` in place (created if missing), without fsync:
/// no temporary file, no new inode, no rename (0.012 ms against 0.3 ms for
/// temp + rename here). Not atomic: only for files whose whole new content
/// is already durable in the write-ahead log, which replays it over a torn
/// write (replay compares the content), and which no other thread reads
/// meanwhile (a session's files are read by its actor, between writes).
pub fn overwrite_unsynced(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(FILE_MODE)
        .open(path)?;
    // Cut only what the old content had beyond the new: a truncation to
    // the same or a larger size still costs ext4 a metadata update (as
    // much as the write itself, per the profile of a turn), and a turn's
    // node files are new.
    let old = file.metadata()?.len();
    file.write_all(bytes)?;
    if old > bytes.len() as u64 {
        file.set_len(bytes.len() as u64)?;
    }
    Ok(())
}

/// `value` as every JSON file of the store is written: pretty, with a
/// final newline.
pub fn json_bytes<T: serde::Serialize>(value: &T) -> io::Result<Vec<u8>> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(io::Error::other)?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// Serialize `value` as pretty JSON and write it atomically.
pub fn atomic_write_json<T: serde::Serialize>(path: &Path, value: &T) -> io::Result<()> {
    atomic_write(path, &json_bytes(value)?)
}

/// Build a directory in a temporary sibling (`<parent>/.tmp-<kind>-<uuid>`)
/// and rename it to the path `build` returns, fsyncing the folder and
/// `parent`: a crash leaves nothing but a `.tmp-` folder (cleared at
/// startup) or the complete directory. On any error the temporary folder
/// is removed. `build` gets the (not yet created) temporary path.
pub fn build_dir_atomically<T, E: From<io::Error>>(
    parent: &Path,
    kind: &str,
    build: impl FnOnce(&Path) -> Result<(PathBuf, T), E>,
) -> Result<T, E> {
    create_private_dir_all(parent)?;
    let tmp = parent.join(format!(
        "{TMP_PREFIX}{kind}-{}",
        uuid::Uuid::new_v4().simple()
    ));
    let result = build(&tmp).and_then(|(dest, value)| {
        fsync_dir(&tmp)?;
        fs::rename(&tmp, &dest)?;
        fsync_dir(parent)?;
        Ok(value)
    });
    if result.is_err() {
        let _ = fs::remove_dir_all(&tmp);
    }
    result
}

/// fsync every file and folder under `dir` (and `dir`): for a folder built
/// in a temporary place whose writes went through the log under that
/// temporary name, before it is renamed into place (replay would look for
/// them under a name that no longer exists).
pub fn sync_tree(dir: &Path) -> io::Result<()> {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d)? {
            let entry = entry?;
            let kind = entry.file_type()?;
            if kind.is_dir() {
                stack.push(entry.path());
            } else if kind.is_file() {
                sync_file(&File::open(entry.path())?)?;
            }
        }
        fsync_dir(&d)?;
    }
    Ok(())
}

/// fsync a directory so that renames and creations inside it are durable.
pub fn fsync_dir(dir: &Path) -> io::Result<()> {
    sync_file(&File::open(dir)?)
}

/// fsync one open file (counted in `openprogram_fsyncs_total`).
pub fn sync_file(file: &File) -> io::Result<()> {
    metrics::counter!("openprogram_fsyncs_total").increment(1);
    file.sync_all()
}

/// Create `dir` (and parents) and fsync it and its parent.
pub fn create_dir_durable(dir: &Path) -> io::Result<()> {
    create_private_dir_all(dir)?;
    fsync_dir(dir)?;
    if let Some(parent) = dir.parent() {
        fsync_dir(parent)?;
    }
    Ok(())
}

/// Remove leftover temp files (from a crash mid-write) directly inside `dir`.
pub fn remove_tmp_files(dir: &Path) -> io::Result<usize> {
    let mut removed = 0;
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let entry = entry?;
        if entry.file_name().to_string_lossy().starts_with(TMP_PREFIX) {
            fs::remove_file(entry.path())?;
            removed += 1;
        }
    }
    Ok(removed)
}

/// Read and parse a JSON file.
pub fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> io::Result<T> {
    let bytes = fs::read(path)?;
    serde_json::from_slice(&bytes).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

#[cfg(test)]
#[path = "fsio_tests.rs"]
mod tests;
