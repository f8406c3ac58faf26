//! Every agent turn recorded (held on a private ref when the user's tree
//! was dirty), held turns applied, turns undone; checked with the git CLI.

use std::path::Path;

use serde_json::{json, Value};

use crate::helpers::{assert_clean_repo, git, TestServer};
use crate::projects::{create_project, open_turn, user_repo};
use crate::ws::WsClient;

fn write(dir: &Path, file: &str, text: &str) {
    std::fs::write(dir.join(file), text).unwrap();
}

fn read(dir: &Path, file: &str) -> String {
    std::fs::read_to_string(dir.join(file)).unwrap_or_default()
}

/// One turn of `sid` in which the agent writes `files` (path, text).
fn agent_turn(
    s: &TestServer,
    dir: &Path,
    sid: &str,
    pid: &str,
    text: &str,
    files: &[(&str, &str)],
) -> Value {
    open_turn(s, sid, pid, text);
    for (f, t) in files {
        write(dir, f, t);
    }
    s.end_turn(sid, json!({}))
}

#[test]
fn a_dirty_tree_turn_is_held_on_a_private_ref_and_the_user_keeps_every_byte() {
    let s = TestServer::start();
    let (_tmp, dir) = user_repo();
    let pid = create_project(&s, &dir);
    // The user: a stash, a staged change, an edit in progress, notes.
    write(&dir, "lib.rs", "fn main() { stashed(); }\n");
    git(
        &dir,
        &[
            "-c",
            "user.name=Ada",
            "-c",
            "user.email=ada@example.com",
            "stash",
            "-q",
        ],
    );
    write(&dir, "staged.txt", "staged by the user\n");
    git(&dir, &["add", "staged.txt"]);
    write(&dir, "README.md", "user edit in progress\n");
    write(&dir, "notes.txt", "untracked user notes\n");
    let head = git(&dir, &["rev-parse", "HEAD"]);
    let stash = git(&dir, &["stash", "list", "--format=%H"]);
    let branches = git(&dir, &["branch", "--list"]);

    open_turn(&s, "hd", &pid, "add a helper");
    // The agent: a new file, and an edit of the user's own dirty file.
    write(&dir, "b.txt", "the agent's file\n");
    write(
        &dir,
        "README.md",
        "user edit in progress\nand the agent's line\n",
    );
    let index = std::fs::read(dir.join(".git/index")).unwrap();
    let tree_before: Vec<(String, Vec<u8>)> =
        ["README.md", "notes.txt", "lib.rs", "staged.txt", "b.txt"]
            .iter()
            .map(|f| (f.to_string(), std::fs::read(dir.join(f)).unwrap()))
            .collect();
    let out = s.end_turn("hd", json!({}));

    assert!(out.get("project_commit").is_none(), "{out}");
    let skipped = &out["project_commit_skipped"];
    assert_eq!(skipped["code"], "dirty_tree", "{out}");
    let held = &skipped["held"];
    assert_eq!(held["ref"], "refs/openprogram/sessions/hd/turn-1", "{out}");
    assert_eq!(
        held["files"],
        json!(["b.txt"]),
        "the user's dirty files stay the user's"
    );
    let sha = held["commit"].as_str().unwrap().to_string();

    // The user's branch, index, stash, branches and files: untouched.
    assert_eq!(git(&dir, &["rev-parse", "HEAD"]), head);
    assert_eq!(std::fs::read(dir.join(".git/index")).unwrap(), index);
    assert_eq!(git(&dir, &["stash", "list", "--format=%H"]), stash);
    assert_eq!(
        git(&dir, &["branch", "--list"]),
        branches,
        "no branch of ours"
    );
    for (f, bytes) in tree_before {
        assert_eq!(std::fs::read(dir.join(&f)).unwrap(), bytes, "{f} changed");
    }
    // The held commit: on the user's HEAD, the agent's file only, by the agent.
    assert_eq!(
        git(&dir, &["rev-parse", "refs/openprogram/sessions/hd/turn-1"]).trim(),
        sha
    );
    assert_eq!(git(&dir, &["rev-parse", &format!("{sha}^")]), head);
    assert_eq!(
        git(&dir, &["show", "--name-only", "--format=", &sha]).trim(),
        "b.txt"
    );
    assert_eq!(
        git(&dir, &["show", &format!("{sha}:b.txt")]),
        "the agent's file\n"
    );
    assert_eq!(
        git(&dir, &["log", "-1", "--format=%ae|%s", &sha]).trim(),
        "agent@openprogram.local|[agent hd] turn 1: add a helper"
    );
    assert!(
        git(&dir, &["log", "--all", "--format=%H"]).contains(&sha),
        "git log --all shows it"
    );
    git(&dir, &["fsck", "--strict", "--no-progress"]);

    // The turn record names it, and the project lists it.
    let (_, meta) = s.get("/api/sessions/hd");
    let last = &meta["last_turn"]["project"];
    assert_eq!(
        last["held"]["ref"], "refs/openprogram/sessions/hd/turn-1",
        "{meta}"
    );
    let (st, turns) = s.get(&format!("/api/projects/{pid}/agent-turns"));
    assert_eq!(st, 200, "{turns}");
    let listed = &turns["sessions"][0];
    assert_eq!(listed["session_id"], "hd");
    assert_eq!(listed["turns"][0]["state"], "held");
    assert_eq!(listed["turns"][0]["files"][0]["path"], "b.txt");
    assert_eq!(listed["turns"][0]["additions"], 1);

    // Applying it needs a clean tree: refused with the paths.
    let apply = format!("/api/projects/{pid}/agent-turns/hd/1/apply");
    let (st, refused) = s.post(&apply, json!({}));
    assert_eq!(
        (st, refused["code"].as_str()),
        (409, Some("dirty_tree")),
        "{refused}"
    );
    assert!(
        refused["paths"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p == "notes.txt"),
        "{refused}"
    );
    assert_eq!(git(&dir, &["rev-parse", "HEAD"]), head, "nothing changed");

    // The user tidies up (their edit committed, notes and the agent's copy gone).
    std::fs::remove_file(dir.join("notes.txt")).unwrap();
    std::fs::remove_file(dir.join("b.txt")).unwrap();
    write(&dir, "README.md", "user edit in progress\n");
    git(&dir, &["add", "-A"]);
    git(
        &dir,
        &[
            "-c",
            "user.name=Ada",
            "-c",
            "user.email=ada@example.com",
            "commit",
            "-qm",
            "user work",
        ],
    );
    let (st, applied) = s.post(&apply, json!({}));
    assert_eq!(st, 201, "{applied}");
    let new = applied["commit"].as_str().unwrap();
    assert_eq!(git(&dir, &["rev-parse", "HEAD"]).trim(), new);
    assert_eq!(read(&dir, "b.txt"), "the agent's file\n");
    assert_eq!(
        git(&dir, &["show", "--name-only", "--format=", "HEAD"]).trim(),
        "b.txt"
    );
    assert_eq!(
        git(&dir, &["log", "-1", "--format=%ae", "HEAD"]).trim(),
        "agent@openprogram.local"
    );
    assert_clean_repo(&dir);
    assert_eq!(s.nodes_named("hd", "project/apply").len(), 1);
    // Again: nothing left to apply.
    let (st, again) = s.post(&apply, json!({}));
    assert_eq!(
        (st, again["code"].as_str()),
        (409, Some("nothing_to_apply")),
        "{again}"
    );
    let (_, turns) = s.get(&format!("/api/projects/{pid}/agent-turns"));
    let held_row = turns["sessions"][0]["turns"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["state"] == "held")
        .cloned()
        .unwrap();
    assert_eq!(held_row["applied_as"], new, "{turns}");
}

