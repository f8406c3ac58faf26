use serde_json::json;

use crate::helpers::{assert_clean_repo, git, turn_commits, TestServer};

#[test]
fn whole_conversation_makes_one_commit_per_turn() {
    let s = TestServer::start();
    let long_user =
        "Please refactor the tokenizer so that it handles unicode escapes properly and add tests";
    let t1 = s.turn(
        "conv1",
        long_user,
        "I refactored the tokenizer.\nSecond line.",
        &["read", "grep", "grep", "list", "grep"],
    );
    let t2 = s.turn(
        "conv1",
        "thanks, now run the tests",
        "All 12 tests pass.",
        &[],
    );
    let t3 = s.turn("conv1", "ship it", "Shipped.", &["bash"]);
    assert_eq!(t1["turn"], 1);
    assert_eq!(t3["turn"], 3);

    let dir = s.session_dir("conv1");
    assert_clean_repo(&dir);
    // Nothing in .git that git does not need: no sample hooks, no
    // description, none of the template's empty folders.
    let hooks: Vec<_> = std::fs::read_dir(dir.join(".git/hooks"))
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(hooks.is_empty(), "hooks: {hooks:?}");
    assert!(!dir.join(".git/description").exists());
    for empty in ["hooks", "info", "objects/info", "refs/tags"] {
        assert!(!dir.join(".git").join(empty).exists(), ".git/{empty}");
    }
    assert_eq!(turn_commits(&dir, "HEAD"), "3");
    assert_eq!(
        git(&dir, &["rev-parse", "HEAD"]).trim(),
        t3["commit"].as_str().unwrap()
    );
    assert_eq!(
        git(&dir, &["rev-parse", "HEAD~1"]).trim(),
        t2["commit"].as_str().unwrap()
    );
    assert_eq!(
        git(&dir, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
        "main"
    );

    // Message format of spec 001 §2.2.
    let msg1 = git(
        &dir,
        &["log", "-1", "--format=%B", t1["commit"].as_str().unwrap()],
    );
    let mut lines = msg1.lines();
    assert_eq!(
        lines.next().unwrap(),
        format!("turn 1: {}", long_user.chars().take(60).collect::<String>())
    );
    assert_eq!(lines.next().unwrap(), "");
    assert_eq!(
        lines.next().unwrap(),
        "assistant: I refactored the tokenizer. Second line."
    );
    assert_eq!(lines.next().unwrap(), "tools: read, grep × 3, list");
    assert_eq!(lines.next().unwrap(), "");
    let meta_line = lines.next().unwrap();
    assert!(
        meta_line.starts_with("[meta: turn took ") && meta_line.ends_with("s, 5 tools]"),
        "{meta_line}"
    );
    let msg2 = git(
        &dir,
        &["log", "-1", "--format=%B", t2["commit"].as_str().unwrap()],
    );
    assert!(
        !msg2.contains("tools:"),
        "a turn without tools lists none: {msg2}"
    );

    // Trailers map each commit back to the DAG.
    let trailers = git(&dir, &["log", "--format=%(trailers:key=Openprogram-Turn,valueonly,separator=)|%(trailers:key=Openprogram-Last-Seq,valueonly,separator=)"]);
    let rows: Vec<&str> = trailers.lines().filter(|l| !l.is_empty()).collect();
    // The `session init` root carries no turn.
    assert_eq!(rows, vec!["3|12", "2|9", "1|7", "|"]);
    let head_node = git(
        &dir,
        &[
            "log",
            "-1",
            "--format=%(trailers:key=Openprogram-Head-Node,valueonly,separator=)",
        ],
    );
    let (_, msgs) = s.get("/api/sessions/conv1/messages");
    assert_eq!(head_node.trim(), msgs["head"].as_str().unwrap());

    // File names: six-digit sequence, role letter, node id; chronological.
    let files = git(&dir, &["ls-files", "history"]);
    let names: Vec<&str> = files.lines().collect();
    assert_eq!(names.len(), 12);
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
    let letters: String = names
        .iter()
        .map(|p| p.rsplit('/').next().unwrap().chars().nth(7).unwrap())
        .collect();
    assert_eq!(letters, "uatttttuauat");
    for (i, p) in names.iter().enumerate() {
        let name = p.rsplit('/').next().unwrap();
        assert!(name.starts_with(&format!("{:06}-", i + 1)), "{p}");
        assert!(p.starts_with("history/00/00/"), "{p}");
    }
    // Each commit holds exactly its own turn's files (plus meta.json).
    let changed = git(
        &dir,
        &[
            "diff-tree",
            "--no-commit-id",
            "--name-only",
            "-r",
            "HEAD~1",
            "HEAD",
        ],
    );
    let changed: Vec<&str> = changed.lines().collect();
    assert_eq!(changed.len(), 4, "{changed:?}");
    assert!(changed.contains(&"meta.json"));

    // The commit log endpoint agrees with git.
    let (st, log) = s.get("/api/sessions/conv1/commits?limit=2");
    assert_eq!(st, 200);
    let commits = log["commits"].as_array().unwrap();
    assert_eq!(commits.len(), 2);
    assert_eq!(commits[0]["sha"], t3["commit"]);
    assert_eq!(
        commits[0]["short_sha"].as_str().unwrap(),
        &t3["commit"]
            .as_str()
            .unwrap()
            .chars()
            .take(7)
            .collect::<String>()
    );
    assert!(commits[0]["message"]
        .as_str()
        .unwrap()
        .starts_with("turn 3: ship it"));

    // The rendered branch: user/assistant chain with tool results after their caller.
    let roles: Vec<&str> = msgs["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        vec![
            "user",
            "assistant",
            "tool",
            "tool",
            "tool",
            "tool",
            "tool",
            "user",
            "assistant",
            "user",
            "assistant",
            "tool"
        ]
    );
    let (_, nodes) = s.get("/api/sessions/conv1/nodes");
    assert_eq!(nodes["nodes"].as_array().unwrap().len(), 12);
    // A user message with no predecessor continues from the head.
    let all = nodes["nodes"].as_array().unwrap();
    assert_eq!(all[7]["predecessor"], all[1]["id"]);
    assert_eq!(all[2]["caller"], all[1]["id"]);

    let (_, meta) = s.get("/api/sessions/conv1");
    assert_eq!(meta["turn_count"], 3);
    assert_eq!(meta["status"], "idle");
    assert!(meta["open_turn"].is_null());
}

