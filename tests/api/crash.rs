use serde_json::json;

use crate::helpers::{assert_clean_repo, git, turn_commits, TestServer};

#[test]
fn sigkill_mid_turn_keeps_every_acknowledged_node_and_the_open_turn() {
    let mut s = TestServer::start_process();
    s.turn("k", "first turn", "first reply", &["read"]);
    s.append(
        "k",
        json!({"id": "u2", "role": "user", "content": "second turn"}),
    );
    s.append("k", json!({"id": "a2", "role": "assistant", "content": ""}));
    s.append(
        "k",
        json!({"id": "t2", "role": "tool", "name": "grep", "caller": "a2", "content": "hits"}),
    );
    s.patch(
        "/api/sessions/k/messages/a2",
        json!({"content": "filled before the crash"}),
    );
    s.restart_after_kill();

    let (_, nodes) = s.get("/api/sessions/k/nodes");
    let ids: Vec<&str> = nodes["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 6);
    assert_eq!(&ids[3..], &["u2", "a2", "t2"]);
    assert_eq!(nodes["nodes"][4]["content"], "filled before the crash");
    let (_, meta) = s.get("/api/sessions/k");
    assert_eq!(meta["open_turn"]["number"], 2);
    assert_eq!(meta["head"], "a2");
    let dir = s.session_dir("k");
    assert_eq!(
        turn_commits(&dir, "HEAD"),
        "1",
        "an open turn is not committed"
    );

    // The turn can go on and end normally after the restart.
    s.append(
        "k",
        json!({"role": "tool", "name": "grep", "caller": "a2", "content": "more"}),
    );
    let out = s.end_turn("k", json!({}));
    assert_eq!(out["turn"], 2);
    assert_eq!(turn_commits(&dir, "HEAD"), "2");
    assert_eq!(git(&dir, &["ls-files", "history"]).lines().count(), 7);
    assert_clean_repo(&dir);
}

#[test]
fn sigkill_after_end_of_turn_keeps_the_commit() {
    let mut s = TestServer::start_process();
    let out = s.turn("k2", "hello", "world", &[]);
    s.restart_after_kill();
    let dir = s.session_dir("k2");
    assert_eq!(
        git(&dir, &["rev-parse", "HEAD"]).trim(),
        out["commit"].as_str().unwrap()
    );
    assert_clean_repo(&dir);
    let (_, meta) = s.get("/api/sessions/k2");
    assert_eq!(meta["turn_count"], 1);
    assert!(meta["open_turn"].is_null());
    // Nothing is committed twice on the next start either.
    s.turn("k2", "again", "more", &[]);
    assert_eq!(turn_commits(&dir, "HEAD"), "2");
}

/// The end of a turn is recorded in meta.json before its commit is made.
/// Recreate the state a crash between the two leaves, then restart.
#[test]
fn a_recorded_but_uncommitted_turn_is_committed_at_startup() {
    let mut s = TestServer::start_process();
    s.turn("k3", "turn one", "r1", &[]);
    s.append(
        "k3",
        json!({"id": "u2", "role": "user", "content": "turn two"}),
    );
    s.append(
        "k3",
        json!({"id": "a2", "role": "assistant", "content": "r2"}),
    );
    s.kill();
    let dir = s.session_dir("k3");
    let meta_path = dir.join("meta.json");
    let mut meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&meta_path).unwrap()).unwrap();
    let open = meta["open_turn"].clone();
    assert_eq!(open["number"], 2);
    meta["open_turn"] = serde_json::Value::Null;
    meta["turn_count"] = json!(2);
    meta["status"] = json!("idle");
    meta["last_turn"] = json!({"number": 2, "first_seq": open["first_seq"], "last_seq": 4, "head": "a2",
                               "duration_s": 1.5, "tokens": 7, "tool_calls": null, "context_file": null, "ended_at": 1.0});
    std::fs::write(&meta_path, serde_json::to_vec_pretty(&meta).unwrap()).unwrap();
    // A stale lock from the killed process must not block the repair.
    std::fs::write(dir.join(".git/index.lock"), b"").unwrap();
    // As a version without the write-ahead log left it (today the record
    // and the commit are one log entry; a record alone is what a failed
    // commit leaves, see `a_failed_commit_is_retried_into_its_own_turn`).
    for e in std::fs::read_dir(s.state_dir.join("wal")).unwrap() {
        std::fs::remove_file(e.unwrap().path()).unwrap();
    }
    s.spawn();
    let (_, m) = s.get("/api/sessions/k3");
    assert_eq!(m["turn_count"], 2);
    assert_eq!(turn_commits(&dir, "HEAD"), "2");
    let msg = git(&dir, &["log", "-1", "--format=%B"]);
    assert!(
        msg.starts_with("turn 2: turn two\n\nassistant: r2\n"),
        "{msg}"
    );
    assert!(
        msg.contains("[meta: turn took 1.5s, 0 tools, 7 tokens]"),
        "{msg}"
    );
    assert_clean_repo(&dir);
    // Loading again commits nothing twice.
    s.restart_after_kill();
    s.get("/api/sessions/k3");
    assert_eq!(turn_commits(&dir, "HEAD"), "2");
}

