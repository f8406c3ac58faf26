//! A turn continued after it ended: checked in the repository itself.

use std::path::Path;
use std::process::Command;

use serde_json::json;

use super::super::core::SessionCore;
use super::super::tests::node;
use super::super::wire::{EndTurn, NewNode};
use super::Continued;
use crate::meta::{now, SessionMeta};
use crate::node::Role;

fn tool(id: &str, caller: &str, output: Option<&str>) -> NewNode {
    NewNode {
        caller: Some(caller.into()),
        name: Some("bash".into()),
        output: output.map(|o| json!(o)),
        ..node(id, Role::Tool, "sleep 8")
    }
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// A session whose turn 1 ended while its tool was still running.
fn ended_early(root: &Path) -> (std::path::PathBuf, SessionCore) {
    let dir = root.join("s");
    let store = crate::store::Store::without_log(root);
    let (mut core, _) =
        SessionCore::create(&store, &dir, SessionMeta::new("s".into(), now()), None).unwrap();
    core.append(node("u1", Role::User, "build it")).unwrap();
    core.append(node("a1", Role::Assistant, "Building."))
        .unwrap();
    core.append(tool("t1", "a1", None)).unwrap();
    core.end_turn(EndTurn::default(), None).unwrap();
    (dir, core)
}

fn late() -> Vec<NewNode> {
    vec![
        node("u1", Role::User, "build it"),
        node("a1", Role::Assistant, "Building."),
        tool("t1", "a1", Some("built")),
        node("a2", Role::Assistant, "It built."),
    ]
}

#[test]
fn late_records_make_a_second_commit_of_the_same_turn() {
    let root = tempfile::tempdir().unwrap();
    let (dir, mut core) = ended_early(root.path());
    let first = git(&dir, &["rev-parse", "HEAD"]);
    match core
        .continue_turn("u1", late(), EndTurn::default())
        .unwrap()
    {
        Continued::Ended {
            outcome,
            nodes,
            results,
        } => {
            assert_eq!((nodes, results), (1, 1));
            assert_eq!(outcome.turn, 1, "the same turn");
        }
        other => panic!("{other:?}"),
    }
    // One line: the new commit's parent is the first, kept as it was.
    let log = git(&dir, &["log", "--format=%s", "main"]);
    let subjects: Vec<&str> = log.lines().collect();
    assert_eq!(subjects.len(), 3, "{log}");
    assert!(subjects[0].starts_with("turn 1: build it"), "{log}");
    assert!(subjects[1].starts_with("turn 1: build it"), "{log}");
    assert_eq!(git(&dir, &["rev-parse", "HEAD~1"]), first);
    assert_eq!(git(&dir, &["branch", "--list"]).lines().count(), 1);
    assert_eq!(git(&dir, &["status", "--porcelain"]), "");
    let tool_file = |rev: &str| {
        let names = git(&dir, &["ls-tree", "-r", "--name-only", rev]);
        let path = names
            .lines()
            .find(|l| l.ends_with("-t-t1.json"))
            .unwrap()
            .to_string();
        let text = git(&dir, &["show", &format!("{rev}:{path}")]);
        serde_json::from_str::<serde_json::Value>(&text).unwrap()["output"].clone()
    };
    assert_eq!(tool_file("HEAD"), json!("built"));
    assert!(
        tool_file("HEAD~1").is_null(),
        "the first commit is not rewritten"
    );
    assert_eq!(core.meta().turn_count, 1);
    assert!(core.meta().open_turn.is_none());
    // The same records again: nothing to add.
    assert!(matches!(
        core.continue_turn("u1", late(), EndTurn::default())
            .unwrap(),
        Continued::Nothing
    ));
    // Loaded again, the next turn is turn 2.
    drop(core);
    let store = crate::store::Store::without_log(root.path());
    let mut core = SessionCore::load(&store, &dir).unwrap();
    core.append(node("u2", Role::User, "ship it")).unwrap();
    core.append(node("a3", Role::Assistant, "Shipped."))
        .unwrap();
    assert_eq!(core.end_turn(EndTurn::default(), None).unwrap().turn, 2);
}

#[test]
fn records_for_a_turn_that_is_not_the_last_are_not_written() {
    let root = tempfile::tempdir().unwrap();
    let (dir, mut core) = ended_early(root.path());
    core.append(node("u2", Role::User, "next")).unwrap();
    core.append(node("a3", Role::Assistant, "ok")).unwrap();
    core.end_turn(EndTurn::default(), None).unwrap();
    let before = git(&dir, &["rev-parse", "HEAD"]);
    match core
        .continue_turn("u1", late(), EndTurn::default())
        .unwrap()
    {
        Continued::NotLast { new } => assert_eq!(new, 1),
        other => panic!("{other:?}"),
    }
    assert_eq!(git(&dir, &["rev-parse", "HEAD"]), before);
}
