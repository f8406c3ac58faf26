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

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use git2::{Oid, Repository};

use super::{head_commit, GitError};

const FILE_MODE: u32 = 0o100644;

pub struct GitIndex {
    path: PathBuf,
    /// The serialized entries back to back, in git's order (byte order of
    /// paths): a write streams one buffer instead of visiting thousands of
    /// separately allocated entries (cold cache lines cost more than the
    /// copy and the hash together). Version 4 entries: each path is stored
    /// as a suffix of the previous one's, a sixth smaller than version 2.
    data: Vec<u8>,
    /// Each entry's path and where its bytes are in `data`, same order.
    slots: Vec<Slot>,
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
        let mut index = match repo.index() {
            Ok(index) => index,
            Err(e) => {
                // Torn by a crash in the middle of its in-place write: it
                // is a cache, rebuilt below from HEAD.
                tracing::warn!(git_dir = %repo.path().display(), error = %e, "unreadable .git/index; rebuilding it from HEAD");
                let path = repo.path().join("index");
                match fs::remove_file(&path) {
                    Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e.into()),
                    _ => {}
                }
                repaired = true;
                repo.index()?
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
        let mut entries = BTreeMap::new();
        for e in index.iter() {
            let stat = Stat {
                ctime: (e.ctime.seconds() as u32, e.ctime.nanoseconds()),
                mtime: (e.mtime.seconds() as u32, e.mtime.nanoseconds()),
                dev: e.dev,
                ino: e.ino,
                uid: e.uid,
                gid: e.gid,
                size: e.file_size,
            };
            entries.insert(
                e.path.clone(),
                flagged(&e.path, fixed_part(e.path.len(), &stat, e.mode, e.id)),
            );
        }
        Ok((
            GitIndex::from_entries(repo.path().join("index"), entries),
            repaired,
        ))
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

    fn prev_path(&self, i: usize) -> &[u8] {
        i.checked_sub(1).map_or(&[], |p| &self.slots[p].path)
    }

    /// Replace the bytes `range` of `data` with `bytes`, moving the entries
    /// from slot `from` on.
    fn splice(&mut self, range: std::ops::Range<usize>, bytes: &[u8], from: usize) {
        let delta = bytes.len() as isize - range.len() as isize;
        self.moved_from(range.start);
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
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Record `path` (relative, '/'-separated) as `id` with the stat data of
    /// the file on disk, so `git status` sees it clean.
    pub fn upsert(&mut self, path: &Path, meta: &fs::Metadata, id: Oid) {
        let key = path_bytes(path);
        let stat = Stat::of(meta);
        let fixed = flagged(&key, fixed_part(key.len(), &stat, FILE_MODE, id));
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
            }
        }
    }

