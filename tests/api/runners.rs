//! Runners over a real WebSocket: a user message from the composer is
//! offered to the registered runners, exactly one claims it, its reply is
//! seen live by another client, a runner that dies releases its run, the
//! user can stop a run, and with no runner the session waits instead of
//! "running" forever.

use serde_json::{json, Value};

use crate::helpers::{git, turn_commits, TestServer};
use crate::ws::WsClient;

fn register(s: &TestServer, name: &str) -> WsClient {
    let mut r = WsClient::connect(s);
    r.send(json!({"action": "register_runner", "name": name, "sessions": "all"}));
    let ok = r.expect("runner_registered", |_| true);
    assert_eq!(ok["data"]["name"], name);
    r
}

fn chat(ui: &mut WsClient, session: &str, text: &str) -> Value {
    ui.send(json!({"action": "chat", "session_id": session, "text": text}));
    ui.expect("chat_ack", |f| f["data"]["session_id"] == session)
}

fn requested(r: &mut WsClient, session: &str) -> Value {
    r.expect("run_requested", |f| f["data"]["session_id"] == session)["data"].clone()
}

fn claim(r: &mut WsClient, req: &Value) -> Value {
    r.send(
        json!({"action": "claim_run", "session_id": req["session_id"], "msg_id": req["msg_id"]}),
    );
    r.next_where(|f| f["type"] == "run_claimed" || f["type"] == "action_error")
}