#[test]
fn ids_are_kept_and_appends_are_idempotent() {
    let s = TestServer::start();
    let (st, first) = s.post(
        "/api/sessions/idem/messages",
        json!({"id": "u-1", "role": "user", "content": "hi"}),
    );
    assert_eq!(st, 201);
    assert_eq!(first["node"]["id"], "u-1");
    let (st, again) = s.post(
        "/api/sessions/idem/messages",
        json!({"id": "u-1", "role": "user", "content": "hi"}),
    );
    assert_eq!(st, 200);
    assert_eq!(again["created"], false);
    assert_eq!(again["node"], first["node"]);
    let (_, nodes) = s.get("/api/sessions/idem/nodes");
    assert_eq!(nodes["nodes"].as_array().unwrap().len(), 1);
    assert!(s
        .session_dir("idem")
        .join("history/00/00/000001-u-u-1.json")
        .is_file());
    // The same id with another role is a conflict.
    let (st, err) = s.post(
        "/api/sessions/idem/messages",
        json!({"id": "u-1", "role": "assistant"}),
    );
    assert_eq!(st, 409);
    assert_eq!(err["code"], "node_conflict");
}

#[test]
fn ended_turns_are_immutable_and_open_ones_fillable() {
    let s = TestServer::start();
    s.append("imm", json!({"id": "u", "role": "user", "content": "q"}));
    s.append(
        "imm",
        json!({"id": "a", "role": "assistant", "content": ""}),
    );
    let (st, node) = s.patch(
        "/api/sessions/imm/messages/a",
        json!({"content": "partial", "metadata": {"k": 1}}),
    );
    assert_eq!(st, 200);
    assert_eq!(node["content"], "partial");
    let (st, node) = s.patch(
        "/api/sessions/imm/messages/a",
        json!({"content": "final", "metadata": {"j": 2}}),
    );
    assert_eq!(st, 200);
    assert_eq!(node["metadata"], json!({"k": 1, "j": 2}));
    s.end_turn("imm", json!({}));
    let (st, err) = s.patch(
        "/api/sessions/imm/messages/a",
        json!({"content": "rewrite history"}),
    );
    assert_eq!(st, 409);
    assert_eq!(err["code"], "node_immutable");
    let (st, _) = s.patch("/api/sessions/imm/messages/nope", json!({"content": "x"}));
    assert_eq!(st, 404);
    let dir = s.session_dir("imm");
    let stored = std::fs::read_to_string(dir.join("history/00/00/000002-a-a.json")).unwrap();
    assert!(stored.contains("\"final\""));
    assert_clean_repo(&dir);
}

