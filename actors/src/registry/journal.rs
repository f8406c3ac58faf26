//! `index.journal`: the row changes made since `index.json` was written,
//! one JSON line each, appended and fsynced. A change costs one line, not a
//! rewrite of every row; the registry writes a fresh `index.json` (and
//! empties the journal) once the journal is as long as the list, in the
//! background. Lines carry a sequence number: `index.json` records the last
//! one it includes, so a crash between the snapshot and the emptying
//! replays nothing twice. A torn last line (a crash mid-append) ends the
//! replay; everything before it counts.

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::row::SessionRow;
use crate::fsio;

pub const JOURNAL: &str = "index.journal";

/// One change: the row as it now is, or the id of a deleted session.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Entry {
    pub seq: u64,
    /// When the change was made (seconds since the epoch).
    pub at: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub row: Option<SessionRow>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deleted: Option<String>,
}

/// The entries of the journal at `path`, in order, up to the first line
/// that does not parse.
pub fn read(path: &Path) -> Vec<Entry> {
    let Ok(file) = File::open(path) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for line in io::BufReader::new(file).split(b'\n') {
        let parsed = line
            .ok()
            .and_then(|l| serde_json::from_slice::<Entry>(&l).ok());
        match parsed {
            Some(e) => out.push(e),
            None => {
                tracing::warn!(path = %path.display(), kept = out.len(), "index.journal ends in a torn line; the entries before it are kept");
                break;
            }
        }
    }
    out
}

/// The journal, open for appending (created private).
pub fn open(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .mode(fsio::FILE_MODE)
        .open(path)
}

/// Append `entries` in one write; `durable`: fsynced too.
///
/// A row is a copy of its session's `meta.json`, which the write-ahead log
/// made durable before the change reached the registry; a line lost to a
/// crash (or cut short: the replay stops at the first line that does not
/// parse) leaves that row older than its `meta.json`, and the start after
/// a crash re-reads every such row. So the end of a turn, a rename or an
/// archive is written without a fsync of its own (one per turn beside the
/// log's flush, contending with it for the disk); a creation, a deletion
/// and the debounced previews are synced as before.
pub fn append(file: &mut File, entries: &[Entry], durable: bool) -> io::Result<()> {
    let mut buf = Vec::with_capacity(entries.len() * 512);
    for e in entries {
        serde_json::to_writer(&mut buf, e).map_err(io::Error::other)?;
        buf.push(b'\n');
    }
    file.write_all(&buf)?;
    if durable {
        fsio::sync_file(file)?;
    }
    Ok(())
}

/// Empty the journal (after a snapshot that includes it is durable).
pub fn clear(file: &mut File) -> io::Result<()> {
    file.set_len(0)?;
    fsio::sync_file(file)
}
