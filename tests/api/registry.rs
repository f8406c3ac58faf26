use serde_json::{json, Value};

use crate::helpers::{turn_commits, TestServer};

fn ids(page: &Value) -> Vec<String> {
    page["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect()
}

fn row<'a>(page: &'a Value, id: &str) -> &'a Value {
    page["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == id)
        .expect("row")
}

/// A row of the session list as it is on disk: `index.json`, then the
/// `index.journal` lines numbered after it.
fn index_row(s: &TestServer, id: &str) -> Value {
    disk_row(s, id).expect("row on disk")
}

/// The session's row as `index.json` and its journal hold it now (none
/// while a line is still being written).
fn disk_row(s: &TestServer, id: &str) -> Option<Value> {
    let dir = s.state_dir.join("sessions");
    let on_disk: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("index.json")).ok()?).ok()?;
    let mut row = on_disk["sessions"]
        .as_array()?
        .iter()
        .find(|r| r["id"] == id)
        .cloned();
    let after = on_disk["seq"].as_u64().unwrap_or(0);
    let journal = std::fs::read_to_string(dir.join("index.journal")).unwrap_or_default();
    for line in journal.lines() {
        let e: Value = serde_json::from_str(line).ok()?;
        if e["seq"].as_u64()? <= after {
            continue;
        }
        if e["row"]["id"] == id {
            row = Some(e["row"].clone());
        } else if e["deleted"] == id {
            row = None;
        }
    }
    row
}

