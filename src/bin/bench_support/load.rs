//! Target 3 of the performance issue: many sessions at once against one
//! real server, every turn durable. `sessions` client threads, each with
//! its own session and keep-alive connection, run full turns (user,
//! assistant, tool, fill, end) as fast as the server answers.

use std::path::Path;
use std::time::{Duration, Instant};

use super::server::{start_server, HttpSession};

pub struct LoadFigures {
    pub turns: usize,
    pub seconds: f64,
    pub p50: Duration,
    pub p99: Duration,
    /// Log entries per flush (group commit), from `/metrics`.
    pub entries_per_flush: Option<f64>,
}

fn metric(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find(|l| {
            l.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with([' ', '{']))
        })
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

pub fn bench_load(dir: &Path, sessions: usize, turns_each: usize) -> LoadFigures {
    let addr = start_server(&dir.join("load-state"), |c| {
        // The full-text index has its own benchmark (search_bench).
        c.search.enabled = false;
    });
    let url = format!("http://{addr}");
    for i in 0..sessions {
        HttpSession::at(&url, &format!("load-{i}")).create();
        HttpSession::at(&url, &format!("load-{i}")).end();
    }
    let scrape = || -> String {
        ureq::get(&format!("{url}/metrics"))
            .call()
            .ok()
            .and_then(|r| r.into_string().ok())
            .unwrap_or_default()
    };
    let before = scrape();
    let start = Instant::now();
    let mut all: Vec<Duration> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..sessions)
            .map(|i| {
                let url = url.clone();
                scope.spawn(move || {
                    let s = HttpSession::at(&url, &format!("load-{i}"));
                    (0..turns_each).map(|t| s.turn(t, "")).collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("client thread"))
            .collect()
    });
    let seconds = start.elapsed().as_secs_f64();
    let after = scrape();
    all.sort();
    let at = |p: f64| all[((all.len() as f64 - 1.0) * p).round() as usize];
    let delta = |name: &str| Some(metric(&after, name)? - metric(&before, name).unwrap_or(0.0));
    let entries_per_flush = match (
        delta("openprogram_wal_batch_entries_sum"),
        delta("openprogram_wal_batch_entries_count"),
    ) {
        (Some(sum), Some(count)) if count > 0.0 => Some(sum / count),
        _ => None,
    };
    LoadFigures {
        turns: all.len(),
        seconds,
        p50: at(0.5),
        p99: at(0.99),
        entries_per_flush,
    }
}
