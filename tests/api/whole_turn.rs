//! A whole turn in one request (`POST /turns` with `nodes`): one commit
//! holding every node, a bad node rejecting the whole turn with nothing
//! written, a retry answering the turn already made, a running turn
//! refusing it.

use serde_json::{json, Value};

use crate::helpers::{assert_clean_repo, git, turn_commits, TestServer};

fn whole(first: &str) -> Value {
    json!({
        "nodes": [
            {"id": format!("{first}-sys"), "role": "system", "content": "You are terse."},
            {"id": format!("{first}-u"), "role": "user", "content": "Find the parser bug"},
            {"id": format!("{first}-a"), "role": "assistant", "content": "It is in lexer.rs."},
            {"id": format!("{first}-t"), "role": "tool", "name": "grep", "caller": format!("{first}-a"),
             "content": {"pattern": "fn lex"}, "output": "src/lexer.rs:12"}
        ],
        "tokens": 321,
        "context": {"messages": [{"role": "user", "content": "Find the parser bug"}]},
        "context_id": format!("{first}-ctx")
    })
}

#[test]
fn a_whole_turn_in_one_request_is_one_commit_with_every_node() {
    let s = TestServer::start();
    let mut body = whole("t1");
    body["session"] = json!({"title": "Parser", "model": "m1"});
    let (st, v) = s.post("/api/sessions/wt/turns", body);
    assert_eq!(st, 201, "{v}");
    assert_eq!(
        (v["session_id"].as_str(), v["turn"].as_u64()),
        (Some("wt"), Some(1))
    );
    let ids: Vec<_> = v["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["t1-sys", "t1-u", "t1-a", "t1-t"]);
    let dir = s.session_dir("wt");
    assert_eq!(turn_commits(&dir, "HEAD"), "1");
    let files = git(&dir, &["ls-tree", "-r", "--name-only", "HEAD"]);
    for id in ["t1-sys", "t1-u", "t1-a", "t1-t"] {
        assert!(files.contains(id), "{id} is committed: {files}");
    }
    assert!(files.contains("context/commits/t1-ctx.json"), "{files}");
    assert_clean_repo(&dir);
    let (_, meta) = s.get("/api/sessions/wt");
    assert_eq!(
        (meta["title"].as_str(), meta["status"].as_str()),
        (Some("Parser"), Some("idle"))
    );
    // A second whole turn continues the session.
    let (st, v) = s.post("/api/sessions/wt/turns", whole("t2"));
    assert_eq!((st, v["turn"].as_u64()), (201, Some(2)), "{v}");
    assert_eq!(turn_commits(&dir, "HEAD"), "2");
    let (_, msgs) = s.get("/api/sessions/wt/messages");
    assert_eq!(msgs["messages"].as_array().unwrap().len(), 8);
}

#[test]
fn a_bad_node_rejects_the_whole_turn_and_writes_nothing() {
    let s = TestServer::start();
    let cases = [
        (
            json!([{"role": "assistant", "content": "no question"}]),
            "invalid_input",
        ),
        (
            json!([{"role": "user", "content": "q"}, {"role": "tool", "name": "t", "caller": "nobody"}]),
            "invalid_caller",
        ),
        (
            json!([{"role": "user", "content": "q"}, {"role": "tool", "caller": "ROOT"}]),
            "missing_name",
        ),
        (
            json!([{"id": "x", "role": "user"}, {"id": "x", "role": "assistant"}]),
            "invalid_input",
        ),
        (
            json!([{"role": "user", "content": "q"}, {"role": "user", "content": "again"}]),
            "invalid_input",
        ),
        (
            json!([{"role": "user", "predecessor": "ghost"}]),
            "unknown_predecessor",
        ),
        (json!([{"id": "a/b", "role": "user"}]), "invalid_id"),
    ];
    for (nodes, code) in cases {
        let (st, v) = s.post("/api/sessions/bad/turns", json!({"nodes": nodes}));
        assert_eq!((st, v["code"].as_str()), (400, Some(code)), "{nodes}: {v}");
        let (st, _) = s.get("/api/sessions/bad");
        assert_eq!(st, 404, "{nodes}: nothing was written");
    }
    // The same in an existing session: nothing appended, no turn opened.
    s.turn("bad", "first", "one", &[]);
    let (st, v) = s.post(
        "/api/sessions/bad/turns",
        json!({"nodes": [{"role": "user", "content": "q"}, {"role": "tool", "name": "t", "caller": "x"}]}),
    );
    assert_eq!(st, 400, "{v}");
    let (_, nodes) = s.get("/api/sessions/bad/nodes");
    assert_eq!(nodes["nodes"].as_array().unwrap().len(), 2);
    let (_, meta) = s.get("/api/sessions/bad");
    assert!(meta["open_turn"].is_null(), "{meta}");
    // `session` belongs to a whole turn only.
    let (st, v) = s.post(
        "/api/sessions/bad/turns",
        json!({"session": {"title": "x"}}),
    );
    assert_eq!((st, v["code"].as_str()), (400, Some("invalid_body")), "{v}");
}

#[test]
fn a_retried_whole_turn_answers_the_turn_already_made() {
    let s = TestServer::start();
    let url = format!("{}/api/sessions/rt/turns", s.url);
    let send = || {
        ureq::post(&url)
            .set("Idempotency-Key", "turn-1")
            .send_json(whole("r1"))
            .map(|r| (r.status(), r.into_json::<Value>().unwrap()))
            .unwrap()
    };
    let (st, first) = send();
    assert_eq!(st, 201, "{first}");
    let (st, again) = send();
    assert_eq!(st, 200, "{again}");
    assert_eq!(again["commit"], first["commit"]);
    let (_, nodes) = s.get("/api/sessions/rt/nodes");
    assert_eq!(nodes["nodes"].as_array().unwrap().len(), 4, "no node twice");
    assert_eq!(turn_commits(&s.session_dir("rt"), "HEAD"), "1");
}

#[test]
fn a_running_turn_refuses_a_whole_turn() {
    let s = TestServer::start();
    s.append("busy", json!({"role": "user", "content": "still thinking"}));
    let (st, v) = s.post("/api/sessions/busy/turns", whole("w"));
    assert_eq!((st, v["code"].as_str()), (409, Some("run_active")), "{v}");
    let (_, nodes) = s.get("/api/sessions/busy/nodes");
    assert_eq!(
        nodes["nodes"].as_array().unwrap().len(),
        1,
        "nothing appended"
    );
}

#[test]
fn a_whole_turn_over_the_websocket() {
    let s = TestServer::start();
    let mut c = crate::ws::WsClient::connect(&s);
    let mut frame = whole("w1");
    frame["action"] = json!("write_turn");
    frame["session_id"] = json!("wsx");
    frame["idempotency_key"] = json!("k-1");
    frame["request_id"] = json!(7);
    c.send(frame.clone());
    let r = c.expect("turn_written", |_| true);
    assert_eq!(
        (r["data"]["turn"].as_u64(), r["request_id"].as_u64()),
        (Some(1), Some(7)),
        "{r}"
    );
    assert_eq!(r["data"]["nodes"].as_array().unwrap().len(), 4);
    let commit = r["data"]["commit"].clone();
    // The same frame again: the same turn, nothing written twice.
    c.send(frame);
    let again = c.expect("turn_written", |_| true);
    assert_eq!(again["data"]["commit"], commit);
    assert_eq!(again["data"]["repeated"], true, "{again}");
    // A bad node: an action_error with the HTTP code, nothing written.
    c.send(json!({"action": "write_turn", "session_id": "wsx",
                  "nodes": [{"role": "user", "content": "q"}, {"role": "tool", "name": "t", "caller": "zz"}]}));
    let e = c.expect("action_error", |_| true);
    assert_eq!(e["data"]["code"], "invalid_caller", "{e}");
    let (_, nodes) = s.get("/api/sessions/wsx/nodes");
    assert_eq!(nodes["nodes"].as_array().unwrap().len(), 4);
}