#[test]
fn a_held_turn_that_conflicts_is_refused_with_its_paths_and_nothing_changes() {
    let s = TestServer::start();
    let (_tmp, dir) = user_repo();
    let pid = create_project(&s, &dir);
    write(&dir, "scratch.txt", "user's\n");
    let out = agent_turn(
        &s,
        &dir,
        "hc",
        &pid,
        "edit lib",
        &[("lib.rs", "fn main() { agent(); }\n")],
    );
    assert_eq!(
        out["project_commit_skipped"]["held"]["files"],
        json!(["lib.rs"]),
        "{out}"
    );
    // The user throws the working copy away and commits another lib.rs.
    std::fs::remove_file(dir.join("scratch.txt")).unwrap();
    write(&dir, "lib.rs", "fn main() { user(); }\n");
    git(
        &dir,
        &[
            "-c",
            "user.name=Ada",
            "-c",
            "user.email=ada@example.com",
            "commit",
            "-qam",
            "user lib",
        ],
    );
    let head = git(&dir, &["rev-parse", "HEAD"]);
    let (st, refused) = s.post(
        &format!("/api/projects/{pid}/agent-turns/hc/1/apply"),
        json!({}),
    );
    assert_eq!(
        (st, refused["code"].as_str()),
        (409, Some("conflict")),
        "{refused}"
    );
    assert_eq!(refused["paths"], json!(["lib.rs"]));
    assert_eq!(git(&dir, &["rev-parse", "HEAD"]), head);
    assert_clean_repo(&dir);
    let (st, none) = s.post(
        &format!("/api/projects/{pid}/agent-turns/hc/7/apply"),
        json!({}),
    );
    assert_eq!(
        (st, none["code"].as_str()),
        (404, Some("no_agent_turn")),
        "{none}"
    );
}

