//! The session store of agent SDKs (`/api/session-store/*`): transcript
//! entries stored as a session's nodes (loaded back exactly, a uuid stored
//! once, a commit per turn), listing, sub-agent keys, deletion, bad input;
//! and the adapters in `clients/` judged by the Claude Agent SDK's own
//! code (its conformance suite, its import and its readers) when the SDK
//! is installed.

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

use crate::helpers::{git, turn_commits, TestServer};

const SID: &str = "5f0c2a1e-7b7d-4c1a-9d7e-0123456789ab";

fn entry(kind: &str, uuid: &str, parent: Option<&str>, more: Value) -> Value {
    let mut v = json!({
        "type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": SID,
        "timestamp": "2026-01-05T10:00:00.000Z", "cwd": "/home/u/app",
        "isSidechain": false, "userType": "external", "version": "2.1.0",
    });
    v.as_object_mut()
        .unwrap()
        .extend(more.as_object().unwrap().clone());
    v
}

fn prompt(uuid: &str, parent: Option<&str>, text: &str) -> Value {
    entry(
        "user",
        uuid,
        parent,
        json!({"message": {"role": "user", "content": text}}),
    )
}

fn answer(uuid: &str, parent: &str, blocks: Value, stop: Option<&str>) -> Value {
    entry(
        "assistant",
        uuid,
        Some(parent),
        json!({"message": {"id": format!("msg_{uuid}"), "role": "assistant", "model": "claude-sonnet-4-5",
        "content": blocks, "stop_reason": stop, "usage": {"input_tokens": 12, "output_tokens": 3.5e0}}}),
    )
}