#[test]
fn a_turn_left_open_by_a_crash_is_closed_by_the_next_user_message() {
    let mut s = TestServer::start_process();
    s.append("k4", json!({"role": "user", "content": "before crash"}));
    s.append("k4", json!({"role": "assistant", "content": "partial"}));
    s.restart_after_kill();
    // After a restart the turn is no longer running, so a new message is
    // accepted: the interrupted turn is committed first.
    let out = s.append("k4", json!({"role": "user", "content": "after crash"}));
    assert_eq!(out["turn"], 2);
    assert_eq!(out["closed_interrupted_turn"]["turn"], 1);
    s.append("k4", json!({"role": "assistant", "content": "ok"}));
    s.end_turn("k4", json!({}));
    let dir = s.session_dir("k4");
    let subjects = git(&dir, &["log", "--format=%s"]);
    assert_eq!(
        subjects,
        "turn 2: after crash\nturn 1: before crash\nsession init\n"
    );
    assert_clean_repo(&dir);
}

#[test]
fn sigterm_drains_and_exits_cleanly() {
    let mut s = TestServer::start_process();
    s.turn("g", "hello", "world", &[]);
    assert_eq!(s.terminate(), Some(0), "{}", s.log());
    assert!(!s.state_dir.join("server.json").exists());
    s.spawn();
    assert_clean_repo(&s.session_dir("g"));
}

#[test]
fn an_interrupted_creation_leaves_no_session_behind() {
    let mut s = TestServer::start_process();
    s.kill();
    // What a crash in the middle of creating a session leaves.
    let tmp = s.state_dir.join("sessions/.tmp-create-abc");
    std::fs::create_dir_all(tmp.join("history")).unwrap();
    std::fs::write(tmp.join("meta.json"), "{}").unwrap();
    s.spawn();
    assert!(!tmp.exists());
}

/// The end of a turn renames meta.json without waiting for the directory
/// to be durable (the commit holds it). Recreate a crash that lost that
/// rename after the commit: loading restores meta.json from HEAD.
#[test]
fn a_lost_meta_rename_after_the_commit_is_restored_from_head() {
    let mut s = TestServer::start_process();
    s.turn("lm", "turn one", "r1", &[]);
    s.append("lm", json!({"role": "user", "content": "turn two"}));
    s.append("lm", json!({"role": "assistant", "content": "r2"}));
    let dir = s.session_dir("lm");
    let before_end = std::fs::read(dir.join("meta.json")).unwrap();
    let out = s.end_turn("lm", json!({}));
    s.kill();
    std::fs::write(dir.join("meta.json"), &before_end).unwrap();
    s.spawn();
    let (_, meta) = s.get("/api/sessions/lm");
    assert_eq!(meta["turn_count"], 2);
    assert!(meta["open_turn"].is_null(), "{meta}");
    assert_eq!(
        git(&dir, &["rev-parse", "HEAD"]).trim(),
        out["commit"].as_str().unwrap()
    );
    assert_eq!(turn_commits(&dir, "HEAD"), "2", "nothing committed twice");
    assert_clean_repo(&dir);
    assert!(
        !dir.join(".git/logs").exists(),
        "session repos keep no reflogs"
    );
    s.turn("lm", "turn three", "r3", &[]);
    assert_eq!(turn_commits(&dir, "HEAD"), "3");
}

