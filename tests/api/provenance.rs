//! Provenance pointers resolved from git: the nodes as their commit holds
//! them, after a branch switch and after the session moved with its
//! project; every bad pointer gets its own status, never a 500.

use serde_json::{json, Value};

use crate::helpers::{git, TestServer};

fn resolve(s: &TestServer, body: Value) -> Vec<Value> {
    let (st, v) = s.post("/api/provenance/resolve", body);
    assert_eq!(st, 200, "{v}");
    v["results"].as_array().unwrap().clone()
}

#[test]
fn pointers_resolve_to_their_commit_after_a_switch_and_a_project_move() {
    let s = TestServer::start();
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    git(&work, &["init", "-q", "-b", "main"]);
    let (st, p) = s.post("/api/projects", json!({"path": work, "name": "W"}));
    assert_eq!(st, 201, "{p}");
    let pid = p["id"].as_str().unwrap().to_string();
    let (st, t1) = s.post(
        "/api/sessions/pv/turns",
        json!({"session": {"project_id": pid}, "nodes": [
            {"id": "u1", "role": "user", "content": "What does lex do?"},
            {"id": "a1", "role": "assistant", "content": "It splits the input."}]}),
    );
    assert_eq!(st, 201, "{t1}");
    let c1 = t1["commit"].as_str().unwrap().to_string();
    let (st, t2) = s.post(
        "/api/sessions/pv/turns",
        json!({"nodes": [
            {"id": "u2", "role": "user", "content": "And parse?"},
            {"id": "a2", "role": "assistant", "content": "It builds the tree."}]}),
    );
    assert_eq!(st, 201, "{t2}");
    let pointer = json!({"project_id": pid, "session_id": "pv", "node_ids": ["u1", "a1"],
                         "commit": c1, "event_time": 1.0, "ingestion_time": 2.0});
    let first = resolve(&s, pointer.clone());
    assert_eq!(first[0]["status"], "ok", "{first:?}");
    assert_eq!(first[0]["turn"], 1);
    assert_eq!(first[0]["title"], "What does lex do?");
    let texts: Vec<&str> = first[0]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["content"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["What does lex do?", "It splits the input."]);

    // Replay turn 1 and go on from there: a branch switch. Same answer.
    let (st, v) = s.post("/api/sessions/pv/checkout", json!({"turn": 1}));
    assert_eq!(st, 200, "{v}");
    let (st, v) = s.post(
        "/api/sessions/pv/turns",
        json!({"nodes": [
            {"id": "u3", "role": "user", "content": "Rather: tokens?"},
            {"id": "a3", "role": "assistant", "content": "Tokens come from lex."}]}),
    );
    assert_eq!(st, 201, "{v}");
    let again = resolve(&s, pointer.clone());
    assert_eq!(again[0]["nodes"], first[0]["nodes"]);
    assert_eq!(again[0]["commit"], first[0]["commit"]);
    // A commit of the other line still resolves (turn 2, now off the path).
    let c2 = t2["commit"].as_str().unwrap();
    let other = resolve(
        &s,
        json!({"session_id": "pv", "node_ids": ["a2"], "commit": c2.get(..12).unwrap()}),
    );
    assert_eq!(other[0]["status"], "ok", "{other:?}");
    assert_eq!(other[0]["nodes"][0]["content"], "It builds the tree.");

    // The project (and the session inside it) moves.
    let moved = tmp.path().join("work-moved");
    std::fs::rename(&work, &moved).unwrap();
    let (st, v) = s.post(
        &format!("/api/projects/{pid}/relocate"),
        json!({"path": moved}),
    );
    assert_eq!(st, 200, "{v}");
    let after = resolve(&s, pointer);
    assert_eq!(after[0]["status"], "ok", "{after:?}");
    assert_eq!(after[0]["nodes"], first[0]["nodes"]);
    assert_eq!(after[0]["project_id"], pid.as_str());

    // Bad pointers, each with its status, in one request.
    let all = resolve(
        &s,
        json!({"pointers": [
            {"session_id": "nobody", "node_ids": ["u1"], "commit": c1},
            {"session_id": "pv", "node_ids": ["u1"], "commit": "0123456789abcdef0123456789abcdef01234567"},
            {"session_id": "pv", "node_ids": ["u1", "u2"], "commit": c1},
            {"session_id": "pv", "node_ids": ["../x"], "commit": c1},
            {"session_id": "pv", "node_ids": ["u3"]},
            {"session_id": "pv", "node_ids": ["u1"], "commit": "not-hex!"},
        ]}),
    );
    let statuses: Vec<&str> = all.iter().map(|r| r["status"].as_str().unwrap()).collect();
    assert_eq!(
        statuses,
        [
            "unknown_session",
            "unknown_commit",
            "node_not_in_commit",
            "invalid",
            "ok",
            "unknown_commit"
        ]
    );
    assert_eq!(all[2]["missing"], json!(["u2"]));
    assert_eq!(all[4]["nodes"][0]["content"], "Rather: tokens?");
    // Deleted: its pointers say so.
    let (st, _) = s.raw_delete("/api/sessions/pv");
    assert!(st == 200 || st == 204);
    let gone = resolve(
        &s,
        json!({"session_id": "pv", "node_ids": ["u1"], "commit": c1}),
    );
    assert_eq!(gone[0]["status"], "unknown_session");
    let (st, v) = s.post("/api/provenance/resolve", json!({"pointers": "x"}));
    assert_eq!((st, v["code"].as_str()), (400, Some("invalid_body")), "{v}");
}