#[test]
fn end_of_turn_sets_status_and_stores_context() {
    let s = TestServer::start();
    s.append("st", json!({"role": "user", "content": "one"}));
    let (_, meta) = s.get("/api/sessions/st");
    assert_eq!(meta["status"], "running");
    s.append("st", json!({"role": "assistant", "content": "r"}));
    let out = s.end_turn(
        "st",
        json!({"background": true, "duration_s": 12.34, "tokens": 4521, "tool_calls": 18,
               "context": {"messages": [{"role": "system", "content": "be brief"}]}, "context_id": "ctx-1"}),
    );
    assert_eq!(out["status"], "done");
    let (_, meta) = s.get("/api/sessions/st");
    assert_eq!(meta["status"], "done");
    assert_eq!(meta["unread"], true);
    let dir = s.session_dir("st");
    let msg = git(&dir, &["log", "-1", "--format=%B"]);
    assert!(
        msg.contains("[meta: turn took 12.3s, 18 tools, 4521 tokens]"),
        "{msg}"
    );
    let files = git(&dir, &["ls-files", "context"]);
    assert_eq!(files.trim(), "context/commits/ctx-1.json");
    assert_clean_repo(&dir);

    for (outcome, status) in [
        ("failed", "failed"),
        ("needs_input", "needs_input"),
        ("ok", "idle"),
    ] {
        s.append("st", json!({"role": "user", "content": outcome}));
        s.append("st", json!({"role": "assistant", "content": "r"}));
        let out = s.end_turn("st", json!({"outcome": outcome}));
        assert_eq!(out["status"], status);
    }
    assert_eq!(turn_commits(&dir, "HEAD"), "4");
}

#[test]
fn explicit_creation_and_reads() {
    let s = TestServer::start();
    let (st, meta) = s.post(
        "/api/sessions",
        json!({"id": "made", "agent_id": "coder", "title": "T", "model": "m1"}),
    );
    assert_eq!(st, 201, "{meta}");
    assert_eq!(meta["agent_id"], "coder");
    assert_eq!(meta["project_id"], "default");
    let (st, err) = s.post("/api/sessions", json!({"id": "made"}));
    assert_eq!(st, 409);
    assert_eq!(err["code"], "session_exists");
    let dir = s.session_dir("made");
    assert!(
        dir.join("meta.json").is_file()
            && dir.join("history").is_dir()
            && dir.join("workdir").is_dir()
    );
    assert!(dir.join("context/commits").is_dir());
    assert_eq!(
        git(&dir, &["log", "--all", "--format=%s|%P"]).trim(),
        "session init|",
        "only the root: no empty turn commits"
    );
    let (st, log) = s.get("/api/sessions/made/commits");
    assert_eq!(st, 200);
    assert_eq!(log["commits"], json!([]));
    // Server-made ids.
    let (st, meta) = s.post("/api/sessions", json!({}));
    assert_eq!(st, 201);
    assert_eq!(meta["id"].as_str().unwrap().len(), 32);
    // The rendered branch up to a given node.
    s.append("made", json!({"id": "u1", "role": "user", "content": "a"}));
    s.append(
        "made",
        json!({"id": "a1", "role": "assistant", "content": "b"}),
    );
    let (_, msgs) = s.get("/api/sessions/made/messages?head=u1");
    assert_eq!(msgs["messages"].as_array().unwrap().len(), 1);
    let (st, _) = s.get("/api/sessions/made/messages?head=zzz");
    assert_eq!(st, 404);
    // workdir is the agent's scratch space, never committed.
    std::fs::write(dir.join("workdir/scratch.txt"), "x").unwrap();
    s.end_turn("made", json!({}));
    assert_clean_repo(&dir);
}

