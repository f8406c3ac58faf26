//! The WebSocket protocol as the original web client uses it (reference
//! §2.12 and §5): one conformance test per action with the exact frame
//! shapes, and a scripted sidebar client that follows the original's flows.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Value};

use crate::helpers::{git, turn_commits, TestServer};
use crate::ws::WsClient;

/// The keys of a frame's `data` (or of any object).
fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default()
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

/// Assert `v` has every key in `names`.
fn has_all(v: &Value, names: &[&str]) {
    let missing: Vec<_> = set(names).difference(&keys(v)).cloned().collect();
    assert!(missing.is_empty(), "missing {missing:?} in {v}");
}

/// The 16 fields of a sidebar row in the original (§2.12).
const ROW_FIELDS: &[&str] = &[
    "id",
    "title",
    "created_at",
    "updated_at",
    "agent_id",
    "source",
    "peer_display",
    "channel",
    "account_id",
    "peer",
    "preview",
    "pinned",
    "archived",
    "group",
    "status",
    "unread",
    "project",
];

const PROJECT_FIELDS: &[&str] = &[
    "id",
    "name",
    "path",
    "is_default",
    "path_missing",
    "session_count",
    "session_ids",
    "status",
];

fn project_dir() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().canonicalize().unwrap().display().to_string();
    (dir, path)
}

/// Register a project over the socket; its id.
fn create_project(c: &mut WsClient, path: &str, name: &str) -> String {
    c.send(json!({"action": "create_project", "path": path, "name": name}));
    let created = c.expect("project_created", |_| true);
    assert_eq!(created["data"]["ok"], true, "{created}");
    created["data"]["project"]["id"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn list_sessions_sends_every_row_as_an_array_with_the_original_fields() {
    let s = TestServer::start();
    s.turn("old", "an old question", "answer", &[]);
    s.turn("gone", "archived later", "answer", &[]);
    s.post("/api/sessions/archive", json!({"session_id": "gone"}));
    // An empty shell (no title, no message) is listed too, as REST lists
    // it (spec: no filtering of empty placeholders).
    assert_eq!(s.post("/api/sessions", json!({"id": "shell"})).0, 201);
    let mut c = WsClient::connect(&s);
    c.send(json!({"action": "list_sessions", "request_id": "r-1", "view": "whatever"}));
    let list = c.expect("sessions_list", |_| true);
    assert_eq!(list["request_id"], "r-1", "request_id is echoed");
    let rows = list["data"].as_array().expect("data is the array of rows");
    let ids: Vec<_> = rows.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        ["shell", "gone", "old"],
        "every row, archived ones included, newest first"
    );
    for r in rows {
        has_all(r, ROW_FIELDS);
    }
    let home = std::path::Path::new(&std::env::var("HOME").unwrap())
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "Home".into());
    assert_eq!(
        rows[2]["project"],
        home.as_str(),
        "the default project's name"
    );
    assert_eq!(rows[2]["project_id"], "default");
    assert_eq!(rows[1]["archived"], true);
    assert_eq!(rows[2]["title"], "an old question");
    // The empty shell shows its id, as the spec's fallback goes.
    assert_eq!(rows[0]["title"], "shell", "{}", rows[0]);
}

#[test]
fn delete_session_broadcasts_session_deleted_at_the_top_level() {
    let s = TestServer::start();
    s.turn("d", "x", "y", &[]);
    let mut a = WsClient::connect(&s);
    let mut b = WsClient::connect(&s);
    a.send(json!({"action": "delete_session", "session_id": "d"}));
    let d = b.expect("session_deleted", |_| true);
    assert_eq!(d["session_id"], "d");
    assert!(!s.session_dir("d").exists());
    // A second delete: an error naming the action, the session and a code.
    a.send(json!({"action": "delete_session", "session_id": "d", "request_id": 7}));
    let e = a.expect("action_error", |_| true);
    assert_eq!(
        keys(&e["data"]),
        set(&["action", "session_id", "error", "code"])
    );
    assert_eq!(
        (
            e["data"]["action"].as_str(),
            e["data"]["session_id"].as_str(),
            e["data"]["code"].as_str()
        ),
        (Some("delete_session"), Some("d"), Some("unknown_session"))
    );
    assert_eq!(e["request_id"], 7);
}

