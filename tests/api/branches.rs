//! Retry branches, head switches, replay and portable export,
//! checked over HTTP and with the `git` CLI.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::{json, Value};

use crate::helpers::{assert_clean_repo, git, turn_commits, TestServer};
use crate::ws::WsClient;

/// One turn with known node ids: user `u<n>`, assistant `a<n>`.
fn turn(s: &TestServer, sid: &str, n: u32) -> Value {
    let u = s.append(
        sid,
        json!({"id": format!("u{n}"), "role": "user", "content": format!("question {n}")}),
    );
    assert_eq!(u["created"], true, "{u}");
    s.append(
        sid,
        json!({"id": format!("a{n}"), "role": "assistant", "content": format!("answer {n}")}),
    );
    s.end_turn(sid, json!({}))
}

fn sha(v: &Value) -> String {
    v["commit"].as_str().expect("commit sha").to_string()
}

/// Ids of the rendered conversation (tool nodes included).
fn ids(messages: &Value) -> Vec<String> {
    messages
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_string())
        .collect()
}

fn rendered(s: &TestServer, sid: &str) -> Vec<String> {
    let (st, v) = s.get(&format!("/api/sessions/{sid}/messages"));
    assert_eq!(st, 200, "{v}");
    ids(&v["messages"])
}

/// Node ids of the history files in `commit`'s tree.
fn tree_ids(dir: &Path, commit: &str) -> BTreeSet<String> {
    git(dir, &["ls-tree", "-r", "--name-only", commit, "history"])
        .lines()
        .map(node_id_of)
        .collect()
}

/// Node ids of the history files in a work tree.
fn worktree_ids(dir: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut stack = vec![dir.join("history")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else {
                out.insert(node_id_of(&e.file_name().to_string_lossy()));
            }
        }
    }
    out
}

/// `history/00/00/000003-u-u2.json` → `u2`.
fn node_id_of(path: &str) -> String {
    let name = path.rsplit('/').next().unwrap();
    name.strip_suffix(".json")
        .unwrap()
        .chars()
        .skip(9)
        .collect()
}