#[test]
fn six_sessions_through_a_two_actor_cache_lose_nothing() {
    let s = TestServer::start_with_env(&[("OPENPROGRAM_SESSION_CACHE_CAP", "2")]);
    let ids: Vec<String> = (0..6).map(|i| format!("lru{i}")).collect();
    std::thread::scope(|scope| {
        for id in &ids {
            let s = &s;
            scope.spawn(move || {
                for t in 0..3 {
                    s.turn(id, &format!("{id} message {t}"), "reply", &["read"]);
                }
            });
        }
    });
    for id in &ids {
        let dir = s.session_dir(id);
        assert_eq!(turn_commits(&dir, "HEAD"), "3", "{id}");
        assert_clean_repo(&dir);
        let (_, nodes) = s.get(&format!("/api/sessions/{id}/nodes"));
        let seqs: Vec<u64> = nodes["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["seq"].as_u64().unwrap())
            .collect();
        assert_eq!(seqs, (1..=9).collect::<Vec<_>>(), "{id}");
    }
    let (_, health) = s.get("/api/health");
    assert!(health["live_sessions"].as_u64().unwrap() <= 2);
}

/// Session directories under the state directory (not the registry files
/// or a writer's temporary file).
fn session_dirs(s: &TestServer) -> usize {
    std::fs::read_dir(s.state_dir.join("sessions"))
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_type().unwrap().is_dir() && !e.file_name().to_string_lossy().starts_with('.')
        })
        .count()
}

#[test]
fn fork_gives_a_new_session_with_the_shared_history() {
    let s = TestServer::start();
    let t1 = s.turn("orig", "first question", "first answer", &[]);
    let t2 = s.turn("orig", "second question", "second answer", &["read"]);
    s.turn("orig", "third question", "third answer", &[]);
    let (st, fork) = s.post("/api/sessions/orig/fork", json!({"commit": t2["commit"]}));
    assert_eq!(st, 201, "{fork}");
    let fid = fork["id"].as_str().unwrap().to_string();
    assert_ne!(fid, "orig");
    assert_eq!(
        fork["forked_from"],
        json!({"session_id": "orig", "commit": t2["commit"]})
    );
    let fdir = s.session_dir(&fid);
    // Its git log shows the original commits.
    let log = git(&fdir, &["log", "--format=%H"]);
    let root = git(
        &s.session_dir("orig"),
        &["rev-list", "--max-parents=0", "HEAD"],
    );
    assert_eq!(
        log.lines().collect::<Vec<_>>(),
        vec![
            t2["commit"].as_str().unwrap(),
            t1["commit"].as_str().unwrap(),
            root.trim()
        ]
    );
    git(&fdir, &["fsck", "--no-progress"]);
    assert_eq!(
        git(&fdir, &["remote"]),
        "",
        "no link back to the original repo"
    );
    let (_, msgs) = s.get(&format!("/api/sessions/{fid}/messages"));
    let texts: Vec<&str> = msgs["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "tool")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        texts,
        vec![
            "first question",
            "first answer",
            "second question",
            "second answer"
        ]
    );
    // It lives on its own; the original is untouched.
    s.turn(&fid, "a different third question", "another answer", &[]);
    assert_eq!(turn_commits(&fdir, "HEAD"), "3");
    assert_clean_repo(&fdir);
    assert_eq!(turn_commits(&s.session_dir("orig"), "HEAD"), "3");
    let (_, page) = s.get("/api/sessions");
    assert_eq!(
        page["sessions"][0]["id"],
        fid.as_str(),
        "listed, newest first"
    );
    // By node: the fork ends with the turn that committed the node.
    let (_, nodes) = s.get("/api/sessions/orig/nodes");
    let first_user = nodes["nodes"][0]["id"].as_str().unwrap().to_string();
    let (st, f2) = s.post("/api/sessions/orig/fork", json!({"node_id": first_user}));
    assert_eq!(st, 201);
    assert_eq!(f2["forked_from"]["commit"], t1["commit"]);
    assert_eq!(
        turn_commits(&s.session_dir(f2["id"].as_str().unwrap()), "HEAD"),
        "1"
    );
    // Bad input changes nothing.
    let before = session_dirs(&s);
    assert_eq!(
        s.post(
            "/api/sessions/orig/fork",
            json!({"commit": "0000000000000000000000000000000000000000"})
        )
        .1["code"],
        "unknown_commit"
    );
    assert_eq!(
        s.post("/api/sessions/orig/fork", json!({"node_id": "nope"}))
            .0,
        404
    );
    assert_eq!(
        s.post(
            "/api/sessions/orig/fork",
            json!({"commit": t1["commit"], "node_id": first_user})
        )
        .0,
        400
    );
    assert_eq!(s.post("/api/sessions/ghost/fork", json!({})).0, 404);
    s.append(
        "orig",
        json!({"id": "open-u", "role": "user", "content": "not ended"}),
    );
    assert_eq!(
        s.post("/api/sessions/orig/fork", json!({"node_id": "open-u"}))
            .1["code"],
        "node_not_committed"
    );
    s.post("/api/sessions", json!({"id": "empty"}));
    assert_eq!(
        s.post("/api/sessions/empty/fork", json!({})).1["code"],
        "no_turns"
    );
    assert_eq!(
        session_dirs(&s),
        before + 1,
        "only the explicit session was added"
    );
}

