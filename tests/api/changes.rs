//! The change feed (`GET /api/changes`, `/api/changes/stream`): every
//! commit, deletion and archiving in order, long-poll and server-sent
//! events, bad cursors refused; and a pipeline following it through a
//! SIGKILL ends with exactly the commits the repositories hold.

use std::collections::{BTreeSet, HashMap};
use std::io::{BufRead, BufReader};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::helpers::{git, TestServer};

fn whole(session: &str, n: usize) -> Value {
    json!({"nodes": [
        {"id": format!("{session}-u{n}"), "role": "user", "content": format!("question {n}")},
        {"id": format!("{session}-a{n}"), "role": "assistant", "content": format!("answer {n}")}
    ]})
}

fn kinds(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["event"]["kind"].as_str().unwrap_or("").to_string())
        .collect()
}

#[test]
fn commits_archiving_and_deletion_come_in_order_with_a_long_poll() {
    let s = TestServer::start();
    let (st, start) = s.get("/api/changes?since=latest");
    assert_eq!(st, 200, "{start}");
    assert_eq!(start["events"], json!([]));
    let cursor = start["next_cursor"].as_str().unwrap().to_string();
    // A reader waits for the next event; the turn made meanwhile wakes it.
    let url = format!("{}/api/changes?since={cursor}&wait=20", s.url);
    let poll = std::thread::spawn(move || {
        let t = Instant::now();
        let v: Value = ureq::get(&url).call().unwrap().into_json().unwrap();
        (v, t.elapsed())
    });
    std::thread::sleep(Duration::from_millis(300));
    let (st, turn) = s.post("/api/sessions/feed1/turns", whole("feed1", 1));
    assert_eq!(st, 201, "{turn}");
    let (woken, waited) = poll.join().unwrap();
    assert!(
        waited < Duration::from_secs(10),
        "woken by the turn: {waited:?}"
    );
    assert!(!woken["events"].as_array().unwrap().is_empty(), "{woken}");

    s.post("/api/sessions/archive", json!({"session_id": "feed1"}));
    let (st, _) = s.raw_delete("/api/sessions/feed1");
    assert_eq!(st, 200);
    let (_, page) = s.get(&format!("/api/changes?since={cursor}"));
    let events = page["events"].as_array().unwrap().clone();
    assert_eq!(
        kinds(&events),
        ["commit", "commit", "session_archived", "session_deleted"],
        "{page}"
    );
    let init = &events[0]["event"];
    assert_eq!(init["session_id"], "feed1");
    assert!(init["turn"].is_null(), "the session's first commit: {init}");
    let t1 = &events[1]["event"];
    assert_eq!(
        (
            t1["turn"].as_u64(),
            t1["commit"].as_str(),
            t1["branch"].as_str()
        ),
        (Some(1), turn["commit"].as_str(), Some("main"))
    );
    assert_eq!(t1["node_ids"], json!(["feed1-u1", "feed1-a1"]));
    // Sequence numbers follow each other; each event's cursor continues
    // after it.
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{seqs:?}");
    let (_, rest) = s.get(&format!(
        "/api/changes?since={}",
        events[1]["cursor"].as_str().unwrap()
    ));
    assert_eq!(
        kinds(rest["events"].as_array().unwrap()),
        ["session_archived", "session_deleted"]
    );
    assert_eq!(rest["next_cursor"], page["next_cursor"]);
    // Pages of one.
    let (_, one) = s.get(&format!("/api/changes?since={cursor}&limit=1"));
    assert_eq!(one["events"].as_array().unwrap().len(), 1);
    assert_eq!(one["more"], true);
}

#[test]
fn bad_cursors_and_arguments_get_clear_errors() {
    let s = TestServer::start();
    s.post("/api/sessions/bc/turns", whole("bc", 1));
    for (query, code) in [
        ("since=nonsense", "invalid_cursor"),
        ("since=1-1-3", "invalid_cursor"),
        ("since=ffff-1-0", "invalid_cursor"),
        ("since=5-9-0", "invalid_cursor"),
        ("limit=0", "invalid_query"),
        ("limit=100000", "invalid_query"),
        ("wait=61", "invalid_input"),
        ("wait=-1", "invalid_input"),
    ] {
        let (st, v) = s.get(&format!("/api/changes?{query}"));
        assert_eq!(st / 100, 4, "{query}: {st} {v}");
        assert!(v["code"].is_string(), "{query}: {v}");
        if code != "invalid_query" {
            assert_eq!(v["code"], code, "{query}: {v}");
        }
    }
    let (st, v) = s.get("/api/changes/stream?since=nonsense");
    assert_eq!((st, v["code"].as_str()), (400, Some("invalid_cursor")));
}

