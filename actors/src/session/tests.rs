//! Unit tests of the session core on temporary directories: crash repair,
//! branch placement, the title plan and the queue. Each checks the real
//! repository (through libgit2) and the files, not only the core's answers.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::json;

use super::core::SessionCore;
use super::wire::{EndTurn, NewNode, Posted};
use super::SessionError;
use crate::git;
use crate::meta::{now, SessionMeta, Status};
use crate::node::Role;

pub(super) fn node(id: &str, role: Role, text: &str) -> NewNode {
    NewNode {
        id: Some(id.into()),
        role,
        content: json!(text),
        predecessor: None,
        caller: None,
        metadata: Default::default(),
        name: None,
        output: None,
        at: None,
    }
}

fn new_session(root: &Path, id: &str) -> (PathBuf, SessionCore) {
    let dir = root.join(id);
    let (core, _) = SessionCore::create(
        &store_of(&dir),
        &dir,
        SessionMeta::new(id.into(), now()),
        None,
    )
    .unwrap();
    (dir, core)
}

/// One whole turn: a user message and its answer, then the end.
fn turn(core: &mut SessionCore, n: u32) -> String {
    core.append(node(&format!("u{n}"), Role::User, &format!("question {n}")))
        .unwrap();
    core.append(node(
        &format!("a{n}"),
        Role::Assistant,
        &format!("answer {n}"),
    ))
    .unwrap();
    core.end_turn(EndTurn::default(), None).unwrap().commit
}

fn head_turn(dir: &Path) -> u64 {
    let repo = git::open_repo(dir).unwrap();
    git::head_trailers(&repo).unwrap().turn
}

/// The turn commits (the `session init` root aside).
fn commit_count(dir: &Path) -> usize {
    let repo = git::open_repo(dir).unwrap();
    let all = git::all_commits(&repo).unwrap();
    assert_eq!(
        all.iter().filter(|c| c.is_session_init()).count(),
        1,
        "one session init root"
    );
    all.len() - 1
}

// ----- crash repair --------------------------------------------------------

#[test]
fn an_ended_turn_whose_commit_was_lost_is_committed_at_load() {
    let root = tempfile::tempdir().unwrap();
    let (dir, mut core) = new_session(root.path(), "s");
    let first = turn(&mut core, 1);
    turn(&mut core, 2);
    drop(core);
    // The end of turn 2 is recorded in meta.json, but its commit is gone:
    // the branch still points at turn 1 (a crash between the two).
    let repo = git::open_repo(&dir).unwrap();
    let oid = git2::Oid::from_str(&first).unwrap();
    repo.reference("refs/heads/main", oid, true, "test: lose the commit")
        .unwrap();
    drop(repo);
    assert_eq!(head_turn(&dir), 1);

    let core = SessionCore::load(&store_of(&dir), &dir).unwrap();
    assert_eq!(head_turn(&dir), 2, "the lost turn is committed again");
    assert_eq!(core.meta().turn_count, 2);
    assert_eq!(commit_count(&dir), 2, "one commit per turn, nothing merged");
    let repo = git::open_repo(&dir).unwrap();
    let tree = git::head_commit(&repo).unwrap().unwrap().tree().unwrap();
    let names: Vec<String> = git::blobs_under(
        &repo,
        &tree,
        Path::new(super::layout::HISTORY),
        &mut Default::default(),
    )
    .unwrap()
    .into_iter()
    .filter_map(|(p, _)| p.file_name().map(|n| n.to_string_lossy().into_owned()))
    .collect();
    assert_eq!(names.len(), 4, "{names:?}");
    assert!(names.iter().any(|n| n.ends_with("-a-a2.json")));
}

