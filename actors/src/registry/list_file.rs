//! `index.json` on disk: one JSON object (spec 003's snapshot: `version`,
//! `written_at`, `seq`, `sessions`) laid out one row per line, so that a
//! start reads its rows on every core. Any reader of JSON reads it as
//! before; a file laid out otherwise (written by hand, or by an older
//! version) is read whole on one thread.
//!
//! Parsing a 10,000-session list (4 MB) on one thread was the longest step
//! of such a start (30–45 ms of its 100); split over the two cores of the
//! machine the benchmarks run on, it is about half.

use std::io;
use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;

use super::row::SessionRow;
use super::writer::SessionListFile;

/// `index.json` as read: each row on the heap once, as the registry keeps
/// it (a row is about 400 bytes; moved by value through the start's maps
/// it was copied three more times).
#[derive(Debug)]
pub struct ReadList {
    pub written_at: f64,
    pub seq: u64,
    pub sessions: Vec<Arc<SessionRow>>,
}

/// The line that ends the rows.
const END: &[u8] = b"]}";
/// Rows per parsing thread below which one thread does it all.
const MIN_PER_THREAD: usize = 512;

/// The bytes of `index.json` for `rows` (in the order given).
pub fn encode<'a>(
    written_at: f64,
    seq: u64,
    rows: impl IntoIterator<Item = &'a SessionRow>,
) -> io::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(4096);
    out.extend_from_slice(b"{\"version\":1,\"written_at\":");
    serde_json::to_writer(&mut out, &written_at).map_err(io::Error::other)?;
    out.extend_from_slice(format!(",\"seq\":{seq},\"sessions\":[\n").as_bytes());
    let mut first = true;
    for row in rows {
        if !first {
            out.extend_from_slice(b",\n");
        }
        first = false;
        serde_json::to_writer(&mut out, row).map_err(io::Error::other)?;
    }
    if !first {
        out.push(b'\n');
    }
    out.extend_from_slice(END);
    out.push(b'\n');
    Ok(out)
}

/// Read `index.json` at `path` (`NotFound` when there is none).
pub fn read(path: &Path) -> io::Result<ReadList> {
    let bytes = std::fs::read(path)?;
    match decode_by_lines(&bytes) {
        Some(file) => Ok(file),
        None => serde_json::from_slice::<SessionListFile>(&bytes)
            .map(|f| ReadList {
                written_at: f.written_at,
                seq: f.seq,
                sessions: f.sessions.into_iter().map(Arc::new).collect(),
            })
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e)),
    }
}

#[derive(Deserialize)]
struct Header {
    /// Required, as in the whole file's shape; not otherwise read.
    #[serde(rename = "version")]
    _version: u32,
    written_at: f64,
    #[serde(default)]
    seq: u64,
}

/// The list as `encode` lays it out, its rows parsed on several threads;
/// `None` when the bytes are laid out otherwise or do not parse (the
/// caller then reads them whole, and reports what is wrong).
fn decode_by_lines(bytes: &[u8]) -> Option<ReadList> {
    let first_break = bytes.iter().position(|b| *b == b'\n')?;
    let head = &bytes[..first_break];
    let open = head.strip_suffix(b"\"sessions\":[")?;
    let mut closed = open.to_vec();
    closed.extend_from_slice(b"\"sessions\":[]}");
    let header: Header = serde_json::from_slice(&closed).ok()?;
    let mut lines: Vec<&[u8]> = bytes[first_break + 1..]
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    if lines.pop()? != END {
        return None;
    }
    let last = lines.len().saturating_sub(1);
    let rows: Vec<&[u8]> = lines
        .into_iter()
        .enumerate()
        .map(|(i, l)| {
            if i < last {
                l.strip_suffix(b",")
            } else {
                Some(l)
            }
        })
        .collect::<Option<_>>()?;
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(rows.len() / MIN_PER_THREAD)
        .max(1);
    let parse = |part: &[&[u8]]| -> Option<Vec<Arc<SessionRow>>> {
        part.iter()
            .map(|l| serde_json::from_slice::<SessionRow>(l).ok().map(Arc::new))
            .collect()
    };
    let sessions = if threads == 1 {
        parse(&rows)?
    } else {
        let chunk = rows.len().div_ceil(threads);
        let parts: Vec<Option<Vec<Arc<SessionRow>>>> = std::thread::scope(|scope| {
            let handles: Vec<_> = rows
                .chunks(chunk)
                .map(|part| scope.spawn(move || parse(part)))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().ok().flatten())
                .collect()
        });
        let mut all = Vec::with_capacity(rows.len());
        for part in parts {
            all.extend(part?);
        }
        all
    };
    Some(ReadList {
        written_at: header.written_at,
        seq: header.seq,
        sessions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(i: usize) -> SessionRow {
        let mut meta = crate::meta::SessionMeta::new(format!("s{i:05}"), i as f64);
        meta.title = format!("title \"{i}\"\nwith a line");
        SessionRow::from_meta(&meta, Some(format!("preview {i}")), None)
    }

    fn unshared(rows: Vec<Arc<SessionRow>>) -> Vec<SessionRow> {
        rows.into_iter().map(|r| (*r).clone()).collect()
    }

    #[test]
    fn a_list_reads_back_by_lines_and_as_plain_json() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.json");
        for n in [0, 1, 3, 2000] {
            let rows: Vec<SessionRow> = (0..n).map(row).collect();
            let bytes = encode(12.5, 7, &rows).unwrap();
            // Valid JSON for any reader.
            let plain: SessionListFile = serde_json::from_slice(&bytes).unwrap();
            assert_eq!(plain.sessions, rows);
            // Laid out one row per line: read on several threads.
            let by_lines = decode_by_lines(&bytes).expect("by lines");
            assert_eq!((by_lines.seq, by_lines.written_at), (7, 12.5));
            assert_eq!(unshared(by_lines.sessions), rows);
            std::fs::write(&path, &bytes).unwrap();
            assert_eq!(unshared(read(&path).unwrap().sessions), rows);
        }
        // Compact JSON (an older layout, or written by hand): read whole.
        let rows: Vec<SessionRow> = (0..3).map(row).collect();
        let compact = serde_json::to_vec(&SessionListFile {
            version: 1,
            written_at: 1.0,
            seq: 2,
            sessions: rows.clone(),
        })
        .unwrap();
        assert!(decode_by_lines(&compact).is_none());
        std::fs::write(&path, &compact).unwrap();
        assert_eq!(unshared(read(&path).unwrap().sessions), rows);
        // A damaged row: an error, never a list missing the row.
        let mut bytes = encode(1.0, 1, &rows).unwrap();
        let at = bytes.iter().rposition(|b| *b == b'}').unwrap() - 3;
        bytes[at] = b'#';
        std::fs::write(&path, &bytes).unwrap();
        assert!(decode_by_lines(&bytes).is_none());
        assert!(read(&path).is_err());
    }
}
