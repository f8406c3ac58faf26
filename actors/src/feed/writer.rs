//! The feed's appending side: owned by the write-ahead log (its writer
//! thread appends the records of each flushed batch, startup replay the
//! records a crash left out). Segments are `<first seq:016>.feed` files in
//! the feed's folder; a segment is started when the first record that
//! goes in it is written, so none is ever empty.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::record::{self, LogPosition, Record};
use crate::fsio;

/// A segment this big takes no more records (its whole tail is read at
/// startup, so it stays small).
const SEGMENT_BYTES: u64 = 8 << 20;

/// `<16 digits>.feed`: the segment's first sequence number.
pub fn segment_first(name: &str) -> Option<u64> {
    let digits = name.strip_suffix(".feed")?;
    (digits.len() == 16 && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

pub fn segment_name(first: u64) -> String {
    format!("{first:016}.feed")
}

/// The feed's segments, oldest first (their first sequence numbers).
pub fn segments(dir: &Path) -> io::Result<Vec<u64>> {
    let mut out = Vec::new();
    match fs::read_dir(dir) {
        Ok(entries) => {
            for e in entries {
                if let Some(n) = segment_first(&e?.file_name().to_string_lossy()) {
                    out.push(n);
                }
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    out.sort_unstable();
    Ok(out)
}

pub struct FeedWriter {
    dir: PathBuf,
    /// A segment this big takes no more records.
    segment_bytes: u64,
    /// The open segment: its first sequence number, file and size.
    current: Option<(u64, File, u64)>,
    next_seq: u64,
    last_position: LogPosition,
}

impl FeedWriter {
    /// Open the feed in `dir`: a torn or damaged tail (a crash while a
    /// record was written; the log still holds it) is cut off, so the next
    /// record follows the last whole one.
    pub fn open(dir: &Path) -> io::Result<FeedWriter> {
        fsio::create_private_dir_all(dir)?;
        let mut writer = FeedWriter {
            dir: dir.to_path_buf(),
            segment_bytes: SEGMENT_BYTES,
            current: None,
            next_seq: 1,
            last_position: LogPosition::default(),
        };
        let segments = segments(dir)?;
        for (i, first) in segments.iter().enumerate().rev() {
            let path = dir.join(segment_name(*first));
            let bytes = fs::read(&path)?;
            let records = record::decode_all(&bytes);
            let whole = records.last().map_or(0, |r| r.1);
            let is_last = i + 1 == segments.len();
            if whole < bytes.len() {
                tracing::warn!(path = %path.display(), kept = whole, dropped = bytes.len() - whole, "change feed: a torn tail is cut off (the write-ahead log brings those records back)");
                let f = OpenOptions::new().write(true).open(&path)?;
                f.set_len(whole as u64)?;
                f.sync_all()?;
            }
            if let Some((last, _)) = records.last() {
                writer.next_seq = last.seq + 1;
                writer.last_position = last.logged_at;
                if is_last {
                    let file = OpenOptions::new().append(true).open(&path)?;
                    writer.current = Some((*first, file, whole as u64));
                }
                break;
            }
            // A segment with no whole record (a crash right after it was
            // started): it is removed and the one before read instead.
            fs::remove_file(&path)?;
            fsio::fsync_dir(dir)?;
            writer.next_seq = *first;
        }
        Ok(writer)
    }

    /// Segments of at most about `bytes` (tests of the rotation).
    pub fn with_segment_bytes(mut self, bytes: u64) -> FeedWriter {
        self.segment_bytes = bytes;
        self
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The sequence number the next record gets.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// The log position of the last record (events logged after it are
    /// not in the feed yet).
    pub fn last_position(&self) -> LogPosition {
        self.last_position
    }

    /// Append `events` (each with the log position it was logged at), in
    /// order, with one write and no fsync (the log's checkpoint makes the
    /// feed durable with the rest). Returns the first sequence number
    /// given. On an error nothing is taken (a partial write is cut off),
    /// so the same events can be appended again.
    pub fn append(&mut self, events: &[(LogPosition, &[u8])]) -> io::Result<u64> {
        let first_seq = self.next_seq;
        if events.is_empty() {
            return Ok(first_seq);
        }
        if self
            .current
            .as_ref()
            .is_none_or(|(_, _, size)| *size >= self.segment_bytes)
        {
            self.start_segment()?;
        }
        let mut bytes = Vec::with_capacity(events.iter().map(|e| e.1.len() + 32).sum());
        let mut position = self.last_position;
        for (i, (at, event)) in events.iter().enumerate() {
            position = position.max(*at);
            Record {
                seq: first_seq + i as u64,
                logged_at: position,
                event: event.to_vec(),
            }
            .encode_into(&mut bytes);
        }
        let Some((_, file, size)) = self.current.as_mut() else {
            return Err(io::Error::other("change feed: no open segment"));
        };
        if let Err(e) = file.write_all(&bytes) {
            let _ = file.set_len(*size);
            return Err(e);
        }
        *size += bytes.len() as u64;
        self.next_seq += events.len() as u64;
        self.last_position = position;
        Ok(first_seq)
    }

    /// Make what was appended durable (used when there is no log to do it
    /// at its checkpoint).
    pub fn sync(&self) -> io::Result<()> {
        match &self.current {
            Some((_, file, _)) => file.sync_data(),
            None => Ok(()),
        }
    }

    fn start_segment(&mut self) -> io::Result<()> {
        let path = self.dir.join(segment_name(self.next_seq));
        let file = OpenOptions::new()
            .append(true)
            .create(true)
            .mode(fsio::FILE_MODE)
            .open(&path)?;
        fsio::fsync_dir(&self.dir)?;
        let size = file.metadata()?.len();
        self.current = Some((self.next_seq, file, size));
        Ok(())
    }
}
