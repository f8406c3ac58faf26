//! Purge on real repositories, judged with the git CLI: no object and no
//! file keeps the secret, `git fsck --strict` is clean, every commit keeps
//! its author, times and trailers, a second purge changes nothing, and a
//! purge cut short is finished by the next load.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::core::SessionCore;
use super::purge::{self, PurgeRecord};
use super::tests::node;
use super::wire::EndTurn;
use crate::meta::{now, SessionMeta};
use crate::node::Role;
use crate::redact::{RedactionConfig, Redactor};
use crate::store::Store;

fn git(dir: &Path, args: &[&str]) -> String {
    crate::git::run_git(dir, args)
}

/// `git fsck --strict` finds nothing, not even an unreachable object.
fn assert_nothing_unreachable(dir: &Path) {
    let fsck = git(
        dir,
        &[
            "fsck",
            "--strict",
            "--unreachable",
            "--dangling",
            "--no-progress",
        ],
    );
    assert_eq!(fsck, "", "{fsck}");
}

/// Every object of the repository, whole.
fn all_objects(dir: &Path) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["cat-file", "--batch-all-objects", "--batch", "--unordered"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Every file under `dir`, `.git` included.
fn all_files(dir: &Path) -> String {
    let mut text = String::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(bytes) = std::fs::read(&p) {
                text.push_str(&String::from_utf8_lossy(&bytes));
            }
        }
    }
    text
}

/// A session with three turns holding `secret` (a user message, a tool's
/// output, an answer) and an open turn holding it too; redaction off.
fn leaky_session(root: &Path, secret: &str) -> (PathBuf, Store) {
    let dir = root.join("s");
    let store = Store::without_log(root);
    let (mut core, _) =
        SessionCore::create(&store, &dir, SessionMeta::new("s".into(), now()), None).unwrap();
    core.append(node("u1", Role::User, &format!("my key is {secret}")))
        .unwrap();
    core.append(node("a1", Role::Assistant, "noted")).unwrap();
    core.end_turn(EndTurn::default(), None).unwrap();
    core.append(node("u2", Role::User, "print the env"))
        .unwrap();
    let mut tool = node("t2", Role::Tool, "");
    tool.caller = Some("a2".into());
    tool.name = Some("bash".into());
    tool.output = Some(serde_json::json!({"stdout": format!("AWS_ACCESS_KEY_ID={secret}\n")}));
    core.append(node("a2", Role::Assistant, "running")).unwrap();
    core.append(tool).unwrap();
    core.end_turn(EndTurn::default(), None).unwrap();
    core.append(node("u3", Role::User, "thanks")).unwrap();
    core.append(node(
        "a3",
        Role::Assistant,
        &format!("the key {secret} is set"),
    ))
    .unwrap();
    core.end_turn(EndTurn::default(), None).unwrap();
    core.append(node("u4", Role::User, &format!("and {secret} again?")))
        .unwrap();
    drop(core);
    (dir, store)
}

/// Author, committer, times and trailers of every commit, newest first.
fn history(dir: &Path) -> String {
    git(
        dir,
        &[
            "log",
            "--all",
            "--format=%an|%ae|%at|%cn|%ce|%ct|%P|%(trailers:only)",
        ],
    )
    .lines()
    .map(|l| {
        // Parents are rewritten: only their count is compared.
        let mut parts: Vec<String> = l.split('|').map(str::to_string).collect();
        if parts.len() > 6 {
            parts[6] = parts[6].split_whitespace().count().to_string();
        }
        parts.join("|")
    })
    .collect::<Vec<_>>()
    .join("\n")
}

fn secret() -> String {
    crate::redact::fake::fake_secrets(17)
        .into_iter()
        .find(|f| f.kind == "aws")
        .unwrap()
        .secret
}

