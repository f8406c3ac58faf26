//! Reading the feed from a cursor.

use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use super::record::{Record, HEADER};
use super::writer::{segment_name, segments};

/// Where a reader is: the next sequence number, the segment (by its first
/// sequence number) and the offset it starts at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    pub seq: u64,
    file: u64,
    offset: u64,
}

impl Cursor {
    /// The opaque text clients hold.
    pub fn encode(&self) -> String {
        format!("{:x}-{:x}-{:x}", self.seq, self.file, self.offset)
    }

    pub fn parse(text: &str) -> Result<Cursor, FeedError> {
        let bad = || FeedError::InvalidCursor(text.chars().take(64).collect());
        let mut parts = text.split('-');
        let mut next = || {
            parts
                .next()
                .filter(|p| !p.is_empty() && p.len() <= 16)
                .and_then(|p| u64::from_str_radix(p, 16).ok())
        };
        let (seq, file, offset) = match (next(), next(), next()) {
            (Some(s), Some(f), Some(o)) => (s, f, o),
            _ => return Err(bad()),
        };
        if parts.next().is_some() || seq == 0 || file == 0 || file > seq {
            return Err(bad());
        }
        Ok(Cursor { seq, file, offset })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum FeedError {
    #[error("not a cursor of this feed: {0}")]
    InvalidCursor(String),
    #[error("the feed no longer holds the events at this cursor")]
    Expired,
    #[error("the change feed is damaged at sequence {0}")]
    Damaged(u64),
    #[error(transparent)]
    Io(#[from] io::Error),
}

impl FeedError {
    pub fn kind(&self) -> crate::ErrorKind {
        match self {
            FeedError::InvalidCursor(_) => crate::ErrorKind::BadRequest,
            FeedError::Expired => crate::ErrorKind::NotFound,
            FeedError::Damaged(_) | FeedError::Io(_) => crate::ErrorKind::Internal,
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            FeedError::InvalidCursor(_) => "invalid_cursor",
            FeedError::Expired => "cursor_expired",
            FeedError::Damaged(_) => "feed_damaged",
            FeedError::Io(_) => "storage_error",
        }
    }
}

/// One event as a reader gets it.
#[derive(Debug, Clone)]
pub struct Item {
    pub seq: u64,
    /// Where to continue after this event.
    pub cursor: Cursor,
    pub event: serde_json::Value,
}

#[derive(Debug, Clone)]
pub struct Page {
    pub events: Vec<Item>,
    /// Where to continue (after the last event, or where the reader was).
    pub next: Cursor,
    /// The last sequence number visible when the page was read.
    pub visible: u64,
}

fn start(dir: &Path) -> io::Result<Cursor> {
    let first = segments(dir)?.first().copied().unwrap_or(1);
    Ok(Cursor {
        seq: first,
        file: first,
        offset: 0,
    })
}

/// The next whole record of `r`, with its framed length; `None` at the
/// end of what is written.
fn next_record(r: &mut impl Read) -> io::Result<Option<(Record, u64)>> {
    let mut header = [0u8; HEADER];
    match r.read_exact(&mut header) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_le_bytes([header[4], header[5], header[6], header[7]]) as usize;
    if len > 1 << 20 {
        return Ok(None);
    }
    let mut bytes = header.to_vec();
    bytes.resize(HEADER + len, 0);
    match r.read_exact(&mut bytes[HEADER..]) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    Ok(Record::decode(&bytes).map(|(rec, n)| (rec, n as u64)))
}

/// Walk from `cursor` through records up to `visible`, calling `take` on
/// each until it returns false; the cursor after the last one taken.
fn walk(
    dir: &Path,
    cursor: Cursor,
    visible: u64,
    mut take: impl FnMut(&Record, Cursor) -> bool,
) -> Result<Cursor, FeedError> {
    let mut cur = cursor;
    let mut first_read = true;
    while cur.seq <= visible {
        let file = match File::open(dir.join(segment_name(cur.file))) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(FeedError::Expired),
            Err(e) => return Err(e.into()),
        };
        let len = file.metadata()?.len();
        let mut r = BufReader::new(file);
        r.seek(SeekFrom::Start(cur.offset))?;
        while cur.seq <= visible {
            let Some((rec, n)) = next_record(&mut r)? else {
                if cur.offset < len {
                    // Not the segment's end, and no record: the cursor
                    // points inside one (or the segment is damaged).
                    return Err(if first_read {
                        FeedError::InvalidCursor(cur.encode())
                    } else {
                        FeedError::Damaged(cur.seq)
                    });
                }
                break;
            };
            if rec.seq != cur.seq {
                return Err(if first_read {
                    FeedError::InvalidCursor(cur.encode())
                } else {
                    FeedError::Damaged(cur.seq)
                });
            }
            first_read = false;
            let after = Cursor {
                seq: cur.seq + 1,
                file: cur.file,
                offset: cur.offset + n,
            };
            if !take(&rec, after) {
                return Ok(cur);
            }
            cur = after;
        }
        if cur.seq > visible {
            break;
        }
        // The end of this segment: the next one starts at `cur.seq`.
        if !dir.join(segment_name(cur.seq)).exists() {
            return Err(FeedError::Damaged(cur.seq));
        }
        cur = Cursor {
            seq: cur.seq,
            file: cur.seq,
            offset: 0,
        };
        first_read = false;
    }
    Ok(cur)
}

pub fn read(
    dir: &Path,
    cursor: Option<&Cursor>,
    limit: usize,
    visible: u64,
) -> Result<Page, FeedError> {
    let from = match cursor {
        Some(c) => *c,
        None => start(dir)?,
    };
    if from.seq > visible + 1 {
        return Err(FeedError::InvalidCursor(from.encode()));
    }
    let limit = limit.max(1);
    let mut events = Vec::new();
    let next = walk(dir, from, visible, |rec, after| {
        if events.len() >= limit {
            return false;
        }
        let event = serde_json::from_slice(&rec.event).unwrap_or(serde_json::Value::Null);
        events.push(Item {
            seq: rec.seq,
            cursor: after,
            event,
        });
        true
    })?;
    Ok(Page {
        events,
        next,
        visible,
    })
}

/// The cursor after every event up to `visible`.
pub fn end(dir: &Path, visible: u64) -> Result<Cursor, FeedError> {
    // The segment holding `visible + 1` is the last that starts at or
    // before it; walk only that one.
    let from = segments(dir)?
        .into_iter()
        .rfind(|first| *first <= visible + 1)
        .map(|first| Cursor {
            seq: first,
            file: first,
            offset: 0,
        });
    match from {
        Some(c) => walk(dir, c, visible, |_, _| true),
        None => start(dir).map_err(FeedError::from),
    }
}
