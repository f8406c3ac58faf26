//! The next log segment, made ahead of time: a file of zeros whose blocks
//! are written and flushed before any entry goes in.
//!
//! An entry appended to a growing file makes its `fdatasync` write the
//! file's new size and block map as well as the entry; written over
//! blocks already on disk, the same `fdatasync` writes the entry alone
//! (0.11–0.15 ms here instead of 0.17–0.21 ms). The checkpoint thread
//! makes the spare (`segment.spare`, through `.tmp-segment.spare`) while
//! the writer fills the current segment; the writer renames it to the
//! next segment's name when it rotates, or makes an empty segment as
//! before when there is none. Replay reads a segment up to its last
//! entry: the zeros after it are its clean end (`entry::decode_all`).

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::fsio;

/// A new spare's size: a segment's first entries overwrite zeros; past
/// them it grows as a plain file does. A recycled segment keeps the size
/// its entries took (up to the caller's cap), so under a heavy load the
/// next segments are made as big as the last one needed, while a start
/// or a light load costs one megabyte of zeros.
pub const SPARE_BYTES: usize = 1 << 20;

const SPARE: &str = "segment.spare";

fn ready(dir: &Path) -> PathBuf {
    dir.join(SPARE)
}

fn making(dir: &Path) -> PathBuf {
    dir.join(format!("{}{SPARE}", fsio::TMP_PREFIX))
}

/// Write zeros over `from..to` of `file`.
fn write_zeros(file: &File, from: u64, to: u64) -> io::Result<()> {
    let zeros = vec![0u8; 256 << 10];
    let mut at = from;
    while at < to {
        let n = (to - at).min(zeros.len() as u64);
        file.write_all_at(&zeros[..n as usize], at)?;
        at += n;
    }
    Ok(())
}

/// Make the spare in `dir` unless one is there: zeros, flushed, then
/// renamed to its name (a crash midway leaves only the temporary file,
/// which the next `prepare` writes again).
pub fn prepare(dir: &Path) -> io::Result<()> {
    let target = ready(dir);
    if target.exists() {
        return Ok(());
    }
    let tmp = making(dir);
    let made = (|| {
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(fsio::FILE_MODE)
            .open(&tmp)?;
        write_zeros(&file, 0, SPARE_BYTES as u64)?;
        file.sync_data()?;
        fs::rename(&tmp, &target)
    })();
    if made.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    made
}

/// Turn the checkpointed segment at `path` (its first `used` bytes
/// written, nothing after them: never one with a failed write, whose
/// tail may hold a torn entry) into the spare, unless one is ready:
/// renamed out of the segments' names first (replay never reads it half
/// zeroed), its entries overwritten with zeros, sized for what it held,
/// flushed, renamed to the spare's name. A segment written a few times in
/// its 30 s costs a few kilobytes of zeros instead of a new spare's
/// megabyte. Whether it did (else the caller removes the segment).
pub fn recycle(dir: &Path, path: &Path, used: u64, cap: u64) -> io::Result<bool> {
    if ready(dir).exists() {
        return Ok(false);
    }
    let tmp = making(dir);
    fs::rename(path, &tmp)?;
    fsio::fsync_dir(dir)?;
    let made = (|| {
        let file = OpenOptions::new().write(true).open(&tmp)?;
        let len = file.metadata()?.len();
        let spare = used
            .next_multiple_of(1 << 20)
            .clamp(SPARE_BYTES as u64, cap.max(SPARE_BYTES as u64));
        // Past `used` the file holds zeros (a spare) or nothing (a
        // segment made empty): the entries are zeroed, then a file shorter
        // than a spare is made up to its size.
        write_zeros(&file, 0, used.min(spare))?;
        write_zeros(&file, len.min(spare), spare)?;
        file.set_len(spare)?;
        file.sync_data()?;
        fs::rename(&tmp, ready(dir))
    })();
    match made {
        Ok(()) => Ok(true),
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// Take the spare as the segment at `path` (never over an existing
/// file), opened for writing; `None` when there is no spare.
pub fn take(dir: &Path, path: &Path) -> io::Result<Option<File>> {
    match fsio::rename_noreplace(&ready(dir), path) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    }
    OpenOptions::new().write(true).open(path).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spare_is_made_once_and_taken_once() {
        let dir = tempfile::tempdir().unwrap();
        let seg = dir.path().join("0000000000000001.log");
        assert!(take(dir.path(), &seg).unwrap().is_none(), "none yet");
        prepare(dir.path()).unwrap();
        prepare(dir.path()).unwrap();
        assert_eq!(
            fs::metadata(ready(dir.path())).unwrap().len(),
            SPARE_BYTES as u64
        );
        assert!(!making(dir.path()).exists());
        assert!(take(dir.path(), &seg).unwrap().is_some());
        assert!(fs::read(&seg).unwrap().iter().all(|b| *b == 0));
        // A second segment: no spare left; never taken over a file.
        let next = dir.path().join("0000000000000002.log");
        assert!(take(dir.path(), &next).unwrap().is_none());
        prepare(dir.path()).unwrap();
        fs::write(&next, b"x").unwrap();
        assert!(take(dir.path(), &next).is_err());
        assert_eq!(fs::read(&next).unwrap(), b"x");
    }

    #[test]
    fn a_checkpointed_segment_becomes_the_spare_all_zeros() {
        let dir = tempfile::tempdir().unwrap();
        // A segment made ahead, its first bytes written.
        prepare(dir.path()).unwrap();
        let seg = dir.path().join("0000000000000001.log");
        let file = take(dir.path(), &seg).unwrap().unwrap();
        file.write_all_at(&[7u8; 5000], 0).unwrap();
        drop(file);
        assert!(recycle(dir.path(), &seg, 5000, 16 << 20).unwrap());
        assert!(!seg.exists() && !making(dir.path()).exists());
        let spare = fs::read(ready(dir.path())).unwrap();
        assert_eq!(spare.len(), SPARE_BYTES);
        assert!(spare.iter().all(|b| *b == 0));
        // A segment made empty (shorter than a spare): made up to its
        // size; with a spare ready, it is left to its caller.
        let next = take(dir.path(), &seg).unwrap().unwrap();
        drop(next);
        let small = dir.path().join("0000000000000002.log");
        fs::write(&small, [9u8; 100]).unwrap();
        assert!(recycle(dir.path(), &small, 100, 16 << 20).unwrap());
        let spare = fs::read(ready(dir.path())).unwrap();
        assert_eq!(spare.len(), SPARE_BYTES);
        assert!(spare.iter().all(|b| *b == 0));
        let third = dir.path().join("0000000000000003.log");
        fs::write(&third, [9u8; 100]).unwrap();
        assert!(!recycle(dir.path(), &third, 100, 16 << 20).unwrap());
        assert_eq!(fs::read(&third).unwrap(), [9u8; 100]);
        // A segment that grew past a spare: the next is made its size
        // (in whole megabytes, at most the cap).
        take(dir.path(), &dir.path().join("0000000000000005.log"))
            .unwrap()
            .unwrap();
        let big = dir.path().join("0000000000000004.log");
        fs::write(&big, vec![5u8; 2_500_000]).unwrap();
        assert!(recycle(dir.path(), &big, 2_500_000, 16 << 20).unwrap());
        let spare = fs::read(ready(dir.path())).unwrap();
        assert_eq!(spare.len(), 3 << 20);
        assert!(spare.iter().all(|b| *b == 0));
    }
}
