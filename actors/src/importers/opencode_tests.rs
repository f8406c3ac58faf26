//! The opencode reader on a database and a JSON tree written here in its
//! format.

use serde_json::json;

use super::*;

const T0: i64 = 1_762_070_400_000; // 2025-11-02T08:00:00Z, in ms

/// A database in WAL mode (as opencode keeps it) with `sessions`: (id,
/// parent, title, archived) and `messages`: (id, session, offset in
/// seconds, data, parts).
pub(crate) fn database(path: &Path, cwd: &str) {
    let db = rusqlite::Connection::open(path).unwrap();
    db.pragma_update(None, "journal_mode", "WAL").unwrap();
    db.execute_batch(
        "CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT NOT NULL, parent_id TEXT,
           slug TEXT NOT NULL, directory TEXT NOT NULL, title TEXT NOT NULL, version TEXT NOT NULL,
           time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, time_archived INTEGER);
         CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL,
           time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL);
         CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT NOT NULL, session_id TEXT NOT NULL,
           time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL);",
    )
    .unwrap();
    let session = |id: &str, parent: Option<&str>, title: &str, at: i64, archived: Option<i64>| {
        db.execute(
            "INSERT INTO session VALUES (?1, 'p1', ?2, 's', ?3, ?4, '1.0.0', ?5, ?5, ?6)",
            rusqlite::params![id, parent, cwd, title, T0 + at, archived],
        )
        .unwrap();
    };
    let message = |id: &str, sid: &str, at: i64, data: Value, parts: Vec<Value>| {
        db.execute(
            "INSERT INTO message VALUES (?1, ?2, ?3, ?3, ?4)",
            rusqlite::params![id, sid, T0 + at * 1000, data.to_string()],
        )
        .unwrap();
        for (n, p) in parts.into_iter().enumerate() {
            let pid = format!("prt_{id}_{n}");
            let data = if p == json!("broken") {
                "{not json".to_string()
            } else {
                p.to_string()
            };
            db.execute(
                "INSERT INTO part VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
                rusqlite::params![pid, id, sid, T0 + at * 1000, data],
            )
            .unwrap();
        }
    };
    let done = |at: i64| json!({"created": T0 + at * 1000, "completed": T0 + at * 1000 + 500});
    session("ses_main", None, "Fix the parser", 0, None);
    session(
        "ses_child",
        Some("ses_main"),
        "Look for tests (@general subagent)",
        5,
        None,
    );
    session("ses_old", None, "Old chat", -100, Some(T0));
    message(
        "msg_01u",
        "ses_main",
        1,
        json!({"role": "user", "time": {"created": T0 + 1000}, "agent": "build"}),
        vec![
            json!({"type": "text", "text": "Why does the parser fail?"}),
            json!({"type": "file", "mime": "text/plain", "filename": "lexer.rs", "url": "file:///w/lexer.rs"}),
        ],
    );
    message(
        "msg_02a",
        "ses_main",
        2,
        json!({"role": "assistant", "time": done(2), "parentID": "msg_01u", "modelID": "claude-sonnet-4",
               "providerID": "anthropic", "tokens": {"input": 900, "output": 40}}),
        vec![
            json!({"type": "step-start"}),
            json!({"type": "reasoning", "text": "Read the lexer first."}),
            json!({"type": "tool", "callID": "call_1", "tool": "read",
                   "state": {"status": "completed", "input": {"filePath": "lexer.rs"},
                             "output": "fn lex() {}", "title": "lexer.rs",
                             "time": {"start": T0 + 2100, "end": T0 + 2200}}}),
            json!({"type": "tool", "callID": "call_2", "tool": "task",
                   "state": {"status": "completed", "input": {"description": "find tests"},
                             "output": "none", "metadata": {"sessionId": "ses_child"}}}),
            json!({"type": "text", "text": "The lexer never returns EOF."}),
            json!({"type": "step-finish", "reason": "stop"}),
            json!("broken"),
        ],
    );
    message(
        "msg_03u",
        "ses_main",
        10,
        json!({"role": "user", "time": {"created": T0 + 10_000}}),
        vec![json!({"type": "text", "text": "Fix it"})],
    );
    message(
        "msg_03v",
        "ses_main",
        10,
        json!({"role": "assistant", "time": done(10), "parentID": "msg_03u", "summary": true}),
        vec![json!({"type": "compaction", "auto": true})],
    );
    message(
        "msg_04a",
        "ses_main",
        11,
        json!({"role": "assistant", "time": {"created": T0 + 11_000}, "parentID": "msg_03u"}),
        vec![json!({"type": "tool", "callID": "call_3", "tool": "edit",
                    "state": {"status": "running", "input": {"filePath": "lexer.rs"}}})],
    );
    message(
        "msg_05u",
        "ses_child",
        6,
        json!({"role": "user", "time": {"created": T0 + 6000}}),
        vec![json!({"type": "text", "text": "find tests"})],
    );
    message(
        "msg_06a",
        "ses_child",
        7,
        json!({"role": "assistant", "time": done(7), "parentID": "msg_05u"}),
        vec![json!({"type": "text", "text": "none"})],
    );
}

fn read(path: &Path) -> (Vec<Read>, Skipped) {
    let mut out = Vec::new();
    let mut skipped = Skipped::default();
    read_database(path, &mut skipped, |r| {
        out.push(r);
        true
    })
    .unwrap();
    (out, skipped)
}

