//! Startup replay: every complete entry of the log segments left behind,
//! in order, is applied again where the files do not already hold it; the
//! files are made durable (`syncfs`) and only then the segments removed.
//!
//! Replay never reaches outside what it wrote before: a change whose
//! session folder (`root`) is gone is skipped (the session was deleted or
//! moved after it), changes before a `Barrier` of their root are skipped,
//! a ref moves only if it still holds the value the entry moved it from,
//! and nothing is deleted but the files the log itself removed.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::writer::segment_number;
use super::{entry, Change};
use crate::feed::{FeedWriter, LogPosition};
use crate::fsio;

/// What a replay did.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Replayed {
    pub segments: usize,
    pub entries: usize,
    /// Files (and refs) written or removed because they lacked the change.
    pub applied: usize,
    /// Changes whose session folder is gone, or superseded.
    pub skipped: usize,
    /// A segment ended in a torn or damaged entry (never acknowledged).
    pub torn: bool,
    /// The highest segment number found (new segments are numbered after).
    pub last_segment: u64,
    /// Change feed events appended (logged, but not in the feed yet).
    pub feed_events: usize,
}

/// Replay the log in `dir`; its segments are removed once every change
/// is in place and durable. An error (a full disk) leaves them all.
/// The log's segments in order, and their complete entries' changes.
struct Logged {
    segments: Vec<(u64, PathBuf)>,
    changes: Vec<Change>,
    /// The change feed's events, with the log position of their entry.
    feed: Vec<(LogPosition, Vec<u8>)>,
    entries: usize,
    torn: bool,
}

fn read_log(dir: &Path) -> io::Result<Logged> {
    let mut segments: Vec<(u64, PathBuf)> = Vec::new();
    for e in fs::read_dir(dir)? {
        let e = e?;
        if let Some(n) = segment_number(&e.file_name().to_string_lossy()) {
            segments.push((n, e.path()));
        }
    }
    segments.sort();
    let mut logged = Logged {
        segments,
        changes: Vec::new(),
        feed: Vec::new(),
        entries: 0,
        torn: false,
    };
    for (number, path) in &logged.segments {
        let bytes = fs::read(path)?;
        let (entries, clean) = entry::decode_all(&bytes);
        logged.torn |= !clean;
        logged.entries += entries.len();
        for (i, changes) in entries.into_iter().enumerate() {
            let at = LogPosition {
                segment: *number,
                entry: i as u32,
            };
            for c in &changes {
                if let Change::Feed { event, .. } = c {
                    logged.feed.push((at, event.clone()));
                }
            }
            logged.changes.extend(changes);
        }
    }
    Ok(logged)
}

/// The changes replay considers, each with its session folder: those
/// before a later barrier of their folder, or whose folder is gone, are
/// left out (counted in `skipped`).
fn live_changes<'c>(changes: &'c [Change], skipped: &mut usize) -> Vec<(&'c Change, &'c PathBuf)> {
    // The last barrier of each root.
    let mut barrier: HashMap<&PathBuf, usize> = HashMap::new();
    for (i, c) in changes.iter().enumerate() {
        if let Change::Barrier { root } = c {
            barrier.insert(root, i);
        }
    }
    let mut gone: HashSet<&PathBuf> = HashSet::new();
    let mut live = Vec::new();
    for (i, c) in changes.iter().enumerate() {
        let root = match c {
            Change::Put { root, .. } | Change::Remove { root, .. } | Change::Ref { root, .. } => {
                root
            }
            Change::Barrier { .. } | Change::Feed { .. } => continue,
        };
        if barrier.get(root).is_some_and(|b| *b > i) || gone.contains(root) {
            *skipped += 1;
            continue;
        }
        if !fs::metadata(root).is_ok_and(|m| m.is_dir()) {
            gone.insert(root);
            *skipped += 1;
            continue;
        }
        live.push((c, root));
    }
    live
}

/// Replay the log in `dir`; the change feed (`feed`) gets the events of
/// the entries logged after its last record.
pub fn replay(dir: &Path, feed: Option<&mut FeedWriter>) -> io::Result<Replayed> {
    let logged = read_log(dir)?;
    let mut out = Replayed {
        segments: logged.segments.len(),
        last_segment: logged.segments.last().map_or(0, |s| s.0),
        entries: logged.entries,
        torn: logged.torn,
        ..Replayed::default()
    };
    if logged.segments.is_empty() {
        return Ok(out);
    }
    let mut filesystems: HashMap<u64, PathBuf> = HashMap::new();
    filesystems.insert(fs::metadata(dir)?.dev(), dir.to_path_buf());
    for (c, root) in live_changes(&logged.changes, &mut out.skipped) {
        if let Ok(m) = fs::metadata(root) {
            filesystems.entry(m.dev()).or_insert(root.clone());
        }
        match apply(c, root, false) {
            Ok(true) => out.applied += 1,
            Ok(false) => {}
            Err(e) => {
                tracing::warn!(root = %root.display(), error = %e, "log replay: a change could not be applied; the log is kept");
                return Err(e);
            }
        }
    }
    if let Some(feed) = feed {
        let after = feed.last_position();
        let missing: Vec<(LogPosition, &[u8])> = logged
            .feed
            .iter()
            .filter(|(at, _)| *at > after)
            .map(|(at, e)| (*at, e.as_slice()))
            .collect();
        out.feed_events = missing.len();
        feed.append(&missing)?;
        if let Ok(m) = fs::metadata(feed.dir()) {
            filesystems
                .entry(m.dev())
                .or_insert(feed.dir().to_path_buf());
        }
    }
    for d in filesystems.values() {
        fsio::sync_filesystem(d)?;
    }
    for (_, path) in &logged.segments {
        fs::remove_file(path)?;
    }
    fsio::fsync_dir(dir)?;
    Ok(out)
}