/// Read server-sent events from `reader` until `n` `change` events came.
fn sse_events(reader: &mut impl BufRead, n: usize) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let (mut id, mut data) = (String::new(), String::new());
    let mut line = String::new();
    while out.len() < n {
        line.clear();
        assert!(reader.read_line(&mut line).unwrap() > 0, "the stream ended");
        let l = line.trim_end();
        if let Some(v) = l.strip_prefix("id: ") {
            id = v.to_string();
        } else if let Some(v) = l.strip_prefix("data: ") {
            data = v.to_string();
        } else if l.is_empty() && !data.is_empty() {
            out.push((id.clone(), serde_json::from_str(&data).unwrap()));
            data.clear();
        }
    }
    out
}

#[test]
fn the_stream_sends_each_event_once_and_resumes_from_last_event_id() {
    let s = TestServer::start();
    s.post("/api/sessions/st/turns", whole("st", 1));
    let resp = ureq::get(&format!("{}/api/changes/stream", s.url))
        .call()
        .unwrap();
    assert_eq!(resp.content_type(), "text/event-stream");
    let mut reader = BufReader::new(resp.into_reader());
    let first = sse_events(&mut reader, 2);
    assert_eq!(first[1].1["event"]["turn"], 1);
    // Live: the next turn arrives on the open stream.
    s.post("/api/sessions/st/turns", whole("st", 2));
    let live = sse_events(&mut reader, 1);
    assert_eq!(live[0].1["event"]["turn"], 2);
    // Reconnecting with Last-Event-ID goes on after that event.
    s.post("/api/sessions/st/turns", whole("st", 3));
    let resp = ureq::get(&format!("{}/api/changes/stream", s.url))
        .set("Last-Event-ID", &first[1].0)
        .call()
        .unwrap();
    let mut reader = BufReader::new(resp.into_reader());
    let resumed = sse_events(&mut reader, 2);
    let turns: Vec<_> = resumed
        .iter()
        .map(|e| e.1["event"]["turn"].clone())
        .collect();
    assert_eq!(turns, [json!(2), json!(3)]);
}

/// A pipeline follows the feed from the start while 20 sessions get
/// 1,000 turns, the server is SIGKILLed half way and restarted: the
/// pipeline ends with exactly the commits the repositories hold, each
/// once.
#[test]
fn a_pipeline_through_a_sigkill_gets_every_commit_exactly_once() {
    const SESSIONS: usize = 20;
    const TURNS: usize = 50;
    let mut s = TestServer::start_process();
    let url = Arc::new(Mutex::new(s.url.clone()));
    let acked = Arc::new(AtomicUsize::new(0));
    let writers_done = Arc::new(AtomicBool::new(false));
    let agent = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(20))
        .build();

    let follower = {
        let (url, done, agent) = (url.clone(), writers_done.clone(), agent.clone());
        std::thread::spawn(move || {
            let mut events: Vec<Value> = Vec::new();
            let mut cursor = String::new();
            loop {
                let base = url.lock().unwrap().clone();
                let finished = done.load(Ordering::SeqCst);
                let wait = if finished { 0.5 } else { 2.0 };
                let page: Value = match agent
                    .get(&format!(
                        "{base}/api/changes?since={cursor}&limit=200&wait={wait}"
                    ))
                    .call()
                {
                    Ok(r) => r.into_json().unwrap(),
                    Err(ureq::Error::Status(code, r)) => {
                        panic!("the feed answered {code}: {}", r.into_string().unwrap())
                    }
                    Err(_) => {
                        std::thread::sleep(Duration::from_millis(50));
                        continue;
                    }
                };
                let got = page["events"].as_array().unwrap();
                if got.is_empty() && finished {
                    return events;
                }
                events.extend(got.iter().cloned());
                cursor = page["next_cursor"].as_str().unwrap().to_string();
            }
        })
    };

    let writers: Vec<_> = (0..4)
        .map(|w| {
            let (url, acked, agent) = (url.clone(), acked.clone(), agent.clone());
            std::thread::spawn(move || {
                for n in 1..=TURNS {
                    for k in 0..SESSIONS / 4 {
                        let sid = format!("p{}", w * (SESSIONS / 4) + k);
                        loop {
                            let base = url.lock().unwrap().clone();
                            let res = agent
                                .post(&format!("{base}/api/sessions/{sid}/turns"))
                                .set("Idempotency-Key", &format!("{sid}-{n}"))
                                .send_json(whole(&sid, n));
                            match res {
                                Ok(_) => break,
                                Err(ureq::Error::Status(409, r)) => {
                                    // Its nodes are there: the turn was
                                    // made before the crash.
                                    let v: Value = r.into_json().unwrap();
                                    assert_eq!(v["code"], "node_conflict", "{v}");
                                    break;
                                }
                                Err(ureq::Error::Status(code, r)) if code < 500 => {
                                    panic!("{code}: {}", r.into_string().unwrap())
                                }
                                Err(_) => std::thread::sleep(Duration::from_millis(50)),
                            }
                        }
                        acked.fetch_add(1, Ordering::SeqCst);
                    }
                }
            })
        })
        .collect();

    while acked.load(Ordering::SeqCst) < SESSIONS * TURNS / 2 {
        std::thread::sleep(Duration::from_millis(5));
    }
    s.kill();
    s.spawn();
    *url.lock().unwrap() = s.url.clone();
    for w in writers {
        w.join().unwrap();
    }
    writers_done.store(true, Ordering::SeqCst);
    let events = follower.join().unwrap();

    // Sequence numbers 1, 2, 3, … with none missing or repeated.
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e["seq"].as_u64(), Some(i as u64 + 1), "{e}");
    }
    let mut from_feed: HashMap<String, BTreeSet<String>> = HashMap::new();
    for e in &events {
        let ev = &e["event"];
        assert_eq!(ev["kind"], "commit", "{ev}");
        let sid = ev["session_id"].as_str().unwrap().to_string();
        let commit = ev["commit"].as_str().unwrap().to_string();
        assert!(
            from_feed.entry(sid).or_default().insert(commit),
            "a commit came twice: {ev}"
        );
    }
    let mut turns = 0;
    for i in 0..SESSIONS {
        let sid = format!("p{i}");
        let in_repo: BTreeSet<String> = git(&s.session_dir(&sid), &["rev-list", "--all"])
            .lines()
            .map(str::to_string)
            .collect();
        assert_eq!(
            from_feed.get(&sid).cloned().unwrap_or_default(),
            in_repo,
            "session {sid}: the feed's commits are the repository's"
        );
        turns += in_repo.len() - 1;
    }
    assert!(turns >= SESSIONS * TURNS, "{turns} turn commits");
}

