use super::entry::push_varint;
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
            idx.remove(Path::new(&path)).unwrap();
            want.remove(path.as_bytes());
        } else {
            idx.upsert(Path::new(&path), &meta, id).unwrap();
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
    // Everything in memory (the file is replaced by one git cannot read).
    idx.freeze_at = usize::MAX;
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
            0 => idx.remove(Path::new(&p)).unwrap(),
            // In place: the same path with other stat data.
            1 => idx.upsert(Path::new(&p), &other, id).unwrap(),
            _ => idx.upsert(Path::new(&p), &meta, id).unwrap(),
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
        idx.upsert(Path::new(name), &fs::metadata(&p).unwrap(), id)
            .unwrap();
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
    idx.upsert(Path::new("meta.json"), &fs::metadata(&p).unwrap(), id)
        .unwrap();
    let b = dir.path().join("b.json");
    fs::write(&b, "b").unwrap();
    idx.upsert(
        Path::new("b.json"),
        &fs::metadata(&b).unwrap(),
        repo.blob(b"b").unwrap(),
    )
    .unwrap();
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
        idx.upsert(Path::new(name), &fs::metadata(&p).unwrap(), id)
            .unwrap();
    };
    for n in ["m/2", "m/4", "z", "m/3", "a", "m/1", "m/22"] {
        put(&mut idx, n, n);
    }
    put(&mut idx, "m/3", "changed");
    idx.remove(Path::new("m/2")).unwrap();
    idx.remove(Path::new("a")).unwrap();
    idx.remove(Path::new("missing")).unwrap();
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
        idx.upsert(Path::new(name), &fs::metadata(&p).unwrap(), id)
            .unwrap();
    }
    idx.remove(Path::new("c")).unwrap();
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

/// With small freezing thresholds: random edits inside the frozen run,
/// before it and after it, writes of the changes, and now and then the
/// file replaced by libgit2's own write of it (as `git status` does):
/// after every write the file holds exactly what a whole write of the
/// expected entries holds, and most entries are out of memory.
#[test]
fn frozen_runs_leave_the_same_file_as_a_whole_write() {
    let dir = tempfile::tempdir().unwrap();
    let repo = crate::git::init_repo(dir.path()).unwrap();
    let meta = fs::metadata(dir.path()).unwrap();
    let other = fs::metadata(dir.path().parent().unwrap()).unwrap();
    let path = repo.path().join("index");
    let mut idx = GitIndex::from_entries(path.clone(), BTreeMap::new());
    idx.freeze_at = 8;
    idx.keep = 3;
    let mut want: BTreeMap<Vec<u8>, Fixed> = BTreeMap::new();
    let mut seed = 11u64;
    let mut out_of_memory = 0;
    for step in 0..3000u64 {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let r = seed >> 33;
        let p = match r % 10 {
            0 => format!("context/commits/c{}.json", r % 50),
            1 => "meta.json".to_string(),
            // Anywhere in the history so far (inside the run, often).
            2 => {
                let n = (seed >> 40) % (step + 1);
                format!("history/{:02}/{n:06}-u-x.json", n / 100 % 100)
            }
            // A turn's new file, at the end of the history.
            _ => format!("history/{:02}/{step:06}-a-y.json", step / 100 % 100),
        };
        let id = Oid::from_bytes(&[(step % 251) as u8; 20]).unwrap();
        let stat = if (seed >> 20).is_multiple_of(3) {
            &other
        } else {
            &meta
        };
        if (seed >> 24).is_multiple_of(7) {
            idx.remove(Path::new(&p)).unwrap();
            want.remove(p.as_bytes());
        } else {
            idx.upsert(Path::new(&p), stat, id).unwrap();
            let fixed = fixed_part(p.len(), &Stat::of(stat), FILE_MODE, id);
            want.insert(p.clone().into_bytes(), flagged(p.as_bytes(), fixed));
        }
        if step % 4 == 0 {
            if step % 200 == 0 && step > 0 {
                let mut theirs = git2::Index::open(&path).unwrap();
                theirs.write().unwrap();
            }
            idx.write().unwrap();
            out_of_memory = out_of_memory.max(want.len() - idx.in_memory());
            let fresh = GitIndex::from_entries(path.clone(), want.clone());
            assert!(
                fs::read(&path).unwrap() == whole_file(&fresh),
                "step {step}: the file differs from a whole write"
            );
            assert_eq!(idx.len(), want.len());
        }
    }
    assert!(
        out_of_memory > 1000,
        "{out_of_memory} entries frozen at most"
    );
    // git reads it as it is.
    idx.write().unwrap();
    let listed = crate::git::run_git(dir.path(), &["ls-files"]);
    let got: std::collections::BTreeSet<&str> = listed.lines().collect();
    let missing: Vec<String> = want
        .keys()
        .map(|k| String::from_utf8_lossy(k).into_owned())
        .filter(|k| !got.contains(k.as_str()))
        .collect();
    assert!(missing.is_empty(), "git does not list {missing:?}");
}

/// A loaded index whose file is exactly what it writes freezes at once,
/// and an edit inside the run afterwards reads it back.
#[test]
fn a_loaded_index_freezes_without_a_write_and_thaws_for_an_edit_inside() {
    let names: Vec<String> = (0..400)
        .map(|n| format!("history/{:02}/{n:06}-u-x.json", n / 100))
        .collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let dir = tempfile::tempdir().unwrap();
    let repo = crate::git::init_repo(dir.path()).unwrap();
    let mut index = repo.index().unwrap();
    for name in &refs {
        let p = dir.path().join(name);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(&p, name).unwrap();
        index.add_path(Path::new(name)).unwrap();
    }
    let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
    let sig = git2::Signature::now("t", "t@t").unwrap();
    repo.commit(Some("HEAD"), &sig, &sig, "one", &tree, &[])
        .unwrap();
    index.write().unwrap();
    // libgit2 wrote the file: held whole until this index writes it.
    let mut first = GitIndex::load(&repo).unwrap();
    assert_eq!(first.in_memory(), 400);
    first.write().unwrap();
    let reopened = crate::git::open_repo(dir.path()).unwrap();
    let (mut idx, repaired) = GitIndex::load_checked(&reopened).unwrap();
    assert!(!repaired);
    assert_eq!(idx.len(), 400);
    assert!(idx.in_memory() < 30, "{} in memory", idx.in_memory());
    let name = "history/01/000150-u-x.json";
    fs::write(dir.path().join(name), "changed").unwrap();
    let id = repo.blob(b"changed").unwrap();
    let m = fs::metadata(dir.path().join(name)).unwrap();
    idx.upsert(Path::new(name), &m, id).unwrap();
    idx.write().unwrap();
    assert!(idx.in_memory() < 30, "frozen again after the write");
    let git = |args: &[&str]| crate::git::run_git(dir.path(), args);
    assert_eq!(
        git(&["diff", "--cached", "--name-only"]),
        format!("{name}\n")
    );
    assert_eq!(git(&["ls-files"]).lines().count(), 400);
}
