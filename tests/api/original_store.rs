//! A state directory as the original system's `SessionStore` writes it,
//! byte for byte (checked against the files its own code wrote for the same
//! calls: `json.dumps(ensure_ascii=False)` with its separators and key
//! order, `{seq:04d}-{u|l|c}-{id}.json` from seq 0, `caller: ""`, the git
//! CLI's `session init` and one `turn: …` commit per turn, `index.json`,
//! `locations.json` and `projects.json` indented by 2), then migrated by a
//! real server: one commit per turn, the original's own turn commits kept,
//! previews, every row in the WebSocket list, and the next message
//! continuing `main`.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::helpers::{git, message_texts, Options, TestServer};
use crate::ws::WsClient;

/// `json.dumps(v, ensure_ascii=False)`: `", "` and `": "`, keys in the
/// order given.
fn py(v: &Value) -> String {
    match v {
        Value::Object(map) => {
            let parts: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}: {}", Value::String(k.clone()), py(v)))
                .collect();
            format!("{{{}}}", parts.join(", "))
        }
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(py).collect();
            format!("[{}]", parts.join(", "))
        }
        Value::Number(n) if n.is_f64() => {
            let f = n.as_f64().unwrap_or_default();
            if f.fract() == 0.0 && f.abs() < 1e16 {
                format!("{f:.1}")
            } else {
                format!("{f}")
            }
        }
        other => other.to_string(),
    }
}

/// An object with its keys in this order.
fn ordered(pairs: &[(&str, Value)]) -> Value {
    let mut map = serde_json::Map::new();
    for (k, v) in pairs {
        map.insert(k.to_string(), v.clone());
    }
    Value::Object(map)
}

/// `json.dump(v, indent=2, ensure_ascii=False)`.
fn py_indented(v: &Value, depth: usize) -> String {
    let pad = "  ".repeat(depth + 1);
    let end = "  ".repeat(depth);
    match v {
        Value::Object(map) if !map.is_empty() => {
            let parts: Vec<String> = map
                .iter()
                .map(|(k, v)| {
                    format!(
                        "{pad}{}: {}",
                        Value::String(k.clone()),
                        py_indented(v, depth + 1)
                    )
                })
                .collect();
            format!("{{\n{}\n{end}}}", parts.join(",\n"))
        }
        Value::Array(items) if !items.is_empty() => {
            let parts: Vec<String> = items
                .iter()
                .map(|v| format!("{pad}{}", py_indented(v, depth + 1)))
                .collect();
            format!("[\n{}\n{end}]", parts.join(",\n"))
        }
        other => py(other),
    }
}

/// The original's `GitSession` and `SessionStore`, as far as this fixture
/// calls them.
struct Original {
    sessions: PathBuf,
    index: serde_json::Map<String, Value>,
    locations: serde_json::Map<String, Value>,
}

struct OrigSession {
    dir: PathBuf,
    meta: Vec<(&'static str, Value)>,
    seq: u64,
    last: Option<String>,
}

impl Original {
    /// An empty state directory's `sessions/`.
    fn new(state: &Path) -> Original {
        let sessions = state.join("sessions");
        std::fs::create_dir_all(&sessions).unwrap();
        Original {
            sessions,
            index: Default::default(),
            locations: Default::default(),
        }
    }

