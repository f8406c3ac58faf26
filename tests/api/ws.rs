use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tungstenite::stream::MaybeTlsStream;
use tungstenite::{Message, WebSocket};

use crate::fake_llm::FakeLlm;
use crate::helpers::{turn_commits, TestServer};

pub struct WsClient {
    sock: WebSocket<MaybeTlsStream<TcpStream>>,
}

impl WsClient {
    pub fn connect(s: &TestServer) -> WsClient {
        let url = format!("{}/ws", s.url.replace("http://", "ws://"));
        let (sock, _) = tungstenite::connect(url).expect("ws connect");
        if let MaybeTlsStream::Plain(t) = sock.get_ref() {
            t.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
        }
        WsClient { sock }
    }

    pub fn send(&mut self, v: Value) {
        self.sock
            .send(Message::text(v.to_string()))
            .expect("ws send");
    }

    pub fn send_raw(&mut self, text: &str) {
        self.sock
            .send(Message::text(text.to_string()))
            .expect("ws send");
    }

    /// The next frame matching `pred` whatever its type, skipping others.
    pub fn next_where(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            assert!(Instant::now() < deadline, "no matching frame arrived");
            if let Some(v) = self.read_one() {
                if pred(&v) {
                    return v;
                }
            }
        }
    }

    /// Whether the server closes the connection (a close frame, or the
    /// socket ends) within `limit`.
    pub fn closed_within(&mut self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            match self.sock.read() {
                Ok(Message::Close(_)) => return true,
                Ok(_) => {}
                Err(tungstenite::Error::Io(e))
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        // A signal to this process (a child server exiting).
                        | std::io::ErrorKind::Interrupted
                    ) => {}
                Err(_) => return true,
            }
        }
        false
    }

    /// One frame, or None when none arrived within the read timeout.
    fn read_one(&mut self) -> Option<Value> {
        match self.sock.read() {
            Ok(Message::Text(t)) => Some(serde_json::from_str(t.as_str()).unwrap()),
            Ok(_) => None,
            Err(tungstenite::Error::Io(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        // A signal to this process (a child server exiting).
                        | std::io::ErrorKind::Interrupted
                ) =>
            {
                None
            }
            Err(e) => panic!("ws read: {e}"),
        }
    }

    /// The next frame of `kind` matching `pred`, skipping others.
    pub fn expect(&mut self, kind: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let mut frames = self.frames_until(kind, pred);
        frames.pop().unwrap_or_default()
    }

    /// Every frame read up to and including the next one of `kind`
    /// matching `pred`, in arrival order.
    pub fn frames_until(&mut self, kind: &str, pred: impl Fn(&Value) -> bool) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut seen = Vec::new();
        loop {
            assert!(
                Instant::now() < deadline,
                "no {kind} frame arrived; seen: {:?}",
                seen.iter()
                    .map(|f: &Value| format!("{} {}", f["type"], f["data"])
                        .chars()
                        .take(160)
                        .collect::<String>())
                    .collect::<Vec<_>>()
            );
            if let Some(v) = self.read_one() {
                let done = v["type"] == kind && pred(&v);
                seen.push(v);
                if done {
                    return seen;
                }
            }
        }
    }
}

