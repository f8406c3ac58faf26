//! A session repository changed from outside the server: detected, refused
//! with a clear 409 while live, reported by `fsck`, repaired on a restart,
//! never a 500 and never a lost turn.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::helpers::{assert_clean_repo, git, node_ids, turn_commits, TestServer};

/// Two turns in session `id`, then `git checkout HEAD~1` in its folder:
/// the folder.
fn two_turns_then_detach(s: &TestServer, id: &str) -> std::path::PathBuf {
    s.turn(id, "turn one", "reply one", &[]);
    s.turn(id, "turn two", "reply two", &[]);
    let dir = s.session_dir(id);
    git(
        &dir,
        &[
            "-c",
            "advice.detachedHead=false",
            "checkout",
            "-q",
            "HEAD~1",
        ],
    );
    dir
}

#[test]
fn a_detached_head_is_refused_while_live_and_put_back_at_restart() {
    let mut s = TestServer::start_process();
    let dir = two_turns_then_detach(&s, "o1");
    let (_, before) = s.get("/api/sessions/o1/nodes");
    let (status, body) = s.post(
        "/api/sessions/o1/messages",
        json!({"role": "user", "content": "turn three"}),
    );
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["code"], "repository_changed", "{body}");
    let text = body.to_string();
    assert!(
        text.contains("detached") && text.contains("checkout main"),
        "{text}"
    );
    let (status, body) = s.patch("/api/sessions/o1", json!({"title": "renamed"}));
    assert_eq!(status, 409, "{body}");
    // Reads go on, and nothing was written.
    let (status, after) = s.get("/api/sessions/o1/nodes");
    assert_eq!(status, 200);
    assert_eq!(before, after);
    // fsck names it.
    let (code, out, _) = s.cli(&["fsck"], None);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("HEAD is detached"), "{out}");
    // A restart puts HEAD back on main, with every file of turn two.
    s.restart_after_kill();
    let (status, body) = s.post(
        "/api/sessions/o1/messages",
        json!({"role": "user", "content": "turn three"}),
    );
    assert_eq!(status, 201, "{body}");
    s.append("o1", json!({"role": "assistant", "content": "reply three"}));
    let out = s.end_turn("o1", json!({}));
    assert_eq!(out["turn"], 3);
    assert_eq!(
        git(&dir, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
        "main"
    );
    assert_eq!(turn_commits(&dir, "HEAD"), "3");
    assert_clean_repo(&dir);
    let (code, out, _) = s.cli(&["fsck"], None);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn going_back_with_git_lets_writes_resume_without_a_restart() {
    let s = TestServer::start();
    let dir = two_turns_then_detach(&s, "o2");
    let (status, _) = s.post(
        "/api/sessions/o2/messages",
        json!({"role": "user", "content": "refused"}),
    );
    assert_eq!(status, 409);
    git(&dir, &["checkout", "-q", "main"]);
    s.turn("o2", "turn three", "reply three", &[]);
    assert_eq!(turn_commits(&dir, "HEAD"), "3");
    assert_clean_repo(&dir);
}

/// A branch moved back from outside (`git update-ref main HEAD~1`), then a
/// restart: startup's validation commits the turn again without anyone
/// opening the session.
#[test]
fn startup_commits_again_a_turn_missing_from_git() {
    let mut s = TestServer::start_process();
    s.turn("o3", "turn one", "reply one", &[]);
    s.turn("o3", "turn two", "reply two", &[]);
    let dir = s.session_dir("o3");
    s.kill();
    git(&dir, &["update-ref", "refs/heads/main", "HEAD~1"]);
    s.spawn();
    let deadline = Instant::now() + Duration::from_secs(20);
    while turn_commits(&dir, "HEAD") != "2" {
        assert!(
            Instant::now() < deadline,
            "turn two was not committed again\n{}",
            s.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let msg = git(&dir, &["log", "-1", "--format=%s"]);
    assert!(msg.starts_with("turn 2: turn two"), "{msg}");
    assert_clean_repo(&dir);
    let (_, meta) = s.get("/api/sessions/o3");
    assert_eq!(meta["turn_count"], 2);
    s.turn("o3", "turn three", "reply three", &[]);
    assert_eq!(turn_commits(&dir, "HEAD"), "3");
}

/// A session whose project folder moved away is listed; opening it says
/// why it cannot be read (never "unknown session") until the project is
/// relocated.
#[test]
fn a_session_whose_project_moved_says_why_it_cannot_be_opened() {
    let root = tempfile::tempdir().unwrap();
    let first = root.path().join("p1");
    std::fs::create_dir(&first).unwrap();
    let mut s = TestServer::start_process();
    let (_, p) = s.post("/api/projects", json!({"path": first}));
    let pid = p["id"].as_str().unwrap().to_string();
    s.turn_in_project("mv2", &pid);
    std::fs::rename(&first, root.path().join("p2")).unwrap();
    s.restart_after_kill();
    let (status, meta) = s.get("/api/sessions/mv2");
    assert_eq!(status, 200, "{meta}");
    assert_eq!(meta["id"], "mv2");
    assert_eq!(meta["available"], false);
    assert_eq!(meta["project_path_missing"], true);
    assert_eq!(meta["unavailable"]["code"], "project_path_missing");
    assert_eq!(
        meta["unavailable"]["relocate"],
        format!("/api/projects/{pid}/relocate")
    );
    // What the list knows: the title, or (a kill may have left the list
    // behind the first turn's title) the preview it falls back to.
    let shown = [&meta["title"], &meta["preview"]]
        .iter()
        .any(|v| v.as_str().is_some_and(|t| !t.is_empty()));
    assert!(shown, "{meta}");
    for path in ["messages", "commits", "nodes", "branches"] {
        let (status, e) = s.get(&format!("/api/sessions/mv2/{path}"));
        assert_eq!(status, 409, "{path}: {e}");
        assert_eq!(e["code"], "project_path_missing", "{path}: {e}");
        assert!(e["error"].as_str().unwrap().contains("p1"), "{e}");
    }
    let mut ws = crate::ws::WsClient::connect(&s);
    ws.send(json!({"action": "rewind_list", "session_id": "mv2"}));
    let reply = ws.expect("action_error", |_| true);
    assert_eq!(reply["data"]["code"], "project_path_missing", "{reply}");
    // Relocated, it opens again.
    let (st, _) = s.post(
        &format!("/api/projects/{pid}/relocate"),
        json!({"path": root.path().join("p2")}),
    );
    assert_eq!(st, 200);
    let (status, meta) = s.get("/api/sessions/mv2");
    assert_eq!(status, 200);
    assert!(meta.get("available").is_none(), "{meta}");
    let (status, _) = s.get("/api/sessions/mv2/messages");
    assert_eq!(status, 200);
}

/// A user's `git gc` (it repacks every object, deletes the server's packs
/// and moves the refs into `packed-refs`) and `git fsck` loops, while the
/// server writes turns and merges packs: every turn lands, nothing breaks.
#[test]
fn git_gc_and_fsck_by_the_user_while_the_server_writes() {
    let s = TestServer::start_process();
    let id = "gc-live";
    s.turn(id, "turn one", "reply one", &[]);
    s.turn(id, "turn two", "reply two", &[]);
    let dir = s.session_dir(id);
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        let user = scope.spawn(|| {
            let mut runs = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                // Each may race a commit or a merge: git's own output is
                // not asserted here, the repository is, below.
                // pack-refs most often: pruning a loose ref races the
                // server's own update of it (git's lock protocol keeps
                // them apart).
                for args in [
                    &["gc", "--quiet", "--prune=now"][..],
                    &["pack-refs", "--all"][..],
                    &["fsck", "--no-progress"][..],
                    &["pack-refs", "--all"][..],
                    &["pack-refs", "--all"][..],
                    &["pack-refs", "--all"][..],
                ] {
                    let _ = std::process::Command::new("git")
                        .args(args)
                        .current_dir(&dir)
                        .env("GIT_CONFIG_NOSYSTEM", "1")
                        .output();
                }
                runs += 1;
            }
            runs
        });
        // The user's loop stops however this ends: a failed turn panics
        // (and is reported) instead of leaving the scope waiting forever.
        struct Stop<'a>(&'a std::sync::atomic::AtomicBool);
        impl Drop for Stop<'_> {
            fn drop(&mut self) {
                self.0.store(true, std::sync::atomic::Ordering::Relaxed);
            }
        }
        let guard = Stop(&stop);
        for t in 3..=24 {
            s.turn(id, &format!("turn {t}"), &format!("reply {t}"), &[]);
            if t % 6 == 0 {
                // Some quiet moments, for the idle merges.
                std::thread::sleep(Duration::from_millis(1_200));
            }
        }
        drop(guard);
        assert!(user.join().unwrap() > 0);
    });
    // Once the user's git is done: a switch and turns on another branch,
    // the history through the API and git, then the same after a restart.
    let (status, v) = s.post(&format!("/api/sessions/{id}/checkout"), json!({"turn": 2}));
    assert_eq!(status, 200, "{v}\n{}", s.log());
    s.turn(id, "on a replay branch", "fine", &[]);
    let (status, v) = s.post(
        &format!("/api/sessions/{id}/switch"),
        json!({"branch": "main"}),
    );
    assert_eq!(status, 200, "{v}");
    s.turn(id, "turn 25", "reply 25", &[]);
    let (status, commits) = s.get(&format!("/api/sessions/{id}/commits?limit=100"));
    assert_eq!(status, 200, "{commits}");
    assert_eq!(turn_commits(&dir, "main"), "25", "{}", s.log());
    assert_clean_repo(&dir);
    let mut s = s;
    s.restart_after_kill();
    let (_, msgs) = s.get(&format!("/api/sessions/{id}/messages"));
    assert_eq!(msgs["messages"].as_array().unwrap().len(), 50, "{msgs}");
    s.turn(id, "after the restart", "still fine", &[]);
    assert_clean_repo(&dir);
    let (code, out, err) = s.cli(&["fsck"], None);
    assert_eq!(code, 0, "openprogram fsck\n{out}{err}");
}