#[test]
fn a_purge_leaves_no_object_or_file_holding_the_secret_and_keeps_every_commit() {
    let root = tempfile::tempdir().unwrap();
    let secret = secret();
    let (dir, store) = leaky_session(root.path(), &secret);
    assert!(all_objects(&dir).contains(&secret), "the test stores it");
    let before = history(&dir);
    let commits = git(&dir, &["rev-list", "--all"]).lines().count();

    let record = purge::purge_folder(&store, &dir, "test").unwrap().unwrap();
    assert_eq!(record.by, "test");
    assert!(record.kinds.contains_key("aws-access-token"), "{record:?}");
    assert!(
        !record.commits.is_empty() && record.files >= 1,
        "{record:?}"
    );

    assert!(!all_objects(&dir).contains(&secret));
    assert!(!all_files(&dir).contains(&secret), "no file keeps it");
    // No dangling or unreachable object: everything left is reachable.
    assert_nothing_unreachable(&dir);
    assert!(!dir.join(".git/logs").exists(), "no reflog");
    assert_eq!(
        std::fs::read_dir(dir.join(".git/objects/pack"))
            .unwrap()
            .count(),
        2,
        "one pack and its index"
    );
    assert_eq!(git(&dir, &["rev-list", "--all"]).lines().count(), commits);
    assert_eq!(history(&dir), before, "authors, times and trailers kept");
    assert_eq!(
        git(&dir, &["status", "--porcelain", "--untracked-files=no"]),
        "",
        "index matches HEAD"
    );
    // Each old id resolves to a commit that exists.
    let records = purge::records(&dir).unwrap();
    for [old, _] in &record.commits {
        let new = PurgeRecord::resolve(&records, old).unwrap();
        git(&dir, &["cat-file", "-e", &format!("{new}^{{commit}}")]);
    }

    // The session loads with placeholders, the open turn included.
    let core = SessionCore::load(&store, &dir).unwrap();
    let texts: Vec<String> = core
        .nodes()
        .unwrap()
        .iter()
        .map(|n| serde_json::to_string(n).unwrap())
        .collect();
    assert_eq!(texts.len(), 8);
    assert!(texts
        .iter()
        .any(|t| t.contains("[REDACTED:aws-access-token]")));
    assert!(texts.iter().all(|t| !t.contains(&secret)));
    drop(core);

    // Nothing left: a second purge changes nothing.
    assert!(purge::purge_folder(&store, &dir, "test").unwrap().is_none());
    assert_eq!(purge::records(&dir).unwrap().len(), 1);
}

#[test]
fn a_purge_cut_short_after_its_record_is_finished_by_the_next_load() {
    let root = tempfile::tempdir().unwrap();
    let secret = secret();
    let (dir, store) = leaky_session(root.path(), &secret);
    let redactor = Redactor::new(&RedactionConfig::default(), root.path()).unwrap();
    // The history rewritten and packed, the record written, then a kill
    // after the first ref moved.
    let record = purge::prepare(&redactor, &dir, "test").unwrap();
    std::fs::write(
        dir.join(".git").join(purge::PENDING),
        serde_json::to_vec(&record).unwrap(),
    )
    .unwrap();
    let first = &record.refs[0];
    git(&dir, &["update-ref", &first.name, &first.new]);
    assert!(all_objects(&dir).contains(&secret));

    let core = SessionCore::load(&store, &dir).unwrap();
    drop(core);
    assert!(!dir.join(".git").join(purge::PENDING).exists());
    for m in &record.refs {
        assert_eq!(git(&dir, &["rev-parse", &m.name]).trim(), m.new);
    }
    assert!(!all_objects(&dir).contains(&secret));
    assert!(!all_files(&dir).contains(&secret));
    assert_nothing_unreachable(&dir);
    assert_eq!(purge::records(&dir).unwrap().len(), 1);
}

#[test]
fn a_purge_cut_short_before_its_record_leaves_the_old_history_whole() {
    let root = tempfile::tempdir().unwrap();
    let secret = secret();
    let (dir, store) = leaky_session(root.path(), &secret);
    let tips = git(&dir, &["show-ref"]);
    let redactor = Redactor::new(&RedactionConfig::default(), root.path()).unwrap();
    // Killed after the new pack, before the record: nothing refers to it.
    purge::prepare(&redactor, &dir, "test").unwrap();
    let core = SessionCore::load(&store, &dir).unwrap();
    drop(core);
    assert_eq!(git(&dir, &["show-ref"]), tips);
    git(&dir, &["fsck", "--strict", "--no-progress"]);
    // The purge run again does it all.
    assert!(purge::purge_folder(&store, &dir, "test").unwrap().is_some());
    assert!(!all_objects(&dir).contains(&secret));
}