#[test]
fn export_is_a_bundle_that_git_clone_accepts() {
    let s = TestServer::start();
    for i in 1..=3 {
        s.turn(
            "exp",
            &format!("question {i}"),
            &format!("answer {i}"),
            &["read"],
        );
    }
    let (st, ctype, bundle) = s.get_bytes("/api/sessions/exp/export");
    assert_eq!((st, ctype.as_str()), (200, "application/x-git-bundle"));
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("exp.bundle");
    std::fs::write(&file, &bundle).unwrap();
    git(tmp.path(), &["clone", "-q", file.to_str().unwrap(), "copy"]);
    let copy = tmp.path().join("copy");
    git(&copy, &["bundle", "verify", file.to_str().unwrap()]);
    let orig = s.session_dir("exp");
    assert_eq!(
        git(&copy, &["log", "--format=%H %s"]),
        git(&orig, &["log", "--format=%H %s"])
    );
    assert_eq!(git(&copy, &["ls-files"]), git(&orig, &["ls-files"]));
    git(&copy, &["fsck", "--no-progress"]);
    // Errors.
    assert_eq!(s.get_bytes("/api/sessions/ghost/export").0, 404);
    s.post("/api/sessions", json!({"id": "noturn"}));
    assert_eq!(s.get_bytes("/api/sessions/noturn/export").0, 409);
}

#[test]
fn import_of_an_exported_bundle_gives_an_equal_session() {
    let s = TestServer::start();
    s.turn("src", "question one", "answer one", &["read"]);
    s.turn("src", "question two", "answer two", &[]);
    let (_, _, bundle) = s.get_bytes("/api/sessions/src/export");
    let post = |body: &[u8]| s.post_raw("/api/sessions/import", "application/x-git-bundle", body);
    // The id is taken here, so the import gets a new one.
    let (st, meta) = post(&bundle);
    assert_eq!(st, 201, "{meta}");
    let id = meta["id"].as_str().unwrap().to_string();
    assert_ne!(id, "src");
    let (a, b) = (s.session_dir("src"), s.session_dir(&id));
    assert_eq!(
        git(&a, &["log", "--format=%H"]),
        git(&b, &["log", "--format=%H"])
    );
    git(&b, &["fsck", "--no-progress"]);
    let (_, na) = s.get("/api/sessions/src/nodes");
    let (_, nb) = s.get(&format!("/api/sessions/{id}/nodes"));
    assert_eq!(na["nodes"], nb["nodes"]);
    s.turn(&id, "goes on", "on its own", &[]);
    assert_eq!(turn_commits(&b, "HEAD"), "3");
    assert_clean_repo(&b);
    // On another server the original id is kept.
    let other = TestServer::start();
    let (st, meta) = other.post_raw("/api/sessions/import", "application/octet-stream", &bundle);
    assert_eq!((st, meta["id"].as_str()), (201, Some("src")));
    // Damaged or foreign bundles: a clear 400, nothing written.
    let before = session_dirs(&s);
    let mut truncated = bundle.clone();
    truncated.truncate(bundle.len() - 30);
    for bad in [
        &b"not a bundle"[..],
        &truncated[..],
        b"# v2 git bundle\n-0123456789012345678901234567890123456789 x\n\nPACK",
    ] {
        let (st, err) = post(bad);
        assert_eq!(
            (st, err["code"].as_str()),
            (400, Some("invalid_bundle")),
            "{err}"
        );
    }
    let split = bundle.windows(2).position(|w| w == b"\n\n").unwrap();
    let header = String::from_utf8(bundle[..split].to_vec())
        .unwrap()
        .replacen("refs/heads/main", "refs/heads/../../x", 1);
    let evil = [header.as_bytes(), &bundle[split..]].concat();
    assert_eq!(post(&evil).1["code"], "invalid_bundle");
    assert_eq!(session_dirs(&s), before, "nothing left behind");
}

