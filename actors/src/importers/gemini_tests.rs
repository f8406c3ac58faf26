//! The Gemini CLI reader on recordings written here in its format.

use serde_json::{json, Value};

use super::*;

pub(crate) const ID: &str = "6b1f2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d";

fn at(second: u32) -> String {
    format!("2025-11-02T09:00:{second:02}.000Z")
}

fn user(id: &str, second: u32, text: &str) -> String {
    json!({"id": id, "timestamp": at(second), "type": "user", "content": [{"text": text}]})
        .to_string()
}

fn gemini(id: &str, second: u32, text: &str, calls: Value) -> String {
    json!({"id": id, "timestamp": at(second), "type": "gemini", "content": text,
           "model": "gemini-2.5-pro", "toolCalls": calls,
           "thoughts": [{"subject": "Plan", "description": "Look first.", "timestamp": at(second)}],
           "tokens": {"input": 100, "output": 20, "cached": 0, "total": 120}})
    .to_string()
}

/// Turn 1 with a tool call written twice (the call, then its result),
/// turn 2, a rewind to turn 2's prompt, turn 3 in its place, an info note,
/// a compaction, a title, a malformed line, and turn 4 still open.
pub(crate) fn recording(cwd: &str) -> String {
    let call = |result: Value| {
        json!([{"id": "read_file-1", "name": "read_file", "args": {"path": "a.rs"},
                "result": result, "status": "success", "timestamp": at(3)}])
    };
    [
        json!({"sessionId": ID, "projectHash": "abc123", "startTime": at(0), "lastUpdated": at(0),
               "directories": [cwd]})
        .to_string(),
        user("m1", 1, "What is in a.rs?"),
        gemini("m2", 2, "", call(Value::Null)),
        gemini("m2", 3, "It defines main.", call(json!([{"functionResponse": {"id": "read_file-1", "name": "read_file", "response": {"output": "fn main() {}"}}}]))),
        user("m3", 10, "Delete it"),
        gemini("m4", 11, "Deleted.", json!([])),
        json!({"$rewindTo": "m3"}).to_string(),
        user("m5", 20, "Rename it instead"),
        gemini("m6", 21, "Renamed.", json!([])),
        json!({"id": "m7", "timestamp": at(22), "type": "info", "content": "Checkpoint saved."}).to_string(),
        // A start or resume loads the conversation (its own records):
        // nothing; `/compress` replaces it with messages of its own.
        json!({"$set": {"messages": [{"id": "m5"}, {"id": "m2_response"}]}}).to_string(),
        json!({"$set": {"messages": [{"id": "s1", "type": "user",
            "content": [{"text": "<state_snapshot>a.rs</state_snapshot>"}]}]}}).to_string(),
        json!({"$set": {"summary": "Chores on a.rs", "lastUpdated": at(22)}}).to_string(),
        "{oops".to_string(),
        user("m8", 30, "Thanks"),
        gemini("m9", 31, "You're welcome.", json!([])),
    ]
    .join("\n")
        + "\n"
}

fn read_all(text: &str, path: &Path) -> (Vec<ImportedTurn>, Option<ImportedTurn>, Skipped) {
    let mut parser = Parser::new(path);
    let mut turns = Vec::new();
    let last = parser
        .read(text.as_bytes(), |t| {
            turns.push(t);
            true
        })
        .unwrap();
    (turns, last, parser.skipped)
}

