//! The hostile-input suite: hundreds of refusals across URL ids, body ids,
//! node ids, JSON, sizes, paths, bundles, headers and WebSocket frames.
//! Every answer must be a 4xx JSON error with a `code` (never a 5xx),
//! nothing may be written outside the state directory and the registered
//! project, and the server must be healthy at the end.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::helpers::TestServer;
use crate::security::{bundle_with, enc, meta_blob};
use crate::ws::WsClient;

/// Every path below `dir` (recursively).
fn listing(dir: &Path, out: &mut BTreeSet<PathBuf>) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            out.insert(e.path());
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                listing(&e.path(), out);
            }
        }
    }
}

/// The system folders' top levels (what a broken path check would touch).
fn system_listing() -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    for d in [
        "/", "/etc", "/usr", "/var", "/root", "/home", "/opt", "/srv",
    ] {
        if let Ok(entries) = std::fs::read_dir(d) {
            out.extend(entries.flatten().map(|e| e.path()));
        }
    }
    out
}

struct Tally {
    cases: usize,
    by_category: std::collections::BTreeMap<&'static str, usize>,
    failures: Vec<String>,
}

impl Tally {
    fn check(&mut self, category: &'static str, name: &str, status: u16, body: &Value) {
        self.cases += 1;
        *self.by_category.entry(category).or_default() += 1;
        let code_ok = body["code"].as_str().is_some_and(|c| !c.is_empty());
        let error_ok = body["error"].as_str().is_some_and(|e| !e.is_empty());
        if !(400..500).contains(&status) || !code_ok || !error_ok {
            self.failures
                .push(format!("[{category}] {name}: {status} {body}"));
        }
    }
}

