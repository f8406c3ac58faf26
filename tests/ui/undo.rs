//! Undo in the browser: an agent turn's files under its reply, the undo
//! with its diff preview and its refusal reasons, a held turn applied from
//! the project page.

use serde_json::json;

use crate::browser::Browser;
use crate::helpers::{git, TestServer};

#[test]
fn an_agent_turn_is_undone_from_the_transcript_and_a_held_turn_applied_from_the_project_page() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    git(&work, &["init", "-q", "-b", "main"]);
    std::fs::write(work.join("README.md"), "hello\n").unwrap();
    git(&work, &["add", "-A"]);
    git(
        &work,
        &[
            "-c",
            "user.name=Ada",
            "-c",
            "user.email=ada@example.com",
            "commit",
            "-qm",
            "start",
        ],
    );
    let server = TestServer::start();
    let Some(b) = Browser::start(1280, 900) else {
        return;
    };
    let (st, p) = server.post("/api/projects", json!({"path": work, "name": "Work"}));
    assert_eq!(st, 201, "{p}");
    let pid = p["id"].as_str().unwrap().to_string();
    server.append(
        "ud",
        json!({"role": "user", "content": "write the greeting", "session": {"project_id": pid}}),
    );
    std::fs::write(work.join("greeting.txt"), "hello\nworld\n").unwrap();
    server.append(
        "ud",
        json!({"role": "assistant", "content": "I wrote greeting.txt."}),
    );
    let ended = server.end_turn("ud", json!({}));
    assert!(ended["project_commit"].is_string(), "{ended}");

    b.goto(&format!("{}/s/ud", server.url));
    b.wait_js(
        "const c = document.querySelector('.turn-card'); return c && c.textContent.includes('greeting.txt') && c.querySelector('.undo-turn')",
        "the turn's file card",
    );
    b.click(".turn-card .undo-turn");
    b.wait_js(
        "const d = document.querySelector('.undo-panel .diff'); return d && d.textContent.includes('-world')",
        "the undo's diff preview",
    );
    b.screenshot("undo-preview");
    b.click(".undo-panel .confirm-undo");
    b.wait_js(
        "return [...document.querySelectorAll('#messages .runtime')].some(e => e.textContent.startsWith('project/revert'))",
        "the undo's runtime line",
    );
    assert!(!work.join("greeting.txt").exists());
    b.wait_js(
        "const c = document.querySelector('.turn-card'); return c && c.dataset.state === 'reverted' && !c.querySelector('.undo-turn')",
        "the card marked undone",
    );

    // A second turn, then the user's own edit: the undo says why not.
    server.append("ud", json!({"role": "user", "content": "add notes"}));
    std::fs::write(work.join("notes.txt"), "notes\n").unwrap();
    server.append(
        "ud",
        json!({"role": "assistant", "content": "Added notes."}),
    );
    server.end_turn("ud", json!({}));
    std::fs::write(work.join("mine.txt"), "the user's\n").unwrap();
    b.goto(&format!("{}/s/ud", server.url));
    b.wait_js(
        "return [...document.querySelectorAll('.turn-card')].some(c => c.textContent.includes('notes.txt') && c.querySelector('.undo-turn'))",
        "the second turn's card",
    );
    b.js(
        "[...document.querySelectorAll('.turn-card')].find(c => c.textContent.includes('notes.txt')).querySelector('.undo-turn').click()",
        vec![],
    );
    b.wait_js(
        "const r = document.querySelector('.undo-panel .refusals'); return r && r.textContent.includes('mine.txt') && document.querySelector('.undo-panel .confirm-undo').disabled",
        "the refusal with the user's file",
    );
    b.screenshot("undo-refused");

    // With the tree dirty, the agent's next turn is held; the project page
    // applies it once the tree is clean.
    server.append("ud", json!({"role": "user", "content": "write held"}));
    std::fs::write(work.join("held.txt"), "held\n").unwrap();
    server.append(
        "ud",
        json!({"role": "assistant", "content": "Wrote held.txt."}),
    );
    let held = server.end_turn("ud", json!({}));
    assert_eq!(
        held["project_commit_skipped"]["held"]["files"],
        json!(["held.txt"]),
        "{held}"
    );
    b.goto(&format!("{}/projects/{pid}", server.url));
    b.wait_js(
        "const h = document.querySelector('.held-turn'); return h && h.textContent.includes('held.txt') && h.querySelector('.apply-turn')",
        "the held turn",
    );
    // (Clicked from the page: a broadcast may draw the page again.)
    let apply = "document.querySelector('.held-turn .apply-turn').click(); return true";
    b.wait_js(apply, "the apply button");
    b.wait_js(
        "const e = document.querySelector('.held-out .error'); return e && e.textContent.includes('uncommitted')",
        "the dirty-tree refusal",
    );
    std::fs::remove_file(work.join("mine.txt")).unwrap();
    std::fs::remove_file(work.join("held.txt")).unwrap();
    b.wait_js(apply, "the apply button");
    b.wait_js(
        "const h = document.querySelector('.held-turn'); return h && h.querySelector('.applied')",
        "the applied held turn",
    );
    b.screenshot("held-applied");
    assert_eq!(
        std::fs::read_to_string(work.join("held.txt")).unwrap(),
        "held\n"
    );
    assert_eq!(git(&work, &["status", "--porcelain"]), "");
}
