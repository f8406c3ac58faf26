//! The repository's index (`.git/index`), kept in memory and written by us.
//!
//! libgit2 rewrites and re-hashes the whole index from its entry list on
//! every write; with thousands of history files that is the one part of a
//! turn commit that grows with the session. Here the serialized entries
//! live in one contiguous buffer, edited in place, and a write puts on
//! disk only the bytes that changed since the last one: the header, the
//! entries from the first inserted or removed one on (a turn's new files
//! sort at the end of `history/`, so that is the last few entries), and the
//! entries whose stat data changed in place. The cost of a turn's index
//! write does not grow with the session.
//!
//! The file is a plain version-4 index (prefix-compressed paths), which git
//! (since 1.8) and libgit2 read, with an all-zero trailer instead of the
//! SHA-1 of the whole file, as git writes it under `index.skipHash`: git
//! (2.40 on; older versions check it only in `git fsck`) and libgit2 (1.7
//! on) accept a zero trailer as "not computed". Hashing the whole file was
//! the part of every turn that grew with the session (1.3 MB at 15,000
//! files). A crash in the middle of a write is still caught at load: the
//! entries must parse and name exactly HEAD's files and ids
//! (`load_checked`), else the index is rebuilt from HEAD.
//!
//! Only the entries a turn touches stay in memory: once a write has put
//! the file in step, the run of history entries between the first one and
//! the last few is *frozen* (`frozen.rs`): it stays on disk only, its
//! place and its first and last paths remembered. A turn's files sort
//! after it; an edit inside it (rare: a migration, a repair) reads it back
//! first. A live session's index then holds a few dozen entries however
//! long the session is.

mod entry;
mod frozen;
#[cfg(test)]
mod props;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use git2::{Oid, Repository};

use super::{head_commit, GitError};
use entry::{encode, entry_fixed, fixed_part, flagged, path_bytes, Fixed, Stat, FIXED};
use frozen::Frozen;

const FILE_MODE: u32 = 0o100644;
/// Entries frozen at once at least (a short session stays in memory).
const FREEZE_AT: usize = 256;
/// The last entries never frozen: a turn's new files sort among them.
const KEEP: usize = 16;

pub struct GitIndex {
    path: PathBuf,
    /// The serialized entries back to back, in git's order (byte order of
    /// paths): a write streams one buffer instead of visiting thousands of
    /// separately allocated entries (cold cache lines cost more than the
    /// copy and the hash together). Version 4 entries: each path is stored
    /// as a suffix of the previous one's, a sixth smaller than version 2.
    /// The frozen run, when there is one, sits between two of them.
    data: Vec<u8>,
    /// Each entry's path and where its bytes are in `data`, same order.
    slots: Vec<Slot>,
    /// The run of entries on disk only.
    frozen: Option<Frozen>,
    /// `FREEZE_AT` and `KEEP` (smaller in tests).
    freeze_at: usize,
    keep: usize,
    /// What changed in `data` since the last write.
    dirty: Dirty,
    /// The file as the last write left it; `None` before the first write.
    /// Another writer (git's own `git status` replaces the file) shows as
    /// a different inode, size or time, and then the file is written whole.
    on_disk: Option<OnDisk>,
}

/// Changes since the last write: `tail` is the offset in `data` from which
/// every byte may have moved (an insert or a removal), `patches` the
/// offsets of fixed parts rewritten in place before it.
#[derive(Default)]
struct Dirty {
    tail: Option<usize>,
    patches: Vec<usize>,
}

#[derive(PartialEq)]
struct OnDisk {
    ino: u64,
    len: u64,
    mtime: (i64, i64),
}

impl OnDisk {
    fn of(m: &fs::Metadata) -> OnDisk {
        OnDisk {
            ino: m.ino(),
            len: m.len(),
            mtime: (m.mtime(), m.mtime_nsec()),
        }
    }
}

/// Header: signature, version, entry count.
const HEADER: usize = 12;
/// The trailer's size: a SHA-1's, left all zero.
const TRAILER: usize = 20;

struct Slot {
    path: Box<[u8]>,
    start: usize,
    len: usize,
}

impl GitIndex {
    /// Load the index of `repo`, first making it match HEAD if a crash left
    /// it behind (stat data of unchanged entries is kept).
    pub fn load(repo: &Repository) -> Result<GitIndex, GitError> {
        Ok(GitIndex::load_checked(repo)?.0)
    }

