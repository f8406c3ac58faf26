//! Sessions in older layouts survive startup with all their nodes, one
//! commit per original turn, and nothing that startup does not understand
//! is deleted. Fixtures are written by the tests, in each layout.

use std::path::Path;

use serde_json::{json, Value};

use crate::helpers::{git, turn_commits, Options, TestServer};

const TWO_HOURS_AGO: f64 = 1.0e9;

fn write(path: &Path, v: &Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, serde_json::to_vec(v).unwrap()).unwrap();
}

/// The specification's flat layout (spec 000 §2): two turns, a tool result.
fn flat_session(sessions: &Path) {
    let d = sessions.join("flat1");
    let t = TWO_HOURS_AGO;
    write(
        &d.join("meta.json"),
        &json!({"id": "flat1", "title": "Flat", "created_at": t, "updated_at": t}),
    );
    let node = |id: &str,
                role: &str,
                text: &str,
                pred: Option<&str>,
                caller: Option<&str>,
                i: f64| {
        json!({"id": id, "role": role, "content": text, "predecessor": pred, "caller": caller, "created_at": t + i, "metadata": {}})
    };
    let h = d.join("history");
    write(
        &h.join("000001-u-m1.json"),
        &node("m1", "user", "hello flat", None, None, 1.0),
    );
    write(
        &h.join("000002-a-m2.json"),
        &node("m2", "assistant", "flat answer", Some("m1"), None, 2.0),
    );
    write(
        &h.join("000003-t-m3.json"),
        &node("m3", "tool", "tool output", None, Some("m2"), 3.0),
    );
    write(
        &h.join("000004-u-m4.json"),
        &node("m4", "user", "second flat", Some("m2"), None, 4.0),
    );
    write(
        &h.join("000005-a-m5.json"),
        &node("m5", "assistant", "second answer", Some("m4"), None, 5.0),
    );
}

/// The original system's layout: seq from 0, roles user/llm/code, the
/// text in `output`, optionally a repository made by its git CLI.
fn original_session(sessions: &Path, id: &str, with_git: bool) {
    let d = sessions.join(id);
    let t = TWO_HOURS_AGO;
    write(
        &d.join("meta.json"),
        &json!({"id": id, "agent_id": "main", "title": "Original", "source": "web", "created_at": t,
                "updated_at": t + 9.0, "head_id": "o5", "branches": {"main": "o5"}, "_user_titled": false,
                "status": "interrupted", "peer_kind": "dm"}),
    );
    let node = |seq: u64,
                id: &str,
                role: &str,
                name: Option<&str>,
                out: &str,
                pred: Option<&str>,
                caller: Option<&str>| {
        json!({"id": id, "created_at": t + seq as f64, "seq": seq, "role": role, "name": name,
               "input": if role == "code" { json!({"path": "a.txt"}) } else { Value::Null },
               "output": out, "caller": caller, "predecessor": pred, "reads": [], "metadata": {}})
    };
    let h = d.join("history");
    write(
        &h.join("0000-u-o1.json"),
        &node(0, "o1", "user", None, "original question", None, None),
    );
    write(
        &h.join("0001-l-o2.json"),
        &node(
            1,
            "o2",
            "llm",
            Some("gpt-x"),
            "original answer",
            Some("o1"),
            None,
        ),
    );
    write(
        &h.join("0002-c-o3.json"),
        &node(
            2,
            "o3",
            "code",
            Some("read"),
            "file content",
            None,
            Some("o2"),
        ),
    );
    write(
        &h.join("0003-u-o4.json"),
        &node(3, "o4", "user", None, "and then?", Some("o2"), None),
    );
    write(
        &h.join("0004-l-o5.json"),
        &node(4, "o5", "llm", Some("gpt-x"), "then this", Some("o4"), None),
    );
    if with_git {
        // As the original's GitSession made them: its identity, an empty
        // "session init", then one "turn: …" commit.
        let commit = |extra: &[&str]| {
            let mut args = vec![
                "-c",
                "user.name=OpenProgram",
                "-c",
                "user.email=openprogram@local",
                "commit",
                "--quiet",
            ];
            args.extend_from_slice(extra);
            git(&d, &args);
        };
        git(&d, &["init", "--quiet", "--initial-branch=main"]);
        commit(&["--allow-empty", "-m", "session init"]);
        git(&d, &["add", "-A"]);
        commit(&["-m", "turn: original question"]);
    }
}

