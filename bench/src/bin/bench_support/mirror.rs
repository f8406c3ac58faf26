//! `--mirror SESSIONS TURNS`: the live mirror's latency. A real server
//! runs with `[import] watch = ["claude-code"]` on a Claude Code folder of
//! its own; SESSIONS writers, all at once, each append TURNS turns to their
//! own transcript the way Claude Code does (the prompt, then the reply that
//! ends the turn, each line written as it happens). For every turn the
//! time from the write of its end until the turn is both listed (the
//! session's `turn_count`) and searchable (a word only it holds is found)
//! is measured; p50 and p99 against the target (p99 ≤ 2 s).

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use super::registry::spawn_server_with;

/// How often a writer asks whether its turn is visible yet.
const POLL: Duration = Duration::from_millis(25);
/// A turn not visible after this long counts as this long.
const GIVE_UP: Duration = Duration::from_secs(30);

fn record(
    kind: &str,
    id: &str,
    parent: Option<&str>,
    sid: &str,
    body: serde_json::Value,
) -> String {
    let mut r = json!({"type": kind, "uuid": id, "parentUuid": parent, "sessionId": sid,
                       "timestamp": "2025-06-01T10:00:00.000Z", "cwd": "/work"});
    if let (Some(o), serde_json::Value::Object(b)) = (r.as_object_mut(), body) {
        o.extend(b);
    }
    r.to_string() + "\n"
}

/// One writer: its turns, each waited for; the latencies.
fn writer(folder: &Path, url: &str, s: usize, turns: usize) -> Vec<Duration> {
    let agent = ureq::agent();
    let sid = format!("00000000-0000-4000-9000-{s:012}");
    let path = folder.join(format!("{sid}.jsonl"));
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .expect("transcript");
    let mut parent: Option<String> = None;
    let mut out = Vec::with_capacity(turns);
    for t in 0..turns {
        let word = format!("mirrorword{s}q{t}");
        let (u, a) = (format!("{s}-{t}-u"), format!("{s}-{t}-a"));
        let prompt = record(
            "user",
            &u,
            parent.as_deref(),
            &sid,
            json!({"message": {"role": "user", "content": format!("Turn {t}: look for {word}")}}),
        );
        file.write_all(prompt.as_bytes()).expect("write");
        std::thread::sleep(Duration::from_millis(50));
        let reply = record(
            "assistant",
            &a,
            Some(&u),
            &sid,
            json!({"message": {"id": format!("m-{a}"), "role": "assistant", "model": "claude-sonnet-4-5",
                               "content": [{"type": "text", "text": "Found it."}],
                               "stop_reason": "end_turn"}}),
        );
        file.write_all(reply.as_bytes()).expect("write");
        let written = Instant::now();
        parent = Some(a);
        let session = format!("{url}/api/sessions/claude-code-{sid}");
        let search = format!("{url}/api/search?q={word}");
        let mut listed = false;
        loop {
            if !listed {
                listed = agent
                    .get(&session)
                    .call()
                    .ok()
                    .and_then(|r| r.into_json::<serde_json::Value>().ok())
                    .and_then(|v| v["turn_count"].as_u64())
                    .is_some_and(|n| n > t as u64);
            }
            let found = listed
                && agent
                    .get(&search)
                    .call()
                    .ok()
                    .and_then(|r| r.into_json::<serde_json::Value>().ok())
                    .and_then(|v| v["total"].as_u64())
                    .is_some_and(|n| n > 0);
            if found || written.elapsed() >= GIVE_UP {
                out.push(written.elapsed());
                break;
            }
            std::thread::sleep(POLL);
        }
        // The tool's user reads the answer and types the next prompt.
        std::thread::sleep(Duration::from_millis(
            300 + (s as u64 * 37 + t as u64 * 53) % 400,
        ));
    }
    out
}

pub fn bench_mirror(dir: &Path, sessions: usize, turns: usize) {
    let claude = dir.join("claude");
    let folder = claude.join("projects").join("-work");
    std::fs::create_dir_all(&folder).expect("folder");
    let state = dir.join("mirror-state");
    let (mut server, url, _) = spawn_server_with(
        &state,
        &[
            ("CLAUDE_CONFIG_DIR", claude.as_os_str()),
            ("OPENPROGRAM_IMPORT_WATCH", "claude-code".as_ref()),
        ],
    );
    eprintln!("mirror: {sessions} Claude Code sessions written at once, {turns} turns each…");
    let started = Instant::now();
    let mut all: Vec<Duration> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..sessions)
            .map(|s| {
                let (folder, url) = (&folder, &url);
                scope.spawn(move || writer(folder, url, s, turns))
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("writer"))
            .collect()
    });
    let took = started.elapsed();
    let alive = server.exited().is_none();
    all.sort();
    let at = |q: f64| {
        let i = ((all.len() as f64 * q).ceil() as usize).clamp(1, all.len()) - 1;
        all[i].as_secs_f64()
    };
    let (p50, p99, max) = (at(0.50), at(0.99), at(1.0));
    println!(
        "mirror: {} turns from {sessions} sessions written at once in {:.1} s ({:.1} turns/s): \
         from the tool's write to listed and searchable p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms \
         (target p99 ≤ 2000 ms): {}",
        all.len(),
        took.as_secs_f64(),
        all.len() as f64 / took.as_secs_f64(),
        p50 * 1000.0,
        p99 * 1000.0,
        max * 1000.0,
        if alive && p99 <= 2.0 { "PASS" } else { "FAIL" }
    );
    if !alive {
        println!("mirror: FAIL: the server exited during the run");
    }
}
