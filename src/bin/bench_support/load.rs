//! Targets 3, 5 and 7 of the performance issue. Load: many sessions at
//! once against one real server, every turn durable (`sessions` client
//! threads, each with its own session and keep-alive connection, run full
//! turns as fast as the server answers). One client's full turn against
//! one fsync'd 2 KB write. A session's `.git` after idle maintenance.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use super::server::{start_server, HttpSession};

pub struct LoadFigures {
    pub turns: usize,
    pub seconds: f64,
    pub p50: Duration,
    pub p99: Duration,
    /// Log entries per flush (group commit), from `/metrics`.
    pub entries_per_flush: Option<f64>,
    /// CPU time of the whole process (server and clients), user and
    /// kernel, over the load: less moved by the disk than the rate is.
    pub cpu: Option<(f64, f64)>,
}

/// User and kernel CPU seconds this process has used (`/proc/self/stat`,
/// in clock ticks of 1/100 s).
fn cpu_seconds() -> Option<(f64, f64)> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the command: state is field 3, utime 14, stime 15.
    let tick = |i: usize| -> Option<f64> { Some(fields.get(i - 3)?.parse::<f64>().ok()? / 100.0) };
    Some((tick(14)?, tick(15)?))
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
    let cpu_before = cpu_seconds();
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
    let cpu = match (cpu_before, cpu_seconds()) {
        (Some((u0, s0)), Some((u1, s1))) => Some((u1 - u0, s1 - s0)),
        _ => None,
    };
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
        cpu,
    }
}

/// Full HTTP turns, each followed by one fsync'd 2 KB atomic write
/// (`fsio::atomic_write`, temp file + fsync + rename + folder fsync) in
/// the same seconds; both sorted.
pub fn bench_http(dir: &Path, turns: usize) -> (Vec<Duration>, Vec<Duration>) {
    let addr = start_server(&dir.join("http-state"), |_| {});
    let session = HttpSession::new(addr, "http-bench");
    let target = dir.join("fsync-2k.json");
    let bytes = vec![b'x'; 2048];
    let mut turns_t = Vec::with_capacity(turns);
    let mut writes_t = Vec::with_capacity(turns);
    for t in 0..turns {
        turns_t.push(session.turn(t, ""));
        let start = Instant::now();
        openprogram_actors::fsio::atomic_write(&target, &bytes).expect("2 KB write");
        writes_t.push(start.elapsed());
    }
    turns_t.sort();
    writes_t.sort();
    (turns_t, writes_t)
}

/// What an idle session's background maintenance does (geometric merges
/// until none is due), then the size of its `.git`.
pub fn idle_maintenance_size(git_dir: &Path, turns: usize) {
    use openprogram_actors::git::repack;
    let Ok(repo) = git2::Repository::open(git_dir) else {
        return;
    };
    while let Ok(Some(victims)) = repack::plan(git_dir, None) {
        repack::build(&repo, &victims).expect("merge");
        repack::drop_packs(&victims).expect("drop");
    }
    let out = Command::new("du")
        .arg("-sk")
        .arg(git_dir)
        .output()
        .expect("du");
    let kib: u64 = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    println!(
        "| .git after {turns} turns and idle maintenance ({} packs) | {:.2} MiB | ≤ 2 MiB at 1,000 turns | {} |",
        repack::pack_count(git_dir),
        kib as f64 / 1024.0,
        if turns != 1000 { "-" } else if kib <= 2048 { "PASS" } else { "FAIL" }
    );
}