    pub fn remove(&mut self, path: &Path) {
        let Ok(i) = self.find(&path_bytes(path)) else {
            return;
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
            .write(true)
            .create(true)
            .truncate(false)
            .mode(crate::fsio::FILE_MODE)
            .open(&self.path)?;
        let found = OnDisk::of(&file.metadata()?);
        let len = (HEADER + self.data.len() + TRAILER) as u64;
        if self.on_disk.as_ref() == Some(&found) {
            self.write_changes(&file)?;
        } else {
            self.write_whole(&file)?;
        }
        if found.len > len {
            file.set_len(len)?;
        }
        self.dirty = Dirty::default();
        self.on_disk = Some(OnDisk::of(&file.metadata()?));
        Ok(())
    }

    fn header(&self) -> [u8; HEADER] {
        let mut h = [0u8; HEADER];
        h[..4].copy_from_slice(b"DIRC");
        h[4..8].copy_from_slice(&4u32.to_be_bytes());
        h[8..].copy_from_slice(&(self.slots.len() as u32).to_be_bytes());
        h
    }

    /// Header, entries and the zero trailer, streamed.
    fn write_whole(&self, file: &fs::File) -> io::Result<()> {
        let mut out = io::BufWriter::with_capacity(1 << 18, file);
        out.write_all(&self.header())?;
        out.write_all(&self.data)?;
        out.write_all(&[0u8; TRAILER])?;
        out.flush()
    }

    /// Over the file the last write left: the in-place patches, the moved
    /// tail with the trailer after it, then the header.
    fn write_changes(&self, file: &fs::File) -> io::Result<()> {
        let tail = self.dirty.tail.unwrap_or(self.data.len());
        for &at in self.dirty.patches.iter().filter(|&&at| at < tail) {
            file.write_all_at(&self.data[at..at + FIXED], (HEADER + at) as u64)?;
        }
        let mut end = Vec::with_capacity(self.data.len() - tail + TRAILER);
        end.extend_from_slice(&self.data[tail..]);
        end.extend_from_slice(&[0u8; TRAILER]);
        file.write_all_at(&end, (HEADER + tail) as u64)?;
        file.write_all_at(&self.header(), 0)
    }
}

#[derive(Default)]
struct Stat {
    ctime: (u32, u32),
    mtime: (u32, u32),
    dev: u32,
    ino: u32,
    uid: u32,
    gid: u32,
    size: u32,
}

impl Stat {
    fn of(m: &fs::Metadata) -> Stat {
        Stat {
            ctime: (m.ctime() as u32, m.ctime_nsec() as u32),
            mtime: (m.mtime() as u32, m.mtime_nsec() as u32),
            dev: m.dev() as u32,
            ino: m.ino() as u32,
            uid: m.uid(),
            gid: m.gid(),
            size: m.size() as u32,
        }
    }
}

fn path_bytes(path: &Path) -> Vec<u8> {
    path.to_string_lossy().replace('\\', "/").into_bytes()
}

/// Length of an entry's fixed part: stat data, mode, id and flags.
const FIXED: usize = 62;

type Fixed = [u8; FIXED];

/// The fixed part of an index entry for a path of `path_len` bytes.
fn fixed_part(path_len: usize, stat: &Stat, mode: u32, id: Oid) -> Fixed {
    let mut b = [0u8; FIXED];
    for (i, v) in [
        stat.ctime.0,
        stat.ctime.1,
        stat.mtime.0,
        stat.mtime.1,
        stat.dev,
        stat.ino,
        mode,
        stat.uid,
        stat.gid,
        stat.size,
    ]
    .into_iter()
    .enumerate()
    {
        b[i * 4..i * 4 + 4].copy_from_slice(&v.to_be_bytes());
    }
    b[40..60].copy_from_slice(id.as_bytes());
    b[60..62].copy_from_slice(&(path_len.min(0xfff) as u16).to_be_bytes());
    b
}

/// Files of the session the server rewrites between commits (its live
/// metadata): their index entries carry git's skip-worktree flag, so `git
/// status` in a session folder shows a clean tree while `meta.json` holds
/// state newer than the last commit (a switch of branch, a rename), and a
/// `git checkout` by hand leaves the server's file in place. Commits still
/// record them: the store builds its trees itself.
const LIVE_FILES: &[&[u8]] = &[b"meta.json"];

/// `fixed` with the extended flag set when `path` is a live file (the
/// entry then carries extended flags: skip-worktree, see `encode`).
fn flagged(path: &[u8], mut fixed: Fixed) -> Fixed {
    if LIVE_FILES.contains(&path) {
        fixed[60] |= 0x40;
    }
    fixed
}

/// One version-4 entry: the fixed part, then the path as "drop N bytes from
/// the end of the previous entry's path, append S": N as git's offset
/// varint, S NUL-terminated; no padding.
fn encode(prev: &[u8], path: &[u8], fixed: &Fixed) -> Vec<u8> {
    let common = prev.iter().zip(path).take_while(|(a, b)| a == b).count();
    let mut b = Vec::with_capacity(FIXED + 4 + path.len() - common);
    b.extend_from_slice(fixed);
    if fixed[60] & 0x40 != 0 {
        // Extended flags (index version 3 on): skip-worktree.
        b.extend_from_slice(&0x4000u16.to_be_bytes());
    }
    push_varint(&mut b, (prev.len() - common) as u64);
    b.extend_from_slice(&path[common..]);
    b.push(0);
    b
}

/// git's variable-width integer (as for OFS_DELTA offsets).
fn push_varint(out: &mut Vec<u8>, mut value: u64) {
    let mut buf = [0u8; 10];
    let mut pos = buf.len() - 1;
    buf[pos] = (value & 127) as u8;
    value >>= 7;
    while value != 0 {
        value -= 1;
        pos -= 1;
        buf[pos] = 128 | (value & 127) as u8;
        value >>= 7;
    }
    out.extend_from_slice(&buf[pos..]);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_in_place_give_the_same_bytes_as_encoding_from_scratch() {
        let dir = tempfile::tempdir().unwrap();
        let meta = fs::metadata(dir.path()).unwrap();
        let mut idx = GitIndex::from_entries(dir.path().join("index"), BTreeMap::new());
        let mut want: BTreeMap<Vec<u8>, Fixed> = BTreeMap::new();
        let mut seed = 42u64;
        for step in 0..3000u32 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let n = (seed >> 33) % 400;
            let path = format!(
                "history/{:02}/{:02}/{n:06}-u-id{}.json",
                n / 100,
                n % 100,
                n % 7
            );
            let id = Oid::from_bytes(&[(step % 251) as u8; 20]).unwrap();
            if (seed >> 20).is_multiple_of(4) {
                idx.remove(Path::new(&path));
                want.remove(path.as_bytes());
            } else {
                idx.upsert(Path::new(&path), &meta, id);
                let fixed = fixed_part(path.len(), &Stat::of(&meta), FILE_MODE, id);
                want.insert(path.into_bytes(), fixed);
            }
        }
        let fresh = GitIndex::from_entries(dir.path().join("index"), want);
        assert_eq!(idx.len(), fresh.len());
        assert!(
            idx.data == fresh.data,
            "incremental edits drifted from a fresh encoding"
        );
        for (a, b) in idx.slots.iter().zip(&fresh.slots) {
            assert_eq!((&a.path, a.start, a.len), (&b.path, b.start, b.len));
        }
    }