#[test]
fn rename_session_broadcasts_id_and_title() {
    let s = TestServer::start();
    s.turn("n", "x", "y", &[]);
    let mut c = WsClient::connect(&s);
    c.send(json!({"action": "rename_session", "session_id": "n", "title": "Chosen", "extra": 1}));
    // The end of turn's own update (its status) may still arrive first.
    let u = c.expect("session_updated", |v| {
        v["data"]["id"] == "n" && v["data"].get("status").is_none()
    });
    assert_eq!(u["data"], json!({"id": "n", "title": "Chosen"}));
}

#[test]
fn update_session_flags_writes_only_the_keys_present() {
    let s = TestServer::start();
    s.turn("f", "x", "y", &[]);
    let mut c = WsClient::connect(&s);
    c.send(json!({"action": "update_session_flags", "session_id": "f", "pinned": true, "group": "work"}));
    // The end of turn's own update (its status) may still arrive first.
    let ours = |v: &serde_json::Value| v["data"]["id"] == "f" && v["data"].get("status").is_none();
    let u = c.expect("session_updated", ours);
    assert_eq!(
        u["data"],
        json!({"id": "f", "pinned": true, "group": "work"})
    );
    c.send(json!({"action": "update_session_flags", "session_id": "f", "archived": true}));
    let u = c.expect("session_updated", ours);
    assert_eq!(u["data"], json!({"id": "f", "archived": true}));
    let (_, meta) = s.get("/api/sessions/f");
    assert_eq!(
        (meta["pinned"].as_bool(), meta["group"].as_str()),
        (Some(true), Some("work"))
    );
}

#[test]
fn mark_session_read_clears_unread() {
    let s = TestServer::start();
    s.append("u", json!({"role": "user", "content": "x"}));
    s.append("u", json!({"role": "assistant", "content": "y"}));
    s.end_turn("u", json!({"background": true}));
    let mut c = WsClient::connect(&s);
    c.send(json!({"action": "mark_session_read", "session_id": "u"}));
    // The end of turn's own update (done, unread) may still arrive first.
    let u = c.expect("session_updated", |v| {
        v["data"]["id"] == "u" && v["data"]["unread"] == false
    });
    assert_eq!(u["data"], json!({"id": "u", "unread": false}));
    // Read already: answered all the same (the original always answers).
    let mut d = WsClient::connect(&s);
    d.send(json!({"action": "mark_session_read", "session_id": "u"}));
    let again = d.expect("session_updated", |v| v["data"]["id"] == "u");
    assert_eq!(again["data"]["unread"], false);
    // No session focused (null or empty): quiet, no error.
    for none in [json!(null), json!("")] {
        d.send(json!({"action": "mark_session_read", "session_id": none}));
    }
    d.send(json!({"action": "list_sessions"}));
    let frames = d.frames_until("sessions_list", |_| true);
    assert!(
        frames.iter().all(|f| f["type"] != "action_error"),
        "{frames:?}"
    );
}