#[test]
fn every_session_of_the_database_with_its_turns() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(DATABASE);
    database(&path, "/w");
    assert!(is_store(&path));
    let (reads, skipped) = read(&path);
    let mut sessions: Vec<(Header, Vec<ImportedTurn>)> = Vec::new();
    for r in reads {
        match r {
            Read::Begin(h) => sessions.push((h, Vec::new())),
            Read::Turn(t) => sessions.last_mut().unwrap().1.push(t),
        }
    }
    let ids: Vec<&str> = sessions
        .iter()
        .map(|(h, _)| h.session_id.as_str())
        .collect();
    assert_eq!(
        ids,
        vec![
            "opencode-ses_old",
            "opencode-ses_main",
            "opencode-ses_child"
        ]
    );
    assert!(sessions[0].0.archived);
    let (main, turns) = &sessions[1];
    assert_eq!(main.title.as_deref(), Some("Fix the parser"));
    assert_eq!(main.cwd.as_deref(), Some(Path::new("/w")));
    assert_eq!(main.created_at, Some(T0 as f64 / 1000.0));
    assert_eq!(turns.len(), 2);

    let t1 = &turns[0];
    assert!(t1.complete);
    let roles: Vec<Role> = t1.nodes.iter().map(|n| n.role).collect();
    assert_eq!(
        roles,
        vec![Role::User, Role::Assistant, Role::Tool, Role::Tool]
    );
    assert_eq!(t1.nodes[0].content, json!("Why does the parser fail?"));
    assert_eq!(t1.nodes[0].source["parts"][0]["type"], "file");
    let reply = &t1.nodes[1];
    assert_eq!(reply.content, json!("The lexer never returns EOF."));
    assert_eq!(reply.metadata["model"], "claude-sonnet-4");
    assert_eq!(reply.metadata["usage"]["input"], 900);
    assert_eq!(reply.source["reasoning"][0], "Read the lexer first.");
    let read_tool = &t1.nodes[2];
    assert_eq!(read_tool.name.as_deref(), Some("read"));
    assert_eq!(read_tool.caller.as_deref(), Some("msg_02a"));
    assert_eq!(read_tool.content["filePath"], "lexer.rs");
    assert_eq!(read_tool.output, Some(json!("fn lex() {}")));
    assert_eq!(t1.nodes[3].source["subagent_session"], "opencode-ses_child");
    assert_eq!(
        skipped.by_reason.get("a part that is not a JSON object"),
        Some(&1)
    );

    // The second turn: a compaction, then a tool still running: not over.
    assert!(turns[1]
        .nodes
        .iter()
        .any(|n| n.role == Role::System && n.source["kind"] == "compaction"));
    assert!(!turns[1].complete);
    assert_eq!(turns[1].follows.as_deref(), Some("msg_02a"));

    let (child, child_turns) = &sessions[2];
    assert_eq!(child.parent_session.as_deref(), Some("opencode-ses_main"));
    assert!(child_turns[0].complete);
}

#[test]
fn the_older_json_tree_holds_the_same_records() {
    let dir = tempfile::tempdir().unwrap();
    let storage = dir.path().join("storage");
    let write = |rel: String, v: Value| {
        let p = storage.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, v.to_string()).unwrap();
    };
    let info = storage.join("session/p1/ses_a.json");
    write(
        "session/p1/ses_a.json".into(),
        json!({"id": "ses_a", "projectID": "p1", "directory": "/w", "title": "Tree",
               "time": {"created": T0, "updated": T0}}),
    );
    write(
        "message/ses_a/msg_1.json".into(),
        json!({"id": "msg_1", "sessionID": "ses_a", "role": "user", "time": {"created": T0}}),
    );
    write(
        "part/msg_1/prt_1.json".into(),
        json!({"id": "prt_1", "messageID": "msg_1", "type": "text", "text": "hello"}),
    );
    write(
        "message/ses_a/msg_2.json".into(),
        json!({"id": "msg_2", "sessionID": "ses_a", "role": "assistant",
               "time": {"created": T0 + 1000, "completed": T0 + 2000}}),
    );
    write(
        "part/msg_2/prt_2.json".into(),
        json!({"id": "prt_2", "messageID": "msg_2", "type": "text", "text": "hi there"}),
    );
    assert!(is_store(&info));
    let h = header(&info).unwrap();
    assert_eq!(
        (h.session_id.as_str(), h.title.as_deref()),
        ("opencode-ses_a", Some("Tree"))
    );
    let mut skipped = Skipped::default();
    let last = read_tree(&info, &mut skipped, |_| true).unwrap().unwrap();
    assert!(last.complete, "its reply finished");
    assert_eq!(last.nodes[0].content, json!("hello"));
    assert_eq!(last.nodes[1].content, json!("hi there"));
}

#[test]
fn a_step_that_ended_in_tool_calls_does_not_end_the_turn() {
    let mut s = Session::new("db");
    let user = json!({"id": "msg_u", "role": "user", "time": {"created": T0}});
    assert!(s
        .message(user, vec![json!({"type": "text", "text": "run it"})])
        .is_none());
    // The tool step is complete, but its `finish` says more comes: the
    // answer's message is created a moment later.
    let step = json!({"id": "msg_a1", "role": "assistant", "finish": "tool-calls",
        "time": {"created": T0 + 10, "completed": T0 + 20}});
    let tool = json!({"id": "prt_t", "type": "tool", "tool": "bash", "callID": "c1",
        "state": {"status": "completed", "input": {"command": "ls"}, "output": "a"}});
    assert!(s.message(step, vec![tool]).is_none());
    assert!(!s.done, "the turn goes on after a tool step");
    let answer = json!({"id": "msg_a2", "role": "assistant", "finish": "stop",
        "time": {"created": T0 + 30, "completed": T0 + 40}});
    assert!(s
        .message(answer, vec![json!({"type": "text", "text": "done"})])
        .is_none());
    let turn = s.finish().unwrap();
    assert!(turn.complete, "the answer ended it");
    assert_eq!(turn.nodes.len(), 4);
}
