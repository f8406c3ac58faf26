//! The Codex reader on a rollout written here in its format.

use serde_json::{json, Value};

use super::*;

pub(crate) const ID: &str = "0199a2b3-c4d5-7e6f-8a9b-0c1d2e3f4a5b";

fn at(second: u32) -> String {
    format!("2025-09-10T08:00:{second:02}.000Z")
}

fn item(second: u32, payload: Value) -> String {
    json!({"timestamp": at(second), "type": "response_item", "payload": payload}).to_string()
}

fn event(second: u32, payload: Value) -> String {
    json!({"timestamp": at(second), "type": "event_msg", "payload": payload}).to_string()
}

fn said(role: &str, kind: &str, text: &str) -> Value {
    json!({"type": "message", "role": role, "content": [{"type": kind, "text": text}]})
}

/// Turn 1 with reasoning and a shell call, turn 2, a rollback of turn 2,
/// turn 3 in its place, a compaction, a name, a malformed line.
pub(crate) fn rollout(cwd: &str) -> String {
    [
        json!({"timestamp": at(0), "type": "session_meta", "payload": {"id": ID, "timestamp": at(0), "cwd": cwd, "originator": "codex_cli_rs", "cli_version": "0.46.0"}}).to_string(),
        item(0, said("user", "input_text", "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>")),
        json!({"timestamp": at(1), "type": "turn_context", "payload": {"cwd": cwd, "model": "gpt-5-codex"}}).to_string(),
        item(1, said("user", "input_text", "List the files")),
        event(1, json!({"type": "user_message", "message": "List the files"})),
        item(2, json!({"type": "reasoning", "summary": [{"type": "summary_text", "text": "Use ls."}]})),
        item(3, json!({"type": "function_call", "name": "shell", "arguments": "{\"command\":[\"ls\"]}", "call_id": "call_A"})),
        item(4, json!({"type": "function_call_output", "call_id": "call_A", "output": "a.rs\nb.rs"})),
        item(5, said("assistant", "output_text", "Two files: a.rs and b.rs.")),
        event(5, json!({"type": "token_count", "info": {"total_token_usage": {"input_tokens": 900}}})),
        event(5, json!({"type": "task_complete", "last_agent_message": "Two files"})),
        item(10, said("user", "input_text", "Delete b.rs")),
        item(11, said("assistant", "output_text", "Deleted.")),
        event(11, json!({"type": "task_complete"})),
        event(12, json!({"type": "thread_rolled_back", "num_turns": 1})),
        item(20, said("user", "input_text", "Rename b.rs to c.rs")),
        item(21, said("assistant", "output_text", "Renamed.")),
        event(21, json!({"type": "task_complete"})),
        json!({"timestamp": at(30), "type": "compacted", "payload": {"message": "Summary so far"}}).to_string(),
        "{oops".to_string(),
        event(31, json!({"type": "thread_name_updated", "thread_name": "File chores"})),
        item(40, said("user", "input_text", "Thanks")),
        item(41, said("assistant", "output_text", "You're welcome.")),
        event(41, json!({"type": "task_complete"})),
    ]
    .join("\n")
        + "\n"
}

#[test]
fn a_rollout_becomes_turns_and_a_rollback_a_fork() {
    let path = Path::new("/x/sessions/2025/09/10/rollout-2025-09-10T08-00-00-0199a2b3-c4d5-7e6f-8a9b-0c1d2e3f4a5b.jsonl");
    let mut parser = Parser::new(path);
    let mut turns = Vec::new();
    let last = parser
        .read(std::io::Cursor::new(rollout("/w")), |t| {
            turns.push(t);
            true
        })
        .unwrap();
    turns.extend(last);
    assert_eq!(turns.len(), 4);
    assert!(turns.iter().all(|t| t.complete));
    let t1 = &turns[0];
    let shape: Vec<_> = t1.nodes.iter().map(|n| (n.id.as_str(), n.role)).collect();
    assert_eq!(
        shape,
        [
            ("l2", Role::System),
            ("l4", Role::User),
            ("l7-a", Role::Assistant),
            ("l7", Role::Tool),
            ("l9", Role::Assistant)
        ]
    );
    assert_eq!(t1.nodes[3].content, json!({"command": ["ls"]}));
    assert_eq!(t1.nodes[3].caller.as_deref(), Some("l7-a"));
    assert_eq!(t1.nodes[3].output, Some(json!("a.rs\nb.rs")));
    assert_eq!(t1.nodes[4].metadata["model"], "gpt-5-codex");
    assert_eq!(t1.nodes[2].source["reasoning"], "Use ls.");
    assert_eq!(t1.ended_at, parse_time(&at(5)).unwrap());
    // Turn 2 follows turn 1; turn 3, after the rollback, follows turn 1
    // too (a branch); turn 4 follows turn 3 across the compaction.
    assert_eq!(turns[1].follows.as_deref(), Some("l9"));
    assert_eq!(turns[2].follows.as_deref(), Some("l9"));
    assert_eq!(turns[3].follows.as_deref(), Some("l17"));
    assert!(turns[2]
        .nodes
        .iter()
        .any(|n| n.source.get("kind") == Some(&json!("compaction"))));
    assert_eq!(parser.skipped.by_reason.get("not JSON"), Some(&1));
}

#[test]
fn the_header_reads_the_first_meta_the_name_and_a_compressed_file() {
    let dir = tempfile::tempdir().unwrap();
    let day = dir.path().join("archived_sessions");
    std::fs::create_dir_all(&day).unwrap();
    let path = day.join(format!("rollout-2025-09-10T08-00-00-{ID}.jsonl.zst"));
    let packed = zstd::stream::encode_all(rollout("/w").as_bytes(), 3).unwrap();
    std::fs::write(&path, packed).unwrap();
    let (h, archived) = header(&path).unwrap();
    assert_eq!(h.session_id, format!("codex-{ID}"));
    assert_eq!(h.title.as_deref(), Some("File chores"));
    assert!(archived);
    assert_eq!(h.cwd.as_deref(), Some(Path::new("/w")));
    let mut parser = Parser::new(&path);
    let mut n = 0;
    parser
        .read(open(&path).unwrap(), |_| {
            n += 1;
            true
        })
        .unwrap();
    assert_eq!(n, 3, "three turns handed on, the last returned");
}

#[test]
fn a_spawned_sub_agent_names_its_parent_thread() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir
        .path()
        .join("sessions/2025/09/10/rollout-2025-09-10T08-00-00-0199a2b3-0000-7000-8000-0000000000c1.jsonl");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let meta = json!({"timestamp": at(0), "type": "session_meta", "payload": {
        "id": "0199a2b3-0000-7000-8000-0000000000c1", "cwd": "/w",
        "source": {"subagent": {"thread_spawn": {"parent_thread_id": ID, "depth": 1}}}}});
    std::fs::write(&file, meta.to_string() + "\n").unwrap();
    let (h, _) = header(&file).unwrap();
    assert_eq!(h.parent_session, Some(session_id(ID)));
}
