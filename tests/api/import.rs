//! Another tool's history imported: a Claude Code transcript written here
//! in its format (prompts, a message in several records, a tool call and
//! its result, an edit that forks, a compaction, a sub-agent, titles,
//! malformed and cut lines) becomes sessions with one commit per turn at
//! the turn's own time and the fork as a branch; imported again, nothing
//! changes; grown, exactly its new turns are added.

use std::path::Path;

use serde_json::{json, Value};

use crate::helpers::{git, TestServer};

const SID: &str = "0b7e4d52-1111-4222-8333-444455556666";

fn line(
    kind: &str,
    uuid: &str,
    parent: Option<&str>,
    second: u32,
    cwd: &Path,
    more: Value,
) -> String {
    let mut v = json!({
        "type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": SID,
        "timestamp": format!("2025-07-04T09:30:{second:02}.000Z"),
        "cwd": cwd, "version": "2.0.14", "isSidechain": false, "userType": "external",
    });
    v.as_object_mut()
        .unwrap()
        .extend(more.as_object().unwrap().clone());
    v.to_string()
}

fn prompt(text: &str) -> Value {
    json!({"message": {"role": "user", "content": [{"type": "text", "text": text}]}})
}

fn answer(msg: &str, blocks: Value, stop: Option<&str>) -> Value {
    json!({"message": {"id": msg, "type": "message", "role": "assistant", "model": "claude-opus-4-1",
        "content": blocks, "stop_reason": stop, "usage": {"input_tokens": 120, "output_tokens": 40}}})
}

/// The conversation's lines: turn 1 with a tool call, turn 2, an edit of
/// turn 2's prompt (turn 3, a fork), a compaction, turn 4.
fn transcript(cwd: &Path) -> Vec<String> {
    vec![
        json!({"type": "summary", "summary": "Old summary", "leafUuid": "x"}).to_string(),
        line(
            "user",
            "p1",
            None,
            0,
            cwd,
            prompt("Why does the build fail?"),
        ),
        line(
            "assistant",
            "r1a",
            Some("p1"),
            1,
            cwd,
            answer(
                "msg_A",
                json!([{"type": "text", "text": "Let me check the log."}]),
                None,
            ),
        ),
        line(
            "assistant",
            "r1b",
            Some("r1a"),
            2,
            cwd,
            answer(
                "msg_A",
                json!([{"type": "tool_use", "id": "toolu_01Build", "name": "Bash", "input": {"command": "cargo build"}}]),
                Some("tool_use"),
            ),
        ),
        line(
            "user",
            "t1",
            Some("r1b"),
            3,
            cwd,
            json!({"message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01Build", "content": "error[E0425]: cannot find value `x`"}]}, "toolUseResult": {"stdout": "error[E0425]", "agentId": "c0ffee"}}),
        ),
        line(
            "assistant",
            "r1c",
            Some("t1"),
            4,
            cwd,
            answer(
                "msg_B",
                json!([{"type": "text", "text": "A missing variable: `x` is never declared."}]),
                Some("end_turn"),
            ),
        ),
        line(
            "user",
            "p2",
            Some("r1c"),
            10,
            cwd,
            prompt("Declare it as a constant"),
        ),
        line(
            "assistant",
            "r2",
            Some("p2"),
            11,
            cwd,
            answer(
                "msg_C",
                json!([{"type": "text", "text": "Done: const X: u32 = 1;"}]),
                Some("end_turn"),
            ),
        ),
        line(
            "user",
            "p3",
            Some("r1c"),
            20,
            cwd,
            prompt("Declare it as a let binding"),
        ),
        line(
            "assistant",
            "r3",
            Some("p3"),
            21,
            cwd,
            answer(
                "msg_D",
                json!([{"type": "text", "text": "Done: let x = 1;"}]),
                Some("end_turn"),
            ),
        ),
        line(
            "system",
            "cb",
            None,
            30,
            cwd,
            json!({"subtype": "compact_boundary", "content": "Conversation compacted", "logicalParentUuid": "r3"}),
        ),
        "{\"type\": \"user\", \"broken".to_string(),
        line(
            "user",
            "p4",
            Some("cb"),
            40,
            cwd,
            prompt("Now run the tests"),
        ),
        line(
            "assistant",
            "r4",
            Some("p4"),
            41,
            cwd,
            answer(
                "msg_E",
                json!([{"type": "text", "text": "All 12 tests pass."}]),
                Some("end_turn"),
            ),
        ),
        json!({"type": "ai-title", "aiTitle": "Build failure", "sessionId": SID}).to_string(),
        json!({"type": "custom-title", "customTitle": "Fixing the build", "sessionId": SID})
            .to_string(),
    ]
}

