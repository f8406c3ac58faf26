//! Memory under a long mixed load: a real server, six client threads each
//! cycling over four sessions (a user message, a reply of 200–2,000
//! characters, the end of the turn, a page of the list, the session's
//! messages, a search), resident memory sampled every 10 s; then, once the
//! load's last requests are answered and the server has settled, compared
//! with a fresh server that loaded the same data and answered the same
//! requests once. Target: ≤ 1.2× the fresh one (what the server keeps does
//! not grow with the time it ran).
//!
//! And memory with the session cache full of long sessions (`bench_live`):
//! S sessions of T turns written through a real server, then a fresh
//! server reading every one of them (all live at once). Target: ≤ 200 MiB
//! for 256 sessions of 2,000 turns.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::registry::{metric, spawn_server, wait_indexed};

const CLIENTS: usize = 6;
const SESSIONS_PER_CLIENT: usize = 4;

pub fn rss_mib(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// Resident memory split as the kernel counts it: anonymous (heap) and
/// file-backed (mapped pack and search-index files), in MiB.
fn rss_split(pid: u32) -> (f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    };
    (field("RssAnon:"), field("RssFile:") + field("RssShmem:"))
}

/// The largest resident parts of the process by what is mapped (a file's
/// path, its folder's kind for pack and index files, or `[anonymous]`),
/// from `/proc/<pid>/smaps`: where the memory is.
fn top_mappings(pid: u32, n: usize) -> String {
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).unwrap_or_default();
    let mut by: std::collections::HashMap<String, f64> = std::collections::HashMap::new();
    let mut current = String::new();
    for line in smaps.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if first.contains('-') && first.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
            let path = line.split_whitespace().nth(5).unwrap_or("[anonymous]");
            current = if path.contains("/objects/pack/") {
                format!("pack files (*{})", path.rsplit('.').next().unwrap_or(""))
            } else if path.contains("/search/") {
                "search index files".into()
            } else {
                path.to_string()
            };
        } else if let Some(v) = line.strip_prefix("Rss:") {
            let kb: f64 = v
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse()
                .unwrap_or(0.0);
            *by.entry(current.clone()).or_default() += kb / 1024.0;
        }
    }
    let mut rows: Vec<(String, f64)> = by.into_iter().collect();
    rows.sort_by(|a, b| b.1.total_cmp(&a.1));
    rows.iter()
        .take(n)
        .map(|(k, v)| format!("{v:.1} MiB {k}"))
        .collect::<Vec<_>>()
        .join("; ")
}

