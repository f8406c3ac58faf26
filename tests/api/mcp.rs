//! The MCP server judged by clients nobody here wrote: the official MCP
//! Python SDK (`mcp` on PyPI) and TypeScript SDK
//! (`@modelcontextprotocol/sdk` on npm), over the streamable HTTP transport
//! at `/mcp` and over stdio (`openprogram mcp`, bridged to a running
//! server, and on its own when none runs). CI installs both SDKs
//! (`OPENPROGRAM_MCP_PYTHON` names the Python interpreter; `npm install
//! --prefix tests/mcp`) and requires this test to run
//! (`OPENPROGRAM_MCP_REQUIRED=1`).

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

use crate::helpers::TestServer;

/// The interpreter with the MCP SDK, or None (and why) when there is none.
fn python() -> Option<String> {
    let py = std::env::var("OPENPROGRAM_MCP_PYTHON").unwrap_or_else(|_| "python3".into());
    let ok = Command::new(&py)
        .args(["-c", "import mcp, httpx2"])
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        return Some(py);
    }
    assert!(
        std::env::var("OPENPROGRAM_MCP_REQUIRED").is_err(),
        "the MCP Python SDK is required here: {py} cannot import mcp"
    );
    eprintln!("skipped: no MCP Python SDK for {py} (pip install mcp; OPENPROGRAM_MCP_PYTHON)");
    None
}

/// Node with the TypeScript SDK installed beside the script, or None.
fn node() -> Option<String> {
    let sdk = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp/node_modules/@modelcontextprotocol/sdk/package.json");
    let has_node = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if has_node && sdk.exists() {
        return Some("node".into());
    }
    assert!(
        std::env::var("OPENPROGRAM_MCP_REQUIRED").is_err(),
        "the MCP TypeScript SDK is required here: npm install --prefix tests/mcp"
    );
    eprintln!("skipped: no MCP TypeScript SDK (npm install --prefix tests/mcp)");
    None
}

/// Run a client script (`client.py` with Python, `client.mjs` with node).
fn client(interpreter: &str, args: &[&str]) -> Value {
    let name = if interpreter == "node" {
        "tests/mcp/client.mjs"
    } else {
        "tests/mcp/client.py"
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join(name);
    let out = Command::new(interpreter)
        .arg(script)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "client: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stdout));
    })
}