/// The process dies right after the log flush that made a turn's commit
/// durable, before the feed got its event: after the restart the feed
/// has it, once.
#[test]
fn a_crash_between_a_commit_and_its_event_loses_no_event() {
    let mut s = TestServer::start_process();
    s.post("/api/sessions/ce/turns", whole("ce", 1));
    let (_, before) = s.get("/api/changes");
    assert_eq!(before["events"].as_array().unwrap().len(), 2, "{before}");
    let cursor = before["next_cursor"].as_str().unwrap().to_string();
    s.restart_with_fault("kill-before-ack");
    let sent = ureq::post(&format!("{}/api/sessions/ce/turns", s.url)).send_json(whole("ce", 2));
    assert!(sent.is_err(), "no answer from a killed server: {sent:?}");
    s.kill();
    s.env.clear();
    s.spawn();
    let (st, after) = s.get(&format!("/api/changes?since={cursor}"));
    assert_eq!(st, 200, "{after}");
    let events = after["events"].as_array().unwrap();
    assert_eq!(events.len(), 1, "{after}");
    let head = git(&s.session_dir("ce"), &["rev-parse", "HEAD"]);
    assert_eq!(events[0]["event"]["commit"].as_str(), Some(head.trim()));
    assert_eq!(events[0]["event"]["turn"], 2);
    // A graceful restart repeats nothing.
    s.terminate();
    s.spawn();
    let (_, again) = s.get(&format!("/api/changes?since={cursor}"));
    assert_eq!(again["events"].as_array().unwrap().len(), 1, "{again}");
    let (_, all) = s.get("/api/changes");
    assert_eq!(all["events"].as_array().unwrap().len(), 3, "{all}");
}

/// A fork and an imported bundle arrive whole, built beside the store: their
/// commits are in the feed all the same (what replication follows).
#[test]
fn a_fork_and_an_imported_bundle_are_in_the_feed() {
    let s = TestServer::start();
    let (st, _) = s.post("/api/sessions/orig/turns", whole("orig", 1));
    assert_eq!(st, 201);
    let (_, start) = s.get("/api/changes?since=latest");
    let cursor = start["next_cursor"].as_str().unwrap().to_string();
    let (st, fork) = s.post("/api/sessions/orig/fork", json!({}));
    assert_eq!(st, 201, "{fork}");
    let fork_id = fork["id"].as_str().unwrap().to_string();
    let (st, _, bundle) = s.get_bytes("/api/sessions/orig/export");
    assert_eq!(st, 200);
    let (st, imported) = s.post_raw("/api/sessions/import", "application/x-git-bundle", &bundle);
    assert_eq!(st, 201, "{imported}");
    let imported_id = imported["id"].as_str().unwrap().to_string();
    let (_, page) = s.get(&format!("/api/changes?since={cursor}"));
    let events = page["events"].as_array().unwrap();
    for id in [&fork_id, &imported_id] {
        let e = events
            .iter()
            .find(|e| e["event"]["session_id"] == id.as_str() && e["event"]["kind"] == "commit")
            .unwrap_or_else(|| panic!("{id} is in the feed: {page}"));
        let head = git(&s.session_dir(id), &["rev-parse", "main"]);
        assert_eq!(e["event"]["commit"].as_str(), Some(head.trim()), "{e}");
        assert_eq!(e["event"]["branch"], "main", "{e}");
    }
}
