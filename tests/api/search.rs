//! Full-text search over every session, branch and turn, through a real
//! server: found where it was said, gone when deleted, the same after a
//! restart, a reindex and a SIGKILL.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::helpers::TestServer;
use crate::ws::WsClient;

fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn search(s: &TestServer, q: &str, extra: &str) -> Value {
    let (st, v) = s.get(&format!("/api/search?q={}{extra}", enc(q)));
    assert_eq!(st, 200, "{q}: {v}");
    v
}

/// Search until `done` holds (the indexer runs beside the writes).
fn search_until(s: &TestServer, q: &str, extra: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let v = search(s, q, extra);
        if done(&v) {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "{q}{extra}: never satisfied; last {v}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn total(v: &Value) -> u64 {
    v["total"].as_u64().unwrap()
}

/// What identifies each hit (session, node, branch, turn, role).
fn hit_set(v: &Value) -> BTreeSet<String> {
    v["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            format!(
                "{} {} {} {} {}",
                h["session_id"], h["node_id"], h["branch"], h["turn"], h["role"]
            )
        })
        .collect()
}

fn numbered_turn(s: &TestServer, id: &str, n: u64, user: &str, answer: &str) {
    s.append(
        id,
        json!({"id": format!("u{n}"), "role": "user", "content": user}),
    );
    s.append(
        id,
        json!({"id": format!("a{n}"), "role": "assistant", "content": answer}),
    );
    s.end_turn(id, json!({}));
}

#[test]
fn a_word_said_only_in_turn_7_of_a_retry_branch_is_found_there() {
    let s = TestServer::start();
    for n in 1..=8 {
        numbered_turn(
            &s,
            "long",
            n,
            &format!("question number {n}"),
            &format!("answer number {n}"),
        );
    }
    // Retry the answer to turn 7 with a word said nowhere else.
    s.append(
        "long",
        json!({"id": "a7b", "role": "assistant", "predecessor": "u7", "content": "the zephyrine answer"}),
    );
    s.end_turn("long", json!({}));
    let v = search_until(&s, "zephyrine", "", |v| total(v) == 1);
    let hit = &v["hits"][0];
    assert_eq!(hit["session_id"], "long");
    assert_eq!(hit["node_id"], "a7b");
    assert_eq!(hit["branch"], "retry-a7b");
    assert_eq!(hit["turn"], 7);
    assert_eq!(hit["role"], "assistant");
    assert_eq!(hit["snippet"], "the <b>zephyrine</b> answer");
    assert!(hit["title"].as_str().is_some_and(|t| !t.is_empty()));
    // Messages shared by both branches are indexed once, on main.
    let v = search(&s, "\"question number 3\"", "");
    assert_eq!(total(&v), 1, "{v}");
    assert_eq!(
        (
            v["hits"][0]["branch"].as_str(),
            v["hits"][0]["turn"].as_u64()
        ),
        (Some("main"), Some(3))
    );
}