#[test]
fn a_recording_becomes_turns_and_a_rewind_a_fork() {
    let path = Path::new("/g/tmp/abc123/chats/session-2025-11-02T09-00-6b1f2c3d.jsonl");
    let (turns, last, skipped) = read_all(&recording("/w"), path);
    assert_eq!(turns.len(), 3, "three closed turns before the open one");

    // Turn 1: the upserted reply is taken in its last version, with its call.
    let t1 = &turns[0];
    assert_eq!(t1.follows, None);
    let roles: Vec<Role> = t1.nodes.iter().map(|n| n.role).collect();
    assert_eq!(roles, vec![Role::User, Role::Assistant, Role::Tool]);
    assert_eq!(t1.nodes[0].content, json!("What is in a.rs?"));
    assert_eq!(t1.nodes[1].content, json!("It defines main."));
    assert_eq!(t1.nodes[1].metadata["model"], "gemini-2.5-pro");
    assert_eq!(t1.nodes[1].metadata["usage"]["total"], 120);
    assert!(t1.nodes[1].source.contains_key("thoughts"));
    let tool = &t1.nodes[2];
    assert_eq!(
        (tool.id.as_str(), tool.caller.as_deref()),
        ("m2.0", Some("m2"))
    );
    assert_eq!(tool.name.as_deref(), Some("read_file"));
    assert_eq!(tool.content["path"], "a.rs");
    assert!(tool
        .output
        .as_ref()
        .unwrap()
        .to_string()
        .contains("fn main"));

    // Turn 2 is kept; turn 3 follows what turn 2 followed (the rewind).
    assert_eq!(turns[1].nodes[0].id, "m3");
    assert_eq!(turns[1].follows.as_deref(), Some("m2"));
    assert_eq!(turns[2].nodes[0].id, "m5");
    assert_eq!(
        turns[2].follows.as_deref(),
        Some("m2"),
        "a branch off turn 1"
    );
    // The info note and the compaction go with turn 3.
    let kinds: Vec<&str> = turns[2]
        .nodes
        .iter()
        .filter_map(|n| n.source.get("kind").and_then(Value::as_str))
        .collect();
    assert_eq!(kinds, vec!["info", "compaction"]);

    // Turn 4 is open at the end of the file, following turn 3.
    let last = last.expect("the last turn");
    assert!(!last.complete);
    assert_eq!(last.follows.as_deref(), Some("m6"));
    assert_eq!(skipped.by_reason.get("not JSON"), Some(&1));

    let dir = tempfile::tempdir().unwrap();
    let chats = dir.path().join("tmp/abc123/chats");
    std::fs::create_dir_all(&chats).unwrap();
    let file = chats.join("session-2025-11-02T09-00-6b1f2c3d.jsonl");
    std::fs::write(&file, recording("/w")).unwrap();
    let h = header(&file).unwrap();
    assert_eq!(h.session_id, format!("gemini-{ID}"));
    assert_eq!(h.title.as_deref(), Some("Chores on a.rs"));
    assert!(!h.user_titled);
    assert_eq!(h.cwd.as_deref(), Some(Path::new("/w")));
    assert_eq!(h.parent_session, None);
    assert!(is_chat(&file));
}

#[test]
fn sub_agents_and_the_older_whole_file_format() {
    let dir = tempfile::tempdir().unwrap();
    let chats = dir.path().join("tmp/abc123/chats");
    let sub = chats.join(ID).join("sub-1.jsonl");
    std::fs::create_dir_all(sub.parent().unwrap()).unwrap();
    std::fs::write(
        &sub,
        json!({"sessionId": "sub-1", "projectHash": "abc123", "kind": "subagent"}).to_string()
            + "\n"
            + &user("s1", 1, "Find the tests")
            + "\n",
    )
    .unwrap();
    let h = header(&sub).unwrap();
    assert_eq!(h.session_id, "gemini-sub-1");
    assert_eq!(h.parent_session, Some(format!("gemini-{ID}")));
    assert!(is_chat(&sub));

    let legacy = chats.join("session-2025-01-01T00-00-aaaa.json");
    std::fs::write(
        &legacy,
        json!({"sessionId": "old-1", "projectHash": "abc123", "startTime": at(0),
        "summary": "Old chat",
        "messages": [
            {"id": "o1", "timestamp": at(1), "type": "user", "content": "Hi"},
            {"id": "o2", "timestamp": at(2), "type": "gemini", "content": "Hello"},
            {"id": "o3", "timestamp": at(3), "type": "user", "content": "Bye"},
        ]})
        .to_string(),
    )
    .unwrap();
    let h = header(&legacy).unwrap();
    assert_eq!(
        (h.session_id.as_str(), h.title.as_deref()),
        ("gemini-old-1", Some("Old chat"))
    );
    let mut parser = Parser::new(&legacy);
    let mut turns = Vec::new();
    let last = read_legacy(&mut parser, &legacy, |t| {
        turns.push(t);
        true
    })
    .unwrap();
    assert_eq!(turns.len(), 1);
    assert_eq!(turns[0].nodes.len(), 2);
    assert_eq!(last.unwrap().nodes[0].content, json!("Bye"));

    // A file that is not a recording is counted, not imported.
    let other = chats.join("notes.json");
    std::fs::write(&other, "[1, 2]").unwrap();
    let mut parser = Parser::new(&other);
    assert!(read_legacy(&mut parser, &other, |_| true)
        .unwrap()
        .is_none());
    assert_eq!(parser.skipped.total(), 1);
}