/// What every transport must answer alike.
fn check(v: &Value, sid: &str) {
    assert_eq!(v["server"], "openprogram-memory", "{v}");
    assert_eq!(
        v["tools"],
        json!([
            "search",
            "fetch",
            "sessions_search",
            "sessions_list",
            "session_get",
            "turn_get",
            "project_commits",
            "recent_activity",
            "provenance_resolve"
        ])
    );
    assert_eq!(
        (v["read_only"].as_bool(), v["schemas"].as_bool()),
        (Some(true), Some(true))
    );
    let hit = &v["sessions_search"]["data"]["hits"][0];
    assert_eq!(hit["session_id"], sid, "{v}");
    assert_eq!(
        (hit["turn"].as_u64(), hit["branch"].as_str()),
        (Some(1), Some("main"))
    );
    assert_eq!(hit["commit"].as_str().map(str::len), Some(40), "{hit}");
    assert!(hit["link"]
        .as_str()
        .unwrap()
        .ends_with(&format!("/s/{sid}/turn/1")));
    assert!(hit["snippet"].as_str().unwrap().contains("parser"), "{hit}");
    assert_eq!(v["search"]["data"]["results"][0]["id"], format!("{sid}/1"));
    assert!(
        v["fetch"]["data"]["text"]
            .as_str()
            .unwrap()
            .contains("lexer.rs"),
        "{v}"
    );
    assert_eq!(v["fetch"]["data"]["metadata"]["commit"], hit["commit"]);
    assert_eq!(v["sessions_list"]["data"]["sessions"][0]["session_id"], sid);
    let md = v["session_get"]["data"]["markdown"].as_str().unwrap();
    assert!(
        md.contains("## Turn 1") && md.contains("**tool `grep`**"),
        "{md}"
    );
    let turn = &v["turn_get"]["data"];
    assert_eq!(turn["commit"], hit["commit"]);
    let ids: Vec<&str> = turn["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["u1", "a1", "t1"]);
    assert_eq!(
        v["recent_activity"]["data"]["projects"][0]["sessions"][0]["session_id"],
        sid
    );
    for (name, verdict) in v["hostile"].as_object().unwrap() {
        let verdict = verdict.as_str().unwrap();
        assert!(
            verdict == "error" || verdict.starts_with("mcp_error"),
            "{name}: {verdict}"
        );
    }
    assert_eq!(v["after"]["error"], false, "still serving: {v}");
}

#[test]
fn the_official_python_and_typescript_sdks_search_and_read_sessions_over_http_and_stdio() {
    let Some(py) = python() else { return };
    let mut s = TestServer::start_process();
    let sid = "mcp-parser";
    let (st, v) = s.post(
        &format!("/api/sessions/{sid}/turns"),
        json!({"nodes": [
            {"id": "u1", "role": "user", "content": "Find the parser bug"},
            {"id": "a1", "role": "assistant", "content": "It is in lexer.rs."},
            {"id": "t1", "role": "tool", "name": "grep", "caller": "a1",
             "content": {"pattern": "fn lex"}, "output": "src/lexer.rs:12"}]}),
    );
    assert_eq!(st, 201, "{v}");
    let token = std::fs::read_to_string(s.state_dir.join("token")).unwrap_or_default();
    let state = s.state_dir.to_str().unwrap().to_string();
    let exe = env!("CARGO_BIN_EXE_openprogram");

    let clients: Vec<String> = [Some(py), node()].into_iter().flatten().collect();
    let url = format!("{}/mcp", s.url);
    for c in &clients {
        let http = client(c, &["http", &url, token.trim(), sid]);
        check(&http, sid);
        // stdio, bridged to the running server.
        let bridged = client(c, &["stdio", exe, &state, sid]);
        check(&bridged, sid);
    }
    // stdio with no server: the engine in the MCP process itself.
    s.terminate();
    for c in &clients {
        let alone = client(c, &["stdio", exe, &state, sid]);
        check(&alone, sid);
    }
}

/// One JSON-RPC call to `/mcp`.
fn rpc(s: &TestServer, id: u64, method: &str, params: Value) -> Value {
    let r = ureq::post(&format!("{}/mcp", s.url))
        .set("Accept", "application/json, text/event-stream")
        .set("MCP-Protocol-Version", "2025-06-18")
        .send_json(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
        .unwrap();
    r.into_json().unwrap()
}

fn tool_names(s: &TestServer) -> Vec<String> {
    rpc(s, 1, "tools/list", json!({}))["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_write_tools_exist_only_when_allowed() {
    let s = TestServer::start();
    let names = tool_names(&s);
    assert!(!names
        .iter()
        .any(|n| n.starts_with("session_n") || n == "session_fork"));
    let v = rpc(
        &s,
        2,
        "tools/call",
        json!({"name": "session_note", "arguments": {"session_id": "x", "text": "t"}}),
    );
    assert!(v["error"].is_object(), "{v}");

    let s = TestServer::start_with_env(&[("OPENPROGRAM_MCP_ALLOW_WRITES", "true")]);
    let names = tool_names(&s);
    assert_eq!(
        &names[names.len() - 3..],
        ["session_note", "session_fork", "session_update"]
    );
    s.turn("w1", "Plan the release", "Here is the plan.", &[]);
    let call = |name: &str, args: Value| -> Value {
        let v = rpc(
            &s,
            3,
            "tools/call",
            json!({"name": name, "arguments": args}),
        );
        assert_eq!(v["result"]["isError"], false, "{name}: {v}");
        v["result"]["structuredContent"].clone()
    };
    let note = call(
        "session_note",
        json!({"session_id": "w1", "text": "Remember the changelog"}),
    );
    let notes = s.nodes_named("w1", "mcp/note");
    assert_eq!(notes.len(), 1);
    assert_eq!(notes[0]["id"], note["node_id"]);
    assert_eq!(notes[0]["content"], "Remember the changelog");
    let upd = call(
        "session_update",
        json!({"session_id": "w1", "title": "Release plan", "pinned": true}),
    );
    assert_eq!(
        (upd["title"].as_str(), upd["pinned"].as_bool()),
        (Some("Release plan"), Some(true))
    );
    let (_, meta) = s.get("/api/sessions/w1");
    assert_eq!(
        (meta["title"].as_str(), meta["pinned"].as_bool()),
        (Some("Release plan"), Some(true))
    );
    let fork = call("session_fork", json!({"session_id": "w1"}));
    let fid = fork["session_id"].as_str().unwrap();
    let (st, forked) = s.get(&format!("/api/sessions/{fid}"));
    assert_eq!(
        (st, forked["turn_count"].as_u64()),
        (200, Some(1)),
        "{forked}"
    );
    call(
        "session_update",
        json!({"session_id": "w1", "archived": true}),
    );
    let (_, meta) = s.get("/api/sessions/w1");
    assert_eq!(meta["archived"], true);
    // Bad input is a tool error, and the server goes on.
    let v = rpc(
        &s,
        4,
        "tools/call",
        json!({"name": "session_update", "arguments": {"session_id": "w1"}}),
    );
    assert_eq!(v["result"]["isError"], true, "{v}");
    let v = rpc(
        &s,
        5,
        "tools/call",
        json!({"name": "session_note", "arguments": {"session_id": "nobody", "text": "x"}}),
    );
    assert_eq!(v["result"]["isError"], true, "{v}");
}

#[test]
fn a_long_session_is_read_fifty_turns_at_a_time() {
    let s = TestServer::start();
    for n in 1..=55 {
        let (st, v) = s.post(
            "/api/sessions/long/turns",
            json!({"nodes": [
                {"id": format!("u{n}"), "role": "user", "content": format!("question {n}")},
                {"id": format!("a{n}"), "role": "assistant", "content": format!("answer {n}")}]}),
        );
        assert_eq!(st, 201, "{v}");
    }
    let get = |args: Value| -> Value {
        let v = rpc(
            &s,
            9,
            "tools/call",
            json!({"name": "session_get", "arguments": args}),
        );
        assert_eq!(v["result"]["isError"], false, "{v}");
        v["result"]["structuredContent"].clone()
    };
    let first = get(json!({"session_id": "long"}));
    let turns = first["turns"].as_array().unwrap();
    assert_eq!((turns.len(), turns[49]["turn"].as_u64()), (50, Some(50)));
    assert_eq!(first["next_from_turn"], 51);
    assert_eq!(turns[0]["nodes"][1]["text"], "answer 1");
    let rest = get(json!({"session_id": "long", "from_turn": 51}));
    let turns = rest["turns"].as_array().unwrap();
    assert_eq!((turns.len(), turns[4]["turn"].as_u64()), (5, Some(55)));
    assert!(rest["next_from_turn"].is_null(), "{rest}");
    let exact = get(json!({"session_id": "long", "from_turn": 6, "to_turn": 55}));
    assert_eq!(exact["turns"].as_array().unwrap().len(), 50);
    assert!(exact["next_from_turn"].is_null(), "{exact}");
}

/// Malformed messages get the service's JSON error with its code, never
/// an empty answer.
#[test]
fn malformed_json_rpc_gets_a_json_error_with_a_code() {
    let s = TestServer::start();
    let url = format!("{}/mcp", s.url);
    let post = |ctype: &str, body: &str| {
        let r = ureq::post(&url)
            .set("content-type", ctype)
            .set("accept", "application/json, text/event-stream")
            .send_string(body);
        let r = match r {
            Ok(r) => r,
            Err(ureq::Error::Status(_, r)) => r,
            Err(e) => panic!("{e}"),
        };
        let status = r.status();
        let v: Value = r.into_json().unwrap_or(Value::Null);
        (status, v)
    };
    for body in ["{not json", "42", "\"x\""] {
        let (st, v) = post("application/json", body);
        assert_eq!(st, 400, "{body}: {v}");
        assert_eq!(v["code"], "invalid_body", "{body}: {v}");
        assert!(v["error"].as_str().is_some_and(|e| !e.is_empty()), "{v}");
    }
    let (st, v) = post(
        "text/plain",
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
    );
    assert!((400..500).contains(&st), "{st} {v}");
    assert!(v["code"].is_string(), "a code with the refusal: {v}");
}

/// A branch's turns are its whole line: a retry of turn 2 shares turn 1
/// with `main`.
#[test]
fn a_branch_is_read_with_the_turns_it_shares() {
    let s = TestServer::start();
    for n in 1..=2 {
        let (st, v) = s.post(
            "/api/sessions/b/turns",
            json!({"nodes": [
                {"id": format!("u{n}"), "role": "user", "content": format!("question {n}")},
                {"id": format!("a{n}"), "role": "assistant", "content": format!("answer {n}")}]}),
        );
        assert_eq!(st, 201, "{v}");
    }
    // Retry turn 2's answer: a branch of its own.
    s.append(
        "b",
        json!({"id": "a2b", "role": "assistant", "predecessor": "u2", "content": "answer 2 again"}),
    );
    s.end_turn("b", json!({}));
    let (_, branches) = s.get("/api/sessions/b/branches");
    let retry = branches["branches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["name"].as_str().unwrap().to_string())
        .find(|n| n != "main")
        .unwrap_or_else(|| panic!("a retry branch: {branches}"));
    let call = |name: &str, args: Value| -> Value {
        let v = rpc(
            &s,
            7,
            "tools/call",
            json!({"name": name, "arguments": args}),
        );
        assert_eq!(v["result"]["isError"], false, "{name}: {v}");
        v["result"]["structuredContent"].clone()
    };
    let got = call("session_get", json!({"session_id": "b", "branch": retry}));
    let turns: Vec<u64> = got["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["turn"].as_u64().unwrap())
        .collect();
    assert_eq!(turns, vec![1, 2], "{got}");
    let one = call(
        "turn_get",
        json!({"session_id": "b", "branch": retry, "turn": 1}),
    );
    assert_eq!(one["turn"], 1, "{one}");
    assert!(one.to_string().contains("answer 1"), "{one}");
    let two = call(
        "turn_get",
        json!({"session_id": "b", "branch": retry, "turn": 2}),
    );
    assert!(two.to_string().contains("answer 2 again"), "{two}");
}

/// Limits as docs/MCP.md says: out of range (0, 300) is a tool error with
/// a `code`, never clamped; a number sent as a string (as the MCP
/// Inspector's command line sends it) is taken; text that is no number is
/// refused.
#[test]
fn limits_out_of_range_are_tool_errors_and_numbers_as_strings_are_taken() {
    let s = TestServer::start();
    for k in 0..3 {
        s.turn(&format!("lim{k}"), "a question", "an answer", &[]);
    }
    let call = |id: u64, args: Value| -> Value {
        rpc(
            &s,
            id,
            "tools/call",
            json!({"name": "sessions_list", "arguments": args}),
        )
    };
    for (i, bad) in [json!(0), json!(300)].into_iter().enumerate() {
        let v = call(10 + i as u64, json!({"limit": bad}));
        assert_eq!(v["result"]["isError"], true, "{v}");
        let body = &v["result"]["structuredContent"];
        let text = v["result"]["content"][0]["text"].as_str().unwrap_or("");
        assert!(
            body["code"] == "invalid_input" || text.contains("invalid_input"),
            "{v}"
        );
    }
    let v = call(20, json!({"limit": "2"}));
    assert_eq!(v["result"]["isError"], false, "{v}");
    let rows = v["result"]["structuredContent"]["sessions"]
        .as_array()
        .map(Vec::len);
    assert_eq!(rows, Some(2), "{v}");
    // Arguments the SDK cannot read are tool errors with a code too.
    let v = call(21, json!({"limit": "two"}));
    assert_eq!(v["result"]["isError"], true, "{v}");
    assert_eq!(
        v["result"]["structuredContent"]["code"], "invalid_input",
        "{v}"
    );
    let v = rpc(
        &s,
        22,
        "tools/call",
        json!({"name": "sessions_search", "arguments": {}}),
    );
    assert_eq!(
        (
            v["result"]["isError"].as_bool(),
            v["result"]["structuredContent"]["code"].as_str()
        ),
        (Some(true), Some("invalid_input")),
        "a missing argument: {v}"
    );
    // An unknown tool is a protocol error, with its code.
    let v = rpc(
        &s,
        23,
        "tools/call",
        json!({"name": "no_such_tool", "arguments": {}}),
    );
    assert_eq!(v["error"]["data"]["code"], "unknown_tool", "{v}");
}