fn client(url: String, c: usize, stop: Arc<AtomicBool>, done: Arc<AtomicU64>) {
    let agent = ureq::agent();
    let words = ["alpha", "beta", "gamma", "delta", "parser", "bug", "memory"];
    let mut n: usize = 0;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        let s = format!("mem{c}-{}", n % SESSIONS_PER_CLIENT);
        let question: Vec<&str> = (0..30)
            .map(|i| words[(n * 7 + i * 3) % words.len()])
            .collect();
        let reply = "x".repeat(200 + (n * 131) % 1800);
        let post = |path: &str, body: serde_json::Value| {
            let _ = agent.post(&format!("{url}{path}")).send_json(body);
        };
        post(
            &format!("/api/sessions/{s}/messages"),
            json!({"role": "user", "content": question.join(" ")}),
        );
        post(
            &format!("/api/sessions/{s}/messages"),
            json!({"role": "assistant", "content": reply}),
        );
        post(&format!("/api/sessions/{s}/turns"), json!({}));
        for path in [
            "/api/sessions?limit=50".to_string(),
            format!("/api/sessions/{s}/messages"),
            "/api/search?q=parser%20bug&limit=5".to_string(),
        ] {
            let _ = agent.get(&format!("{url}{path}")).call();
        }
        done.fetch_add(6, Ordering::Relaxed);
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub fn bench_memory(dir: &Path, minutes: f64) {
    let state = dir.join("memory-state");
    let (mut server, url, _) = spawn_server(&state);
    let pid = server.pid();
    println!("memory: {CLIENTS} clients × {SESSIONS_PER_CLIENT} sessions of mixed load for {minutes} min; RSS every 10 s");
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let (url, stop, done) = (url.clone(), stop.clone(), done.clone());
            std::thread::spawn(move || client(url, c, stop, done))
        })
        .collect();
    let start = Instant::now();
    let end = Duration::from_secs_f64(minutes * 60.0);
    let mut peak: f64 = 0.0;
    while start.elapsed() < end {
        std::thread::sleep(Duration::from_secs(10));
        if let Some(status) = server.exited() {
            stop.store(true, Ordering::Relaxed);
            println!(
                "memory: FAIL: the server ended under the load after {:.0} s ({status})",
                start.elapsed().as_secs_f64()
            );
            std::process::exit(1);
        }
        let rss = rss_mib(pid);
        peak = peak.max(rss);
        let (anon, file) = rss_split(pid);
        println!(
            "  {:>5.0} s  RSS {rss:>7.1} MiB (anonymous {anon:.1}, file-backed {file:.1})  {} requests",
            start.elapsed().as_secs_f64(),
            done.load(Ordering::Relaxed)
        );
    }
    stop.store(true, Ordering::Relaxed);
    for c in clients {
        let _ = c.join();
    }
    let requests = done.load(Ordering::Relaxed);
    // What the server keeps once the load's requests are answered: the
    // in-flight buffers of the last requests (a whole session's messages
    // per request, megabytes by the end) are not memory it holds.
    let settled = settle(&url);
    let after = rss_mib(pid);
    let (anon, file) = rss_split(pid);
    println!("  after the load, settled {:.0} s (background work over): RSS {after:.1} MiB (anonymous {anon:.1}, file-backed {file:.1}); highest under load {peak:.1} MiB", settled.as_secs_f64());
    println!("  where: {}", top_mappings(pid, 8));
    let sizes: Vec<u64> = (0..CLIENTS * SESSIONS_PER_CLIENT)
        .map(|i| {
            ureq::get(&format!(
                "{url}/api/sessions/mem{}-{}",
                i / SESSIONS_PER_CLIENT,
                i % SESSIONS_PER_CLIENT
            ))
            .call()
            .ok()
            .and_then(|r| r.into_json::<serde_json::Value>().ok())
            .and_then(|v| v["turn_count"].as_u64())
            .unwrap_or(0)
        })
        .collect();
    println!(
        "  {} sessions of {}–{} turns",
        sizes.len(),
        sizes.iter().min().unwrap_or(&0),
        sizes.iter().max().unwrap_or(&0)
    );
    drop(server);
    // The same data, loaded by a fresh server: every request of the load
    // once per session (its messages, the list, a search), then the same
    // settling.
    let (server, url, _) = spawn_server(&state);
    let agent = ureq::agent();
    for c in 0..CLIENTS {
        for i in 0..SESSIONS_PER_CLIENT {
            for path in [
                format!("/api/sessions/mem{c}-{i}/messages"),
                "/api/sessions?limit=50".to_string(),
                "/api/search?q=parser%20bug&limit=5".to_string(),
            ] {
                let _ = agent.get(&format!("{url}{path}")).call();
            }
        }
    }
    let settled = settle(&url);
    let fresh = rss_mib(server.pid());
    let (anon, file) = rss_split(server.pid());
    println!(
        "  fresh, settled {:.0} s: RSS {fresh:.1} MiB (anonymous {anon:.1}, file-backed {file:.1})",
        settled.as_secs_f64()
    );
    println!("  where: {}", top_mappings(server.pid(), 8));
    let ratio = after / fresh.max(1.0);
    println!(
        "memory: RSS after {minutes} min of mixed load ({requests} requests) {after:.1} MiB, the same data freshly loaded {fresh:.1} MiB: {ratio:.2}× (limit 1.2×): {}",
        if ratio <= 1.2 { "PASS" } else { "FAIL" }
    );
}