/// Turn 1 as the SDK's batched mirror sends it: a title line, the prompt,
/// a tool call, its result, the final answer.
fn turn_one() -> Vec<Value> {
    vec![
        json!({"type": "custom-title", "customTitle": "Flaky build", "sessionId": SID}),
        prompt("p1", None, "Why does the build fail?"),
        answer(
            "r1a",
            "p1",
            json!([{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "cargo build"}}]),
            Some("tool_use"),
        ),
        entry(
            "user",
            "t1",
            Some("r1a"),
            json!({"message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "error[E0425]"}]}}),
        ),
        answer(
            "r1b",
            "t1",
            json!([{"type": "text", "text": "A missing variable `x`; the float 0.1 stays 0.1."}]),
            Some("end_turn"),
        ),
    ]
}

fn key(project: &str, session: &str, subpath: Option<&str>) -> Value {
    match subpath {
        Some(s) => json!({"project_key": project, "session_id": session, "subpath": s}),
        None => json!({"project_key": project, "session_id": session}),
    }
}

#[test]
fn transcripts_are_sessions_loaded_back_exactly_with_a_commit_per_turn() {
    let s = TestServer::start();
    let k = key("-home-u-app", SID, None);
    let (st, v) = s.post(
        "/api/session-store/append",
        json!({"key": k, "entries": turn_one()}),
    );
    assert_eq!(st, 200, "{v}");
    assert_eq!(
        (
            v["appended"].as_u64(),
            v["commits"].as_array().map(Vec::len)
        ),
        (Some(5), Some(1))
    );
    let id = v["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("sdk-"), "{id}");
    // Turn 2 the way the eager mirror sends it: one entry per append.
    for e in [
        prompt("p2", Some("r1b"), "Declare it"),
        answer("r2", "p2", json!([{"type": "text", "text": "Done."}]), None),
        answer(
            "r2b",
            "r2",
            json!([{"type": "text", "text": "Built."}]),
            Some("end_turn"),
        ),
    ] {
        let (st, v) = s.post(
            "/api/session-store/append",
            json!({"key": k, "entries": [e]}),
        );
        assert_eq!(st, 200, "{v}");
    }
    let dir = s.session_dir(&id);
    assert_eq!(turn_commits(&dir, "HEAD"), "2");
    git(&dir, &["fsck", "--strict", "--no-progress"]);
    // Loaded back deep-equal, in order.
    let (_, loaded) = s.post("/api/session-store/load", json!({"key": k}));
    let mut expected = turn_one();
    expected.push(prompt("p2", Some("r1b"), "Declare it"));
    expected.push(answer(
        "r2",
        "p2",
        json!([{"type": "text", "text": "Done."}]),
        None,
    ));
    expected.push(answer(
        "r2b",
        "r2",
        json!([{"type": "text", "text": "Built."}]),
        Some("end_turn"),
    ));
    assert_eq!(loaded["entries"], json!(expected));
    // A retried batch: entries with a uuid are not stored twice; the one
    // without is (the SDK's contract).
    let (_, again) = s.post(
        "/api/session-store/append",
        json!({"key": k, "entries": turn_one()}),
    );
    assert_eq!(
        (again["appended"].as_u64(), again["duplicates"].as_u64()),
        (Some(1), Some(4)),
        "{again}"
    );
    // A session like any other: listed, its messages readable.
    let (_, meta) = s.get(&format!("/api/sessions/{id}"));
    assert_eq!(
        (
            meta["source"].as_str(),
            meta["group"].as_str(),
            meta["peer_id"].as_str()
        ),
        (Some("claude-agent-sdk"), Some("-home-u-app"), Some(SID))
    );
    let (_, msgs) = s.get(&format!("/api/sessions/{id}/messages"));
    let text = msgs.to_string();
    assert!(
        text.contains("Why does the build fail?") && text.contains("Built."),
        "{msgs}"
    );
    // Listed under its project key, with sub-agent transcripts apart.
    let sub = key("-home-u-app", SID, Some("subagents/agent-a1"));
    let (st, _) = s.post(
        "/api/session-store/append",
        json!({"key": sub, "entries": [prompt("s1", None, "Look at lib.rs")]}),
    );
    assert_eq!(st, 200);
    let (_, listed) = s.get("/api/session-store/sessions?project_key=-home-u-app");
    let sessions = listed["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{listed}");
    assert_eq!(sessions[0]["session_id"], SID);
    assert!(sessions[0]["mtime"].as_f64().unwrap() > 1e12);
    let (_, subs) = s.get(&format!(
        "/api/session-store/subkeys?project_key=-home-u-app&session_id={SID}"
    ));
    assert_eq!(subs["subkeys"], json!(["subagents/agent-a1"]));
    // Deleting the main transcript takes the sub-agent's with it.
    let (st, _) = s.post("/api/session-store/delete", json!({"key": k}));
    assert_eq!(st, 200);
    for gone in [&k, &sub] {
        let (_, l) = s.post("/api/session-store/load", json!({"key": gone}));
        assert!(l["entries"].is_null(), "{l}");
    }
    let (_, listed) = s.get("/api/session-store/sessions?project_key=-home-u-app");
    assert_eq!(listed["sessions"], json!([]));
}

#[test]
fn bad_appends_are_refused_and_store_nothing() {
    let s = TestServer::start();
    let k = key("p", "s", None);
    for body in [
        json!({"entries": []}),
        json!({"key": {"project_key": "", "session_id": "s"}, "entries": [{"type": "x"}]}),
        json!({"key": {"project_key": "p", "session_id": "s", "subpath": ""}, "entries": [{"type": "x"}]}),
        json!({"key": k, "entries": [{"type": "x"}, {"no_type": 1}]}),
        json!({"key": k, "entries": [{"type": "x"}, "a string"]}),
        json!({"key": k, "entries": "not a list"}),
    ] {
        let (st, v) = s.post("/api/session-store/append", body.clone());
        assert_eq!(st, 400, "{body}: {v}");
        assert!(v["code"].is_string(), "{v}");
    }
    let (_, l) = s.post("/api/session-store/load", json!({"key": k}));
    assert!(l["entries"].is_null(), "nothing stored: {l}");
    let (st, _) = s.get("/api/session-store/sessions");
    assert_eq!(st, 400);
}

/// Run a client test program with the server's address; `None` when the
/// tool it needs is not installed (and not required).
fn run_client(s: &TestServer, program: &str, args: &[&str], cwd: &Path) -> Option<String> {
    let out = Command::new(program)
        .args(args)
        .current_dir(cwd)
        .env("OPENPROGRAM_URL", &s.url)
        .output();
    let out = match out {
        Ok(o) => o,
        Err(e) => {
            assert!(
                std::env::var("OPENPROGRAM_SDK_REQUIRED").is_err(),
                "{program}: {e}"
            );
            return None;
        }
    };
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{program} {args:?} failed:\n{text}");
    Some(text)
}

fn repo_root() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The Python adapter against the Claude Agent SDK's own conformance suite,
/// import and readers (`clients/python/tests/run_sdk.py`).
#[test]
fn the_python_adapter_passes_the_sdk_conformance_suite() {
    let Some(python) = crate::helpers::sdk_python() else {
        return;
    };
    let s = TestServer::start();
    let root = repo_root();
    let out =
        run_client(&s, &python, &["clients/python/tests/run_sdk.py"], &root).unwrap_or_default();
    assert!(out.contains("conformance: ok"), "{out}");
    assert!(out.contains("import and read back: ok"), "{out}");
    assert!(out.contains("client: ok"), "{out}");
}

/// The TypeScript adapter, type-checked against the SDK's `SessionStore`
/// and run against the server (`clients/typescript/test/store.test.mjs`).
#[test]
fn the_typescript_adapter_type_checks_and_round_trips() {
    let root = repo_root().join("clients/typescript");
    if !root
        .join("node_modules/@anthropic-ai/claude-agent-sdk")
        .exists()
    {
        assert!(
            std::env::var("OPENPROGRAM_SDK_REQUIRED").is_err(),
            "run npm install --prefix clients/typescript"
        );
        eprintln!("skipped: clients/typescript/node_modules is not installed");
        return;
    }
    let s = TestServer::start();
    run_client(&s, "npx", &["tsc", "-p", "."], &root);
    let out = run_client(&s, "node", &["test/store.test.mjs"], &root).unwrap_or_default();
    assert!(out.contains("typescript session store: ok"), "{out}");
}