fn write_lines(path: &Path, lines: &[String]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

fn import(s: &TestServer, dir: &Path, projects: bool) -> Value {
    let (st, v) = s.post(
        "/api/imports",
        json!({"tool": "claude-code", "paths": [dir], "projects": projects}),
    );
    assert_eq!(st, 200, "{v}");
    v
}

fn texts(s: &TestServer, id: &str) -> Vec<String> {
    let (st, v) = s.get(&format!("/api/sessions/{id}/messages"));
    assert_eq!(st, 200, "{v}");
    v["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap_or("").to_string())
        .collect()
}

#[test]
fn a_claude_code_transcript_becomes_a_session_with_its_fork_and_times() {
    let s = TestServer::start();
    let home = tempfile::tempdir().unwrap();
    let cwd = home.path().join("work");
    let file = home
        .path()
        .join("projects/-work")
        .join(format!("{SID}.jsonl"));
    let mut lines = transcript(&cwd);
    write_lines(&file, &lines);
    // The sub-agent the tool call started, in its own file.
    let sub = home
        .path()
        .join(format!("projects/-work/{SID}/subagents/agent-c0ffee.jsonl"));
    write_lines(
        &sub,
        &[
            line(
                "user",
                "s1",
                None,
                2,
                &cwd,
                json!({"isSidechain": true, "message": {"role": "user", "content": "Run cargo build"}}),
            ),
            line(
                "assistant",
                "s2",
                Some("s1"),
                3,
                &cwd,
                json!({"isSidechain": true, "message": {"id": "msg_S", "role": "assistant", "content": [{"type": "text", "text": "It fails on x."}], "stop_reason": "end_turn"}}),
            ),
        ],
    );

    let v = import(&s, home.path(), false);
    assert_eq!(
        (
            v["files"].as_u64(),
            v["sessions_new"].as_u64(),
            v["turns"].as_u64(),
            v["branches"].as_u64()
        ),
        (Some(2), Some(2), Some(5), Some(1)),
        "{v}"
    );
    assert_eq!(v["skipped"]["by_reason"]["not JSON"], 1, "{v}");
    assert_eq!(v["skipped"]["first"][0]["line"], 12, "{v}");

    let id = format!("claude-code-{SID}");
    let (_, meta) = s.get(&format!("/api/sessions/{id}"));
    assert_eq!(
        meta["title"], "Fixing the build",
        "the user's title wins: {meta}"
    );
    assert_eq!(meta["source"], "claude-code");
    // The session shows the line the tool last wrote: turns 1, 3 and 4.
    let shown = texts(&s, &id);
    assert!(
        shown.contains(&"Let me check the log.".to_string()),
        "{shown:?}"
    );
    assert!(
        shown.contains(&"Declare it as a let binding".to_string()),
        "{shown:?}"
    );
    assert!(
        shown.contains(&"All 12 tests pass.".to_string()),
        "{shown:?}"
    );
    assert!(
        !shown.contains(&"Declare it as a constant".to_string()),
        "{shown:?}"
    );

    // In git: every turn a commit at the turn's own time, the edit a branch.
    let dir = s.session_dir(&id);
    let all = git(
        &dir,
        &["log", "--all", "--format=%ad|%s", "--date=iso-strict"],
    );
    for (when, subject) in [
        ("2025-07-04T09:30:04Z", "turn 1: Why does the build fail?"),
        ("2025-07-04T09:30:11Z", "Declare it as a constant"),
        // The compaction comes between turns: it goes with the next one.
        ("2025-07-04T09:30:21Z", "Declare it as a let binding"),
        ("2025-07-04T09:30:41Z", "Now run the tests"),
    ] {
        assert!(
            all.lines()
                .any(|l| l.starts_with(&format!("{when}|")) && l.contains(subject)),
            "{when} {subject} in\n{all}"
        );
    }
    let branches = git(&dir, &["branch", "--list"]);
    assert_eq!(branches.lines().count(), 2, "{branches}");
    let fsck = std::process::Command::new("git")
        .args(["fsck", "--strict"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(
        fsck.status.success(),
        "{}",
        String::from_utf8_lossy(&fsck.stderr)
    );
    // The tool call keeps its result and names the sub-agent's session,
    // which names its parent.
    let tool = s.nodes_named(&id, "Bash");
    assert_eq!(tool.len(), 1);
    assert!(
        tool[0]["output"].as_str().unwrap().contains("E0425"),
        "{}",
        tool[0]
    );
    let agent = format!("{id}-agent-c0ffee");
    assert_eq!(
        tool[0]["metadata"]["imported"]["subagent_session"],
        agent.as_str()
    );
    let (st, sub_meta) = s.get(&format!("/api/sessions/{agent}"));
    assert_eq!(st, 200, "{sub_meta}");
    assert_eq!(sub_meta["parent_session"], id.as_str(), "{sub_meta}");

    // Again: nothing changes (the checkpoint skips the files).
    let head = git(&dir, &["rev-parse", "HEAD"]);
    let v = import(&s, home.path(), false);
    assert_eq!(
        (v["turns"].as_u64(), v["files_unchanged"].as_u64()),
        (Some(0), Some(2)),
        "{v}"
    );
    // Grown by one turn: exactly that turn is added.
    lines.push(line(
        "user",
        "p5",
        Some("r4"),
        50,
        &cwd,
        prompt("Commit it"),
    ));
    lines.push(line(
        "assistant",
        "r5",
        Some("p5"),
        51,
        &cwd,
        answer(
            "msg_F",
            json!([{"type": "text", "text": "Committed."}]),
            Some("end_turn"),
        ),
    ));
    write_lines(&file, &lines);
    let v = import(&s, home.path(), false);
    assert_eq!(
        (
            v["turns"].as_u64(),
            v["turns_present"].as_u64(),
            v["branches"].as_u64()
        ),
        (Some(1), Some(4), Some(0)),
        "{v}"
    );
    assert_eq!(git(&dir, &["rev-parse", "HEAD~1"]), head);
    assert_eq!(
        texts(&s, &id).iter().filter(|t| *t == "Commit it").count(),
        1
    );
}

#[test]
fn a_turn_still_being_written_waits_and_the_cli_imports_without_a_server() {
    let home = tempfile::tempdir().unwrap();
    let state = home.path().join("state");
    let cwd = home.path().join("work");
    std::fs::create_dir_all(&cwd).unwrap();
    let file = home.path().join("cc/-work").join(format!("{SID}.jsonl"));
    // The last turn's reply is a tool call with no result yet.
    let mut lines = transcript(&cwd)[..10].to_vec();
    lines.push(line(
        "user",
        "p9",
        Some("r3"),
        50,
        &cwd,
        prompt("And the docs?"),
    ));
    lines.push(line(
        "assistant",
        "r9",
        Some("p9"),
        51,
        &cwd,
        answer(
            "msg_Z",
            json!([{"type": "tool_use", "id": "toolu_02", "name": "Read", "input": {}}]),
            Some("tool_use"),
        ),
    ));
    write_lines(&file, &lines);
    let run = |extra: &[&str]| {
        let mut args = vec![
            "import".to_string(),
            "claude-code".to_string(),
            home.path().join("cc").to_str().unwrap().to_string(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_openprogram"))
            .args(&args)
            .env("OPENPROGRAM_STATE_DIR", &state)
            .env_remove("OPENPROGRAM_URL")
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr),
        )
    };
    let (code, out) = run(&["--dry-run"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("would import 3 turns"), "{out}");
    // A dry run writes nothing at all: no state folder, lock or log.
    assert!(!state.exists(), "a dry run made {}", state.display());
    let (code, out) = run(&[]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("imported 3 turns (1 starting a branch) into 1 new"),
        "{out}"
    );
    assert!(out.contains("1 turns are still being written"), "{out}");
    // The session is in the working directory's project.
    let s = TestServer::start_with(crate::helpers::Options {
        prepare: Some(&|dir: &Path| {
            std::fs::rename(&state, dir).unwrap();
        }),
        ..Default::default()
    });
    let (st, meta) = s.get(&format!("/api/sessions/claude-code-{SID}"));
    assert_eq!(st, 200, "{meta}");
    assert_eq!(meta["turn_count"], 2, "the branch's two turns: {meta}");
    let (_, projects) = s.get("/api/projects");
    let project = projects["projects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["path"].as_str() == Some(cwd.canonicalize().unwrap().to_str().unwrap()))
        .unwrap_or_else(|| panic!("the working directory is a project: {projects}"))
        .clone();
    assert_eq!(meta["project_id"], project["id"], "{meta}");
}

#[test]
fn imports_refuse_unknown_tools_and_relative_paths() {
    let s = TestServer::start();
    let (st, v) = s.post("/api/imports", json!({"tool": "notepad"}));
    assert_eq!((st, v["code"].as_str()), (400, Some("unknown_tool")), "{v}");
    let (st, v) = s.post(
        "/api/imports",
        json!({"tool": "claude-code", "paths": ["rel/dir"]}),
    );
    assert_eq!(
        (st, v["code"].as_str()),
        (400, Some("invalid_input")),
        "{v}"
    );
    let (st, v) = s.post(
        "/api/imports",
        json!({"tool": "claude-code", "paths": [], "bogus": 1}),
    );
    assert_eq!(st, 400, "{v}");
    // A folder holding no transcript, and a file that is not one.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.jsonl"), "hello\n[1,2]\n").unwrap();
    let v = import(&s, dir.path(), false);
    assert_eq!(
        (v["turns"].as_u64(), v["sessions_new"].as_u64()),
        (Some(0), Some(0)),
        "{v}"
    );
    assert_eq!(v["skipped"]["by_reason"]["not JSON"], 1, "{v}");
    assert_eq!(v["skipped"]["by_reason"]["not a JSON object"], 1, "{v}");
}

/// Poll until `ok` holds (the live mirror works in the background).
fn eventually(what: &str, mut ok: impl FnMut() -> bool) -> std::time::Duration {
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_secs(20) {
        if ok() {
            return start.elapsed();
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("{what}: not within 20 s");
}

#[test]
fn the_live_mirror_follows_a_transcript_as_the_tool_writes_it() {
    let home = tempfile::tempdir().unwrap();
    let cwd = home.path().join("work");
    let folder = home.path().join("claude/projects/-work");
    let file = folder.join(format!("{SID}.jsonl"));
    // Written while the server was down: caught up at its start.
    let mut lines = transcript(&cwd)[..8].to_vec();
    write_lines(&file, &lines);
    let claude = home.path().join("claude");
    let s = TestServer::start_with_env(&[
        ("CLAUDE_CONFIG_DIR", claude.to_str().unwrap()),
        ("OPENPROGRAM_IMPORT_WATCH", "claude-code"),
    ]);
    let id = format!("claude-code-{SID}");
    let turns = |s: &TestServer| {
        let (st, v) = s.get(&format!("/api/sessions/{id}"));
        (st == 200).then(|| v["turn_count"].as_u64().unwrap_or(0))
    };
    eventually("the catch-up pass", || turns(&s) == Some(2));

    // The tool starts a turn: a prompt and a tool call without its result
    // yet. Nothing is written for it.
    lines.push(line(
        "user",
        "p7",
        Some("r2"),
        50,
        &cwd,
        prompt("Run clippy"),
    ));
    lines.push(line("assistant", "r7", Some("p7"), 51, &cwd, answer("msg_7", json!([{"type": "tool_use", "id": "toolu_07", "name": "Bash", "input": {"command": "cargo clippy"}}]), Some("tool_use"))));
    write_lines(&file, &lines);
    std::thread::sleep(std::time::Duration::from_millis(800));
    assert_eq!(turns(&s), Some(2), "a turn being written waits");
    // It ends: the turn lands, once, with its tool result.
    lines.push(line("user", "t7", Some("r7"), 52, &cwd, json!({"message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_07", "content": "0 warnings"}]}})));
    lines.push(line(
        "assistant",
        "r7b",
        Some("t7"),
        53,
        &cwd,
        answer(
            "msg_8",
            json!([{"type": "text", "text": "Clippy is clean."}]),
            Some("end_turn"),
        ),
    ));
    write_lines(&file, &lines);
    let took = eventually("the finished turn", || turns(&s) == Some(3));
    eprintln!("live mirror: the turn listed {took:?} after its end was written");
    assert_eq!(
        texts(&s, &id)
            .iter()
            .filter(|t| *t == "Clippy is clean.")
            .count(),
        1
    );
    let tool = s.nodes_named(&id, "Bash");
    assert_eq!(tool.last().unwrap()["output"], "0 warnings");

    // A new conversation file, and one that is not a transcript.
    let other = "9d9d9d9d-0000-4000-8000-000000000009";
    let new_file = folder.join(format!("{other}.jsonl"));
    std::fs::write(folder.join("notes.jsonl"), "garbage\n").unwrap();
    std::fs::write(
        &new_file,
        [
            line("user", "n1", None, 0, &cwd, prompt("hello")),
            line(
                "assistant",
                "n2",
                Some("n1"),
                1,
                &cwd,
                answer(
                    "msg_n",
                    json!([{"type": "text", "text": "hi"}]),
                    Some("end_turn"),
                ),
            ),
        ]
        .join("\n")
            + "\n",
    )
    .unwrap();
    eventually("the new conversation", || {
        s.get(&format!("/api/sessions/claude-code-{other}")).0 == 200
    });
    // Restarted: nothing is imported twice.
    let mut s = s;
    s.terminate();
    s.spawn();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    assert_eq!(turns(&s), Some(3));
    assert_eq!(
        texts(&s, &id)
            .iter()
            .filter(|t| *t == "Clippy is clean.")
            .count(),
        1
    );
    // The tool rewrites the whole file (a new file renamed over it), one
    // more turn at its end: exactly that turn comes in.
    let last_reply = {
        let (_, meta) = s.get(&format!("/api/sessions/{id}"));
        meta["head"].as_str().unwrap().to_string()
    };
    let mut rewritten = std::fs::read_to_string(&file).unwrap();
    rewritten
        .push_str(&(line("user", "p8", Some(&last_reply), 58, &cwd, prompt("Ship it")) + "\n"));
    rewritten.push_str(
        &(line(
            "assistant",
            "r8",
            Some("p8"),
            59,
            &cwd,
            answer(
                "msg_S",
                json!([{"type": "text", "text": "Shipped."}]),
                Some("end_turn"),
            ),
        ) + "\n"),
    );
    let tmp = folder.join(".rewrite.tmp");
    std::fs::write(&tmp, rewritten).unwrap();
    std::fs::rename(&tmp, &file).unwrap();
    eventually("the rewritten file's new turn", || turns(&s) == Some(4));
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert_eq!(turns(&s), Some(4));
    assert_eq!(
        texts(&s, &id).iter().filter(|t| *t == "Shipped.").count(),
        1
    );
}

/// A Codex rollout line.
fn codex(second: u32, kind: &str, payload: Value) -> String {
    json!({"timestamp": format!("2025-09-10T08:00:{second:02}.000Z"), "type": kind, "payload": payload}).to_string()
}

fn codex_said(role: &str, text: &str) -> Value {
    let kind = if role == "user" {
        "input_text"
    } else {
        "output_text"
    };
    json!({"type": "message", "role": role, "content": [{"type": kind, "text": text}]})
}

#[test]
fn codex_rollouts_become_sessions_with_their_rollbacks_as_branches() {
    let s = TestServer::start();
    let home = tempfile::tempdir().unwrap();
    let codex_home = home.path().join(".codex");
    let (live, old) = (
        "0199a2b3-0000-7000-8000-00000000000a",
        "0199a2b3-0000-7000-8000-00000000000b",
    );
    let day = codex_home.join("sessions/2025/09/10");
    let rollout = |id: &str| {
        vec![
            codex(
                0,
                "session_meta",
                json!({"id": id, "timestamp": "2025-09-10T08:00:00Z", "cwd": "/nowhere", "cli_version": "0.46.0"}),
            ),
            codex(1, "response_item", codex_said("user", "Count the lines")),
            codex(
                2,
                "response_item",
                json!({"type": "function_call", "name": "shell", "arguments": "{\"command\":[\"wc\",\"-l\"]}", "call_id": "c1"}),
            ),
            codex(
                3,
                "response_item",
                json!({"type": "function_call_output", "call_id": "c1", "output": "42"}),
            ),
            codex(4, "response_item", codex_said("assistant", "42 lines.")),
            codex(4, "event_msg", json!({"type": "task_complete"})),
            codex(10, "response_item", codex_said("user", "Now count words")),
            codex(11, "response_item", codex_said("assistant", "300 words.")),
            codex(11, "event_msg", json!({"type": "task_complete"})),
            codex(
                12,
                "event_msg",
                json!({"type": "thread_rolled_back", "num_turns": 1}),
            ),
            codex(20, "response_item", codex_said("user", "Now count bytes")),
            codex(21, "response_item", codex_said("assistant", "2 KB.")),
            codex(21, "event_msg", json!({"type": "task_complete"})),
        ]
    };
    write_lines(
        &day.join(format!("rollout-2025-09-10T08-00-00-{live}.jsonl")),
        &rollout(live),
    );
    write_lines(
        &codex_home.join(format!(
            "archived_sessions/rollout-2025-09-09T08-00-00-{old}.jsonl"
        )),
        &rollout(old)[..6],
    );
    write_lines(
        &codex_home.join("session_index.jsonl"),
        &[json!({"id": live, "thread_name": "Counting"}).to_string()],
    );
    let (st, v) = s.post(
        "/api/imports",
        json!({"tool": "codex", "paths": [codex_home], "projects": false}),
    );
    assert_eq!(st, 200, "{v}");
    assert_eq!(
        (
            v["sessions_new"].as_u64(),
            v["turns"].as_u64(),
            v["branches"].as_u64()
        ),
        (Some(2), Some(4), Some(1)),
        "{v}"
    );
    let id = format!("codex-{live}");
    let (_, meta) = s.get(&format!("/api/sessions/{id}"));
    assert_eq!(
        (meta["title"].as_str(), meta["source"].as_str()),
        (Some("Counting"), Some("codex")),
        "{meta}"
    );
    let shown = texts(&s, &id);
    assert!(
        shown.contains(&"2 KB.".to_string()) && !shown.contains(&"300 words.".to_string()),
        "{shown:?}"
    );
    let dir = s.session_dir(&id);
    let all = git(&dir, &["log", "--all", "--format=%s"]);
    assert!(
        all.contains("Now count words") && all.contains("Now count bytes"),
        "{all}"
    );
    assert_eq!(git(&dir, &["branch", "--list"]).lines().count(), 2);
    let tool = s.nodes_named(&id, "shell");
    assert_eq!(
        (
            tool[0]["content"]["command"][0].as_str(),
            tool[0]["output"].as_str()
        ),
        (Some("wc"), Some("42"))
    );
    let (_, archived) = s.get(&format!("/api/sessions/codex-{old}"));
    assert_eq!(archived["archived"], true, "{archived}");
    // Again: nothing new.
    let (_, v) = s.post(
        "/api/imports",
        json!({"tool": "codex", "paths": [codex_home], "projects": false}),
    );
    assert_eq!(
        (v["turns"].as_u64(), v["files_unchanged"].as_u64()),
        (Some(0), Some(2)),
        "{v}"
    );
}

#[test]
fn an_import_killed_midway_goes_on_without_duplicates() {
    let home = tempfile::tempdir().unwrap();
    let state = home.path().join("state");
    let cwd = home.path().join("nowhere");
    let file = home.path().join("cc/-w").join(format!("{SID}.jsonl"));
    const TURNS: usize = 1500;
    let mut lines = Vec::with_capacity(TURNS * 2);
    let mut parent: Option<String> = None;
    for t in 0..TURNS {
        let (p, r) = (format!("p{t}"), format!("r{t}"));
        lines.push(line(
            "user",
            &p,
            parent.as_deref(),
            (t % 60) as u32,
            &cwd,
            prompt(&format!("question {t}")),
        ));
        lines.push(line(
            "assistant",
            &r,
            Some(&p),
            (t % 60) as u32,
            &cwd,
            answer(
                &format!("m{t}"),
                json!([{"type": "text", "text": format!("answer {t}")}]),
                Some("end_turn"),
            ),
        ));
        parent = Some(r);
    }
    write_lines(&file, &lines);
    let import = || {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_openprogram"));
        cmd.args(["import", "claude-code", "--no-projects"])
            .arg(home.path().join("cc"))
            .env("OPENPROGRAM_STATE_DIR", &state)
            .env_remove("OPENPROGRAM_URL")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        cmd
    };
    let mut child = import().spawn().unwrap();
    let session = state.join("sessions").join(format!("claude-code-{SID}"));
    eventually("the import under way", || session.join(".git").is_dir());
    std::thread::sleep(std::time::Duration::from_millis(400));
    let _ = child.kill();
    let _ = child.wait();
    let out = import()
        .stdout(std::process::Stdio::piped())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said}");
    // The kill landed midway: some turns were there, the rest came now.
    assert!(
        said.contains("turns were there already") && !said.contains("imported 0 turns"),
        "{said}"
    );
    let s = TestServer::start_with(crate::helpers::Options {
        prepare: Some(&|dir: &Path| {
            std::fs::rename(&state, dir).unwrap();
        }),
        ..Default::default()
    });
    let id = format!("claude-code-{SID}");
    let (_, meta) = s.get(&format!("/api/sessions/{id}"));
    assert_eq!(meta["turn_count"], TURNS as u64, "{meta}");
    let shown = texts(&s, &id);
    assert_eq!(shown.len(), TURNS * 2);
    for t in [0, TURNS / 2, TURNS - 1] {
        assert_eq!(
            shown
                .iter()
                .filter(|x| **x == format!("question {t}"))
                .count(),
            1
        );
    }
    assert_eq!(
        git(&s.session_dir(&id), &["rev-list", "--count", "HEAD"]).trim(),
        (TURNS + 1).to_string()
    );
}

fn gemini_at(second: u32) -> String {
    format!("2025-11-02T09:00:{second:02}.000Z")
}

fn gemini_msg(id: &str, second: u32, kind: &str, text: &str, calls: Value) -> String {
    json!({"id": id, "timestamp": gemini_at(second), "type": kind, "content": [{"text": text}],
           "toolCalls": calls, "model": "gemini-2.5-pro"})
    .to_string()
}

#[test]
fn gemini_recordings_become_sessions_with_rewinds_as_branches_and_sub_agents() {
    let s = TestServer::start();
    let home = tempfile::tempdir().unwrap();
    // The user's project: one commit and work in progress, which an import
    // never touches.
    let cwd = home.path().join("work");
    std::fs::create_dir_all(&cwd).unwrap();
    git(&cwd, &["init", "-q", "-b", "main"]);
    std::fs::write(cwd.join("a.rs"), "fn main() {}\n").unwrap();
    git(&cwd, &["add", "."]);
    git(
        &cwd,
        &[
            "-c",
            "user.name=U",
            "-c",
            "user.email=u@x",
            "commit",
            "-qm",
            "mine",
        ],
    );
    std::fs::write(cwd.join("a.rs"), "fn main() { todo!() }\n").unwrap();
    let chats = home.path().join(".gemini/tmp/abc123/chats");
    let id = "6b1f2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d";
    let call = |result: Value| {
        json!([{"id": "read_file-1", "name": "read_file", "args": {"path": "a.rs"},
                "result": result, "status": "success", "timestamp": gemini_at(3)}])
    };
    write_lines(
        &chats.join("session-2025-11-02T09-00-6b1f2c3d.jsonl"),
        &[
            json!({"sessionId": id, "projectHash": "abc123", "startTime": gemini_at(0),
                   "directories": [cwd]})
            .to_string(),
            gemini_msg("m1", 1, "user", "What is in a.rs?", json!([])),
            gemini_msg("m2", 2, "gemini", "", call(Value::Null)),
            gemini_msg(
                "m2",
                3,
                "gemini",
                "It defines main.",
                call(json!("fn main() {}")),
            ),
            gemini_msg("m3", 10, "user", "Delete it", json!([])),
            gemini_msg("m4", 11, "gemini", "Deleted.", json!([])),
            json!({"$rewindTo": "m3"}).to_string(),
            gemini_msg("m5", 20, "user", "Rename it instead", json!([])),
            gemini_msg(
                "m6",
                21,
                "gemini",
                "Renamed.",
                json!([{"id": "agent-1", "name": "codebase_investigator", "args": {},
                        "agentId": "sub-1", "status": "success"}]),
            ),
            "{oops".to_string(),
            // `/compress`: the context replaced by a summary of its own.
            json!({"$set": {"messages": [
                {"id": "c1", "type": "user", "content": [{"text": "<state_snapshot>a.rs renamed</state_snapshot>"}]},
                {"id": "c2", "type": "gemini", "content": [{"text": "Got it."}]}]}})
            .to_string(),
            json!({"$set": {"summary": "Chores on a.rs"}}).to_string(),
        ],
    );
    // The tool was writing when the import read the file: a cut last line.
    {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(chats.join("session-2025-11-02T09-00-6b1f2c3d.jsonl"))
            .unwrap();
        f.write_all(br#"{"id": "m7", "timestamp": "2025-11"#)
            .unwrap();
    }
    write_lines(
        &chats.join(id).join("sub-1.jsonl"),
        &[
            json!({"sessionId": "sub-1", "projectHash": "abc123", "kind": "subagent"}).to_string(),
            gemini_msg("s1", 4, "user", "Find the tests", json!([])),
            gemini_msg("s2", 5, "gemini", "None found.", json!([])),
        ],
    );
    // Written a while ago: the last turns are over too.
    for f in [
        chats.join("session-2025-11-02T09-00-6b1f2c3d.jsonl"),
        chats.join(id).join("sub-1.jsonl"),
    ] {
        let st = std::process::Command::new("touch")
            .args(["-d", "2025-11-02 10:00"])
            .arg(&f)
            .status()
            .unwrap();
        assert!(st.success());
    }
    let (st, v) = s.post(
        "/api/imports",
        json!({"tool": "gemini-cli", "paths": [home.path().join(".gemini")], "projects": true}),
    );
    assert_eq!(st, 200, "{v}");
    assert_eq!(
        (
            v["sessions_new"].as_u64(),
            v["turns"].as_u64(),
            v["turns_open"].as_u64(),
            v["branches"].as_u64()
        ),
        (Some(2), Some(4), Some(0), Some(1)),
        "{v}"
    );
    assert_eq!(v["skipped"]["by_reason"]["not JSON"], 1, "{v}");
    assert_eq!(
        v["skipped"]["by_reason"]["an unfinished last line"], 1,
        "{v}"
    );
    let sid = format!("gemini-{id}");
    let (_, nodes) = s.get(&format!("/api/sessions/{sid}/nodes"));
    let compactions = nodes["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["role"] == "system" && n["metadata"]["imported"]["kind"] == "compaction")
        .count();
    assert_eq!(compactions, 1, "the compaction is a runtime node: {nodes}");
    let (_, meta) = s.get(&format!("/api/sessions/{sid}"));
    assert_eq!(
        (meta["title"].as_str(), meta["source"].as_str()),
        (Some("Chores on a.rs"), Some("gemini-cli")),
        "{meta}"
    );
    let tool = s.nodes_named(&sid, "read_file");
    assert_eq!(
        (
            tool[0]["content"]["path"].as_str(),
            tool[0]["output"].as_str()
        ),
        (Some("a.rs"), Some("fn main() {}")),
        "the call in its last version: {tool:?}"
    );
    // The project is registered; its history and the user's work are as
    // they were.
    let (_, projects) = s.get("/api/projects");
    let project = projects["projects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["path"].as_str() == Some(cwd.canonicalize().unwrap().to_str().unwrap()))
        .unwrap_or_else(|| panic!("the working directory is a project: {projects}"))
        .clone();
    assert_eq!(meta["project_id"], project["id"], "{meta}");
    assert_eq!(git(&cwd, &["log", "--format=%s", "main"]).trim(), "mine");
    // The rewound turn is on a branch; the line the tool went on with
    // is shown.
    let shown = texts(&s, &sid);
    assert!(
        shown.contains(&"Renamed.".to_string()) && !shown.contains(&"Deleted.".to_string()),
        "{shown:?}"
    );
    let dir = s.session_dir(&sid);
    let all = git(&dir, &["log", "--all", "--format=%s"]);
    assert!(
        all.contains("Delete it") && all.contains("Rename it instead"),
        "{all}"
    );
    assert_eq!(git(&dir, &["branch", "--list"]).lines().count(), 2);
    // The sub-agent: its own session, linked both ways.
    let call = s.nodes_named(&sid, "codebase_investigator");
    assert_eq!(
        call[0]["metadata"]["imported"]["subagent_session"], "gemini-sub-1",
        "{call:?}"
    );
    let (st, sub) = s.get("/api/sessions/gemini-sub-1");
    assert_eq!(st, 200, "{sub}");
    assert_eq!(sub["parent_session"], sid.as_str(), "{sub}");
    // Again: nothing new.
    let (_, v) = s.post(
        "/api/imports",
        json!({"tool": "gemini-cli", "paths": [home.path().join(".gemini")], "projects": true}),
    );
    assert_eq!(
        (v["turns"].as_u64(), v["files_unchanged"].as_u64()),
        (Some(0), Some(2)),
        "{v}"
    );
    assert_eq!(
        std::fs::read_to_string(cwd.join("a.rs")).unwrap(),
        "fn main() { todo!() }\n"
    );
}

#[test]
fn every_aider_session_of_a_projects_history_becomes_a_session() {
    let s = TestServer::start();
    let home = tempfile::tempdir().unwrap();
    let repo = home.path().join("app");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    let (st, p) = s.post("/api/projects", json!({"path": repo}));
    assert!(st == 200 || st == 201, "{p}");
    let history = repo.join(".aider.chat.history.md");
    let first = [
        "",
        "# aider chat started at 2024-05-01 10:00:00",
        "",
        "#### add a health endpoint",
        "",
        "Here is the change.",
        "",
        "> Applied edit to app.py  ",
        "",
        "#### thanks",
        "",
        "You're welcome.",
        "",
        "# aider chat started at 2024-05-02 09:30:00",
        "",
        "#### explain app.py",
        "",
        "It serves /health.",
        "",
    ]
    .join("\n");
    std::fs::write(&history, &first).unwrap();
    let age = |f: &Path| {
        let st = std::process::Command::new("touch")
            .args(["-d", "2024-05-03 10:00"])
            .arg(f)
            .status()
            .unwrap();
        assert!(st.success());
    };
    age(&history);
    // No path: the registered projects are looked in.
    let (st, v) = s.post("/api/imports", json!({"tool": "aider"}));
    assert_eq!(st, 200, "{v}");
    assert_eq!(
        (
            v["files"].as_u64(),
            v["sessions_new"].as_u64(),
            v["turns"].as_u64()
        ),
        (Some(1), Some(2), Some(3)),
        "{v}"
    );
    let (_, list) = s.get("/api/sessions?source=aider");
    let ids: Vec<String> = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["source"] == "aider")
        .map(|x| x["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 2, "{list}");
    let first_id = ids.iter().find(|i| i.ends_with("-20240501100000")).unwrap();
    let mut shown = texts(&s, first_id);
    shown.retain(|t| !t.is_empty()); // the output node
    assert_eq!(
        shown,
        vec![
            "add a health endpoint",
            "Here is the change.",
            "thanks",
            "You're welcome."
        ]
    );
    let out = s.nodes_named(first_id, "aider");
    assert_eq!(out[0]["output"], "Applied edit to app.py", "{out:?}");
    let dir = s.session_dir(first_id);
    assert_eq!(git(&dir, &["rev-list", "--count", "HEAD"]).trim(), "3");
    assert!(
        git(&dir, &["log", "-1", "--format=%ad", "--date=iso"]).starts_with("2024-05-01 10:00:00")
    );
    // A third session appended: only it is added.
    let more = first + "\n# aider chat started at 2024-05-04 08:00:00\n\n#### and tests\n\nDone.\n";
    std::fs::write(&history, more).unwrap();
    age(&history);
    let (_, v) = s.post("/api/imports", json!({"tool": "aider"}));
    assert_eq!(
        (
            v["sessions_new"].as_u64(),
            v["sessions_updated"].as_u64(),
            v["turns"].as_u64(),
            v["turns_present"].as_u64()
        ),
        (Some(1), Some(0), Some(1), Some(3)),
        "{v}"
    );
}

/// An opencode database as opencode keeps it (WAL mode): its three
/// tables, with the columns the reader uses.
fn opencode_db(path: &Path) -> rusqlite::Connection {
    let db = rusqlite::Connection::open(path).unwrap();
    db.pragma_update(None, "journal_mode", "WAL").unwrap();
    db.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
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
    db
}

fn opencode_turn(db: &rusqlite::Connection, sid: &str, n: u32, text: &str, parts: Vec<Value>) {
    let t0: i64 = 1_762_070_400_000 + i64::from(n) * 10_000;
    let put = |id: String, at: i64, data: Value| {
        db.execute(
            "INSERT INTO message VALUES (?1, ?2, ?3, ?3, ?4)",
            rusqlite::params![id, sid, at, data.to_string()],
        )
        .unwrap();
    };
    let part = |mid: &str, k: usize, data: Value| {
        db.execute(
            "INSERT INTO part VALUES (?1, ?2, ?3, 0, 0, ?4)",
            rusqlite::params![format!("prt_{mid}_{k}"), mid, sid, data.to_string()],
        )
        .unwrap();
    };
    let (u, a) = (format!("msg_{sid}_{n}u"), format!("msg_{sid}_{n}a"));
    put(
        u.clone(),
        t0,
        json!({"role": "user", "time": {"created": t0}}),
    );
    part(&u, 0, json!({"type": "text", "text": text}));
    put(
        a.clone(),
        t0 + 1000,
        json!({"role": "assistant", "time": {"created": t0 + 1000, "completed": t0 + 2000},
               "modelID": "gpt-5"}),
    );
    for (k, p) in parts.into_iter().enumerate() {
        part(&a, k, p);
    }
}

#[test]
fn opencode_sessions_come_from_its_database_while_it_writes() {
    let s = TestServer::start();
    let home = tempfile::tempdir().unwrap();
    let path = home.path().join("opencode.db");
    let db = opencode_db(&path);
    let session = |id: &str, parent: Option<&str>, title: &str| {
        db.execute(
            "INSERT INTO session VALUES (?1, 'p', ?2, 's', '/nowhere', ?3, '1', 1762070400000, 0, NULL)",
            rusqlite::params![id, parent, title],
        )
        .unwrap();
    };
    session("ses_main", None, "Parser bug");
    session("ses_kid", Some("ses_main"), "Find tests");
    opencode_turn(
        &db,
        "ses_main",
        1,
        "Why does it fail?",
        vec![
            json!({"type": "tool", "callID": "c1", "tool": "grep",
                   "state": {"status": "completed", "input": {"pattern": "EOF"}, "output": "lexer.rs:9"}}),
            json!({"type": "tool", "callID": "c2", "tool": "task",
                   "state": {"status": "completed", "input": {}, "output": "none",
                             "metadata": {"sessionId": "ses_kid"}}}),
            json!({"type": "text", "text": "EOF is never returned."}),
        ],
    );
    opencode_turn(
        &db,
        "ses_kid",
        2,
        "find tests",
        vec![json!({"type": "text", "text": "none"})],
    );
    let import = || {
        let (st, v) = s.post(
            "/api/imports",
            json!({"tool": "opencode", "paths": [&path], "projects": false}),
        );
        assert_eq!(st, 200, "{v}");
        v
    };
    let v = import();
    assert_eq!(
        (
            v["sessions_new"].as_u64(),
            v["turns"].as_u64(),
            v["turns_open"].as_u64()
        ),
        (Some(2), Some(2), Some(0)),
        "{v}"
    );
    let (_, meta) = s.get("/api/sessions/opencode-ses_main");
    assert_eq!(
        (meta["title"].as_str(), meta["source"].as_str()),
        (Some("Parser bug"), Some("opencode")),
        "{meta}"
    );
    let grep = s.nodes_named("opencode-ses_main", "grep");
    assert_eq!(grep[0]["output"], "lexer.rs:9", "{grep:?}");
    let task = s.nodes_named("opencode-ses_main", "task");
    assert_eq!(
        task[0]["metadata"]["imported"]["subagent_session"],
        "opencode-ses_kid"
    );
    let (_, kid) = s.get("/api/sessions/opencode-ses_kid");
    assert_eq!(kid["parent_session"], "opencode-ses_main", "{kid}");
    // opencode goes on writing (into its -wal, not checkpointed): the new
    // turn, and only it, comes in.
    opencode_turn(
        &db,
        "ses_main",
        3,
        "Fix it",
        vec![json!({"type": "text", "text": "Fixed."})],
    );
    assert!(home.path().join("opencode.db-wal").exists());
    let v = import();
    assert_eq!(
        (
            v["turns"].as_u64(),
            v["turns_present"].as_u64(),
            v["sessions_updated"].as_u64()
        ),
        (Some(1), Some(2), Some(1)),
        "{v}"
    );
    let shown = texts(&s, "opencode-ses_main");
    assert!(shown.contains(&"Fixed.".to_string()), "{shown:?}");
    let dir = s.session_dir("opencode-ses_main");
    assert_eq!(git(&dir, &["rev-list", "--count", "HEAD"]).trim(), "3");
    // Unchanged: not read again.
    let v = import();
    assert_eq!(
        (v["turns"].as_u64(), v["files_unchanged"].as_u64()),
        (Some(0), Some(1)),
        "{v}"
    );
}

#[test]
fn a_running_import_shows_its_progress() {
    let s = TestServer::start();
    let (st, v) = s.get("/api/imports");
    assert_eq!((st, v["running"].clone()), (200, json!([])), "{v}");
    // Enough files that the import runs a while: each is a session.
    let home = tempfile::tempdir().unwrap();
    let folder = home.path().join("projects/-w");
    for n in 0..300 {
        let sid = format!("00000000-0000-4000-8000-{n:012}");
        let rec = |kind: &str, uuid: String, parent: Option<String>, body: Value| {
            let mut v = json!({"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": sid,
                               "timestamp": "2025-07-04T09:30:00.000Z"});
            v.as_object_mut()
                .unwrap()
                .extend(body.as_object().unwrap().clone());
            v.to_string()
        };
        write_lines(
            &folder.join(format!("{sid}.jsonl")),
            &[
                rec("user", format!("u{n}"), None, prompt("hi")),
                rec(
                    "assistant",
                    format!("a{n}"),
                    Some(format!("u{n}")),
                    answer(
                        &format!("m{n}"),
                        json!([{"type": "text", "text": "hello"}]),
                        Some("end_turn"),
                    ),
                ),
            ],
        );
    }
    let seen = std::thread::scope(|scope| {
        let run = scope.spawn(|| import(&s, home.path(), false));
        let mut seen = None;
        while !run.is_finished() {
            let (_, v) = s.get("/api/imports");
            if let Some(r) = v["running"].as_array().and_then(|a| a.first()) {
                if r["files_done"].as_u64() > Some(0) {
                    seen = Some(r.clone());
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let v = run.join().unwrap();
        assert_eq!(v["sessions_new"], 300, "{v}");
        seen
    });
    let seen = seen.expect("the run was listed while it went on");
    assert_eq!(seen["tool"], "claude-code");
    assert_eq!(seen["files_total"], 300);
    assert!(seen["files_done"].as_u64().unwrap() <= 300);
    let (_, v) = s.get("/api/imports");
    assert_eq!(v["running"], json!([]), "gone once done: {v}");
}

#[test]
fn a_mirror_asked_for_follows_opencode_as_it_writes() {
    let s = TestServer::start();
    let home = tempfile::tempdir().unwrap();
    let path = home.path().join("opencode.db");
    let db = opencode_db(&path);
    db.execute(
        "INSERT INTO session VALUES ('ses_live', 'p', NULL, 's', '/nowhere', 'Live', '1', 1762070400000, 0, NULL)",
        [],
    )
    .unwrap();
    opencode_turn(
        &db,
        "ses_live",
        1,
        "first",
        vec![json!({"type": "text", "text": "one"})],
    );
    let body = json!({"tool": "opencode", "paths": [&path]});
    let (st, v) = s.post("/api/imports/watch", body.clone());
    assert_eq!((st, v["already"].as_bool()), (200, Some(false)), "{v}");
    let (st, v) = s.post("/api/imports/watch", body);
    assert_eq!((st, v["already"].as_bool()), (200, Some(true)), "{v}");
    let turns = || {
        let (st, v) = s.get("/api/sessions/opencode-ses_live");
        (st == 200).then(|| v["turn_count"].as_u64().unwrap_or(0))
    };
    eventually("the catch-up pass", || turns() == Some(1));
    // opencode writes two more turns (into its -wal): exactly they come in.
    opencode_turn(
        &db,
        "ses_live",
        2,
        "second",
        vec![json!({"type": "text", "text": "two"})],
    );
    opencode_turn(
        &db,
        "ses_live",
        3,
        "third",
        vec![json!({"type": "text", "text": "three"})],
    );
    eventually("the new turns", || turns() == Some(3));
    let dir = s.session_dir("opencode-ses_live");
    assert_eq!(git(&dir, &["rev-list", "--count", "HEAD"]).trim(), "4");
    let (st, v) = s.post(
        "/api/imports/watch",
        json!({"tool": "opencode", "paths": ["rel"]}),
    );
    assert_eq!(
        (st, v["code"].as_str()),
        (400, Some("invalid_input")),
        "{v}"
    );
}

#[test]
fn the_cli_mirrors_without_a_server_until_it_is_stopped() {
    let home = tempfile::tempdir().unwrap();
    let state = home.path().join("state");
    let folder = home.path().join("cc/-work");
    std::fs::create_dir_all(&folder).unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_openprogram"))
        .args(["import", "claude-code", "--no-projects", "--watch"])
        .arg(home.path().join("cc"))
        .env("OPENPROGRAM_STATE_DIR", &state)
        .env_remove("OPENPROGRAM_URL")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let cwd = home.path().join("work");
    // The first turn of the transcript, written once the mirror runs.
    write_lines(&folder.join(format!("{SID}.jsonl")), &transcript(&cwd)[..8]);
    let session = state.join("sessions").join(format!("claude-code-{SID}"));
    eventually("the mirrored turns", || {
        std::process::Command::new("git")
            .args(["log", "--format=%s", "main"])
            .current_dir(&session)
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).lines().count() >= 3)
    });
    let st = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    assert!(child.wait().unwrap().success());
    let log = git(&session, &["log", "--format=%s", "main"]);
    assert!(log.contains("Why does the build fail?"), "{log}");
}

#[test]
fn an_import_never_writes_into_a_session_it_did_not_make() {
    let home = tempfile::tempdir().unwrap();
    let cwd = home.path().join("work");
    let dir = home.path().join("projects/-work");
    write_lines(&dir.join(format!("{SID}.jsonl")), &transcript(&cwd));
    let s = TestServer::start();
    // A session made by hand under the id the import would derive.
    let id = format!("claude-code-{SID}");
    s.turn(&id, "mine", "kept", &[]);
    let before = texts(&s, &id);
    let (st, v) = s.post(
        "/api/imports",
        json!({"tool": "claude-code", "paths": [&dir], "projects": false}),
    );
    assert_eq!(st, 200, "{v}");
    let errors = v["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{v}");
    assert!(
        errors[0]["reason"]
            .as_str()
            .unwrap()
            .contains("was not made by importing claude-code"),
        "{v}"
    );
    assert_eq!(v["turns"], 0, "{v}");
    assert_eq!(texts(&s, &id), before, "nothing written into it");
}

/// A server that takes the CLI's import and drops the connection without
/// answering (it died, or the network did): the CLI says so and stops; it
/// never opens the state folder that server holds.
#[test]
fn the_cli_says_the_server_was_lost_and_never_opens_its_folder() {
    use std::io::{Read, Write};
    let home = tempfile::tempdir().unwrap();
    let state = home.path().join("state");
    std::fs::create_dir_all(&state).unwrap();
    let dir = home.path().join("projects/-work");
    write_lines(
        &dir.join(format!("{SID}.jsonl")),
        &transcript(&home.path().join("work")),
    );
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let info = json!({"url": format!("http://127.0.0.1:{port}"), "pid": std::process::id(), "started_at": 0});
    std::fs::write(state.join("server.json"), info.to_string()).unwrap();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            std::thread::spawn(move || {
                let mut head = [0u8; 4096];
                let n = conn.read(&mut head).unwrap_or(0);
                let head = String::from_utf8_lossy(&head[..n]).to_string();
                if head.starts_with("GET /api/imports") {
                    let body = r#"{"running":[],"mirrors":[]}"#;
                    let _ = write!(
                        conn,
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                } else {
                    // The import: taken, then the connection goes.
                    std::thread::sleep(std::time::Duration::from_millis(700));
                }
            });
        }
    });
    let before: Vec<_> = std::fs::read_dir(&state)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_openprogram"))
        .args(["import", "claude-code", dir.to_str().unwrap()])
        .env("OPENPROGRAM_STATE_DIR", &state)
        .env_remove("OPENPROGRAM_URL")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("was lost"), "{err}");
    assert!(err.contains("the server goes on importing"), "{err}");
    let after: Vec<_> = std::fs::read_dir(&state)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(
        before, after,
        "the state folder the server holds was opened"
    );
}

/// `import doctor --json`: per tool, the versions and record types its
/// files hold, and the types no reader knows.
#[test]
fn the_import_doctor_reports_versions_and_unknown_records() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join(".claude/projects/-work");
    let mut lines = transcript(&home.path().join("work"));
    lines.push(json!({"type": "hologram", "uuid": "h1"}).to_string());
    write_lines(&dir.join(format!("{SID}.jsonl")), &lines);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_openprogram"))
        .args(["import", "doctor", "--json"])
        .env("HOME", home.path())
        .env("OPENPROGRAM_STATE_DIR", home.path().join("state"))
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("OPENPROGRAM_URL")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let claude = v["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tool"] == "claude-code")
        .unwrap();
    assert_eq!(claude["files"], 1, "{claude}");
    assert_eq!(claude["versions"]["2.0.14"], 1, "{claude}");
    assert_eq!(claude["unknown"][0]["kind"], "hologram", "{claude}");
    assert_eq!(claude["unknown"][0]["count"], 1, "{claude}");
    assert!(v["mirrors"].is_null(), "no server: {v}");
    assert!(!home.path().join("state").exists(), "the doctor wrote");
}

/// Nothing to import says where it looked: a wrong `HOME` or
/// `CLAUDE_CONFIG_DIR` does not look like an empty history.
#[test]
fn a_dry_run_that_finds_nothing_says_where_it_looked() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let out = std::process::Command::new(crate::helpers::server_bin())
        .args(["import", "claude-code", "--dry-run", "--state-dir"])
        .arg(tmp.path().join("state"))
        .env("HOME", &home)
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("OPENPROGRAM_URL")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let looked = home.join(".claude/projects").display().to_string();
    assert!(
        text.contains("no history found in") && text.contains(&looked),
        "{text}"
    );
}
