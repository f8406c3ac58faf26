//! A large server's start (`bench --startup N`): N real sessions, a first
//! start that writes `index.json` and the search index, then starts with
//! both in place, each timed from the process's spawn to its first answer;
//! resident memory sampled every 50 ms through the first minute of one of
//! them (the search indexer's startup pass included), and the list's p50.
//! A start with the search index removed (every session indexed again) is
//! shown beside it, for information.

use std::path::Path;
use std::time::{Duration, Instant};

use super::memory::rss_mib;
use super::registry::{populate, spawn_server, wait_indexed, ChildServer};
use super::{ms, percentile};

/// Warm starts timed; the first answer's time is their median.
const STARTS: usize = 7;
/// How long the resident memory is watched after a start.
const WATCH: Duration = Duration::from_secs(60);

/// The highest RSS of `server` over `WATCH` from now, sampled every 50 ms,
/// and when (seconds from the start of the watch) it was reached.
fn watch_rss(server: &ChildServer) -> (f64, f64) {
    let started = Instant::now();
    let (mut peak, mut at) = (0.0f64, 0.0);
    while started.elapsed() < WATCH {
        let rss = rss_mib(server.pid());
        if rss > peak {
            peak = rss;
            at = started.elapsed().as_secs_f64();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    (peak, at)
}

fn verdict(ok: bool) -> &'static str {
    if ok {
        "PASS"
    } else {
        "FAIL"
    }
}

pub fn bench_startup(dir: &Path, n: usize) {
    let state = dir.join("startup-state");
    eprintln!("startup: creating {n} sessions…");
    populate(&state.join("sessions"), n);
    openprogram_actors::fsio::sync_filesystem(&state).expect("syncfs");
    // The first start writes index.json and indexes every session.
    let (first, url, rebuild) = spawn_server(&state);
    let indexed = wait_indexed(&url);
    drop(first);
    println!(
        "startup with {n} sessions: first start (index.json rebuilt) {:.0} ms; search indexing {:.1} s after it",
        ms(rebuild),
        indexed.as_secs_f64()
    );
    let mut starts = Vec::new();
    let mut peak = (0.0, 0.0);
    let mut list = Vec::new();
    for i in 0..STARTS {
        let (server, url, took) = spawn_server(&state);
        starts.push(took);
        if i == STARTS / 2 {
            // This start's first minute, watched; then the list timed.
            peak = watch_rss(&server);
            let agent = ureq::agent();
            for _ in 0..300 {
                let t = Instant::now();
                let body = agent
                    .get(&format!("{url}/api/sessions"))
                    .call()
                    .expect("list")
                    .into_string()
                    .expect("body");
                list.push(t.elapsed());
                assert!(body.contains("\"sessions\""));
            }
        } else {
            wait_indexed(&url);
        }
        drop(server);
    }
    // For information: the search index gone, every session indexed again.
    let _ = std::fs::remove_dir_all(state.join("search"));
    let (server, _, reindex_start) = spawn_server(&state);
    let reindex_peak = watch_rss(&server);
    drop(server);
    starts.sort();
    list.sort();
    let first_answer = ms(percentile(&starts, 0.5));
    let list50 = ms(percentile(&list, 0.5));
    println!(
        "  starts with index.json, spawn to first answer: p50 {first_answer:.0} ms (min {:.0}, max {:.0}, {STARTS} starts)",
        ms(starts[0]),
        ms(starts[STARTS - 1])
    );
    println!(
        "  without the search index: first answer {:.0} ms, RSS at most {:.1} MiB in its first minute (at {:.1} s)",
        ms(reindex_start),
        reindex_peak.0,
        reindex_peak.1
    );
    println!("| 4: {n} sessions, process start to first answer with index.json (p50 of {STARTS}) | {first_answer:.0} ms | ≤ 100 ms | {} |", verdict(first_answer <= 100.0));
    println!(
        "| 4: {n} sessions, highest RSS in the first minute after a start (sampled every 50 ms) | {:.1} MiB (at {:.1} s) | ≤ 60 MiB | {} |",
        peak.0,
        peak.1,
        verdict(peak.0 <= 60.0)
    );
    println!(
        "| 4: {n} sessions, list p50 (default page) | {list50:.2} ms | ≤ 0.5 ms | {} |",
        verdict(list50 <= 0.5)
    );
}
