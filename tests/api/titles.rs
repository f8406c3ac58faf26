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

/// A server whose titler has one worker, and a session to regenerate as a
/// barrier. With one worker, jobs run in the order they were queued, so a
/// regenerate that has answered means every job queued before it has been
/// answered and its title applied or refused: negative checks ("no request
/// between thresholds", "the late title was not written") wait on that,
/// never on a sleep.
fn with_one_worker(llm: &FakeLlm, extra: &[(&str, &str)]) -> (TestServer, tempfile::NamedTempFile) {
    let cfg = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(cfg.path(), "[llm]\nconcurrency = 1\n").unwrap();
    let mut env = vec![("OPENPROGRAM_CONFIG", cfg.path().to_str().unwrap())];
    env.extend_from_slice(extra);
    let s = with_llm(llm, &env);
    s.append(
        BARRIER,
        json!({"role": "user", "content": "barrier session"}),
    );
    (s, cfg)
}

const BARRIER: &str = "zz-barrier";

/// Returns once every title job queued before it has been handled.
fn barrier(s: &TestServer) {
    let (st, body) = s.post(
        &format!("/api/sessions/{BARRIER}/title/regenerate"),
        json!({}),
    );
    assert!(st == 200 || st == 502, "barrier: {st} {body}");
}

/// LLM requests whose conversation mentions `needle`.
fn requests_about(llm: &FakeLlm, needle: &str) -> usize {
    llm.requests()
        .iter()
        .filter(|(_, b)| {
            b["messages"][1]["content"]
                .as_str()
                .is_some_and(|c| c.contains(needle))
        })
        .count()
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
    let numbered = std::sync::atomic::AtomicUsize::new(0);
    let llm = FakeLlm::start(Duration::ZERO, move |_, body| {
        if body.to_string().contains("barrier session") {
            return (200, "Barrier".into());
        }
        let n = numbered.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        (200, format!("Title {n}"))
    });
    let (s, _cfg) = with_one_worker(&llm, &[]);
    let settle = |expected: usize| {
        barrier(&s);
        assert_eq!(
            requests_about(&llm, "User: message"),
            expected,
            "no request between thresholds"
        );
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
    let about_rt: Vec<Value> = llm
        .requests()
        .into_iter()
        .map(|(_, b)| b)
        .filter(|b| b.to_string().contains("User: message"))
        .collect();
    let last = &about_rt[3]["messages"][1]["content"];
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
    let (s, _cfg) = with_one_worker(&llm, &[]);
    s.turn("rn", "original question", "answer", &[]);
    let (st, _) = s.patch("/api/sessions/rn", json!({"title": "My own name"}));
    assert_eq!(st, 200);
    // The LLM's late answer has been handled once the barrier returns.
    barrier(&s);
    assert_eq!(requests_about(&llm, "original question"), 1);
    let m = title(&s, "rn");
    assert_eq!(m["title"], "My own name");
    assert_eq!(m["_user_titled"], true);
    // The lock is permanent: later thresholds make no request either.
    for i in 2..=6 {
        s.turn("rn", &format!("q{i}"), "a", &[]);
    }
    barrier(&s);
    assert_eq!(requests_about(&llm, "original question"), 1);
    assert_eq!(title(&s, "rn")["title"], "My own name");
}

#[test]
fn llm_failures_and_timeouts_keep_the_phase_one_title() {
    let failing = FakeLlm::start(Duration::ZERO, |_, _| (500, "boom".into()));
    let (s, _cfg) = with_one_worker(&failing, &[]);
    s.turn("f", "first message here", "r", &[]);
    barrier(&s);
    assert_eq!(requests_about(&failing, "first message here"), 1);
    assert_eq!(title(&s, "f")["title"], "first message here");
    drop(s);

    // The turn never waits for the LLM: with the LLM holding its answer
    // until the turn is back (and a timeout far longer than that), the
    // title it gives arrives after the turn. Had the turn waited for it,
    // the LLM's request would have timed out and no title would come.
    let (release, held) = std::sync::mpsc::channel::<()>();
    let held = std::sync::Mutex::new(held);
    let holding = FakeLlm::start(Duration::ZERO, move |_, body| {
        if body.to_string().contains("held llm") {
            let _ = held.lock().unwrap().recv_timeout(Duration::from_secs(120));
        }
        (200, "Answered After The Turn".into())
    });
    let (s, _cfg) = with_one_worker(&holding, &[("OPENPROGRAM_LLM_TIMEOUT", "100")]);
    s.turn("held", "held llm", "r", &[]);
    release.send(()).unwrap();
    eventually("the held LLM's title", || {
        title(&s, "held")["title"] == "Answered After The Turn"
    });
    drop(s);

    let slow = FakeLlm::replying(Duration::from_millis(2500), "Never Arrives In Time");
    let (s, _cfg) = with_one_worker(&slow, &[("OPENPROGRAM_LLM_TIMEOUT", "1")]);
    s.turn("to", "slow llm", "r", &[]);
    barrier(&s);
    assert_eq!(requests_about(&slow, "slow llm"), 1);
    assert_eq!(title(&s, "to")["title"], "slow llm");
    // An empty answer is a failure too.
    let empty = FakeLlm::replying(Duration::ZERO, "<think>hmm</think>\n  \n");
    let (s, _cfg) = with_one_worker(&empty, &[]);
    s.turn("e", "empty answers", "r", &[]);
    barrier(&s);
    assert_eq!(requests_about(&empty, "empty answers"), 1);
    assert_eq!(title(&s, "e")["title"], "empty answers");
}

#[test]
fn without_an_llm_only_phase_one_runs() {
    let s = TestServer::start_process();
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
fn ten_sessions_at_once_never_open_more_calls_than_the_pool() {
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

#[test]
fn non_ascii_llm_replies_of_every_length_never_stop_the_titler() {
    // Every prefix of a reply mixing 1- to 4-byte characters, more replies
    // than workers (a worker that died on one would stop titles for good).
    let reply: Vec<char> = "Title: Rust中文标题 🦀 Ärger".chars().collect();
    let replies: Vec<String> = (1..=reply.len())
        .map(|n| reply.iter().take(n).collect())
        .collect();
    let count = replies.len();
    let llm = FakeLlm::start(Duration::ZERO, move |n, _| {
        (
            200,
            replies
                .get(n)
                .cloned()
                .unwrap_or_else(|| "Rust中文标题".into()),
        )
    });
    let cfg = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(cfg.path(), "[llm]\nconcurrency = 2\n").unwrap();
    let s = with_llm(
        &llm,
        &[("OPENPROGRAM_CONFIG", cfg.path().to_str().unwrap())],
    );
    s.turn("nx", "first question", "first answer", &[]);
    for i in 1..count {
        let (st, m) = s.post("/api/sessions/nx/title/regenerate", json!({}));
        assert!(st == 200 || st == 502, "reply {i}: {st} {m}");
    }
    // After all of them the pool still answers, and the last title is whole.
    let (st, m) = s.post("/api/sessions/nx/title/regenerate", json!({}));
    assert_eq!(
        (st, m["title"].as_str()),
        (200, Some("Rust中文标题")),
        "{m}"
    );
    s.turn("ny", "another session", "answer", &[]);
    eventually("a later automatic title", || {
        title(&s, "ny")["title"] == "Rust中文标题"
    });
    assert!(!s.log().contains("panicked"), "no worker panicked");
}