#[test]
fn queries_phrases_prefixes_booleans_filters_and_groups() {
    let s = TestServer::start();
    s.turn(
        "p1",
        "the parser crashes on nested brackets",
        "I will fix the parser",
        &["grep"],
    );
    s.turn("p2", "the lexer drops unicode", "lexer fixed", &[]);
    s.turn("p3", "parsing dates in a café", "dates parse fine now", &[]);
    s.post("/api/sessions/archive", json!({"session_id": "p3"}));
    search_until(&s, "dates", "", |v| total(v) == 2);
    // Words must all match; OR relaxes; NOT excludes.
    assert_eq!(total(&search(&s, "parser nested", "")), 1);
    assert_eq!(total(&search(&s, "parser OR lexer", "&role=user")), 2);
    assert_eq!(total(&search(&s, "fixed -lexer", "")), 0);
    assert_eq!(
        total(&search(&s, "parser NOT brackets", "&role=assistant")),
        1
    );
    // A phrase, a prefix, accents folded both ways.
    assert_eq!(total(&search(&s, "\"nested brackets\"", "")), 1);
    assert_eq!(total(&search(&s, "\"brackets nested\"", "")), 0);
    let pre = search(&s, "pars*", "&role=user");
    let ids: BTreeSet<_> = pre["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["session_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids, BTreeSet::from(["p1".to_string(), "p3".to_string()]));
    assert_eq!(total(&search(&s, "cafe", "")), 1);
    assert_eq!(total(&search(&s, "CAFÉ", "")), 1);
    // Tool output with the tool's name.
    let tool = search(&s, "grep", "&role=tool");
    assert_eq!(
        (total(&tool), tool["hits"][0]["tool"].as_str()),
        (1, Some("grep"))
    );
    // Archived sessions stay searchable and are filtered.
    assert_eq!(total(&search(&s, "dates", "&archived=false")), 0);
    assert_eq!(total(&search(&s, "dates", "&archived=true")), 2);
    // Time.
    let (_, meta) = s.get("/api/sessions/p2");
    let created = meta["created_at"].as_f64().unwrap();
    assert_eq!(
        total(&search(
            &s,
            "lexer",
            &format!("&since={}", created + 3600.0)
        )),
        0
    );
    assert!(total(&search(&s, "lexer", &format!("&since={}", created - 1.0))) >= 1);
    // A typed title is searchable (a first-message title is the message).
    s.patch("/api/sessions/p2", json!({"title": "Zanzibar planning"}));
    let t = search_until(&s, "zanzibar", "", |v| total(v) == 1);
    assert_eq!(
        (
            t["hits"][0]["role"].as_str(),
            t["hits"][0]["session_id"].as_str()
        ),
        (Some("title"), Some("p2"))
    );
    assert_eq!(t["hits"][0]["snippet"], "<b>Zanzibar</b> planning");
    assert_eq!(total(&search(&s, "lexer", "&role=title")), 0);
    // A new title replaces the old one (one title document a session).
    s.patch("/api/sessions/p2", json!({"title": "Kilimanjaro trip"}));
    search_until(&s, "kilimanjaro", "", |v| total(v) == 1);
    assert_eq!(total(&search(&s, "zanzibar", "")), 0);
    assert_eq!(
        total(&search(&s, "kilimanjaro OR zanzibar", "&role=title")),
        1
    );
    // One row per session, best first.
    let g = search(&s, "parser OR parse OR lexer", "&group=session");
    let sessions: Vec<_> = g["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["session_id"].as_str().unwrap())
        .collect();
    assert_eq!(sessions.len(), 3, "{g}");
    assert!(g["sessions"][0]["hits"].as_array().unwrap().len() <= 3);
    // Paging.
    let all = search(&s, "parser OR lexer OR dates", "&limit=100");
    let page = search(&s, "parser OR lexer OR dates", "&limit=2&offset=1");
    assert_eq!(page["hits"].as_array().unwrap().len(), 2);
    assert_eq!(page["hits"][0], all["hits"][1]);
    assert_eq!(page["total"], all["total"]);
}

#[test]
fn project_filter_and_the_websocket_action() {
    let s = TestServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_, p) = s.post("/api/projects", json!({"path": dir.path()}));
    let pid = p["id"].as_str().unwrap().to_string();
    s.turn_in_project("inproj", &pid);
    s.append(
        "inproj",
        json!({"role": "user", "content": "quasar telemetry", "session": {"project_id": pid}}),
    );
    s.append("inproj", json!({"role": "assistant", "content": "ok"}));
    s.end_turn("inproj", json!({}));
    s.turn("home", "quasar at home", "ok", &[]);
    search_until(&s, "quasar", "", |v| total(v) == 2);
    let v = search(&s, "quasar", &format!("&project_id={pid}"));
    assert_eq!(total(&v), 1);
    assert_eq!(v["hits"][0]["session_id"], "inproj");
    let mut c = WsClient::connect(&s);
    c.send(json!({"action": "search_sessions", "q": "quasar", "project_id": "default", "request_id": 5}));
    let r = c.expect("search_results", |_| true);
    assert_eq!(r["request_id"], 5);
    assert_eq!(r["data"]["q"], "quasar");
    assert_eq!(r["data"]["total"], 1);
    assert_eq!(r["data"]["hits"][0]["session_id"], "home");
    c.send(json!({"action": "search_sessions", "q": "((("}));
    let e = c.expect("action_error", |_| true);
    assert_eq!(e["data"]["code"], "bad_query");
}

#[test]
fn chinese_japanese_and_korean_text_is_searchable() {
    let s = TestServer::start();
    s.turn(
        "zh",
        "我们昨天讨论了解析器的性能问题",
        "好的，我来看看",
        &[],
    );
    s.turn("ja", "東京タワーの写真を送ります", "ありがとう", &[]);
    s.turn("ko", "한국어 검색이 잘 됩니다", "좋아요", &[]);
    let v = search_until(&s, "解析器", "", |v| total(v) >= 1);
    assert_eq!(v["hits"][0]["session_id"], "zh");
    assert_eq!(
        v["hits"][0]["snippet"],
        "我们昨天讨论了<b>解析器</b>的性能问题"
    );
    assert_eq!(total(&search(&s, "性能", "")), 1);
    assert_eq!(total(&search(&s, "器解", "")), 0, "bigrams keep the order");
    assert_eq!(search(&s, "タワー", "")["hits"][0]["session_id"], "ja");
    assert_eq!(search(&s, "검색", "")["hits"][0]["session_id"], "ko");
}