#[test]
fn turns_missing_from_git_are_committed_one_per_turn_at_load() {
    let root = tempfile::tempdir().unwrap();
    let (dir, mut core) = new_session(root.path(), "s");
    let first = turn(&mut core, 1);
    turn(&mut core, 2);
    turn(&mut core, 3);
    drop(core);
    // git lost turns 2 and 3 (a restored backup, a copied folder); the
    // files and meta.json still say three turns ended.
    let repo = git::open_repo(&dir).unwrap();
    let oid = git2::Oid::from_str(&first).unwrap();
    repo.reference("refs/heads/main", oid, true, "test")
        .unwrap();
    drop(repo);
    let core = SessionCore::load(&store_of(&dir), &dir).unwrap();
    assert_eq!(core.meta().turn_count, 3);
    let repo = git::open_repo(&dir).unwrap();
    let mut walk = repo.revwalk().unwrap();
    walk.push_head().unwrap();
    let subjects: Vec<String> = walk
        .map(|o| {
            repo.find_commit(o.unwrap())
                .unwrap()
                .summary()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(
        subjects,
        [
            "turn 3: question 3",
            "turn 2: question 2",
            "turn 1: question 1",
            "session init"
        ]
    );
}

#[test]
fn a_new_session_starts_with_a_root_that_every_branch_shares() {
    let root = tempfile::tempdir().unwrap();
    let (dir, mut core) = new_session(root.path(), "s");
    let repo = git::open_repo(&dir).unwrap();
    let init = git::head_commit(&repo).unwrap().expect("a root commit");
    assert_eq!(init.summary(), Some("session init"));
    assert_eq!(init.parent_count(), 0);
    let files: Vec<String> = init
        .tree()
        .unwrap()
        .iter()
        .filter_map(|e| e.name().map(str::to_owned))
        .collect();
    assert_eq!(files, [".gitignore", "meta.json"]);
    assert!(core.history().unwrap().commits.is_empty(), "no turn yet");
    turn(&mut core, 1);
    // A retried answer to turn 1 forks from the root, visibly.
    core.append(NewNode {
        predecessor: Some("u1".into()),
        ..node("a1b", Role::Assistant, "again")
    })
    .unwrap();
    core.end_turn(EndTurn::default(), None).unwrap();
    let retry = repo
        .find_branch("retry-a1b", git2::BranchType::Local)
        .unwrap();
    let fork = retry.get().peel_to_commit().unwrap().parent_id(0).unwrap();
    assert_eq!(fork, init.id(), "the retry starts at the shared root");
    let history = core.history().unwrap();
    assert_eq!(history.commits.len(), 2, "the root is no turn");
    assert!(history.commits.iter().all(|c| c.turn == 1));
}

#[test]
fn a_user_message_written_before_its_meta_is_an_open_turn_after_load() {
    let root = tempfile::tempdir().unwrap();
    let (dir, mut core) = new_session(root.path(), "s");
    turn(&mut core, 1);
    let before = fs::read(dir.join(super::layout::META)).unwrap();
    core.append(node("u2", Role::User, "second")).unwrap();
    drop(core);
    // The crash lost the meta.json written with the user message.
    fs::write(dir.join(super::layout::META), before).unwrap();

    let mut core = SessionCore::load(&store_of(&dir), &dir).unwrap();
    let open = core
        .meta()
        .open_turn
        .clone()
        .expect("the turn is open again");
    assert_eq!(open.user_node, "u2");
    assert_eq!(open.number, 2);
    assert_eq!(core.meta().head.as_deref(), Some("u2"));
    core.append(node("a2", Role::Assistant, "late answer"))
        .unwrap();
    let out = core.end_turn(EndTurn::default(), None).unwrap();
    assert_eq!(out.turn, 2);
    assert_eq!(head_turn(&dir), 2);
}

#[test]
fn a_lost_meta_rename_after_the_commit_is_restored_from_head() {
    let root = tempfile::tempdir().unwrap();
    let (dir, mut core) = new_session(root.path(), "s");
    core.append(node("u1", Role::User, "hello")).unwrap();
    core.append(node("a1", Role::Assistant, "hi")).unwrap();
    let during = fs::read(dir.join(super::layout::META)).unwrap();
    core.end_turn(EndTurn::default(), None).unwrap();
    drop(core);
    // meta.json as it was before the end of turn (the rename was lost).
    fs::write(dir.join(super::layout::META), during).unwrap();

    let core = SessionCore::load(&store_of(&dir), &dir).unwrap();
    assert!(core.meta().open_turn.is_none(), "the turn is ended");
    assert_eq!(core.meta().turn_count, 1);
    assert_eq!(core.meta().status, Status::Idle);
    assert_eq!(commit_count(&dir), 1, "no second commit for the same turn");
}

#[test]
fn stale_locks_and_temp_files_are_cleared_at_load() {
    let root = tempfile::tempdir().unwrap();
    let (dir, mut core) = new_session(root.path(), "s");
    turn(&mut core, 1);
    drop(core);
    fs::write(dir.join(".git/index.lock"), b"").unwrap();
    fs::write(dir.join(".git/refs/heads/main.lock"), b"").unwrap();
    let tmp = dir.join(format!("{}x-meta.json", crate::fsio::TMP_PREFIX));
    fs::write(&tmp, b"{").unwrap();

    let mut core = SessionCore::load(&store_of(&dir), &dir).unwrap();
    assert!(!dir.join(".git/index.lock").exists());
    assert!(!dir.join(".git/refs/heads/main.lock").exists());
    assert!(!tmp.exists());
    turn(&mut core, 2);
    assert_eq!(head_turn(&dir), 2, "commits work after the repair");
}

#[test]
fn an_unparsable_meta_is_not_a_session_and_is_left_alone() {
    let root = tempfile::tempdir().unwrap();
    let (dir, core) = new_session(root.path(), "s");
    drop(core);
    fs::write(dir.join(super::layout::META), b"{ not json").unwrap();
    assert!(matches!(
        SessionCore::load(&store_of(&dir), &dir),
        Err(SessionError::NotFound)
    ));
    assert_eq!(
        fs::read(dir.join(super::layout::META)).unwrap(),
        b"{ not json",
        "loading never rewrites what it cannot read"
    );
}

// ----- branch placement ----------------------------------------------------

#[test]
fn a_retried_answer_goes_on_its_own_branch_and_main_stays() {
    let root = tempfile::tempdir().unwrap();
    let (dir, mut core) = new_session(root.path(), "s");
    turn(&mut core, 1);
    let main_tip = turn(&mut core, 2);
    // Retry the second answer: an assistant node whose predecessor (u2)
    // already has an answer opens a turn of its own.
    let mut retry = node("a2b", Role::Assistant, "another answer");
    retry.predecessor = Some("u2".into());
    assert!(core.opens_turn(&retry));
    core.append(retry).unwrap();
    let out = core.end_turn(EndTurn::default(), None).unwrap();
    assert_eq!(out.turn, 2, "turn numbers count along the path");

    let branches = core.branches().unwrap();
    let names: Vec<&str> = branches.iter().map(|b| b.name.as_str()).collect();
    assert!(names.contains(&"main"), "{names:?}");
    assert!(names.contains(&"retry-a2b"), "{names:?}");
    let current = branches.iter().find(|b| b.current).unwrap();
    assert_eq!(current.name, "retry-a2b");
    let repo = git::open_repo(&dir).unwrap();
    let main = repo.find_branch("main", git2::BranchType::Local).unwrap();
    assert_eq!(
        main.get().target().unwrap().to_string(),
        main_tip,
        "main is never rewritten"
    );
    let retry_tip = repo
        .find_branch("retry-a2b", git2::BranchType::Local)
        .unwrap()
        .get()
        .peel_to_commit()
        .unwrap();
    let parent = retry_tip.parent(0).unwrap();
    assert_eq!(git::Trailers::parse(parent.message().unwrap()).turn, 1);
    // The rendered conversation follows the retry.
    let texts: Vec<String> = core
        .branch(None)
        .unwrap()
        .iter()
        .map(|n| n.text())
        .collect();
    assert_eq!(
        texts,
        ["question 1", "answer 1", "question 2", "another answer"]
    );
}

#[test]
fn a_turn_that_continues_the_tip_stays_on_the_branch() {
    let root = tempfile::tempdir().unwrap();
    let (dir, mut core) = new_session(root.path(), "s");
    for n in 1..=3 {
        turn(&mut core, n);
    }
    assert_eq!(core.branches().unwrap().len(), 1);
    assert_eq!(head_turn(&dir), 3);
    assert_eq!(commit_count(&dir), 3);
}

// ----- title plan ----------------------------------------------------------

#[test]
fn the_first_reply_sets_the_phase_one_title_and_plans_an_llm_pass() {
    let root = tempfile::tempdir().unwrap();
    let (_, mut core) = new_session(root.path(), "s");
    core.set_retitle_at(vec![1, 3]);
    core.append(node("u1", Role::User, "Plan a trip to Kyoto\nwith details"))
        .unwrap();
    core.append(node("a1", Role::Assistant, "Sure")).unwrap();
    let out = core.end_turn(EndTurn::default(), None).unwrap();
    let plan = out.title_plan.expect("an LLM pass is due");
    assert_eq!(plan.pass, 1);
    assert_eq!(core.meta().title, "Plan a trip to Kyoto");
    assert_eq!(plan.expected_title.as_deref(), Some("Plan a trip to Kyoto"));
    assert!(core.meta().auto_titled);
    // Turn 2 hits no threshold; turn 3 does (pass 2, the recent messages).
    assert!(turn_plan(&mut core, 2).is_none());
    let third = turn_plan(&mut core, 3).expect("the second threshold");
    assert_eq!(third.pass, 2);
    assert!(third.input.contains("question 3"), "{}", third.input);
    assert_eq!(
        core.meta().title,
        "Plan a trip to Kyoto",
        "phase 1 only once"
    );
}

fn turn_plan(core: &mut SessionCore, n: u32) -> Option<super::TitlePlan> {
    core.append(node(&format!("u{n}"), Role::User, &format!("question {n}")))
        .unwrap();
    core.append(node(&format!("a{n}"), Role::Assistant, "ok"))
        .unwrap();
    core.end_turn(EndTurn::default(), None).unwrap().title_plan
}

#[test]
fn a_title_the_user_typed_stops_every_plan_and_wins_every_race() {
    let root = tempfile::tempdir().unwrap();
    let (_, mut core) = new_session(root.path(), "s");
    core.update_meta(|m| {
        m.title = "Mine".into();
        m.user_titled = true;
    })
    .unwrap();
    assert!(turn_plan(&mut core, 1).is_none());
    assert!(!core.apply_title("Generated", 1, None, false).unwrap());
    assert_eq!(core.meta().title, "Mine");
    // An explicit regenerate writes without setting the lock anew.
    assert!(core.apply_title("Generated", 0, None, true).unwrap());
    assert_eq!(core.meta().title, "Generated");
}

#[test]
fn a_first_pass_title_is_dropped_when_the_title_changed_meanwhile() {
    let root = tempfile::tempdir().unwrap();
    let (_, mut core) = new_session(root.path(), "s");
    let plan = turn_plan(&mut core, 1).unwrap();
    core.update_meta(|m| m.title = "Renamed by a bridge".into())
        .unwrap();
    let applied = core
        .apply_title(
            "LLM title",
            plan.pass,
            plan.expected_title.as_deref(),
            false,
        )
        .unwrap();
    assert!(!applied);
    assert_eq!(core.meta().title, "Renamed by a bridge");
}

// ----- the queue -----------------------------------------------------------

#[test]
fn a_message_during_a_running_turn_is_queued_and_opens_the_next_turn() {
    let root = tempfile::tempdir().unwrap();
    let (dir, mut core) = new_session(root.path(), "s");
    core.append(node("u1", Role::User, "first")).unwrap();
    let posted = core.post(node("q1", Role::User, "queued"), None).unwrap();
    assert!(matches!(posted, Posted::Queued { position: 1, .. }));
    // A repeated post of the same id is not queued twice.
    core.post(node("q1", Role::User, "queued"), None).unwrap();
    assert_eq!(core.queue_len(), 1);
    assert!(dir.join(super::layout::QUEUE).read_dir().unwrap().count() == 1);
    core.append(node("a1", Role::Assistant, "done")).unwrap();
    core.end_turn(EndTurn::default(), None).unwrap();
    assert!(core.next_queued_ready());
    let next = core.start_queued_turn(None).unwrap().expect("a next turn");
    assert_eq!(next.node.id, "q1");
    assert_eq!(next.turn, Some(2));
    assert_eq!(core.queue_len(), 0);
    assert_eq!(
        dir.join(super::layout::QUEUE).read_dir().unwrap().count(),
        0
    );
}

#[test]
fn a_queued_message_already_appended_before_a_crash_is_kept_once() {
    let root = tempfile::tempdir().unwrap();
    let (dir, mut core) = new_session(root.path(), "s");
    core.append(node("u1", Role::User, "first")).unwrap();
    core.post(node("q1", Role::User, "queued"), None).unwrap();
    let queue_dir = dir.join(super::layout::QUEUE);
    let file = queue_dir
        .read_dir()
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let saved = fs::read(&file).unwrap();
    core.append(node("a1", Role::Assistant, "done")).unwrap();
    core.end_turn(EndTurn::default(), None).unwrap();
    core.start_queued_turn(None).unwrap();
    drop(core);
    // The crash came between the append and the queue file's removal.
    fs::write(&file, saved).unwrap();

    let core = SessionCore::load(&store_of(&dir), &dir).unwrap();
    assert_eq!(core.queue_len(), 0, "the duplicate is dropped");
    assert!(!file.exists());
    let q1 = core
        .nodes()
        .unwrap()
        .iter()
        .filter(|n| n.id == "q1")
        .count();
    assert_eq!(q1, 1);
}

#[test]
fn queued_messages_survive_a_restart_in_arrival_order() {
    let root = tempfile::tempdir().unwrap();
    let (dir, mut core) = new_session(root.path(), "s");
    core.append(node("u1", Role::User, "first")).unwrap();
    for id in ["q1", "q2", "q3"] {
        core.post(node(id, Role::User, id), None).unwrap();
    }
    drop(core);
    let mut core = SessionCore::load(&store_of(&dir), &dir).unwrap();
    assert_eq!(core.queue_len(), 3);
    core.append(node("a1", Role::Assistant, "done")).unwrap();
    core.end_turn(EndTurn::default(), None).unwrap();
    let mut order = Vec::new();
    while let Some(next) = core.start_queued_turn(None).unwrap() {
        order.push(next.node.id.clone());
        core.append(node(&format!("a-{}", next.node.id), Role::Assistant, "ok"))
            .unwrap();
        core.end_turn(EndTurn::default(), None).unwrap();
    }
    assert_eq!(order, ["q1", "q2", "q3"]);
    assert_eq!(head_turn(&dir), 4);
}

/// The store of a session folder made by a test: no log, each write
/// durable on its own.
fn store_of(dir: &Path) -> crate::store::Store {
    crate::store::Store::without_log(dir.parent().unwrap())
}

#[test]
fn a_whole_turn_is_one_log_entry_and_leaves_nothing_when_it_fails() {
    let tmp = tempfile::tempdir().unwrap();
    let sessions = tmp.path().join("sessions");
    let (store, _) = crate::store::Store::open(&sessions).unwrap();
    let dir = sessions.join("w");
    let (mut core, _) =
        SessionCore::create(&store, &dir, SessionMeta::new("w".into(), now()), None).unwrap();
    let mut call = node("c1", Role::Tool, "{}");
    call.caller = Some("a1".into());
    call.name = Some("grep".into());
    let before = store.log_entries();
    let (nodes, gathered) = core
        .append_turn(
            vec![
                node("u1", Role::User, "q1"),
                node("a1", Role::Assistant, "r1"),
                call,
            ],
            None,
        )
        .unwrap();
    assert!(gathered, "a turn on the tip is gathered");
    assert_eq!(nodes.len(), 3);
    assert_eq!(store.log_entries(), before, "nothing logged before the end");
    let u1 = dir.join(super::layout::node_rel_path(1, Role::User, "u1"));
    assert!(!u1.exists() && core.is_gathering(), "nothing written yet");
    core.end_turn(EndTurn::default(), None).unwrap();
    assert_eq!(store.log_entries(), before + 1, "the turn is one entry");
    assert!(!core.is_gathering());
    assert_eq!(head_turn(&dir), 1);
    let repo = git::open_repo(&dir).unwrap();
    let tree = git::head_commit(&repo).unwrap().unwrap().tree().unwrap();
    let mut files = 0;
    tree.walk(git2::TreeWalkMode::PreOrder, |_, e| {
        files += usize::from(e.name().is_some_and(|n| n.ends_with(".json")));
        git2::TreeWalkResult::Ok
    })
    .unwrap();
    assert_eq!(files, 4, "three nodes and meta.json in the turn's commit");

    // A turn that fails at its end leaves no trace once reloaded.
    let (_, gathered) = core
        .append_turn(
            vec![
                node("u2", Role::User, "q2"),
                node("a2", Role::Assistant, "r2"),
            ],
            None,
        )
        .unwrap();
    assert!(gathered);
    let wrong = EndTurn {
        turn: Some(9),
        ..EndTurn::default()
    };
    assert!(core.end_turn(wrong, None).is_err());
    assert!(
        core.is_gathering(),
        "the failed turn is still only in memory"
    );
    drop(core);
    let core = SessionCore::load(&store, &dir).unwrap();
    assert!(core.node("u2").is_none() && core.node("a2").is_none());
    assert!(core.meta().open_turn.is_none());
    assert_eq!(core.meta().turn_count, 1);
    assert_eq!(head_turn(&dir), 1);
}