/// `git reset --hard` and `git gc --prune=now` in a session folder: the
/// acknowledged turns come back with the same commit ids: while the server
/// runs (reads go on, the next write puts the branch back first), and
/// after a restart; `fsck` reports the moved branch meanwhile.
#[test]
fn a_branch_reset_with_git_comes_back_with_the_same_commits() {
    let mut s = TestServer::start_process();
    for n in 1..=4 {
        s.turn("r1", &format!("turn {n}"), &format!("reply {n}"), &[]);
    }
    let dir = s.session_dir("r1");
    let acked = git(&dir, &["rev-parse", "main"]);
    git(&dir, &["reset", "-q", "--hard", "HEAD~3"]);
    git(&dir, &["gc", "-q", "--prune=now"]);
    let (st, msgs) = s.get("/api/sessions/r1/messages");
    assert_eq!(st, 200, "{msgs}");
    assert_eq!(msgs["messages"].as_array().unwrap().len(), 8, "{msgs}");
    s.turn("r1", "turn 5", "reply 5", &[]);
    assert_eq!(
        git(&dir, &["rev-parse", "main~1"]),
        acked,
        "the same commits"
    );
    assert_eq!(turn_commits(&dir, "HEAD"), "5");
    assert_clean_repo(&dir);

    // Stopped: moved back, reported, then put back by the start.
    let acked = git(&dir, &["rev-parse", "main"]);
    s.kill();
    git(&dir, &["update-ref", "refs/heads/main", "HEAD~2"]);
    git(&dir, &["gc", "-q", "--prune=now"]);
    let (code, out, err) = s.cli(&["fsck"], None);
    assert!(
        out.contains("was moved back") || err.contains("was moved back"),
        "{code}\n{out}\n{err}"
    );
    s.spawn();
    let (st, meta) = s.get("/api/sessions/r1");
    assert_eq!(st, 200, "{meta}");
    assert_eq!(git(&dir, &["rev-parse", "main"]), acked, "{}", s.log());
    assert_clean_repo(&dir);
    let (_, msgs) = s.get("/api/sessions/r1/messages");
    assert_eq!(msgs["messages"].as_array().unwrap().len(), 10, "{msgs}");
}