#[test]
fn a_runner_claims_streams_fifty_pieces_and_a_second_client_sees_them_in_order() {
    let s = TestServer::start();
    let mut runner = register(&s, "stream-runner");
    let mut ui = WsClient::connect(&s);
    let mut watcher = WsClient::connect(&s);
    let ack = chat(&mut ui, "live", "Tell me a story");
    assert_eq!(
        ack["data"]["runner"],
        json!({"offered": 1, "waiting": false})
    );
    let req = requested(&mut runner, "live");
    assert_eq!(
        (req["turn"].as_u64(), req["text"].as_str()),
        (Some(1), Some("Tell me a story"))
    );
    assert!(req["history_cursor"].is_string(), "{req}");
    assert_eq!(claim(&mut runner, &req)["type"], "run_claimed");
    let (_, meta) = s.get("/api/sessions/live");
    assert_eq!(meta["status"], "running");

    // The runner writes its reply with the ordinary calls, streaming it.
    let a = s.append("live", json!({"role": "assistant", "content": ""}));
    let aid = a["node"]["id"].as_str().unwrap().to_string();
    let mut text = String::new();
    for i in 0..50 {
        text.push_str(&format!("w{i} "));
        let (st, _) = s.patch(
            &format!("/api/sessions/live/messages/{aid}"),
            json!({"content": text}),
        );
        assert_eq!(st, 200);
    }
    let end = s.end_turn("live", json!({}));

    let frames = watcher.frames_until("turn_ended", |f| f["data"]["session_id"] == "live");
    let appended: Vec<&Value> = frames
        .iter()
        .filter(|f| f["type"] == "node_appended" && f["data"]["session_id"] == "live")
        .collect();
    assert_eq!(
        appended.len(),
        2,
        "the user message and the reply: {appended:?}"
    );
    let pieces: Vec<usize> = frames
        .iter()
        .filter(|f| f["type"] == "node_updated" && f["data"]["node"]["id"] == aid.as_str())
        .map(|f| f["data"]["node"]["content"].as_str().unwrap().len())
        .collect();
    assert_eq!(pieces.len(), 50, "every piece");
    assert!(pieces.windows(2).all(|w| w[0] < w[1]), "in order");
    assert_eq!(frames.last().unwrap()["data"]["commit"], end["commit"]);
    // The original web client's stream of the same reply: `chat_response`
    // stream events whose text adds up to the reply, then its result.
    let original = watcher.frames_until("chat_response", |f| f["data"]["type"] == "result");
    let mut streamed = String::new();
    for f in frames.iter().chain(original.iter()) {
        if f["type"] == "chat_response" && f["data"]["type"] == "stream_event" {
            assert_eq!(f["data"]["msg_id"], req["msg_id"]);
            streamed.push_str(f["data"]["event"]["text"].as_str().unwrap());
        }
    }
    assert_eq!(streamed, text);
    assert_eq!(original.last().unwrap()["data"]["content"], text.as_str());
    assert_eq!(turn_commits(&s.session_dir("live"), "HEAD"), "1");
    // The turn names its runner (on the user message).
    let (_, nodes) = s.get("/api/sessions/live/nodes");
    let user = nodes["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["role"] == "user")
        .unwrap()
        .clone();
    assert_eq!(user["metadata"]["runner"], "stream-runner", "{user}");
    // The run is over: a claim now is refused.
    assert_eq!(claim(&mut runner, &req)["data"]["code"], "unknown_run");
}

/// A message waiting for a runner when the server restarts is offered to
/// the first runner that registers after it.
#[test]
fn a_message_waiting_across_a_restart_is_offered_to_the_next_runner() {
    let mut s = TestServer::start_process();
    let mut ui = WsClient::connect(&s);
    let ack = chat(&mut ui, "waits", "Still there after a restart?");
    assert_eq!(ack["data"]["runner"]["waiting"], true);
    drop(ui);
    s.terminate();
    s.spawn();
    let (_, meta) = s.get("/api/sessions/waits");
    assert_eq!(meta["status"], "needs_input", "{meta}");
    let mut runner = register(&s, "after-restart");
    let req = requested(&mut runner, "waits");
    assert_eq!(req["text"], "Still there after a restart?");
    assert_eq!(claim(&mut runner, &req)["type"], "run_claimed");
    s.append("waits", json!({"role": "assistant", "content": "Yes."}));
    s.end_turn("waits", json!({}));
}

#[test]
fn two_runners_racing_for_one_message_exactly_one_claims() {
    let s = TestServer::start();
    let mut r1 = register(&s, "r1");
    let mut r2 = register(&s, "r2");
    let mut ui = WsClient::connect(&s);
    let ack = chat(&mut ui, "race", "Who answers?");
    assert_eq!(ack["data"]["runner"]["offered"], 2);
    let q1 = requested(&mut r1, "race");
    let q2 = requested(&mut r2, "race");
    assert_eq!(q1, q2);
    r1.send(json!({"action": "claim_run", "session_id": "race", "msg_id": q1["msg_id"]}));
    r2.send(json!({"action": "claim_run", "session_id": "race", "msg_id": q2["msg_id"]}));
    let a1 = r1.next_where(|f| f["type"] == "run_claimed" || f["type"] == "action_error");
    let a2 = r2.next_where(|f| f["type"] == "run_claimed" || f["type"] == "action_error");
    let claimed = [&a1, &a2]
        .iter()
        .filter(|f| f["type"] == "run_claimed")
        .count();
    assert_eq!(claimed, 1, "{a1} {a2}");
    let refused = if a1["type"] == "action_error" {
        &a1
    } else {
        &a2
    };
    assert_eq!(refused["data"]["code"], "run_taken");
}

#[test]
fn a_runner_killed_mid_run_releases_it_and_its_partial_reply_stays() {
    let s = TestServer::start();
    let mut r1 = register(&s, "dies");
    let mut ui = WsClient::connect(&s);
    chat(&mut ui, "crashy", "Long task");
    let req = requested(&mut r1, "crashy");
    assert_eq!(claim(&mut r1, &req)["type"], "run_claimed");
    s.append(
        "crashy",
        json!({"id": "partial", "role": "assistant", "content": "half of it"}),
    );
    let (_, meta) = s.get("/api/sessions/crashy");
    assert_eq!(meta["status"], "running");
    drop(r1);
    // With nobody to answer it, the run waits again: never `running`.
    let waited = std::time::Instant::now();
    loop {
        let (_, meta) = s.get("/api/sessions/crashy");
        if meta["status"] == "needs_input" {
            break;
        }
        assert!(
            waited.elapsed() < std::time::Duration::from_secs(30),
            "the released run waits: {meta}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // The turn is still the run's: a second chat gets the original's
    // answer, a message through REST 409, and nothing is written.
    ui.send(json!({"action": "chat", "session_id": "crashy", "text": "Hello?"}));
    let refused = ui.expect("chat_response", |f| f["data"]["type"] == "error");
    assert_eq!(refused["data"]["code"], "run_active", "{refused}");
    let (st, v) = s.post(
        "/api/sessions/crashy/messages",
        json!({"role": "user", "content": "Anyone?"}),
    );
    assert_eq!((st, v["code"].as_str()), (409, Some("run_active")), "{v}");
    let (_, nodes) = s.get("/api/sessions/crashy/nodes");
    assert!(
        !nodes.to_string().contains("Hello?") && !nodes.to_string().contains("Anyone?"),
        "{nodes}"
    );
    // A runner connecting later is offered the released run.
    let mut r2 = register(&s, "takes-over");
    let again = requested(&mut r2, "crashy");
    assert_eq!(again["msg_id"], req["msg_id"]);
    assert_eq!(claim(&mut r2, &again)["type"], "run_claimed");
    s.append(
        "crashy",
        json!({"role": "assistant", "content": "the rest"}),
    );
    let end = s.end_turn("crashy", json!({}));
    assert_eq!(end["status"], "idle", "{end}");
    let dir = s.session_dir("crashy");
    let files = git(&dir, &["ls-tree", "-r", "--name-only", "HEAD"]);
    assert!(
        files.contains("partial"),
        "the partial reply is committed: {files}"
    );
}

#[test]
fn stopping_a_run_tells_the_runner_and_ends_the_turn_cancelled() {
    let s = TestServer::start();
    let mut runner = register(&s, "stoppable");
    let mut ui = WsClient::connect(&s);
    chat(&mut ui, "stopme", "Count to a million");
    let req = requested(&mut runner, "stopme");
    claim(&mut runner, &req);
    s.append(
        "stopme",
        json!({"id": "so-far", "role": "assistant", "content": "1 2 3"}),
    );
    ui.send(json!({"action": "stop_run", "session_id": "stopme"}));
    let before = ui.frames_until("run_stopped", |_| true);
    let stopped = before.last().unwrap();
    assert_eq!(stopped["data"]["status"], "idle", "a stop is not a failure");
    // The original web client's reply is closed (the broadcast may come
    // before or after the answer).
    let is_cancelled = |f: &Value| {
        f["type"] == "chat_response"
            && f["data"]["type"] == "cancelled"
            && f["data"]["msg_id"] == req["msg_id"]
    };
    if !before.iter().any(is_cancelled) {
        ui.expect("chat_response", is_cancelled);
    }
    let cancelled = runner.expect("run_cancelled", |f| f["data"]["session_id"] == "stopme");
    assert_eq!(cancelled["data"]["msg_id"], req["msg_id"]);
    let (_, meta) = s.get("/api/sessions/stopme");
    assert_eq!(
        (
            meta["status"].as_str(),
            meta["last_turn"]["outcome"].as_str()
        ),
        (Some("idle"), Some("cancelled")),
        "{meta}"
    );
    // The partial answer says it was stopped, in git too.
    let (_, nodes) = s.get("/api/sessions/stopme/nodes");
    let so_far = nodes
        .as_array()
        .or_else(|| nodes["nodes"].as_array())
        .unwrap()
        .iter()
        .find(|n| n["id"] == "so-far")
        .cloned()
        .unwrap();
    assert_eq!(so_far["metadata"]["stopped"], true, "{so_far}");
    assert!(git(&s.session_dir("stopme"), &["grep", "-l", "stopped", "HEAD"]).contains("so-far"));
    let files = git(
        &s.session_dir("stopme"),
        &["ls-tree", "-r", "--name-only", "HEAD"],
    );
    assert!(files.contains("so-far"), "{files}");
    // Nothing left to stop.
    let (st, v) = s.post("/api/sessions/stopme/runs/stop", json!({}));
    assert_eq!((st, v["code"].as_str()), (409, Some("no_open_turn")));
}

/// The web UI's retry: `retry {session_id, node_id}` offers the message a
/// reply answered to the runners like a new message, with the reply's
/// predecessor; the runner's answer opens the retried turn on a branch of
/// its own. With no runner, for a message that is not a reply, or while a
/// run holds the session it is refused and nothing changes; a retry
/// stopped before its runner wrote anything leaves the session as it was.
#[test]
fn a_retry_is_offered_to_a_runner_and_its_answer_gets_a_branch_of_its_own() {
    let s = TestServer::start();
    let mut ui = WsClient::connect(&s);
    for (u, a) in [("u1", "a1"), ("u2", "a2")] {
        s.append(
            "again",
            json!({"id": u, "role": "user", "content": format!("question {u}")}),
        );
        s.append(
            "again",
            json!({"id": a, "role": "assistant", "content": format!("answer {a}")}),
        );
        s.end_turn("again", json!({}));
    }
    let error_of = |ui: &mut WsClient| {
        ui.next_where(|f| f["type"] == "action_error")["data"]["code"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    ui.send(json!({"action": "retry", "session_id": "again", "node_id": "a1"}));
    assert_eq!(error_of(&mut ui), "no_runner");
    let mut runner = register(&s, "retrier");
    ui.send(json!({"action": "retry", "session_id": "again", "node_id": "u1"}));
    assert_eq!(error_of(&mut ui), "invalid_input");
    let (_, before) = s.get("/api/sessions/again/branches");
    assert_eq!(before["current"], "main");

    ui.send(json!({"action": "retry", "session_id": "again", "node_id": "a1"}));
    let ack = ui.expect("retry_ack", |_| true);
    assert_eq!(
        (ack["data"]["msg_id"].as_str(), ack["data"]["turn"].as_u64()),
        (Some("u1"), Some(1)),
        "{ack}"
    );
    let req = requested(&mut runner, "again");
    assert_eq!(
        (
            req["msg_id"].as_str(),
            req["predecessor"].as_str(),
            req["retry_of"].as_str(),
            req["text"].as_str(),
            req["turn"].as_u64()
        ),
        (
            Some("u1"),
            Some("u1"),
            Some("a1"),
            Some("question u1"),
            Some(1)
        ),
        "{req}"
    );
    // While it waits, a message and another retry are refused.
    ui.send(json!({"action": "chat", "session_id": "again", "text": "hello?"}));
    let refused = ui.expect("chat_response", |f| f["data"]["session_id"] == "again");
    assert_eq!(refused["data"]["code"], "run_active");
    ui.send(json!({"action": "retry", "session_id": "again", "node_id": "a2"}));
    assert_eq!(error_of(&mut ui), "run_active");
    assert_eq!(s.get("/api/sessions/again/branches").1, before);

    assert_eq!(claim(&mut runner, &req)["type"], "run_claimed");
    s.append(
        "again",
        json!({"id": "a1b", "role": "assistant", "predecessor": "u1", "content": "a second answer"}),
    );
    let end = s.end_turn("again", json!({}));
    assert_eq!(end["turn"], 1, "{end}");
    let (_, branches) = s.get("/api/sessions/again/branches");
    assert_eq!(branches["current"], "retry-a1b", "{branches}");
    let (_, msgs) = s.get("/api/sessions/again/messages");
    let ids: Vec<&str> = msgs["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["u1", "a1b"]);
    let dir = s.session_dir("again");
    assert_eq!(turn_commits(&dir, "main"), "2", "main keeps both turns");
    assert_eq!(turn_commits(&dir, "retry-a1b"), "1");

    // A retry stopped before its runner writes: nothing changes.
    ui.send(json!({"action": "retry", "session_id": "again", "node_id": "a1b"}));
    ui.expect("retry_ack", |_| true);
    let req = requested(&mut runner, "again");
    assert_eq!(claim(&mut runner, &req)["type"], "run_claimed");
    let (st, v) = s.post("/api/sessions/again/runs/stop", json!({}));
    assert_eq!((st, v["status"].as_str()), (200, Some("idle")), "{v}");
    runner.expect("run_cancelled", |f| f["data"]["session_id"] == "again");
    assert_eq!(s.get("/api/sessions/again/branches").1, branches);
    let (_, meta) = s.get("/api/sessions/again");
    assert_eq!(
        (meta["status"].as_str(), meta["open_turn"].is_null()),
        (Some("idle"), true),
        "{meta}"
    );
}

#[test]
fn with_no_runner_the_message_waits_and_a_runner_connecting_later_answers() {
    let s = TestServer::start();
    let mut ui = WsClient::connect(&s);
    let ack = chat(&mut ui, "lonely", "Anyone there?");
    assert_eq!(
        ack["data"]["runner"],
        json!({"offered": 0, "waiting": true})
    );
    let (_, meta) = s.get("/api/sessions/lonely");
    assert_eq!(
        meta["status"], "needs_input",
        "not running: nothing would end it"
    );
    let mut runner = WsClient::connect(&s);
    runner.send(
        json!({"action": "register_runner", "name": "late", "sessions": {"sessions": ["lonely"]}}),
    );
    let reg = runner.expect("runner_registered", |_| true);
    assert_eq!(reg["data"]["offered"], 1);
    let req = requested(&mut runner, "lonely");
    assert_eq!(req["text"], "Anyone there?");
    assert_eq!(claim(&mut runner, &req)["type"], "run_claimed");
    s.append("lonely", json!({"role": "assistant", "content": "Here."}));
    let end = s.end_turn("lonely", json!({}));
    assert_eq!(end["status"], "idle");
    // A runner scoped to other sessions is not offered this one.
    let mut other = WsClient::connect(&s);
    other.send(json!({"action": "register_runner", "name": "elsewhere", "sessions": {"projects": ["nope"]}}));
    assert_eq!(
        other.expect("runner_registered", |_| true)["data"]["offered"],
        0
    );
    let ack = chat(&mut ui, "lonely", "Again?");
    assert_eq!(ack["data"]["runner"]["offered"], 1, "only the late runner");
    // Not a runner: claim refused.
    other.send(
        json!({"action": "claim_run", "session_id": "lonely", "msg_id": ack["data"]["msg_id"]}),
    );
    let refused = other.next_where(|f| f["type"] == "action_error");
    assert_eq!(refused["data"]["code"], "unknown_run");
}

/// `openprogram runner llm` as its own process against the server: the
/// composer's message answered by the stand-in LLM, streamed (several
/// fills before the end), committed; the LLM down: the turn ends `failed`
/// with the error in the turn record.
#[test]
fn the_built_in_runner_streams_the_llms_answer_and_reports_its_failure() {
    use crate::fake_llm::FakeLlm;
    let answer = "The parser lives in src/parse.rs and the lexer in src/lex.rs, both tested.";
    let llm = FakeLlm::start(std::time::Duration::ZERO, move |_, body| {
        let last = body["messages"]
            .as_array()
            .and_then(|m| m.last())
            .cloned()
            .unwrap_or_default();
        if last["content"] == "fail please" {
            (500, "the model is overloaded".to_string())
        } else {
            (200, answer.to_string())
        }
    });
    let s = TestServer::start();
    let mut runner = std::process::Command::new(crate::helpers::server_bin())
        .args(["runner", "llm", "--url", &s.url])
        .env("OPENPROGRAM_LLM_BASE_URL", &llm.base_url)
        .env("OPENPROGRAM_LLM_MODEL", "stand-in")
        .env("OPENPROGRAM_STATE_DIR", &s.state_dir)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("runner process");
    let mut ui = WsClient::connect(&s);
    // Whether the runner registered before this message (offered at once)
    // or after it (the waiting run is offered when it registers), it is
    // answered without the user sending anything again.
    ui.send(json!({"action": "chat", "session_id": "llm1", "text": "Where is the parser?"}));
    let frames = ui.frames_until("turn_ended", |f| f["data"]["session_id"] == "llm1");
    let ack = frames
        .iter()
        .find(|f| f["type"] == "chat_ack")
        .expect("a chat_ack before the turn ended");
    let runner_state = &ack["data"]["runner"];
    assert!(
        runner_state["offered"] == 1 || runner_state["waiting"] == true,
        "{ack}"
    );
    let fills = frames
        .iter()
        .filter(|f| f["type"] == "node_updated" && f["data"]["session_id"] == "llm1")
        .count();
    assert!(fills >= 2, "streamed in pieces: {fills} fills");
    let (_, msgs) = s.get("/api/sessions/llm1/messages");
    let last = msgs["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        (last["role"].as_str(), last["content"].as_str()),
        (Some("assistant"), Some(answer))
    );
    let (_, meta) = s.get("/api/sessions/llm1");
    assert_eq!(meta["status"], "idle");
    assert!(
        turn_commits(&s.session_dir("llm1"), "HEAD")
            .parse::<u32>()
            .unwrap()
            >= 1
    );
    let asked = llm.requests();
    let sent = &asked.last().unwrap().1;
    assert_eq!(sent["stream"], true);
    assert_eq!(
        sent["messages"].as_array().unwrap().last().unwrap()["content"],
        "Where is the parser?"
    );
    // The reply names the runner and the model.
    assert_eq!(
        (
            last["metadata"]["runner"].as_str(),
            last["metadata"]["model"].as_str()
        ),
        (Some("llm"), Some("stand-in")),
        "{last}"
    );

    // Retry: the LLM is asked the same question again (without the first
    // answer), and the new answer is on a branch of its own.
    let first = last["id"].as_str().unwrap().to_string();
    ui.send(json!({"action": "retry", "session_id": "llm1", "node_id": first}));
    ui.expect("retry_ack", |f| f["data"]["session_id"] == "llm1");
    ui.frames_until("turn_ended", |f| f["data"]["session_id"] == "llm1");
    let asked = llm.requests();
    let again = &asked.last().unwrap().1["messages"];
    assert_eq!(
        again.as_array().unwrap().last().unwrap()["content"],
        "Where is the parser?",
        "{again}"
    );
    assert!(!again.to_string().contains("src/parse.rs"), "{again}");
    let (_, branches) = s.get("/api/sessions/llm1/branches");
    assert!(
        branches["current"].as_str().unwrap().starts_with("retry-"),
        "{branches}"
    );
    let (_, msgs) = s.get("/api/sessions/llm1/messages");
    let replies: Vec<&Value> = msgs["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant")
        .collect();
    assert_eq!(replies.len(), 1, "{msgs}");
    assert_ne!(replies[0]["id"], first.as_str());
    assert_eq!(replies[0]["content"], answer);

    // The LLM fails: the turn ends failed, saying why.
    chat(&mut ui, "llm2", "fail please");
    ui.frames_until("turn_ended", |f| f["data"]["session_id"] == "llm2");
    let (_, meta) = s.get("/api/sessions/llm2");
    assert_eq!(meta["status"], "failed", "{meta}");
    assert_eq!(meta["last_turn"]["outcome"], "failed");
    assert!(
        meta["last_turn"]["error"]
            .as_str()
            .unwrap_or("")
            .contains("overloaded"),
        "{meta}"
    );
    let _ = runner.kill();
    let _ = runner.wait();
}

/// `[runner] builtin = "llm"`: `serve` starts the built-in runner itself.
#[test]
fn serve_starts_the_built_in_runner_when_configured() {
    use crate::fake_llm::FakeLlm;
    let llm = FakeLlm::replying(std::time::Duration::ZERO, "Hello from the stand-in.");
    let s = TestServer::start_with_env(&[
        ("OPENPROGRAM_RUNNER_BUILTIN", "llm"),
        ("OPENPROGRAM_LLM_BASE_URL", &llm.base_url),
        ("OPENPROGRAM_LLM_MODEL", "stand-in"),
    ]);
    let mut ui = WsClient::connect(&s);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut n = 0;
    loop {
        n += 1;
        let ack = chat(&mut ui, &format!("b{n}"), "hi");
        if ack["data"]["runner"]["offered"] == 1 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the built-in runner registers"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let sid = format!("b{n}");
    ui.frames_until("turn_ended", |f| f["data"]["session_id"] == sid.as_str());
    let (_, msgs) = s.get(&format!("/api/sessions/{sid}/messages"));
    assert!(
        msgs.to_string().contains("Hello from the stand-in."),
        "{msgs}"
    );
}

/// The Python client's example runner (`clients/python/examples/
/// tool_runner.py`, on the `websockets` package) answers a composer
/// message with a tool call recorded as a tool node of its answer.
#[test]
fn the_python_example_runner_records_its_tool_call_as_a_tool_node() {
    let Some(python) = crate::helpers::sdk_python() else {
        return;
    };
    let s = TestServer::start();
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut child = std::process::Command::new(&python)
        .arg("clients/python/examples/tool_runner.py")
        .arg("--once")
        .current_dir(&root)
        .env("OPENPROGRAM_URL", &s.url)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python");
    // It says when it has registered.
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut out, &mut line).unwrap();
    assert_eq!(line.trim(), "registered");
    let mut ui = WsClient::connect(&s);
    let ack = chat(&mut ui, "py-run", "count these four words");
    assert_eq!(ack["data"]["runner"]["offered"], 1, "{ack}");
    let status = child.wait().expect("the runner exits after one run");
    assert!(status.success());
    let (_, nodes) = s.get("/api/sessions/py-run/nodes");
    let nodes = nodes["nodes"].as_array().unwrap().clone();
    let tool = nodes
        .iter()
        .find(|n| n["role"] == "tool")
        .expect("a tool node");
    let caller = nodes
        .iter()
        .find(|n| n["id"] == tool["caller"])
        .expect("its caller");
    assert_eq!(
        (caller["role"].as_str(), tool["name"].as_str()),
        (Some("assistant"), Some("word_count"))
    );
    assert_eq!(tool["output"], json!({"words": 4}));
    let (_, msgs) = s.get("/api/sessions/py-run/messages");
    assert!(
        msgs.to_string().contains("Your message has 4 words."),
        "{msgs}"
    );
    assert_eq!(turn_commits(&s.session_dir("py-run"), "HEAD"), "1");
}
