//! The pack readers fed what git itself writes: packs with offset and
//! reference deltas from `git pack-objects`, and bundles from `git bundle
//! create`, not only the store's own packs.

use std::path::Path;
use std::process::{Command, Stdio};

use super::entry::{decode_header, OFS_DELTA, REF_DELTA};
use super::{measure, read_header, HEADER_LEN};
use crate::git::bundle::{read_bundle, BundleError, ImportLimits};

fn git(dir: &Path, args: &[&str]) -> Vec<u8> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// A repository whose one file grows over 40 commits (each version a few
/// lines more than the last: git stores most of them as deltas), on two
/// branches.
fn history(dir: &Path) {
    git(dir, &["init", "-q"]);
    let mut text = String::new();
    for i in 0..40 {
        for j in 0..30 {
            text.push_str(&format!(
                "line {j} of version {i}: the parser reads the tokens\n"
            ));
        }
        std::fs::write(dir.join("notes.md"), &text).unwrap();
        std::fs::write(
            dir.join(format!("turn-{i}.json")),
            format!("{{\"turn\": {i}}}"),
        )
        .unwrap();
        git(dir, &["add", "-A"]);
        git(dir, &["commit", "-q", "-m", &format!("turn {i}")]);
        if i == 20 {
            git(dir, &["branch", "retry-1"]);
        }
    }
}

/// `git pack-objects` of everything, with offset deltas or reference ones.
fn pack_objects(dir: &Path, offsets: bool) -> Vec<u8> {
    let mut cmd = Command::new("git");
    cmd.arg("-C")
        .arg(dir)
        .args(["pack-objects", "--all", "--stdout", "-q"]);
    if offsets {
        cmd.arg("--delta-base-offset");
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    // No revision on stdin: `--all` names every ref.
    child.stdin.take().unwrap().write_all(b"").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "git pack-objects failed");
    out.stdout
}

/// The type of every entry, walking the pack as `measure` does.
fn entry_kinds(pack: &[u8]) -> Vec<u8> {
    let (_, count) = read_header(pack).unwrap();
    let mut kinds = Vec::new();
    let mut pos = HEADER_LEN;
    for _ in 0..count {
        let (kind, size, after) = decode_header(pack, pos).unwrap();
        let data_at = match kind {
            OFS_DELTA => super::entry::skip_base_offset(pack, after).unwrap(),
            REF_DELTA => after + 20,
            _ => after,
        };
        let (used, _) = super::entry::inflate_bounded(&pack[data_at..], size).unwrap();
        pos = data_at + used;
        kinds.push(kind);
    }
    assert_eq!(pos, pack.len() - 20, "the entries end at the trailer");
    kinds
}

/// Sum of every object's size as git reports it.
fn real_size(dir: &Path) -> u64 {
    let listing = git(
        dir,
        &[
            "cat-file",
            "--batch-all-objects",
            "--batch-check=%(objectsize)",
        ],
    );
    String::from_utf8(listing)
        .unwrap()
        .lines()
        .map(|l| l.parse::<u64>().unwrap())
        .sum()
}

#[test]
fn git_delta_packs_are_measured_entry_by_entry() {
    let dir = tempfile::tempdir().unwrap();
    history(dir.path());
    let objects = String::from_utf8(git(dir.path(), &["rev-list", "--all", "--objects"]))
        .unwrap()
        .lines()
        .count() as u32;
    let real = real_size(dir.path());
    for offsets in [true, false] {
        let pack = pack_objects(dir.path(), offsets);
        let kinds = entry_kinds(&pack);
        let delta = if offsets { OFS_DELTA } else { REF_DELTA };
        assert!(
            kinds.iter().filter(|k| **k == delta).count() >= 10,
            "git wrote deltas of kind {delta}: {kinds:?}"
        );
        let m = measure(&pack, ImportLimits::default()).unwrap();
        assert_eq!(m.objects, objects);
        // Deltas count their own data and their result: at least the
        // objects' real sizes, never less.
        assert!(m.unpacked >= real, "{} < {real}", m.unpacked);
        // Just under what it unpacks to: refused.
        let tight = ImportLimits {
            max_unpacked: real - 1,
            max_objects: objects,
        };
        assert!(matches!(
            measure(&pack, tight),
            Err(BundleError::TooLarge(_))
        ));
        let few = ImportLimits {
            max_unpacked: u64::MAX,
            max_objects: objects - 1,
        };
        assert!(matches!(
            measure(&pack, few),
            Err(BundleError::TooManyObjects(..))
        ));
        // Every cut inside its entries is refused, none panics (the
        // trailer's checksum is libgit2's indexer's to check).
        let entries_end = pack.len() - 20;
        for cut in (0..entries_end).step_by(97).chain([entries_end - 1]) {
            assert!(measure(&pack[..cut], ImportLimits::default()).is_err());
        }
    }
}

#[test]
fn a_bundle_from_git_reads_into_a_repository_git_accepts() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir(&src).unwrap();
    history(&src);
    let bundle = dir.path().join("all.bundle");
    git(
        &src,
        &["bundle", "create", "-q", bundle.to_str().unwrap(), "--all"],
    );
    let bytes = std::fs::read(&bundle).unwrap();
    let dest = dir.path().join("dest");
    let repo = read_bundle(&bytes, &dest, ImportLimits::default()).unwrap();
    let main = repo.find_branch("main", git2::BranchType::Local).unwrap();
    let retry = repo
        .find_branch("retry-1", git2::BranchType::Local)
        .unwrap();
    let head_of = |dir: &Path, name: &str| {
        String::from_utf8(git(dir, &["rev-parse", name]))
            .unwrap()
            .trim()
            .to_string()
    };
    assert_eq!(
        main.get().target().unwrap().to_string(),
        head_of(&src, "main")
    );
    assert_eq!(
        retry.get().target().unwrap().to_string(),
        head_of(&src, "retry-1")
    );
    git(&dest, &["fsck", "--strict", "--no-dangling"]);
    assert_eq!(
        std::fs::read(dest.join("notes.md")).unwrap(),
        std::fs::read(src.join("notes.md")).unwrap()
    );
    // The same bundle over the caps: refused before anything is written.
    let small = ImportLimits {
        max_unpacked: 4096,
        max_objects: 200_000,
    };
    let refused = dir.path().join("refused");
    assert!(matches!(
        read_bundle(&bytes, &refused, small),
        Err(BundleError::TooLarge(4096))
    ));
    assert!(!refused.exists());
}