#[test]
fn a_forks_turn_replayed_after_a_kill_is_put_back_after_a_reset() {
    let mut s = TestServer::start_process();
    s.turn("fo", "first", "one", &[]);
    let (st, fork) = s.post("/api/sessions/fo/fork", json!({}));
    assert_eq!(st, 201, "{fork}");
    let id = fork["id"].as_str().unwrap().to_string();
    s.append(
        &id,
        json!({"id": "u2", "role": "user", "content": "second"}),
    );
    s.append(
        &id,
        json!({"id": "a2", "role": "assistant", "content": "two"}),
    );
    // Whatever the start repairs, done first: the next start's first
    // flush is the turn's.
    s.restart_after_kill();
    assert_eq!(s.get(&format!("/api/sessions/{id}")).0, 200);
    // The fork's first turn reaches the log, and the process dies before
    // any of it is written: the restart's replay writes it.
    s.restart_with_fault("kill-before-ack");
    let url = format!("{}/api/sessions/{id}/turns", s.url);
    assert!(ureq::post(&url).send_json(json!({})).is_err());
    s.kill();
    s.env.clear();
    s.spawn();
    let dir = s.session_dir(&id);
    let (st, meta) = s.get(&format!("/api/sessions/{id}"));
    assert_eq!(st, 200, "{meta}");
    assert_eq!(meta["turn_count"], 2, "{meta}");
    let turn = git(&dir, &["rev-parse", "main"]);
    // A user's reset, while the server runs and after a restart: the
    // turn comes back with its commit id.
    git(&dir, &["reset", "-q", "--hard", "HEAD~1"]);
    s.restart_after_kill();
    let (_, nodes) = s.get(&format!("/api/sessions/{id}/nodes"));
    let ids = node_ids(&nodes);
    assert!(
        ids.iter().any(|i| i == "u2") && ids.iter().any(|i| i == "a2"),
        "{ids:?}"
    );
    assert_eq!(git(&dir, &["rev-parse", "main"]), turn, "{}", s.log());
    // The fork's first state is kept too.
    git(&dir, &["update-ref", "refs/heads/main", "HEAD~2"]);
    s.restart_after_kill();
    assert_eq!(s.get(&format!("/api/sessions/{id}/nodes")).0, 200);
    assert_eq!(git(&dir, &["rev-parse", "main"]), turn, "{}", s.log());
    assert_clean_repo(&dir);
}

