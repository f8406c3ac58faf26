//! The frozen run: index entries kept on disk only. After a write leaves
//! the file in step, the entries between the first history file and the
//! last `keep` ones leave memory; the file's bytes for them stay where
//! they are. A turn's new files sort after the run (so do `meta.json` and
//! the entries a turn rewrites), a context snapshot before it; an edit
//! inside it reads it back (`thaw`).

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Read};

use super::entry::{entry_fixed, fixed_part, flagged, Fixed, Stat};
use super::{GitIndex, HEADER, TRAILER};

/// Entries of the index that are on disk only, between `slots[..slot]`
/// and `slots[slot..]`.
pub(super) struct Frozen {
    /// Where the run sits in `data` (the first byte after it there).
    pub(super) at: usize,
    /// The first in-memory entry after the run.
    pub(super) slot: usize,
    /// Where the run is in the file the last write left (after the header).
    pub(super) file_at: usize,
    pub(super) len: usize,
    pub(super) count: usize,
    pub(super) first: Box<[u8]>,
    pub(super) last: Box<[u8]>,
}

/// Paths before which the run never starts: its first entry is encoded
/// against the first history file, which stays in memory.
const HISTORY: &[u8] = b"history/";

impl GitIndex {
    /// Whether `key` sorts inside the run or between it and the entry
    /// before it (an insert there re-encodes the run's first entry).
    pub(super) fn inside_frozen(&self, key: &[u8]) -> bool {
        self.frozen.as_ref().is_some_and(|f| {
            let before = f
                .slot
                .checked_sub(1)
                .map_or(&[][..], |a| &*self.slots[a].path);
            key > before && key <= &*f.last
        })
    }

    /// After loading: when the file on disk is exactly what this index
    /// writes, it is taken as written by it (so the run can freeze at once,
    /// without a write). Any difference keeps everything in memory until
    /// the first write.
    pub(super) fn adopt_file(&mut self) {
        let Ok(mut file) = fs::File::open(&self.path) else {
            return;
        };
        let mut bytes = Vec::new();
        let (Ok(meta), Ok(_)) = (file.metadata(), file.read_to_end(&mut bytes)) else {
            return;
        };
        let same = bytes.len() == HEADER + self.data.len() + TRAILER
            && bytes.get(..HEADER) == Some(&self.header()[..])
            && bytes.get(HEADER..HEADER + self.data.len()) == Some(&self.data[..])
            && bytes
                .get(HEADER + self.data.len()..)
                .is_some_and(|t| t.iter().all(|&b| b == 0));
        if same {
            self.on_disk = Some(super::OnDisk::of(&meta));
            self.freeze();
        }
    }

    /// Freeze what can be (right after a write, or an adopted file: the
    /// file holds exactly `data` with the run where `file_at` says).
    pub(super) fn freeze(&mut self) {
        let from = match &self.frozen {
            Some(f) => f.slot,
            None => match self.slots.iter().position(|s| s.path.starts_with(HISTORY)) {
                Some(first) => first + 1,
                None => return,
            },
        };
        let to = self.slots.len().saturating_sub(self.keep);
        if to < from.saturating_add(self.freeze_at.max(1)) {
            return;
        }
        let at = self.slots[from].start;
        let end = self.slots[to - 1].start + self.slots[to - 1].len;
        let bytes = end - at;
        let last = self.slots[to - 1].path.clone();
        match self.frozen.as_mut() {
            Some(f) => {
                f.len += bytes;
                f.count += to - from;
                f.last = last;
            }
            None => {
                self.frozen = Some(Frozen {
                    at,
                    slot: from,
                    file_at: at,
                    len: bytes,
                    count: to - from,
                    first: self.slots[from].path.clone(),
                    last,
                });
            }
        }
        self.data.drain(at..end);
        self.slots.drain(from..to);
        for s in &mut self.slots[from..] {
            s.start -= bytes;
        }
        self.data.shrink_to(self.data.len() + (1 << 12));
        self.slots.shrink_to(self.slots.len() + 64);
    }

    /// Read the run back into memory (from the file, as libgit2 reads it;
    /// from HEAD's tree if the file cannot be read) and rebuild the
    /// entries; everything counts as moved.
    pub(super) fn thaw(&mut self) -> io::Result<()> {
        let Some(f) = self.frozen.take() else {
            return Ok(());
        };
        let run = match self.read_run(&f) {
            Ok(run) => run,
            Err(e) => {
                tracing::warn!(path = %self.path.display(), error = %e, "the index could not be read back; its frozen entries are taken from HEAD");
                self.run_from_head(&f)?
            }
        };
        let mut entries: BTreeMap<Vec<u8>, Fixed> = self
            .slots
            .iter()
            .map(|s| (s.path.to_vec(), self.fixed_at(s.start)))
            .collect();
        entries.extend(run);
        let mut rebuilt = GitIndex::from_entries(self.path.clone(), entries);
        std::mem::swap(&mut self.data, &mut rebuilt.data);
        std::mem::swap(&mut self.slots, &mut rebuilt.slots);
        self.dirty = super::Dirty {
            tail: Some(0),
            patches: Vec::new(),
        };
        Ok(())
    }

    fn read_run(&self, f: &Frozen) -> Result<Vec<(Vec<u8>, Fixed)>, git2::Error> {
        let index = git2::Index::open(&self.path)?;
        Ok(index
            .iter()
            .filter(|e| e.path[..] >= f.first[..] && e.path[..] <= f.last[..])
            .map(|e| (e.path.clone(), entry_fixed(&e)))
            .collect())
    }

    /// The run's range as HEAD's tree has it, without stat data (git
    /// compares those files' contents once, then refreshes them).
    fn run_from_head(&self, f: &Frozen) -> io::Result<Vec<(Vec<u8>, Fixed)>> {
        let git_dir = self
            .path
            .parent()
            .ok_or_else(|| io::Error::other("the index has no repository"))?;
        let repo = git2::Repository::open(git_dir).map_err(io::Error::other)?;
        let head = super::head_commit(&repo).map_err(io::Error::other)?;
        let Some(head) = head else {
            return Ok(Vec::new());
        };
        let tree = head.tree().map_err(io::Error::other)?;
        let mut out = Vec::new();
        tree.walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
            if entry.kind() == Some(git2::ObjectType::Blob) {
                let path = format!("{dir}{}", entry.name().unwrap_or("")).into_bytes();
                if path[..] >= f.first[..] && path[..] <= f.last[..] {
                    let fixed = fixed_part(
                        path.len(),
                        &Stat::default(),
                        entry.filemode() as u32,
                        entry.id(),
                    );
                    out.push((path.clone(), flagged(&path, fixed)));
                }
            }
            git2::TreeWalkResult::Ok
        })
        .map_err(io::Error::other)?;
        Ok(out)
    }
}
