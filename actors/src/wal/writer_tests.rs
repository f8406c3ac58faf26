//! The writer thread in process: group commit, a failed flush, rotation
//! and checkpoints, on a real log folder.

use std::time::Duration;

use super::*;

fn put(root: &Path, name: &str, bytes: Vec<u8>) -> Change {
    Change::Put {
        root: root.to_path_buf(),
        path: root.join(name),
        bytes,
    }
}

/// A job as `Wal::append` makes it, and where its answer arrives.
fn job(changes: &[Change]) -> (Msg, Receiver<io::Result<Ticket>>) {
    let (reply, rx) = crossbeam_channel::bounded(1);
    let job = Job {
        bytes: entry::encode(changes),
        roots: changes.iter().map(|c| root_of(c).to_path_buf()).collect(),
        feed: Vec::new(),
        reply,
    };
    (Msg::Append(job), rx)
}

fn segments(dir: &Path) -> Vec<u64> {
    let mut out: Vec<u64> = fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| segment_number(&e.unwrap().file_name().to_string_lossy()))
        .collect();
    out.sort_unstable();
    out
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let until = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn entries_queued_together_share_one_flush() {
    let dir = tempfile::tempdir().unwrap();
    let seg = Segment::create(dir.path(), 1).unwrap();
    let (tx, rx) = crossbeam_channel::unbounded();
    let mut answers = Vec::new();
    let mut bytes = 0;
    for i in 0..50 {
        let change = put(dir.path(), &format!("f{i}"), vec![b'x'; 100 + i]);
        bytes += entry::encode(std::slice::from_ref(&change)).len();
        let (msg, answer) = job(&[change]);
        tx.send(msg).unwrap();
        answers.push(answer);
    }
    // The writer starts with all 50 waiting: one write, one fdatasync.
    let flushes = Arc::new(AtomicU64::new(0));
    start(dir.path(), seg, rx, None, None, flushes.clone()).unwrap();
    for a in answers {
        a.recv().unwrap().unwrap();
    }
    assert_eq!(flushes.load(Ordering::Relaxed), 1);
    let log = dir.path().join(format!("{:016}.log", 1));
    assert_eq!(fs::metadata(log).unwrap().len(), bytes as u64);
}

#[test]
fn a_failed_flush_answers_its_whole_batch_and_the_next_goes_to_a_new_segment() {
    let dir = tempfile::tempdir().unwrap();
    let mut seg = Segment::create(dir.path(), 1).unwrap();
    // A handle that cannot write: every write of this segment fails.
    seg.file = File::open(&seg.path).unwrap();
    let (tx, rx) = crossbeam_channel::unbounded();
    let answers: Vec<_> = (0..3)
        .map(|i| {
            let (msg, answer) = job(&[put(dir.path(), &format!("f{i}"), b"x".to_vec())]);
            tx.send(msg).unwrap();
            answer
        })
        .collect();
    let flushes = Arc::new(AtomicU64::new(0));
    start(dir.path(), seg, rx, None, None, flushes.clone()).unwrap();
    for a in answers {
        assert!(
            a.recv().unwrap().is_err(),
            "nothing of the batch is acknowledged"
        );
    }
    // The next entry is written to segment 2 (past a possibly torn entry).
    let (msg, answer) = job(&[put(dir.path(), "later", b"y".to_vec())]);
    tx.send(msg).unwrap();
    drop(answer.recv().unwrap().unwrap());
    let second = dir.path().join(format!("{:016}.log", 2));
    assert!(fs::metadata(&second).unwrap().len() > 0);
    assert_eq!(flushes.load(Ordering::Relaxed), 2);
}

#[test]
fn a_checkpoint_waits_for_the_files_to_be_written_then_removes_the_segment() {
    let dir = tempfile::tempdir().unwrap();
    // The first segment made ahead: nothing rotates it early.
    crate::wal::spare::prepare(dir.path()).unwrap();
    let wal = Arc::new(Wal::spawn(dir.path(), 1, None, None).unwrap());
    let ticket = wal.append(&[put(dir.path(), "a", b"a".to_vec())]).unwrap();
    assert_eq!(segments(dir.path()), vec![1]);
    let closing = {
        let wal = wal.clone();
        std::thread::spawn(move || wal.close())
    };
    // The file is not written in place yet (the ticket is held): the
    // segment stays, and close waits.
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(segments(dir.path()), vec![1]);
    assert!(!closing.is_finished());
    drop(ticket);
    closing.join().unwrap();
    assert!(segments(dir.path()).is_empty(), "checkpointed and removed");
    assert!(!wal.is_open());
    // Closed: later entries are refused (the caller writes on its own).
    assert!(wal.append(&[put(dir.path(), "b", b"b".to_vec())]).is_err());
}

#[test]
fn a_full_segment_is_sealed_and_checkpointed_in_the_background() {
    let dir = tempfile::tempdir().unwrap();
    let wal = Wal::spawn(dir.path(), 1, None, None).unwrap();
    let big = vec![b'z'; (SEGMENT_BYTES / 2 + 1) as usize];
    for name in ["one", "two"] {
        drop(wal.append(&[put(dir.path(), name, big.clone())]).unwrap());
    }
    // Over SEGMENT_BYTES after the second flush: segment 2 takes the next
    // entries and segment 1 is checkpointed (its tickets are back).
    wait_for("segment 1's checkpoint", || segments(dir.path()) == vec![2]);
    drop(
        wal.append(&[put(dir.path(), "three", b"3".to_vec())])
            .unwrap(),
    );
    assert_eq!(segments(dir.path()), vec![2]);
}