    fn create(&self, id: &str, dir: &Path, meta: Vec<(&'static str, Value)>) -> OrigSession {
        for sub in ["history", "context", "workdir"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
        }
        std::fs::write(dir.join("workdir/.gitkeep"), "").unwrap();
        git(dir, &["init", "--quiet", "--initial-branch=main"]);
        git(dir, &["config", "user.email", "openprogram@local"]);
        git(dir, &["config", "user.name", "OpenProgram"]);
        git(
            dir,
            &["commit", "--allow-empty", "-m", "session init", "--quiet"],
        );
        let mut all = vec![("id", json!(id))];
        all.extend(meta);
        OrigSession {
            dir: dir.to_path_buf(),
            meta: all,
            seq: 0,
            last: None,
        }
    }

    /// One turn: the user message, the reply, tools called by the reply,
    /// then (when `commit`) `commit_turn("turn: <first line[:60]>")`.
    #[allow(clippy::too_many_arguments)]
    fn turn(
        &mut self,
        s: &mut OrigSession,
        n: u64,
        user: &str,
        reply: &str,
        tools: &[&str],
        commit: bool,
        at: f64,
    ) {
        let sid = s.meta[0].1.as_str().unwrap().to_string();
        let u = format!("u{n}-{sid}");
        let a = format!("a{n}-{sid}");
        self.node(
            s,
            "u",
            &u,
            "user",
            "",
            Value::Null,
            user,
            "",
            s.last.clone(),
            at,
            json!({}),
        );
        self.node(
            s,
            "l",
            &a,
            "llm",
            "",
            Value::Null,
            reply,
            "",
            Some(u.clone()),
            at + 1.0,
            json!({}),
        );
        for (i, t) in tools.iter().enumerate() {
            let tid = format!("t{n}{i}-{sid}");
            self.node(
                s,
                "c",
                &tid,
                "code",
                t,
                json!({}),
                &format!("{t} output"),
                &a,
                None,
                at + 2.0,
                json!({"tool_call_id": tid}),
            );
        }
        s.last = Some(a.clone());
        set(&mut s.meta, "head_id", json!(a));
        set(&mut s.meta, "updated_at", json!(at + 3.0));
        std::fs::write(s.dir.join("meta.json"), py(&ordered(&s.meta))).unwrap();
        let row = self.index.get_mut(&sid).unwrap();
        row["updated_at"] = json!(at + 3.0);
        row["preview"] = json!(user);
        if commit {
            git(&s.dir, &["add", "-A"]);
            let subject = format!(
                "turn: {}",
                user.lines()
                    .next()
                    .unwrap_or("")
                    .chars()
                    .take(60)
                    .collect::<String>()
            );
            git(&s.dir, &["commit", "-m", &subject, "--quiet"]);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn node(
        &self,
        s: &mut OrigSession,
        letter: &str,
        id: &str,
        role: &str,
        name: &str,
        input: Value,
        output: &str,
        caller: &str,
        predecessor: Option<String>,
        at: f64,
        metadata: Value,
    ) {
        let node = ordered(&[
            ("id", json!(id)),
            ("created_at", json!(at)),
            ("seq", json!(s.seq)),
            ("role", json!(role)),
            ("name", json!(name)),
            ("input", input),
            ("output", json!(output)),
            ("caller", json!(caller)),
            ("predecessor", json!(predecessor)),
            ("reads", json!([])),
            ("metadata", metadata),
        ]);
        let file = s
            .dir
            .join(format!("history/{:04}-{letter}-{id}.json", s.seq));
        std::fs::write(file, py(&node)).unwrap();
        s.seq += 1;
    }

    fn row(&mut self, id: &str, extra: &[(&str, Value)]) {
        let mut pairs = vec![
            ("id", json!(id)),
            ("status", json!("idle")),
            ("pinned", json!(false)),
            ("archived", json!(false)),
            ("unread", json!(false)),
            ("agent_id", json!("main")),
            ("title", json!("")),
            ("source", json!("web")),
            ("created_at", json!(T0)),
            ("updated_at", json!(T0)),
            ("channel", Value::Null),
            ("peer_display", Value::Null),
            ("peer_id", Value::Null),
        ];
        for (k, v) in extra {
            set(&mut pairs, k, v.clone());
        }
        pairs.push(("preview", Value::Null));
        self.index.insert(id.to_string(), ordered(&pairs));
    }
}

fn set(pairs: &mut Vec<(&str, Value)>, key: &str, value: Value) {
    match pairs.iter_mut().find(|(k, _)| *k == key) {
        Some(p) => p.1 = value,
        None => {
            let key: &'static str = Box::leak(key.to_string().into_boxed_str());
            pairs.push((key, value));
        }
    }
}

const T0: f64 = 1_795_000_000.0;

/// The original's state: six sessions (three 3-turn conversations, one
/// with a tool call and one in Chinese; an archived one; a channel one; one
/// whose second turn was appended but never committed; one in a project).
fn write_original_state(state: &Path, project: &Path) {
    let mut o = Original::new(state);
    let sessions = o.sessions.clone();
    let base = |extra: Vec<(&'static str, Value)>| -> Vec<(&'static str, Value)> {
        let mut m = vec![
            ("agent_id", json!("main")),
            ("title", json!("")),
            ("source", json!("web")),
            ("created_at", json!(T0)),
            ("updated_at", json!(T0)),
        ];
        m.extend(extra);
        m.push(("project_id", json!("default")));
        m
    };
    o.row("plain", &[]);
    let mut s = o.create("plain", &sessions.join("plain"), base(vec![]));
    for n in 1..=3 {
        let tools: &[&str] = if n == 2 { &["read"] } else { &[] };
        o.turn(
            &mut s,
            n,
            &format!("question {n}"),
            &format!("answer {n}"),
            tools,
            true,
            T0 + 10.0 * n as f64,
        );
    }
    o.row("zh", &[]);
    let mut s = o.create("zh", &sessions.join("zh"), base(vec![]));
    for n in 1..=3 {
        o.turn(
            &mut s,
            n,
            &format!("你好，第{n}个问题"),
            &format!("这是第{n}个回答"),
            &[],
            true,
            T0 + 100.0 + 10.0 * n as f64,
        );
    }
    o.row(
        "arch",
        &[("title", json!("Archived talk")), ("archived", json!(true))],
    );
    let mut meta = base(vec![]);
    set(&mut meta, "title", json!("Archived talk"));
    let mut s = o.create("arch", &sessions.join("arch"), meta);
    o.turn(&mut s, 1, "old stuff", "old answer", &[], true, T0 + 200.0);
    let mut m = s.meta.clone();
    let head = m.pop().unwrap();
    m.push(("archived", json!(true)));
    m.push(head);
    std::fs::write(s.dir.join("meta.json"), py(&ordered(&m))).unwrap();
    let ch = "wechat_bot_dm_p1";
    o.row(
        ch,
        &[
            ("source", json!("wechat")),
            ("channel", json!("wechat")),
            ("peer_display", json!("Ada")),
            ("peer_id", json!("p1")),
            ("account_id", json!("bot")),
        ],
    );
    let mut s = o.create(
        ch,
        &sessions.join(ch),
        base(vec![
            ("channel", json!("wechat")),
            ("peer_display", json!("Ada")),
            ("peer_id", json!("p1")),
            ("account_id", json!("bot")),
        ]),
    );
    set(&mut s.meta, "source", json!("wechat"));
    o.turn(&mut s, 1, "weekend plans?", "hiking", &[], true, T0 + 300.0);
    o.row("open", &[]);
    let mut s = o.create("open", &sessions.join("open"), base(vec![]));
    o.turn(&mut s, 1, "first committed", "yes", &[], true, T0 + 400.0);
    o.turn(
        &mut s,
        2,
        "never committed",
        "pending",
        &[],
        false,
        T0 + 410.0,
    );
    // In a project: the repository inside the project folder.
    std::fs::create_dir_all(project.join(".openprogram/sessions")).unwrap();
    std::fs::write(project.join(".openprogram/.gitignore"), "*\n").unwrap();
    let pid = "proj_0badcafe";
    o.row("inproj", &[]);
    let mut meta = base(vec![]);
    set(&mut meta, "project_id", json!(pid));
    let dir = project.join(".openprogram/sessions/inproj");
    let mut s = o.create("inproj", &dir, meta);
    o.turn(
        &mut s,
        1,
        "work in the project",
        "done",
        &[],
        true,
        T0 + 500.0,
    );
    o.turn(
        &mut s,
        2,
        "more project work",
        "done too",
        &["edit"],
        true,
        T0 + 510.0,
    );
    o.locations.insert("inproj".into(), json!(dir));
    let index = Value::Object(std::mem::take(&mut o.index));
    std::fs::write(sessions.join("index.json"), py_indented(&index, 0)).unwrap();
    let locations = Value::Object(std::mem::take(&mut o.locations));
    std::fs::write(
        o.sessions.join("locations.json"),
        py_indented(&locations, 0),
    )
    .unwrap();
    let projects = ordered(&[
        (
            "default",
            ordered(&[
                ("id", json!("default")),
                ("name", json!("home")),
                ("path", json!(state.parent().unwrap())),
                ("is_default", json!(true)),
                ("session_ids", json!(["plain", "zh", "arch", ch, "open"])),
                ("status", json!("active")),
                ("created_at", json!(T0)),
            ]),
        ),
        (
            pid,
            ordered(&[
                ("id", json!(pid)),
                ("name", json!("work")),
                ("path", json!(project)),
                ("is_default", json!(false)),
                ("session_ids", json!(["inproj"])),
                ("status", json!("active")),
                ("created_at", json!(T0)),
            ]),
        ),
    ]);
    std::fs::create_dir_all(state.join("projects")).unwrap();
    std::fs::write(
        state.join("projects/projects.json"),
        py_indented(&projects, 0),
    )
    .unwrap();
}

fn subjects(dir: &Path) -> Vec<String> {
    git(dir, &["log", "--format=%s"])
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_original_systems_state_migrates_one_commit_per_turn_and_continues_main() {
    let project_tmp = tempfile::tempdir().unwrap();
    let project = project_tmp.path().canonicalize().unwrap().join("work");
    std::fs::create_dir(&project).unwrap();
    git(&project, &["init", "-q", "-b", "main"]);
    let p = project.clone();
    let prepare = move |state: &Path| write_original_state(state, &p);
    let mut s = TestServer::start_with(Options {
        prepare: Some(&prepare),
        ..Options::default()
    });
    for round in 0..2 {
        let plain = s.session_dir("plain");
        assert_eq!(
            subjects(&plain),
            [
                "turn 3: question 3",
                "turn 2: question 2",
                "turn 1: question 1",
                "turn: question 3",
                "turn: question 2",
                "turn: question 1",
                "session init"
            ],
            "round {round}"
        );
        let (_, meta) = s.get("/api/sessions/plain");
        assert_eq!(meta["turn_count"], 3, "{meta}");
        assert_eq!(meta["head"], "a3-plain");
        let (_, nodes) = s.get("/api/sessions/plain/nodes");
        let tool = nodes["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["id"] == "t20-plain")
            .unwrap()
            .clone();
        assert_eq!(
            (tool["role"].as_str(), tool["caller"].as_str()),
            (Some("tool"), Some("a2-plain"))
        );
        let user = nodes["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["id"] == "u1-plain")
            .unwrap()
            .clone();
        assert!(user["caller"].is_null(), "caller \"\" is no caller: {user}");
        // The never-committed turn gets its own commit, numbered after.
        let open = s.session_dir("open");
        assert_eq!(
            subjects(&open),
            [
                "turn 2: never committed",
                "turn 1: first committed",
                "turn: first committed",
                "session init"
            ]
        );
        let (_, meta) = s.get("/api/sessions/open");
        assert_eq!(meta["turn_count"], 2);
        let zh = s.session_dir("zh");
        assert_eq!(subjects(&zh)[0], "turn 3: 你好，第3个问题");
        assert_eq!(subjects(&zh)[3], "turn: 你好，第3个问题");
        let inproj = project.join(".openprogram/sessions/inproj");
        assert_eq!(subjects(&inproj)[0], "turn 2: more project work");
        // Every row listed with its preview (the latest user message), the
        // archived one only on request; the WebSocket list has all six.
        let (_, page) = s.get("/api/sessions?include_archived=true");
        let rows = page["sessions"].as_array().unwrap().clone();
        assert_eq!(rows.len(), 6, "{page}");
        let preview = |id: &str| {
            rows.iter()
                .find(|r| r["id"] == id)
                .map(|r| r["preview"].clone())
                .unwrap_or_default()
        };
        assert_eq!(preview("plain"), "question 3");
        assert_eq!(preview("zh"), "你好，第3个问题");
        assert_eq!(preview("open"), "never committed");
        let mut ws = WsClient::connect(&s);
        ws.send(json!({"action": "list_sessions"}));
        let list = ws.expect("sessions_list", |_| true);
        let ids: Vec<&str> = list["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids.len(), 6, "{ids:?}");
        for r in list["data"].as_array().unwrap() {
            let title = r["title"].as_str().unwrap_or("");
            assert!(
                !title.is_empty() && title != r["id"].as_str().unwrap(),
                "{r}"
            );
        }
        for dir in [&plain, &open, &zh, &inproj] {
            git(dir, &["fsck", "--strict", "--no-progress"]);
            assert_eq!(
                git(dir, &["status", "--porcelain"]),
                "",
                "{}",
                dir.display()
            );
        }
        let (code, out, _) = s.cli(&["fsck"], None);
        assert_eq!(code, 0, "{out}");
        s.restart_after_kill();
    }
    // Replay as in a native session: turn 2 of 3, a step back to turn 1
    // with its messages, and a rewind that continues after turn 1.
    let (st, v) = s.post("/api/sessions/zh/checkout", json!({"turn": 2}));
    assert_eq!(st, 200, "{v}");
    assert_eq!(
        (v["turn"].as_u64(), v["of"].as_u64()),
        (Some(2), Some(3)),
        "{v}"
    );
    let (st, v) = s.post("/api/sessions/zh/checkout", json!({"step": "prev"}));
    assert_eq!((st, v["turn"].as_u64()), (200, Some(1)), "{v}");
    let (_, msgs) = s.get("/api/sessions/zh/messages");
    assert_eq!(
        message_texts(&msgs),
        ["你好，第1个问题", "这是第1个回答"],
        "{msgs}"
    );
    let out = s.turn("zh", "another way", "then this", &[]);
    assert_eq!(out["turn"], 2, "{out}");
    let zh = s.session_dir("zh");
    assert_eq!(
        git(&zh, &["log", "-2", "--format=%s", "HEAD"])
            .lines()
            .collect::<Vec<_>>(),
        ["turn 2: another way", "turn 1: 你好，第1个问题"]
    );
    // The next message continues main as turn 4.
    let out = s.turn("plain", "a fourth question", "a fourth answer", &[]);
    assert_eq!(out["turn"], 4);
    let plain = s.session_dir("plain");
    assert_eq!(subjects(&plain)[0], "turn 4: a fourth question");
    assert_eq!(
        git(&plain, &["branch", "--format=%(refname:short)"]).trim(),
        "main"
    );
    let out = s.turn("open", "a third turn", "ok", &[]);
    assert_eq!(out["turn"], 3);
}

/// `n` sessions of the original's, three turns each (a tool call in the
/// second; every fourth session's third turn appended, never committed).
fn write_many_original_sessions(state: &Path, n: usize) -> Vec<String> {
    let mut o = Original::new(state);
    let sessions = o.sessions.clone();
    let mut ids = Vec::new();
    for i in 0..n {
        let id = format!("m{i}");
        o.row(&id, &[]);
        let meta = vec![
            ("agent_id", json!("main")),
            ("title", json!("")),
            ("source", json!("web")),
            ("created_at", json!(T0)),
            ("updated_at", json!(T0)),
            ("project_id", json!("default")),
        ];
        let mut s = o.create(&id, &sessions.join(&id), meta);
        for t in 1..=3u64 {
            let tools: &[&str] = if t == 2 { &["read"] } else { &[] };
            let commit = !(i % 4 == 0 && t == 3);
            let at = T0 + 1000.0 * i as f64 + 10.0 * t as f64;
            let (q, a) = (format!("question {t} of {id}"), format!("answer {t}"));
            o.turn(&mut s, t, &q, &a, tools, commit, at);
        }
        ids.push(id);
    }
    let index = Value::Object(std::mem::take(&mut o.index));
    std::fs::write(sessions.join("index.json"), py_indented(&index, 0)).unwrap();
    ids
}

#[test]
fn a_migration_killed_at_any_point_is_finished_by_the_next_start() {
    let made = std::cell::RefCell::new(Vec::new());
    let kills = std::cell::Cell::new(0);
    let prepare = |state: &Path| {
        *made.borrow_mut() = write_many_original_sessions(state, 40);
        // Starts killed at seeded moments across the migration (the server
        // migrates before it listens), each getting further.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for k in 0..10u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let after = 60 + k * 90 + x % 90;
            let mut child = std::process::Command::new(crate::helpers::server_bin())
                .args(["serve", "--bind", "127.0.0.1:0", "--state-dir"])
                .arg(state)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
            std::thread::sleep(std::time::Duration::from_millis(after));
            if child.try_wait().unwrap().is_none() {
                kills.set(kills.get() + 1);
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    };
    let s = TestServer::start_with(Options {
        prepare: Some(&prepare),
        ..Options::default()
    });
    assert!(kills.get() >= 5, "the starts were killed: {}", kills.get());
    let ids = made.borrow().clone();
    for (i, id) in ids.iter().enumerate() {
        let dir = s.session_dir(id);
        let committed = if i % 4 == 0 { 2 } else { 3 };
        let mut want: Vec<String> = Vec::new();
        for t in (1..=3).rev() {
            want.push(format!("turn {t}: question {t} of {id}"));
        }
        for t in (1..=committed).rev() {
            want.push(format!("turn: question {t} of {id}"));
        }
        want.push("session init".into());
        assert_eq!(subjects(&dir), want, "{id}\n{}", s.log());
        let (_, meta) = s.get(&format!("/api/sessions/{id}"));
        assert_eq!(meta["turn_count"], 3, "{id}: {meta}");
        assert!(meta["open_turn"].is_null(), "{id}: {meta}");
        let (_, nodes) = s.get(&format!("/api/sessions/{id}/nodes"));
        assert_eq!(nodes["nodes"].as_array().unwrap().len(), 7, "{id}: {nodes}");
        // Nothing left over: the tree clean, no old-layout file in HEAD
        // outside legacy/, no migration marked as under way.
        assert_eq!(git(&dir, &["status", "--porcelain"]), "", "{id}");
        let tree = git(&dir, &["ls-tree", "--name-only", "HEAD", "history/"]);
        assert!(
            tree.lines().all(|l| !l.ends_with(".json")),
            "{id}: old files in HEAD: {tree}"
        );
        assert!(!dir.join(".migration-under-way").exists(), "{id}");
        git(&dir, &["fsck", "--strict", "--no-progress"]);
    }
    let (code, out, _) = s.cli(&["fsck"], None);
    assert_eq!(code, 0, "{out}");
    // The next message continues main.
    let out = s.turn("m1", "a fourth question", "a fourth answer", &[]);
    assert_eq!(out["turn"], 4);
}

#[test]
fn an_original_project_folder_without_git_gets_a_repository_at_its_first_turn() {
    let project_tmp = tempfile::tempdir().unwrap();
    let project = project_tmp.path().canonicalize().unwrap().join("work");
    std::fs::create_dir(&project).unwrap();
    std::fs::write(project.join("notes.txt"), "mine\n").unwrap();
    let p = project.clone();
    let prepare = move |state: &Path| write_original_state(state, &p);
    let s = TestServer::start_with(Options {
        prepare: Some(&prepare),
        ..Options::default()
    });
    assert!(!project.join(".git").exists(), "nothing made before a turn");
    let (st, v) = s.post(
        "/api/sessions/inproj/messages",
        json!({"role": "user", "content": "edit the notes"}),
    );
    assert!(st == 200 || st == 201, "{st} {v}");
    std::fs::write(project.join("notes.txt"), "mine\nand the agent's\n").unwrap();
    s.append("inproj", json!({"role": "assistant", "content": "edited"}));
    let out = s.end_turn("inproj", json!({}));
    assert!(out.get("project_commit_skipped").is_none(), "{out}");
    let sha = out["project_commit"].as_str().expect("a project commit");
    assert!(project.join(".git").is_dir());
    assert_eq!(git(&project, &["rev-parse", "HEAD"]).trim(), sha);
    let files = git(&project, &["ls-tree", "-r", "--name-only", "HEAD"]);
    assert!(files.contains("notes.txt"), "{files}");
    assert!(!files.contains(".openprogram"), "{files}");
}
