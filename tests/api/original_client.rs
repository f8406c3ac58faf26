//! The original system's web client against this server: every action it
//! sends for the session, branch, rewind, context, run-state and project
//! views (a fixture of facts read from its source) is answered with the
//! reply it waits for and every field it reads; and the semantics behind
//! them — opening a session, its alternatives, a branch checkout, a rewind
//! that deletes nothing — checked through the API and with `git`.

use serde_json::{json, Value};

use crate::helpers::{git, turn_commits, TestServer};
use crate::ws::WsClient;

const CONTRACT: &str = include_str!("fixtures/original_client_contract.json");

/// `v` at a dotted path (`settings.additional_working_dirs`).
fn at<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(v, |v, key| v.get(key))
}

/// Replace the `$NAME` placeholders of a fixture frame.
fn fill(v: &Value, names: &[(&str, String)]) -> Value {
    match v {
        Value::String(s) => names
            .iter()
            .find(|(k, _)| k == s)
            .map_or_else(|| v.clone(), |(_, x)| Value::String(x.clone())),
        Value::Object(o) => {
            Value::Object(o.iter().map(|(k, x)| (k.clone(), fill(x, names))).collect())
        }
        other => other.clone(),
    }
}

/// A session as an agent leaves it: three turns in a project (a tool call
/// and a context snapshot in turn 1, another in turn 2), then a retried answer to turn
/// 2's message, which is on a branch of its own.
fn populated(s: &TestServer, project: &std::path::Path) -> String {
    let (st, p) = s.post("/api/projects", json!({"path": project}));
    assert_eq!(st, 201, "{p}");
    let pid = p["id"].as_str().expect("project id").to_string();
    s.append(
        "oc",
        json!({"id": "u1", "role": "user", "content": "question 1", "session": {"project_id": pid}}),
    );
    s.append(
        "oc",
        json!({"id": "a1", "role": "assistant", "content": "answer 1"}),
    );
    s.append(
        "oc",
        json!({"id": "t1", "role": "tool", "name": "grep", "caller": "a1",
               "content": {"pattern": "fn main"}, "output": "src/main.rs:1"}),
    );
    s.end_turn(
        "oc",
        json!({"context": {"messages": [{"role": "user", "content": "question 1"}], "total_tokens": 12},
               "context_id": "ctx-1"}),
    );
    for n in [2, 3] {
        s.append(
            "oc",
            json!({"id": format!("u{n}"), "role": "user", "content": format!("question {n}")}),
        );
        s.append(
            "oc",
            json!({"id": format!("a{n}"), "role": "assistant", "content": format!("answer {n}")}),
        );
        let ctx = if n == 2 {
            json!({"context": {"messages": [{"role": "user", "content": "question 2"}], "total_tokens": 30},
                   "context_id": "ctx-2"})
        } else {
            json!({})
        };
        s.end_turn("oc", ctx);
    }
    s.append(
        "oc",
        json!({"id": "a2b", "role": "assistant", "predecessor": "u2", "content": "a better answer 2"}),
    );
    s.end_turn("oc", json!({}));
    pid
}