/// The session list's preview of session `sid`.
fn list_preview(s: &TestServer, sid: &str) -> String {
    let (_, page) = s.get("/api/sessions");
    page["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == sid)
        .and_then(|r| r["preview"].as_str())
        .unwrap_or_default()
        .to_string()
}

fn set(ids: &[&str]) -> BTreeSet<String> {
    ids.iter().map(|s| s.to_string()).collect()
}

#[test]
fn a_retry_makes_a_branch_and_switching_moves_between_them() {
    let s = TestServer::start_process();
    let dir = s.session_dir("r");
    let t1 = turn(&s, "r", 1);
    let t2 = turn(&s, "r", 2);
    let t3 = turn(&s, "r", 3);

    // Retry the answer to turn 2: a new assistant node for u2.
    let retry = s.append(
        "r",
        json!({"id": "a2b", "role": "assistant", "predecessor": "u2", "content": "a better answer 2"}),
    );
    assert_eq!(
        retry["turn"], 2,
        "a retry of turn 2 is turn 2 of its branch"
    );
    let (_, meta) = s.get("/api/sessions/r");
    assert_eq!(meta["status"], "running");
    assert_eq!(
        git(&dir, &["symbolic-ref", "--short", "HEAD"]).trim(),
        "retry-a2b",
        "the retry branch becomes current"
    );
    let r2 = s.end_turn("r", json!({}));
    assert_eq!(r2["turn"], 2);
    // The branch starts at turn 1; main is untouched.
    assert_eq!(git(&dir, &["rev-parse", "retry-a2b^"]).trim(), sha(&t1));
    assert_eq!(git(&dir, &["rev-parse", "retry-a2b"]).trim(), sha(&r2));
    assert_eq!(git(&dir, &["rev-parse", "main"]).trim(), sha(&t3));
    let msg = git(&dir, &["log", "-1", "--format=%B", "retry-a2b"]);
    assert!(
        msg.starts_with("turn 2: question 2\n\nassistant: a better answer 2"),
        "{msg}"
    );
    assert!(msg.contains("Openprogram-Branch: retry-a2b"), "{msg}");
    assert!(msg.contains("Openprogram-Head-Node: a2b"), "{msg}");
    assert_clean_repo(&dir);
    // Each commit holds exactly its path; the work tree is the current one.
    assert_eq!(tree_ids(&dir, &sha(&r2)), set(&["u1", "a1", "u2", "a2b"]));
    assert_eq!(tree_ids(&dir, &sha(&t2)), set(&["u1", "a1", "u2", "a2"]));
    assert_eq!(worktree_ids(&dir), set(&["u1", "a1", "u2", "a2b"]));
    assert_eq!(rendered(&s, "r"), ["u1", "a1", "u2", "a2b"]);

    let (st, b) = s.get("/api/sessions/r/branches");
    assert_eq!(st, 200);
    assert_eq!(b["current"], "retry-a2b");
    let rows: Vec<(String, String, u64, bool, String)> = b["branches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().into(),
                r["commit"].as_str().unwrap().into(),
                r["turns"].as_u64().unwrap(),
                r["current"].as_bool().unwrap(),
                r["head_node"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        vec![
            ("main".into(), sha(&t3), 3, false, "a3".into()),
            ("retry-a2b".into(), sha(&r2), 2, true, "a2b".into()),
        ]
    );
    // No node is lost: the raw listing has every node of every branch.
    let (_, nodes) = s.get("/api/sessions/r/nodes");
    let all: BTreeSet<String> = ids(&nodes["nodes"]).into_iter().collect();
    assert_eq!(all, set(&["u1", "a1", "u2", "a2", "u3", "a3", "a2b"]));

    // A fork at the retried answer holds that path only.
    let (st, fork) = s.post("/api/sessions/r/fork", json!({"node_id": "a2b"}));
    assert_eq!(st, 201, "{fork}");
    assert_eq!(fork["forked_from"]["commit"], r2["commit"]);
    let fid = fork["id"].as_str().unwrap();
    assert_eq!(rendered(&s, fid), ["u1", "a1", "u2", "a2b"]);
    let (_, h) = s.get(&format!("/api/sessions/{fid}/history"));
    assert_eq!(h["commits"].as_array().unwrap().len(), 2);
    assert_eq!(
        h["commits"][0]["branch"], "main",
        "the fork's own line is main"
    );

    // Switch back to main by branch, then to the retry by node.
    let (st, sw) = s.post("/api/sessions/r/switch", json!({"branch": "main"}));
    assert_eq!(st, 200, "{sw}");
    assert_eq!(ids(&sw["messages"]), ["u1", "a1", "u2", "a2", "u3", "a3"]);
    assert_eq!(rendered(&s, "r"), ["u1", "a1", "u2", "a2", "u3", "a3"]);
    assert_eq!(
        git(&dir, &["symbolic-ref", "--short", "HEAD"]).trim(),
        "main"
    );
    assert_eq!(
        worktree_ids(&dir),
        set(&["u1", "a1", "u2", "a2", "u3", "a3"])
    );
    assert_eq!(git(&dir, &["status", "--porcelain", "history"]), "");
    git(&dir, &["fsck", "--strict", "--no-progress"]);
    assert_eq!(
        list_preview(&s, "r"),
        "question 3",
        "the list previews the current path"
    );
    let (st, sw) = s.post("/api/sessions/r/switch", json!({"node_id": "a2b"}));
    assert_eq!(st, 200, "{sw}");
    assert_eq!(sw["branch"], "retry-a2b");
    assert_eq!(rendered(&s, "r"), ["u1", "a1", "u2", "a2b"]);
    assert_eq!(
        git(&dir, &["symbolic-ref", "--short", "HEAD"]).trim(),
        "retry-a2b"
    );
    assert_eq!(worktree_ids(&dir), set(&["u1", "a1", "u2", "a2b"]));
    assert_eq!(list_preview(&s, "r"), "question 2");

    // The conversation goes on along the retry branch.
    let t = turn(&s, "r", 4);
    assert_eq!(t["turn"], 3);
    assert_eq!(git(&dir, &["rev-parse", "retry-a2b^"]).trim(), sha(&r2));
    assert_eq!(git(&dir, &["rev-parse", "main"]).trim(), sha(&t3));
    assert_eq!(rendered(&s, "r"), ["u1", "a1", "u2", "a2b", "u4", "a4"]);
    assert_clean_repo(&dir);

    // Retrying the very first answer starts a branch with no parent.
    s.append(
        "r",
        json!({"id": "a1b", "role": "assistant", "predecessor": "u1", "content": "again"}),
    );
    let r1 = s.end_turn("r", json!({}));
    assert_eq!(r1["turn"], 1);
    assert_eq!(turn_commits(&dir, "retry-a1b"), "1");
    assert_eq!(tree_ids(&dir, &sha(&r1)), set(&["u1", "a1b"]));
    assert_clean_repo(&dir);

    // Everything survives a restart: branches, nodes, the current branch.
    let mut s = s;
    s.kill();
    s.restart_after_kill();
    assert_eq!(rendered(&s, "r"), ["u1", "a1b"]);
    let (_, b) = s.get("/api/sessions/r/branches");
    assert_eq!(b["branches"].as_array().unwrap().len(), 3);
    let (_, nodes) = s.get("/api/sessions/r/nodes");
    assert_eq!(nodes["nodes"].as_array().unwrap().len(), 10);
    assert_clean_repo(&dir);
}

#[test]
fn every_turn_commit_checks_out_to_exactly_its_path() {
    let s = TestServer::start();
    let dir = s.session_dir("c");
    turn(&s, "c", 1);
    // Turn 2 calls tools; tool results belong to its path.
    s.append(
        "c",
        json!({"id": "u2", "role": "user", "content": "question 2"}),
    );
    s.append(
        "c",
        json!({"id": "a2", "role": "assistant", "content": "answer 2"}),
    );
    s.append(
        "c",
        json!({"id": "t2", "role": "tool", "name": "read", "caller": "a2", "content": "ok"}),
    );
    s.end_turn("c", json!({}));
    turn(&s, "c", 3);
    s.append(
        "c",
        json!({"id": "a3b", "role": "assistant", "predecessor": "u3", "content": "retry 3"}),
    );
    s.end_turn("c", json!({}));
    s.post("/api/sessions/c/switch", json!({"branch": "main"}));
    turn(&s, "c", 4);

    let (_, h) = s.get("/api/sessions/c/history");
    let rows = h["commits"].as_array().unwrap();
    assert_eq!(rows.len(), 5, "one row per commit of every branch: {h}");
    let copy = tempfile::tempdir().unwrap();
    let clone = copy.path().join("copy");
    git(
        copy.path(),
        &[
            "clone",
            "-q",
            dir.to_str().unwrap(),
            clone.to_str().unwrap(),
        ],
    );
    for row in rows {
        let commit = row["sha"].as_str().unwrap();
        git(&clone, &["checkout", "-q", "--detach", commit]);
        // The files of that turn's path, exactly.
        let (st, view) = s.post("/api/sessions/c/checkout", json!({"commit": commit}));
        assert_eq!(st, 200, "{view}");
        let expected: BTreeSet<String> = ids(&view["messages"]).into_iter().collect();
        assert_eq!(worktree_ids(&clone), expected, "commit {commit}");
        // And the meta.json of that moment.
        let meta: Value =
            serde_json::from_slice(&std::fs::read(clone.join("meta.json")).unwrap()).unwrap();
        assert_eq!(meta["turn_count"], row["turn"], "commit {commit}");
        assert_eq!(meta["head"], row["head_node"], "commit {commit}");
        assert_eq!(git(&clone, &["status", "--porcelain"]), "");
    }
    let branches: BTreeSet<&str> = rows.iter().map(|r| r["branch"].as_str().unwrap()).collect();
    assert_eq!(branches, BTreeSet::from(["main", "retry-a3b"]));
    s.post("/api/sessions/c/checkout", json!({"step": "latest"}));
    assert_clean_repo(&dir);
}

#[test]
fn replay_to_an_old_turn_then_a_message_starts_a_branch_and_keeps_the_later_turns() {
    let s = TestServer::start();
    let dir = s.session_dir("p");
    let t: Vec<Value> = (1..=5).map(|n| turn(&s, "p", n)).collect();

    let (st, v) = s.post("/api/sessions/p/checkout", json!({"turn": 2}));
    assert_eq!(st, 200, "{v}");
    assert_eq!((v["turn"].as_u64(), v["of"].as_u64()), (Some(2), Some(5)));
    assert_eq!(v["live"], false);
    assert_eq!(v["commit"], t[1]["commit"]);
    assert_eq!(v["prev"], t[0]["commit"]);
    assert_eq!(v["next"], t[2]["commit"]);
    assert_eq!(ids(&v["messages"]), ["u1", "a1", "u2", "a2"]);
    assert_eq!(rendered(&s, "p"), ["u1", "a1", "u2", "a2"]);
    // Stepping: prev, next, next.
    let (_, v) = s.post("/api/sessions/p/checkout", json!({"step": "prev"}));
    assert_eq!(v["turn"], 1);
    assert_eq!(v["prev"], Value::Null);
    let (st, e) = s.post("/api/sessions/p/checkout", json!({"step": "prev"}));
    assert_eq!((st, e["code"].as_str()), (404, Some("no_such_turn")), "{e}");
    let (_, v) = s.post("/api/sessions/p/checkout", json!({"step": "next"}));
    assert_eq!(v["turn"], 2);
    let (_, h) = s.get("/api/sessions/p/history");
    assert_eq!(h["position"]["turn"], 2);
    assert_eq!(h["position"]["of"], 5);
    assert_eq!(h["position"]["live"], false);
    // A read-only view: git did not move.
    assert_eq!(git(&dir, &["rev-parse", "HEAD"]).trim(), sha(&t[4]));
    assert_eq!(worktree_ids(&dir).len(), 10);

    // A message now continues from turn 2 on a new branch.
    let u = s.append(
        "p",
        json!({"id": "n3", "role": "user", "content": "new direction"}),
    );
    assert_eq!(u["turn"], 3);
    s.append(
        "p",
        json!({"id": "m3", "role": "assistant", "content": "sure"}),
    );
    let n3 = s.end_turn("p", json!({}));
    assert_eq!(n3["turn"], 3);
    assert_eq!(
        git(&dir, &["symbolic-ref", "--short", "HEAD"]).trim(),
        "replay-n3"
    );
    assert_eq!(git(&dir, &["rev-parse", "replay-n3^"]).trim(), sha(&t[1]));
    // Turns 3–5 stay on main, untouched.
    let mut main: Vec<String> = git(&dir, &["log", "--format=%H", "main"])
        .lines()
        .map(str::to_owned)
        .collect();
    main.pop(); // the `session init` root
    let expected: Vec<String> = t.iter().rev().map(sha).collect();
    assert_eq!(main, expected);
    assert_eq!(rendered(&s, "p"), ["u1", "a1", "u2", "a2", "n3", "m3"]);
    assert_clean_repo(&dir);
    let (_, h) = s.get("/api/sessions/p/history");
    assert_eq!(h["commits"].as_array().unwrap().len(), 6);
    assert_eq!(h["commits"][0]["branch"], "replay-n3");
    assert_eq!(h["position"]["live"], true);
    assert_eq!(h["position"]["of"], 3);
    let on_path: Vec<u64> = h["commits"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["on_current_path"] == true)
        .map(|r| r["turn"].as_u64().unwrap())
        .collect();
    assert_eq!(on_path, [3, 2, 1]);

    // Viewing the tip of another branch and writing continues that branch.
    s.post(
        "/api/sessions/p/checkout",
        json!({"commit": t[4]["commit"]}),
    );
    turn(&s, "p", 6);
    assert_eq!(
        git(&dir, &["symbolic-ref", "--short", "HEAD"]).trim(),
        "main"
    );
    assert_eq!(turn_commits(&dir, "main"), "6");
    assert_eq!(git(&dir, &["branch", "--list"]).lines().count(), 2);
    assert_clean_repo(&dir);
}

#[test]
fn bad_switches_and_checkouts_are_refused_and_change_nothing() {
    let s = TestServer::start();
    let dir = s.session_dir("e");
    turn(&s, "e", 1);
    let t2 = turn(&s, "e", 2);
    let other = turn(&s, "other", 1);
    let (_, before) = s.get("/api/sessions/e");
    let head_before = git(&dir, &["rev-parse", "HEAD"]);
    let cases: Vec<(&str, Value, u16, &str)> = vec![
        (
            "checkout",
            json!({"commit": "0123456789abcdef0123456789abcdef01234567"}),
            404,
            "unknown_commit",
        ),
        (
            "checkout",
            json!({"commit": other["commit"]}),
            404,
            "unknown_commit",
        ),
        ("checkout", json!({"commit": "abc"}), 404, "unknown_commit"),
        ("checkout", json!({"turn": 9}), 404, "no_such_turn"),
        ("checkout", json!({"step": "next"}), 404, "no_such_turn"),
        ("checkout", json!({}), 400, "invalid_input"),
        (
            "checkout",
            json!({"turn": 1, "step": "prev"}),
            400,
            "invalid_input",
        ),
        ("switch", json!({"node_id": "nope"}), 404, "unknown_node"),
        ("switch", json!({"branch": "nope"}), 404, "unknown_branch"),
        (
            "switch",
            json!({"branch": "main", "node_id": "u1"}),
            400,
            "invalid_input",
        ),
        ("switch", json!({}), 400, "invalid_input"),
    ];
    for (route, body, status, code) in cases {
        let (st, e) = s.post(&format!("/api/sessions/e/{route}"), body.clone());
        assert_eq!(
            (st, e["code"].as_str()),
            (status, Some(code)),
            "{route} {body}: {e}"
        );
        assert!(e["error"].as_str().is_some_and(|m| !m.is_empty()));
    }
    for (route, body) in [
        ("checkout", json!({"step": "sideways"})),
        ("checkout", json!({"commit": 5})),
        ("switch", json!({"node": "u1"})),
    ] {
        let (st, e) = s.post(&format!("/api/sessions/e/{route}"), body.clone());
        assert_eq!(st, 400, "{route} {body}: {e}");
    }
    for route in ["checkout", "switch", "history", "branches"] {
        let path = format!("/api/sessions/missing/{route}");
        let st = if route == "checkout" || route == "switch" {
            s.post(&path, json!({"branch": "main"})).0
        } else {
            s.get(&path).0
        };
        assert!(st == 404 || st == 400, "{route}: {st}");
    }
    // While a turn runs: the spec's run-active refusal.
    s.append("e", json!({"id": "u3", "role": "user", "content": "busy"}));
    for (route, body) in [
        ("checkout", json!({"commit": t2["commit"]})),
        ("switch", json!({"node_id": "a1"})),
    ] {
        let (st, e) = s.post(&format!("/api/sessions/e/{route}"), body);
        assert_eq!((st, e["code"].as_str()), (409, Some("run_active")), "{e}");
        assert!(e["error"]
            .as_str()
            .unwrap()
            .contains("a run is currently active"));
    }
    // A retry while a turn runs is refused the same way.
    let (st, e) = s.post(
        "/api/sessions/e/messages",
        json!({"role": "assistant", "predecessor": "u1", "content": "x"}),
    );
    assert_eq!((st, e["code"].as_str()), (409, Some("run_active")), "{e}");
    // Nothing moved.
    let (_, after) = s.get("/api/sessions/e");
    assert_eq!(after["head"], "u3");
    assert_eq!(after["viewing"], Value::Null);
    assert_eq!(after["turn_count"], before["turn_count"]);
    assert_eq!(git(&dir, &["branch", "--list"]).trim(), "* main");
    assert_eq!(git(&dir, &["rev-parse", "HEAD"]), head_before);
    s.append(
        "e",
        json!({"id": "a3", "role": "assistant", "content": "done"}),
    );
    s.end_turn("e", json!({}));
    // A node on no branch yet (not committed) cannot be switched to.
    s.append(
        "e",
        json!({"id": "s1", "role": "system", "content": "a note"}),
    );
    let (st, e) = s.post("/api/sessions/e/switch", json!({"node_id": "s1"}));
    assert_eq!(
        (st, e["code"].as_str()),
        (409, Some("node_not_committed")),
        "{e}"
    );
    // The note shows where it was written, after the head it followed.
    assert_eq!(
        rendered(&s, "e"),
        ["u1", "a1", "u2", "a2", "u3", "a3", "s1"]
    );
    assert_eq!(git(&dir, &["branch", "--list"]).trim(), "* main");
}

#[test]
fn export_and_import_carry_every_branch() {
    let s = TestServer::start();
    let dir = s.session_dir("x");
    turn(&s, "x", 1);
    turn(&s, "x", 2);
    s.append(
        "x",
        json!({"id": "a2b", "role": "assistant", "predecessor": "u2", "content": "retry"}),
    );
    s.end_turn("x", json!({}));
    s.post("/api/sessions/x/switch", json!({"branch": "main"}));
    let (st, _, bundle) = s.get_bytes("/api/sessions/x/export");
    assert_eq!(st, 200);
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("x.bundle");
    std::fs::write(&file, &bundle).unwrap();
    let clone = tmp.path().join("clone");
    git(
        tmp.path(),
        &[
            "clone",
            "-q",
            file.to_str().unwrap(),
            clone.to_str().unwrap(),
        ],
    );
    let remote: BTreeSet<String> = git(&clone, &["branch", "-r", "--format=%(refname:short)"])
        .lines()
        .filter(|l| !l.ends_with("HEAD") && l.contains('/'))
        .map(|l| l.split_once('/').unwrap().1.to_string())
        .collect();
    assert_eq!(remote, set(&["main", "retry-a2b"]));
    assert_eq!(
        git(&clone, &["rev-parse", "origin/retry-a2b"]),
        git(&dir, &["rev-parse", "retry-a2b"])
    );

    // Import on a fresh server: the same session, every branch.
    let t = TestServer::start();
    let (st, meta) = t.post_raw("/api/sessions/import", "application/x-git-bundle", &bundle);
    assert_eq!(st, 201, "{meta}");
    assert_eq!(meta["id"], "x");
    let (_, b1) = s.get("/api/sessions/x/branches");
    let (_, b2) = t.get("/api/sessions/x/branches");
    assert_eq!(b1, b2);
    let (_, n1) = s.get("/api/sessions/x/nodes");
    let (_, n2) = t.get("/api/sessions/x/nodes");
    assert_eq!(n1["nodes"], n2["nodes"]);
    assert_eq!(rendered(&t, "x"), rendered(&s, "x"));
    // The imported session retries and switches like the original.
    let (st, _) = t.post("/api/sessions/x/switch", json!({"node_id": "a2b"}));
    assert_eq!(st, 200);
    assert_eq!(rendered(&t, "x"), ["u1", "a1", "u2", "a2b"]);
    assert_clean_repo(&t.session_dir("x"));
}

#[test]
fn a_retry_interrupted_by_a_crash_commits_on_its_branch_after_restart() {
    let mut s = TestServer::start_process();
    let dir = s.session_dir("k");
    let t1 = turn(&s, "k", 1);
    turn(&s, "k", 2);
    s.append(
        "k",
        json!({"id": "a2b", "role": "assistant", "predecessor": "u2", "content": "partial"}),
    );
    s.kill();
    s.restart_after_kill();
    // The open retry turn is still there, on its branch.
    assert_eq!(rendered(&s, "k"), ["u1", "a1", "u2", "a2b"]);
    assert_eq!(
        git(&dir, &["symbolic-ref", "--short", "HEAD"]).trim(),
        "retry-a2b"
    );
    s.patch(
        "/api/sessions/k/messages/a2b",
        json!({"content": "complete"}),
    );
    let r = s.end_turn("k", json!({}));
    assert_eq!(r["turn"], 2);
    assert_eq!(git(&dir, &["rev-parse", "retry-a2b^"]).trim(), sha(&t1));
    assert_eq!(turn_commits(&dir, "main"), "2");
    assert_clean_repo(&dir);

    // A switch, then a kill: the work tree matches HEAD after restart.
    s.post("/api/sessions/k/switch", json!({"branch": "main"}));
    s.kill();
    s.restart_after_kill();
    assert_eq!(rendered(&s, "k"), ["u1", "a1", "u2", "a2"]);
    assert_eq!(worktree_ids(&dir), set(&["u1", "a1", "u2", "a2"]));
    assert_eq!(git(&dir, &["status", "--porcelain", "history"]), "");
    git(&dir, &["fsck", "--strict", "--no-progress"]);

    // A switch cut short right after HEAD moved (work tree and index still
    // on main): loading finishes it.
    s.kill();
    git(&dir, &["symbolic-ref", "HEAD", "refs/heads/retry-a2b"]);
    s.restart_after_kill();
    let (_, b) = s.get("/api/sessions/k/branches");
    assert_eq!(b["current"], "retry-a2b", "{b}\n{}", s.log());
    assert_eq!(worktree_ids(&dir), set(&["u1", "a1", "u2", "a2b"]));
    assert_eq!(git(&dir, &["status", "--porcelain", "history"]), "");
    let (_, nodes) = s.get("/api/sessions/k/nodes");
    assert_eq!(nodes["nodes"].as_array().unwrap().len(), 5);
}

#[test]
fn websocket_git_history_and_checkout() {
    let s = TestServer::start();
    let t: Vec<Value> = (1..=3).map(|n| turn(&s, "w", n)).collect();
    let mut ws = WsClient::connect(&s);
    ws.send(json!({"action": "git_history", "session_id": "w"}));
    let h = ws.expect("git_history", |v| v["data"]["session_id"] == "w");
    assert_eq!(h["data"]["commits"].as_array().unwrap().len(), 3);
    assert_eq!(h["data"]["position"]["turn"], 3);
    ws.send(json!({"action": "git_checkout", "session_id": "w", "commit": t[0]["commit"]}));
    let c = ws.expect("git_checkout", |v| v["data"]["session_id"] == "w");
    assert_eq!(c["data"]["turn"], 1);
    assert_eq!(c["data"]["of"], 3);
    assert_eq!(ids(&c["data"]["messages"]), ["u1", "a1"]);
    ws.send(json!({"action": "git_checkout", "session_id": "w", "step": "next"}));
    let c = ws.expect("git_checkout", |v| v["data"]["turn"] == 2);
    assert_eq!(c["data"]["next"], t[2]["commit"]);
    ws.send(json!({"action": "git_checkout", "session_id": "w", "commit": "feedbeef"}));
    let e = ws.expect("action_error", |v| v["data"]["action"] == "git_checkout");
    assert_eq!(e["data"]["code"], "unknown_commit");
    ws.send(json!({"action": "git_switch", "session_id": "w", "branch": "main"}));
    let sw = ws.expect("git_switch", |_| true);
    assert_eq!(sw["data"]["live"], true);
    ws.send(json!({"action": "git_branches", "session_id": "w"}));
    let b = ws.expect("git_branches", |_| true);
    assert_eq!(b["data"]["branches"][0]["name"], "main");
}

/// A session folder is clean for the user's git whatever branch the
/// server switched to: `meta.json` holds the session's live state (the
/// last turn of any branch, a rename) and is the server's, not a change.
#[test]
fn the_session_folder_stays_clean_for_git_after_switches() {
    let s = TestServer::start();
    let id = "clean";
    s.turn(id, "one", "r1", &[]);
    s.append(id, json!({"id": "u2", "role": "user", "content": "two"}));
    s.append(id, json!({"role": "assistant", "content": "r2"}));
    s.end_turn(id, json!({}));
    // A retry of turn 2's answer: its own branch, then back to main.
    s.append(
        id,
        json!({"role": "assistant", "content": "r2 again", "predecessor": "u2"}),
    );
    s.end_turn(id, json!({}));
    let dir = s.session_dir(id);
    assert_clean_repo(&dir);
    let (status, v) = s.post(
        &format!("/api/sessions/{id}/switch"),
        json!({"branch": "main"}),
    );
    assert_eq!(status, 200, "{v}");
    assert_clean_repo(&dir);
    let (status, v) = s.patch(&format!("/api/sessions/{id}"), json!({"title": "Renamed"}));
    assert_eq!(status, 200, "{v}");
    assert_clean_repo(&dir);
    let (status, v) = s.post(&format!("/api/sessions/{id}/checkout"), json!({"turn": 1}));
    assert_eq!(status, 200, "{v}");
    assert_clean_repo(&dir);
    // The committed meta.json is the turn's own; the live one is newer.
    let committed = git(&dir, &["show", "HEAD:meta.json"]);
    assert!(!committed.contains("Renamed"), "{committed}");
}
