use serde_json::json;

use crate::helpers::TestServer;

fn assert_error(res: (u16, serde_json::Value), status: u16, code: &str) {
    assert_eq!(res.0, status, "{}", res.1);
    assert_eq!(res.1["code"], code, "{}", res.1);
    assert!(
        res.1["error"].as_str().is_some_and(|e| !e.is_empty()),
        "{}",
        res.1
    );
}

#[test]
fn hostile_session_and_node_ids_are_refused_and_nothing_is_written() {
    let s = TestServer::start();
    // Over 200 bytes (the limit counts bytes, see ids::MAX_ID_BYTES).
    let long = "x".repeat(201);
    for bad in [
        ".hidden",
        "a%2Fb",
        "a%5Cb",
        "a%0Ab",
        "a%00b",
        "a%20b",
        long.as_str(),
    ] {
        let res = s.post(
            &format!("/api/sessions/{bad}/messages"),
            json!({"role": "user", "content": "x"}),
        );
        assert_error(res, 400, "invalid_id");
        assert_error(s.get(&format!("/api/sessions/{bad}")), 400, "invalid_id");
    }
    for bad in ["..", "a/b", "with space", long.as_str()] {
        let res = s.post(
            "/api/sessions/fine/messages",
            json!({"id": bad, "role": "user", "content": "x"}),
        );
        assert_error(res, 400, "invalid_id");
        let res = s.post("/api/sessions", json!({"id": bad}));
        assert_error(res, 400, "invalid_id");
    }
    // Clients normalise `..` away, so send it raw.
    for raw in [
        "/api/sessions/../messages",
        "/api/sessions/%2e%2e/messages",
        "/api/sessions/./messages",
    ] {
        let status = s.raw_request("POST", raw, r#"{"role":"user","content":"x"}"#);
        assert!(status == 400 || status == 404, "{raw} gave {status}");
    }
    let entries: Vec<_> = std::fs::read_dir(s.state_dir.join("sessions"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_type().unwrap().is_dir())
        .map(|e| e.file_name())
        .collect();
    assert!(entries.is_empty(), "no session may be written: {entries:?}");
    assert!(!s.state_dir.parent().unwrap().join("b").exists());
}

#[test]
fn malformed_bodies_get_clear_errors() {
    let s = TestServer::start_with_env(&[("OPENPROGRAM_BODY_LIMIT", "2048")]);
    assert_error(
        s.post_raw("/api/sessions/m/messages", "application/json", b"{not json"),
        400,
        "invalid_body",
    );
    assert_error(
        s.post(
            "/api/sessions/m/messages",
            json!({"role": "wizard", "content": "x"}),
        ),
        400,
        "invalid_body",
    );
    assert_error(
        s.post("/api/sessions/m/messages", json!({"content": "no role"})),
        400,
        "invalid_body",
    );
    // A misspelt field is refused and named, never silently dropped: a
    // typo must not turn into another operation or an unbound session.
    s.append(
        "typo",
        json!({"role": "user", "content": "first", "id": "u1"}),
    );
    for (body, field) in [
        (
            json!({"role": "user", "content": "x", "predecesor": "u1"}),
            "predecesor",
        ),
        (
            json!({"role": "user", "content": "x", "sesion": {"project_id": "p"}}),
            "sesion",
        ),
        (
            json!({"role": "user", "content": "x", "session": {"projectid": "p"}}),
            "projectid",
        ),
    ] {
        let (st, err) = s.post("/api/sessions/typo/messages", body);
        assert_eq!(
            (st, err["code"].as_str()),
            (400, Some("invalid_body")),
            "{err}"
        );
        assert!(err["error"].as_str().unwrap().contains(field), "{err}");
    }
    let (_, nodes) = s.get("/api/sessions/typo/nodes");
    assert_eq!(
        nodes["nodes"].as_array().unwrap().len(),
        1,
        "nothing appended"
    );
    assert_error(
        s.post(
            "/api/sessions/typo2/messages",
            json!({"role": "user", "content": "x", "sesion": {}}),
        ),
        400,
        "invalid_body",
    );
    assert_eq!(s.get("/api/sessions/typo2").0, 404, "no session created");
    assert_error(
        s.post_raw("/api/sessions/m/messages", "text/plain", b"hi"),
        415,
        "unsupported_media_type",
    );
    let big = "x".repeat(4096);
    assert_error(
        s.post(
            "/api/sessions/m/messages",
            json!({"role": "user", "content": big}),
        ),
        413,
        "body_too_large",
    );
    assert!(!s.session_dir("m").exists());
    assert_error(
        s.get("/api/sessions/m/commits?limit=0"),
        400,
        "invalid_query",
    );
    assert_error(
        s.get("/api/sessions/m/commits?limit=abc"),
        400,
        "invalid_query",
    );
    assert_error(s.get("/api/nope"), 404, "not_found");
}

#[test]
fn dag_and_turn_rules_are_enforced() {
    let s = TestServer::start();
    // Unknown sessions: reads are 404; only a user message creates one.
    assert_error(s.get("/api/sessions/ghost"), 404, "unknown_session");
    assert_error(
        s.get("/api/sessions/ghost/messages"),
        404,
        "unknown_session",
    );
    assert_error(s.get("/api/sessions/ghost/nodes"), 404, "unknown_session");
    assert_error(s.get("/api/sessions/ghost/commits"), 404, "unknown_session");
    assert_error(
        s.post("/api/sessions/ghost/turns", json!({})),
        404,
        "unknown_session",
    );
    assert_error(
        s.post(
            "/api/sessions/ghost/messages",
            json!({"role": "assistant", "content": "x"}),
        ),
        404,
        "unknown_session",
    );
    assert!(!s.session_dir("ghost").exists());

    s.post("/api/sessions", json!({"id": "r"}));
    assert_error(
        s.post(
            "/api/sessions/r/messages",
            json!({"role": "assistant", "content": "x"}),
        ),
        409,
        "no_open_turn",
    );
    assert_error(
        s.post("/api/sessions/r/turns", json!({})),
        409,
        "no_open_turn",
    );
    assert_error(
        s.post(
            "/api/sessions/r/messages",
            json!({"role": "user", "content": "x", "predecessor": "nope"}),
        ),
        400,
        "unknown_predecessor",
    );
    s.append("r", json!({"id": "u1", "role": "user", "content": "hello"}));
    assert_error(
        s.post(
            "/api/sessions/r/messages",
            json!({"role": "tool", "name": "read", "content": "x"}),
        ),
        400,
        "missing_caller",
    );
    assert_error(
        s.post(
            "/api/sessions/r/messages",
            json!({"role": "tool", "caller": "u1", "content": "x"}),
        ),
        400,
        "missing_name",
    );
    assert_error(
        s.post(
            "/api/sessions/r/messages",
            json!({"role": "tool", "name": "read", "caller": "zz"}),
        ),
        400,
        "unknown_caller",
    );
    // One writer per session: a second user message during a run is refused.
    let (st, err) = s.post(
        "/api/sessions/r/messages",
        json!({"role": "user", "content": "again"}),
    );
    assert_eq!(st, 409);
    assert_eq!(err["code"], "run_active");
    assert_eq!(
        err["error"],
        "a run is currently active in this session — wait for it to finish or stop it first"
    );
    let (_, nodes) = s.get("/api/sessions/r/nodes");
    assert_eq!(
        nodes["nodes"].as_array().unwrap().len(),
        1,
        "refused input changes nothing"
    );
    assert_error(
        s.post(
            "/api/sessions/r/turns",
            json!({"context": {}, "context_id": "../x"}),
        ),
        400,
        "invalid_id",
    );
    assert_error(
        s.post("/api/sessions/r/turns", json!({"outcome": "exploded"})),
        400,
        "invalid_body",
    );
    let (_, meta) = s.get("/api/sessions/r");
    assert!(
        meta["open_turn"].is_object(),
        "a refused end of turn leaves the turn open"
    );
}

/// A tool or code node answers a call of the open turn: a caller from an
/// ended turn, a user or tool node is refused (400 `invalid_caller`),
/// and nothing is added to the ended turn's view. Runtime nodes (caller
/// `ROOT`) stay accepted.
#[test]
fn a_caller_must_be_an_assistant_of_the_open_turn() {
    let s = TestServer::start();
    let id = "callers";
    s.append(id, json!({"id": "u1", "role": "user", "content": "one"}));
    s.append(
        id,
        json!({"id": "a1", "role": "assistant", "content": "calls"}),
    );
    s.append(
        id,
        json!({"id": "t1", "role": "tool", "name": "grep", "caller": "a1", "content": "hits"}),
    );
    s.end_turn(id, json!({}));
    s.append(id, json!({"id": "u2", "role": "user", "content": "two"}));
    s.append(
        id,
        json!({"id": "a2", "role": "assistant", "content": "more"}),
    );
    for caller in ["a1", "u2", "t1"] {
        let (status, v) = s.post(
            &format!("/api/sessions/{id}/messages"),
            json!({"role": "tool", "name": "grep", "caller": caller, "content": "late"}),
        );
        assert_eq!(status, 400, "caller {caller}: {v}");
        assert_eq!(v["code"], "invalid_caller", "caller {caller}: {v}");
    }
    // The open turn's assistant, and a runtime node.
    s.append(
        id,
        json!({"role": "tool", "name": "grep", "caller": "a2", "content": "ok"}),
    );
    s.append(
        id,
        json!({"role": "code", "name": "context/system_prompt", "caller": "ROOT", "content": "runtime"}),
    );
    s.end_turn(id, json!({}));
    let (status, v) = s.post(&format!("/api/sessions/{id}/checkout"), json!({"turn": 1}));
    assert_eq!(status, 200, "{v}");
    let (_, msgs) = s.get(&format!("/api/sessions/{id}/messages"));
    let texts: Vec<&str> = msgs["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert!(!texts.contains(&"late"), "{msgs}");
}

/// Titles have a length limit everywhere a client sets one; a bundle
/// with a 3 MB title or a file git on another system reads as `.git` is
/// refused; a context id is checked even without a context.
#[test]
fn long_titles_dot_git_look_alikes_and_stray_context_ids_are_refused() {
    let s = TestServer::start();
    s.turn("t", "question", "answer", &[]);
    let long = "T".repeat(301);
    assert_error(
        s.patch("/api/sessions/t", json!({"title": long})),
        400,
        "invalid_input",
    );
    assert_error(
        s.post(
            "/api/sessions/fresh/messages",
            json!({"role": "user", "content": "hi", "session": {"title": long}}),
        ),
        400,
        "invalid_input",
    );
    assert!(!s.session_dir("fresh").exists());
    let (st, v) = s.patch("/api/sessions/t", json!({"title": "T".repeat(300)}));
    assert_eq!(st, 200, "{v}");
    // A title is one line of text: no NUL, no line break.
    for bad in ["a\u{0}b", "two\nlines", "bell\u{7}"] {
        assert_error(
            s.patch("/api/sessions/t", json!({"title": bad})),
            400,
            "invalid_input",
        );
    }
    let (_, meta) = s.get("/api/sessions/t");
    assert_eq!(meta["title"], "T".repeat(300), "unchanged");

    // A stray or bad context id.
    s.append("t", json!({"role": "user", "content": "two"}));
    s.append("t", json!({"role": "assistant", "content": "r2"}));
    assert_error(
        s.post("/api/sessions/t/turns", json!({"context_id": "../x"})),
        400,
        "invalid_id",
    );
    assert_error(
        s.post("/api/sessions/t/turns", json!({"context_id": "ok-id"})),
        400,
        "invalid_input",
    );
    s.end_turn("t", json!({}));

    // Bundles edited with git: a huge title, then a `.git` look-alike.
    let (_, _, bundle) = s.get_bytes("/api/sessions/t/export");
    let work = tempfile::tempdir().unwrap();
    let b = work.path().join("in.bundle");
    std::fs::write(&b, &bundle).unwrap();
    let repo = work.path().join("r");
    let git = |args: &[&str]| crate::helpers::git(work.path(), args);
    git(&["clone", "-q", b.to_str().unwrap(), repo.to_str().unwrap()]);
    let rgit = |args: &[&str]| crate::helpers::git(&repo, args);
    rgit(&["config", "user.email", "t@t"]);
    rgit(&["config", "user.name", "t"]);
    let meta_path = repo.join("meta.json");
    let mut meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&meta_path).unwrap()).unwrap();
    meta["title"] = json!("x".repeat(3 << 20));
    std::fs::write(&meta_path, serde_json::to_vec(&meta).unwrap()).unwrap();
    rgit(&["commit", "-qam", "huge title"]);
    let out = work.path().join("out.bundle");
    // The repository's main as a bundle, imported: refused, and why.
    let import_refused = |what: &str| -> String {
        rgit(&["bundle", "create", "-q", out.to_str().unwrap(), "main"]);
        let (st, v) = s.post_raw(
            "/api/sessions/import",
            "application/x-git-bundle",
            &std::fs::read(&out).unwrap(),
        );
        assert_eq!(
            (st, v["code"].as_str()),
            (400, Some("invalid_bundle")),
            "{what}: {v}"
        );
        rgit(&["reset", "-q", "--hard", "HEAD~1"]);
        v["error"].as_str().unwrap().to_string()
    };
    assert!(import_refused("title").contains("title"));
    for name in ["GIT~1", ".git.", ".g\u{200C}it"] {
        std::fs::create_dir_all(repo.join(name)).unwrap();
        std::fs::write(repo.join(name).join("config"), "[core]\n").unwrap();
        // git refuses such names itself unless told otherwise.
        rgit(&[
            "-c",
            "core.protectNTFS=false",
            "-c",
            "core.protectHFS=false",
            "add",
            "-f",
            ".",
        ]);
        rgit(&["commit", "-qm", "look-alike"]);
        let why = import_refused(name);
        assert!(
            why.contains(".git") || why.contains("dot or a space"),
            "{name}: {why}"
        );
        let _ = std::fs::remove_dir_all(repo.join(name));
    }
}

/// What a raw socket gets for `bytes`, the connection read to its end.
fn raw(s: &TestServer, bytes: &[u8]) -> String {
    use std::io::{Read, Write};
    let addr = s.url.trim_start_matches("http://").to_string();
    let mut c = std::net::TcpStream::connect(&addr).unwrap();
    c.set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .unwrap();
    // The server may close before it has read everything sent.
    let _ = c.write_all(bytes);
    let mut out = Vec::new();
    let _ = c.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// The last answer in `text`: its status and its JSON body.
fn last_answer(text: &str) -> (u16, serde_json::Value) {
    let answer = text
        .match_indices("HTTP/1.1 ")
        .map(|(i, _)| text.split_at(i).1)
        .filter(|a| a.bytes().skip(9).take(3).all(|c| c.is_ascii_digit()))
        .last()
        .expect("an answer");
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length: "))
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(body.len(), length, "{answer}");
    assert!(head.contains("content-type: application/json"), "{head}");
    (status, serde_json::from_str(body).unwrap())
}

#[test]
fn bytes_that_are_not_http_get_a_json_refusal_with_a_code() {
    let s = TestServer::start_with_env(&[("OPENPROGRAM_SERVER_REQUEST_TIMEOUT", "1")]);
    let host = s.url.trim_start_matches("http://").to_string();
    // A broken request line; a header with a control character; a length
    // beside chunked encoding.
    for bytes in [
        "GARBAGE\r\n\r\n".to_string(),
        format!("GET /api/health HTTP/1.1\r\nHost: {host}\r\nX-A: \u{1}\r\n\r\n"),
        format!("POST /api/sessions/x/messages HTTP/1.1\r\nHost: {host}\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"),
    ] {
        assert_error(last_answer(&raw(&s, bytes.as_bytes())), 400, "bad_request");
    }
    // Behind an answered request on the same connection: that answer
    // whole, then the refusal.
    let text = raw(
        &s,
        format!("GET /api/health HTTP/1.1\r\nHost: {host}\r\n\r\nGARBAGE\r\n\r\n").as_bytes(),
    );
    assert!(text.starts_with("HTTP/1.1 200 OK"), "{text}");
    assert!(text.contains("\"status\":\"ok\""), "{text}");
    assert_error(last_answer(&text), 400, "bad_request");
    // A head over the HTTP layer's buffer.
    let big = format!(
        "GET /api/health HTTP/1.1\r\nHost: {host}\r\nX-Big: {}",
        "a".repeat(140 * 1024)
    );
    assert_error(
        last_answer(&raw(&s, big.as_bytes())),
        431,
        "headers_too_large",
    );
    // A head that never ends.
    let slow = format!("GET /api/health HTTP/1.1\r\nHost: {host}\r\n");
    assert_error(
        last_answer(&raw(&s, slow.as_bytes())),
        408,
        "request_timeout",
    );
    // Nothing was written; the server answers as before.
    assert!(!s.session_dir("x").exists());
    assert_eq!(s.get("/api/health").0, 200);
}
