//! The Claude Code reader on a transcript written here in its format.

use serde_json::{json, Value};

use super::*;

const SID: &str = "5f0c9a1e-0000-4000-8000-000000000001";

fn rec(kind: &str, uuid: &str, parent: Option<&str>, secs: u32, extra: Value) -> String {
    let mut v = json!({
        "type": kind,
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": SID,
        "timestamp": format!("2025-06-01T10:{:02}:{:02}.000Z", secs / 60, secs % 60),
        "cwd": "/home/u/proj",
        "version": "2.0.1",
        "isSidechain": false,
    });
    if let (Value::Object(m), Value::Object(e)) = (&mut v, extra) {
        m.extend(e);
    }
    v.to_string()
}

fn said(text: &str) -> Value {
    json!({"message": {"role": "user", "content": text}})
}

fn reply(id: &str, blocks: Value, stop: Option<&str>) -> Value {
    json!({"message": {"id": id, "role": "assistant", "model": "claude-sonnet-4-5",
        "content": blocks, "stop_reason": stop, "usage": {"input_tokens": 10, "output_tokens": 5}}})
}

/// Two turns, a third that forks from the first, a compaction, a fourth,
/// titles, a malformed line and a last line cut short.
pub(crate) fn transcript() -> String {
    let lines = [
        json!({"type": "file-history-snapshot", "messageId": "u1", "snapshot": {}}).to_string(),
        rec("user", "u1", None, 0, said("Fix the bug in main.rs")),
        rec(
            "assistant",
            "a1",
            Some("u1"),
            1,
            reply(
                "msg_1",
                json!([{"type": "thinking", "thinking": "Read it first."}]),
                None,
            ),
        ),
        rec(
            "assistant",
            "a2",
            Some("a1"),
            2,
            reply(
                "msg_1",
                json!([{"type": "text", "text": "Looking at it."}]),
                None,
            ),
        ),
        rec(
            "assistant",
            "a3",
            Some("a2"),
            3,
            reply(
                "msg_1",
                json!([{"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "main.rs"}}]),
                Some("tool_use"),
            ),
        ),
        rec(
            "user",
            "r1",
            Some("a3"),
            4,
            json!({"message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "fn main() {}"}]}, "toolUseResult": {"type": "text"}}),
        ),
        rec(
            "assistant",
            "a4",
            Some("r1"),
            5,
            reply(
                "msg_2",
                json!([{"type": "text", "text": "Fixed."}]),
                Some("end_turn"),
            ),
        ),
        rec(
            "system",
            "s1",
            Some("a4"),
            6,
            json!({"subtype": "turn_duration", "durationMs": 6000}),
        ),
        rec("user", "u2", Some("s1"), 7, said("Now add tests")),
        rec(
            "assistant",
            "a5",
            Some("u2"),
            8,
            reply(
                "msg_3",
                json!([{"type": "text", "text": "Tests added."}]),
                Some("end_turn"),
            ),
        ),
        rec("user", "u3", Some("a4"), 9, said("Now add docs instead")),
        rec(
            "assistant",
            "a6",
            Some("u3"),
            10,
            reply(
                "msg_4",
                json!([{"type": "text", "text": "Docs added."}]),
                Some("end_turn"),
            ),
        ),
        rec(
            "system",
            "c1",
            None,
            11,
            json!({"subtype": "compact_boundary", "content": "Conversation compacted", "logicalParentUuid": "a6"}),
        ),
        rec(
            "user",
            "cs",
            Some("c1"),
            12,
            json!({"isCompactSummary": true, "message": {"role": "user", "content": "Summary: docs were added."}}),
        ),
        rec("user", "u4", Some("cs"), 13, said("continue")),
        rec(
            "assistant",
            "a7",
            Some("u4"),
            14,
            reply(
                "msg_5",
                json!([{"type": "text", "text": "Continuing."}]),
                Some("end_turn"),
            ),
        ),
        "{not json".to_string(),
        json!({"type": "custom-title", "customTitle": "My bugfix session", "sessionId": SID})
            .to_string(),
        json!({"type": "ai-title", "aiTitle": "An AI title", "sessionId": SID}).to_string(),
    ];
    let mut text = lines.join("\n");
    text.push('\n');
    text.push_str(r#"{"type":"user","mess"#);
    text
}

fn write(dir: &std::path::Path) -> std::path::PathBuf {
    let folder = dir.join("-home-u-proj");
    std::fs::create_dir_all(&folder).unwrap();
    let path = folder.join(format!("{SID}.jsonl"));
    std::fs::write(&path, transcript()).unwrap();
    path
}

#[test]
fn a_transcript_becomes_turns_with_their_fork() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path());
    let mut parser = Parser::new(&path);
    let mut turns = Vec::new();
    let last = parser
        .read(std::io::Cursor::new(transcript()), |t| {
            turns.push(t);
            true
        })
        .unwrap();
    turns.extend(last);
    assert_eq!(turns.len(), 4);
    let users: Vec<_> = turns.iter().map(|t| t.user_id().unwrap()).collect();
    assert_eq!(users, ["u1", "u2", "u3", "u4"]);
    assert!(turns.iter().all(|t| t.complete));

    // Turn 1: the prompt (with the snapshot kept), one assistant node for
    // the three records of msg_1 (thinking kept), its tool call with the
    // result, then msg_2.
    let t1 = &turns[0];
    let roles: Vec<_> = t1.nodes.iter().map(|n| (n.id.as_str(), n.role)).collect();
    assert_eq!(
        roles,
        [
            ("u1", Role::User),
            ("a1", Role::Assistant),
            ("toolu_1", Role::Tool),
            ("a4", Role::Assistant)
        ]
    );
    assert!(t1.nodes[0].source["records"][0]["type"] == "file-history-snapshot");
    assert_eq!(t1.nodes[1].content, json!("Looking at it."));
    assert_eq!(t1.nodes[1].source["thinking"], json!("Read it first."));
    assert_eq!(t1.nodes[1].metadata["model"], json!("claude-sonnet-4-5"));
    assert_eq!(t1.nodes[2].caller.as_deref(), Some("a1"));
    assert_eq!(t1.nodes[2].name.as_deref(), Some("Read"));
    assert_eq!(t1.nodes[2].output, Some(json!("fn main() {}")));
    assert_eq!(t1.follows, None);
    assert_eq!(t1.ended_at, parse_time("2025-06-01T10:00:05Z").unwrap());

    // Turn 2 follows turn 1 (through the turn_duration record); turn 3
    // forks from turn 1's reply; turn 4 follows turn 3 across the
    // compaction, which comes between them: its system notes open turn 4.
    assert_eq!(turns[1].follows.as_deref(), Some("a4"));
    assert_eq!(turns[2].follows.as_deref(), Some("a4"));
    let t3: Vec<_> = turns[2].nodes.iter().map(|n| n.id.as_str()).collect();
    assert_eq!(t3, ["u3", "a6"]);
    let t4: Vec<_> = turns[3]
        .nodes
        .iter()
        .map(|n| n.id.as_str())
        .take(2)
        .collect();
    assert_eq!(t4, ["c1", "cs"]);
    assert_eq!(turns[3].nodes[0].source["kind"], json!("compaction"));
    assert_eq!(turns[3].follows.as_deref(), Some("a6"));

    assert_eq!(parser.skipped.by_reason.get("not JSON"), Some(&1));
    assert_eq!(
        parser.skipped.by_reason.get("an unfinished last line"),
        Some(&1)
    );
    assert_eq!(parser.skipped.first[0].line, 17);
}

#[test]
fn the_header_takes_the_users_title_over_the_tools() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path());
    let h = header(&path).unwrap();
    assert_eq!(h.session_id, format!("claude-code-{SID}"));
    assert_eq!(h.title.as_deref(), Some("My bugfix session"));
    assert!(h.user_titled);
    assert_eq!(h.cwd.as_deref(), Some(std::path::Path::new("/home/u/proj")));
    assert_eq!(h.created_at, parse_time("2025-06-01T10:00:00Z"));
    assert!(h.parent_session.is_none());

    let sub = dir
        .path()
        .join(SID)
        .join("subagents")
        .join("agent-a1b2.jsonl");
    std::fs::create_dir_all(sub.parent().unwrap()).unwrap();
    std::fs::write(&sub, rec("user", "x1", None, 0, said("look around"))).unwrap();
    let h = header(&sub).unwrap();
    assert_eq!(h.session_id, format!("claude-code-{SID}-agent-a1b2"));
    assert_eq!(h.parent_session, Some(format!("claude-code-{SID}")));
}

#[test]
fn an_unfinished_turn_is_not_complete() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.jsonl");
    let text = [
        rec("user", "u1", None, 0, said("hi")),
        rec(
            "assistant",
            "a1",
            Some("u1"),
            1,
            reply(
                "m1",
                json!([{"type": "tool_use", "id": "toolu_9", "name": "Bash", "input": {}}]),
                Some("tool_use"),
            ),
        ),
    ]
    .join("\n");
    let mut parser = Parser::new(&path);
    let last = parser
        .read(std::io::Cursor::new(text), |_| true)
        .unwrap()
        .unwrap();
    assert!(!last.complete);
}