#[test]
fn reverting_turn_2_of_3_is_one_new_commit_and_refusals_change_nothing() {
    let s = TestServer::start();
    let (_tmp, dir) = user_repo();
    let pid = create_project(&s, &dir);
    let lib = read(&dir, "lib.rs");
    agent_turn(&s, &dir, "rv", &pid, "first", &[("one.txt", "1\n")]);
    agent_turn(
        &s,
        &dir,
        "rv",
        &pid,
        "second change",
        &[("two.txt", "2\n"), ("lib.rs", "fn main() { two(); }\n")],
    );
    let t3 = agent_turn(&s, &dir, "rv", &pid, "third", &[("three.txt", "3\n")]);
    assert!(t3["project_commit"].is_string(), "{t3}");
    let log_before = git(&dir, &["log", "--format=%H"]);

    let (st, preview) = s.get("/api/sessions/rv/turns/2/revert");
    assert_eq!(st, 200, "{preview}");
    assert_eq!(preview["can_revert"], true, "{preview}");
    let files: Vec<&str> = preview["diff"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(files, ["lib.rs", "two.txt"]);
    assert!(
        preview["diff"]["patch"]
            .as_str()
            .unwrap()
            .contains("-fn main() { two(); }"),
        "{preview}"
    );

    let (st, done) = s.post("/api/sessions/rv/turns/2/revert", json!({}));
    assert_eq!(st, 201, "{done}");
    assert_eq!(
        git(&dir, &["rev-parse", "HEAD"]).trim(),
        done["commit"].as_str().unwrap()
    );
    assert_eq!(
        git(&dir, &["log", "--format=%H", "HEAD~1"]),
        log_before,
        "history intact"
    );
    let subject = git(&dir, &["log", "-1", "--format=%s|%ae"]);
    assert_eq!(
        subject.trim(),
        "[agent rv] revert turn 2: second change|agent@openprogram.local"
    );
    assert!(!dir.join("two.txt").exists());
    assert_eq!(read(&dir, "lib.rs"), lib);
    assert_eq!(
        (read(&dir, "one.txt"), read(&dir, "three.txt")),
        ("1\n".into(), "3\n".into())
    );
    assert_clean_repo(&dir);
    let nodes = s.nodes_named("rv", "project/revert");
    assert_eq!(nodes.len(), 1, "the session records the undo");
    assert_eq!(nodes[0]["metadata"]["commit"], done["commit"]);
    assert_eq!(done["node_id"], nodes[0]["id"]);

    // A later turn (another session's) touches one.txt: undoing turn 1 is
    // refused with the file and the commit, and nothing changes.
    agent_turn(
        &s,
        &dir,
        "other",
        &pid,
        "edit one",
        &[("one.txt", "1 and more\n")],
    );
    let head = git(&dir, &["rev-parse", "HEAD"]);
    let (st, refused) = s.post("/api/sessions/rv/turns/1/revert", json!({}));
    assert_eq!(
        (st, refused["code"].as_str()),
        (409, Some("changed_since")),
        "{refused}"
    );
    assert_eq!(refused["paths"], json!(["one.txt"]));
    assert_eq!(refused["commits"][0]["commit"], head.trim());
    assert_eq!(git(&dir, &["rev-parse", "HEAD"]), head);
    // A dirty tree: refused with its paths.
    write(&dir, "wip.txt", "user wip\n");
    let (st, dirty) = s.post("/api/sessions/rv/turns/3/revert", json!({}));
    assert_eq!(
        (st, dirty["code"].as_str()),
        (409, Some("dirty_tree")),
        "{dirty}"
    );
    assert_eq!(dirty["paths"], json!(["wip.txt"]));
    let (_, preview) = s.get("/api/sessions/rv/turns/3/revert");
    assert_eq!(preview["can_revert"], false);
    assert_eq!(preview["refusals"][0]["code"], "dirty_tree");
    std::fs::remove_file(dir.join("wip.txt")).unwrap();
    // Bad ranges and unknown turns.
    for (path, code) in [
        ("/api/sessions/rv/turns/0/revert", 400),
        ("/api/sessions/rv/turns/3/revert?through=2", 400),
        ("/api/sessions/rv/turns/9/revert", 404),
        ("/api/sessions/nobody/turns/1/revert", 404),
    ] {
        let (st, e) = s.post(path, json!({}));
        assert_eq!(st, code, "{path}: {e}");
        assert!(e["code"].is_string());
    }
    assert_eq!(git(&dir, &["rev-parse", "HEAD"]), head);
}

#[test]
fn a_range_of_turns_is_undone_newest_first_as_one_commit_and_merges_are_refused() {
    let s = TestServer::start();
    let (_tmp, dir) = user_repo();
    let pid = create_project(&s, &dir);
    agent_turn(&s, &dir, "rg", &pid, "a", &[("a.txt", "a1\n")]);
    agent_turn(&s, &dir, "rg", &pid, "b", &[("a.txt", "a2\n")]);
    agent_turn(
        &s,
        &dir,
        "rg",
        &pid,
        "c",
        &[("a.txt", "a3\n"), ("c.txt", "c\n")],
    );
    let before = git(&dir, &["rev-list", "--count", "HEAD"]);
    // Turn 3 changed a.txt after turn 2: turn 2 alone is refused, naming it.
    let (st, refused) = s.post("/api/sessions/rg/turns/2/revert", json!({}));
    assert_eq!(
        (st, refused["code"].as_str()),
        (409, Some("changed_since")),
        "{refused}"
    );
    assert_eq!(refused["paths"], json!(["a.txt"]));
    assert_eq!(refused["commits"][0]["summary"], "[agent rg] turn 3: c");
    assert_eq!(
        git(&dir, &["rev-list", "--count", "HEAD"]),
        before,
        "nothing changed"
    );
    let (st, done) = s.post("/api/sessions/rg/turns/2/revert?through=3", json!({}));
    assert_eq!(st, 201, "{done}");
    assert_eq!(
        git(&dir, &["rev-list", "--count", "HEAD"])
            .trim()
            .parse::<u32>()
            .unwrap(),
        before.trim().parse::<u32>().unwrap() + 1,
        "one commit"
    );
    assert_eq!(read(&dir, "a.txt"), "a1\n");
    assert!(!dir.join("c.txt").exists());
    assert!(git(&dir, &["log", "-1", "--format=%s"]).starts_with("[agent rg] revert turns 3, 2: "));
    assert_clean_repo(&dir);

    // A merge commit carrying a turn's trailers is refused.
    git(&dir, &["checkout", "-q", "-b", "side"]);
    write(&dir, "side.txt", "side\n");
    git(&dir, &["add", "side.txt"]);
    git(
        &dir,
        &[
            "-c",
            "user.name=Ada",
            "-c",
            "user.email=ada@example.com",
            "commit",
            "-qm",
            "side",
        ],
    );
    git(&dir, &["checkout", "-q", "main"]);
    git(
        &dir,
        &[
            "-c",
            "user.name=agent",
            "-c",
            "user.email=agent@openprogram.local",
            "merge",
            "-q",
            "--no-ff",
            "side",
            "-m",
            "[agent rg] turn 9: merge\n\nOpenprogram-Session: rg\nOpenprogram-Turn: 9\n",
        ],
    );
    let (st, refused) = s.post("/api/sessions/rg/turns/9/revert", json!({}));
    assert_eq!(
        (st, refused["code"].as_str()),
        (409, Some("merge_commit")),
        "{refused}"
    );
}

#[test]
fn six_sessions_ending_at_once_each_commit_only_their_own_files() {
    let s = TestServer::start();
    let (_tmp, dir) = user_repo();
    let pid = create_project(&s, &dir);
    let ids: Vec<String> = (0..6).map(|i| format!("six{i}")).collect();
    for sid in &ids {
        open_turn(&s, sid, &pid, &format!("work of {sid}"));
    }
    for sid in &ids {
        write(&dir, &format!("{sid}.txt"), &format!("{sid}\n"));
    }
    let outs: Vec<(String, Value)> = std::thread::scope(|scope| {
        let handles: Vec<_> = ids
            .iter()
            .map(|sid| {
                let s = &s;
                scope.spawn(move || {
                    (
                        sid.clone(),
                        s.end_turn(sid, json!({"files": [format!("{sid}.txt")]})),
                    )
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (sid, out) in &outs {
        let sha = out["project_commit"]
            .as_str()
            .unwrap_or_else(|| panic!("{sid}: {out}"));
        assert_eq!(
            git(&dir, &["show", "--name-only", "--format=", sha]).trim(),
            format!("{sid}.txt")
        );
        assert!(git(&dir, &["log", "-1", "--format=%s", sha])
            .starts_with(&format!("[agent {sid}] turn 1:")));
    }
    assert_clean_repo(&dir);

    // Without `files`: a file another open turn claimed (a node's
    // metadata.files) stays out of this turn's commit.
    open_turn(&s, "ca", &pid, "a");
    open_turn(&s, "cb", &pid, "b");
    s.append("ca", json!({"role": "code", "name": "edit", "caller": "ROOT", "content": null, "metadata": {"files": ["mine-a.txt"]}}));
    write(&dir, "mine-a.txt", "a\n");
    write(&dir, "mine-b.txt", "b\n");
    let b = s.end_turn("cb", json!({}));
    let sha = b["project_commit"].as_str().unwrap();
    assert_eq!(
        git(&dir, &["show", "--name-only", "--format=", sha]).trim(),
        "mine-b.txt"
    );
    let a = s.end_turn("ca", json!({}));
    let sha = a["project_commit"].as_str().unwrap();
    assert_eq!(
        git(&dir, &["show", "--name-only", "--format=", sha]).trim(),
        "mine-a.txt"
    );
    assert_clean_repo(&dir);
    // Bad paths in `files` are refused before anything is written.
    open_turn(&s, "cc", &pid, "c");
    for bad in [
        json!(["../x"]),
        json!(["/etc/passwd"]),
        json!([".git/config"]),
        json!([""]),
    ] {
        let (st, e) = s.post("/api/sessions/cc/turns", json!({"files": bad}));
        assert_eq!(
            (st, e["code"].as_str()),
            (400, Some("invalid_input")),
            "{bad}: {e}"
        );
    }
}

#[test]
fn turns_of_two_sessions_and_a_revert_at_once_are_serialized_and_nothing_is_lost() {
    let s = TestServer::start();
    let (_tmp, dir) = user_repo();
    let pid = create_project(&s, &dir);
    agent_turn(&s, &dir, "base", &pid, "base", &[("base.txt", "base\n")]);
    let results: Vec<(u16, Value)> = std::thread::scope(|scope| {
        let writers: Vec<_> = ["wx", "wy"]
            .into_iter()
            .map(|sid| {
                let (s, dir, pid) = (&s, &dir, &pid);
                scope.spawn(move || {
                    for t in 0..4 {
                        open_turn(s, sid, pid, &format!("{sid} {t}"));
                        let f = format!("{sid}-{t}.txt");
                        write(dir, &f, "x\n");
                        s.end_turn(sid, json!({"files": [f]}));
                    }
                })
            })
            .collect();
        let reverts: Vec<(u16, Value)> = (0..6)
            .map(|_| s.post("/api/sessions/base/turns/1/revert", json!({})))
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        reverts
    });
    let done = results.iter().filter(|(st, _)| *st == 201).count();
    for (st, v) in &results {
        assert!(
            *st == 201
                || (*st == 409
                    && ["dirty_tree", "changed_since"].contains(&v["code"].as_str().unwrap_or(""))),
            "{st} {v}"
        );
    }
    if done == 0 {
        let (st, v) = s.post("/api/sessions/base/turns/1/revert", json!({}));
        assert_eq!(st, 201, "{v}");
    }
    assert!(!dir.join("base.txt").exists(), "the revert landed once");
    let files = git(&dir, &["ls-tree", "--name-only", "HEAD"]);
    let status = git(&dir, &["status", "--porcelain"]);
    for sid in ["wx", "wy"] {
        for t in 0..4 {
            let f = format!("{sid}-{t}.txt");
            assert!(
                files.lines().any(|l| l == f) || status.contains(&f),
                "{f} lost"
            );
            assert!(dir.join(&f).exists(), "{f} removed from the work tree");
        }
    }
    for parents in git(&dir, &["log", "--format=%P"]).lines() {
        assert!(parents.split_whitespace().count() <= 1, "history is linear");
    }
    git(&dir, &["fsck", "--strict", "--no-progress"]);
}

#[test]
fn the_original_clients_turn_file_card_lists_diffs_and_undoes_a_turn() {
    let s = TestServer::start();
    let (_tmp, dir) = user_repo();
    let pid = create_project(&s, &dir);
    open_turn(&s, "wsu", &pid, "write a file");
    write(&dir, "w.txt", "one\ntwo\n");
    s.end_turn("wsu", json!({}));
    let (_, msgs) = s.get("/api/sessions/wsu/messages");
    let assistant = msgs["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "assistant")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut ws = WsClient::connect(&s);
    ws.send(
        json!({"action": "list_turn_files", "session_id": "wsu", "assistant_msg_id": assistant}),
    );
    let listed = ws.next_where(|f| f["type"] == "list_turn_files_result");
    let files = listed["data"]["files"].as_array().unwrap();
    assert_eq!(files.len(), 1, "{listed}");
    assert_eq!(files[0]["rel"], "w.txt");
    assert_eq!(files[0]["op"], "add");
    assert_eq!(files[0]["added"], 2);
    assert_eq!(files[0]["path"], dir.join("w.txt").display().to_string());
    assert_eq!(listed["data"]["reverted"], false);
    ws.send(json!({"action": "turn_file_diff", "session_id": "wsu", "assistant_msg_id": assistant, "path": files[0]["path"]}));
    let diff = ws.next_where(|f| f["type"] == "turn_file_diff_result");
    assert!(
        diff["data"]["diff"].as_str().unwrap().contains("+two"),
        "{diff}"
    );
    ws.send(json!({"action": "revert_preview", "session_id": "wsu", "turn": 1}));
    let preview = ws.next_where(|f| f["type"] == "revert_preview");
    assert_eq!(preview["data"]["can_revert"], true, "{preview}");
    ws.send(json!({"action": "revert_turn", "session_id": "wsu", "msg_id": assistant}));
    let reverted = ws.next_where(|f| f["type"] == "revert_turn_result");
    assert_eq!(reverted["data"]["errors"], json!([]), "{reverted}");
    assert_eq!(
        reverted["data"]["reverted_paths"],
        json!([dir.join("w.txt").display().to_string()])
    );
    assert!(!dir.join("w.txt").exists());
    ws.send(
        json!({"action": "list_turn_files", "session_id": "wsu", "assistant_msg_id": assistant}),
    );
    let again = ws.next_where(|f| f["type"] == "list_turn_files_result");
    assert_eq!(again["data"]["reverted"], true, "{again}");
    ws.send(json!({"action": "revert_turn", "session_id": "wsu", "msg_id": assistant}));
    let twice = ws.next_where(|f| f["type"] == "revert_turn_result");
    assert_eq!(twice["data"]["code"], "changed_since", "{twice}");
    ws.send(json!({"action": "agent_turns", "project_id": pid}));
    let turns = ws.next_where(|f| f["type"] == "agent_turns");
    assert_eq!(
        turns["data"]["sessions"][0]["turns"][0]["reverted_by"], reverted["data"]["commit"],
        "{turns}"
    );
}