#[test]
fn every_frame_the_original_client_reads_is_answered_with_its_fields() {
    let scratch = tempfile::tempdir().unwrap();
    let project = scratch.path().join("proj");
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::write(project.join("src/main.rs"), "fn main() {}\n").unwrap();
    let s = TestServer::start();
    let pid = populated(&s, &project);
    let mut c = WsClient::connect(&s);

    // What the client would send for its ‹ arrow on the retried answer.
    c.send(json!({"action": "load_session", "session_id": "oc"}));
    let loaded = c.expect("session_loaded", |_| true);
    let shown = loaded["data"]["messages"].as_array().unwrap();
    let retried = shown.iter().find(|m| m["id"] == "a2b").expect("a2b shown");
    let alt = retried["prev_sibling_id"]
        .as_str()
        .expect("an alternative")
        .to_string();

    let names = [
        ("$S", "oc".to_string()),
        ("$P", pid.clone()),
        ("$U2", "u2".to_string()),
        ("$ALT", alt),
        ("$CTX", "oc/ctx-1".to_string()),
    ];
    let contract: Value = serde_json::from_str(CONTRACT).unwrap();
    let actions = contract["actions"].as_array().unwrap();
    assert!(actions.len() >= 17, "the fixture lists every action");
    for fact in actions {
        let send = fill(&fact["send"], &names);
        let action = send["action"].as_str().unwrap().to_string();
        c.send(send.clone());
        let Some(reply) = fact["reply"].as_str() else {
            // Answered by nothing: a ping afterwards comes back with no error first.
            c.send(json!({"action": "get_run_state", "session_id": "oc"}));
            let frames = c.frames_until("run_state", |_| true);
            assert!(
                frames.iter().all(|f| f["type"] != "action_error"),
                "{action} must stay quiet: {frames:?}"
            );
            continue;
        };
        let frames = c.frames_until(reply, |_| true);
        assert!(
            frames.iter().all(|f| f["type"] != "action_error"),
            "{send} drew an error: {frames:?}"
        );
        let data = &frames.last().unwrap()["data"];
        for field in fact["reads"].as_array().into_iter().flatten() {
            let field = field.as_str().unwrap();
            assert!(at(data, field).is_some(), "{reply} lacks {field}: {data}");
        }
        for (list, fields) in fact["each"].as_object().into_iter().flatten() {
            let rows = data[list.as_str()]
                .as_array()
                .unwrap_or_else(|| panic!("{reply}.{list}: {data}"));
            assert!(!rows.is_empty(), "{reply}.{list} is empty: {data}");
            for row in rows {
                for f in fields.as_array().unwrap() {
                    let f = f.as_str().unwrap();
                    assert!(row.get(f).is_some(), "{reply}.{list}[] lacks {f}: {row}");
                }
            }
        }
        for f in fact["null"].as_array().into_iter().flatten() {
            assert!(
                data[f.as_str().unwrap()].is_null(),
                "{reply}.{f} must be null: {data}"
            );
        }
        for f in fact["true"].as_array().into_iter().flatten() {
            assert_eq!(data[f.as_str().unwrap()], true, "{reply}.{f}: {data}");
        }
    }
}

fn load(c: &mut WsClient) -> Value {
    c.send(json!({"action": "load_session", "session_id": "oc"}));
    c.expect("session_loaded", |_| true)
}