#[test]
fn two_clients_see_each_others_changes_with_only_the_changed_fields() {
    let s = TestServer::start();
    s.turn("w1", "hello", "hi", &[]);
    let mut a = WsClient::connect(&s);
    let mut b = WsClient::connect(&s);
    a.send(json!({"action": "list_sessions"}));
    let list = a.expect("sessions_list", |_| true);
    assert_eq!(list["data"][0]["id"], "w1", "the data is the array of rows");

    a.send(json!({"action": "update_session_flags", "session_id": "w1", "pinned": true}));
    // (The end of w1's turn may still be on its way; wait for the pin.)
    let u = b.expect("session_updated", |v| {
        v["data"]["id"] == "w1" && v["data"].get("pinned").is_some()
    });
    assert_eq!(
        u["data"],
        json!({"id": "w1", "pinned": true}),
        "only the changed fields"
    );
    b.send(json!({"action": "rename_session", "session_id": "w1", "title": "Named in B"}));
    let u = a.expect("session_updated", |v| v["data"]["title"] == "Named in B");
    assert_eq!(u["data"].as_object().unwrap().len(), 2, "{u}");
    a.send(json!({"action": "update_session_flags", "session_id": "w1", "archived": true}));
    b.expect("session_updated", |v| v["data"]["archived"] == true);
    b.send(json!({"action": "mark_session_read", "session_id": "w1"}));
    a.send(json!({"action": "delete_session", "session_id": "w1"}));
    let d = b.expect("session_deleted", |_| true);
    assert_eq!(
        (d["session_id"].as_str(), d["data"]["session_id"].as_str()),
        (Some("w1"), Some("w1"))
    );
    assert!(!s.session_dir("w1").exists());
    a.send(json!({"action": "delete_session", "session_id": "w1"}));
    let e = a.expect("action_error", |_| true);
    assert_eq!(e["data"]["action"], "delete_session");
}

#[test]
fn rest_cli_and_turn_changes_reach_websocket_clients() {
    let s = TestServer::start();
    let mut c = WsClient::connect(&s);
    s.append("r1", json!({"role": "user", "content": "from rest"}));
    let created = c.expect("session_created", |v| v["data"]["id"] == "r1");
    assert_eq!(created["data"]["status"], "running");
    s.append("r1", json!({"role": "assistant", "content": "done"}));
    s.end_turn("r1", json!({"background": true}));
    let u = c.expect("session_updated", |v| {
        v["data"]["id"] == "r1" && v["data"]["status"] == "done"
    });
    assert_eq!(u["data"]["unread"], true);
    s.patch("/api/sessions/r1", json!({"pinned": true}));
    c.expect("session_updated", |v| v["data"]["pinned"] == true);
    let (code, _, _) = s.cli(&["sessions", "archive", "r1"], None);
    assert_eq!(code, 0);
    c.expect("session_updated", |v| v["data"]["archived"] == true);
    // Project changes broadcast the project list.
    let dir = tempfile::tempdir().unwrap();
    s.post("/api/projects", json!({"path": dir.path()}));
    let p = c.expect("projects_list", |_| true);
    assert_eq!(p["data"]["projects"].as_array().unwrap().len(), 2);
}

#[test]
fn malformed_and_unknown_frames_get_action_error_and_the_connection_stays() {
    let s = TestServer::start();
    let mut c = WsClient::connect(&s);
    c.send_raw("this is not json");
    assert!(c.expect("action_error", |_| true)["data"]["error"]
        .as_str()
        .unwrap()
        .contains("malformed"));
    c.send(json!({"no_action": 1}));
    assert!(c.expect("action_error", |_| true)["data"]["error"]
        .as_str()
        .unwrap()
        .contains("action"));
    c.send(json!({"action": "fly_to_the_moon"}));
    let e = c.expect("action_error", |_| true);
    assert_eq!(e["data"]["action"], "fly_to_the_moon");
    assert!(e["data"]["error"]
        .as_str()
        .unwrap()
        .contains("unknown action 'fly_to_the_moon'"));
    c.send(json!({"action": "update_session_flags", "session_id": "../x", "pinned": true}));
    assert_eq!(
        c.expect("action_error", |_| true)["data"]["code"],
        "invalid_id"
    );
    c.send(json!({"action": "list_sessions"}));
    c.expect("sessions_list", |_| true);
}

