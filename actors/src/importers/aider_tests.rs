//! The Aider reader on a chat history written here in its format.

use serde_json::json;

use super::*;

/// Two sessions: the first with a two-line prompt, a reply holding a
/// fenced `> ` line, Aider's output after it, and a second turn; the
/// second session opened by a `/add` with only output, then a prompt
/// still being answered.
pub(crate) fn history() -> String {
    [
        "",
        "# aider chat started at 2024-05-01 10:00:00",
        "",
        "> Aider v0.50.0",
        "> Main model: gpt-4o with diff edit format",
        "",
        "#### add a health endpoint  ",
        "#### with a test",
        "",
        "Here is the change:",
        "",
        "```python",
        "> not Aider's output: a line of the code",
        "```",
        "",
        "> Applied edit to app.py  ",
        "> Commit 1a2b3c4 feat: health endpoint  ",
        "",
        "#### thanks",
        "",
        "You're welcome.",
        "",
        "# aider chat started at 2024-05-02 09:30:00",
        "",
        "#### /add x.py",
        "",
        "> Added x.py to the chat  ",
        "",
        "#### explain x.py",
        "",
        "It prints hello.",
    ]
    .join("\n")
        + "\n"
}

#[test]
fn each_session_of_the_file_becomes_its_own_with_its_turns() {
    let path = Path::new("/repo/.aider.chat.history.md");
    let mut parser = Parser::new(path);
    let mut events = Vec::new();
    let last = parser
        .read_events(history().as_bytes(), |e| {
            events.push(e);
            true
        })
        .unwrap();
    let begins: Vec<&Header> = events
        .iter()
        .filter_map(|e| match e {
            Event::Begin(h) => Some(h),
            Event::Turn(_) => None,
        })
        .collect();
    assert_eq!(begins.len(), 2);
    assert!(
        begins[0].session_id.starts_with("aider-")
            && begins[0].session_id.ends_with("-20240501100000")
    );
    assert_ne!(begins[0].session_id, begins[1].session_id);
    assert_eq!(begins[0].cwd.as_deref(), Some(Path::new("/repo")));
    assert_eq!(begins[0].created_at, Some(1_714_557_600.0));
    let turns: Vec<&ImportedTurn> = events
        .iter()
        .filter_map(|e| match e {
            Event::Turn(t) => Some(t),
            Event::Begin(_) => None,
        })
        .collect();
    assert_eq!(
        turns.len(),
        3,
        "two in the first session, one in the second"
    );

    let t1 = turns[0];
    let roles: Vec<Role> = t1.nodes.iter().map(|n| n.role).collect();
    assert_eq!(
        roles,
        vec![Role::System, Role::User, Role::Assistant, Role::Tool]
    );
    assert_eq!(
        t1.nodes[0].content,
        json!("Aider v0.50.0\nMain model: gpt-4o with diff edit format")
    );
    assert_eq!(
        t1.nodes[1].content,
        json!("add a health endpoint\nwith a test")
    );
    let reply = t1.nodes[2].content.as_str().unwrap();
    assert!(reply.starts_with("Here is the change:"), "{reply}");
    assert!(
        reply.contains("> not Aider's output"),
        "a fenced line is the reply's: {reply}"
    );
    let out = &t1.nodes[3];
    assert_eq!(out.caller.as_deref(), Some(t1.nodes[2].id.as_str()));
    assert_eq!(out.name.as_deref(), Some("aider"));
    assert_eq!(
        out.output,
        Some(json!(
            "Applied edit to app.py\nCommit 1a2b3c4 feat: health endpoint"
        ))
    );
    assert_eq!(turns[1].follows.as_deref(), Some(t1.nodes[2].id.as_str()));
    assert_eq!(turns[1].nodes[1].content, json!("You're welcome."));

    // The second session starts afresh: its first turn follows nothing.
    let t3 = turns[2];
    assert_eq!(t3.follows, None);
    assert_eq!(t3.nodes[0].content, json!("/add x.py"));
    assert_eq!(
        t3.nodes[1].role,
        Role::System,
        "output before any reply: a note"
    );
    let last = last.expect("the last turn");
    assert!(!last.complete);
    assert_eq!(last.nodes[0].content, json!("explain x.py"));
    assert_eq!(last.nodes[1].content, json!("It prints hello."));
    assert_eq!(parser.skipped.total(), 0);
}

#[test]
fn lines_outside_a_session_and_broken_text_are_counted() {
    let path = Path::new("/repo/.aider.chat.history.md");
    let mut parser = Parser::new(path);
    let mut text = b"stray line\n# aider chat started at not a time\n#### hi\n".to_vec();
    text.extend_from_slice(b"# aider chat started at 2024-05-01 10:00:00\n#### ok \xff\n");
    let mut n = 0;
    let last = parser
        .read_events(text.as_slice(), |_| {
            n += 1;
            true
        })
        .unwrap();
    assert_eq!(n, 1, "one session begins");
    assert!(last.is_none());
    assert_eq!(
        parser.skipped.by_reason.get("a line outside any session"),
        Some(&2)
    );
    assert_eq!(
        parser
            .skipped
            .by_reason
            .get("a session start without a time"),
        Some(&1)
    );
    assert_eq!(parser.skipped.by_reason.get("not UTF-8"), Some(&1));
    assert!(is_history(path));
}