fn bad_ids() -> Vec<String> {
    let mut v: Vec<String> = [
        ".",
        "..",
        ".hidden",
        "%2e%2e",
        "%2E",
        "a%2Fb",
        "a%5Cb",
        "a%00b",
        "a%0Ab",
        "a%0Db",
        "a%09b",
        "a%20b",
        "%7F",
        "index.json",
        "locations.json",
        "projects",
        "search",
        "token",
        "%FF%FE",
        "a%C3",
        "%E2%80%8Ba%0B",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.push("x".repeat(201));
    v.push(enc(&"中".repeat(67)));
    v.push(enc(&"🦀".repeat(51)));
    v
}

fn raw_body_ids() -> Vec<Value> {
    let mut v: Vec<Value> = [
        "",
        ".",
        "..",
        ".x",
        "a/b",
        "a\\b",
        "a\nb",
        "a\u{0}b",
        "a b",
        "a\tb",
        "index.json",
        "locations.json",
        "token",
        "search",
        "projects",
        "\u{7f}",
    ]
    .iter()
    .map(|s| json!(s))
    .collect();
    v.push(json!("y".repeat(201)));
    v.push(json!("é".repeat(101)));
    v.extend([json!(1), json!(true), json!(["a"]), json!({"id": "a"})]);
    v
}

#[test]
fn every_hostile_input_gets_a_clear_4xx_answer() {
    let scratch = tempfile::tempdir().unwrap();
    let project = scratch.path().join("project");
    std::fs::create_dir(&project).unwrap();
    let s = TestServer::start_with_env(&[("OPENPROGRAM_BODY_LIMIT", "65536")]);
    let (st, p) = s.post("/api/projects", json!({"path": project}));
    assert_eq!(st, 201, "{p}");
    s.turn("victim", "hello", "hi", &[]);
    let file = scratch.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let looped = scratch.path().join("loop");
    std::os::unix::fs::symlink(&looped, &looped).unwrap();
    let mut before = BTreeSet::new();
    listing(scratch.path(), &mut before);
    let sys_before = system_listing();
    let mut t = Tally {
        cases: 0,
        by_category: Default::default(),
        failures: Vec::new(),
    };
    let json_head = |method: &str, path: &str, len: usize| {
        format!("{method} {path} HTTP/1.1\r\nHost: {{addr}}\r\nContent-Type: application/json\r\nContent-Length: {len}")
    };
    let send = |method: &str, path: &str, body: &[u8]| {
        s.raw_http(&json_head(method, path, body.len()), body)
    };

    // URL ids, on every route that takes one.
    let msg = br#"{"role":"user","content":"x"}"#.as_slice();
    for id in bad_ids() {
        for (method, route, body) in [
            ("GET", format!("/api/sessions/{id}"), b"".as_slice()),
            ("POST", format!("/api/sessions/{id}/messages"), msg),
            (
                "PATCH",
                format!("/api/sessions/{id}"),
                br#"{"pinned":true}"#.as_slice(),
            ),
            ("DELETE", format!("/api/sessions/{id}"), b"".as_slice()),
            ("GET", format!("/api/sessions/{id}/nodes"), b"".as_slice()),
            (
                "POST",
                format!("/api/sessions/{id}/turns"),
                b"{}".as_slice(),
            ),
            ("POST", format!("/api/sessions/{id}/fork"), b"{}".as_slice()),
            ("GET", format!("/api/sessions/{id}/export"), b"".as_slice()),
            (
                "POST",
                format!("/api/channels/{id}/messages"),
                br#"{"account_id":"a","peer_id":"p","text":"x"}"#.as_slice(),
            ),
        ] {
            let (st, v) = send(method, &route, body);
            t.check("url ids", &format!("{method} {route}"), st, &v);
        }
    }
    // Ids inside bodies: node ids, session ids, predecessors, callers,
    // channel message ids.
    for id in raw_body_ids() {
        let cases = [
            (
                "/api/sessions/victim/messages",
                json!({"role": "user", "content": "x", "id": id}),
            ),
            (
                "/api/sessions/fresh/messages",
                json!({"role": "user", "content": "x", "session": {"id": id}}),
            ),
            ("/api/sessions", json!({"id": id})),
            (
                "/api/sessions/victim/messages",
                json!({"role": "assistant", "content": "x", "predecessor": id}),
            ),
            (
                "/api/channels/wechat/messages",
                json!({"account_id": "a", "peer_id": "p", "text": "x", "message_id": id}),
            ),
        ];
        for (route, body) in cases {
            let bytes = body.to_string().into_bytes();
            let (st, v) = send("POST", route, &bytes);
            t.check("body ids", &format!("{route} {body}"), st, &v);
        }
    }
    // Malformed JSON, wrong types, deep nesting, bad UTF-8.
    let deep_array = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
    let deep_object = format!("{}1{}", r#"{"a":"#.repeat(3000), "}".repeat(3000));
    let mut bodies: Vec<Vec<u8>> = vec![
        b"{".to_vec(),
        b"[]".to_vec(),
        b"null".to_vec(),
        b"1".to_vec(),
        b"\"s\"".to_vec(),
        b"{}x".to_vec(),
        b"{\"role\":1}".to_vec(),
        b"{\"role\":\"user\",\"metadata\":[]}".to_vec(),
        b"{\"role\":\"user\",\"content\":\"\xff\xfe\"}".to_vec(),
        b"\xef\xbb\xbf{}".to_vec(),
        b"{\"role\":\"user\",\"queue\":\"yes\"}".to_vec(),
        b"{\"outcome\":\"maybe\"}".to_vec(),
        b"{\"turn\":-1}".to_vec(),
        b"{\"commit\":123}".to_vec(),
        b"{\"unknown_field\":1}".to_vec(),
        deep_array.into_bytes(),
        deep_object.into_bytes(),
    ];
    bodies.push(b"{\"role\":\"user\",\"content\":\"x\",\"session\":[]}".to_vec());
    for body in &bodies {
        for route in [
            "/api/sessions/victim/messages",
            "/api/sessions",
            "/api/sessions/victim/turns",
            "/api/sessions/victim/checkout",
            "/api/sessions/victim/switch",
            "/api/projects",
            "/api/sessions/victim/fork",
            "/api/channels/wechat/messages",
        ] {
            let (st, v) = send("POST", route, body);
            t.check(
                "json",
                &format!(
                    "{route} {}",
                    String::from_utf8_lossy(body)
                        .chars()
                        .take(40)
                        .collect::<String>()
                ),
                st,
                &v,
            );
        }
        let (st, v) = send("PATCH", "/api/sessions/victim", body);
        t.check("json", "PATCH session", st, &v);
    }
    // Sizes: bodies over the limit, limits out of range.
    let big = format!(r#"{{"role":"user","content":"{}"}}"#, "x".repeat(70_000));
    for route in [
        "/api/sessions/victim/messages",
        "/api/sessions",
        "/api/projects",
        "/api/sessions/victim/turns",
    ] {
        let (st, v) = send("POST", route, big.as_bytes());
        t.check("sizes", route, st, &v);
    }
    for q in [
        "limit=0",
        "limit=10001",
        "limit=-1",
        "limit=x",
        "offset=-1",
        "limit=99999999999999999999",
    ] {
        for route in ["/api/sessions", "/api/sessions/victim/commits"] {
            let (st, v) = send("GET", &format!("{route}?{q}"), b"");
            t.check("sizes", &format!("{route}?{q}"), st, &v);
        }
    }
    // Paths for projects and working directories (safe ones: the system
    // folders are tried by an unprivileged server in security.rs).
    let state = s.state_dir.display().to_string();
    let inside_state = s.state_dir.join("sessions").display().to_string();
    let missing = scratch.path().join("missing/deeper").display().to_string();
    let long = format!("/{}", "a".repeat(5000));
    let paths: Vec<Value> = vec![
        json!(""),
        json!("relative/dir"),
        json!(missing),
        json!(file),
        json!("/tmp/\u{0}x"),
        json!(long),
        json!(looped),
        json!(state),
        json!(inside_state),
        json!(1),
        json!(null),
        json!(project.join(".openprogram")),
    ];
    for path in &paths {
        let body = json!({"path": path}).to_string();
        let (st, v) = send("POST", "/api/projects", body.as_bytes());
        t.check("paths", &format!("project {path}"), st, &v);
        let (st, v) = send("POST", "/api/sessions/victim/working_dirs", body.as_bytes());
        t.check("paths", &format!("workdir {path}"), st, &v);
        let (st, v) = send("POST", "/api/projects/nope/relocate", body.as_bytes());
        t.check("paths", &format!("relocate {path}"), st, &v);
    }
    // Bundles: garbage, truncations of a real one, bad headers.
    let (_, _, good) = s.get_bytes("/api/sessions/victim/export");
    let mut bundles: Vec<(String, Vec<u8>)> = vec![
        ("empty".into(), Vec::new()),
        ("garbage".into(), b"not a bundle at all".to_vec()),
        ("v3".into(), b"# v3 git bundle\n\n".to_vec()),
        (
            "prereq".into(),
            b"# v2 git bundle\n-0000000000000000000000000000000000000000\n\nPACK".to_vec(),
        ),
        (
            "no refs".into(),
            b"# v2 git bundle\n\nPACK\0\0\0\x02\0\0\0\0".to_vec(),
        ),
        (
            "bad sha".into(),
            b"# v2 git bundle\nzzzz refs/heads/main\n\nPACK".to_vec(),
        ),
        (
            "bad ref".into(),
            b"# v2 git bundle\n0123456789012345678901234567890123456789 refs/tags/../x\n\nPACK"
                .to_vec(),
        ),
        ("nul ref".into(), bundle_with(meta_blob, "refs/heads/a\0b")),
        (
            "ctl ref".into(),
            bundle_with(meta_blob, "refs/heads/a\u{1b}b"),
        ),
    ];
    for cut in [
        10,
        40,
        80,
        good.len() / 3,
        good.len() / 2,
        good.len() - 30,
        good.len() - 1,
    ] {
        bundles.push((
            format!("cut at {cut}"),
            good.get(..cut).unwrap_or_default().to_vec(),
        ));
    }
    let mut flipped = good.clone();
    if let Some(b) = flipped.get_mut(good.len() / 2) {
        *b ^= 0x55;
    }
    bundles.push(("flipped".into(), flipped));
    for (name, bytes) in &bundles {
        let head = format!("POST /api/sessions/import HTTP/1.1\r\nHost: {{addr}}\r\nContent-Type: application/x-git-bundle\r\nContent-Length: {}", bytes.len());
        let (st, v) = s.raw_http(&head, bytes);
        t.check("bundles", name, st, &v);
    }
    // Headers: Host, Origin, Content-Type, Content-Length.
    for host in [
        "evil.example",
        "127.0.0.1.nip.io",
        "localhost.",
        "[::2]",
        "0.0.0.0",
        "::1",
        "",
        "a b",
        "localhost:0x50",
    ] {
        let (st, v) = s.raw_http(&format!("GET /api/sessions HTTP/1.1\r\nHost: {host}"), b"");
        t.check("headers", &format!("Host {host:?}"), st, &v);
    }
    for origin in [
        "http://evil.example",
        "null",
        "https://127.0.0.1.evil.example",
        "file://",
        "http://localhost:1",
        "chrome-extension://abc",
    ] {
        let (st, v) = s.raw_http(
            &format!("DELETE /api/sessions/victim HTTP/1.1\r\nHost: {{addr}}\r\nOrigin: {origin}"),
            b"",
        );
        t.check("headers", &format!("Origin {origin}"), st, &v);
    }
    for ct in [
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/jsonx",
        "application/xml",
        "application/x-git-bundle",
    ] {
        let (st, v) = s.raw_http(
            &format!("POST /api/sessions/victim/messages HTTP/1.1\r\nHost: {{addr}}\r\nContent-Type: {ct}\r\nContent-Length: {}", msg.len()),
            msg,
        );
        t.check("headers", &format!("Content-Type {ct}"), st, &v);
    }
    for ct in ["application/json", "text/plain"] {
        let (st, v) = s.raw_http(&format!("POST /api/sessions/import HTTP/1.1\r\nHost: {{addr}}\r\nContent-Type: {ct}\r\nContent-Length: 2"), b"{}");
        t.check("headers", &format!("import as {ct}"), st, &v);
    }
    let (st, v) = s.raw_http(
        "POST /api/sessions/victim/messages HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 29",
        msg,
    );
    t.check("headers", "no Content-Type", st, &v);
    // Unknown routes and methods.
    for (method, route) in [
        ("GET", "/api/nope"),
        ("PUT", "/api/sessions"),
        ("GET", "/etc/passwd"),
        ("POST", "/api/sessions/victim/messages/x/y"),
    ] {
        let (st, v) = send(method, route, b"");
        t.check("routes", &format!("{method} {route}"), st, &v);
    }
    // WebSocket frames: each gets an action_error, or a reply frame with
    // `ok: false` (the original's project and working-directory replies),
    // with a code and an error text; the connection stays up.
    let mut c = WsClient::connect(&s);
    let frames: Vec<String> = vec![
        "{".into(),
        "[]".into(),
        "null".into(),
        "42".into(),
        r#"{"no_action":1}"#.into(),
        r#"{"action":7}"#.into(),
        r#"{"action":"fly"}"#.into(),
        r#"{"action":"delete_session"}"#.into(),
        r#"{"action":"delete_session","session_id":"../x"}"#.into(),
        r#"{"action":"delete_session","session_id":"index.json"}"#.into(),
        r#"{"action":"rename_session","session_id":5}"#.into(),
        r#"{"action":"update_session_flags","session_id":"victim"}"#.into(),
        r#"{"action":"update_session_flags","session_id":"victim","pinned":"yes"}"#.into(),
        r#"{"action":"git_checkout","session_id":"victim","turn":"one"}"#.into(),
        r#"{"action":"git_checkout","session_id":"victim","commit":"zzzzzzz"}"#.into(),
        r#"{"action":"git_switch","session_id":"victim","branch":"nope"}"#.into(),
        r#"{"action":"git_session_log","session_id":"victim","limit":0}"#.into(),
        r#"{"action":"create_project","path":"relative"}"#.into(),
        r#"{"action":"create_project","path":""}"#.into(),
        r#"{"action":"set_session_project","session_id":"victim","project_id":"nope"}"#.into(),
        r#"{"action":"relocate_project","project_id":"nope","path":"/tmp"}"#.into(),
        r#"{"action":"chat","session_id":".x","content":"hi"}"#.into(),
        r#"{"action":"chat","session_id":"victim2","message_id":"a/b","content":"hi"}"#.into(),
        format!(
            r#"{{"action":"chat","session_id":"{}","content":"x"}}"#,
            "中".repeat(67)
        ),
        format!("{}{}", "[".repeat(3000), "]".repeat(3000)),
    ];
    for f in &frames {
        c.send_raw(f);
        let e = c.next_where(|v| v["type"] == "action_error" || v["data"]["ok"] == false);
        t.cases += 1;
        *t.by_category.entry("ws frames").or_default() += 1;
        let data = &e["data"];
        let fine = data["error"].as_str().is_some_and(|m| !m.is_empty())
            && data["code"].as_str() != Some("storage_error")
            && data["code"].as_str() != Some("handler_error");
        if !fine {
            t.failures.push(format!("[ws frames] {f}: {e}"));
        }
    }
    c.send(json!({"action": "list_sessions"}));
    c.expect("sessions_list", |_| true);

    let summary: Vec<String> = t
        .by_category
        .iter()
        .map(|(k, n)| format!("{k}: {n}"))
        .collect();
    println!("hostile cases: {} ({})", t.cases, summary.join(", "));
    assert!(
        t.failures.is_empty(),
        "{} of {} cases failed:\n{}",
        t.failures.len(),
        t.cases,
        t.failures.join("\n")
    );
    assert!(t.cases >= 300, "only {} cases", t.cases);
    // Nothing written outside the state directory and the project.
    let mut after = BTreeSet::new();
    listing(scratch.path(), &mut after);
    let new: Vec<&PathBuf> = after
        .difference(&before)
        .filter(|p| !p.starts_with(&project))
        .collect();
    assert!(new.is_empty(), "written outside: {new:?}");
    assert_eq!(
        system_listing(),
        sys_before,
        "nothing written in system folders"
    );
    // Healthy: a whole turn still works, the victim is intact.
    let (st, _) = s.get("/api/health");
    assert_eq!(st, 200);
    s.turn("after", "still there?", "yes", &[]);
    let (_, m) = s.get("/api/sessions/victim/messages");
    assert_eq!(m["messages"].as_array().map(Vec::len), Some(2));
}

/// Deep nesting on every parser: search queries (HTTP and WebSocket), JSON
/// bodies and WebSocket frames. Each is refused with a 4xx (or an
/// `action_error`) and the process lives on.
#[test]
fn deep_nesting_never_brings_the_server_down() {
    let s = TestServer::start();
    s.turn("deep", "some words to find", "more words", &[]);
    let mut tally = Tally {
        cases: 0,
        by_category: Default::default(),
        failures: Vec::new(),
    };
    let queries = [
        "(".repeat(1000) + "a",
        format!("{}a{}", "(".repeat(1000), ")".repeat(1000)),
        "NOT ".repeat(5000) + "a",
        "-".repeat(5000) + "a",
        "+".repeat(5000) + "a",
        format!("{}a{}", "NOT (".repeat(500), ")".repeat(500)),
        "a ".repeat(5000),
    ];
    for q in &queries {
        let (status, body) = s.get(&format!("/api/search?q={}", enc(q)));
        tally.check(
            "nesting",
            &format!("search {}…", q.chars().take(20).collect::<String>()),
            status,
            &body,
        );
        assert_eq!(body["code"], "bad_query", "{body}");
    }
    // JSON far deeper than serde's limit, as a message's content.
    let deep_json = format!("{}1{}", "[".repeat(100_000), "]".repeat(100_000));
    let body = format!(r#"{{"role":"user","content":{deep_json}}}"#);
    let (status, v) = s.post_raw(
        "/api/sessions/deep/messages",
        "application/json",
        body.as_bytes(),
    );
    tally.check("nesting", "deep JSON body", status, &v);
    let (status, v) = s.post_raw("/api/sessions", "application/json", deep_json.as_bytes());
    tally.check("nesting", "deep JSON session", status, &v);
    // The same over the WebSocket.
    let mut ws = WsClient::connect(&s);
    for q in &queries[..3] {
        ws.send(json!({"action": "search_sessions", "q": q, "request_id": "deep"}));
        let reply = ws.expect("action_error", |f| {
            f["data"]["request_id"] == "deep" || f["request_id"] == "deep"
        });
        assert_eq!(reply["data"]["code"], "bad_query", "{reply}");
    }
    ws.send_raw(&format!(r#"{{"action":"list_sessions","x":{deep_json}}}"#));
    ws.send(json!({"action": "list_sessions"}));
    ws.expect("sessions_list", |_| true);
    assert!(tally.failures.is_empty(), "{:#?}", tally.failures);
    let (status, _) = s.get("/api/health");
    assert_eq!(status, 200, "the server survived");
    let (status, found) = s.get("/api/search?q=words");
    assert_eq!(status, 200, "{found}");
}

/// Property test of the WebSocket frame decoder and action table through a
/// real connection: random frames (every action name, random keys and
/// values of every JSON type, some nested deep, some not JSON at all) never
/// close the connection or bring the server down, and each is followed by
/// a probe that is answered.
#[test]
fn random_websocket_frames_never_break_the_connection() {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};
    let s = TestServer::start();
    s.turn("fz", "a turn to act on", "a reply", &[]);
    let actions = [
        "list_sessions",
        "update_session_flags",
        "rename_session",
        "delete_session",
        "mark_session_read",
        "get_run_state",
        "add_session_workdir",
        "remove_session_workdir",
        "list_session_workdirs",
        "git_session_log",
        "git_history",
        "git_branches",
        "git_checkout",
        "git_session_checkout",
        "git_switch",
        "rewind_list",
        "rewind",
        "list_projects",
        "create_project",
        "add_session_to_project",
        "relocate_project",
        "list_project_sessions",
        "remove_project",
        "chat",
        "search_sessions",
        "load_session",
        "nope",
        "",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        "[ -~]{0,24}".prop_map(Value::from),
        Just(json!("fz")),
        Just(json!("../../etc")),
    ];
    let value = leaf.prop_recursive(6, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
            prop::collection::btree_map("[a-z_]{1,12}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    });
    let keys = prop::sample::select(vec![
        "session_id",
        "title",
        "pinned",
        "archived",
        "group",
        "path",
        "project_id",
        "text",
        "q",
        "commit",
        "turn",
        "step",
        "branch",
        "node_id",
        "target_msg_id",
        "limit",
        "offset",
    ]);
    let frame = (
        prop::sample::select(actions.to_vec()),
        prop::collection::vec((keys, value), 0..5),
        0u8..10,
    );
    let ws = std::cell::RefCell::new(WsClient::connect(&s));
    let mut runner = TestRunner::new(Config {
        cases: 300,
        ..Config::default()
    });
    let n = std::cell::Cell::new(0u64);
    runner
        .run(&frame, |(action, fields, shape)| {
            n.set(n.get() + 1);
            let mut ws = ws.borrow_mut();
            let mut obj = serde_json::Map::new();
            obj.insert("action".into(), json!(action));
            for (k, v) in fields {
                obj.insert(k.to_string(), v);
            }
            let text = match shape {
                0 => format!("{}{{\"action\":\"{action}\"", "[".repeat(3000)),
                1 => Value::Object(obj).to_string().chars().rev().collect(),
                _ => Value::Object(obj).to_string(),
            };
            ws.send_raw(&text);
            let probe = format!("probe-{}", n.get());
            ws.send(json!({"action": "list_projects", "session_id": null, "request_id": probe}));
            let reply = ws.next_where(|f| f["request_id"] == probe.as_str());
            prop_assert_eq!(&reply["type"], "projects_list", "after {}", text);
            Ok(())
        })
        .unwrap();
    let (status, _) = s.get("/api/health");
    assert_eq!(status, 200);
}