/// Wait (at most 10 s) until the row on disk satisfies `done`.
fn wait_on_disk(s: &TestServer, id: &str, done: impl Fn(&Value) -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !disk_row(s, id).is_some_and(|r| done(&r)) {
        assert!(
            std::time::Instant::now() < deadline,
            "{id} never reached the disk"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Three sessions with one turn each, oldest first: a, b, c.
fn three(s: &TestServer) {
    for id in ["a", "b", "c"] {
        s.turn(id, &format!("hello from {id}"), "hi", &[]);
    }
}

#[test]
fn flags_never_reorder_and_unarchive_restores_the_place() {
    let s = TestServer::start();
    three(&s);
    let (_, before) = s.get("/api/sessions");
    assert_eq!(ids(&before), vec!["c", "b", "a"]);
    assert_eq!(before["total"], 3);
    let stamps: Vec<Value> = ["a", "b", "c"]
        .iter()
        .map(|id| row(&before, id)["updated_at"].clone())
        .collect();

    let (st, meta) = s.patch("/api/sessions/a", json!({"title": "Renamed"}));
    assert_eq!(st, 200, "{meta}");
    assert_eq!(meta["_user_titled"], true);
    assert_eq!(
        s.patch(
            "/api/sessions/b",
            json!({"pinned": true, "group": "work", "unread": true})
        )
        .0,
        200
    );
    assert_eq!(
        s.patch("/api/sessions/a", json!({"status": "needs_input"}))
            .0,
        200
    );
    let (st, res) = s.post("/api/sessions/archive", json!({"session_id": "c"}));
    assert_eq!(st, 200);
    assert_eq!(res, json!({"session_id": "c", "archived": true}));

    let (_, page) = s.get("/api/sessions");
    assert_eq!(
        ids(&page),
        vec!["b", "a"],
        "archived rows are hidden by default"
    );
    let (_, only) = s.get("/api/sessions?archived=true");
    assert_eq!(ids(&only), vec!["c"]);
    let (_, all) = s.get("/api/sessions?include_archived=true");
    assert_eq!(ids(&all), vec!["c", "b", "a"]);
    // Totals count what the filters select, whatever the page.
    for (query, total, page_ids) in [
        ("limit=1", 2, vec!["b"]),
        ("archived=true", 1, vec!["c"]),
        ("archived=false&offset=1", 2, vec!["a"]),
        ("include_archived=true&offset=1&limit=1", 3, vec!["b"]),
        ("include_archived=true&offset=5", 3, vec![]),
        ("include_archived=true&pinned=false&limit=1", 2, vec!["c"]),
    ] {
        let (_, page) = s.get(&format!("/api/sessions?{query}"));
        assert_eq!(page["total"], total, "{query}: {page}");
        assert_eq!(ids(&page), page_ids, "{query}");
    }
    let a = row(&all, "a");
    assert_eq!(a["title"], "Renamed");
    assert_eq!(a["status"], "needs_input");
    assert_eq!(a["preview"], "hello from a");
    assert_eq!(a["project_id"], "default");
    assert!(
        a["project"].as_str().is_some_and(|n| !n.is_empty()),
        "a row names its project: {a}"
    );
    assert_eq!(row(&all, "b")["pinned"], true);
    assert_eq!(row(&all, "b")["group"], "work");

    let (st, res) = s.post("/api/sessions/unarchive", json!({"session_id": "c"}));
    assert_eq!(
        (st, res),
        (200, json!({"session_id": "c", "archived": false}))
    );
    let (_, after) = s.get("/api/sessions");
    assert_eq!(ids(&after), vec!["c", "b", "a"]);
    let stamps_after: Vec<Value> = ["a", "b", "c"]
        .iter()
        .map(|id| row(&after, id)["updated_at"].clone())
        .collect();
    assert_eq!(
        stamps, stamps_after,
        "only appended content moves updated_at"
    );
    // Messages are still readable while archived, and appending moves a session up.
    s.turn("a", "newest", "ok", &[]);
    let (_, moved) = s.get("/api/sessions");
    assert_eq!(ids(&moved), vec!["a", "c", "b"]);
    assert_eq!(row(&moved, "a")["preview"], "newest");

    // Filters and paging.
    let (_, pinned) = s.get("/api/sessions?pinned=true");
    assert_eq!(ids(&pinned), vec!["b"]);
    let (_, grouped) =
        s.get("/api/sessions?group=work&agent_id=main&source=api&project_id=default");
    assert_eq!(ids(&grouped), vec!["b"]);
    let (_, paged) = s.get("/api/sessions?offset=1&limit=1");
    assert_eq!(ids(&paged), vec!["c"]);
    assert_eq!(paged["total"], 3);
    let (_, idle) = s.get("/api/sessions?status=idle");
    assert_eq!(
        ids(&idle),
        vec!["a", "c", "b"],
        "ending a's turn set it back to idle"
    );
    let (_, waiting) = s.get("/api/sessions?status=needs_input");
    assert_eq!(ids(&waiting), Vec::<String>::new());
}

#[test]
fn bad_updates_are_refused_and_create_nothing() {
    let s = TestServer::start();
    three(&s);
    assert_eq!(
        s.patch("/api/sessions/ghost", json!({"pinned": true})).0,
        404
    );
    assert!(!s.session_dir("ghost").exists());
    assert_eq!(s.patch("/api/sessions/a", json!({"colour": "red"})).0, 400);
    assert_eq!(
        s.patch("/api/sessions/a", json!({"status": "sleeping"})).0,
        400
    );
    assert_eq!(s.patch("/api/sessions/a", json!({})).0, 400);
    let (st, err) = s.post("/api/sessions/archive", json!({}));
    assert_eq!(
        (st, err["error"].clone()),
        (400, json!("session_id required"))
    );
    let (st, err) = s.post("/api/sessions/unarchive", json!({"session_id": "ghost"}));
    assert_eq!((st, err["error"].clone()), (404, json!("unknown session")));
    assert_eq!(s.get("/api/sessions?limit=0").0, 400);
    assert_eq!(s.get("/api/sessions?status=bogus").0, 400);
    assert_eq!(s.get("/api/sessions?frobnicate=1").0, 400);
    let (_, page) = s.get("/api/sessions");
    assert_eq!(page["total"], 3);
}

#[test]
fn flags_survive_restart_and_index_rebuild() {
    let mut s = TestServer::start_process();
    three(&s);
    s.patch("/api/sessions/a", json!({"title": "Kept", "pinned": true}));
    s.post("/api/sessions/archive", json!({"session_id": "b"}));
    let (_, before) = s.get("/api/sessions?include_archived=true");
    let index = s.state_dir.join("sessions/index.json");

    assert_eq!(s.terminate(), Some(0));
    s.spawn();
    let (_, after) = s.get("/api/sessions?include_archived=true");
    assert_eq!(after, before, "graceful restart");

    s.kill();
    std::fs::remove_file(&index).unwrap();
    s.spawn();
    let (_, rebuilt) = s.get("/api/sessions?include_archived=true");
    assert_eq!(
        rebuilt, before,
        "rebuilt from meta.json after index.json was deleted"
    );
    assert!(index.exists(), "the rebuilt index is written");

    s.kill();
    std::fs::write(&index, b"{ this is not json").unwrap();
    s.spawn();
    let (_, rebuilt) = s.get("/api/sessions?include_archived=true");
    assert_eq!(rebuilt, before, "rebuilt after index.json was corrupted");
    let meta: Value = serde_json::from_str(
        &std::fs::read_to_string(s.session_dir("a").join("meta.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(meta["_user_titled"], true);
}

#[test]
fn appends_are_debounced_and_flushed_on_shutdown() {
    let mut s = TestServer::start_process();
    s.turn("deb", "first", "r", &[]);
    // The creation and the end of the turn are written at once.
    wait_on_disk(&s, "deb", |r| {
        r["preview"] == "first" && r["status"] == "idle"
    });
    let writes = |s: &TestServer| {
        s.get("/api/health").1["registry"]["index_writes"]
            .as_u64()
            .unwrap()
    };
    let before = writes(&s);
    for i in 0..20 {
        s.append(
            "deb",
            json!({"role": "system", "content": format!("note {i}")}),
        );
    }
    s.append("deb", json!({"role": "user", "content": "latest words"}));
    s.append("deb", json!({"role": "assistant", "content": "r"}));
    let (_, page) = s.get("/api/sessions");
    assert_eq!(
        row(&page, "deb")["preview"],
        "latest words",
        "memory is updated at once"
    );
    assert!(
        writes(&s) - before <= 1,
        "appends are not written one by one"
    );
    let disk_row = index_row(&s, "deb");
    assert_eq!(
        disk_row["preview"], "first",
        "the index on disk lags within the debounce window"
    );
    assert_eq!(s.terminate(), Some(0));
    let disk_row = index_row(&s, "deb");
    assert_eq!(
        disk_row["preview"], "latest words",
        "graceful shutdown flushes"
    );
}

#[test]
fn sigkill_inside_the_debounce_window_is_repaired_at_startup() {
    let mut s = TestServer::start_process();
    s.turn("rep", "old words", "r", &[]);
    s.turn("other", "x", "r", &[]);
    wait_on_disk(&s, "rep", |r| {
        r["preview"] == "old words" && r["status"] == "idle"
    });
    wait_on_disk(&s, "other", |r| r["status"] == "idle");
    s.append(
        "rep",
        json!({"role": "user", "content": "words after the last index write"}),
    );
    let (_, live) = s.get("/api/sessions");
    assert_eq!(ids(&live), vec!["rep", "other"]);
    s.restart_after_kill();
    let (_, page) = s.get("/api/sessions");
    assert_eq!(
        row(&page, "rep")["preview"],
        "words after the last index write"
    );
    assert_eq!(
        row(&page, "rep")["status"],
        "idle",
        "running is reset after a crash"
    );
    assert_eq!(ids(&page), vec!["rep", "other"]);
    assert_eq!(
        row(&page, "rep")["updated_at"],
        row(&live, "rep")["updated_at"]
    );
}

/// Push a session's timestamps `days` into the past (meta and nodes; its
/// archiving too).
fn age(dir: &std::path::Path, days: f64) {
    age_keys(dir, days, &["created_at", "updated_at", "archived_at"]);
}

/// Push the given timestamps of `meta.json` (and the nodes' times)
/// `days` into the past.
fn age_keys(dir: &std::path::Path, days: f64, keys: &[&str]) {
    let past = |v: &mut Value, key: &str| {
        if let Some(t) = v[key].as_f64() {
            v[key] = json!(t - days * 86_400.0);
        }
    };
    let meta_path = dir.join("meta.json");
    let mut meta: Value =
        serde_json::from_str(&std::fs::read_to_string(&meta_path).unwrap()).unwrap();
    for key in keys {
        past(&mut meta, key);
    }
    std::fs::write(&meta_path, serde_json::to_vec(&meta).unwrap()).unwrap();
    for entry in walk(&dir.join("history")) {
        let mut node: Value =
            serde_json::from_str(&std::fs::read_to_string(&entry).unwrap()).unwrap();
        past(&mut node, "created_at");
        std::fs::write(&entry, serde_json::to_vec(&node).unwrap()).unwrap();
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if e.file_type().unwrap().is_dir() {
            out.extend(walk(&e.path()));
        } else {
            out.push(e.path());
        }
    }
    out
}

#[test]
fn startup_maintenance_applies_each_rule() {
    let cfg = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        cfg.path(),
        "[maintenance]\nmax_sessions = 7\narchive_ttl_days = 90\n",
    )
    .unwrap();
    let mut s = TestServer::start_with_env(&[("OPENPROGRAM_CONFIG", cfg.path().to_str().unwrap())]);
    // Empty shells: one old, one fresh.
    s.post("/api/sessions", json!({"id": "shell-old"}));
    s.post("/api/sessions", json!({"id": "shell-new"}));
    // Archived sessions: one past the 90 days, three within (for the cap).
    for id in [
        "arch-expired",
        "arch-1",
        "arch-2",
        "arch-3",
        "arch-imported",
    ] {
        s.turn(id, id, "r", &[]);
        s.post("/api/sessions/archive", json!({"session_id": id}));
    }
    // Active sessions are never deleted, however old.
    s.turn("active-ancient", "old but active", "r", &[]);
    s.turn("active-new", "new", "r", &[]);
    // One left running by the crash.
    s.append(
        "was-running",
        json!({"role": "user", "content": "in flight"}),
    );
    s.kill();
    age(&s.session_dir("shell-old"), 0.1);
    age(&s.session_dir("arch-expired"), 100.0);
    age(&s.session_dir("arch-1"), 30.0);
    age(&s.session_dir("arch-2"), 20.0);
    age(&s.session_dir("active-ancient"), 400.0);
    // A conversation from long ago archived today: idle since today.
    age_keys(
        &s.session_dir("arch-imported"),
        400.0,
        &["created_at", "updated_at"],
    );
    s.spawn();

    let (_, page) = s.get("/api/sessions?include_archived=true&limit=100");
    let mut left = ids(&page);
    left.sort();
    // 10 sessions: shell-old (empty, over an hour old) and arch-expired
    // (archived, idle 100 days) go by age; 8 remain, over the cap of 7, so
    // the archived one idle longest (arch-1) goes too. arch-imported's
    // turns are 400 days old but it was archived today.
    assert_eq!(
        left,
        vec![
            "active-ancient",
            "active-new",
            "arch-2",
            "arch-3",
            "arch-imported",
            "shell-new",
            "was-running"
        ]
    );
    let (_, feed) = s.get("/api/changes?limit=500");
    for gone in ["shell-old", "arch-expired", "arch-1"] {
        assert!(!s.session_dir(gone).exists(), "{gone} should be deleted");
        assert!(
            s.log()
                .lines()
                .any(|l| l.contains(gone) && l.contains("WARN")),
            "deletion of {gone} is logged as a warning"
        );
        assert!(
            feed["events"]
                .as_array()
                .unwrap()
                .iter()
                .any(
                    |c| c["event"]["kind"] == "session_deleted" && c["event"]["session_id"] == gone
                ),
            "the deletion of {gone} is in the change feed: {feed}"
        );
    }
    let meta: Value = serde_json::from_str(
        &std::fs::read_to_string(s.session_dir("was-running").join("meta.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(meta["status"], "idle");
    assert_eq!(row(&page, "was-running")["status"], "idle");
}

#[test]
fn deletion_removes_the_repo_and_the_row() {
    let s = TestServer::start();
    three(&s);
    let (st, res) = s.raw_delete("/api/sessions/b");
    assert_eq!(st, 200, "{res}");
    assert!(!s.session_dir("b").exists());
    let (_, page) = s.get("/api/sessions");
    assert_eq!(ids(&page), vec!["c", "a"]);
    assert_eq!(s.get("/api/sessions/b").0, 404);
    assert_eq!(s.raw_delete("/api/sessions/b").0, 404);
    assert_eq!(s.raw_delete("/api/sessions/never").0, 404);
    // The id can be used again for a new conversation.
    s.turn("b", "reborn", "r", &[]);
    let (_, page) = s.get("/api/sessions");
    assert_eq!(ids(&page), vec!["b", "c", "a"]);
    let leftovers: Vec<_> = std::fs::read_dir(s.state_dir.join("sessions"))
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name().to_string_lossy().starts_with('.') && e.file_type().unwrap().is_dir()
        })
        .map(|e| e.file_name())
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

fn cli(s: &TestServer, args: &[&str]) -> (i32, String, String) {
    s.cli(args, None)
}

#[test]
fn cli_manages_sessions_of_the_running_server() {
    let mut s = TestServer::start_process();
    three(&s);
    assert_eq!(
        cli(&s, &["sessions", "archive", "a"]),
        (0, "Archived session a\n".into(), String::new())
    );
    let (code, out, _) = cli(&s, &["sessions", "list"]);
    assert_eq!(code, 0);
    let mut lines = out.lines();
    assert_eq!(
        lines.next(),
        Some("ID\tSTATUS\tUPDATED (UTC)\tFLAGS\tTITLE"),
        "a header"
    );
    let listed: Vec<&str> = lines.map(|l| l.split('\t').next().unwrap()).collect();
    assert_eq!(listed, vec!["c", "b"]);
    let updated = out.lines().nth(1).unwrap().split('\t').nth(2).unwrap();
    assert!(
        updated.len() == 16 && updated.starts_with("20"),
        "an updated-at column: {updated}"
    );
    let (_, out, _) = cli(&s, &["sessions", "list", "--archived"]);
    assert!(
        out.lines().nth(1).unwrap().starts_with("a\t") && out.contains("archived"),
        "{out}"
    );
    let (_, out, _) = cli(&s, &["sessions", "list", "--all"]);
    assert_eq!(out.lines().count(), 4);
    assert_eq!(
        cli(&s, &["sessions", "unarchive", "a"]),
        (0, "Unarchived session a\n".into(), String::new())
    );
    assert_eq!(
        cli(&s, &["sessions", "unarchive", "nope"]),
        (
            1,
            String::new(),
            "[error] no session 'nope' found.\n".into()
        )
    );
    assert_eq!(cli(&s, &["sessions", "archive", "nope"]).0, 1);
    let (code, out, _) = cli(&s, &["sessions", "show", "b"]);
    assert_eq!(code, 0);
    let meta: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(meta["id"], "b");
    assert_eq!(
        cli(&s, &["sessions", "delete", "b"]),
        (0, "Deleted session b\n".into(), String::new())
    );
    assert!(!s.session_dir("b").exists());
    assert_eq!(cli(&s, &["sessions", "show", "b"]).0, 1);
    // --url works too.
    let (code, out, _) = cli(&s, &["sessions", "list", "--url", &s.url.clone()]);
    assert_eq!((code, out.lines().count()), (0, 3), "a header and two rows");
    // No server running: a clear message and exit 1.
    assert_eq!(s.terminate(), Some(0));
    let (code, _, err) = cli(&s, &["sessions", "list"]);
    assert_eq!(code, 1);
    assert!(
        err.starts_with("[error] no openprogram server is running"),
        "{err}"
    );
}

#[test]
fn sessions_recorded_in_locations_json_are_discovered_and_served() {
    let mut s = TestServer::start_process();
    s.turn("inproj", "in a project", "r", &[]);
    s.turn("home", "at home", "r", &[]);
    s.kill();
    let project = tempfile::tempdir().unwrap();
    let target = project.path().join(".openprogram/sessions/inproj");
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    std::fs::rename(s.session_dir("inproj"), &target).unwrap();
    let locations = s.state_dir.join("sessions/locations.json");
    std::fs::write(
        &locations,
        json!({"inproj": target, "ghost": "/nonexistent/ghost"}).to_string(),
    )
    .unwrap();
    s.spawn();

    let (_, page) = s.get("/api/sessions");
    assert_eq!(ids(&page), vec!["home", "inproj"]);
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&locations).unwrap()).unwrap();
    assert!(
        saved.get("ghost").is_none(),
        "an entry naming no session is dropped: {saved}"
    );
    // The session is served from, and committed in, its recorded location.
    s.turn("inproj", "second turn", "r2", &[]);
    assert_eq!(turn_commits(&target, "HEAD"), "2");
    crate::helpers::assert_clean_repo(&target);
    assert!(!s.session_dir("inproj").exists());
    // Deletion removes the directory and the entry.
    assert_eq!(s.raw_delete("/api/sessions/inproj").0, 200);
    assert!(!target.exists());
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&locations).unwrap()).unwrap();
    assert_eq!(saved, json!({}));
    let (_, page) = s.get("/api/sessions");
    assert_eq!(ids(&page), vec!["home"]);
}

/// The journal once it has `n` lines (the registry writes it beside the
/// replies).
fn journal_with(s: &TestServer, n: usize) -> Vec<Value> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let lines = journal_lines(s);
        if lines.len() >= n || std::time::Instant::now() > deadline {
            return lines;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

fn journal_lines(s: &TestServer) -> Vec<Value> {
    std::fs::read_to_string(s.state_dir.join("sessions/index.journal"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_change_is_one_journal_line_and_survives_sigkill() {
    let mut s = TestServer::start_process();
    for i in 0..30 {
        s.turn(&format!("j{i}"), "hello", "hi", &[]);
    }
    // A snapshot to start from: a restart folds the journal into it.
    s.restart_after_kill();
    let index = s.state_dir.join("sessions/index.json");
    let snapshot = std::fs::read(&index).unwrap();
    assert!(journal_lines(&s).is_empty(), "folded at startup");

    // A change written at once: one line with the row, index.json untouched.
    let (st, _) = s.patch("/api/sessions/j3", json!({"title": "Journaled title"}));
    assert_eq!(st, 200);
    let lines = journal_with(&s, 1);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["row"]["id"], "j3");
    assert_eq!(lines[0]["row"]["title"], "Journaled title");
    assert_eq!(
        std::fs::read(&index).unwrap(),
        snapshot,
        "index.json rewritten"
    );
    let (st, _) = s.raw_delete("/api/sessions/j4");
    assert_eq!(st, 200);
    assert_eq!(journal_with(&s, 2)[1]["deleted"], "j4");

    // Killed: the next start applies the journal, then folds it.
    s.restart_after_kill();
    let (_, page) = s.get("/api/sessions?limit=100");
    assert_eq!(row(&page, "j3")["title"], "Journaled title");
    assert!(!ids(&page).contains(&"j4".to_string()));
    assert_eq!(page["total"], 29);
    assert!(journal_lines(&s).is_empty());
    assert_eq!(index_row(&s, "j3")["title"], "Journaled title");
}

/// The end of a turn reaches the journal without a fsync of its own (the
/// log made its `meta.json` durable already): a power loss that takes the
/// line away leaves the row older than `meta.json`, and the next start
/// reads the session again.
#[test]
fn a_turn_end_line_lost_to_a_power_loss_is_read_again_from_meta_json() {
    let mut s = TestServer::start_process();
    s.turn("pl", "first words", "r", &[]);
    s.turn("other", "x", "r", &[]);
    // Folded into index.json: the journal starts empty.
    s.restart_after_kill();
    assert!(journal_lines(&s).is_empty());
    s.turn("pl", "words the journal loses", "r", &[]);
    let lines = journal_with(&s, 1);
    assert!(
        lines.iter().any(|l| l["row"]["id"] == "pl"),
        "the turn's end is written at once: {lines:?}"
    );
    let (_, live) = s.get("/api/sessions");
    s.kill();
    // What a power loss may leave of a file appended without a fsync.
    std::fs::write(s.state_dir.join("sessions/index.journal"), b"").unwrap();
    s.spawn();
    let (_, page) = s.get("/api/sessions");
    assert_eq!(row(&page, "pl")["preview"], "words the journal loses");
    assert_eq!(
        row(&page, "pl")["updated_at"],
        row(&live, "pl")["updated_at"]
    );
    assert_eq!(ids(&page), vec!["pl", "other"]);
}

#[test]
fn a_torn_journal_line_and_entries_older_than_the_snapshot_are_skipped() {
    let mut s = TestServer::start_process();
    s.turn("t1", "hello", "hi", &[]);
    s.turn("t2", "hello", "hi", &[]);
    s.patch("/api/sessions/t1", json!({"title": "Kept title"}));
    s.kill();
    let dir = s.state_dir.join("sessions");
    // As if killed between a snapshot and the journal's emptying: an entry
    // the snapshot already holds (its number is not after the snapshot's),
    // stamped in the future so that nothing else would correct it; then a
    // half-written line.
    s.spawn();
    s.kill();
    let index: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("index.json")).unwrap()).unwrap();
    let mut stale = index["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "t1")
        .unwrap()
        .clone();
    stale["title"] = "Old title".into();
    let seq = index["seq"].as_u64().unwrap_or(0);
    let entry = json!({"seq": seq, "at": 4.0e9, "row": stale});
    let body = format!(
        "{entry}\n{{\"seq\": {}, \"at\": 1.0, \"row\": {{\"id\"",
        seq + 1
    );
    std::fs::write(dir.join("index.journal"), body).unwrap();
    s.spawn();
    let (_, page) = s.get("/api/sessions");
    assert_eq!(row(&page, "t1")["title"], "Kept title");
    assert_eq!(page["total"], 2);
    assert!(journal_lines(&s).is_empty(), "folded into index.json");
}

/// Set the title in a stopped server's `meta.json` of `id`, by hand.
fn edit_title(s: &TestServer, id: &str, title: &str) {
    let path = s.session_dir(id).join("meta.json");
    let mut meta: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    meta["title"] = title.into();
    std::fs::write(&path, serde_json::to_vec_pretty(&meta).unwrap()).unwrap();
}

/// A graceful stop leaves the clean-shutdown mark; the next start takes it
/// away and takes `index.json` as it is (no look at each `meta.json`). A
/// mark that names another list, or none (a crash), brings back the check
/// of every session against its `meta.json`.
#[test]
fn a_clean_shutdown_mark_is_used_once_and_only_for_its_own_list() {
    let mut s = TestServer::start_process();
    s.turn("c1", "hello", "hi", &[]);
    s.turn("c2", "hello", "hi", &[]);
    let (_, page) = s.get("/api/sessions");
    let listed = row(&page, "c1")["title"].clone();
    assert_eq!(s.terminate(), Some(0));
    let mark = s.state_dir.join("sessions/index.closed");
    let seq: Value = serde_json::from_str(&std::fs::read_to_string(&mark).unwrap()).unwrap();
    let index: Value = serde_json::from_str(
        &std::fs::read_to_string(s.state_dir.join("sessions/index.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        seq["seq"], index["seq"],
        "the mark names the list just written"
    );

    // Vouched for: the row is index.json's, whatever meta.json says now.
    edit_title(&s, "c1", "Edited while stopped");
    s.spawn();
    assert!(!mark.exists(), "taken away by the start");
    let (_, page) = s.get("/api/sessions");
    assert_eq!(row(&page, "c1")["title"], listed);
    assert_eq!(page["total"], 2);

    // A mark for another list: every session is checked.
    assert_eq!(s.terminate(), Some(0));
    std::fs::write(&mark, br#"{"seq": 987654}"#).unwrap();
    edit_title(&s, "c1", "Edited again");
    s.spawn();
    let (_, page) = s.get("/api/sessions");
    assert_eq!(row(&page, "c1")["title"], "Edited again");

    // Killed: no mark, and every session is checked.
    s.kill();
    assert!(!mark.exists());
    edit_title(&s, "c2", "Edited after a crash");
    s.spawn();
    let (_, page) = s.get("/api/sessions");
    assert_eq!(row(&page, "c2")["title"], "Edited after a crash");
    assert_eq!(row(&page, "c1")["title"], "Edited again");
}

/// A page larger than what the server hands its connection at once
/// (64 KB) arrives whole: its `Content-Length` is its length, it parses,
/// and it holds the same rows, in the same order, as the small pages.
#[test]
fn a_page_of_every_row_arrives_whole_in_pieces() {
    let s = TestServer::start();
    let long = "t".repeat(280);
    for i in 0..260 {
        let (st, _) = s.post(
            "/api/sessions",
            json!({"id": format!("s{i:03}"), "title": format!("{long} {i}")}),
        );
        assert_eq!(st, 201);
    }
    let resp = ureq::get(&format!("{}/api/sessions?limit=1000", s.url))
        .call()
        .expect("list");
    let declared: usize = resp
        .header("content-length")
        .expect("a length")
        .parse()
        .unwrap();
    let mut body = Vec::new();
    std::io::Read::read_to_end(&mut resp.into_reader(), &mut body).unwrap();
    assert!(body.len() > 2 * 65_536, "{} bytes", body.len());
    assert_eq!(declared, body.len());
    let page: Value = serde_json::from_slice(&body).expect("one JSON document");
    assert_eq!(page["total"], 260);
    let mut small = Vec::new();
    for offset in (0..260).step_by(50) {
        let (st, part) = s.get(&format!("/api/sessions?limit=50&offset={offset}"));
        assert_eq!(st, 200);
        small.extend(ids(&part));
    }
    assert_eq!(ids(&page), small);
    let mut unique = small.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 260);
}