fn texts(s: &TestServer, id: &str) -> Vec<String> {
    let (st, m) = s.get(&format!("/api/sessions/{id}/messages"));
    assert_eq!(st, 200, "{m}");
    m["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["content"].as_str().unwrap_or("").to_string())
        .collect()
}

/// The ids the session list shows (`query` is the query string).
fn listed(s: &TestServer, query: &str) -> Vec<String> {
    let (_, page) = s.get(&format!("/api/sessions{query}"));
    page["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect()
}

fn commit_subjects(dir: &Path) -> Vec<String> {
    git(dir, &["log", "--format=%s"])
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn flat_and_original_sessions_migrate_with_every_node_and_one_commit_per_turn() {
    let prepare = |state: &Path| {
        let sessions = state.join("sessions");
        flat_session(&sessions);
        original_session(&sessions, "orig-git", true);
        original_session(&sessions, "orig-bare", false);
    };
    let mut s = TestServer::start_with(Options {
        prepare: Some(&prepare),
        ..Options::default()
    });
    for round in 0..2 {
        // Listed with their previews, never deleted as empty shells.
        let ids = listed(&s, "?include_archived=true");
        for id in ["flat1", "orig-git", "orig-bare"] {
            assert!(
                ids.iter().any(|i| i == id),
                "round {round}: {id} listed: {ids:?}"
            );
        }
        assert_eq!(
            texts(&s, "flat1"),
            [
                "hello flat",
                "flat answer",
                "tool output",
                "second flat",
                "second answer"
            ]
        );
        let flat = s.session_dir("flat1");
        assert_eq!(
            commit_subjects(&flat),
            ["turn 2: second flat", "turn 1: hello flat"],
            "round {round}"
        );
        assert!(
            flat.join("legacy/000001-u-m1.json").is_file(),
            "the old files are kept"
        );
        assert!(!flat.join("history/000001-u-m1.json").exists());
        for id in ["orig-git", "orig-bare"] {
            assert_eq!(
                texts(&s, id),
                [
                    "original question",
                    "original answer",
                    "file content",
                    "and then?",
                    "then this"
                ],
                "{id}"
            );
            let (_, nodes) = s.get(&format!("/api/sessions/{id}/nodes"));
            let tool = nodes["nodes"]
                .as_array()
                .unwrap()
                .iter()
                .find(|n| n["id"] == "o3")
                .unwrap()
                .clone();
            assert_eq!(
                (
                    tool["role"].as_str(),
                    tool["name"].as_str(),
                    tool["caller"].as_str()
                ),
                (Some("tool"), Some("read"), Some("o2"))
            );
            assert_eq!(tool["metadata"]["input"]["path"], "a.txt");
            let answer = nodes["nodes"]
                .as_array()
                .unwrap()
                .iter()
                .find(|n| n["id"] == "o2")
                .unwrap()
                .clone();
            assert_eq!(answer["metadata"]["model"], "gpt-x");
            let (_, meta) = s.get(&format!("/api/sessions/{id}"));
            assert_eq!(meta["head"], "o5");
            assert_eq!(meta["status"], "idle", "an unknown status reads as idle");
            assert_eq!(meta["peer_kind"], "dm", "unknown keys are kept");
        }
        let with_git = commit_subjects(&s.session_dir("orig-git"));
        assert_eq!(
            with_git,
            [
                "turn 2: and then?",
                "turn 1: original question",
                "turn: original question",
                "session init"
            ],
            "the original commits stay below, one commit per turn on top"
        );
        assert_eq!(
            commit_subjects(&s.session_dir("orig-bare")),
            ["turn 2: and then?", "turn 1: original question"]
        );
        // The turn commits carry the turns' own times.
        let when = git(
            &s.session_dir("orig-bare"),
            &["log", "-1", "--format=%at", "HEAD~1"],
        );
        assert_eq!(when.trim(), "1000000002");
        // The first new commit took the old files out of the tree and put
        // the kept copies in.
        let tree = git(
            &s.session_dir("orig-git"),
            &["ls-tree", "-r", "--name-only", "HEAD"],
        );
        assert!(
            tree.contains("legacy/0000-u-o1.json")
                && tree.contains("history/00/00/000001-u-o1.json"),
            "{tree}"
        );
        assert!(
            !tree.lines().any(|l| l == "history/0000-u-o1.json"),
            "{tree}"
        );
        s.restart_after_kill();
    }
    // New turns continue the numbering, after the migrated ones.
    s.turn("orig-bare", "a new question", "a new answer", &[]);
    assert_eq!(
        commit_subjects(&s.session_dir("orig-bare"))
            .first()
            .map(String::as_str),
        Some("turn 3: a new question")
    );
    s.turn("orig-git", "a new question", "a new answer", &[]);
    let dir = s.session_dir("orig-git");
    assert_eq!(
        commit_subjects(&dir).first().map(String::as_str),
        Some("turn 3: a new question")
    );
    assert_eq!(
        git(&dir, &["branch", "--format=%(refname:short)"]).trim(),
        "main"
    );
    assert!(!s.log().contains("migration failed"), "{}", s.log());
}

#[test]
fn the_original_projects_file_and_odd_metas_never_stop_startup_or_lose_a_session() {
    let project = tempfile::tempdir().unwrap();
    let path = project.path().canonicalize().unwrap();
    let prepare = |state: &Path| {
        write(
            &state.join("projects/projects.json"),
            &json!({
                "proj_0a1b2c3d": {"id": "proj_0a1b2c3d", "name": "Wiki", "path": path, "is_default": false,
                                  "session_ids": ["lm"], "status": "active", "created_at": 1.0},
                "default": {"id": "default", "name": "Home", "path": "/root", "is_default": true,
                            "session_ids": [], "status": "active", "created_at": 0.0}
            }),
        );
        let sessions = state.join("sessions");
        // A parsable meta with a null title, no created_at and a status
        // this version does not know, plus one flat node.
        write(
            &sessions.join("lm/meta.json"),
            &json!({"id": "lm", "title": null, "status": "cancelled"}),
        );
        write(
            &sessions.join("lm/history/000001-u-x1.json"),
            &json!({"id": "x1", "role": "user", "content": "kept message", "created_at": TWO_HOURS_AGO}),
        );
        // An old session with nothing but something unknown: kept.
        write(
            &sessions.join("odd/meta.json"),
            &json!({"id": "odd", "created_at": TWO_HOURS_AGO}),
        );
        std::fs::write(sessions.join("odd/notes.txt"), "mine").unwrap();
        // A truly empty old shell: deleted as before.
        write(
            &sessions.join("shell/meta.json"),
            &json!({"id": "shell", "created_at": TWO_HOURS_AGO}),
        );
        // Unparsable: skipped, never deleted.
        std::fs::create_dir_all(sessions.join("broken")).unwrap();
        std::fs::write(sessions.join("broken/meta.json"), "{ nope").unwrap();
        // A leftover temp folder.
        std::fs::create_dir_all(sessions.join(".tmp-delete-x/inner")).unwrap();
    };
    let s = TestServer::start_with(Options {
        prepare: Some(&prepare),
        ..Options::default()
    });
    let (_, projects) = s.get("/api/projects");
    let list = projects["projects"].as_array().unwrap();
    assert!(
        list.iter()
            .any(|p| p["id"] == "proj_0a1b2c3d" && p["name"] == "Wiki"),
        "{projects}"
    );
    assert_eq!(list.iter().filter(|p| p["id"] == "default").count(), 1);
    let ids = listed(&s, "");
    assert!(ids.iter().any(|i| i == "lm"), "{ids:?}");
    assert_eq!(texts(&s, "lm"), ["kept message"]);
    let (_, meta) = s.get("/api/sessions/lm");
    assert_eq!(
        (meta["title"].as_str(), meta["status"].as_str()),
        (Some(""), Some("idle"))
    );
    assert!(
        s.state_dir.join("sessions/odd/notes.txt").exists(),
        "unknown content is kept"
    );
    assert!(
        !s.state_dir.join("sessions/shell").exists(),
        "an empty shell still goes"
    );
    assert!(s.state_dir.join("sessions/broken/meta.json").exists());
}

#[test]
fn a_moved_project_keeps_its_sessions_across_restarts_and_comes_back() {
    let root = tempfile::tempdir().unwrap();
    let first = root.path().join("p1");
    std::fs::create_dir(&first).unwrap();
    let mut s = TestServer::start_process();
    let (st, p) = s.post("/api/projects", json!({"path": first}));
    assert_eq!(st, 201, "{p}");
    let pid = p["id"].as_str().unwrap().to_string();
    s.turn_in_project("mv", &pid);
    // The folder moves: writes are refused and nothing is recreated.
    let second = root.path().join("p2");
    std::fs::rename(&first, &second).unwrap();
    let (st, e) = s.post(
        "/api/sessions/mv/messages",
        json!({"role": "user", "content": "anyone?"}),
    );
    assert_eq!(
        (st, e["code"].as_str()),
        (409, Some("project_path_missing")),
        "{e}"
    );
    assert!(!first.exists(), "the vanished folder is not recreated");
    let (_, projects) = s.get("/api/projects");
    let listed = projects["projects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["id"] == pid.as_str())
        .unwrap()
        .clone();
    assert_eq!(listed["path_missing"], true);
    // A restart keeps the session listed and its recorded place.
    s.restart_after_kill();
    let (_, page) = s.get("/api/sessions");
    assert!(
        page["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["id"] == "mv"),
        "{page}"
    );
    let (st, e) = s.post(
        "/api/sessions/mv/messages",
        json!({"role": "user", "content": "anyone?"}),
    );
    assert_eq!(
        (st, e["code"].as_str()),
        (409, Some("project_path_missing"))
    );
    assert!(!first.exists());
    // Relocate (after the restart) brings it back; writing works again.
    let (st, r) = s.post(
        &format!("/api/projects/{pid}/relocate"),
        json!({"path": second}),
    );
    assert_eq!(st, 200, "{r}");
    s.turn("mv", "back again", "welcome", &[]);
    let repo = second
        .canonicalize()
        .unwrap()
        .join(".openprogram/sessions/mv");
    assert_eq!(turn_commits(&repo, "HEAD"), "2");
    // Ids are stable for a path: unbind and register again.
    let (st, _) = s.raw_delete(&format!("/api/projects/{pid}"));
    assert_eq!(st, 200);
    let (_, again) = s.post("/api/projects", json!({"path": second}));
    assert_eq!(again["id"], pid.as_str(), "the same folder, the same id");
    // Moved once more and registered at its new place: the project is
    // claimed back (same id) from the sessions inside the folder.
    let third = root.path().join("p3");
    std::fs::rename(&second, &third).unwrap();
    s.restart_after_kill();
    let (st, claimed) = s.post("/api/projects", json!({"path": third}));
    assert_eq!(
        (st, claimed["id"].as_str()),
        (200, Some(pid.as_str())),
        "{claimed}"
    );
    s.turn("mv", "from the third place", "yes", &[]);
    let repo = third
        .canonicalize()
        .unwrap()
        .join(".openprogram/sessions/mv");
    assert_eq!(turn_commits(&repo, "HEAD"), "3");
}

#[test]
fn the_cli_migrates_another_state_directory_keeping_ids() {
    let old = tempfile::tempdir().unwrap();
    original_session(&old.path().join("sessions"), "from-old", true);
    let project = tempfile::tempdir().unwrap();
    write(
        &old.path().join("projects/projects.json"),
        &json!({"proj_11112222": {"id": "proj_11112222", "name": "Old", "path": project.path().canonicalize().unwrap(),
                                  "is_default": false, "session_ids": [], "status": "active", "created_at": 1.0}}),
    );
    let new = tempfile::tempdir().unwrap();
    let state = new.path().join("state");
    let run = |extra: &[&str]| {
        let mut args = vec![
            "migrate",
            "--state-dir",
            state.to_str().unwrap(),
            "--from",
            old.path().to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_openprogram"))
            .args(&args)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let (code, out) = run(&["--dry-run"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("would copy session from-old"), "{out}");
    assert!(
        !state.join("sessions/from-old").exists(),
        "a dry run changes nothing"
    );
    let (code, out) = run(&[]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("migrated from-old: 5 nodes, 2 turns"), "{out}");
    assert!(
        out.contains("migrated 1 sessions (2 turns, 5 nodes), 0 failed"),
        "{out}"
    );
    // The original is untouched; the copy serves.
    assert!(old
        .path()
        .join("sessions/from-old/history/0000-u-o1.json")
        .is_file());
    let s = TestServer::start_with(Options {
        prepare: Some(&|dir: &Path| {
            std::fs::rename(&state, dir).unwrap();
        }),
        ..Options::default()
    });
    assert_eq!(texts(&s, "from-old").len(), 5);
    let (_, projects) = s.get("/api/projects");
    assert!(projects["projects"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["id"] == "proj_11112222"));
    // Under a running server it refuses: one writer per state directory.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_openprogram"))
        .args(["migrate", "--state-dir", s.state_dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "could not run: 2, as for gc");
    assert!(String::from_utf8_lossy(&out.stderr).contains("a server is running"));
}