#[test]
fn a_client_that_stops_reading_does_not_delay_the_others() {
    let s = TestServer::start();
    s.turn("slow", "x", "y", &[]);
    // 300 sessions with the longest titles: every chat broadcasts the
    // whole sidebar list (about 100 KB) to every client.
    let long = "t".repeat(290);
    for n in 0..300 {
        let (st, v) = s.post(
            "/api/sessions",
            json!({"id": format!("bulk{n}"), "title": format!("{n} {long}")}),
        );
        assert_eq!(st, 201, "{v}");
    }
    let _stuck = WsClient::connect(&s); // never reads
    let mut live = WsClient::connect(&s);
    let mut talker = WsClient::connect(&s);
    let big = "t".repeat(280);
    // Each write must be answered (the helpers' client gives up after 60 s,
    // failing the test) while a client reads nothing: a broadcast that
    // waited for it would hold the writer forever.
    for i in 0..150 {
        // Each a new conversation: a list of about 100 KB to everyone.
        talker.send(json!({"action": "chat", "content": format!("talk {i}")}));
        talker.expect("chat_ack", |_| true);
        let title = format!("{i} {big}");
        let (st, _) = s.patch("/api/sessions/slow", json!({"title": title}));
        assert_eq!(st, 200);
        live.expect("session_updated", |v| {
            v["data"]["title"]
                .as_str()
                .is_some_and(|t| t.starts_with(&format!("{i} ")))
        });
    }
    // The chats did happen: each made a conversation (and a broadcast).
    let (_, page) = s.get("/api/sessions?limit=1");
    assert!(page["total"].as_u64().unwrap() >= 450, "{page}");
}

