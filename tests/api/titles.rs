use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::fake_llm::FakeLlm;
use crate::helpers::{git, TestServer};

fn with_llm(llm: &FakeLlm, extra: &[(&str, &str)]) -> TestServer {
    let mut env = vec![
        ("OPENPROGRAM_LLM_BASE_URL", llm.base_url.as_str()),
        ("OPENPROGRAM_LLM_MODEL", "cfg-model"),
    ];
    env.extend_from_slice(extra);
    TestServer::start_with_env(&env)
}

fn title(s: &TestServer, id: &str) -> Value {
    s.get(&format!("/api/sessions/{id}")).1
}

/// Wait until `f` holds (titles arrive in the background).
fn eventually(what: &str, f: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn first_turn_gets_a_truncated_title_at_once_and_an_llm_title_later() {
    let llm = FakeLlm::replying(Duration::from_millis(400), "Title: \"Parser Bug Fix\"");
    let s = with_llm(&llm, &[]);
    let user = "Please fix the bug in the JSON parser that drops escaped quotes\nSecond line";
    s.append("t1", json!({"role": "user", "content": user}));
    s.append(
        "t1",
        json!({"role": "assistant", "content": "I fixed the escape handling in the tokenizer."}),
    );
    s.end_turn("t1", json!({}));
    let m = title(&s, "t1");
    assert_eq!(
        m["title"],
        format!("{}…", user.chars().take(50).collect::<String>()),
        "phase 1 is there at once"
    );
    assert_eq!(
        (m["_auto_titled"].clone(), m["_title_gen_count"].clone()),
        (json!(true), json!(1))
    );
    let committed: Value =
        serde_json::from_str(&git(&s.session_dir("t1"), &["show", "HEAD:meta.json"])).unwrap();
    assert_eq!(
        committed["title"], m["title"],
        "the phase-1 title is part of the turn commit"
    );

    eventually("the LLM title", || {
        title(&s, "t1")["title"] == "Parser Bug Fix"
    });
    let m = title(&s, "t1");
    assert_eq!(
        (
            m["_auto_titled"].clone(),
            m["_title_gen_count"].clone(),
            m["_user_titled"].clone()
        ),
        (json!(true), json!(2), json!(false))
    );
    let (_, page) = s.get("/api/sessions");
    assert_eq!(page["sessions"][0]["title"], "Parser Bug Fix");

    let reqs = llm.requests();
    assert_eq!(reqs.len(), 1);
    let (path, body) = &reqs[0];
    assert_eq!(path, "/v1/chat/completions");
    assert_eq!(body["model"], "cfg-model");
    assert_eq!(body["max_tokens"], 50);
    assert_eq!(body["temperature"], 0.3);
    assert!(body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .contains("3-7 words"));
    let input = body["messages"][1]["content"].as_str().unwrap();
    assert!(
        input.starts_with("User: Please fix the bug in the JSON parser"),
        "{input}"
    );
    assert!(
        input.contains("Assistant: I fixed the escape handling"),
        "{input}"
    );
}

#[test]
fn the_sessions_own_model_is_used_when_set() {
    let llm = FakeLlm::replying(Duration::ZERO, "Model Test");
    let s = with_llm(&llm, &[]);
    s.append(
        "m",
        json!({"role": "user", "content": "hi", "session": {"model": "sess-model"}}),
    );
    s.append("m", json!({"role": "assistant", "content": "hello"}));
    s.end_turn("m", json!({}));
    eventually("a request", || llm.count() == 1);
    assert_eq!(llm.requests()[0].1["model"], "sess-model");
}

#[test]
fn retitles_at_replies_6_16_and_40_and_not_between() {
    let llm = FakeLlm::start(Duration::ZERO, |n, _| (200, format!("Title {}", n + 1)));
    let s = with_llm(&llm, &[]);
    let settle = |expected: usize| {
        eventually(&format!("{expected} requests"), || llm.count() >= expected);
        std::thread::sleep(Duration::from_millis(150));
        assert_eq!(llm.count(), expected, "no request between thresholds");
    };
    for turn in 1..=40 {
        s.turn(
            "rt",
            &format!("message {turn}"),
            &format!("reply {turn}"),
            &[],
        );
        match turn {
            1 | 5 => settle(1),
            6 | 15 => settle(2),
            16 | 39 => settle(3),
            40 => settle(4),
            _ => {}
        }
    }
    eventually("the fourth title", || title(&s, "rt")["title"] == "Title 4");
    assert_eq!(title(&s, "rt")["_title_gen_count"], 5);
    // Later passes see the most recent 20 messages, not the first round.
    let last = &llm.requests()[3].1["messages"][1]["content"];
    let text = last.as_str().unwrap();
    assert!(
        text.contains("User: message 40") && text.contains("Assistant: reply 40"),
        "{text}"
    );
    assert!(
        text.contains("User: message 31") && !text.contains("User: message 30\n"),
        "{text}"
    );
}

#[test]
fn a_rename_before_the_llm_answers_wins() {
    let llm = FakeLlm::replying(Duration::from_millis(800), "Too Late");
    let s = with_llm(&llm, &[]);
    s.turn("rn", "original question", "answer", &[]);
    let (st, _) = s.patch("/api/sessions/rn", json!({"title": "My own name"}));
    assert_eq!(st, 200);
    eventually("the LLM was asked", || llm.count() == 1);
    std::thread::sleep(Duration::from_millis(1200));
    let m = title(&s, "rn");
    assert_eq!(m["title"], "My own name");
    assert_eq!(m["_user_titled"], true);
    // The lock is permanent: later thresholds make no request either.
    for i in 2..=6 {
        s.turn("rn", &format!("q{i}"), "a", &[]);
    }
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(llm.count(), 1);
    assert_eq!(title(&s, "rn")["title"], "My own name");
}

#[test]
fn llm_failures_and_timeouts_keep_the_phase_one_title() {
    let failing = FakeLlm::start(Duration::ZERO, |_, _| (500, "boom".into()));
    let s = with_llm(&failing, &[]);
    s.turn("f", "first message here", "r", &[]);
    eventually("the failing request", || failing.count() == 1);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(title(&s, "f")["title"], "first message here");
    drop(s);

    let slow = FakeLlm::replying(Duration::from_millis(2500), "Never Arrives In Time");
    let s = with_llm(&slow, &[("OPENPROGRAM_LLM_TIMEOUT", "1")]);
    let started = Instant::now();
    s.turn("to", "slow llm", "r", &[]);
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "the turn never waits for the LLM"
    );
    eventually("the slow request", || slow.count() == 1);
    std::thread::sleep(Duration::from_millis(2600));
    assert_eq!(title(&s, "to")["title"], "slow llm");
    // An empty answer is a failure too.
    let empty = FakeLlm::replying(Duration::ZERO, "<think>hmm</think>\n  \n");
    let s = with_llm(&empty, &[]);
    s.turn("e", "empty answers", "r", &[]);
    eventually("the request", || empty.count() == 1);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(title(&s, "e")["title"], "empty answers");
}

