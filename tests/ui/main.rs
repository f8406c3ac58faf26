//! The web UI in a real headless Chromium against a real server on
//! loopback: every flow ends with a screenshot in `target/ui-screenshots/`.
//! Without Chromium the tests say so and are skipped (in CI, where
//! `OPENPROGRAM_UI_REQUIRED=1`, they fail instead).

// tests: a failed step is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../api/helpers.rs"]
#[allow(dead_code)]
mod helpers;

mod browser;
#[path = "../api/fake_llm.rs"]
#[allow(dead_code)]
mod fake_llm;
#[path = "../shared/ports.rs"]
mod ports;
mod runner;
mod undo;

use std::path::Path;
use std::process::Command;

use browser::Browser;
use helpers::{Options, TestServer};
use runner::Runner;
use serde_json::{json, Value};

fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// Session folders with a `meta.json` dated `updated_at` and one user
/// message (without one, startup deletes them as empty shells): the
/// registry is rebuilt from them at start (no `index.json` yet).
fn write_dated_sessions(state: &Path, rows: &[(String, String, f64)], channels: &[(&str, &str)]) {
    for (id, title, at) in rows {
        let dir = state.join("sessions").join(id);
        let history = dir.join("history/00/00");
        std::fs::create_dir_all(&history).unwrap();
        let mut meta = json!({"id": id, "title": title, "created_at": at, "updated_at": at});
        if let Some((_, channel)) = channels.iter().find(|(c, _)| c == id) {
            meta["channel"] = json!(channel);
            meta["source"] = json!("channel");
        }
        std::fs::write(dir.join("meta.json"), meta.to_string()).unwrap();
        let node = json!({"id": "m1", "role": "user", "content": format!("hello from {id}"),
                          "predecessor": null, "caller": null, "seq": 1, "created_at": at,
                          "metadata": {}});
        std::fs::write(history.join("000001-u-m1.json"), node.to_string()).unwrap();
    }
}