#[test]
fn an_imported_bundles_branch_moved_back_by_hand_comes_back_with_the_same_commit() {
    let mut s = TestServer::start_process();
    for n in 1..=3 {
        s.turn("bo", &format!("turn {n}"), &format!("reply {n}"), &[]);
    }
    let (st, bundle) = s.try_get_bytes("/api/sessions/bo/export").unwrap();
    assert_eq!(st, 200);
    // Its own id is taken: the import is a new session.
    let (st, v) = s
        .try_post_bytes("/api/sessions/import", "application/x-git-bundle", &bundle)
        .unwrap();
    assert_eq!(st, 201, "{v}");
    let id = v["id"].as_str().unwrap().to_string();
    assert_ne!(id, "bo");
    let dir = s.session_dir(&id);
    let tip = git(&dir, &["rev-parse", "main"]);
    // A user moves the imported branch back; the next start puts it back
    // on the acknowledged commit, never a new commit of the same turn.
    git(&dir, &["update-ref", "refs/heads/main", "HEAD~1"]);
    s.restart_after_kill();
    let (st, meta) = s.get(&format!("/api/sessions/{id}"));
    assert_eq!(st, 200, "{meta}");
    assert_eq!(meta["turn_count"], 3, "{meta}");
    assert_eq!(git(&dir, &["rev-parse", "main"]), tip, "{}", s.log());
    // (Its meta.json, renamed to the new id, is committed with its next
    // turn.)
    git(&dir, &["fsck", "--strict", "--no-progress"]);
}

#[test]
fn a_branch_moved_elsewhere_keeps_its_acknowledged_commits_reachable() {
    let mut s = TestServer::start_process();
    for n in 1..=3 {
        s.turn("el", &format!("turn {n}"), &format!("reply {n}"), &[]);
    }
    let dir = s.session_dir("el");
    let acked = git(&dir, &["rev-parse", "main"]).trim().to_string();
    // The user's own line from turn 1: not behind the acknowledged commit.
    git(&dir, &["reset", "-q", "--hard", "HEAD~2"]);
    git(
        &dir,
        &[
            "-c",
            "user.name=me",
            "-c",
            "user.email=me@example.com",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "mine",
        ],
    );
    s.turn("el", "turn 4", "reply 4", &[]);
    // The start finds the branch elsewhere: the acknowledged commit gets a
    // ref of its own before anything can move the service's tip.
    s.restart_after_kill();
    assert_eq!(s.get("/api/sessions/el").0, 200);
    git(&dir, &["gc", "-q", "--prune=now"]);
    let kept = git(
        &dir,
        &["for-each-ref", "--contains", &acked, "--format=%(refname)"],
    );
    assert!(
        kept.contains("refs/openprogram/kept/"),
        "{kept}\n{}\n{}",
        git(
            &dir,
            &["log", "--all", "--oneline", "--graph", "--decorate"]
        ),
        s.log()
    );
    git(&dir, &["cat-file", "-e", &acked]);
}