#[test]
fn clear_sessions_deletes_all_and_replies_with_the_empty_list() {
    let s = TestServer::start();
    for id in ["c1", "c2", "c3"] {
        s.turn(id, "x", "y", &[]);
    }
    let mut c = WsClient::connect(&s);
    c.send(json!({"action": "clear_sessions"}));
    let frames = c.frames_until("sessions_list", |v| {
        v["data"].as_array().is_some_and(|a| a.is_empty())
    });
    let deleted: BTreeSet<_> = frames
        .iter()
        .filter(|f| f["type"] == "session_deleted")
        .map(|f| f["session_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(deleted, set(&["c1", "c2", "c3"]));
    let (_, page) = s.get("/api/sessions?include_archived=true");
    assert_eq!(page["total"], 0);
}

#[test]
fn list_projects_has_current_project_live_session_ids_and_the_default_count() {
    let s = TestServer::start();
    let (_dir, path) = project_dir();
    let mut c = WsClient::connect(&s);
    let pid = create_project(&mut c, &path, "Work");
    s.turn_in_project("in1", &pid);
    s.turn_in_project("in2", &pid);
    s.turn("home1", "x", "y", &[]);
    c.send(json!({"action": "delete_session", "session_id": "in2"}));
    c.expect("session_deleted", |_| true);
    c.send(json!({"action": "list_projects", "session_id": "in1"}));
    let list = c.expect("projects_list", |v| v["data"]["session_id"] == "in1");
    assert_eq!(
        keys(&list["data"]),
        set(&["projects", "current_project_id", "session_id"])
    );
    assert_eq!(list["data"]["current_project_id"], pid.as_str());
    let projects = list["data"]["projects"].as_array().unwrap();
    for p in projects {
        has_all(p, PROJECT_FIELDS);
    }
    let by_id: BTreeMap<_, _> = projects
        .iter()
        .map(|p| (p["id"].as_str().unwrap(), p))
        .collect();
    assert_eq!(
        by_id[pid.as_str()]["session_ids"],
        json!(["in1"]),
        "a deleted session leaves"
    );
    assert_eq!(by_id[pid.as_str()]["session_count"], 1);
    assert_eq!(by_id["default"]["is_default"], true);
    assert_eq!(by_id["default"]["session_ids"], json!(["home1"]));
    assert_eq!(
        by_id["default"]["session_count"], 1,
        "the default counts its own"
    );
    // Without a session: no current project.
    c.send(json!({"action": "list_projects"}));
    let list = c.expect("projects_list", |v| v["data"]["session_id"].is_null());
    assert!(list["data"]["current_project_id"].is_null());
    // The original client's new chat sends an empty id: the reply names
    // no session (null), the only reply that client keeps.
    c.send(json!({"action": "list_projects", "session_id": ""}));
    let list = c.expect("projects_list", |_| true);
    assert!(list["data"]["session_id"].is_null(), "{list}");
    assert!(list["data"]["current_project_id"].is_null());
}

#[test]
fn create_project_replies_ok_then_the_list_and_words_its_errors() {
    let s = TestServer::start();
    let (dir, path) = project_dir();
    let mut c = WsClient::connect(&s);
    c.send(json!({"action": "create_project", "path": path, "name": "Mine"}));
    let frames = c.frames_until("projects_list", |_| true);
    let created = frames
        .iter()
        .find(|f| f["type"] == "project_created")
        .unwrap();
    has_all(&created["data"], &["ok", "project", "error"]);
    assert_eq!(created["data"]["ok"], true);
    assert!(created["data"]["error"].is_null());
    has_all(&created["data"]["project"], PROJECT_FIELDS);
    assert_eq!(created["data"]["project"]["name"], "Mine");
    assert!(dir.path().join(".git").is_dir());
    c.send(json!({"action": "create_project"}));
    let e = c.expect("project_created", |_| true);
    assert_eq!(
        (e["data"]["ok"].as_bool(), e["data"]["error"].as_str()),
        (Some(false), Some("path is required"))
    );
    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    c.send(json!({"action": "create_project", "path": file}));
    let e = c.expect("project_created", |_| true);
    assert_eq!(e["data"]["ok"], false);
    assert_eq!(
        e["data"]["error"],
        format!("not a directory: {}", file.display()).as_str()
    );
}

#[test]
fn set_session_project_words_its_errors_in_the_original_order() {
    let s = TestServer::start();
    let (_dir, path) = project_dir();
    let mut c = WsClient::connect(&s);
    let pid = create_project(&mut c, &path, "P");
    c.send(json!({"action": "set_session_project", "session_id": "x"}));
    let e = c.expect("session_project_set", |_| true);
    has_all(&e["data"], &["ok", "session_id", "project_id", "error"]);
    assert_eq!(e["data"]["error"], "session_id and project_id are required");
    s.turn("frozen", "x", "y", &[]);
    c.send(
        json!({"action": "set_session_project", "session_id": "frozen", "project_id": "proj_nope"}),
    );
    let e = c.expect("session_project_set", |_| true);
    assert_eq!(
        (e["data"]["ok"].as_bool(), e["data"]["error"].as_str()),
        (Some(false), Some("project is frozen after the first turn"))
    );
    assert_eq!(s.post("/api/sessions", json!({"id": "empty"})).0, 201);
    c.send(
        json!({"action": "set_session_project", "session_id": "empty", "project_id": "proj_nope"}),
    );
    let e = c.expect("session_project_set", |_| true);
    assert_eq!(e["data"]["error"], "unknown project");
    // The spec's name for the same action; the repo moves into the project.
    c.send(json!({"action": "add_session_to_project", "session_id": "empty", "project_id": pid}));
    let ok = c.expect("session_project_set", |v| v["data"]["ok"] == true);
    assert_eq!(
        ok["data"],
        json!({"ok": true, "session_id": "empty", "project_id": pid, "error": null, "code": null})
    );
    assert!(std::path::Path::new(&path)
        .join(".openprogram/sessions/empty/meta.json")
        .is_file());
}

#[test]
fn relocate_project_replies_with_old_and_new_path_and_one_node() {
    let s = TestServer::start();
    let (dir, path) = project_dir();
    let mut c = WsClient::connect(&s);
    let pid = create_project(&mut c, &path, "Moving");
    s.turn_in_project("m1", &pid);
    let moved = tempfile::tempdir().unwrap();
    let new_path = moved.path().canonicalize().unwrap().join("moved");
    std::fs::rename(dir.path(), &new_path).unwrap();
    c.send(json!({"action": "relocate_project", "project_id": pid}));
    let e = c.expect("project_relocated", |_| true);
    assert_eq!(e["data"]["error"], "project_id and path are required");
    c.send(
        json!({"action": "relocate_project", "project_id": pid, "path": moved.path().join("nope")}),
    );
    let e = c.expect("project_relocated", |_| true);
    assert!(
        e["data"]["error"]
            .as_str()
            .unwrap()
            .starts_with("not a directory: "),
        "{e}"
    );
    c.send(json!({"action": "relocate_project", "project_id": pid, "path": new_path, "session_id": "m1"}));
    let r = c.expect("project_relocated", |v| v["data"]["ok"] == true);
    let list = c.expect("projects_list", |_| true);
    has_all(
        &r["data"],
        &[
            "ok",
            "session_id",
            "project_id",
            "old_path",
            "path",
            "node_id",
            "error",
        ],
    );
    assert_eq!(r["data"]["ok"], true);
    assert_eq!(r["data"]["old_path"], path.as_str());
    assert_eq!(r["data"]["path"], new_path.display().to_string().as_str());
    let node_id = r["data"]["node_id"].as_str().unwrap();
    assert!(
        node_id.starts_with("reloc_") && node_id.len() == 16,
        "{node_id}"
    );
    let relocs = s.nodes_named("m1", "project/relocate");
    assert_eq!(relocs.len(), 1);
    assert_eq!(relocs[0]["id"], node_id);
    let p = list["data"]["projects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == pid.as_str())
        .unwrap();
    assert_eq!(p["path_missing"], false);
    c.send(json!({"action": "relocate_project", "project_id": "default", "path": new_path}));
    let e = c.expect("project_relocated", |_| true);
    assert_eq!(e["data"]["ok"], false);
    assert_eq!(e["data"]["code"], "default_project");
}

#[test]
fn list_project_sessions_lists_id_title_created_at_preview_newest_first() {
    let s = TestServer::start();
    let (_dir, path) = project_dir();
    let mut c = WsClient::connect(&s);
    let pid = create_project(&mut c, &path, "L");
    s.turn_in_project("first", &pid);
    s.turn_in_project("second", &pid);
    c.send(json!({"action": "list_project_sessions", "project_id": pid}));
    let r = c.expect("project_sessions", |_| true);
    assert_eq!(keys(&r["data"]), set(&["project_id", "sessions"]));
    let rows = r["data"]["sessions"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["id"], "second");
    for row in rows {
        assert_eq!(keys(row), set(&["id", "title", "created_at", "preview"]));
    }
}

#[test]
fn session_workdirs_are_added_listed_and_removed_after_the_freeze() {
    let s = TestServer::start();
    s.turn("w", "x", "y", &[]);
    let (_dir, path) = project_dir();
    let mut c = WsClient::connect(&s);
    c.send(json!({"action": "add_session_workdir", "session_id": "w"}));
    let e = c.expect("session_workdir_added", |_| true);
    assert_eq!(
        (e["data"]["ok"].as_bool(), e["data"]["error"].as_str()),
        (Some(false), Some("path is required"))
    );
    c.send(json!({"action": "add_session_workdir", "session_id": "w", "path": format!("{path}/missing")}));
    let e = c.expect("session_workdir_added", |_| true);
    assert_eq!(
        e["data"]["error"],
        format!("not a directory: {path}/missing").as_str()
    );
    c.send(json!({"action": "add_session_workdir", "session_id": "w", "path": path}));
    let ok = c.expect("session_workdir_added", |_| true);
    has_all(&ok["data"], &["ok", "session_id", "path", "error"]);
    assert_eq!(
        (ok["data"]["ok"].as_bool(), ok["data"]["path"].as_str()),
        (Some(true), Some(path.as_str()))
    );
    c.send(json!({"action": "list_session_workdirs", "session_id": "w"}));
    let l = c.expect("session_workdirs", |_| true);
    assert_eq!(l["data"], json!({"session_id": "w", "workdirs": [path]}));
    c.send(json!({"action": "remove_session_workdir", "session_id": "w", "path": path}));
    let r = c.expect("session_workdir_removed", |_| true);
    assert_eq!(r["data"]["ok"], true);
    c.send(json!({"action": "list_session_workdirs", "session_id": "w"}));
    let l = c.expect("session_workdirs", |_| true);
    assert_eq!(l["data"]["workdirs"], json!([]));
}

#[test]
fn chat_acks_with_the_original_fields_refuses_a_busy_session_and_broadcasts_the_list() {
    let s = TestServer::start();
    let mut c = WsClient::connect(&s);
    let mut other = WsClient::connect(&s);
    // A runner answers: the session is busy while it runs.
    let mut runner = WsClient::connect(&s);
    runner.send(json!({"action": "register_runner", "name": "busy", "sessions": "all"}));
    runner.expect("runner_registered", |_| true);
    c.send(
        json!({"action": "chat", "session_id": "ch", "text": "hello there", "request_id": "q1"}),
    );
    let ack = c.expect("chat_ack", |_| true);
    let req = runner.expect("run_requested", |_| true);
    runner
        .send(json!({"action": "claim_run", "session_id": "ch", "msg_id": req["data"]["msg_id"]}));
    runner.expect("run_claimed", |_| true);
    assert_eq!(ack["request_id"], "q1");
    has_all(
        &ack["data"],
        &[
            "session_id",
            "msg_id",
            "text",
            "execution_id",
            "permission_mode",
        ],
    );
    assert_eq!(ack["data"]["session_id"], "ch");
    assert_eq!(ack["data"]["text"], "hello there");
    assert_eq!(ack["data"]["permission_mode"], "ask", "the default mode");
    assert!(ack["data"]["execution_id"]
        .as_str()
        .is_some_and(|e| !e.is_empty()));
    let list = other.expect("sessions_list", |_| true);
    assert_eq!(
        list["data"][0]["id"], "ch",
        "a dispatched chat broadcasts the list"
    );
    // A second message while the turn runs: one error, no ack, nothing appended.
    c.send(
        json!({"action": "chat", "session_id": "ch", "text": "again", "permission_mode": "auto"}),
    );
    let frames = c.frames_until("chat_response", |_| true);
    assert!(frames.iter().all(|f| f["type"] != "chat_ack"));
    let busy = frames.last().unwrap();
    assert_eq!(busy["data"]["type"], "error");
    assert_eq!(busy["data"]["code"], "run_active");
    assert_eq!(
        busy["data"]["content"],
        "a run is currently active in this session — wait for it to finish or stop it first"
    );
    let (_, nodes) = s.get("/api/sessions/ch/nodes");
    assert_eq!(nodes["nodes"].as_array().unwrap().len(), 1);
}

#[test]
fn rewind_lists_the_turns_of_the_path_and_continues_on_a_replay_branch() {
    let s = TestServer::start();
    for i in 1..=3 {
        s.turn("rw", &format!("question {i}"), &format!("answer {i}"), &[]);
    }
    let mut c = WsClient::connect(&s);
    c.send(json!({"action": "rewind_list", "session_id": "rw"}));
    let p = c.expect("rewind_points", |_| true);
    let points = p["data"]["points"].as_array().unwrap();
    let turns: Vec<_> = points.iter().map(|p| p["turn"].as_u64().unwrap()).collect();
    assert_eq!(
        turns,
        [3, 2, 1],
        "newest first, as the original numbers them"
    );
    has_all(&points[0], &["turn", "commit", "summary", "timestamp"]);
    c.send(json!({"action": "rewind", "session_id": "rw", "turn": 1}));
    let r = c.expect("rewind_result", |_| true);
    assert_eq!(
        (r["data"]["ok"].as_bool(), r["data"]["turn"].as_u64()),
        (Some(true), Some(1))
    );
    assert_eq!(r["data"]["live"], false);
    // The next message continues from turn 1 on a new branch; nothing is lost.
    s.turn("rw", "a different second question", "another answer", &[]);
    let dir = s.session_dir("rw");
    let branches = git(&dir, &["branch", "--list"]);
    assert!(branches.contains("replay-"), "{branches}");
    assert_eq!(turn_commits(&dir, "main"), "3", "main keeps its turns");
}

#[test]
fn git_checkout_takes_commit_sha_and_the_spec_name_works_too() {
    let s = TestServer::start();
    s.turn("gc", "one", "1", &[]);
    s.turn("gc", "two", "2", &[]);
    let dir = s.session_dir("gc");
    // Turn 1's commit: the one after the `session init` root.
    let first = git(&dir, &["rev-list", "--reverse", "HEAD"])
        .lines()
        .nth(1)
        .unwrap()
        .to_string();
    let mut c = WsClient::connect(&s);
    c.send(json!({"action": "git_checkout", "session_id": "gc", "commit_sha": first}));
    let r = c.expect("git_checkout", |_| true);
    assert_eq!(
        (r["data"]["turn"].as_u64(), r["data"]["commit"].as_str()),
        (Some(1), Some(first.as_str()))
    );
    c.send(json!({"action": "git_session_checkout", "session_id": "gc", "step": "latest"}));
    let r = c.expect("git_session_checkout", |_| true);
    assert_eq!(
        (r["data"]["turn"].as_u64(), r["data"]["live"].as_bool()),
        (Some(2), Some(true))
    );
}

#[test]
fn remove_project_is_an_action_error_and_changes_nothing() {
    let s = TestServer::start();
    let (_dir, path) = project_dir();
    let mut c = WsClient::connect(&s);
    let pid = create_project(&mut c, &path, "Stays");
    let before = s.get("/api/projects").1;
    c.send(json!({"action": "remove_project", "project_id": pid}));
    let e = c.expect("action_error", |_| true);
    assert_eq!(e["data"]["action"], "remove_project");
    assert_eq!(s.get("/api/projects").1, before);
}

#[test]
fn a_skipped_project_commit_reaches_websocket_clients() {
    let s = TestServer::start();
    let (dir, path) = project_dir();
    let mut c = WsClient::connect(&s);
    let pid = create_project(&mut c, &path, "Dirty");
    std::fs::write(dir.path().join("mine.txt"), "the user's own edit").unwrap();
    s.turn_in_project("dirty", &pid);
    let w = c.expect("chat_response", |v| {
        v["data"]["type"] == "project_commit_skipped"
    });
    has_all(
        &w["data"],
        &[
            "type",
            "session_id",
            "project_id",
            "path",
            "reason",
            "message",
        ],
    );
    assert_eq!(w["data"]["session_id"], "dirty");
    assert_eq!(w["data"]["project_id"], pid.as_str());
    assert_eq!(w["data"]["path"], path.as_str());
    assert_eq!(w["data"]["reason"], "dirty_tree");
    assert_eq!(
        w["data"]["message"],
        "you have uncommitted changes, the agent's edits won't be auto-committed for now"
    );
}

#[test]
fn a_channel_session_has_the_channel_as_source_and_ends_done_and_unread() {
    let s = TestServer::start();
    let mut c = WsClient::connect(&s);
    let (st, v) = s.post(
        "/api/channels/wechat/messages",
        json!({"account_id": "a1", "peer_id": "p1", "peer_display": "Pat", "text": "hi from wechat"}),
    );
    assert_eq!(st, 201, "{v}");
    let sid = v["session_id"].as_str().unwrap().to_string();
    s.append(&sid, json!({"role": "assistant", "content": "hello Pat"}));
    s.end_turn(&sid, json!({}));
    let u = c.expect("session_updated", |v| {
        v["data"]["id"] == sid.as_str() && v["data"]["status"] == "done"
    });
    assert_eq!(u["data"]["unread"], true);
    c.send(json!({"action": "list_sessions"}));
    let list = c.expect("sessions_list", |_| true);
    let row = &list["data"][0];
    assert_eq!(
        (
            row["source"].as_str(),
            row["channel"].as_str(),
            row["peer"].as_str()
        ),
        (Some("wechat"), Some("wechat"), Some("p1"))
    );
    assert_eq!(
        row["title"], "hi from wechat",
        "no [WeChat] prefix in the title"
    );
}

/// A sidebar as the original web client keeps it: the rows of the last
/// `sessions_list`, patched by `session_updated`/`session_created`, less
/// `session_deleted`; the active / archived / all views are computed here.
struct Sidebar {
    rows: BTreeMap<String, Value>,
}

impl Sidebar {
    fn apply(&mut self, f: &Value) {
        match f["type"].as_str() {
            Some("sessions_list") => {
                self.rows = f["data"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| (r["id"].as_str().unwrap().to_string(), r.clone()))
                    .collect();
            }
            Some("session_created") => {
                let r = &f["data"];
                self.rows
                    .insert(r["id"].as_str().unwrap().into(), r.clone());
            }
            Some("session_updated") => {
                let id = f["data"]["id"].as_str().unwrap();
                if let Some(row) = self.rows.get_mut(id) {
                    for (k, v) in f["data"].as_object().unwrap() {
                        row[k] = v.clone();
                    }
                }
            }
            Some("session_deleted") => {
                self.rows.remove(f["session_id"].as_str().unwrap());
            }
            _ => {}
        }
    }

    fn view(&self, which: &str) -> Vec<String> {
        self.rows
            .values()
            .filter(|r| match which {
                "active" => r["archived"] == false,
                "archived" => r["archived"] == true,
                _ => true,
            })
            .map(|r| r["id"].as_str().unwrap().to_string())
            .collect()
    }

    /// Read and apply frames until the sidebar satisfies `done`.
    fn settle(&mut self, c: &mut WsClient, done: impl Fn(&Sidebar) -> bool) {
        while !done(self) {
            let f = c.next_where(|_| true);
            self.apply(&f);
        }
    }

    /// Read frames until `kind` matching `pred`, applying each.
    fn follow(&mut self, c: &mut WsClient, kind: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let frames = c.frames_until(kind, pred);
        for f in &frames {
            self.apply(f);
        }
        frames.last().cloned().unwrap_or_default()
    }
}

#[test]
fn a_scripted_sidebar_client_follows_the_original_flows() {
    let s = TestServer::start();
    s.turn("a", "alpha question", "a", &[]);
    s.turn("b", "beta question", "b", &[]);
    let mut c = WsClient::connect(&s);
    let mut bar = Sidebar {
        rows: BTreeMap::new(),
    };
    // Connect → list_sessions.
    c.send(json!({"action": "list_sessions"}));
    bar.follow(&mut c, "sessions_list", |_| true);
    assert_eq!(bar.view("all"), ["a", "b"]);
    // A change from elsewhere patches the row.
    s.patch("/api/sessions/a", json!({"title": "Alpha"}));
    bar.follow(&mut c, "session_updated", |v| v["data"]["title"] == "Alpha");
    assert_eq!(bar.rows["a"]["title"], "Alpha");
    // Archived view, switched locally without a round trip.
    c.send(json!({"action": "update_session_flags", "session_id": "b", "archived": true}));
    bar.follow(&mut c, "session_updated", |v| v["data"]["archived"] == true);
    assert_eq!(
        (bar.view("active"), bar.view("archived")),
        (vec!["a".to_string()], vec!["b".to_string()])
    );
    // The draft flow: the first chat frame carries the project, then the
    // idempotent set_session_project after the ack.
    let (dir, path) = project_dir();
    c.send(json!({"action": "create_project", "path": path}));
    let pid = bar.follow(&mut c, "project_created", |_| true)["data"]["project"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    c.send(
        json!({"action": "chat", "session_id": "draft", "project_id": pid, "text": "start here"}),
    );
    bar.follow(&mut c, "chat_ack", |_| true);
    c.send(json!({"action": "set_session_project", "session_id": "draft", "project_id": pid}));
    let set = bar.follow(&mut c, "session_project_set", |_| true);
    assert_eq!(set["data"]["ok"], true);
    // The row arrives by the creation broadcast or the chat's list.
    bar.settle(&mut c, |b| b.rows.contains_key("draft"));
    let name = dir
        .path()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert_eq!(
        bar.rows["draft"]["project"],
        name.as_str(),
        "grouped by project name"
    );
    s.append("draft", json!({"role": "assistant", "content": "done"}));
    s.end_turn("draft", json!({}));
    // The locate flow: the folder moved, the picker shows path_missing,
    // relocate_project repairs it.
    let elsewhere = tempfile::tempdir().unwrap();
    let moved = elsewhere.path().canonicalize().unwrap().join("moved");
    std::fs::rename(dir.path(), &moved).unwrap();
    c.send(json!({"action": "list_projects", "session_id": "draft"}));
    let list = bar.follow(&mut c, "projects_list", |v| {
        v["data"]["session_id"] == "draft"
    });
    let missing = |l: &Value| {
        l["data"]["projects"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["id"] == pid.as_str())
            .unwrap()["path_missing"]
            .clone()
    };
    assert_eq!(missing(&list), true);
    c.send(json!({"action": "relocate_project", "session_id": "draft", "project_id": pid, "path": moved}));
    let r = bar.follow(&mut c, "project_relocated", |_| true);
    assert_eq!(r["data"]["ok"], true, "{r}");
    let list = bar.follow(&mut c, "projects_list", |_| true);
    assert_eq!(missing(&list), false);
    // Removal from elsewhere drops the row.
    s.raw_delete("/api/sessions/a");
    bar.follow(&mut c, "session_deleted", |v| v["session_id"] == "a");
    assert_eq!(bar.view("all"), ["b", "draft"]);
    // The same-project rebind after the first turn still succeeds.
    c.send(json!({"action": "set_session_project", "session_id": "draft", "project_id": pid}));
    let set = bar.follow(&mut c, "session_project_set", |_| true);
    assert_eq!(set["data"]["ok"], true);
}

/// `get_run_state` answers whether a turn runs, for any session id.
#[test]
fn get_run_state_says_whether_a_turn_runs() {
    let s = TestServer::start();
    s.turn("done", "x", "y", &[]);
    s.append("busy", json!({"role": "user", "content": "working"}));
    let mut c = WsClient::connect(&s);
    for (id, running) in [
        (json!("busy"), true),
        (json!("done"), false),
        (json!("nope"), false),
        (json!(null), false),
    ] {
        c.send(json!({"action": "get_run_state", "session_id": id}));
        let r = c.expect("run_state", |_| true);
        assert_eq!(r["data"]["run_active"], running, "{id}: {r}");
        assert_eq!(r["data"]["session_id"], id, "{r}");
    }
}