#[test]
fn without_an_llm_only_phase_one_runs() {
    let s = TestServer::start();
    s.turn(
        "n",
        "[attachment:photo.png] What is in this photo?\nmore",
        "a cat",
        &[],
    );
    assert_eq!(title(&s, "n")["title"], "What is in this photo?");
    let (st, err) = s.post("/api/sessions/n/title/regenerate", json!({}));
    assert_eq!(
        (st, err["code"].as_str()),
        (503, Some("llm_not_configured"))
    );
    for i in 2..=6 {
        s.turn("n", &format!("q{i}"), "a", &[]);
    }
    assert_eq!(title(&s, "n")["title"], "What is in this photo?");
    assert!(
        !s.log().contains("title generation failed"),
        "no error spam"
    );
}

#[test]
fn regenerate_asks_now_without_locking() {
    let llm = FakeLlm::start(Duration::ZERO, |n, _| (200, format!("Fresh Title {n}")));
    let s = with_llm(&llm, &[]);
    s.turn("g", "hello", "hi", &[]);
    eventually("the automatic title", || {
        title(&s, "g")["title"] == "Fresh Title 0"
    });
    let (st, m) = s.post("/api/sessions/g/title/regenerate", json!({}));
    assert_eq!(st, 200, "{m}");
    assert_eq!(
        (m["title"].as_str(), m["_user_titled"].as_bool()),
        (Some("Fresh Title 1"), Some(false))
    );
    // An empty rename is a regenerate too.
    let (st, m) = s.patch("/api/sessions/g", json!({"title": ""}));
    assert_eq!((st, m["title"].as_str()), (200, Some("Fresh Title 2")));
    assert_eq!(
        s.post("/api/sessions/ghost/title/regenerate", json!({})).0,
        404
    );
}

#[test]
fn a_thousand_sessions_never_means_a_thousand_calls() {
    let cfg = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(cfg.path(), "[llm]\nconcurrency = 2\n").unwrap();
    let llm = FakeLlm::replying(Duration::from_millis(150), "Pooled");
    let s = with_llm(
        &llm,
        &[("OPENPROGRAM_CONFIG", cfg.path().to_str().unwrap())],
    );
    std::thread::scope(|scope| {
        for i in 0..10 {
            let s = &s;
            scope.spawn(move || s.turn(&format!("c{i}"), "same time", "r", &[]));
        }
    });
    eventually("every session titled", || {
        let (_, page) = s.get("/api/sessions?limit=50");
        page["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["title"] == "Pooled")
    });
    assert_eq!(llm.count(), 10);
    assert!(llm.peak_in_flight() <= 2, "peak {}", llm.peak_in_flight());
}

#[test]
fn listing_shows_the_first_message_when_there_is_no_title() {
    let s = TestServer::start();
    s.append("nt", json!({"role": "user", "content": "A question that has no title yet because the turn is still running on"}));
    let (_, page) = s.get("/api/sessions");
    assert_eq!(
        page["sessions"][0]["title"],
        "A question that has no title yet because the turn is still running on"
    );
    assert_eq!(
        title(&s, "nt")["title"],
        "",
        "display only: the stored title is unchanged"
    );
    s.post("/api/sessions", json!({"id": "ut", "title": "Untitled"}));
    s.append("ut", json!({"role": "user", "content": "shown instead"}));
    let (_, page) = s.get("/api/sessions");
    assert_eq!(page["sessions"][0]["title"], "shown instead");
}