    /// What `write` must leave on disk: header, entries, zero trailer.
    fn whole_file(idx: &GitIndex) -> Vec<u8> {
        [&idx.header()[..], &idx.data, &[0u8; TRAILER]].concat()
    }

    #[test]
    fn writes_of_only_the_changes_leave_the_same_file_as_a_whole_write() {
        let dir = tempfile::tempdir().unwrap();
        let meta = fs::metadata(dir.path()).unwrap();
        let other = fs::metadata(dir.path().parent().unwrap()).unwrap();
        let path = dir.path().join("index");
        let mut idx = GitIndex::from_entries(path.clone(), BTreeMap::new());
        let mut seed = 7u64;
        let mut partial = 0;
        for step in 0..600u32 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let n = (seed >> 33) % 300;
            let p = format!("history/{:02}/{n:06}-u-x.json", n / 100);
            let id = Oid::from_bytes(&[(step % 251) as u8; 20]).unwrap();
            match (seed >> 20) % 5 {
                0 => idx.remove(Path::new(&p)),
                // In place: the same path with other stat data.
                1 => idx.upsert(Path::new(&p), &other, id),
                _ => idx.upsert(Path::new(&p), &meta, id),
            }
            if step % 3 == 0 {
                if step % 90 == 0 {
                    // Another writer replaced the file (as git does).
                    let tmp = dir.path().join("index.lock");
                    fs::write(&tmp, b"not ours").unwrap();
                    fs::rename(&tmp, &path).unwrap();
                } else if idx.on_disk.is_some() {
                    partial += 1;
                }
                idx.write().unwrap();
                assert!(
                    fs::read(&path).unwrap() == whole_file(&idx),
                    "step {step}: the file differs from a whole write"
                );
            }
        }
        assert!(partial > 150, "{partial} writes of changes only");
    }

    /// A repository with `names` (each file holding its own name)
    /// committed, and the index written entry by entry: each write after
    /// the first writes only its changes.
    fn committed(names: &[&str]) -> (tempfile::TempDir, Repository, GitIndex) {
        let dir = tempfile::tempdir().unwrap();
        let repo = crate::git::init_repo(dir.path()).unwrap();
        let mut idx = GitIndex::load(&repo).unwrap();
        let mut builder = repo.treebuilder(None).unwrap();
        for name in names {
            let p = dir.path().join(name);
            fs::write(&p, name).unwrap();
            let id = repo.blob(name.as_bytes()).unwrap();
            idx.upsert(Path::new(name), &fs::metadata(&p).unwrap(), id);
            builder.insert(name, id, 0o100644).unwrap();
            idx.write().unwrap();
        }
        {
            let tree = repo.find_tree(builder.write().unwrap()).unwrap();
            let sig = git2::Signature::now("t", "t@t").unwrap();
            repo.commit(Some("HEAD"), &sig, &sig, "one", &tree, &[])
                .unwrap();
        }
        drop(builder);
        (dir, repo, idx)
    }

    #[test]
    fn the_zero_trailer_is_accepted_by_git() {
        let (dir, _repo, _idx) = committed(&["a.json", "b.json", "c.json"]);
        // libgit2 reads it back as it is, then git does.
        let reopened = crate::git::open_repo(dir.path()).unwrap();
        let (again, repaired) = GitIndex::load_checked(&reopened).unwrap();
        assert!(!repaired);
        assert_eq!(again.len(), 3);
        let git = |args: &[&str]| crate::git::run_git(dir.path(), args);
        assert_eq!(git(&["ls-files"]), "a.json\nb.json\nc.json\n");
        assert_eq!(git(&["status", "--porcelain"]), "");
        git(&["fsck", "--no-dangling"]);
    }

    #[test]
    fn the_live_metadata_file_is_skip_worktree_for_git() {
        let (dir, repo, mut idx) = committed(&["a.json", "meta.json", "z.json"]);
        let git = |args: &[&str]| crate::git::run_git(dir.path(), args);
        assert_eq!(
            git(&["ls-files", "-v"]),
            "H a.json\nS meta.json\nH z.json\n"
        );
        // The server's newer state is not a change for the user's git.
        fs::write(dir.path().join("meta.json"), "newer").unwrap();
        fs::write(dir.path().join("z.json"), "changed").unwrap();
        assert_eq!(git(&["status", "--porcelain"]), " M z.json\n");
        // A stat update in place, then an entry inserted before it: the
        // flag stays, and libgit2 reads the file back as it is.
        let p = dir.path().join("meta.json");
        let id = repo.blob(b"newer").unwrap();
        idx.upsert(Path::new("meta.json"), &fs::metadata(&p).unwrap(), id);
        let b = dir.path().join("b.json");
        fs::write(&b, "b").unwrap();
        idx.upsert(
            Path::new("b.json"),
            &fs::metadata(&b).unwrap(),
            repo.blob(b"b").unwrap(),
        );
        idx.write().unwrap();
        assert_eq!(
            git(&["ls-files", "-v"]),
            "H a.json\nH b.json\nS meta.json\nH z.json\n"
        );
        let reopened = crate::git::open_repo(dir.path()).unwrap();
        let (again, _) = GitIndex::load_checked(&reopened).unwrap();
        assert_eq!(
            again.len(),
            3,
            "HEAD's three files (b.json is not committed)"
        );
    }

    #[test]
    fn varints_and_prefix_compression_follow_git() {
        let enc = |v: u64| {
            let mut b = Vec::new();
            push_varint(&mut b, v);
            b
        };
        assert_eq!(enc(0), [0]);
        assert_eq!(enc(127), [127]);
        assert_eq!(enc(128), [0x80, 0]);
        assert_eq!(enc(16511), [0xff, 0x7f]);
        assert_eq!(enc(16512), [0x80, 0x80, 0]);
        let fixed = [7u8; FIXED];
        let e = encode(
            b"history/00/01/000101-u-x.json",
            b"history/00/01/000102-a-y.json",
            &fixed,
        );
        assert_eq!(&e[FIXED..], b"\x0a2-a-y.json\0");
    }

    #[test]
    fn an_index_behind_head_is_repaired_at_load() {
        let dir = tempfile::tempdir().unwrap();
        let repo = crate::git::init_repo(dir.path()).unwrap();
        fs::write(dir.path().join("a.json"), "a").unwrap();
        let mut index = repo.index().unwrap();
        index.add_path(Path::new("a.json")).unwrap();
        let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
        let sig = git2::Signature::now("t", "t@t").unwrap();
        repo.commit(Some("HEAD"), &sig, &sig, "one", &tree, &[])
            .unwrap();
        // A crash between the ref update and the index write.
        index.clear().unwrap();
        index.write().unwrap();
        let (idx, repaired) = GitIndex::load_checked(&repo).unwrap();
        assert!(repaired);
        assert_eq!(idx.len(), 1);
        let (_, again) = GitIndex::load_checked(&repo).unwrap();
        assert!(!again, "repaired once, then in step");
    }

    #[test]
    fn a_torn_index_is_rebuilt_from_head_at_load() {
        let dir = tempfile::tempdir().unwrap();
        let repo = crate::git::init_repo(dir.path()).unwrap();
        for name in ["a.json", "b.json"] {
            fs::write(dir.path().join(name), name).unwrap();
        }
        let mut index = repo.index().unwrap();
        index.add_path(Path::new("a.json")).unwrap();
        index.add_path(Path::new("b.json")).unwrap();
        let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
        let sig = git2::Signature::now("t", "t@t").unwrap();
        repo.commit(Some("HEAD"), &sig, &sig, "one", &tree, &[])
            .unwrap();
        index.write().unwrap();
        let path = repo.path().join("index");
        let whole = fs::read(&path).unwrap();
        // A crash in the middle of the in-place write.
        fs::write(&path, &whole[..whole.len() / 2]).unwrap();
        let fresh = crate::git::open_repo(dir.path()).unwrap();
        let (mut idx, repaired) = GitIndex::load_checked(&fresh).unwrap();
        assert!(repaired);
        assert_eq!(idx.len(), 2);
        // Written again in place, shorter than what was there: git reads it.
        fs::write(&path, [whole.clone(), vec![0u8; 64]].concat()).unwrap();
        idx.write().unwrap();
        // The old tail is cut off: git would read it as extensions.
        assert!(fs::read(&path).unwrap().len() < whole.len() + 64);
        let listed = crate::git::run_git(dir.path(), &["ls-files", "--stage"]);
        assert_eq!(listed.lines().count(), 2);
    }

    #[test]
    fn inserts_overwrites_and_removals_anywhere_keep_a_valid_index() {
        let dir = tempfile::tempdir().unwrap();
        let repo = crate::git::init_repo(dir.path()).unwrap();
        let mut idx = GitIndex::load(&repo).unwrap();
        let put = |idx: &mut GitIndex, name: &str, body: &str| {
            let p = dir.path().join(name);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(&p, body).unwrap();
            let id = repo.blob(body.as_bytes()).unwrap();
            idx.upsert(Path::new(name), &fs::metadata(&p).unwrap(), id);
        };
        for n in ["m/2", "m/4", "z", "m/3", "a", "m/1", "m/22"] {
            put(&mut idx, n, n);
        }
        put(&mut idx, "m/3", "changed");
        idx.remove(Path::new("m/2"));
        idx.remove(Path::new("a"));
        idx.remove(Path::new("missing"));
        idx.write().unwrap();
        let mut index = repo.index().unwrap();
        index.read(true).unwrap();
        let got: Vec<(String, git2::Oid)> = index
            .iter()
            .map(|e| (String::from_utf8(e.path).unwrap(), e.id))
            .collect();
        let want: Vec<(String, git2::Oid)> = [
            ("m/1", "m/1"),
            ("m/22", "m/22"),
            ("m/3", "changed"),
            ("m/4", "m/4"),
            ("z", "z"),
        ]
        .iter()
        .map(|(p, b)| (p.to_string(), repo.blob(b.as_bytes()).unwrap()))
        .collect();
        assert_eq!(got, want);
        assert_eq!(idx.len(), 5);
    }

    #[test]
    fn written_index_reads_back_through_libgit2() {
        let dir = tempfile::tempdir().unwrap();
        let repo = crate::git::init_repo(dir.path()).unwrap();
        let mut idx = GitIndex::load(&repo).unwrap();
        for name in ["b.txt", "a/long/path/name.json", "c"] {
            let p = dir.path().join(name);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(&p, name).unwrap();
            let id = repo.blob(name.as_bytes()).unwrap();
            idx.upsert(Path::new(name), &fs::metadata(&p).unwrap(), id);
        }
        idx.remove(Path::new("c"));
        idx.write().unwrap();
        let mut index = repo.index().unwrap();
        index.read(true).unwrap();
        let paths: Vec<String> = index
            .iter()
            .map(|e| String::from_utf8(e.path).unwrap())
            .collect();
        assert_eq!(paths, vec!["a/long/path/name.json", "b.txt"]);
        assert_eq!(
            index.get_path(Path::new("b.txt"), 0).unwrap().id,
            repo.blob(b"b.txt").unwrap()
        );
    }
}