#[test]
fn draft_chat_lands_inside_the_project_and_binding_freezes() {
    let s = TestServer::start();
    let dir = tempfile::tempdir().unwrap();
    let mut c = WsClient::connect(&s);
    c.send(json!({"action": "create_project", "path": dir.path(), "name": "Draft"}));
    let created = c.expect("project_created", |_| true);
    let pid = created["data"]["project"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    c.expect("projects_list", |_| true);
    c.send(json!({"action": "list_projects", "session_id": "d1"}));
    let list = c.expect("projects_list", |v| v["data"]["session_id"] == "d1");
    assert_eq!(list["data"]["projects"].as_array().unwrap().len(), 2);

    // A runner answers: the session is busy while it runs.
    let mut runner = WsClient::connect(&s);
    runner.send(json!({"action": "register_runner", "name": "busy", "sessions": "all"}));
    runner.expect("runner_registered", |_| true);
    c.send(json!({"action": "chat", "session_id": "d1", "project_id": pid, "content": "first words", "message_id": "m1"}));
    let ack = c.expect("chat_ack", |_| true);
    let req = runner.expect("run_requested", |_| true);
    runner
        .send(json!({"action": "claim_run", "session_id": "d1", "msg_id": req["data"]["msg_id"]}));
    runner.expect("run_claimed", |_| true);
    assert_eq!(
        (
            ack["data"]["session_id"].as_str(),
            ack["data"]["msg_id"].as_str()
        ),
        (Some("d1"), Some("m1"))
    );
    let inside = dir
        .path()
        .canonicalize()
        .unwrap()
        .join(".openprogram/sessions/d1");
    assert!(
        inside.join("meta.json").is_file(),
        "the repo lands inside the project"
    );
    c.send(json!({"action": "set_session_project", "session_id": "d1", "project_id": pid}));
    c.expect("session_project_set", |v| {
        v["data"]["project_id"] == pid.as_str()
    });
    // A second message while the turn runs is refused, or queued on request.
    c.send(json!({"action": "chat", "session_id": "d1", "content": "too early"}));
    let busy = c.expect("chat_response", |_| true);
    assert_eq!(
        (busy["data"]["type"].as_str(), busy["data"]["code"].as_str()),
        (Some("error"), Some("run_active"))
    );
    assert_eq!(
        busy["data"]["content"],
        "a run is currently active in this session — wait for it to finish or stop it first"
    );
    c.send(json!({"action": "chat", "session_id": "d1", "content": "later please", "message_id": "m2", "queue": true}));
    let q = c.expect("chat_ack", |v| v["data"]["queued"] == true);
    assert_eq!(q["data"]["msg_id"], "m2");
    s.append("d1", json!({"role": "assistant", "content": "answer one"}));
    let end = s.end_turn("d1", json!({}));
    assert_eq!(
        end["next_turn"]["node"]["id"], "m2",
        "the queued message opens the next turn"
    );
    assert_eq!(end["next_turn"]["turn"], 2);
    c.send(json!({"action": "set_session_project", "session_id": "d1", "project_id": "default"}));
    let e = c.expect("session_project_set", |v| v["data"]["ok"] == false);
    assert_eq!(e["data"]["error"], "project is frozen after the first turn");
    c.send(json!({"action": "git_session_log", "session_id": "d1"}));
    let log = c.expect("git_session_log", |_| true);
    assert_eq!(log["data"]["commits"].as_array().unwrap().len(), 1);
    assert_eq!(turn_commits(&inside, "HEAD"), "1");
}

#[test]
fn rest_queueing_keeps_arrival_order_and_survives_a_restart() {
    let mut s = TestServer::start_process();
    s.append("q", json!({"role": "user", "content": "first"}));
    for i in 1..=3 {
        let (st, v) = s.post("/api/sessions/q/messages", json!({"id": format!("q{i}"), "role": "user", "content": format!("queued {i}"), "queue": true}));
        assert_eq!(st, 202, "{v}");
        assert_eq!(v["position"], i);
    }
    let (st, _) = s.post(
        "/api/sessions/q/messages",
        json!({"id": "q2", "role": "user", "content": "queued 2", "queue": true}),
    );
    assert_eq!(st, 202, "a retried message is not queued twice");
    s.restart_after_kill();
    // After the restart the interrupted turn is closed by the next message;
    // here the agent ends it, and the queue drains in arrival order.
    for i in 1..=3 {
        s.append("q", json!({"role": "assistant", "content": "ok"}));
        let end = s.end_turn("q", json!({}));
        assert_eq!(end["next_turn"]["node"]["id"], format!("q{i}"));
    }
    s.append("q", json!({"role": "assistant", "content": "ok"}));
    let end = s.end_turn("q", json!({}));
    assert!(end.get("next_turn").is_none());
    let (_, nodes) = s.get("/api/sessions/q/nodes");
    let users: Vec<&str> = nodes["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["role"] == "user")
        .map(|n| n["content"].as_str().unwrap())
        .collect();
    assert_eq!(users, vec!["first", "queued 1", "queued 2", "queued 3"]);
    assert_eq!(turn_commits(&s.session_dir("q"), "HEAD"), "4");
    crate::helpers::assert_clean_repo(&s.session_dir("q"));
}

#[test]
fn eight_bridges_and_an_agent_lose_split_and_duplicate_nothing() {
    let s = TestServer::start();
    let peers = ["alice", "bob", "carol", "dave", "erin"];
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        for b in 0..8 {
            let s = &s;
            scope.spawn(move || {
                for i in 0..200 {
                    let peer = peers[(b + i) % peers.len()];
                    let body = json!({"account_id": "acct", "peer_id": peer, "peer_display": peer.to_uppercase(),
                                      "peer_kind": "dm", "text": format!("b{b} m{i}"), "message_id": format!("b{b}-m{i}")});
                    let (st, v) = s.post("/api/channels/wechat/messages", body.clone());
                    assert!(st == 201 || st == 202, "{st} {v}");
                    if i % 50 == 0 {
                        let (st, _) = s.post("/api/channels/wechat/messages", body);
                        assert!(st == 200 || st == 202, "a retried post is idempotent ({st})");
                    }
                }
            });
        }
        // The test agent: answers and ends every open turn until all is in.
        let s = &s;
        let done = &done;
        scope.spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(240);
            loop {
                assert!(Instant::now() < deadline, "agent did not finish");
                let (_, page) = s.get("/api/sessions?source=wechat&limit=100");
                let mut idle = true;
                for row in page["sessions"].as_array().unwrap() {
                    let id = row["id"].as_str().unwrap();
                    let (_, meta) = s.get(&format!("/api/sessions/{id}"));
                    if meta["open_turn"].is_object() {
                        idle = false;
                        s.append(id, json!({"role": "assistant", "content": "ok"}));
                        s.end_turn(id, json!({}));
                    }
                }
                let (_, page) = s.get("/api/sessions?source=wechat&limit=100");
                let stored: u64 = page["sessions"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| {
                        let (_, m) = s.get(&format!("/api/sessions/{}", r["id"].as_str().unwrap()));
                        m["turn_count"].as_u64().unwrap()
                    })
                    .sum();
                if idle && stored == 1600 {
                    done.store(true, std::sync::atomic::Ordering::SeqCst);
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        });
    });
    assert!(done.load(std::sync::atomic::Ordering::SeqCst));
    let (_, page) = s.get("/api/sessions?source=wechat&limit=100");
    let rows = page["sessions"].as_array().unwrap();
    assert_eq!(
        rows.len(),
        peers.len(),
        "one session per conversation, none split"
    );
    let mut seen = std::collections::HashSet::new();
    for row in rows {
        let id = row["id"].as_str().unwrap();
        assert_eq!(row["channel"], "wechat");
        let (_, nodes) = s.get(&format!("/api/sessions/{id}/nodes"));
        let nodes = nodes["nodes"].as_array().unwrap();
        let seqs: Vec<u64> = nodes.iter().map(|n| n["seq"].as_u64().unwrap()).collect();
        assert_eq!(
            seqs,
            (1..=nodes.len() as u64).collect::<Vec<_>>(),
            "gap-free sequence in {id}"
        );
        let users: Vec<&Value> = nodes.iter().filter(|n| n["role"] == "user").collect();
        for u in &users {
            assert!(
                seen.insert(u["id"].as_str().unwrap().to_string()),
                "{} stored twice",
                u["id"]
            );
        }
        let dir = s.session_dir(id);
        assert_eq!(
            turn_commits(&dir, "HEAD"),
            users.len().to_string(),
            "one turn per message"
        );
    }
    assert_eq!(seen.len(), 1600, "every message stored once");
}