#[test]
fn a_segment_made_ahead_takes_entries_over_its_zeros_and_replays_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    crate::wal::spare::prepare(dir.path()).unwrap();
    let wal = Wal::spawn(dir.path(), 1, None, None).unwrap();
    let tickets: Vec<Ticket> = (0..3)
        .map(|i| {
            wal.append(&[put(files.path(), &format!("f{i}"), vec![b'x'; 10 + i])])
                .unwrap()
        })
        .collect();
    let seg = dir.path().join(format!("{:016}.log", 1));
    assert_eq!(
        fs::metadata(&seg).unwrap().len(),
        crate::wal::spare::SPARE_BYTES as u64,
        "the spare became segment 1: written over, not grown"
    );
    // The next one is made ahead meanwhile.
    wait_for("the next spare", || {
        dir.path().join("segment.spare").exists()
    });
    // The log as a crash leaves it (its files never written in place):
    // every entry comes back, and the zeros after them are a clean end.
    let crashed = tempfile::tempdir().unwrap();
    fs::copy(&seg, crashed.path().join(seg.file_name().unwrap())).unwrap();
    let replayed = crate::wal::replay::replay(crashed.path(), None).unwrap();
    assert_eq!((replayed.entries, replayed.applied), (3, 3));
    assert!(!replayed.torn);
    for i in 0..3 {
        assert_eq!(
            fs::read(files.path().join(format!("f{i}"))).unwrap(),
            vec![b'x'; 10 + i]
        );
    }
    drop(tickets);
}

/// A log whose first segment is `seg`, as `Log::open` makes one.
fn log_over(dir: &Path, seg: Segment) -> super::super::Log {
    let (tx, rx) = crossbeam_channel::unbounded();
    start(dir, seg, rx, None, None, Arc::default()).unwrap();
    super::super::Log {
        writer: Some(Wal {
            tx,
            open: Arc::new(AtomicBool::new(true)),
            closing: Mutex::new(()),
            entries: AtomicU64::new(0),
        }),
        feed: None,
        unapplied: Default::default(),
        fault: None,
    }
}

#[test]
fn a_pack_is_staged_during_the_flush_and_put_in_place_only_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("s");
    fs::create_dir_all(root.join(".git/objects/pack")).unwrap();
    let logs = dir.path().join("wal");
    fs::create_dir_all(&logs).unwrap();
    let pack = put(&root, ".git/objects/pack/pack-1.pack", b"PACK".to_vec());
    let node = put(&root, "node.json", b"{}".to_vec());
    assert!(pack.is_content_addressed() && !node.is_content_addressed());

    // A flush that fails: the pack was written meanwhile under a
    // temporary name (which git never lists: a `git gc` running then
    // cannot delete it as unreachable), and removed; nothing in place.
    let mut seg = Segment::create(&logs, 1).unwrap();
    seg.file = File::open(&seg.path).unwrap();
    let log = log_over(&logs, seg);
    assert!(log.commit(vec![pack.clone(), node.clone()]).is_err());
    let packs = root.join(".git/objects/pack");
    assert_eq!(
        fs::read_dir(&packs).unwrap().count(),
        0,
        "no pack in place, no temporary file left"
    );
    assert!(
        !root.join("node.json").exists(),
        "nothing else before the flush"
    );

    // Flushed: everything, in order, the pack under its own name.
    assert!(log.commit(vec![pack, node]).is_ok());
    assert_eq!(fs::read(packs.join("pack-1.pack")).unwrap(), b"PACK");
    assert_eq!(fs::read_dir(&packs).unwrap().count(), 1);
    assert_eq!(fs::read(root.join("node.json")).unwrap(), b"{}");
    log.close();
}

#[test]
fn an_entry_whose_files_cannot_be_written_keeps_its_segments_for_replay() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("s");
    fs::create_dir_all(&root).unwrap();
    let logs = dir.path().join("wal");
    let feed = dir.path().join("feed");
    let (log, _) = super::super::Log::open(&logs, &feed).unwrap();
    // `blocked` is a file, so nothing can be written under it.
    fs::write(root.join("blocked"), b"a file").unwrap();
    let node = put(&root, "blocked/node.json", b"{\"n\": 1}".to_vec());
    let flushed = log.flush(vec![node]).unwrap();
    assert!(!log.awaits_replay(&root), "durable, not failed yet");
    assert!(flushed.apply_answered().is_err());
    assert!(log.awaits_replay(&root), "its session waits for the replay");
    // Later entries (another session's) are durable and applied, and the
    // checkpoint at the close drops no segment: the failed one is
    // replayed first, then the later ones over it.
    let other = dir.path().join("o");
    fs::create_dir_all(&other).unwrap();
    log.commit(vec![put(&other, "f", b"later".to_vec())])
        .unwrap();
    log.close();
    assert!(!segments(&logs).is_empty(), "the segments stay");
    drop(log);
    // The obstacle gone, the restart's replay writes the file.
    fs::remove_file(root.join("blocked")).unwrap();
    fs::create_dir(root.join("blocked")).unwrap();
    let (log, replayed) = super::super::Log::open(&logs, &feed).unwrap();
    assert!(replayed.entries >= 2, "{replayed:?}");
    assert_eq!(
        fs::read(root.join("blocked/node.json")).unwrap(),
        b"{\"n\": 1}"
    );
    assert_eq!(fs::read(other.join("f")).unwrap(), b"later");
    assert!(!log.awaits_replay(&root));
    log.close();
}