#[test]
fn bad_queries_are_400_with_the_parsers_message() {
    let s = TestServer::start();
    for (q, extra, code) in [
        ("(((", "", "bad_query"),
        ("", "", "bad_query"),
        ("role:user hello", "", "bad_query"),
        ("hello", "&limit=0", "invalid_query"),
        ("hello", "&role=robot", "invalid_query"),
        ("hello", "&group=turn", "invalid_query"),
        ("hello", "&colour=blue", "invalid_query"),
        ("hello", "&since=yesterday", "invalid_query"),
    ] {
        let (st, v) = s.get(&format!("/api/search?q={}{extra}", enc(q)));
        assert_eq!(
            (st, v["code"].as_str()),
            (400, Some(code)),
            "{q}{extra}: {v}"
        );
        assert!(v["error"].as_str().is_some_and(|e| !e.is_empty()));
    }
    let (st, v) = s.get("/api/search");
    assert_eq!(
        (st, v["code"].as_str()),
        (400, Some("invalid_query")),
        "{v}"
    );
}

#[test]
fn deletion_restart_and_reindex_keep_the_index_true() {
    let mut s = TestServer::start_process();
    for i in 0..5 {
        s.turn(
            &format!("s{i}"),
            &format!("marmalade recipe {i}"),
            "noted",
            &[],
        );
    }
    s.turn("doomed", "marmalade to be forgotten", "noted", &[]);
    let before = search_until(&s, "marmalade", "&limit=100", |v| total(v) == 6);
    assert!(hit_set(&before).iter().any(|h| h.contains("\"doomed\"")));
    s.raw_delete("/api/sessions/doomed");
    let after_delete = search_until(&s, "marmalade", "&limit=100", |v| total(v) == 5);
    assert!(!hit_set(&after_delete)
        .iter()
        .any(|h| h.contains("\"doomed\"")));
    // A restart: the same hits.
    assert_eq!(s.terminate(), Some(0));
    s.spawn();
    assert_eq!(
        hit_set(&search(&s, "marmalade", "&limit=100")),
        hit_set(&after_delete)
    );
    // A reindex through the server: the same hits as incremental indexing.
    let (st, r) = s.post("/api/search/reindex", json!({}));
    assert_eq!((st, r["sessions"].as_u64()), (202, Some(5)));
    let want = hit_set(&after_delete);
    search_until(&s, "marmalade", "&limit=100", |v| hit_set(v) == want);
    // Offline, on the stopped server's directory: the same again.
    assert_eq!(s.terminate(), Some(0));
    let (code, out, err) = s.cli(&["search", "--reindex"], None);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("reindexed 5 sessions"), "{out}");
    s.spawn();
    assert_eq!(hit_set(&search(&s, "marmalade", "&limit=100")), want);
    let (code, out, _) = s.cli(&["search", "marmalade recipe"], None);
    assert_eq!(code, 0);
    assert!(out.starts_with("5 hits"), "{out}");
}

#[test]
fn a_sigkill_while_indexing_loses_nothing_and_a_damaged_index_is_rebuilt() {
    let mut s = TestServer::start_process();
    for i in 0..40 {
        s.turn(&format!("k{i}"), &format!("kumquat number {i}"), "ok", &[]);
    }
    // Killed at once: the last turns' indexing may not have happened.
    s.restart_after_kill();
    search_until(&s, "kumquat", "&limit=100", |v| total(v) == 40);
    // A damaged index (its files gone) is rebuilt at the next start.
    s.kill();
    let idx = s.state_dir.join("search");
    for e in std::fs::read_dir(&idx).unwrap().flatten() {
        if e.file_name().to_string_lossy().ends_with(".idx") {
            std::fs::remove_file(e.path()).unwrap();
        }
    }
    s.spawn();
    search_until(&s, "kumquat", "&limit=100", |v| total(v) == 40);
    let v = search(&s, "\"kumquat number 17\"", "");
    assert_eq!(v["hits"][0]["session_id"], "k17");
}

#[test]
fn search_turned_off_keeps_no_index_and_says_so() {
    let s = TestServer::start_with_env(&[("OPENPROGRAM_SEARCH_ENABLED", "false")]);
    s.turn("off1", "the word zanzibar", "noted", &[]);
    let (st, v) = s.get("/api/search?q=zanzibar");
    assert_eq!(
        (st, v["code"].as_str()),
        (503, Some("search_disabled")),
        "{v}"
    );
    let (st, v) = s.post("/api/search/reindex", json!({}));
    assert_eq!(
        (st, v["code"].as_str()),
        (503, Some("search_disabled")),
        "{v}"
    );
    assert!(
        !s.state_dir.join("search").exists(),
        "an index was made with search off"
    );
}
