//! The write-ahead log (group commit): what a crash at each point leaves.
//! A SIGKILL keeps the page cache, so to test what a power loss takes the
//! tests take it themselves: every file written since the last checkpoint
//! is put back as it was (the server is told never to checkpoint, so the
//! log still covers them) and replay must bring the acknowledged state
//! back.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::json;

use crate::helpers::{assert_clean_repo, git, node_ids, turn_commits, TestServer};

/// Every file under `dir` with its bytes (`.git/index` left out: it is a
/// cache that loading rebuilds).
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                stack.push(p);
            } else if p != dir.join(".git/index") {
                out.insert(p.clone(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// Make `dir` what `before` was: what a power loss leaves when nothing
/// written since was synced. Files added since are removed, changed ones
/// get their old bytes.
fn lose_unsynced_writes(dir: &Path, before: &BTreeMap<PathBuf, Vec<u8>>) -> usize {
    let now = snapshot(dir);
    let mut undone = 0;
    for (path, bytes) in &now {
        match before.get(path) {
            None => {
                std::fs::remove_file(path).unwrap();
                undone += 1;
            }
            Some(old) if old != bytes => {
                std::fs::write(path, old).unwrap();
                undone += 1;
            }
            _ => {}
        }
    }
    undone
}

/// The log segments in the state directory.
/// The node `id` of a `GET /nodes` answer.
fn node_by_id<'a>(nodes: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    nodes["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["id"] == id)
        .unwrap_or_else(|| panic!("no node {id}: {nodes}"))
}

fn segments(state: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(state.join("wal"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect()
}

#[test]
fn acknowledged_writes_lost_from_disk_are_replayed_from_the_log() {
    let mut s = TestServer::start_with_env(&[("OPENPROGRAM_WAL_FAULT", "no-checkpoint")]);
    s.turn("pl", "first", "one", &["read"]);
    let dir = s.session_dir("pl");
    let before = snapshot(&dir);
    let first_head = git(&dir, &["rev-parse", "HEAD"]);

    // Turn 2, every step acknowledged; then the open turn 3's first nodes.
    s.append(
        "pl",
        json!({"id": "u2", "role": "user", "content": "second"}),
    );
    s.append(
        "pl",
        json!({"id": "a2", "role": "assistant", "content": ""}),
    );
    s.append(
        "pl",
        json!({"id": "t2", "role": "tool", "name": "grep", "caller": "a2", "content": "hits"}),
    );
    s.patch(
        "/api/sessions/pl/messages/a2",
        json!({"content": "two, filled"}),
    );
    let out = s.end_turn("pl", json!({}));
    let acked_commit = out["commit"].as_str().unwrap().to_string();
    s.append(
        "pl",
        json!({"id": "u3", "role": "user", "content": "third"}),
    );

    // A kill after those acknowledgements, before the next flush; then a
    // power loss takes every file written since turn 1.
    s.kill();
    let undone = lose_unsynced_writes(&dir, &before);
    assert!(undone >= 7, "{undone} files taken away");
    assert_eq!(git(&dir, &["rev-parse", "HEAD"]), first_head);
    let left = segments(&s.state_dir);
    assert!(!left.is_empty(), "the log still holds them");

    s.env.clear();
    s.spawn();
    assert!(
        left.iter().all(|p| !p.exists()),
        "replayed, synced, removed"
    );
    assert_eq!(git(&dir, &["rev-parse", "HEAD"]).trim(), acked_commit);
    assert_eq!(turn_commits(&dir, "HEAD"), "2");
    let (_, nodes) = s.get("/api/sessions/pl/nodes");
    let ids = node_ids(&nodes);
    assert_eq!(&ids[ids.len() - 4..], &["u2", "a2", "t2", "u3"]);
    assert_eq!(node_by_id(&nodes, "a2")["content"], "two, filled");
    let (_, meta) = s.get("/api/sessions/pl");
    assert_eq!(meta["turn_count"], 2, "{meta}");
    assert_eq!(meta["open_turn"]["number"], 3, "{meta}");
    // The repository is whole, and the session goes on.
    git(&dir, &["fsck", "--strict", "--no-progress"]);
    s.append("pl", json!({"role": "assistant", "content": "three"}));
    s.end_turn("pl", json!({}));
    assert_eq!(turn_commits(&dir, "HEAD"), "3");
    assert_clean_repo(&dir);
}

#[test]
fn a_kill_between_the_flush_and_the_acknowledgement_leaves_a_whole_write() {
    let mut s = TestServer::start_process();
    s.turn("ka", "first", "one", &[]);
    let dir = s.session_dir("ka");
    // This server dies right after its first flush, before answering.
    s.restart_with_fault("kill-before-ack");
    let url = format!("{}/api/sessions/ka/messages", s.url);
    let sent = ureq::post(&url).send_json(json!({"id": "u2", "role": "user", "content": "second"}));
    assert!(sent.is_err(), "no answer from a killed server: {sent:?}");
    s.kill();

    s.env.clear();
    s.spawn();
    // Flushed, so durable: the message and its open turn are both there
    // (the node and meta.json were one entry), and nothing is torn.
    let (_, nodes) = s.get("/api/sessions/ka/nodes");
    let ids = node_ids(&nodes);
    assert_eq!(ids.last().map(String::as_str), Some("u2"), "{ids:?}");
    let (_, meta) = s.get("/api/sessions/ka");
    assert_eq!(meta["open_turn"]["number"], 2, "{meta}");
    assert_eq!(meta["head"], "u2");
    // The client's retry with the same id is answered as already there.
    let (st, again) = s.post(
        "/api/sessions/ka/messages",
        json!({"id": "u2", "role": "user", "content": "second"}),
    );
    assert!(st == 200 || st == 201, "{st} {again}");
    assert_eq!(again["created"], false, "{again}");
    s.append("ka", json!({"role": "assistant", "content": "two"}));
    s.end_turn("ka", json!({}));
    assert_eq!(turn_commits(&dir, "HEAD"), "2");
    assert_clean_repo(&dir);
}

#[test]
fn concurrent_sessions_share_flushes_and_lose_nothing() {
    let mut s = TestServer::start_with_env(&[("OPENPROGRAM_WAL_FAULT", "no-checkpoint")]);
    for i in 0..8 {
        s.turn(&format!("g{i}"), "setup", "ok", &[]);
    }
    let dirs: Vec<PathBuf> = (0..8).map(|i| s.session_dir(&format!("g{i}"))).collect();
    let before: Vec<_> = dirs.iter().map(|d| snapshot(d)).collect();
    let url = s.url.clone();
    let commits: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let url = url.clone();
                scope.spawn(move || {
                    let agent = ureq::agent();
                    let base = format!("{url}/api/sessions/g{i}");
                    let mut last = String::new();
                    for t in 0..5 {
                        for (role, content) in
                            [("user", format!("q{t}")), ("assistant", format!("a{t}"))]
                        {
                            agent
                                .post(&format!("{base}/messages"))
                                .send_json(json!({"role": role, "content": content}))
                                .unwrap();
                        }
                        let out: serde_json::Value = agent
                            .post(&format!("{base}/turns"))
                            .send_json(json!({}))
                            .unwrap()
                            .into_json()
                            .unwrap();
                        last = out["commit"].as_str().unwrap().to_string();
                    }
                    last
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    s.kill();
    for (d, b) in dirs.iter().zip(&before) {
        lose_unsynced_writes(d, b);
    }
    s.env.clear();
    s.spawn();
    for (i, d) in dirs.iter().enumerate() {
        assert_eq!(git(d, &["rev-parse", "HEAD"]).trim(), commits[i], "g{i}");
        assert_eq!(turn_commits(d, "HEAD"), "6");
        let (_, meta) = s.get(&format!("/api/sessions/g{i}"));
        assert_eq!(meta["turn_count"], 6);
        assert_clean_repo(d);
    }
}

#[test]
fn files_torn_by_a_crash_in_place_are_replayed_whole() {
    // Session files are rewritten in place after the log's flush: a power
    // loss in the middle of such a write leaves a torn file.
    let mut s = TestServer::start_with_env(&[("OPENPROGRAM_WAL_FAULT", "no-checkpoint")]);
    s.turn("tw", "first", "one", &[]);
    let dir = s.session_dir("tw");
    s.append(
        "tw",
        json!({"id": "u2", "role": "user", "content": "second"}),
    );
    s.append(
        "tw",
        json!({"id": "a2", "role": "assistant", "content": ""}),
    );
    s.patch(
        "/api/sessions/tw/messages/a2",
        json!({"content": "two, filled in place"}),
    );
    let files = snapshot(&dir);
    let node = files
        .keys()
        .find(|p| {
            p.starts_with(dir.join("history"))
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().ends_with("-a-a2.json"))
        })
        .expect("a2's node file")
        .clone();
    let meta = dir.join("meta.json");
    s.kill();
    for path in [&node, &meta] {
        let whole = &files[path];
        let mut torn = whole[..whole.len() / 2].to_vec();
        torn.extend_from_slice(b"\0\0garbage");
        std::fs::write(path, &torn).unwrap();
    }

    s.env.clear();
    s.spawn();
    assert_eq!(
        std::fs::read(&node).unwrap(),
        files[&node],
        "the node replayed whole"
    );
    // meta.json replayed whole, then its running status reset at startup.
    let parse = |b: &[u8]| {
        let mut v: serde_json::Value = serde_json::from_slice(b).unwrap();
        v.as_object_mut().unwrap().remove("status");
        v
    };
    assert_eq!(
        parse(&std::fs::read(&meta).unwrap()),
        parse(&files[&meta]),
        "meta.json replayed whole"
    );
    let (_, nodes) = s.get("/api/sessions/tw/nodes");
    assert_eq!(node_by_id(&nodes, "a2")["content"], "two, filled in place");
    let (_, m) = s.get("/api/sessions/tw");
    assert_eq!(m["open_turn"]["number"], 2, "{m}");
    s.end_turn("tw", json!({}));
    assert_eq!(turn_commits(&dir, "HEAD"), "2");
    assert_clean_repo(&dir);
}

/// A whole turn in one request: its nodes, their callers, the end.
fn whole_turn_body(n: u32) -> serde_json::Value {
    json!({"nodes": [
        {"id": format!("u{n}"), "role": "user", "content": format!("question {n}")},
        {"id": format!("a{n}"), "role": "assistant", "content": format!("answer {n}")},
        {"id": format!("t{n}"), "role": "tool", "name": "grep", "caller": format!("a{n}"),
         "content": {"pattern": "x"}, "output": "hits"}]})
}

/// Restart `s` with the log fault `fault`, send session `id`'s second
/// whole turn (key `<id>-2`), which the fault kills before any answer,
/// then restart it without the fault.
fn whole_turn_killed_by(s: &mut TestServer, id: &str, fault: &str) {
    s.restart_with_fault(fault);
    let url = format!("{}/api/sessions/{id}/turns", s.url);
    let sent = ureq::post(&url)
        .set("Idempotency-Key", &format!("{id}-2"))
        .send_json(whole_turn_body(2));
    assert!(sent.is_err(), "no answer from a killed server: {sent:?}");
    s.kill();
    s.env.clear();
    s.spawn();
}

#[test]
fn a_whole_turn_killed_after_its_flush_is_there_whole_after_the_restart() {
    let mut s = TestServer::start_process();
    s.turn("wk", "first", "one", &[]);
    let dir = s.session_dir("wk");
    // The turn's one flush, then the kill: no answer.
    whole_turn_killed_by(&mut s, "wk", "kill-before-ack");
    // Flushed, so durable, and whole: every node, the end and its commit.
    let (_, nodes) = s.get("/api/sessions/wk/nodes");
    let ids = node_ids(&nodes);
    assert_eq!(&ids[ids.len() - 3..], &["u2", "a2", "t2"], "{ids:?}");
    let (_, meta) = s.get("/api/sessions/wk");
    assert_eq!(meta["turn_count"], 2, "{meta}");
    assert!(meta["open_turn"].is_null(), "{meta}");
    assert_eq!(turn_commits(&dir, "HEAD"), "2");
    git(&dir, &["fsck", "--strict", "--no-progress"]);
    // The client's retry is answered with the turn already made.
    let (st, again) = ureq::post(&format!("{}/api/sessions/wk/turns", s.url))
        .set("Idempotency-Key", "wk-2")
        .send_json(whole_turn_body(2))
        .map(|r| (r.status(), r.into_json::<serde_json::Value>().unwrap()))
        .unwrap();
    assert_eq!(st, 200, "{again}");
    assert_eq!(again["turn"], 2, "{again}");
    assert_eq!(turn_commits(&dir, "HEAD"), "2");
    assert_clean_repo(&dir);
}

/// A whole turn is answered once its log entry is durable, before its
/// files are written: killed right after the answer, the files lack it,
/// and the restart's replay puts all of it in place, the commit answered.
#[test]
fn a_whole_turn_killed_after_its_answer_is_there_whole_after_the_restart() {
    let mut s = TestServer::start_process();
    s.turn("wa", "first", "one", &[]);
    let dir = s.session_dir("wa");
    s.restart_with_fault("kill-after-answer");
    let (st, made) = ureq::post(&format!("{}/api/sessions/wa/turns", s.url))
        .set("Idempotency-Key", "wa-2")
        .send_json(whole_turn_body(2))
        .map(|r| (r.status(), r.into_json::<serde_json::Value>().unwrap()))
        .unwrap();
    assert_eq!(st, 201, "{made}");
    let commit = made["commit"].as_str().unwrap().to_string();
    let status = s.wait_exit();
    assert!(!status.success(), "killed by the fault: {status}");
    // Answered, but the branch was never moved on disk.
    let head = || git(&dir, &["rev-parse", "HEAD"]).trim().to_string();
    assert_ne!(head(), commit);
    s.env.clear();
    s.spawn();
    assert_eq!(head(), commit, "replayed");
    let (_, nodes) = s.get("/api/sessions/wa/nodes");
    let ids = node_ids(&nodes);
    assert_eq!(&ids[ids.len() - 3..], &["u2", "a2", "t2"], "{ids:?}");
    let (_, meta) = s.get("/api/sessions/wa");
    assert_eq!(meta["turn_count"], 2, "{meta}");
    assert!(meta["open_turn"].is_null(), "{meta}");
    git(&dir, &["fsck", "--strict", "--no-progress"]);
    assert_clean_repo(&dir);
}

#[test]
fn a_whole_turn_killed_before_its_flush_leaves_nothing_and_is_made_on_retry() {
    let mut s = TestServer::start_process();
    s.turn("wb", "first", "one", &[]);
    let dir = s.session_dir("wb");
    let head = git(&dir, &["rev-parse", "HEAD"]);
    let before = snapshot(&dir);
    // What a kill during a flush may leave: the turn's pack, staged under
    // a temporary name (git never lists it); the next load removes it.
    let staged = dir.join(".git/objects/pack/.tmp-pack-0123.pack-4567");
    std::fs::write(&staged, b"PACK").unwrap();
    whole_turn_killed_by(&mut s, "wb", "kill-before-flush");
    // Never flushed: none of it, not one node, and the files as before.
    let (_, nodes) = s.get("/api/sessions/wb/nodes");
    let ids = node_ids(&nodes);
    assert!(
        !ids.iter().any(|i| ["u2", "a2", "t2"].contains(&i.as_str())),
        "{ids:?}"
    );
    let (_, meta) = s.get("/api/sessions/wb");
    assert_eq!(meta["turn_count"], 1, "{meta}");
    assert!(!staged.exists(), "a staged pack left by the kill stays");
    assert!(meta["open_turn"].is_null(), "{meta}");
    assert_eq!(git(&dir, &["rev-parse", "HEAD"]), head);
    let after = snapshot(&dir);
    let history = |m: &BTreeMap<PathBuf, Vec<u8>>| -> Vec<PathBuf> {
        m.keys()
            .filter(|p| p.starts_with(dir.join("history")))
            .cloned()
            .collect()
    };
    assert_eq!(
        history(&after),
        history(&before),
        "no node file of the turn"
    );
    git(&dir, &["fsck", "--strict", "--no-progress"]);
    // The client's retry makes the turn, once.
    let url = format!("{}/api/sessions/wb/turns", s.url);
    let (st, made) = ureq::post(&url)
        .set("Idempotency-Key", "wb-2")
        .send_json(whole_turn_body(2))
        .map(|r| (r.status(), r.into_json::<serde_json::Value>().unwrap()))
        .unwrap();
    assert_eq!(st, 201, "{made}");
    assert_eq!(made["turn"], 2, "{made}");
    s.settle("wb");
    assert_eq!(turn_commits(&dir, "HEAD"), "2");
    let (_, nodes) = s.get("/api/sessions/wb/nodes");
    let ids = node_ids(&nodes);
    assert_eq!(&ids[ids.len() - 3..], &["u2", "a2", "t2"], "{ids:?}");
    assert_clean_repo(&dir);
}

#[test]
fn an_acknowledged_whole_turn_lost_from_disk_is_replayed_from_the_log() {
    let mut s = TestServer::start_with_env(&[("OPENPROGRAM_WAL_FAULT", "no-checkpoint")]);
    s.turn("wr", "first", "one", &[]);
    let dir = s.session_dir("wr");
    let before = snapshot(&dir);
    let first_head = git(&dir, &["rev-parse", "HEAD"]);
    let (st, out) = s.post("/api/sessions/wr/turns", whole_turn_body(2));
    assert_eq!(st, 201, "{out}");
    let acked = out["commit"].as_str().unwrap().to_string();
    // A kill, then a power loss takes every file written since turn 1.
    s.kill();
    let undone = lose_unsynced_writes(&dir, &before);
    assert!(undone >= 5, "{undone} files taken away");
    assert_eq!(git(&dir, &["rev-parse", "HEAD"]), first_head);
    s.env.clear();
    s.spawn();
    assert_eq!(git(&dir, &["rev-parse", "HEAD"]).trim(), acked);
    let (_, nodes) = s.get("/api/sessions/wr/nodes");
    let ids = node_ids(&nodes);
    assert_eq!(&ids[ids.len() - 3..], &["u2", "a2", "t2"], "{ids:?}");
    assert_eq!(node_by_id(&nodes, "t2")["output"], "hits");
    git(&dir, &["fsck", "--strict", "--no-progress"]);
    assert_clean_repo(&dir);
}