/// Every row id and header of the virtual list, in order, read by
/// scrolling it through (only the rows in view exist in the DOM).
fn list_contents(b: &Browser) -> Vec<String> {
    let v = b.js(
        r#"const l = document.getElementById('session-list');
           const seen = new Map();
           for (let y = 0; ; y += l.clientHeight / 2) {
             l.scrollTop = y; l.dispatchEvent(new Event('scroll'));
             for (const e of l.querySelectorAll('.vhead, .vrow')) {
               const key = e.classList.contains('vhead') ? 'H:' + e.textContent : 'R:' + e.dataset.id;
               seen.set(parseFloat(e.style.top), key);
             }
             if (y > l.scrollHeight) break;
           }
           l.scrollTop = 0; l.dispatchEvent(new Event('scroll'));
           return [...seen.entries()].sort((a, b) => a[0] - b[0]).map(e => e[1]);"#,
        vec![],
    );
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn sidebar_buckets_200_sessions_and_a_second_tab_sees_rename_archive_delete() {
    let t = now();
    let mut rows = Vec::new();
    // 50 today, 50 three days ago, 50 in an earlier year, 50 forty days
    // ago (a month bucket, or the year's when that crosses New Year).
    for i in 0..200 {
        let (at, kind) = match i % 4 {
            // Ahead of the clock: "today" in the browser's time zone
            // whatever the hour (a minute ago is yesterday just after
            // midnight).
            0 => (t + 3600.0 - i as f64, "today"),
            1 => (t - 3.0 * 86400.0 - i as f64, "week"),
            2 => (t - 400.0 * 86400.0 - i as f64, "old"),
            _ => (t - 40.0 * 86400.0 - i as f64, "month"),
        };
        rows.push((format!("s{i:03}"), format!("Session {i} {kind}"), at));
    }
    let server = TestServer::start_with(Options {
        prepare: Some(&|state: &Path| write_dated_sessions(state, &rows, &[("s001", "wechat")])),
        // A retention rule configured (none is by default): the UI says
        // what archiving leads to, and when.
        env: &[("OPENPROGRAM_MAINTENANCE_ARCHIVE_TTL_DAYS", "90")],
        ..Options::default()
    });
    let Some(b) = Browser::start(1280, 800) else {
        return;
    };
    b.goto(&server.url);
    b.wait_js(
        "return document.getElementById('session-list').getAttribute('aria-rowcount') === '200'",
        "200 rows",
    );
    let items = list_contents(&b);
    let heads: Vec<&str> = items.iter().filter_map(|s| s.strip_prefix("H:")).collect();
    assert_eq!(heads.first(), Some(&"Today"), "{heads:?}");
    assert_eq!(heads.get(1), Some(&"Past 7 days"), "{heads:?}");
    let rows_under = |head: &str| -> Vec<String> {
        let start = items
            .iter()
            .position(|s| s == &format!("H:{head}"))
            .unwrap();
        items[start + 1..]
            .iter()
            .take_while(|s| s.starts_with("R:"))
            .filter_map(|s| s.strip_prefix("R:").map(str::to_string))
            .collect()
    };
    let number = |id: &String| -> usize { id.trim_start_matches('s').parse().unwrap() };
    let today = rows_under("Today");
    assert_eq!(today.len(), 50);
    assert!(today.iter().all(|id| number(id) % 4 == 0));
    let week = rows_under("Past 7 days");
    assert_eq!(week.len(), 50);
    assert!(week.iter().all(|id| number(id) % 4 == 1));
    let total_rows = items.iter().filter(|s| s.starts_with("R:")).count();
    assert_eq!(total_rows, 200);
    // The 400-day-old ones sit under a year header, last; the 40-day-old
    // ones under a month (or that year, across New Year) before it.
    let last = heads.last().unwrap().to_string();
    assert!(last.len() == 4 && last.parse::<u32>().is_ok(), "{heads:?}");
    let old = rows_under(&last);
    assert!(old.len() >= 50, "{heads:?}");
    assert!(old
        .iter()
        .all(|id| number(id) % 4 == 2 || number(id) % 4 == 3));
    assert!(
        heads.len() >= 4,
        "today, past 7 days, a month and a year: {heads:?}"
    );
    // The channel's brand is a prefix of the shown title, not stored.
    let filter = |text: &str| {
        b.js(
            "const f = document.getElementById('filter'); f.value = arguments[0]; f.dispatchEvent(new Event('input'));",
            vec![json!(text)],
        )
    };
    filter("Session 1 week");
    b.wait_js(
        "const r = document.querySelector('#row-s001 .rtitle'); return r && r.textContent === '[WeChat] Session 1 week'",
        "the WeChat prefix",
    );
    let (_, s1) = server.get("/api/sessions/s001");
    assert_eq!(s1["title"], "Session 1 week");
    filter("");
    b.screenshot("sidebar-200-sessions");

    // A second tab sees what the first does.
    let url = server.url.clone();
    let (first, second) = b.second_tab(&url);
    b.wait_js(
        "return document.getElementById('session-list').getAttribute('aria-rowcount') === '200'",
        "second tab list",
    );
    b.switch(&first);
    // Rename s000 through its context menu.
    b.js("document.querySelector('#row-s000 .more').click();", vec![]);
    b.click("#context-menu button:nth-child(1)");
    b.type_into("#rename-input", "Renamed in tab one");
    b.click("#rename-form button[value=ok]");
    b.wait_js(
        "const r = document.querySelector('#row-s000 .rtitle'); return r && r.textContent === 'Renamed in tab one'",
        "the rename in the first tab",
    );
    // Archive s004, delete s008 (with the confirmation).
    b.js("document.querySelector('#row-s004 .more').click();", vec![]);
    // The action says what archiving leads to (the server's rule).
    b.wait_js(
        "return [...document.querySelectorAll('#context-menu button')].find(x => x.textContent === 'Archive (deleted after 90 idle days)')",
        "archive item stating the retention",
    );
    b.js(
        "[...document.querySelectorAll('#context-menu button')].find(x => x.textContent.startsWith('Archive')).click()",
        vec![],
    );
    b.js("document.querySelector('#row-s008 .more').click();", vec![]);
    b.js(
        "[...document.querySelectorAll('#context-menu button')].find(x => x.textContent === 'Delete…').click()",
        vec![],
    );
    b.wait_js(
        "return document.getElementById('confirm-dialog').open",
        "confirm dialog",
    );
    b.screenshot("delete-confirmation");
    b.click("#confirm-ok");
    // Seen in this tab first, then in the other.
    b.wait_js(
        "return !document.getElementById('row-s008') && !document.getElementById('row-s004')",
        "archive and delete in the first tab",
    );
    b.switch(&second);
    b.wait_js(
        "const r = document.querySelector('#row-s000 .rtitle'); return r && r.textContent === 'Renamed in tab one'",
        "rename in the second tab",
    );
    b.wait_js(
        "return document.getElementById('session-list').getAttribute('aria-rowcount') === '198'",
        "archive and delete in the second tab",
    );
    assert!(b.js("return !document.getElementById('row-s008')", vec![]) == json!(true));
    // Archived is still there under "Archived".
    b.click("[data-show=archived]");
    b.wait_js("return document.getElementById('row-s004')", "archived row");
    // Its deletion is announced: 90 days after its archiving (today), not
    // after its last message.
    b.wait_js(
        "const s = document.querySelector('#row-s004 .rsub'); \
         const d = new Date(Date.now() + 90 * 86400 * 1000).toLocaleDateString(undefined, { year: 'numeric', month: 'short', day: 'numeric' }); \
         return s && s.textContent.startsWith('Deleted after ' + d)",
        "the archived row says when it is deleted",
    );
    b.screenshot("second-tab-after-changes");
    let (_, list) = server.get("/api/sessions?include_archived=true&limit=1000");
    assert_eq!(list["total"], 199);
    let row = |id: &str| -> Value {
        list["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == id)
            .cloned()
            .unwrap_or(Value::Null)
    };
    assert_eq!(row("s000")["title"], "Renamed in tab one");
    assert_eq!(row("s004")["archived"], true);
    let archived_at = row("s004")["archived_at"].as_f64().unwrap();
    assert!((archived_at - now()).abs() < 120.0, "{archived_at}");
    assert!(row("s008").is_null());
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git");
    assert!(out.status.success(), "git {args:?}: {:?}", out);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn replay_prev_next_timeline_and_sending_from_an_old_commit_makes_a_branch() {
    let server = TestServer::start();
    // An agent runtime answers what is sent from the composer.
    let _runner = Runner::claiming(&server.url);
    for i in 1..=4 {
        server.turn("rp", &format!("question {i}"), &format!("answer {i}"), &[]);
    }
    let Some(b) = Browser::start(1280, 800) else {
        return;
    };
    b.goto(&format!("{}/s/rp", server.url));
    b.wait_js(
        "return document.getElementById('turn-pos').textContent === 'Turn 4 / 4'",
        "turn 4 of 4",
    );
    b.click("#prev-turn");
    b.wait_js(
        "return document.getElementById('turn-pos').textContent === 'Turn 3 / 4'",
        "turn 3",
    );
    assert!(b.text("#messages").contains("answer 3"));
    assert!(!b.text("#messages").contains("answer 4"));
    assert!(b.js("return location.pathname", vec![]) == json!("/s/rp/turn/3"));
    // `]` steps forward, `[` back.
    b.js(
        "document.body.dispatchEvent(new KeyboardEvent('keydown', {key: ']', bubbles: true}))",
        vec![],
    );
    b.wait_js(
        "return document.getElementById('turn-pos').textContent === 'Turn 4 / 4'",
        "] to turn 4",
    );
    // The timeline: pick turn 2.
    b.click("#full-history");
    b.wait_js(
        "return document.querySelectorAll('#timeline .tl-pick').length === 4",
        "four commits",
    );
    b.screenshot("timeline");
    b.js(
        "[...document.querySelectorAll('#timeline .tl-pick')].find(x => x.textContent.startsWith('Turn 2')).click()",
        vec![],
    );
    b.wait_js(
        "return document.getElementById('turn-pos').textContent === 'Turn 2 / 4'",
        "turn 2 from the timeline",
    );
    assert!(!b
        .js(
            "return document.getElementById('readonly-note').hidden",
            vec![]
        )
        .as_bool()
        .unwrap());
    b.screenshot("replay-turn-2");
    // Send from there: a new branch, and the UI follows it.
    b.type_into("#composer-text", "a different third question");
    b.click("#send");
    b.wait_js(
        "return document.getElementById('messages').textContent.includes('a different third question')",
        "the new message",
    );
    // While the turn runs, sending waits (the spec's wording), unless the
    // user chooses to queue.
    b.wait_js(
        "return document.getElementById('send').disabled && document.getElementById('composer-note').textContent === 'a run is currently active in this session — wait for it to finish or stop it first'",
        "the composer disabled while the turn runs",
    );
    b.screenshot("turn-running-composer-disabled");
    b.click("#queue");
    assert_eq!(
        b.js("return document.getElementById('send').disabled", vec![]),
        json!(false)
    );
    b.click("#queue");
    // The agent runtime answers and ends the turn.
    let (_, s) = server.get("/api/sessions/rp");
    assert_eq!(s["status"], "running", "{s}");
    server.append(
        "rp",
        json!({"role": "assistant", "content": "answer on the new branch"}),
    );
    server.end_turn("rp", json!({}));
    b.wait_js(
        "const t = document.getElementById('turn-pos').textContent; return t.startsWith('Turn 3 / 3 · replay-')",
        "the replay branch",
    );
    assert!(b.text("#messages").contains("answer on the new branch"));
    let branches = git(&server.session_dir("rp"), &["branch", "--list"]);
    assert!(branches.contains("replay-"), "{branches}");
    assert!(branches.contains("main"));
    b.screenshot("sent-from-turn-2-new-branch");
    // The branch graph draws both lanes.
    b.click("#show-graph");
    b.wait_js(
        "return document.querySelectorAll('#graph .lane-label').length === 2",
        "two lanes",
    );
    let dots = b.js(
        "return document.querySelectorAll('#graph circle.dot').length",
        vec![],
    );
    assert_eq!(dots, json!(5));
    b.screenshot("branch-graph");
    // A turn's deep link loads cold (a fresh page), read-only at that turn.
    b.goto(&format!("{}/s/rp/turn/2", server.url));
    b.wait_js(
        "return document.getElementById('turn-pos').textContent.startsWith('Turn 2 / ')",
        "the cold deep link to turn 2",
    );
    assert!(b.text("#messages").contains("answer 2"));
    assert!(!b.text("#messages").contains("answer on the new branch"));
    assert_eq!(
        b.js("return location.pathname", vec![]),
        json!("/s/rp/turn/2")
    );
}

#[test]
fn the_retry_switcher_changes_branch() {
    let server = TestServer::start();
    server.turn("rt", "first question", "first answer", &[]);
    server.turn("rt", "second question", "original answer", &["grep"]);
    let (_, msgs) = server.get("/api/sessions/rt/messages");
    let u2 = msgs["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["content"] == "second question")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    server.append(
        "rt",
        json!({"id": "a2b", "role": "assistant", "predecessor": u2, "content": "retried answer"}),
    );
    server.end_turn("rt", json!({}));
    let Some(b) = Browser::start(1280, 800) else {
        return;
    };
    b.goto(&format!("{}/s/rt", server.url));
    b.wait_js(
        "return document.querySelector('.retry-pos') && document.querySelector('.retry-pos').textContent === '2 / 2'",
        "the retry switcher at 2 / 2",
    );
    assert!(b.text("#messages").contains("retried answer"));
    b.screenshot("retry-2-of-2");
    b.click(".retry-prev");
    b.wait_js(
        "return document.querySelector('.retry-pos').textContent === '1 / 2'",
        "1 / 2",
    );
    assert!(b.text("#messages").contains("original answer"));
    // Its tool call sits folded under the reply.
    assert_eq!(b.text(".tool summary"), "Tool · grep");
    let (_, branches) = server.get("/api/sessions/rt/branches");
    assert_eq!(branches["current"], "main");
    b.click(".retry-next");
    b.wait_js(
        "return document.querySelector('.retry-pos').textContent === '2 / 2'",
        "back to 2 / 2",
    );
    let (_, branches) = server.get("/api/sessions/rt/branches");
    assert_eq!(branches["current"], "retry-a2b");
    b.screenshot("retry-switched-back");
}

/// A project's page starts a chat in it; a session of the default project
/// names no project in the sidebar; without an LLM, no "Regenerate title".
#[test]
fn new_chat_here_starts_in_the_project_and_rows_name_only_real_projects() {
    let server = TestServer::start();
    let folder = tempfile::tempdir().unwrap();
    let (st, p) = server.post(
        "/api/projects",
        json!({"path": folder.path(), "name": "Garden"}),
    );
    assert_eq!(st, 201, "{p}");
    let pid = p["project"]["id"]
        .as_str()
        .or(p["id"].as_str())
        .unwrap()
        .to_string();
    server.turn("plain", "# A **plain** question", "answer", &[]);
    let (st, v) = server.post(
        "/api/sessions",
        json!({"id": "imported", "source": "claude-code", "title": "From Claude Code"}),
    );
    assert_eq!(st, 201, "{v}");
    server.turn("imported", "how do I rebase?", "git rebase -i", &[]);
    let Some(b) = Browser::start(1280, 800) else {
        return;
    };
    b.goto(&server.url);
    b.wait_js(
        "const r = document.querySelector('#row-plain .rsub'); return r && r.textContent === 'A plain question'",
        "a default-project row without a project label, its preview as plain text",
    );
    b.wait_js(
        "const r = document.querySelector('#row-imported .rsub'); return r && r.textContent === 'Claude Code · how do I rebase?'",
        "an imported session names the tool it came from",
    );
    assert_eq!(
        b.js(
            "return document.querySelector('#row-plain .rtitle').textContent",
            vec![]
        ),
        json!("A plain question"),
        "the title is plain text"
    );
    b.js(
        "document.querySelector('#row-plain .more').click();",
        vec![],
    );
    b.wait_js(
        "return document.querySelectorAll('#context-menu button').length > 0",
        "menu",
    );
    let labels = b.js(
        "return [...document.querySelectorAll('#context-menu button')].map(x => x.textContent)",
        vec![],
    );
    assert!(
        !labels
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l == "Regenerate title"),
        "{labels}"
    );
    b.goto(&format!("{}/projects/{pid}", server.url));
    b.wait_js(
        "return document.querySelector('.new-chat-here')",
        "New chat here",
    );
    // (The page may render again as the project list arrives.)
    b.js("document.querySelector('.new-chat-here').click()", vec![]);
    b.wait_js(
        "return document.getElementById('composer-note').textContent === 'New chat in Garden'",
        "the composer says where the chat goes",
    );
    b.type_into("#composer-text", "planting plan");
    b.click("#send");
    b.wait_js(
        "return location.pathname.startsWith('/s/')",
        "the new session opened",
    );
    let sid = b
        .js(
            "return decodeURIComponent(location.pathname.slice(3))",
            vec![],
        )
        .as_str()
        .unwrap()
        .to_string();
    let (_, meta) = server.get(&format!("/api/sessions/{sid}"));
    assert_eq!(meta["project_id"], pid.as_str(), "{meta}");
    b.wait_js(
        &format!("const r = document.querySelector('#row-{sid} .rsub'); return r && r.textContent.startsWith('Garden · ')"),
        "the project named on its row",
    );
    b.screenshot("new-chat-here");
}

/// A system prompt is shown folded at the top of the conversation, and
/// opens on a click.
#[test]
fn a_system_prompt_is_shown_folded() {
    let server = TestServer::start();
    let (status, v) = server.post(
        "/api/sessions/sysui/messages",
        json!({"role": "system", "content": "You are a careful reviewer. <b>never</b> rush."}),
    );
    assert_eq!(status, 201, "{v}");
    server.turn("sysui", "Review this please", "Looks fine.", &[]);
    let Some(b) = Browser::start(1280, 800) else {
        return;
    };
    b.goto(&format!("{}/s/sysui", server.url));
    b.wait_js(
        "const d = document.querySelector('#messages details.system-msg'); return d && !d.open && d === document.querySelector('#messages').firstElementChild",
        "the system prompt, folded, first",
    );
    b.js(
        "document.querySelector('#messages details.system-msg summary').click()",
        vec![],
    );
    b.wait_js(
        "const d = document.querySelector('#messages details.system-msg'); return d.open && d.textContent.includes('<b>never</b> rush')",
        "opened, shown as text",
    );
    b.screenshot("system-prompt-open");
}

#[test]
fn markup_in_messages_is_shown_as_text() {
    let server = TestServer::start();
    server.turn(
        "xss",
        "<script>window.__pwned = 1</script> and <img src=x onerror=\"window.__pwned = 2\">",
        "**bold** [a link](javascript:window.__pwned=3) <b onclick=x>tag</b>",
        &[],
    );
    let Some(b) = Browser::start(1280, 800) else {
        return;
    };
    b.goto(&format!("{}/s/xss", server.url));
    b.wait_js(
        "return document.getElementById('messages').textContent.includes('<script>window.__pwned = 1</script>')",
        "the script shown as text",
    );
    let found = b.js(
        "const m = document.getElementById('messages');
         return {img: m.querySelectorAll('img').length, script: m.querySelectorAll('script').length,
                 b: m.querySelectorAll('b').length, strong: m.querySelectorAll('strong').length,
                 a: m.querySelectorAll('a').length, pwned: window.__pwned || 0};",
        vec![],
    );
    assert_eq!(
        found,
        json!({"img": 0, "script": 0, "b": 0, "strong": 1, "a": 0, "pwned": 0})
    );
    assert!(b.text("#messages").contains("<img src=x onerror="));
    b.screenshot("markup-as-text");
}

#[test]
fn projects_create_move_warn_relocate_and_the_dirty_tree_banner() {
    let home = tempfile::tempdir().unwrap();
    let work = home.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("README.md"), "hello\n").unwrap();
    let home_s = home.path().to_str().unwrap().to_string();
    let server = TestServer::start_with(Options {
        env: &[("HOME", home_s.as_str())],
        ..Options::default()
    });
    let Some(b) = Browser::start(1280, 800) else {
        return;
    };
    b.goto(&format!("{}/projects", server.url));
    b.type_into("#new-project input[name=path]", work.to_str().unwrap());
    b.type_into("#new-project input[name=name]", "Work");
    b.click("#new-project button[type=submit]");
    b.wait_js(
        "return [...document.querySelectorAll('.project-name')].some(a => a.textContent === 'Work')",
        "the new project",
    );
    let (_, projects) = server.get("/api/projects");
    let pid = projects["projects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "Work")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    // A session in it whose turn meets a dirty tree: the banner.
    let (s, _) = server.post("/api/sessions", json!({"id": "pj", "project_id": pid}));
    assert!(s == 201 || s == 200);
    server.turn("pj", "first", "done", &[]);
    b.goto(&format!("{}/s/pj", server.url));
    b.wait_js(
        "return document.getElementById('project-indicator').textContent.startsWith('Work')",
        "the project indicator",
    );
    std::fs::write(work.join("README.md"), "edited by the user\n").unwrap();
    server.append("pj", json!({"role": "user", "content": "edit something"}));
    std::fs::write(work.join("agent.txt"), "by the agent\n").unwrap();
    server.append("pj", json!({"role": "assistant", "content": "edited"}));
    server.end_turn("pj", json!({}));
    b.wait_js(
        "const e = document.getElementById('banner'); return !e.hidden && e.textContent.includes(\"you have uncommitted changes, the agent's edits won't be auto-committed for now\")",
        "the dirty-tree banner",
    );
    b.screenshot("dirty-tree-banner");
    // Move the folder: the project shows the warning; relocate it.
    let moved = home.path().join("work-moved");
    std::fs::rename(&work, &moved).unwrap();
    b.goto(&format!("{}/projects", server.url));
    b.wait_js(
        &format!("return document.querySelector('[data-project=\"{pid}\"].missing')"),
        "the missing-folder warning",
    );
    b.screenshot("project-missing");
    b.js(
        &format!("document.querySelector('[data-project=\"{pid}\"] .locate').click()"),
        vec![],
    );
    // A wrong folder first: the error is shown.
    b.type_into(
        &format!("[data-project=\"{pid}\"] .locate-form input"),
        "/definitely/not/here",
    );
    b.click(&format!("[data-project=\"{pid}\"] .locate-form button"));
    b.wait_js(
        &format!("return document.querySelector('[data-project=\"{pid}\"] .locate-form .error').textContent.includes('not a directory')"),
        "the relocate error",
    );
    b.type_into(
        &format!("[data-project=\"{pid}\"] .locate-form input"),
        moved.to_str().unwrap(),
    );
    b.click(&format!("[data-project=\"{pid}\"] .locate-form button"));
    b.wait_js(
        &format!("const c = document.querySelector('[data-project=\"{pid}\"]'); return c && !c.classList.contains('missing')"),
        "the relocated project",
    );
    b.screenshot("project-relocated");
    // The relocation is a small runtime line in the conversation.
    b.goto(&format!("{}/s/pj", server.url));
    b.wait_js(
        "return [...document.querySelectorAll('#messages .runtime')].some(e => e.textContent.startsWith('project/relocate'))",
        "the relocate line",
    );
    b.screenshot("relocate-runtime-line");
    let (_, p) = server.get(&format!("/api/projects/{pid}"));
    assert_eq!(p["path"], moved.to_str().unwrap());
    assert_eq!(p["path_missing"], false);
    // The user commits their edit; the agent's next change is committed.
    git(&moved, &["add", "-A"]);
    git(
        &moved,
        &[
            "-c",
            "user.name=Ada",
            "-c",
            "user.email=ada@example.com",
            "commit",
            "-qm",
            "mine",
        ],
    );
    server.append("pj", json!({"role": "user", "content": "add a file"}));
    std::fs::write(moved.join("added.txt"), "by the agent\n").unwrap();
    server.append("pj", json!({"role": "assistant", "content": "added"}));
    let ended = server.end_turn("pj", json!({}));
    assert!(ended["project_commit"].is_string(), "{ended}");
    let turn = ended["turn"].as_u64().unwrap();
    // The project page lists the session and links the agent's commit to
    // the turn that made it.
    b.goto(&format!("{}/projects/{pid}", server.url));
    b.wait_js(
        "const a = document.querySelector('.project-sessions a'); return a && a.getAttribute('href') === '/s/pj'",
        "the project's session",
    );
    b.wait_js(
        &format!("const a = document.querySelector('.project-commits a'); return a && a.getAttribute('href') === '/s/pj/turn/{turn}'"),
        "the agent commit's link",
    );
    b.screenshot("project-page");
    b.click(".project-commits a");
    b.wait_js(
        &format!(
            "return document.getElementById('turn-pos').textContent.startsWith('Turn {turn} / ')"
        ),
        "the commit's turn",
    );
}

#[test]
fn the_token_is_asked_once_and_kept() {
    let server = TestServer::start_with(Options {
        env: &[("OPENPROGRAM_SERVER_REQUIRE_TOKEN", "true")],
        with_token: true,
        ..Options::default()
    });
    server.turn("tk", "behind the token", "ok", &[]);
    let token = std::fs::read_to_string(server.state_dir.join("token"))
        .unwrap()
        .trim()
        .to_string();
    let Some(b) = Browser::start(1280, 800) else {
        return;
    };
    b.goto(&server.url);
    b.wait_js(
        "return document.getElementById('token-dialog').open",
        "the token dialog",
    );
    b.screenshot("token-dialog");
    b.type_into("#token-input", &token);
    b.click("#token-form button");
    b.wait_js(
        "return document.getElementById('row-tk')",
        "the list behind the token",
    );
    // Kept: a reload asks nothing.
    b.goto(&format!("{}/s/tk", server.url));
    b.wait_js(
        "return document.getElementById('messages').textContent.includes('behind the token')",
        "the session after a reload",
    );
    assert_eq!(
        b.js(
            "return document.getElementById('token-dialog').open",
            vec![]
        ),
        json!(false)
    );
}

#[test]
fn a_narrow_window_and_the_first_paint_of_10000_sessions() {
    let t = now();
    let rows: Vec<(String, String, f64)> = (0..10_000)
        .map(|i| {
            (
                format!("n{i:05}"),
                format!("Narrow {i}"),
                t - i as f64 * 600.0,
            )
        })
        .collect();
    let server = TestServer::start_with(Options {
        prepare: Some(&|state: &Path| write_dated_sessions(state, &rows, &[])),
        ..Options::default()
    });
    let Some(b) = Browser::start(420, 800) else {
        return;
    };
    b.goto(&server.url);
    b.wait_js(
        "return document.getElementById('session-list').getAttribute('aria-rowcount') === '10000'",
        "10,000 rows",
    );
    let paint = b.js(
        "return performance.getEntriesByName('sessions-list')[0].startTime",
        vec![],
    );
    // Measured, not asserted: printed for the test log.
    eprintln!(
        "UI: first paint of the sidebar with 10,000 sessions: {paint} ms after navigation start"
    );
    let in_dom = b.js("return document.querySelectorAll('.vrow').length", vec![]);
    assert!(
        in_dom.as_u64().unwrap() < 100,
        "virtual list: {in_dom} rows in the DOM"
    );
    // The sidebar is a drawer in a narrow window.
    b.click("#toggle-sidebar");
    b.wait_js(
        "return document.getElementById('app').classList.contains('side-open')",
        "the drawer",
    );
    // The drawer's slide-in transition has ended.
    b.wait_js(
        "return document.getElementById('app').getAnimations({subtree: true}).length === 0",
        "the drawer at rest",
    );
    b.screenshot("narrow-window-sidebar");
    b.click("#row-n00000");
    b.wait_js(
        "return location.pathname === '/s/n00000'",
        "opened from the drawer",
    );
    b.screenshot("narrow-window-chat");
    // Opening a 200-turn session, measured (not asserted).
    for i in 1..=200 {
        server.append(
            "long",
            json!({"role": "user", "content": format!("question {i}")}),
        );
        server.append(
            "long",
            json!({"role": "assistant", "content": format!("answer {i} with `code` and **bold**")}),
        );
        server.end_turn("long", json!({}));
    }
    b.goto(&format!("{}/s/long", server.url));
    b.wait_js(
        "return document.getElementById('turn-pos').textContent === 'Turn 200 / 200'",
        "the 200-turn session",
    );
    let open_ms = b.js("return window.__lastOpenMs", vec![]);
    eprintln!("UI: opening a 200-turn session (messages, nodes, history): {open_ms} ms");
    assert_eq!(
        b.js(
            "return document.querySelectorAll('#messages .msg').length",
            vec![]
        ),
        json!(400)
    );
    // A dozen branches: eleven retries along the 200 turns.
    let (_, msgs) = server.get("/api/sessions/long/messages");
    let users: Vec<String> = msgs["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["id"].as_str().unwrap().to_string())
        .collect();
    for k in 1..=11 {
        let u = &users[k * 17];
        server.append(
            "long",
            json!({"id": format!("r{k}"), "role": "assistant", "predecessor": u, "content": format!("retry {k}")}),
        );
        server.end_turn("long", json!({}));
    }
    b.rt.block_on(b.client.set_window_size(1280, 800))
        .expect("resize");
    b.goto(&format!("{}/s/long", server.url));
    b.wait_js(
        "return document.getElementById('turn-pos').textContent.includes(' / ')",
        "the session again",
    );
    b.click("#show-graph");
    b.wait_js(
        "return document.querySelectorAll('#graph .lane-label').length === 12",
        "twelve lanes",
    );
    b.screenshot("branch-graph-200-turns-12-branches");
    // A dot shows that state.
    b.js(
        "const d = [...document.querySelectorAll('#graph circle.dot')].find(c => c.querySelector('title').textContent.startsWith('Turn 103 · retry-r6')); d.dispatchEvent(new MouseEvent('click', {bubbles: true}));",
        vec![],
    );
    b.wait_js(
        "return document.getElementById('turn-pos').textContent.startsWith('Turn 103 / 103')",
        "the picked dot's turn",
    );
    assert!(b.text("#messages").contains("retry 6"));
}

#[test]
fn dark_mode_follows_the_system_and_keyboard_reaches_the_sessions() {
    let server = TestServer::start();
    server.turn(
        "dk",
        "a question in the dark",
        "an answer with `code`",
        &["grep"],
    );
    server.turn("dk2", "another session", "ok", &[]);
    let Some(b) = Browser::start_with(1280, 800, &["--force-dark-mode"]) else {
        return;
    };
    b.goto(&format!("{}/s/dk", server.url));
    b.wait_js(
        "return document.getElementById('messages').textContent.includes('an answer with')",
        "the session",
    );
    let dark = b.js(
        "return matchMedia('(prefers-color-scheme: dark)').matches && getComputedStyle(document.body).backgroundColor",
        vec![],
    );
    assert_eq!(dark, json!("rgb(23, 25, 28)"), "a dark page background");
    b.screenshot("dark-mode");
    // The list takes the focus and the arrow keys; Enter opens a session.
    b.js("document.getElementById('session-list').focus()", vec![]);
    for key in ["ArrowDown", "ArrowDown", "Enter"] {
        b.js(
            "document.activeElement.dispatchEvent(new KeyboardEvent('keydown', {key: arguments[0], bubbles: true}))",
            vec![json!(key)],
        );
    }
    b.wait_js(
        "return location.pathname === '/s/dk' || location.pathname === '/s/dk2'",
        "a session opened by keyboard",
    );
    // The filter finds a word said only in a reply through the full-text
    // search (titles and previews do not hold it).
    b.js(
        "const f = document.getElementById('filter'); f.value = 'answer'; f.dispatchEvent(new Event('input'));",
        vec![],
    );
    b.wait_js(
        "return document.getElementById('row-dk') && !document.getElementById('row-dk2')",
        "the search hit in the sidebar",
    );
    // Its row shows where it matched, the term marked.
    b.wait_js(
        "const m = document.querySelector('#row-dk .rsub.snippet mark'); return m && m.textContent.toLowerCase() === 'answer'",
        "the snippet of the match",
    );
    b.screenshot("search-snippet");
    b.js(
        "const f = document.getElementById('filter'); f.value = ''; f.dispatchEvent(new Event('input'));",
        vec![],
    );
    // Status dots: needs input (amber), done and unread (blue).
    server.append("dk2", json!({"role": "user", "content": "one more"}));
    server.append(
        "dk2",
        json!({"role": "assistant", "content": "which file?"}),
    );
    server.end_turn("dk2", json!({"outcome": "needs_input"}));
    server.append(
        "bg",
        json!({"role": "user", "content": "in the background"}),
    );
    server.append("bg", json!({"role": "assistant", "content": "done"}));
    server.end_turn("bg", json!({"background": true}));
    b.wait_js(
        "return document.querySelector('#row-dk2 .dot.needs-input') && document.querySelector('#row-bg .dot.unread')",
        "the amber and blue dots",
    );
    b.screenshot("status-dots");
    // Opening the unread one marks it read, for every client.
    b.click("#row-bg");
    b.wait_js(
        "return !document.querySelector('#row-bg .dot.unread')",
        "read once opened",
    );
    let (_, bg) = server.get("/api/sessions/bg");
    assert_eq!(bg["unread"], false);
    // Every control of the page has an accessible name.
    let unnamed = b.js(
        "return [...document.querySelectorAll('button, input, select, textarea')].filter(e => {
           if (e.closest('[hidden]') || e.type === 'hidden') return false;
           const label = e.labels && e.labels.length;
           return !(label || e.getAttribute('aria-label') || e.textContent.trim() || e.placeholder);
         }).map(e => e.outerHTML.slice(0, 80))",
        vec![],
    );
    assert_eq!(unnamed, json!([]));
}

#[test]
fn the_sidebar_filters_sessions_by_the_tool_they_came_from() {
    let server = TestServer::start();
    server.turn("ours", "Written here", "ok", &[]);
    let (st, v) = server.post(
        "/api/sessions/claude-code-abc/turns",
        json!({"session": {"title": "From Claude Code", "source": "claude-code"},
               "nodes": [{"role": "user", "content": "Imported prompt"},
                         {"role": "assistant", "content": "Imported reply"}]}),
    );
    assert_eq!(st, 201, "{v}");
    let Some(b) = Browser::start(1280, 800) else {
        return;
    };
    b.goto(&server.url);
    b.wait_js(
        "const s = document.getElementById('source-filter'); return !s.hidden && [...s.options].map(o => o.textContent).join('|') === 'All sources|This service|Claude Code'",
        "the source filter, with the tool",
    );
    let rows = |b: &Browser| list_contents(b).join("\n");
    assert!(rows(&b).contains("R:claude-code-abc") && rows(&b).contains("R:ours"));
    b.js(
        "const s = document.getElementById('source-filter'); s.value = 'claude-code'; s.dispatchEvent(new Event('change'));",
        vec![],
    );
    b.wait_js(
        "const t = document.getElementById('session-list').textContent; return t.includes('From Claude Code') && !t.includes('Written here')",
        "only the imported session",
    );
    b.screenshot("source-filter");
    b.js(
        "const s = document.getElementById('source-filter'); s.value = 'here'; s.dispatchEvent(new Event('change'));",
        vec![],
    );
    b.wait_js(
        "const t = document.getElementById('session-list').textContent; return !t.includes('From Claude Code') && t.includes('Written here')",
        "only this service's session",
    );
}

/// With no agent connected, a message from the composer is kept and the
/// composer says so (with the way to connect one) instead of "running"
/// forever; a runner connecting later takes it, and the Stop button ends
/// the run (the turn `cancelled`, committed).
#[test]
fn a_message_nobody_answers_says_so_and_a_run_can_be_stopped() {
    let server = TestServer::start();
    server.turn("na", "first question", "first answer", &[]);
    let Some(b) = Browser::start(1280, 800) else {
        return;
    };
    b.goto(&format!("{}/s/na", server.url));
    b.wait_js(
        "return document.getElementById('messages').textContent.includes('first answer')",
        "the session",
    );
    b.type_into("#composer-text", "is anyone there?");
    b.click("#send");
    b.wait_js(
        "const n = document.getElementById('composer-note'); return n.textContent.startsWith('No agent connected — your message is saved') && !!document.getElementById('no-agent-link')",
        "the no-agent notice",
    );
    b.screenshot("no-agent-connected");
    let (_, meta) = server.get("/api/sessions/na");
    assert_eq!(meta["status"], "needs_input", "not running: {meta}");
    // The waiting message holds the session as a run does: a second one
    // is not sent (unless queued), and the wait can be stopped.
    assert_eq!(
        b.js(
            "return [document.getElementById('send').disabled, document.getElementById('stop').hidden]",
            vec![]
        ),
        json!([true, false])
    );
    // The notice's link serves the runners' walk-through.
    let (st, _, doc) = server.get_bytes("/docs/RUNNERS.md");
    assert_eq!(st, 200);
    assert!(String::from_utf8_lossy(&doc).contains("register_runner"));

    // A runner connects: it is offered the waiting message and claims it.
    let _runner = Runner::claiming(&server.url);
    b.wait_js(
        "return !document.getElementById('stop').hidden",
        "the Stop button while the run is active",
    );
    server.append(
        "na",
        json!({"id": "na-partial", "role": "assistant", "content": "let me think"}),
    );
    b.wait_js(
        "return document.getElementById('messages').textContent.includes('let me think')",
        "the reply shown while it is written",
    );
    b.wait_js(
        "return document.getElementById('messages').textContent.includes('answered by test-runner')",
        "the runner's name on the turn",
    );
    b.screenshot("run-active-stop-button");
    b.click("#stop");
    b.wait_js(
        "return document.getElementById('stop').hidden",
        "the run stopped",
    );
    let (_, meta) = server.get("/api/sessions/na");
    assert_eq!(
        (
            meta["status"].as_str(),
            meta["last_turn"]["outcome"].as_str()
        ),
        (Some("idle"), Some("cancelled")),
        "{meta}"
    );
    let files = git(
        &server.session_dir("na"),
        &["ls-tree", "-r", "--name-only", "HEAD"],
    );
    assert!(files.contains("na-partial"), "{files}");
}

/// The built-in runner answers from the composer with a Markdown table
/// (drawn as a table, the runner and model on the reply); the reply's
/// Retry button gets a second answer on a branch of its own with the
/// `‹ 2 / 2 ›` switch; a run stopped mid-stream shows its partial answer
/// marked "stopped", and the session carries no failure dot.
#[test]
fn a_reply_is_retried_from_its_button_and_a_stopped_one_says_so() {
    let long: String = (1..=300).map(|k| format!("w{k} ")).collect();
    // Answers by the question (the titler asks this LLM too).
    let retried = std::sync::atomic::AtomicBool::new(false);
    let llm = fake_llm::FakeLlm::start(std::time::Duration::ZERO, move |_, body| {
        let asked = body["messages"]
            .as_array()
            .and_then(|m| m.last())
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default()
            .to_string();
        let text = match asked.as_str() {
            "Which files?" if !retried.swap(true, std::sync::atomic::Ordering::SeqCst) => "Here are the files:\n\n| file | role |\n|:---|---:|\n| `src/parse.rs` | parser |\n| src/lex.rs | lexer \\| tokens |\n\nBoth are _tested_.".to_string(),
            "Which files?" => "A second, shorter answer.".to_string(),
            "Count slowly" => long.clone(),
            _ => "A title".to_string(),
        };
        (200, text)
    });
    let server = TestServer::start_with_env(&[
        ("OPENPROGRAM_RUNNER_BUILTIN", "llm"),
        ("OPENPROGRAM_LLM_BASE_URL", &llm.base_url),
        ("OPENPROGRAM_LLM_MODEL", "stand-in"),
    ]);
    server.turn("rt", "hello", "hi there", &[]);
    let Some(b) = Browser::start(1280, 800) else {
        return;
    };
    b.goto(&format!("{}/s/rt", server.url));
    b.wait_js(
        "return document.getElementById('messages').textContent.includes('hi there')",
        "the session",
    );
    b.type_into("#composer-text", "Which files?");
    b.click("#send");
    b.wait_js(
        "const rows = document.querySelectorAll('#messages table tbody tr'); return rows.length === 2 && document.getElementById('messages').textContent.includes('Both are tested.')",
        "the answer's table, whole",
    );
    let table = b.js(
        "const t = document.querySelector('#messages table');
         return {head: [...t.querySelectorAll('th')].map((c) => c.textContent),
                 cells: [...t.querySelectorAll('td')].map((c) => c.textContent),
                 code: t.querySelectorAll('td code').length,
                 right: t.querySelector('th:nth-child(2)').style.textAlign,
                 em: document.querySelectorAll('#messages em').length};",
        vec![],
    );
    assert_eq!(
        table,
        json!({"head": ["file", "role"], "cells": ["src/parse.rs", "parser", "src/lex.rs", "lexer | tokens"],
               "code": 1, "right": "right", "em": 1})
    );
    b.wait_js(
        "const r = [...document.querySelectorAll('#messages .msg.assistant')].pop(); return r.querySelector('.runner')?.textContent === 'answered by llm · stand-in'",
        "the runner and model on the reply",
    );
    b.screenshot("markdown-table-and-runner");

    // Retry from the reply's button: a second answer, the switch shows 2 / 2.
    b.wait_js(
        "const r = [...document.querySelectorAll('#messages .msg.assistant')].pop(); const x = r.querySelector('button.retry'); if (!x) return false; x.click(); return true;",
        "the Retry button",
    );
    b.wait_js(
        "const m = document.getElementById('messages'); return m.textContent.includes('A second, shorter answer.') && !m.querySelector('table') && m.querySelector('.retry-pos')?.textContent === '2 / 2'",
        "the second answer and its switch",
    );
    let (_, branches) = server.get("/api/sessions/rt/branches");
    assert!(
        branches["current"].as_str().unwrap().starts_with("retry-"),
        "{branches}"
    );
    b.screenshot("retry-second-answer");
    // Found and clicked in one step: the list is drawn again when the
    // retried turn's commit arrives, which would leave a reference taken
    // a moment before pointing at a removed button.
    b.wait_js(
        "const x = document.querySelector('.retry-prev'); if (!x) return false; x.click(); return true;",
        "the previous answer's button",
    );
    b.wait_js(
        "const m = document.getElementById('messages'); return !!m.querySelector('table') && m.querySelector('.retry-pos')?.textContent === '1 / 2'",
        "back to the first answer",
    );

    // A long answer stopped mid-stream.
    b.type_into("#composer-text", "Count slowly");
    b.click("#send");
    b.wait_js(
        "return document.getElementById('messages').textContent.includes('w5 ') && !document.getElementById('stop').hidden",
        "the answer streaming",
    );
    b.click("#stop");
    b.wait_js(
        "const r = [...document.querySelectorAll('#messages .msg.assistant')].pop(); return r.classList.contains('stopped') && r.querySelector('.stopped-mark')?.textContent === 'stopped'",
        "the partial answer marked stopped",
    );
    let row = b.wait_js(
        "const r = document.querySelector('#session-list [data-id=\"rt\"]') || [...document.querySelectorAll('#session-list [role=option], #session-list li')].find((e) => e.textContent.includes('hello')); return r ? r.getAttribute('aria-label') : false",
        "the session's row",
    );
    assert!(!row.as_str().unwrap_or("").contains("failed"), "{row}");
    let (_, meta) = server.get("/api/sessions/rt");
    assert_eq!(
        (
            meta["status"].as_str(),
            meta["last_turn"]["outcome"].as_str()
        ),
        (Some("idle"), Some("cancelled")),
        "{meta}"
    );
    b.screenshot("stopped-run");
}

/// A row's preview is plain text (no `**` or `_` markers), and a search
/// hit deep in a long reply shows its match: the snippet starts a few
/// words before it, so the marked word is inside the row, not past the
/// ellipsis.
#[test]
fn previews_are_plain_text_and_a_search_hit_shows_its_match() {
    let server = TestServer::start();
    server.turn(
        "pv",
        "Some **bold** and _soft_ words",
        "ok, see <https://example.org/x> about snake_case_name",
        &[],
    );
    let filler = "a long reply that explains many unrelated things first, ".repeat(4);
    server.turn(
        "far",
        "a question",
        &format!("{filler}and only then the zanzibar word"),
        &[],
    );
    let Some(b) = Browser::start(1280, 800) else {
        return;
    };
    b.goto(&server.url);
    b.wait_js(
        "return !!document.getElementById('row-pv') && !!document.getElementById('row-far')",
        "both rows",
    );
    let row = b.js(
        "const r = document.getElementById('row-pv'); return r.querySelector('.rtitle').textContent + ' | ' + r.querySelector('.rsub').textContent",
        vec![],
    );
    let row = row.as_str().unwrap_or_default().to_string();
    assert!(
        row.contains("bold") && !row.contains("**") && !row.contains("_soft_"),
        "{row}"
    );
    b.js(
        "const f = document.getElementById('filter'); f.value = 'zanzibar'; f.dispatchEvent(new Event('input'));",
        vec![],
    );
    b.wait_js(
        "const m = document.querySelector('#row-far .rsub.snippet mark'); return m && m.textContent.toLowerCase() === 'zanzibar'",
        "the snippet of the match",
    );
    let seen = b.js(
        "const m = document.querySelector('#row-far .rsub.snippet mark'); const s = m.closest('.rsub'); const a = m.getBoundingClientRect(), r = s.getBoundingClientRect(); return [a.right <= r.right + 0.5, s.textContent]",
        vec![],
    );
    assert_eq!(seen[0], true, "the marked word is in view: {seen}");
    assert!(
        seen[1].as_str().unwrap_or_default().starts_with('…'),
        "{seen}"
    );
    b.screenshot("search-snippet-deep-match");
    // The branches graph of a short session is sized to its content.
    b.goto(&format!("{}/s/pv", server.url));
    b.wait_js(
        "return document.getElementById('turn-pos').textContent.includes(' / ')",
        "the session",
    );
    // `_emphasis_` and `<https://…>` autolinks as people write them; an
    // underscore inside a name stays text.
    let shown = b.js(
        "const m = document.getElementById('messages'); return [[...m.querySelectorAll('em')].map(e => e.textContent).join('|'), [...m.querySelectorAll('a')].map(a => a.getAttribute('href')).join('|'), m.textContent.includes('snake_case_name')]",
        vec![],
    );
    assert_eq!(
        shown,
        json!(["soft", "https://example.org/x", true]),
        "{shown}"
    );
    b.click("#show-graph");
    b.wait_js(
        "return document.querySelectorAll('#graph circle.dot').length >= 1",
        "the graph",
    );
    let width = b.js(
        "return document.getElementById('graph-dialog').getBoundingClientRect().width",
        vec![],
    );
    assert!(width.as_f64().unwrap_or(1e9) < 600.0, "{width}");
    b.screenshot("branch-graph-one-turn");
}