/// Break the pack folder (a file in its place refuses every pack write,
/// even for root) and repair it.
fn break_packs(dir: &std::path::Path) {
    let packs = dir.join(".git/objects/pack");
    std::fs::rename(&packs, dir.join(".git/objects/pack.aside")).unwrap();
    std::fs::write(&packs, "not a folder").unwrap();
}

fn repair_packs(dir: &std::path::Path) {
    let packs = dir.join(".git/objects/pack");
    std::fs::remove_file(&packs).unwrap();
    std::fs::rename(dir.join(".git/objects/pack.aside"), &packs).unwrap();
}

#[test]
fn a_failed_commit_is_retried_into_its_own_turn() {
    let mut s = TestServer::start_process();
    s.turn("cp", "first", "one", &[]);
    let dir = s.session_dir("cp");
    s.append("cp", json!({"role": "user", "content": "second"}));
    s.append("cp", json!({"role": "assistant", "content": "two"}));
    break_packs(&dir);
    let url = format!("{}/api/sessions/cp/turns", s.url);
    let failed = ureq::post(&url).send_json(json!({}));
    let Err(ureq::Error::Status(503, resp)) = failed else {
        panic!("expected 503, got {failed:?}");
    };
    assert_eq!(resp.header("Retry-After"), Some("2"));
    let body: serde_json::Value = resp.into_json().unwrap();
    assert_eq!(body["code"], "commit_pending", "{body}");
    let (_, meta) = s.get("/api/sessions/cp");
    assert_eq!(
        (meta["commit_pending"].as_bool(), meta["status"].as_str()),
        (Some(true), Some("idle"))
    );
    let (_, health) = s.get("/api/health");
    assert_eq!(health["registry"]["commits_pending"], 1, "{health}");
    // The next turn waits for it: nothing is appended, nothing absorbed.
    let (st, e) = s.post(
        "/api/sessions/cp/messages",
        json!({"role": "user", "content": "third", "id": "u3"}),
    );
    assert_eq!(
        (st, e["code"].as_str()),
        (503, Some("commit_pending")),
        "{e}"
    );
    let (_, nodes) = s.get("/api/sessions/cp/nodes");
    assert!(!nodes["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n["id"] == "u3"));
    // The disk works again: the background retry makes turn 2's commit.
    repair_packs(&dir);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    // (A read while the retry holds the session may answer 503: wait for
    // a 200 that says the commit is made.)
    while {
        let (st, meta) = s.get("/api/sessions/cp");
        st != 200 || meta["commit_pending"] == true
    } {
        assert!(
            std::time::Instant::now() < deadline,
            "the commit was never retried: {}",
            s.log()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let subjects = git(&dir, &["log", "--format=%s"]);
    assert_eq!(
        subjects.lines().collect::<Vec<_>>(),
        ["turn 2: second", "turn 1: first", "session init"]
    );
    assert_eq!(s.get("/api/health").1["registry"]["commits_pending"], 0);
    // A client retrying the end now gets that commit (200), not a 409.
    let (st, again) = s.post("/api/sessions/cp/turns", json!({"turn": 2}));
    assert_eq!(st, 200, "{again}");
    s.turn("cp", "third", "three", &[]);
    assert!(git(&dir, &["log", "-1", "--format=%s"]).starts_with("turn 3: third"));
    // Pending across a restart: fixed before the start, made at load.
    s.append("cp", json!({"role": "user", "content": "fourth"}));
    s.append("cp", json!({"role": "assistant", "content": "four"}));
    break_packs(&dir);
    assert_eq!(s.post("/api/sessions/cp/turns", json!({})).0, 503);
    s.kill();
    repair_packs(&dir);
    s.spawn();
    let (_, meta) = s.get("/api/sessions/cp");
    assert_eq!(meta["commit_pending"], serde_json::Value::Null, "{meta}");
    assert!(git(&dir, &["log", "-1", "--format=%s"]).starts_with("turn 4: fourth"));
    assert_eq!(turn_commits(&dir, "HEAD"), "4");
    assert_clean_repo(&dir);
}

/// Packs in a session's `objects/pack`.
fn pack_files(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir.join(".git/objects/pack"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "pack")
        })
        .count()
}

/// A crash after an idle merge: the log's replay puts the merged per-turn
/// packs back beside the merged one, and the next merge then writes a
/// pack identical to that merged one (same objects, same name). It must
/// never retire the pack it has just written.
#[test]
fn a_replay_never_brings_merged_packs_back_and_every_object_stays() {
    for (i, action) in ["switch", "rename", "system"].iter().enumerate() {
        // No grace: the merged packs are gone before the kill; the log
        // still holds the entries that wrote them, and their removal.
        let mut s =
            TestServer::start_with_env(&[("OPENPROGRAM_MAINTENANCE_RETIRED_PACK_GRACE_S", "0")]);
        let id = format!("m{i}");
        s.turn(&id, "turn one", "reply one", &[]);
        s.turn(&id, "turn two", "reply two", &[]);
        let dir = s.session_dir(&id);
        let merged = std::time::Instant::now();
        while pack_files(&dir) > 1 {
            assert!(merged.elapsed().as_secs() < 20, "no idle merge");
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        s.restart_after_kill();
        assert_eq!(pack_files(&dir), 1, "the replay brings no merged pack back");
        let (status, body) = match *action {
            "switch" => s.post(
                &format!("/api/sessions/{id}/switch"),
                json!({"branch": "main"}),
            ),
            "rename" => s.patch(&format!("/api/sessions/{id}"), json!({"title": "renamed"})),
            _ => s.post(
                &format!("/api/sessions/{id}/messages"),
                json!({"role": "system", "content": "be brief"}),
            ),
        };
        assert!(status < 300, "{action}: {status} {body}");
        std::thread::sleep(std::time::Duration::from_millis(1500));
        assert!(pack_files(&dir) >= 1, "{action}: every pack was removed");
        assert_eq!(turn_commits(&dir, "HEAD"), "2");
        git(&dir, &["fsck", "--strict", "--no-progress"]);
        let (status, commits) = s.get(&format!("/api/sessions/{id}/commits"));
        assert_eq!(status, 200, "{action}: {commits}");
        s.turn(&id, "turn three", "reply three", &[]);
        assert_eq!(turn_commits(&dir, "HEAD"), "3");
    }
}

/// A retry of the first turn starts its branch with no commit yet (HEAD on
/// an unborn `retry-*`, the work tree without the first answer); a crash
/// right then must not hide the first turn's nodes, which only `main`
/// holds. Found by the crash model (seed 0).
#[test]
fn a_crash_while_retrying_the_first_turn_keeps_the_first_answer() {
    let mut s = TestServer::start_process();
    s.append(
        "rf",
        json!({"id": "u1", "role": "user", "content": "first"}),
    );
    s.append(
        "rf",
        json!({"id": "a1", "role": "assistant", "content": "answer one"}),
    );
    s.end_turn("rf", json!({}));
    s.restart_with_fault("kill-before-ack");
    let url = format!("{}/api/sessions/rf/messages", s.url);
    let sent = ureq::post(&url).send_json(
        json!({"id": "a1b", "role": "assistant", "predecessor": "u1", "content": "again"}),
    );
    assert!(sent.is_err(), "no answer from a killed server: {sent:?}");
    s.kill();
    s.env.clear();
    s.spawn();
    let (_, nodes) = s.get("/api/sessions/rf/nodes");
    let ids: Vec<&str> = nodes["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&"a1") && ids.contains(&"u1"), "{ids:?}");
    // The retry was cut before it was written (the branch switch's own
    // flush killed the server): sending it again works.
    let (status, body) = s.post(
        "/api/sessions/rf/messages",
        json!({"id": "a1b", "role": "assistant", "predecessor": "u1", "content": "again"}),
    );
    assert!(status == 200 || status == 201, "{body}");
    let (status, body) = s.post("/api/sessions/rf/turns", json!({}));
    assert_eq!(status, 201, "{body}");
    let (_, branches) = s.get("/api/sessions/rf/branches");
    assert_eq!(
        branches["branches"].as_array().unwrap().len(),
        2,
        "{branches}"
    );
    assert_clean_repo(&s.session_dir("rf"));
}

/// A session deleted and then created again with the same id (a channel
/// conversation's id is fixed), then a crash before the log's checkpoint:
/// the replay must not bring the deleted session's files into the new one.
#[test]
fn a_replay_never_brings_a_deleted_sessions_files_into_its_successor() {
    let mut s = TestServer::start_with_env(&[("OPENPROGRAM_WAL_FAULT", "no-checkpoint")]);
    s.turn("again", "the old conversation", "old reply", &["read"]);
    s.turn("again", "more of the old one", "old reply 2", &[]);
    let (status, _) = s.raw_delete("/api/sessions/again");
    assert_eq!(status, 200);
    s.turn("again", "a new conversation", "new reply", &[]);
    s.restart_after_kill();
    let (_, nodes) = s.get("/api/sessions/again/nodes");
    let texts: Vec<String> = nodes["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["content"].to_string())
        .collect();
    assert_eq!(texts.len(), 2, "{texts:?}");
    assert!(!texts.iter().any(|t| t.contains("old")), "{texts:?}");
    let (_, meta) = s.get("/api/sessions/again");
    assert_eq!(meta["turn_count"], 1, "{meta}");
    let dir = s.session_dir("again");
    assert_eq!(turn_commits(&dir, "HEAD"), "1");
    assert_clean_repo(&dir);
}

/// Sessions running at a crash are idle after the restart, in the list and
/// in their `meta.json`; the reset goes through the write-ahead log, so a
/// crash in the middle of its overwrite of a `meta.json` is repaired by the
/// next start's replay.
#[test]
fn sessions_running_at_a_crash_are_reset_through_the_log() {
    let mut s = TestServer::start_process();
    for id in ["run-1", "run-2", "run-3"] {
        s.append(
            id,
            json!({"role": "user", "content": format!("hello from {id}")}),
        );
        let (_, meta) = s.get(&format!("/api/sessions/{id}"));
        assert_eq!(meta["status"], "running", "{meta}");
    }
    // The start resets them; its log entries stay (no checkpoint).
    s.restart_with_fault("no-checkpoint");
    let on_disk = |s: &TestServer, id: &str| -> serde_json::Value {
        let path = s.session_dir(id).join("meta.json");
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
    };
    for id in ["run-1", "run-2", "run-3"] {
        let (_, meta) = s.get(&format!("/api/sessions/{id}"));
        assert_eq!(meta["status"], "idle", "{meta}");
        assert_eq!(on_disk(&s, id)["status"], "idle");
    }
    // A torn overwrite (a crash in its middle): the replay writes the
    // logged image again.
    s.kill();
    let path = s.session_dir("run-2").join("meta.json");
    let whole = std::fs::read(&path).unwrap();
    std::fs::write(&path, &whole[..whole.len() / 2]).unwrap();
    s.spawn();
    let meta = on_disk(&s, "run-2");
    assert_eq!(
        (meta["status"].as_str(), meta["id"].as_str()),
        (Some("idle"), Some("run-2"))
    );
    let (st, listed) = s.get("/api/sessions/run-2");
    assert_eq!(
        (st, listed["status"].as_str()),
        (200, Some("idle")),
        "{listed}"
    );
    let (_, nodes) = s.get("/api/sessions/run-2/messages");
    assert!(nodes.to_string().contains("hello from run-2"), "{nodes}");
}