/// The session folders holding changes of the log in `dir` that their
/// files lack, found without writing anything: what a replay that could
/// not run (a full disk) leaves to the next start. Reading those sessions
/// now would show them without acknowledged writes.
pub fn pending_roots(dir: &Path) -> io::Result<HashSet<PathBuf>> {
    let logged = read_log(dir)?;
    let mut skipped = 0;
    // Only the last change of each file or ref counts: an earlier one
    // differs from the files whenever a later one replaced it.
    let mut last: HashMap<(PathBuf, &str), (&Change, &PathBuf)> = HashMap::new();
    for (c, root) in live_changes(&logged.changes, &mut skipped) {
        let key = match c {
            Change::Put { path, .. } | Change::Remove { path, .. } => (path.clone(), ""),
            Change::Ref { git_dir, name, .. } => (git_dir.clone(), name.as_str()),
            Change::Barrier { .. } | Change::Feed { .. } => continue,
        };
        last.insert(key, (c, root));
    }
    let mut roots = HashSet::new();
    for (c, root) in last.into_values() {
        if !roots.contains(root) && apply(c, root, true)? {
            roots.insert(root.clone());
        }
    }
    Ok(roots)
}

/// Apply one change if the disk lacks it; true when something was written
/// (`dry`: true when something would be, and nothing is written).
fn apply(c: &Change, root: &Path, dry: bool) -> io::Result<bool> {
    match c {
        Change::Put { path, bytes, .. } => {
            if !path.starts_with(root) {
                return Ok(false);
            }
            if fs::read(path).is_ok_and(|now| &now == bytes) {
                return Ok(false);
            }
            if dry {
                return Ok(true);
            }
            if let Some(parent) = path.parent() {
                fsio::create_private_dir_all(parent)?;
            }
            fsio::atomic_write_unsynced(path, bytes)?;
            Ok(true)
        }
        Change::Remove { path, .. } => {
            if !path.starts_with(root) {
                return Ok(false);
            }
            if dry {
                return Ok(fs::symlink_metadata(path).is_ok());
            }
            match fs::remove_file(path) {
                Ok(()) => Ok(true),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
                Err(e) => Err(e),
            }
        }
        Change::Ref {
            git_dir,
            name,
            old,
            new,
            ..
        } => {
            if !git_dir.starts_with(root) {
                return Ok(false);
            }
            let repo = git2::Repository::open_bare(git_dir).map_err(io::Error::other)?;
            let now = repo
                .find_reference(name)
                .ok()
                .and_then(|r| r.resolve().ok())
                .and_then(|r| r.target());
            if now == Some(*new) || now != *old {
                return Ok(false);
            }
            if repo.find_commit(*new).is_err() {
                tracing::warn!(git_dir = %git_dir.display(), %name, "log replay: the ref's commit is missing; ref left as it is");
                return Ok(false);
            }
            if dry {
                return Ok(true);
            }
            let path = git_dir.join(name);
            let body = format!("{new}\n");
            match fsio::atomic_write_unsynced(&path, body.as_bytes()) {
                // A ref under a folder not made yet (`refs/openprogram/…`).
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    if let Some(dir) = path.parent() {
                        fs::create_dir_all(dir)?;
                    }
                    fsio::atomic_write_unsynced(&path, body.as_bytes())?;
                }
                other => other?,
            }
            Ok(true)
        }
        Change::Barrier { .. } | Change::Feed { .. } => Ok(false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_segment(dir: &Path, n: u64, entries: &[Vec<Change>]) {
        let mut bytes = Vec::new();
        for e in entries {
            bytes.extend(entry::encode(e));
        }
        fs::write(dir.join(format!("{n:016}.log")), bytes).unwrap();
    }

    #[test]
    fn replay_restores_lost_files_and_respects_gone_roots_and_barriers() {
        let tmp = tempfile::tempdir().unwrap();
        let wal = tmp.path().join("wal");
        fs::create_dir(&wal).unwrap();
        let a = tmp.path().join("a");
        let b = tmp.path().join("b");
        fs::create_dir(&a).unwrap();
        fs::create_dir(&b).unwrap();
        fs::write(a.join("keep.json"), "mine").unwrap();
        let put = |root: &Path, rel: &str, body: &str| Change::Put {
            root: root.to_path_buf(),
            path: root.join(rel),
            bytes: body.as_bytes().to_vec(),
        };
        write_segment(
            &wal,
            1,
            &[
                vec![put(&a, "x/1.json", "one"), put(&b, "old.json", "before")],
                vec![put(&tmp.path().join("deleted"), "n.json", "n")],
            ],
        );
        write_segment(
            &wal,
            2,
            &[
                vec![Change::Barrier { root: b.clone() }],
                vec![put(&a, "meta.json", "m2")],
            ],
        );
        fs::write(wal.join("notes.txt"), "not ours").unwrap();
        let r = replay(&wal, None).unwrap();
        assert_eq!((r.segments, r.entries, r.applied, r.torn), (2, 4, 2, false));
        assert_eq!(fs::read_to_string(a.join("x/1.json")).unwrap(), "one");
        assert_eq!(fs::read_to_string(a.join("meta.json")).unwrap(), "m2");
        assert_eq!(fs::read_to_string(a.join("keep.json")).unwrap(), "mine");
        assert!(!b.join("old.json").exists(), "before its barrier");
        assert!(!tmp.path().join("deleted").exists(), "no folder recreated");
        assert!(wal.join("notes.txt").exists(), "unknown files stay");
        assert_eq!(replay(&wal, None).unwrap().segments, 0);
    }
}