#[test]
fn ending_a_turn_again_returns_the_same_commit() {
    let s = TestServer::start();
    s.append("idem", json!({"role": "user", "content": "first"}));
    s.append("idem", json!({"role": "assistant", "content": "one"}));
    let (st, first) = s.post("/api/sessions/idem/turns", json!({"turn": 1}));
    assert_eq!(st, 201, "{first}");
    // The client lost the answer and retries, naming the turn.
    let (st, again) = s.post("/api/sessions/idem/turns", json!({"turn": 1}));
    assert_eq!(
        (st, &again["commit"], again["repeated"].as_bool()),
        (200, &first["commit"], Some(true))
    );
    // Without naming it, a retry is still the plain conflict.
    assert_eq!(s.post("/api/sessions/idem/turns", json!({})).0, 409);
    // With an Idempotency-Key, the same key gives the same commit.
    s.append("idem", json!({"role": "user", "content": "second"}));
    s.append("idem", json!({"role": "assistant", "content": "two"}));
    let url = format!("{}/api/sessions/idem/turns", s.url);
    let send = || {
        let r = ureq::post(&url)
            .set("Idempotency-Key", "k-2")
            .send_json(json!({}));
        let r = match r {
            Ok(r) => r,
            Err(ureq::Error::Status(_, r)) => r,
            Err(e) => panic!("{e}"),
        };
        (r.status(), r.into_json::<serde_json::Value>().unwrap())
    };
    let (st, two) = send();
    assert_eq!((st, two["turn"].as_u64()), (201, Some(2)));
    let (st, two_again) = send();
    assert_eq!((st, &two_again["commit"]), (200, &two["commit"]));
    // Naming another turn than the open one is refused.
    s.append("idem", json!({"role": "user", "content": "third"}));
    let (st, e) = s.post("/api/sessions/idem/turns", json!({"turn": 7}));
    assert_eq!((st, e["code"].as_str()), (409, Some("wrong_turn")));
    let dir = s.session_dir("idem");
    assert_eq!(turn_commits(&dir, "HEAD"), "2", "no commit made twice");
}

/// An agent runtime persists its system prompt first: it creates the
/// session, opens the rendered conversation, and a system note written
/// later follows the message it was written after (the head stays).
#[test]
fn a_system_prompt_starts_a_session_and_is_shown_where_it_was_written() {
    let s = TestServer::start();
    let id = "sys";
    let (status, v) = s.post(
        &format!("/api/sessions/{id}/messages"),
        json!({"id": "p0", "role": "system", "content": "You are terse."}),
    );
    assert_eq!(status, 201, "{v}");
    let (status, meta) = s.get(&format!("/api/sessions/{id}"));
    assert_eq!(status, 200, "{meta}");
    s.append(id, json!({"id": "u1", "role": "user", "content": "hi"}));
    s.append(
        id,
        json!({"id": "a1", "role": "assistant", "content": "hello"}),
    );
    s.append(
        id,
        json!({"id": "n1", "role": "system", "content": "context compacted"}),
    );
    s.end_turn(id, json!({}));
    s.turn(id, "again", "yes", &[]);
    let (_, msgs) = s.get(&format!("/api/sessions/{id}/messages"));
    let ids: Vec<&str> = msgs["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["id"].as_str())
        .collect();
    assert_eq!(&ids[..4], ["p0", "u1", "a1", "n1"], "{msgs}");
    assert_eq!(ids.len(), 6, "{msgs}");
    // The head is the last conversational message, never a system one.
    let (_, meta) = s.get(&format!("/api/sessions/{id}"));
    assert_ne!(meta["head"], "n1");
    let dir = s.session_dir(id);
    assert_eq!(turn_commits(&dir, "HEAD"), "2");
    assert_clean_repo(&dir);
}