/// The ids of a `session_loaded`'s messages.
fn shown_ids(loaded: &Value) -> Vec<String> {
    loaded["data"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn opening_switching_and_rewinding_keep_every_turn() {
    let scratch = tempfile::tempdir().unwrap();
    let project = scratch.path().join("proj");
    std::fs::create_dir_all(&project).unwrap();
    let s = TestServer::start();
    populated(&s, &project);
    let dir = project.join(".openprogram/sessions/oc");
    let mut c = WsClient::connect(&s);

    // Open: the retried line, the tool call folded into its reply, the
    // alternatives counted; the graph holds every node of every branch.
    let v = load(&mut c);
    assert_eq!(shown_ids(&v), ["u1", "a1", "u2", "a2b"]);
    assert_eq!(v["data"]["head_id"], "a2b");
    let msgs = v["data"]["messages"].as_array().unwrap();
    let a1 = &msgs[1];
    assert_eq!(a1["tool_calls"][0]["tool"], "grep");
    assert_eq!(a1["tool_calls"][0]["result"], "src/main.rs:1");
    assert_eq!(a1["tool_calls"][0]["tool_call_id"], "t1");
    let a2b = &msgs[3];
    assert_eq!(
        (a2b["sibling_index"].as_u64(), a2b["sibling_total"].as_u64()),
        (Some(2), Some(2))
    );
    assert_eq!(
        a2b["prev_sibling_id"], "a3",
        "the older answer's line ends at a3"
    );
    let graph = v["data"]["graph"].as_array().unwrap();
    assert_eq!(graph.len(), 8, "u1 a1 t1 u2 a2 u3 a3 a2b");
    let lane = |id: &str| graph.iter().find(|g| g["id"] == id).unwrap()["_lane"].as_u64();
    assert_eq!((lane("a2"), lane("a3")), (Some(0), Some(0)));
    assert_ne!(lane("a2b"), Some(0), "the retry opens a lane");

    // The ‹ arrow: back to the first answer's line, on main.
    c.send(json!({"action": "checkout_branch", "session_id": "oc", "head_msg_id": "a3"}));
    let r = c.expect("branch_checked_out", |_| true);
    assert_eq!(r["data"]["ok"], true, "{r}");
    assert_eq!(git(&dir, &["branch", "--show-current"]).trim(), "main");
    assert_eq!(
        shown_ids(&load(&mut c)),
        ["u1", "a1", "u2", "a2", "u3", "a3"]
    );

    // The same arrow over the client's REST route, there and back.
    let (st, v) = s.post(
        "/api/chat/checkout",
        json!({"session_id": "oc", "msg_id": "a2b"}),
    );
    assert_eq!((st, v["head_id"].as_str()), (200, Some("a2b")), "{v}");
    assert_eq!(shown_ids(&load(&mut c)), ["u1", "a1", "u2", "a2b"]);
    let (st, v) = s.post(
        "/api/chat/checkout",
        json!({"session_id": "oc", "msg_id": "a3"}),
    );
    assert_eq!(st, 200, "{v}");
    let (st, v) = s.post(
        "/api/chat/checkout",
        json!({"session_id": "oc", "msg_id": "zz"}),
    );
    assert_eq!((st, v["code"].as_str()), (404, Some("unknown_node")), "{v}");

    // An unknown message: a clear refusal in the reply, nothing moves.
    c.send(json!({"action": "checkout_branch", "session_id": "oc", "head_msg_id": "nope"}));
    let r = c.expect("branch_checked_out", |_| true);
    assert_eq!(
        (r["data"]["ok"].as_bool(), r["data"]["code"].as_str()),
        (Some(false), Some("unknown_node"))
    );

    // /rewind 1 (the newest point: turn 3's message), then "rewind to here"
    // on u2: each goes back to before that message, and says so.
    c.send(json!({"action": "rewind_list", "session_id": "oc"}));
    let p = c.expect("rewind_points", |_| true);
    let points: Vec<_> = p["data"]["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["msg_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        points,
        ["u3", "u2", "u1"],
        "newest first, as the client numbers them"
    );
    c.send(json!({"action": "rewind", "session_id": "oc", "target_msg_id": "__by_index__1"}));
    let r = c.expect("rewind_result", |_| true);
    assert_eq!(
        (
            r["data"]["new_head_id"].as_str(),
            r["data"]["turns_reverted"].as_u64(),
            r["data"]["user_text"].as_str()
        ),
        (Some("a2"), Some(1), Some("question 3")),
        "{r}"
    );
    c.send(json!({"action": "rewind", "session_id": "oc", "target_msg_id": "u2"}));
    let r = c.expect("rewind_result", |_| true);
    assert_eq!(
        (
            r["data"]["new_head_id"].as_str(),
            r["data"]["turns_reverted"].as_u64()
        ),
        (Some("a1"), Some(1)),
        "{r}"
    );
    assert_eq!(shown_ids(&load(&mut c)), ["u1", "a1"]);
    // Before the first message there is nothing: refused, with a reason.
    c.send(json!({"action": "rewind", "session_id": "oc", "target_msg_id": "u1"}));
    let r = c.expect("rewind_result", |_| true);
    assert!(
        r["data"]["new_head_id"].is_null() && r["data"]["error"].is_string(),
        "{r}"
    );
    c.send(json!({"action": "rewind", "session_id": "oc", "target_msg_id": "__by_index__9"}));
    let r = c.expect("rewind_result", |_| true);
    assert!(
        r["data"]["error"]
            .as_str()
            .unwrap()
            .contains("Invalid index"),
        "{r}"
    );

    // The next message continues after turn 1 on a new branch; main keeps
    // its three turns and the retry branch its answer.
    s.append(
        "oc",
        json!({"id": "u2c", "role": "user", "content": "question 2, again"}),
    );
    s.append(
        "oc",
        json!({"id": "a2c", "role": "assistant", "content": "answer 2c"}),
    );
    s.end_turn("oc", json!({}));
    assert_eq!(shown_ids(&load(&mut c)), ["u1", "a1", "u2c", "a2c"]);
    assert_eq!(turn_commits(&dir, "main"), "3");
    let branches = git(&dir, &["branch", "--list"]);
    assert!(
        branches.contains("retry-a2b") && branches.contains("replay-"),
        "{branches}"
    );
    let (_, nodes) = s.get("/api/sessions/oc/nodes");
    assert_eq!(
        nodes["nodes"].as_array().unwrap().len(),
        10,
        "nothing was deleted"
    );

    // A session that does not exist opens as a new conversation.
    c.send(json!({"action": "load_session", "session_id": "never-made"}));
    let v = c.expect("session_loaded", |_| true);
    assert_eq!(
        (v["data"]["id"].as_str(), v["data"]["title"].as_str()),
        (Some("never-made"), Some("New conversation"))
    );
}

#[test]
fn the_file_panel_reads_the_project_and_nothing_outside_it() {
    let scratch = tempfile::tempdir().unwrap();
    let project = scratch.path().join("proj");
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::write(project.join("src/lib.rs"), "pub fn x() {}\n").unwrap();
    std::fs::write(project.join(".gitignore"), "target/\n").unwrap();
    std::fs::create_dir_all(project.join("target")).unwrap();
    let secret = scratch.path().join("secret");
    std::fs::create_dir_all(&secret).unwrap();
    std::fs::write(secret.join("key"), "do not read").unwrap();
    std::os::unix::fs::symlink(&secret, project.join("link")).unwrap();
    let s = TestServer::start();
    let pid = populated(&s, &project);
    let mut c = WsClient::connect(&s);
    let mut tree = |path: &str| {
        c.send(json!({"action": "project_file_tree", "project_id": pid, "path": path}));
        c.expect("project_file_tree_result", |_| true)["data"].clone()
    };
    let top = tree("");
    let entries = top["entries"].as_array().unwrap();
    let names: Vec<_> = entries
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert!(
        !names.contains(&".git") && !names.contains(&".openprogram"),
        "{names:?}"
    );
    let target = entries.iter().find(|e| e["name"] == "target").unwrap();
    assert_eq!(target["ignored"], true);
    let link = entries.iter().find(|e| e["name"] == "link").unwrap();
    assert_eq!(link["type"], "symlink");
    assert_eq!(tree("src")["entries"][0]["name"], "lib.rs");
    for bad in ["link", "..", "/etc", ".git", "src/../.."] {
        let v = tree(bad);
        assert!(
            v["error"].is_string() && v["entries"].as_array().unwrap().is_empty(),
            "{bad}: {v}"
        );
    }
    c.send(json!({"action": "project_file_read", "project_id": pid, "path": "link/key"}));
    let r = c.expect("project_file_read_result", |_| true);
    assert!(
        r["data"]["content"].is_null() && r["data"]["error"].is_string(),
        "{r}"
    );
    c.send(json!({"action": "project_file_read", "project_id": pid, "path": "src/lib.rs"}));
    let r = c.expect("project_file_read_result", |_| true);
    assert_eq!(r["data"]["content"], "pub fn x() {}\n");
    c.send(json!({"action": "project_file_delete", "project_id": pid, "path": "src/lib.rs"}));
    let r = c.expect("project_file_delete_result", |_| true);
    assert_eq!(
        (r["data"]["ok"].as_bool(), r["data"]["code"].as_str()),
        (Some(false), Some("read_only"))
    );
    assert!(project.join("src/lib.rs").exists());
    c.send(json!({"action": "project_file_tree", "project_id": "default", "path": ""}));
    let r = c.expect("project_file_tree_result", |_| true);
    assert!(
        r["data"]["error"].is_string(),
        "the home folder is not listed: {r}"
    );
}