/// How long a server is left idle before its memory is read: the
/// allocator returns freed pages within about 10 s.
const SETTLE: Duration = Duration::from_secs(15);

/// Leave the server idle until its background work is over: the search
/// index caught up, no pack merge for `SETTLE` (the idle merges a load
/// plans run after it, each holding a session's objects while it writes
/// the merged pack), then `SETTLE` more for the allocator. Returns how
/// long that took.
fn settle(url: &str) -> Duration {
    let started = Instant::now();
    wait_indexed(url);
    let mut runs = metric(url, "openprogram_maintenance_runs_total").unwrap_or(0.0);
    let mut still_since = Instant::now();
    while still_since.elapsed() < SETTLE && started.elapsed() < Duration::from_secs(300) {
        std::thread::sleep(Duration::from_secs(1));
        let now = metric(url, "openprogram_maintenance_runs_total").unwrap_or(0.0);
        if now != runs {
            runs = now;
            still_since = Instant::now();
        }
    }
    std::thread::sleep(SETTLE);
    started.elapsed()
}

/// Write `sessions` sessions of `turns` turns each (a question of about 60
/// characters, a reply of about 300), then read each once on a fresh
/// server so that all are live, and compare RSS with the target.
pub fn bench_live(dir: &Path, sessions: usize, turns: usize) {
    let state = dir.join("live-state");
    let (server, url, _) = spawn_server(&state);
    println!("memory-live: writing {sessions} sessions × {turns} turns");
    let started = Instant::now();
    let done = Arc::new(AtomicU64::new(0));
    let threads = 32.min(sessions.max(1));
    let workers: Vec<_> = (0..threads)
        .map(|w| {
            let (url, done) = (url.clone(), done.clone());
            std::thread::spawn(move || {
                let agent = ureq::agent();
                for s in (w..sessions).step_by(threads) {
                    let base = format!("{url}/api/sessions/live{s}");
                    for t in 0..turns {
                        let q = format!(
                            "question {t} of session {s}: how does the parser handle this case?"
                        );
                        let a = format!(
                            "{} {t}",
                            "The parser reads the tokens one by one and ".repeat(7)
                        );
                        for (path, body) in [
                            ("messages", json!({"role": "user", "content": q})),
                            ("messages", json!({"role": "assistant", "content": a})),
                            ("turns", json!({})),
                        ] {
                            if let Err(e) = agent.post(&format!("{base}/{path}")).send_json(body) {
                                eprintln!("session {s} turn {t}: {e}");
                            }
                        }
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    let total = (sessions * turns) as u64;
    let mut next = total / 10;
    while done.load(Ordering::Relaxed) < total && workers.iter().any(|w| !w.is_finished()) {
        std::thread::sleep(Duration::from_secs(5));
        let d = done.load(Ordering::Relaxed);
        if d >= next {
            println!(
                "  {d} turns in {:.0} s ({:.0} turns/s)",
                started.elapsed().as_secs_f64(),
                d as f64 / started.elapsed().as_secs_f64()
            );
            next = d + total / 10;
        }
    }
    for w in workers {
        let _ = w.join();
    }
    let writing = rss_mib(server.pid());
    // The index catches up before the stop, so the next start has nothing
    // to index: what is measured is the live sessions, not a catch-up.
    wait_indexed(&url);
    drop(server);
    let (server, url, _) = spawn_server(&state);
    let agent = ureq::agent();
    for s in 0..sessions {
        let _ = agent
            .get(&format!("{url}/api/sessions/live{s}/messages"))
            .call();
    }
    wait_indexed(&url);
    // The maintenance the loads planned (idle merges) settles too.
    std::thread::sleep(Duration::from_secs(10));
    let live = rss_mib(server.pid());
    let limit = 200.0;
    println!(
        "memory-live: {sessions} live sessions of {turns} turns: RSS {live:.1} MiB (the writing server ended at {writing:.1} MiB); target for 256 × 2,000: ≤ {limit:.0} MiB: {}",
        if live <= limit { "PASS" } else { "FAIL" }
    );
}
