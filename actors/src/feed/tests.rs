use std::fs;
use std::path::Path;

use super::*;
use crate::wal::{Change, Log};

fn event(n: u64) -> Vec<u8> {
    let mut e = ChangeEvent::new(ChangeKind::Commit, &format!("s{n}"), n as f64);
    e.turn = Some(n);
    e.to_bytes()
}

fn turns(page: &Page) -> Vec<u64> {
    page.events
        .iter()
        .map(|i| i.event["turn"].as_u64().unwrap_or(0))
        .collect()
}

/// Every event from the start, a page of `limit` at a time.
fn read_all(feed: &Feed, limit: usize) -> Vec<u64> {
    let mut out = Vec::new();
    let mut cursor = None;
    loop {
        let page = feed.read(cursor.as_ref(), limit).unwrap();
        if page.events.is_empty() {
            return out;
        }
        out.extend(turns(&page));
        let next = Cursor::parse(&page.next.encode()).unwrap();
        assert_eq!(next, page.next);
        cursor = Some(next);
    }
}

fn writer_feed(dir: &Path, segment_bytes: u64) -> (FeedWriter, Feed) {
    let w = FeedWriter::open(dir)
        .unwrap()
        .with_segment_bytes(segment_bytes);
    let shared = Shared::new(dir, w.next_seq() - 1);
    (w, Feed::new(shared))
}

#[test]
fn pages_follow_each_other_across_segments_and_reopening() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(DIR);
    let (mut w, _) = writer_feed(&dir, 300);
    for n in 1..=40u64 {
        let e = event(n);
        let at = LogPosition {
            segment: 1,
            entry: n as u32,
        };
        w.append(&[(at, e.as_slice())]).unwrap();
    }
    drop(w);
    assert!(writer::segments(&dir).unwrap().len() > 3, "rotated");
    // Reopened: the same records, the next sequence number after them.
    let (w, feed) = writer_feed(&dir, 300);
    assert_eq!(w.next_seq(), 41);
    assert_eq!(read_all(&feed, 7), (1..=40).collect::<Vec<_>>());
    assert_eq!(read_all(&feed, 1000), (1..=40).collect::<Vec<_>>());
    // The end cursor reads nothing until something comes.
    let end = feed.end().unwrap();
    assert!(feed.read(Some(&end), 10).unwrap().events.is_empty());
    assert_eq!(end.seq, 41);
}

#[test]
fn records_are_hidden_until_their_files_are_in_place() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(DIR);
    let (mut w, _) = writer_feed(&dir, 1 << 20);
    let shared = Shared::new(&dir, 0);
    let feed = Feed::new(shared.clone());
    let (a, b) = (event(1), event(2));
    let first = w
        .append(&[(LogPosition::default(), &a), (LogPosition::default(), &b)])
        .unwrap();
    let holds = shared.written(2, &[first, first + 1]);
    assert_eq!(feed.visible(), 0);
    let mut holds = holds.into_iter();
    let one = holds.next();
    let two = holds.next();
    drop(two);
    // The second is in place, the first not: neither is shown.
    assert_eq!(feed.visible(), 0);
    drop(one);
    assert_eq!(feed.visible(), 2);
    assert_eq!(read_all(&feed, 10), vec![1, 2]);
}

#[test]
fn bad_cursors_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(DIR);
    let (mut w, _) = writer_feed(&dir, 1 << 20);
    let e = event(1);
    w.append(&[(LogPosition::default(), &e)]).unwrap();
    let feed = Feed::new(Shared::new(&dir, 1));
    for text in ["", "x", "1-1", "1-2-0", "0-0-0", "1-1-0-0", "zz-1-0"] {
        assert!(Cursor::parse(text).is_err(), "{text}");
    }
    // A well-formed cursor that points inside a record.
    let inside = Cursor::parse("1-1-5").unwrap();
    assert!(matches!(
        feed.read(Some(&inside), 10),
        Err(FeedError::InvalidCursor(_))
    ));
    // One from the future.
    let future = Cursor::parse("9-1-0").unwrap();
    assert!(feed.read(Some(&future), 10).is_err());
}

#[test]
fn a_torn_tail_is_cut_and_the_log_brings_its_events_back_once() {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let root = state.join("sessions/s");
    fs::create_dir_all(&root).unwrap();
    let (wal_dir, feed_dir) = (state.join("wal"), state.join(DIR));
    let (log, _) = Log::open(&wal_dir, &feed_dir).unwrap();
    for n in 1..=5u64 {
        log.commit(vec![
            Change::Put {
                root: root.clone(),
                path: root.join(format!("f{n}")),
                bytes: vec![n as u8],
            },
            Change::Feed {
                root: root.clone(),
                event: event(n),
            },
        ])
        .unwrap();
    }
    let feed = log.feed().unwrap();
    assert_eq!(read_all(&feed, 2), vec![1, 2, 3, 4, 5]);
    // The state as a crash leaves it: the log not checkpointed, and the
    // feed's last record torn.
    let crashed = tmp.path().join("crashed");
    copy_tree(&state, &crashed);
    drop(log);
    let seg = crashed.join(DIR).join(writer::segment_name(1));
    let len = fs::metadata(&seg).unwrap().len();
    fs::OpenOptions::new()
        .write(true)
        .open(&seg)
        .unwrap()
        .set_len(len - 3)
        .unwrap();
    let (log, replayed) = Log::open(&crashed.join("wal"), &crashed.join(DIR)).unwrap();
    assert_eq!(replayed.feed_events, 1);
    let feed = log.feed().unwrap();
    assert_eq!(read_all(&feed, 3), vec![1, 2, 3, 4, 5]);
    // And once more, nothing repeated; new events follow.
    log.commit(vec![Change::Feed {
        root: root.clone(),
        event: event(6),
    }])
    .unwrap();
    assert_eq!(read_all(&feed, 100), vec![1, 2, 3, 4, 5, 6]);
    drop(log);
    let (log, replayed) = Log::open(&crashed.join("wal"), &crashed.join(DIR)).unwrap();
    assert_eq!(replayed.feed_events, 0);
    assert_eq!(read_all(&log.feed().unwrap(), 100), vec![1, 2, 3, 4, 5, 6]);
}

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &target);
        } else {
            fs::copy(e.path(), &target).unwrap();
        }
    }
}
