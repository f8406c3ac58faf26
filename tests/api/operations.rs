//! What an operator relies on: /metrics, request logs and ids, the OpenAPI
//! document, a prompt shutdown with WebSocket clients, fsck, gc, status.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::helpers::{git, turn_commits, TestServer};
use crate::ws::WsClient;

/// The value of a metric line `name{labels} value` (labels as written).
fn metric(text: &str, name_and_labels: &str) -> Option<f64> {
    text.lines().filter(|l| !l.starts_with('#')).find_map(|l| {
        let (k, v) = l.rsplit_once(' ')?;
        (k == name_and_labels).then(|| v.parse().ok())?
    })
}

fn scrape(s: &TestServer) -> String {
    let (st, ctype, body) = s.get_bytes("/metrics");
    assert_eq!(st, 200);
    assert!(ctype.starts_with("text/plain"), "{ctype}");
    String::from_utf8(body).unwrap()
}

#[test]
fn metrics_move_with_a_turn_and_are_guarded() {
    let s = TestServer::start_process();
    s.turn("m1", "first", "answer", &[]);
    let before = scrape(&s);
    let turns0 = metric(&before, "openprogram_turns_total").expect("turns counter");
    let appends0 = metric(&before, "openprogram_appends_total").unwrap();
    s.turn("m2", "second", "answer", &["grep"]);
    let after = scrape(&s);
    assert_eq!(
        metric(&after, "openprogram_turns_total"),
        Some(turns0 + 1.0)
    );
    assert_eq!(
        metric(&after, "openprogram_appends_total"),
        Some(appends0 + 3.0),
        "user, assistant and tool"
    );
    assert!(metric(&after, "openprogram_commit_duration_seconds_count").unwrap() >= 2.0);
    assert!(metric(&after, "openprogram_fsyncs_total").unwrap() > 0.0);
    assert_eq!(
        metric(&after, r#"openprogram_sessions{status="idle"}"#),
        Some(2.0)
    );
    assert!(
        metric(
            &after,
            r#"openprogram_http_requests_total{method="POST",route="/api/sessions/{id}/turns",status="201"}"#
        )
        .unwrap()
            >= 2.0,
        "{after}"
    );
    assert!(after.contains("openprogram_http_request_duration_seconds_bucket"));
    assert!(after.contains(&format!(
        r#"openprogram_build_info{{version="{}"}} 1"#,
        env!("CARGO_PKG_VERSION")
    )));
    // Errors are counted by code.
    s.get("/api/sessions/nope");
    let errs = scrape(&s);
    assert!(metric(&errs, r#"openprogram_errors_total{code="unknown_session"}"#).unwrap() >= 1.0);
    // Behind the perimeter like the rest of the API.
    let (st, _) = s.raw_http(
        "GET /metrics HTTP/1.1\r\nHost: evil.example\r\nConnection: close",
        b"",
    );
    assert_eq!(st, 403);
}

#[test]
fn request_ids_are_kept_or_made_echoed_and_logged_with_the_route() {
    let s = TestServer::start_process();
    s.turn("r1", "x", "y", &[]);
    let resp = ureq::get(&format!("{}/api/sessions/r1", s.url))
        .set("X-Request-Id", "trace-42")
        .call()
        .unwrap();
    assert_eq!(resp.header("x-request-id"), Some("trace-42"));
    let resp = ureq::get(&format!("{}/api/health", s.url)).call().unwrap();
    let made = resp.header("x-request-id").unwrap().to_string();
    assert_eq!(made.len(), 32, "{made}");
    // An error answer carries one too.
    let err = match ureq::get(&format!("{}/api/sessions/nope", s.url)).call() {
        Err(ureq::Error::Status(404, r)) => r,
        other => panic!("{other:?}"),
    };
    assert!(err.header("x-request-id").is_some());
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let log = s.log();
        let line = log
            .lines()
            .find(|l| l.contains("trace-42") && l.contains("/api/sessions/{id}"));
        if let Some(line) = line {
            assert!(line.contains("status=200"), "{line}");
            assert!(line.contains("session_id=r1"), "{line}");
            assert!(line.contains("duration_ms"), "{line}");
            assert!(
                !line.contains('\u{1b}'),
                "no colour codes in a log file: {line}"
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no request line in the log:\n{log}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn json_logs_are_one_object_per_line() {
    let s = TestServer::start_with_env(&[("OPENPROGRAM_LOGGING_FORMAT", "json")]);
    s.get("/api/health");
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let log = s.log();
        let lines: Vec<Value> = log
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
            .collect();
        if let Some(req) = lines.iter().find(|v| v["route"] == "/api/health") {
            assert_eq!(req["status"], 200);
            assert!(req["span"]["request_id"].is_string(), "{req}");
            break;
        }
        assert!(Instant::now() < deadline, "no request line:\n{log}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Every `.route("<path>", web::<method>()` in `src/routes/mod.rs`, with
/// its scope's path: `/api` in `configure`, and the path of each
/// `web::scope("<path>").configure(<function>)` for that function's routes.
fn registered_routes() -> BTreeSet<(String, String)> {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/src/routes/mod.rs")).unwrap();
    let flat: String = text.split_whitespace().collect();
    let mut prefixes =
        std::collections::BTreeMap::from([("configure".to_string(), "/api".to_string())]);
    for part in flat.split("web::scope(\"").skip(1) {
        let (path, rest) = part.split_once('"').unwrap();
        if let Some(f) = rest.strip_prefix(").configure(") {
            let (function, _) = f.split_once(')').unwrap();
            prefixes.insert(function.to_string(), format!("/api{path}"));
        }
    }
    let mut out = BTreeSet::new();
    for (name, prefix) in &prefixes {
        // The function's body: from its signature to the `}` that ends it
        // at the start of a line.
        let start = text
            .find(&format!("fn {name}("))
            .unwrap_or_else(|| panic!("no fn {name} in src/routes/mod.rs"));
        let rest = text.get(start..).unwrap();
        let end = rest.find("\n}\n").unwrap_or(rest.len());
        let body: String = rest.get(..end).unwrap().split_whitespace().collect();
        for part in body.split(".route(").skip(1) {
            let Some(rest) = part.strip_prefix('"') else {
                continue;
            };
            let (path, rest) = rest.split_once('"').unwrap();
            let method = rest
                .strip_prefix(",web::")
                .and_then(|r| r.split_once('('))
                .map(|(m, _)| m.to_string())
                .unwrap();
            out.insert((format!("{prefix}{path}"), method));
        }
    }
    out
}

#[test]
fn the_openapi_document_has_every_route_with_its_error_codes() {
    let s = TestServer::start_process();
    let (st, doc) = s.get("/api/openapi.json");
    assert_eq!(st, 200);
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    let routes = registered_routes();
    assert!(routes.len() >= 30, "{routes:?}");
    for (path, method) in &routes {
        let op = &doc["paths"][path][method];
        assert!(op.is_object(), "{method} {path} is not in the document");
        let responses = op["responses"].as_object().unwrap();
        assert!(
            responses.keys().any(|k| k.starts_with('2')),
            "{method} {path}: no success response"
        );
        for (status, r) in responses {
            if status.starts_with('4') || status.starts_with('5') {
                let desc = r["description"].as_str().unwrap_or("");
                assert!(
                    !desc.is_empty() && desc.chars().all(|c| c.is_ascii_lowercase() || c == '_' || c == ',' || c == ' '),
                    "{method} {path} {status}: the description should list error codes, not {desc:?}"
                );
                let schema = &r["content"]["application/json"]["schema"]["$ref"];
                assert_eq!(
                    schema, "#/components/schemas/ErrorBody",
                    "{method} {path} {status}"
                );
            }
        }
    }
    // Routes that name a session document its 404.
    for (path, method) in routes
        .iter()
        .filter(|(p, _)| p.starts_with("/api/sessions/{id}"))
    {
        let desc = doc["paths"][path][method]["responses"]["404"]["description"]
            .as_str()
            .unwrap_or("");
        assert!(desc.contains("unknown_session"), "{method} {path}");
    }
    assert!(doc["paths"]["/metrics"]["get"].is_object());
    assert!(doc["components"]["schemas"]["ErrorBody"].is_object());
}

#[test]
fn sigterm_with_a_websocket_client_exits_promptly_and_keeps_the_last_append() {
    // The default shutdown timeout (30 s) applies; an open WebSocket used
    // to hold the exit for all of it.
    let mut s = TestServer::start_process();
    s.turn("sd", "first", "answer", &[]);
    let mut c = WsClient::connect(&s);
    c.send(json!({"action": "list_sessions"}));
    c.expect("sessions_list", |_| true);
    // An append (its index.json write is debounced by 5 s).
    s.append(
        "sd",
        json!({"role": "user", "content": "the very last words"}),
    );
    let started = Instant::now();
    let code = s.terminate();
    let took = started.elapsed();
    assert_eq!(code, Some(0));
    assert!(
        took < Duration::from_secs(10),
        "shutdown took {took:?} with a WebSocket client connected"
    );
    assert!(
        c.closed_within(Duration::from_secs(2)),
        "the client got a close frame"
    );
    let index: Value =
        serde_json::from_slice(&std::fs::read(s.state_dir.join("sessions/index.json")).unwrap())
            .unwrap();
    let row = index["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "sd")
        .unwrap()
        .clone();
    assert_eq!(row["preview"], "the very last words");
    assert!(!s.state_dir.join("server.json").exists());
    eprintln!("shutdown with a WebSocket client: {took:?}");
}

#[test]
fn fsck_finds_injected_corruption_and_repair_fixes_what_it_can() {
    let mut s = TestServer::start_process();
    s.turn("good", "fine", "fine", &[]);
    s.turn("lost", "one", "1", &[]);
    s.turn("lost", "two", "2", &[]);
    s.turn("gone", "x", "y", &[]);
    s.turn("broken", "x", "y", &[]);
    // Under a running server: a check is fine, a repair is refused.
    let (code, out, _) = s.cli(&["fsck"], None);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("no problems found"), "{out}");
    let (code, _, err) = s.cli(&["fsck", "--repair"], None);
    assert_eq!(code, 2);
    assert!(err.contains("a server is running"), "{err}");
    s.terminate();
    // An ended turn without a commit: the branch loses its last commit.
    let lost = s.session_dir("lost");
    git(&lost, &["update-ref", "refs/heads/main", "HEAD~1"]);
    // An index row without a directory.
    std::fs::remove_dir_all(s.session_dir("gone")).unwrap();
    // A deleted object: the packs of "broken" go away.
    let packs = s.session_dir("broken").join(".git/objects/pack");
    for e in std::fs::read_dir(&packs).unwrap().flatten() {
        std::fs::remove_file(e.path()).unwrap();
    }
    let (code, out, _) = s.cli(&["fsck"], None);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("session lost: turn 2 ended but has no commit"),
        "{out}"
    );
    assert!(
        out.contains("session gone: index.json lists it but its directory is missing"),
        "{out}"
    );
    assert!(
        out.contains("session broken:") && out.contains("missing"),
        "{out}"
    );
    assert!(!out.contains("session good:"), "{out}");
    let (code, out, _) = s.cli(&["fsck", "--repair"], None);
    // The missing objects cannot be repaired here: still exit 1.
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("repaired:"), "{out}");
    assert_eq!(turn_commits(&lost, "HEAD"), "2", "turn 2 committed again");
    let (_, out, _) = s.cli(&["fsck"], None);
    assert!(!out.contains("session lost:"), "{out}");
    assert!(!out.contains("session gone:"), "{out}");
    assert!(out.contains("session broken:"), "{out}");
    assert!(
        s.session_dir("broken").join("meta.json").is_file(),
        "nothing deleted"
    );
}

#[test]
fn gc_status_and_completions() {
    let mut s = TestServer::start_process();
    for i in 0..12 {
        s.turn("big", &format!("question {i}"), &format!("answer {i}"), &[]);
    }
    let (code, out, _) = s.cli(&["status"], None);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(&s.url) && out.contains("uptime") && out.contains("sessions  1"),
        "{out}"
    );
    // The same refusal is the same exit code for every command: 2.
    for cmd in ["gc", "migrate"] {
        let (code, _, err) = s.cli(&[cmd], None);
        assert_eq!(code, 2, "{cmd} refuses a running server: {err}");
        assert!(err.contains("a server is running"), "{cmd}: {err}");
    }
    s.kill();
    // A crash left server.json behind: still "no server running".
    assert!(s.state_dir.join("server.json").exists());
    let (code, out, _) = s.cli(&["status"], None);
    assert_eq!(code, 1);
    assert!(out.contains("no server running"), "{out}");
    let dir = s.session_dir("big");
    let packs_before = std::fs::read_dir(dir.join(".git/objects/pack"))
        .unwrap()
        .count();
    let (code, out, _) = s.cli(&["gc", "--session", "big"], None);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("big:") && out.contains("MiB"), "{out}");
    let packs_after = std::fs::read_dir(dir.join(".git/objects/pack"))
        .unwrap()
        .count();
    assert!(packs_after < packs_before, "{packs_before} → {packs_after}");
    git(&dir, &["fsck", "--strict"]);
    assert_eq!(turn_commits(&dir, "HEAD"), "12");
    let (code, out, _) = s.cli(&["completions", "bash"], None);
    assert_eq!(code, 0);
    assert!(
        out.contains("openprogram") && out.contains("fsck"),
        "{}",
        &out.len()
    );
}

fn pack_count(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir.join(".git/objects/pack"))
        .map(|d| {
            d.flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "idx"))
                .count()
        })
        .unwrap_or(0)
}

#[test]
fn packs_are_merged_in_the_background_once_the_session_is_idle() {
    let mut s =
        TestServer::start_with_env(&[("OPENPROGRAM_MAINTENANCE_RETIRED_PACK_GRACE_S", "3")]);
    for t in 0..40 {
        s.turn(
            "packed",
            &format!("question {t}"),
            &format!("answer {t}"),
            &[],
        );
    }
    let dir = s.session_dir("packed");
    // Once idle, the packs are merged (each turn added one); the merged
    // ones are marked retired and stay readable for the grace period, so
    // a `git fsck` run meanwhile reads every pack it listed.
    let deadline = Instant::now() + Duration::from_secs(30);
    let retired = dir.join(".git/openprogram-merged");
    let marks = || std::fs::read_dir(&retired).map_or(0, |d| d.count());
    while marks() == 0 {
        assert!(Instant::now() < deadline, "no merge after the last write");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        pack_count(&dir) > marks(),
        "retired packs stay during the grace"
    );
    git(&dir, &["fsck", "--strict"]);
    while pack_count(&dir) > 9 {
        assert!(
            Instant::now() < deadline,
            "still {} packs long after the last write",
            pack_count(&dir)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Once the grace is over the keeper removed them: nothing is left of
    // them, nor of the folder that held their marks.
    let left = marks;
    while left() > 0 {
        assert!(
            Instant::now() < deadline,
            "{} retired pack files never removed",
            left()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    while retired.exists() {
        assert!(Instant::now() < deadline, "the retired-packs folder stays");
        std::thread::sleep(Duration::from_millis(100));
    }
    // Nothing lost: git itself reads every commit and object.
    git(&dir, &["fsck", "--strict"]);
    let log = git(&dir, &["log", "--format=%s"]);
    assert_eq!(log.lines().count(), 41, "40 turns on the root: {log}");
    // And the session keeps working on the merged packs, after a restart too.
    s.turn("packed", "one more", "still here", &[]);
    s.kill();
    s.restart_after_kill();
    let (st, v) = s.get("/api/sessions/packed/messages");
    assert_eq!(st, 200, "{v}");
    let text = v.to_string();
    assert!(text.contains("question 0") && text.contains("still here"));
}

/// A reader that stops early (`… | head -1`) ends a command quietly: no
/// panic, no message, whatever the timing (the pipe here is closed before
/// the command writes anything). `--version` names the commit.
#[test]
fn a_closed_pipe_ends_a_command_quietly_and_the_version_names_the_commit() {
    use std::os::unix::process::ExitStatusExt;
    use std::process::{Command, Stdio};
    let s = TestServer::start();
    for _ in 0..20 {
        s.turn("piped", "a question", "an answer", &[]);
    }
    for args in [
        vec!["completions", "bash"],
        vec!["sessions", "show", "piped", "--url", &s.url],
        vec!["sessions", "list", "--url", &s.url],
    ] {
        let mut child = Command::new(crate::helpers::server_bin())
            .args(&args)
            .env("OPENPROGRAM_STATE_DIR", &s.state_dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.code() != Some(101) && !err.contains("panicked"),
            "{args:?}: {:?} {err}",
            out.status
        );
        assert!(
            out.status.success() || out.status.signal() == Some(libc::SIGPIPE),
            "{args:?}: {:?} {err}",
            out.status
        );
    }
    let (code, out, _) = s.cli(&["--version"], None);
    assert_eq!(code, 0);
    // A commit of this repository (HEAD when built; later commits may have
    // been made since), or `unknown` outside a checkout.
    let named = out
        .split("(commit ")
        .nth(1)
        .and_then(|r| r.split(')').next())
        .unwrap_or_default()
        .to_string();
    assert!(!named.is_empty(), "{out}");
    if named != "unknown" {
        git(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")),
            &["cat-file", "-e", &format!("{named}^{{commit}}")],
        );
    }
}
