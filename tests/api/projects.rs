use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::helpers::{assert_clean_repo, git, turn_commits, TestServer};

/// A user's repository with one commit of their own.
pub(crate) fn user_repo() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("work");
    std::fs::create_dir_all(&dir).unwrap();
    git(&dir, &["init", "-q", "-b", "main"]);
    std::fs::write(dir.join("README.md"), "user text\n").unwrap();
    std::fs::write(dir.join("lib.rs"), "fn main() {}\n").unwrap();
    git(&dir, &["add", "-A"]);
    git(
        &dir,
        &[
            "-c",
            "user.name=Ada",
            "-c",
            "user.email=ada@example.com",
            "commit",
            "-q",
            "-m",
            "user commit",
        ],
    );
    let dir = dir.canonicalize().unwrap();
    (tmp, dir)
}

/// A project as `GET /api/projects` lists it.
fn listed_project(s: &TestServer, pid: &str) -> Value {
    let (_, list) = s.get("/api/projects");
    list["projects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == pid)
        .expect("listed project")
        .clone()
}

pub(crate) fn create_project(s: &TestServer, dir: &Path) -> String {
    let (st, p) = s.post("/api/projects", json!({"path": dir, "name": "Work"}));
    assert_eq!(st, 201, "{p}");
    p["id"].as_str().unwrap().to_string()
}

/// Open a turn in a session bound to `project` (created by the message).
pub(crate) fn open_turn(s: &TestServer, sid: &str, project: &str, text: &str) {
    s.append(sid, json!({"role": "user", "content": text, "session": {"project_id": project, "model": "model-x"}}));
    s.append(
        sid,
        json!({"role": "assistant", "content": "editing files"}),
    );
}

/// The agent's commit is signed with the model that wrote the turn: the
/// reply's `metadata.model` (as the built-in runner writes it) over the
/// session's own model.
#[test]
fn the_agent_commit_names_the_model_of_the_reply() {
    let s = TestServer::start();
    let (_tmp, dir) = user_repo();
    let pid = create_project(&s, &dir);
    s.append(
        "pm1",
        json!({"role": "user", "content": "Add a file", "session": {"project_id": pid}}),
    );
    s.append(
        "pm1",
        json!({"role": "assistant", "content": "done", "metadata": {"runner": "llm", "model": "stand-in-7b"}}),
    );
    std::fs::write(dir.join("added.rs"), "// added\n").unwrap();
    let out = s.end_turn("pm1", json!({}));
    assert!(out["project_commit"].is_string(), "{out}");
    assert_eq!(
        git(&dir, &["log", "-1", "--format=%an|%cn"]).trim(),
        "agent (stand-in-7b via OpenProgram)|agent (stand-in-7b via OpenProgram)"
    );
}

#[test]
fn clean_tree_gets_one_attributed_agent_commit() {
    let s = TestServer::start();
    let (_tmp, dir) = user_repo();
    let pid = create_project(&s, &dir);
    let (st, again) = s.post("/api/projects", json!({"path": dir}));
    assert_eq!(
        (st, again["id"].as_str().unwrap()),
        (200, pid.as_str()),
        "the same folder gives the same project"
    );
    assert!(dir.join(".openprogram/.gitignore").is_file());
    assert_eq!(
        git(&dir, &["status", "--porcelain"]),
        "",
        "our folder is ignored by the user's git"
    );

    open_turn(
        &s,
        "ps1",
        &pid,
        "Add a greeting function to the library please",
    );
    let session_dir = dir.join(".openprogram/sessions/ps1");
    assert!(
        session_dir.join("meta.json").is_file(),
        "the session repo lands inside the project"
    );
    std::fs::write(dir.join("lib.rs"), "fn main() {}\nfn greet() {}\n").unwrap();
    std::fs::write(dir.join("new.rs"), "// new\n").unwrap();
    let out = s.end_turn("ps1", json!({}));
    let sha = out["project_commit"]
        .as_str()
        .expect("project commit")
        .to_string();
    assert!(out.get("project_commit_skipped").is_none());

    assert_eq!(git(&dir, &["rev-parse", "HEAD"]).trim(), sha);
    assert_eq!(git(&dir, &["log", "-1", "--format=%an <%ae>|%cn <%ce>"]).trim(),
        "agent (model-x via OpenProgram) <agent@openprogram.local>|agent (model-x via OpenProgram) <agent@openprogram.local>");
    let msg = git(&dir, &["log", "-1", "--format=%B"]);
    assert!(
        msg.starts_with("[agent ps1] turn 1: Add a greeting function to the library please\n"),
        "{msg}"
    );
    assert_eq!(
        git(
            &dir,
            &[
                "log",
                "-1",
                "--format=%(trailers:key=Openprogram-Session,valueonly)"
            ]
        )
        .trim(),
        "ps1"
    );
    assert_eq!(
        git(
            &dir,
            &[
                "log",
                "-1",
                "--format=%(trailers:key=Openprogram-Turn,valueonly)"
            ]
        )
        .trim(),
        "1"
    );
    assert_eq!(
        git(&dir, &["show", "--name-only", "--format=", "HEAD"]).trim(),
        "lib.rs\nnew.rs"
    );
    assert_eq!(
        git(&dir, &["log", "-1", "--format=%s", "HEAD~1"]).trim(),
        "user commit"
    );
    assert_eq!(
        git(&dir, &["status", "--porcelain"]),
        "",
        "the user's git status stays correct"
    );
    git(&dir, &["fsck", "--no-progress"]);
    // The session's turn commit records the project commit.
    let trailer = git(
        &session_dir,
        &[
            "log",
            "-1",
            "--format=%(trailers:key=Openprogram-Project-Commit,valueonly)",
        ],
    );
    assert_eq!(trailer.trim(), sha);
    assert_clean_repo(&session_dir);
    // Read: the project's agent commits (the user's own are not listed).
    let (_, log) = s.get(&format!("/api/projects/{pid}/commits"));
    let commits = log["commits"].as_array().unwrap();
    assert_eq!(commits.len(), 1);
    assert_eq!(commits[0]["sha"], sha.as_str());
    assert_eq!(commits[0]["session_id"], "ps1");
    // A turn that changes nothing makes no project commit.
    open_turn(&s, "ps1", &pid, "just a question");
    let out = s.end_turn("ps1", json!({}));
    assert!(
        out.get("project_commit").is_none() && out.get("project_commit_skipped").is_none(),
        "{out}"
    );
    assert_eq!(turn_commits(&dir, "HEAD"), "2");
    let (_, projects) = s.get("/api/projects");
    let listed = projects["projects"].as_array().unwrap();
    assert_eq!(listed[0]["id"], "default");
    assert_eq!(listed[1]["session_count"], 1);
    assert_eq!(listed[1]["path_missing"], false);
}

#[test]
fn dirty_tree_is_never_committed_and_user_files_are_untouched() {
    let s = TestServer::start();
    let (_tmp, dir) = user_repo();
    let pid = create_project(&s, &dir);
    std::fs::write(dir.join("README.md"), "user edit in progress\n").unwrap();
    std::fs::write(dir.join("notes.txt"), "untracked user notes\n").unwrap();
    let before: Vec<(String, Vec<u8>)> = ["README.md", "notes.txt", "lib.rs"]
        .iter()
        .map(|f| (f.to_string(), std::fs::read(dir.join(f)).unwrap()))
        .collect();
    let head = git(&dir, &["rev-parse", "HEAD"]);
    open_turn(&s, "pd", &pid, "refactor");
    std::fs::write(dir.join("agent.rs"), "// agent\n").unwrap();
    let out = s.end_turn("pd", json!({}));
    assert!(out.get("project_commit").is_none());
    let warn = &out["project_commit_skipped"];
    assert_eq!(warn["warning"], "project_commit_skipped");
    assert!(
        warn["reason"]
            .as_str()
            .unwrap()
            .contains("uncommitted changes"),
        "{warn}"
    );
    assert_eq!(warn["dirty_paths"], json!(["README.md", "notes.txt"]));
    assert_eq!(git(&dir, &["rev-parse", "HEAD"]), head, "no commit");
    for (f, bytes) in before {
        assert_eq!(std::fs::read(dir.join(&f)).unwrap(), bytes, "{f} changed");
    }
    let status = git(&dir, &["status", "--porcelain"]);
    assert_eq!(
        status, " M README.md\n?? agent.rs\n?? notes.txt\n",
        "nothing staged by us"
    );
}

/// Many sessions of one project ending turns at the same time. The project
/// actor serializes the commits: no error, nothing half-staged, a linear
/// history holding every reported commit, and no file lost (each one is
/// either committed or still in the working tree, since a turn that began
/// on a tree another session had dirtied is skipped by design).
#[test]
fn concurrent_sessions_commit_into_one_project_without_racing() {
    let s = TestServer::start();
    let (_tmp, dir) = user_repo();
    let pid = create_project(&s, &dir);
    let sessions = ["c1", "c2", "c3", "c4"];
    let outcomes: Vec<Value> = std::thread::scope(|scope| {
        let handles: Vec<_> = sessions
            .iter()
            .map(|sid| {
                let (s, dir, pid) = (&s, &dir, &pid);
                scope.spawn(move || {
                    let mut outs = Vec::new();
                    for t in 0..3 {
                        open_turn(s, sid, pid, &format!("{sid} turn {t}"));
                        std::fs::write(dir.join(format!("{sid}-{t}.txt")), format!("{sid} {t}\n"))
                            .unwrap();
                        outs.push(s.end_turn(sid, json!({})));
                    }
                    outs
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    let history = git(&dir, &["rev-list", "HEAD"]);
    let mut commits = 0;
    for out in &outcomes {
        if let Some(sha) = out["project_commit"].as_str() {
            assert!(
                history.contains(sha),
                "reported commit {sha} is in the history"
            );
            commits += 1;
        } else if let Some(skip) = out.get("project_commit_skipped") {
            // Expected: another session's edits were still uncommitted when
            // this turn began. Anything else is printed for diagnosis (seen
            // once under full-suite load, reason not captured); the
            // properties below are what must hold either way.
            let reason = skip["reason"].as_str().unwrap_or("");
            if !reason.contains("uncommitted changes") {
                eprintln!("unexpected skip reason: {skip}");
            }
        }
    }
    assert!(commits >= 1, "{outcomes:?}");
    for parents in git(&dir, &["log", "--format=%P"]).lines() {
        assert!(parents.split_whitespace().count() <= 1, "history is linear");
    }
    assert_eq!(
        git(&dir, &["diff", "--cached", "--name-only"]),
        "",
        "nothing left half-staged"
    );
    assert!(!dir.join(".git/index.lock").exists());
    let files = git(&dir, &["ls-tree", "--name-only", "HEAD"]);
    let status = git(&dir, &["status", "--porcelain"]);
    for sid in sessions {
        for t in 0..3 {
            let f = format!("{sid}-{t}.txt");
            assert!(
                files.lines().any(|l| l == f) || status.contains(&format!("?? {f}")),
                "{f} lost"
            );
        }
    }
    git(&dir, &["fsck", "--no-progress"]);
}

/// Two sessions whose turns both began on a clean tree end at once: the
/// first commit takes every change (`git add -A`), the second finds nothing
/// left; one commit, linear, clean.
#[test]
fn two_sessions_ending_at_once_share_one_clean_history() {
    let s = TestServer::start();
    let (_tmp, dir) = user_repo();
    let pid = create_project(&s, &dir);
    open_turn(&s, "ta", &pid, "a");
    open_turn(&s, "tb", &pid, "b");
    std::fs::write(dir.join("a.txt"), "a\n").unwrap();
    std::fs::write(dir.join("b.txt"), "b\n").unwrap();
    let outs: Vec<Value> = std::thread::scope(|scope| {
        let a = scope.spawn(|| s.end_turn("ta", json!({})));
        let b = scope.spawn(|| s.end_turn("tb", json!({})));
        vec![a.join().unwrap(), b.join().unwrap()]
    });
    let shas: Vec<&str> = outs
        .iter()
        .filter_map(|o| o["project_commit"].as_str())
        .collect();
    assert_eq!(shas.len(), 1, "{outs:?}");
    assert!(
        outs.iter()
            .all(|o| o.get("project_commit_skipped").is_none()),
        "{outs:?}"
    );
    assert_eq!(git(&dir, &["rev-parse", "HEAD"]).trim(), shas[0]);
    assert_eq!(
        git(&dir, &["show", "--name-only", "--format=", "HEAD"]).trim(),
        "a.txt\nb.txt"
    );
    assert_eq!(turn_commits(&dir, "HEAD"), "2");
    assert_eq!(git(&dir, &["status", "--porcelain"]), "");
}

#[test]
fn a_whole_turn_that_makes_a_session_in_a_project_puts_its_repository_there() {
    let mut s = TestServer::start_process();
    let (_tmp, dir) = user_repo();
    let pid = create_project(&s, &dir);
    let (st, v) = s.post(
        "/api/sessions/wt/turns",
        json!({"session": {"project_id": pid}, "nodes": [
            {"id": "u1", "role": "user", "content": "Made by a whole turn"},
            {"id": "a1", "role": "assistant", "content": "In the project"}]}),
    );
    assert_eq!(st, 201, "{v}");
    // As a session made by a message or bound later: inside the project.
    let inside = dir.join(".openprogram/sessions/wt");
    assert!(inside.join("meta.json").is_file(), "{}", inside.display());
    assert!(!s.session_dir("wt").exists());
    assert_eq!(turn_commits(&inside, "main"), "1");
    assert_clean_repo(&inside);
    let (_, meta) = s.get("/api/sessions/wt");
    assert_eq!(meta["project_id"], pid.as_str());
    // And it stays there across a restart.
    s.restart_after_kill();
    let (st, nodes) = s.get("/api/sessions/wt/nodes");
    assert_eq!(st, 200, "{nodes}");
    assert!(inside.join("meta.json").is_file() && !s.session_dir("wt").exists());
}

#[test]
fn binding_freezes_after_the_first_turn_and_rebinding_is_idempotent() {
    let s = TestServer::start();
    let (_tmp, dir) = user_repo();
    let pid = create_project(&s, &dir);
    // A draft in the default project moves into the project when bound.
    s.post("/api/sessions", json!({"id": "draft"}));
    assert!(s.session_dir("draft").is_dir());
    let (st, meta) = s.put("/api/sessions/draft/project", json!({"project_id": pid}));
    assert_eq!(st, 200, "{meta}");
    assert_eq!(meta["project_id"], pid.as_str());
    let inside = dir.join(".openprogram/sessions/draft");
    assert!(inside.join("meta.json").is_file() && !s.session_dir("draft").exists());
    assert_eq!(
        s.put("/api/sessions/draft/project", json!({"project_id": pid}))
            .0,
        200
    );
    s.turn("draft", "first real message", "ok", &[]);
    assert_clean_repo(&inside);
    let (st, err) = s.put(
        "/api/sessions/draft/project",
        json!({"project_id": "default"}),
    );
    assert_eq!(st, 409);
    assert_eq!(err["error"], "project is frozen after the first turn");
    let (st, _) = s.put("/api/sessions/draft/project", json!({"project_id": pid}));
    assert_eq!(st, 200, "naming the same project always succeeds");
    // The freeze is judged first (the original's order of errors).
    assert_eq!(
        s.put(
            "/api/sessions/draft/project",
            json!({"project_id": "proj_nope"})
        )
        .0,
        409
    );
    assert_eq!(s.post("/api/sessions", json!({"id": "fresh"})).0, 201);
    let (st, err) = s.put(
        "/api/sessions/fresh/project",
        json!({"project_id": "proj_nope"}),
    );
    assert_eq!((st, err["error"].as_str()), (404, Some("unknown project")));
    assert_eq!(
        s.put("/api/sessions/ghost/project", json!({"project_id": pid}))
            .0,
        404
    );
    // Sessions created with a project and listed with it.
    let (_, page) = s.get(&format!("/api/sessions?project_id={pid}"));
    assert_eq!(page["sessions"][0]["id"], "draft");
    let (st, _) = s.post(
        "/api/sessions/x/messages",
        json!({"role": "user", "content": "hi", "session": {"project_id": "proj_nope"}}),
    );
    assert_eq!(st, 404);
    assert!(!s.session_dir("x").exists());
}

#[test]
fn relocate_keeps_the_id_and_records_one_node() {
    let s = TestServer::start();
    let (tmp, dir) = user_repo();
    let pid = create_project(&s, &dir);
    s.turn_in_project("rl", &pid);
    let (_, before) = s.get("/api/sessions/rl");
    let moved = tmp.path().join("renamed-work");
    std::fs::rename(&dir, &moved).unwrap();
    let p = listed_project(&s, &pid);
    assert_eq!(p["path_missing"], true);

    let (st, res) = s.post(
        &format!("/api/projects/{pid}/relocate"),
        json!({"path": moved, "session_id": "rl"}),
    );
    assert_eq!(st, 200, "{res}");
    assert_eq!(res["ok"], true);
    assert_eq!(res["project"]["id"], pid.as_str());
    assert_eq!(res["old_path"], dir.to_str().unwrap());
    assert_eq!(res["path"], moved.canonicalize().unwrap().to_str().unwrap());
    assert_eq!(res["node_ids"].as_array().unwrap().len(), 1);
    let relocs = s.nodes_named("rl", "project/relocate");
    assert_eq!(relocs.len(), 1);
    let n = &relocs[0];
    assert_eq!(
        (n["role"].as_str(), n["caller"].as_str()),
        (Some("code"), Some("ROOT"))
    );
    assert!(n["predecessor"].is_null());
    assert_eq!(
        n["output"],
        format!(
            "{} → {}",
            dir.display(),
            moved.canonicalize().unwrap().display()
        )
    );
    assert_eq!(n["metadata"]["display"], "runtime");
    assert_eq!(n["metadata"]["project_id"], pid.as_str());
    let (_, after) = s.get("/api/sessions/rl");
    assert_eq!(
        after["head"], before["head"],
        "recording a relocation never moves the head"
    );
    // The session works at the new place, and commits go to the moved repo.
    s.turn_in_project("rl", &pid);
    assert_eq!(
        turn_commits(&moved.join(".openprogram/sessions/rl"), "HEAD"),
        "2"
    );
    let p = listed_project(&s, &pid);
    assert_eq!(p["path_missing"], false);
    // The default project refuses; bad paths are refused.
    assert_eq!(
        s.post("/api/projects/default/relocate", json!({"path": moved}))
            .0,
        409
    );
    assert_eq!(
        s.post(
            &format!("/api/projects/{pid}/relocate"),
            json!({"path": "relative/dir"})
        )
        .0,
        400
    );
    assert_eq!(
        s.post("/api/projects/proj_nope/relocate", json!({"path": moved}))
            .0,
        404
    );
}

#[test]
fn unbind_removes_the_registration_only() {
    let s = TestServer::start();
    let (_tmp, dir) = user_repo();
    let pid = create_project(&s, &dir);
    s.turn_in_project("ub", &pid);
    let (st, res) = s.raw_delete(&format!("/api/projects/{pid}"));
    assert_eq!(st, 200, "{res}");
    assert!(dir.join(".git").is_dir(), "the user's .git stays");
    assert_eq!(
        git(&dir, &["log", "-1", "--format=%s", "HEAD"]).trim(),
        "user commit",
        "the agent changed nothing"
    );
    let (_, meta) = s.get("/api/sessions/ub");
    assert_eq!(meta["project_id"], pid.as_str(), "a historical pointer");
    assert!(dir.join(".openprogram/sessions/ub/.git").is_dir());
    let (_, list) = s.get("/api/projects");
    assert_eq!(
        list["projects"].as_array().unwrap().len(),
        1,
        "only the default project is left"
    );
    assert_eq!(s.raw_delete(&format!("/api/projects/{pid}")).0, 404);
    assert_eq!(s.raw_delete("/api/projects/default").0, 409);
}

#[test]
fn bad_project_paths_are_refused_and_nothing_is_written() {
    let s = TestServer::start();
    let (tmp, dir) = user_repo();
    let file = tmp.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let inside_op = dir.join(".openprogram/sessions");
    std::fs::create_dir_all(&inside_op).unwrap();
    for (path, why) in [
        (json!("relative/path"), "absolute"),
        (json!(""), "required"),
        (json!(file), "not a directory"),
        (json!(tmp.path().join("missing")), "not a directory: "),
        (json!(s.state_dir), "state directory"),
        (json!(s.state_dir.join("sessions")), "state directory"),
        (json!(inside_op), ".openprogram"),
    ] {
        let (st, err) = s.post("/api/projects", json!({"path": path}));
        assert_eq!(st, 400, "{path}: {err}");
        assert_eq!(err["code"], "invalid_path");
        assert!(
            err["error"].as_str().unwrap().contains(why),
            "{path}: {err}"
        );
    }
    assert!(!s.state_dir.join("projects/projects.json").exists());
    assert!(!tmp.path().join("missing").exists());
    // Symlinks are resolved before comparing: a link to a project is that project.
    let pid = create_project(&s, &dir);
    let link = tmp.path().join("link-to-work");
    std::os::unix::fs::symlink(&dir, &link).unwrap();
    let (st, p) = s.post("/api/projects", json!({"path": link}));
    assert_eq!((st, p["id"].as_str().unwrap()), (200, pid.as_str()));
    // A folder without git gets `git init`.
    let fresh = tmp.path().join("fresh");
    std::fs::create_dir_all(&fresh).unwrap();
    let (st, _) = s.post("/api/projects", json!({"path": fresh}));
    assert_eq!(st, 201);
    assert!(fresh.join(".git").is_dir());
}

#[test]
fn cli_lists_creates_and_relocates_projects() {
    let s = TestServer::start();
    let (tmp, dir) = user_repo();
    // A path relative to where the CLI runs.
    let (code, out, err) = s.cli(
        &["projects", "create", "work", "--name", "Work"],
        Some(tmp.path()),
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("Project proj_") && out.contains("(Work)"),
        "{out}"
    );
    let pid = out.split_whitespace().nth(1).unwrap().to_string();
    let (code, out, _) = s.cli(&["projects", "list"], None);
    assert_eq!(code, 0);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("default\t"));
    assert!(
        lines[1].starts_with(&format!("{pid}\tWork\t{}", dir.display())),
        "{out}"
    );
    let moved = tmp.path().join("moved");
    std::fs::rename(&dir, &moved).unwrap();
    let (_, out, _) = s.cli(&["projects", "list"], None);
    assert!(out.contains("[folder missing]"), "{out}");
    let (code, out, err) = s.cli(
        &["projects", "relocate", &pid, moved.to_str().unwrap()],
        None,
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with(&format!("Relocated project {pid}: ")),
        "{out}"
    );
    let (code, _, err) = s.cli(
        &["projects", "relocate", "proj_nope", moved.to_str().unwrap()],
        None,
    );
    assert_eq!(
        (code, err.as_str()),
        (1, "[error] no project 'proj_nope' found.\n")
    );
    let (code, _, err) = s.cli(&["projects", "create", "/definitely/not/here"], None);
    assert_eq!(code, 1);
    assert!(err.contains("not a directory: "), "{err}");
}

#[test]
fn working_dirs_come_and_go_and_cwd_never_falls_back_to_home() {
    let s = TestServer::start();
    let (tmp, dir) = user_repo();
    let pid = create_project(&s, &dir);
    s.turn_in_project("wd", &pid);
    let (_, meta) = s.get("/api/sessions/wd");
    assert_eq!(meta["cwd"], dir.to_str().unwrap());
    assert_eq!(meta["project_path_missing"], false);
    // Additional working directories: any time, even after the freeze.
    let extra = tmp.path().join("extra");
    std::fs::create_dir_all(&extra).unwrap();
    let (st, res) = s.post("/api/sessions/wd/working_dirs", json!({"path": extra}));
    assert_eq!(st, 200, "{res}");
    assert_eq!(res["working_dirs"], json!([extra.canonicalize().unwrap()]));
    assert_eq!(
        s.post("/api/sessions/wd/working_dirs", json!({"path": "rel"}))
            .0,
        400
    );
    assert_eq!(
        s.post(
            "/api/sessions/wd/working_dirs",
            json!({"path": tmp.path().join("nope")})
        )
        .0,
        400
    );
    let (st, res) = s.raw_delete(&format!(
        "/api/sessions/wd/working_dirs?path={}",
        extra.display()
    ));
    assert_eq!((st, res["working_dirs"].clone()), (200, json!([])));
    // Unbound project: tools run in the session's own workdir, not in home.
    s.raw_delete(&format!("/api/projects/{pid}"));
    let (_, meta) = s.get("/api/sessions/wd");
    assert_eq!(
        meta["cwd"],
        dir.join(".openprogram/sessions/wd/workdir")
            .to_str()
            .unwrap()
    );
    // Default-project sessions run in the home directory (a logical label).
    s.turn("home-s", "hi", "r", &[]);
    let (_, meta) = s.get("/api/sessions/home-s");
    assert_eq!(meta["cwd"], std::env::var("HOME").unwrap());
}

#[test]
fn a_repository_mid_merge_is_refused_clearly() {
    let s = TestServer::start();
    let (_tmp, dir) = user_repo();
    let pid = create_project(&s, &dir);
    let head = git(&dir, &["rev-parse", "HEAD"]);
    std::fs::write(dir.join(".git/MERGE_HEAD"), &head).unwrap();
    open_turn(&s, "mm", &pid, "change things");
    std::fs::write(dir.join("agent.txt"), "x").unwrap();
    let out = s.end_turn("mm", json!({}));
    let reason = out["project_commit_skipped"]["reason"].as_str().unwrap();
    assert!(reason.contains("middle of an operation"), "{reason}");
    assert_eq!(git(&dir, &["rev-parse", "HEAD"]), head);
    assert!(
        dir.join(".git/MERGE_HEAD").exists(),
        "the user's merge is untouched"
    );
}

#[test]
fn a_retried_answer_in_a_project_commits_the_agents_changes_too() {
    let s = TestServer::start();
    let (_tmp, dir) = user_repo();
    let pid = create_project(&s, &dir);
    s.append(
        "pr",
        json!({"id": "u1", "role": "user", "content": "Write the greeting", "session": {"project_id": pid, "model": "model-x"}}),
    );
    s.append(
        "pr",
        json!({"id": "a1", "role": "assistant", "content": "first try"}),
    );
    std::fs::write(dir.join("greet.rs"), "// v1\n").unwrap();
    let first = s.end_turn("pr", json!({}));
    assert!(first["project_commit"].is_string(), "{first}");
    // The retry opens a turn of its own, with a baseline of the clean tree.
    let r = s.append(
        "pr",
        json!({"id": "a1b", "role": "assistant", "predecessor": "u1", "content": "second try"}),
    );
    assert_eq!(r["turn"], 1);
    std::fs::write(dir.join("greet.rs"), "// v2\n").unwrap();
    let out = s.end_turn("pr", json!({}));
    let sha = out["project_commit"].as_str().expect("project commit");
    assert_eq!(git(&dir, &["rev-parse", "HEAD"]).trim(), sha);
    assert_eq!(
        turn_commits(&dir, "HEAD"),
        "3",
        "{first} {out} {}",
        git(&dir, &["log", "--format=%H %s"])
    );
    let subject = git(&dir, &["log", "-1", "--format=%s"]);
    assert!(
        subject.contains("turn 1: Write the greeting"),
        "the agent commit names the message answered again: {subject}"
    );
    assert_eq!(git(&dir, &["status", "--porcelain"]), "");
    let session_dir = dir.join(".openprogram/sessions/pr");
    assert_eq!(
        git(&session_dir, &["symbolic-ref", "--short", "HEAD"]).trim(),
        "retry-a1b"
    );
    let trailers = git(&session_dir, &["log", "-1", "--format=%B"]);
    assert!(
        trailers.contains(&format!("Openprogram-Project-Commit: {sha}")),
        "{trailers}"
    );
    assert_clean_repo(&session_dir);
}

/// An import of a session that lives in a project folder: its id is taken
/// (though `<state>/sessions/<id>` is free), so the copy gets a new one and
/// the original keeps every turn. Found by the crash model (seed 1134).
#[test]
fn an_import_never_takes_the_id_of_a_session_in_a_project() {
    let root = tempfile::tempdir().unwrap();
    let folder = root.path().join("work");
    std::fs::create_dir(&folder).unwrap();
    let s = TestServer::start();
    let (_, p) = s.post("/api/projects", json!({"path": folder}));
    let pid = p["id"].as_str().unwrap().to_string();
    s.turn_in_project("inp", &pid);
    let (status, _, bundle) = s.get_bytes("/api/sessions/inp/export");
    assert_eq!(status, 200);
    let (status, copy) = s.post_raw("/api/sessions/import", "application/x-git-bundle", &bundle);
    assert_eq!(status, 201, "{copy}");
    assert_ne!(copy["id"], "inp", "{copy}");
    s.turn("inp", "another turn", "still the original", &[]);
    let (_, meta) = s.get("/api/sessions/inp");
    assert_eq!(meta["project_id"], pid.as_str());
    assert_eq!(meta["turn_count"], 2);
    assert!(!s.state_dir.join("sessions/inp").exists());
}