    /// `load`, also telling whether the index had to be repaired (then the
    /// work tree may be behind HEAD too: a commit or a branch switch was
    /// cut short).
    pub fn load_checked(repo: &Repository) -> Result<(GitIndex, bool), GitError> {
        let mut repaired = false;
        // Opened on its own: the repository's own index object would stay
        // cached in the handle, every entry allocated, for the session's life.
        let path = repo.path().join("index");
        let mut index = match git2::Index::open(&path) {
            Ok(index) => index,
            Err(e) => {
                // Torn by a crash in the middle of its in-place write: it
                // is a cache, rebuilt below from HEAD.
                tracing::warn!(git_dir = %repo.path().display(), error = %e, "unreadable .git/index; rebuilding it from HEAD");
                match fs::remove_file(&path) {
                    Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e.into()),
                    _ => {}
                }
                repaired = true;
                git2::Index::open(&path)?
            }
        };
        if let Some(head) = head_commit(repo)? {
            let tree = head.tree()?;
            if !index_matches_tree(&index, &tree)? {
                index.read_tree(&tree)?;
                index.write()?;
                repaired = true;
            }
        }
        let entries: BTreeMap<Vec<u8>, Fixed> = index
            .iter()
            .map(|e| (e.path.clone(), entry_fixed(&e)))
            .collect();
        let mut loaded = GitIndex::from_entries(repo.path().join("index"), entries);
        loaded.adopt_file();
        Ok((loaded, repaired))
    }

    /// An index listing exactly `tree` (empty for `None`), with the stat
    /// data of the work-tree files. Paths in `unstat` (files whose live
    /// content may differ, like `meta.json`) get none, so git compares
    /// their content instead of trusting the stat data.
    pub fn from_tree(
        repo: &Repository,
        tree: Option<&git2::Tree<'_>>,
        unstat: &[&Path],
    ) -> Result<GitIndex, GitError> {
        let workdir = repo
            .workdir()
            .ok_or_else(|| git2::Error::from_str("bare repository"))?
            .to_path_buf();
        let mut entries = BTreeMap::new();
        if let Some(tree) = tree {
            tree.walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
                if entry.kind() == Some(git2::ObjectType::Blob) {
                    let rel = format!("{dir}{}", entry.name().unwrap_or(""));
                    let stat = match fs::symlink_metadata(workdir.join(&rel)) {
                        Ok(m) if !unstat.contains(&Path::new(&rel)) => Stat::of(&m),
                        _ => Stat::default(),
                    };
                    let key = rel.into_bytes();
                    let fixed = flagged(
                        &key,
                        fixed_part(key.len(), &stat, entry.filemode() as u32, entry.id()),
                    );
                    entries.insert(key, fixed);
                }
                git2::TreeWalkResult::Ok
            })?;
        }
        Ok(GitIndex::from_entries(repo.path().join("index"), entries))
    }

    fn from_entries(path: PathBuf, entries: BTreeMap<Vec<u8>, Fixed>) -> GitIndex {
        let mut index = GitIndex {
            path,
            data: Vec::with_capacity(entries.len() * 112 + (1 << 16)),
            slots: Vec::with_capacity(entries.len()),
            frozen: None,
            freeze_at: FREEZE_AT,
            keep: KEEP,
            dirty: Dirty::default(),
            on_disk: None,
        };
        let mut prev: &[u8] = &[];
        for (key, fixed) in &entries {
            let bytes = encode(prev, key, fixed);
            index.slots.push(Slot {
                path: key.clone().into_boxed_slice(),
                start: index.data.len(),
                len: bytes.len(),
            });
            index.data.extend_from_slice(&bytes);
            prev = key;
        }
        index
    }

    /// The path entry `i` is encoded against: the one before it, or the
    /// frozen run's last.
    fn prev_path(&self, i: usize) -> &[u8] {
        match &self.frozen {
            Some(f) if f.slot == i => &f.last,
            _ => i.checked_sub(1).map_or(&[], |p| &self.slots[p].path),
        }
    }

    /// Replace the bytes `range` of `data` with `bytes`, moving the entries
    /// from slot `from` on.
    fn splice(&mut self, range: std::ops::Range<usize>, bytes: &[u8], from: usize) {
        let delta = bytes.len() as isize - range.len() as isize;
        self.moved_from(range.start);
        if let Some(f) = self.frozen.as_mut().filter(|f| range.start < f.at) {
            // An edit before the frozen run moves it.
            f.at = f.at.wrapping_add_signed(delta);
        }
        self.data.splice(range, bytes.iter().copied());
        self.shift(from, delta);
    }

    fn find(&self, key: &[u8]) -> Result<usize, usize> {
        self.slots.binary_search_by(|s| (*s.path).cmp(key))
    }

    /// Move the entries from slot `from` on by `delta` bytes.
    fn shift(&mut self, from: usize, delta: isize) {
        let from = from.min(self.slots.len());
        for s in &mut self.slots[from..] {
            s.start = s.start.wrapping_add_signed(delta);
        }
    }

    pub fn len(&self) -> usize {
        self.slots.len() + self.frozen.as_ref().map_or(0, |f| f.count)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Entries held in memory (the others are frozen on disk).
    pub fn in_memory(&self) -> usize {
        self.slots.len()
    }

    /// Record `path` (relative, '/'-separated) as `id` with the stat data of
    /// the file on disk, so `git status` sees it clean.
    pub fn upsert(&mut self, path: &Path, meta: &fs::Metadata, id: Oid) -> io::Result<()> {
        let key = path_bytes(path);
        let stat = Stat::of(meta);
        let fixed = flagged(&key, fixed_part(key.len(), &stat, FILE_MODE, id));
        if self.inside_frozen(&key) {
            self.thaw()?;
        }
        match self.find(&key) {
            // Same path: its stat data and id change in place.
            Ok(i) => {
                let start = self.slots[i].start;
                let old = &mut self.data[start..start + FIXED];
                if *old != fixed {
                    old.copy_from_slice(&fixed);
                    self.dirty.patches.push(start);
                }
            }
            // New paths of a turn sort near the end: a short move. The
            // entry after the new one is re-encoded against it.
            Err(i) => {
                let mut bytes = encode(self.prev_path(i), &key, &fixed);
                let own = bytes.len();
                let (range, next_len) = match self.slots.get(i) {
                    Some(next) => {
                        let next_fixed = self.fixed_at(next.start);
                        let next_bytes = encode(&key, &next.path, &next_fixed);
                        bytes.extend_from_slice(&next_bytes);
                        (next.start..next.start + next.len, Some(next_bytes.len()))
                    }
                    None => (self.data.len()..self.data.len(), None),
                };
                let start = range.start;
                self.splice(range, &bytes, i + 1);
                if let (Some(len), Some(next)) = (next_len, self.slots.get_mut(i)) {
                    next.start = start + own;
                    next.len = len;
                }
                self.slots.insert(
                    i,
                    Slot {
                        path: key.into_boxed_slice(),
                        start,
                        len: own,
                    },
                );
                if let Some(f) = self.frozen.as_mut().filter(|f| i < f.slot) {
                    f.slot += 1;
                }
            }
        }
        Ok(())
    }

    pub fn remove(&mut self, path: &Path) -> io::Result<()> {
        let key = path_bytes(path);
        // Inside the run, or the entry its first is encoded against.
        let anchors = |f: &Frozen| {
            f.slot
                .checked_sub(1)
                .is_some_and(|a| *self.slots[a].path == *key)
        };
        if self.inside_frozen(&key) || self.frozen.as_ref().is_some_and(anchors) {
            self.thaw()?;
        }
        let Ok(i) = self.find(&key) else {
            return Ok(());
        };
        let start = self.slots[i].start;
        match self.slots.get(i + 1) {
            // The next entry is re-encoded against the one before.
            Some(next) => {
                let next_bytes = encode(self.prev_path(i), &next.path, &self.fixed_at(next.start));
                let range = start..next.start + next.len;
                self.splice(range, &next_bytes, i + 2);
                self.slots[i + 1].start = start;
                self.slots[i + 1].len = next_bytes.len();
            }
            None => {
                self.moved_from(start);
                self.data.truncate(start);
            }
        }
        self.slots.remove(i);
        if let Some(f) = self.frozen.as_mut().filter(|f| i < f.slot) {
            f.slot -= 1;
        }
        Ok(())
    }

    /// The bytes of `data` from `offset` on may all have moved.
    fn moved_from(&mut self, offset: usize) {
        let tail = self.dirty.tail.map_or(offset, |t| t.min(offset));
        self.dirty.tail = Some(tail);
    }

    fn fixed_at(&self, start: usize) -> Fixed {
        let mut fixed = [0u8; FIXED];
        fixed.copy_from_slice(&self.data[start..start + FIXED]);
        fixed
    }

    /// Write the index over the old one, in place: no temporary file, no
    /// new inode (creating one per turn was the largest kernel cost under
    /// load), and only what changed since the last write when the file is
    /// still the one that write left. It is derived data, not fsynced: a
    /// write torn by a crash leaves entries that do not parse or do not
    /// match HEAD, and `load_checked` rebuilds it. Only the session's actor
    /// reads it, between its writes.
    pub fn write(&mut self) -> io::Result<()> {
        let file = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(crate::fsio::FILE_MODE)
            .open(&self.path)?;
        let found = OnDisk::of(&file.metadata()?);
        let ours = self.on_disk.as_ref() == Some(&found);
        if !ours {
            // Another writer replaced the file: the frozen run is read
            // back from it before the whole index is written.
            self.thaw()?;
        }
        let frozen_len = self.frozen.as_ref().map_or(0, |f| f.len);
        let len = (HEADER + self.data.len() + frozen_len + TRAILER) as u64;
        if ours {
            self.write_changes(&file)?;
        } else {
            self.write_whole(&file)?;
        }
        if found.len > len {
            file.set_len(len)?;
        }
        self.dirty = Dirty::default();
        self.on_disk = Some(OnDisk::of(&file.metadata()?));
        if let Some(f) = self.frozen.as_mut() {
            f.file_at = f.at;
        }
        self.freeze();
        Ok(())
    }

    fn header(&self) -> [u8; HEADER] {
        let mut h = [0u8; HEADER];
        h[..4].copy_from_slice(b"DIRC");
        h[4..8].copy_from_slice(&4u32.to_be_bytes());
        h[8..].copy_from_slice(&(self.len() as u32).to_be_bytes());
        h
    }

    /// Header, entries and the zero trailer, streamed (nothing frozen).
    fn write_whole(&self, file: &fs::File) -> io::Result<()> {
        let mut out = io::BufWriter::with_capacity(1 << 18, file);
        out.write_all(&self.header())?;
        out.write_all(&self.data)?;
        out.write_all(&[0u8; TRAILER])?;
        out.flush()
    }

    /// Where byte `at` of `data` is in the file (after the header).
    fn file_offset(&self, at: usize) -> usize {
        match &self.frozen {
            Some(f) if at >= f.at => at + f.len,
            _ => at,
        }
    }

    /// Over the file the last write left: the in-place patches, the moved
    /// tail with the trailer after it, then the header. When the tail
    /// starts before the frozen run and the run moved, the run is read
    /// from where it was and written where it goes.
    fn write_changes(&self, file: &fs::File) -> io::Result<()> {
        let tail = self.dirty.tail.unwrap_or(self.data.len());
        for &at in self.dirty.patches.iter().filter(|&&at| at < tail) {
            let to = (HEADER + self.file_offset(at)) as u64;
            file.write_all_at(&self.data[at..at + FIXED], to)?;
        }
        match &self.frozen {
            Some(f) if tail <= f.at && f.at != f.file_at => {
                let mut run = vec![0u8; f.len];
                file.read_exact_at(&mut run, (HEADER + f.file_at) as u64)?;
                let mut end = Vec::with_capacity(self.data.len() - tail + f.len + TRAILER);
                end.extend_from_slice(&self.data[tail..f.at]);
                end.extend_from_slice(&run);
                end.extend_from_slice(&self.data[f.at..]);
                end.extend_from_slice(&[0u8; TRAILER]);
                file.write_all_at(&end, (HEADER + tail) as u64)?;
            }
            Some(f) if tail < f.at => {
                // The run is in place: the bytes before it, then after it.
                file.write_all_at(&self.data[tail..f.at], (HEADER + tail) as u64)?;
                let mut end = Vec::with_capacity(self.data.len() - f.at + TRAILER);
                end.extend_from_slice(&self.data[f.at..]);
                end.extend_from_slice(&[0u8; TRAILER]);
                file.write_all_at(&end, (HEADER + f.at + f.len) as u64)?;
            }
            _ => {
                let mut end = Vec::with_capacity(self.data.len() - tail + TRAILER);
                end.extend_from_slice(&self.data[tail..]);
                end.extend_from_slice(&[0u8; TRAILER]);
                file.write_all_at(&end, (HEADER + self.file_offset(tail)) as u64)?;
            }
        }
        file.write_all_at(&self.header(), 0)
    }
}

/// Every blob of `tree` is in `index` with the same id, and nothing else is.
fn index_matches_tree(index: &git2::Index, tree: &git2::Tree<'_>) -> Result<bool, git2::Error> {
    let mut matches = true;
    let mut count = 0usize;
    let walked = tree.walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
        if entry.kind() == Some(git2::ObjectType::Blob) {
            count += 1;
            let p = format!("{dir}{}", entry.name().unwrap_or(""));
            if index.get_path(Path::new(&p), 0).map(|e| e.id) != Some(entry.id()) {
                matches = false;
                return git2::TreeWalkResult::Abort;
            }
        }
        git2::TreeWalkResult::Ok
    });
    // Stopping the walk early makes libgit2 report an error (GIT_EUSER).
    if !matches {
        return Ok(false);
    }
    walked?;
    Ok(count == index.len())
}
