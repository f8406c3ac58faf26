/// git's own ref update: it holds `<ref>.lock`, prunes the loose ref
/// (as `git pack-refs` does) and lets go. An update of the ref made
/// meanwhile waits for the lock, so git never deletes it unseen; the
/// lock and the spare are left as they should be.
#[test]
fn a_ref_update_waits_for_gits_lock_and_is_never_pruned_unseen() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("main");
    let lock = dir.path().join("main.lock");
    let spare = dir.path().join("spares").join("main");
    fs::write(&target, "old\n").unwrap();
    // git takes its lock and reads the old value...
    fs::write(&lock, "").unwrap();
    let writer = {
        let (target, spare) = (target.clone(), spare.clone());
        std::thread::spawn(move || replace_ref(&target, &spare, b"new\n"))
    };
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert_eq!(fs::read(&target).unwrap(), b"old\n", "the update waited");
    // ...prunes the loose ref it packed, and lets go.
    fs::remove_file(&target).unwrap();
    fs::remove_file(&lock).unwrap();
    writer.join().unwrap().unwrap();
    assert_eq!(fs::read(&target).unwrap(), b"new\n", "the update is there");
    assert!(!lock.exists(), "no lock left behind");
    // Once more, with a ref in place: the old file becomes the spare.
    replace_ref(&target, &spare, b"newer\n").unwrap();
    assert_eq!(fs::read(&target).unwrap(), b"newer\n");
    assert!(!lock.exists());
    // A lock left by a crash (older than 10 s) is taken over.
    fs::write(&lock, "stale").unwrap();
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
    fs::File::options()
        .write(true)
        .open(&lock)
        .unwrap()
        .set_modified(old)
        .unwrap();
    replace_ref(&target, &spare, b"newest\n").unwrap();
    assert_eq!(fs::read(&target).unwrap(), b"newest\n");
    assert!(!lock.exists());
    // A lock held (fresh) for longer than the wait: a clear error,
    // nothing changed.
    fs::write(&lock, "").unwrap();
    let err = replace_ref(&target, &spare, b"never\n").unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
    assert_eq!(fs::read(&target).unwrap(), b"newest\n");
}

use super::*;

/// `git gc` deletes an `.idx` in `objects/pack` with no `.pack`
/// beside it: a temporary index named after its target (the old
/// naming, checked here so the test shows git still does it) went
/// while being written; ours is left alone.
#[test]
fn git_gc_leaves_a_temporary_pack_index_alone() {
    let dir = tempfile::tempdir().unwrap();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(dir.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    };
    git(&["init", "-q"]);
    fs::write(dir.path().join("f"), "x").unwrap();
    git(&["add", "f"]);
    git(&[
        "-c",
        "user.name=a",
        "-c",
        "user.email=a@b",
        "commit",
        "-qm",
        "one",
    ]);
    let pack_dir = dir.path().join(".git/objects/pack");
    fs::create_dir_all(&pack_dir).unwrap();
    let name = "pack-0123456789abcdef0123456789abcdef01234567.idx";
    let ours = pack_dir.join(tmp_name(name));
    let old = pack_dir.join(format!("{TMP_PREFIX}0123-{name}"));
    fs::write(&ours, b"being written").unwrap();
    fs::write(&old, b"being written").unwrap();
    git(&["gc", "--quiet", "--prune=now"]);
    assert!(!old.exists(), "git gc deletes an index without its pack");
    assert!(ours.exists(), "a temporary file of ours is left alone");
}

#[test]
fn an_overwrite_in_place_leaves_exactly_the_new_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("meta.json");
    overwrite_unsynced(&p, b"a longer first version").unwrap();
    overwrite_unsynced(&p, b"short").unwrap();
    assert_eq!(fs::read(&p).unwrap(), b"short");
    overwrite_unsynced(&p, b"grown again, longer").unwrap();
    assert_eq!(fs::read(&p).unwrap(), b"grown again, longer");
    overwrite_unsynced(&p, b"same size, new txt!").unwrap();
    assert_eq!(fs::read(&p).unwrap(), b"same size, new txt!");
}

#[test]
fn atomic_write_replaces_and_leaves_no_temp() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("a.json");
    atomic_write(&p, b"one").unwrap();
    atomic_write(&p, b"two").unwrap();
    assert_eq!(fs::read(&p).unwrap(), b"two");
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn a_replace_through_a_spare_reuses_the_same_two_inodes() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("refs/heads/main");
    let spare = dir.path().join("spare/refs/heads/main");
    fs::create_dir_all(target.parent().unwrap()).unwrap();
    // First move: no ref yet, the spare becomes it.
    replace_through_spare(&target, &spare, b"one\n").unwrap();
    assert_eq!(fs::read(&target).unwrap(), b"one\n");
    assert!(!spare.exists());
    replace_through_spare(&target, &spare, b"two\n").unwrap();
    let inodes = |p: &Path| fs::metadata(p).unwrap().ino();
    let (a, b) = (inodes(&target), inodes(&spare));
    for body in [&b"three\n"[..], b"4\n", b"five\n"] {
        replace_through_spare(&target, &spare, body).unwrap();
        assert_eq!(fs::read(&target).unwrap(), body);
    }
    // Three exchanges: the names have swapped an odd number of times.
    assert_eq!((inodes(&target), inodes(&spare)), (b, a));
    assert_eq!(fs::read(&spare).unwrap(), b"4\n", "the previous value");
    assert_eq!(fs::read_dir(target.parent().unwrap()).unwrap().count(), 1);
}

#[test]
fn files_and_folders_are_private_whatever_the_umask() {
    let dir = tempfile::tempdir().unwrap();
    // SAFETY: umask only changes this process's creation mask.
    let old = unsafe { libc::umask(0) };
    let sub = dir.path().join("a/b");
    let made = create_dir_durable(&sub);
    let written = atomic_write(&sub.join("f.json"), b"{}");
    unsafe { libc::umask(old) };
    made.unwrap();
    written.unwrap();
    let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&sub), 0o700);
    assert_eq!(mode(&dir.path().join("a")), 0o700);
    assert_eq!(mode(&sub.join("f.json")), 0o600);
}

#[test]
fn remove_tmp_files_only_touches_temp_files() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join(format!("{TMP_PREFIX}x")), b"x").unwrap();
    fs::write(dir.path().join("keep"), b"k").unwrap();
    assert_eq!(remove_tmp_files(dir.path()).unwrap(), 1);
    assert!(dir.path().join("keep").exists());
}