#[test]
fn an_oversized_frame_is_refused_clearly() {
    let s = TestServer::start_with_env(&[("OPENPROGRAM_BODY_LIMIT", "4096")]);
    let mut c = WsClient::connect(&s);
    c.send(json!({"action": "chat", "session_id": "big", "content": "x".repeat(10_000)}));
    let e = c.expect("action_error", |_| true);
    assert!(
        e["data"]["error"].as_str().unwrap().contains("bad frame"),
        "{e}"
    );
    assert!(!s.session_dir("big").exists(), "nothing written");
    c.send(json!({"action": "list_sessions"}));
    c.expect("sessions_list", |_| true);
}

#[test]
fn a_slow_regenerate_does_not_hold_the_socket() {
    // Every LLM answer takes 2 s; the regenerate's reply is "Regenerated".
    let asked = std::sync::atomic::AtomicUsize::new(0);
    let llm = FakeLlm::start(Duration::from_secs(2), move |_, body| {
        let t = if !body.to_string().contains("a question") {
            "Other"
        } else if asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
            "Automatic"
        } else {
            "Regenerated"
        };
        (200, t.to_string())
    });
    let s = TestServer::start_with_env(&[
        ("OPENPROGRAM_LLM_BASE_URL", llm.base_url.as_str()),
        ("OPENPROGRAM_LLM_MODEL", "m"),
    ]);
    s.turn("slow", "a question", "an answer", &[]);
    s.turn("other", "b question", "b answer", &[]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while s.get("/api/sessions/slow").1["title"] != "Automatic" {
        assert!(Instant::now() < deadline, "no automatic title");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut c = WsClient::connect(&s);
    c.send(json!({"action": "rename_session", "session_id": "slow", "title": ""}));
    // While the LLM works (2 s): another action's reply, and a broadcast
    // caused by another client, reach this socket, and the title is
    // still the old one when they do (a loop held by the regenerate
    // would answer only after the new title was written).
    c.send(json!({"action": "git_session_log", "session_id": "other"}));
    c.expect("git_session_log", |_| true);
    assert_eq!(s.get("/api/sessions/slow").1["title"], "Automatic");
    let (st, _) = s.patch("/api/sessions/other", json!({"pinned": true}));
    assert_eq!(st, 200);
    c.expect("session_updated", |v| {
        v["data"]["id"] == "other" && v["data"]["pinned"] == true
    });
    assert_eq!(s.get("/api/sessions/slow").1["title"], "Automatic");
    c.expect("session_updated", |v| {
        v["data"]["id"] == "slow" && v["data"]["title"] == "Regenerated"
    });
    // slow's and other's automatic titles, then the regenerate.
    assert_eq!(llm.count(), 3);
}
