//! `--replication TURNS`: the cost and lag of replication to a loopback
//! `git daemon` (receive-pack on, one shared repository).
//!
//! 1. Turn latency: three real servers in this process, one without
//!    replication, one `async`, one `sync`, each one session, TURNS full
//!    HTTP turns in alternation (so the disk's drift hits each alike);
//!    p50/p99 each. Target: async p50 ≤ 1.1× off.
//! 2. Lag under load: 64 sessions at once on a fourth, `async` server (to a
//!    repository of its own on the same daemon), 20 turns each; every acknowledged turn's commit is watched for on the remote
//!    (its loose ref files, read every 10 ms) and the lag from the
//!    acknowledgement to the remote holding it (or a later commit of the
//!    session) is taken. Target: p99 < 2 s.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use openprogram_actors::replication::{Mode, RemoteConfig};

use super::server::{start_server, HttpSession};

const LOAD_SESSIONS: usize = 64;
const LOAD_TURNS: usize = 20;

fn pct(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args(args)
        .current_dir(dir)
        .status()
        .expect("git");
    assert!(ok.success(), "git {args:?}");
}

/// A bare repository served by `git daemon` on a free loopback port.
fn daemon(base: &Path) -> (Daemon, u16, PathBuf) {
    let repo = base.join("memory.git");
    std::fs::create_dir_all(&repo).expect("mkdir");
    git(&repo, &["init", "-q", "--bare"]);
    // Loose refs stay loose (the watcher reads them).
    git(&repo, &["config", "receive.autogc", "false"]);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("port")
        .local_addr()
        .expect("addr")
        .port();
    let child = Command::new("git")
        .args([
            "daemon",
            "--reuseaddr",
            "--export-all",
            "--enable=receive-pack",
            "--listen=127.0.0.1",
        ])
        .arg(format!("--port={port}"))
        .arg(format!("--base-path={}", base.display()))
        .arg(base)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("git daemon");
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "git daemon did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    (Daemon(child), port, repo)
}

fn remote(port: u16, mode: Mode, repo: &str) -> RemoteConfig {
    // BENCH_REPLICATION_URL=file:///…: another remote instead (to compare
    // transports).
    let url = std::env::var("BENCH_REPLICATION_URL")
        .unwrap_or_else(|_| format!("git://127.0.0.1:{port}/{repo}"));
    RemoteConfig {
        name: "loop".into(),
        url,
        mode,
        ..RemoteConfig::default()
    }
}

pub fn bench_replication(tmp: &Path, turns: usize) {
    let (_daemon, port, repo) = daemon(&tmp.join("remote"));
    let start = |name: &str, mode: Option<Mode>| {
        let state = tmp.join(name);
        start_server(&state, move |c| {
            c.replication.remotes = mode
                .map(|m| vec![remote(port, m, "memory.git")])
                .unwrap_or_default();
        })
    };
    let off = HttpSession::new(start("off", None), "lat-off");
    let on = HttpSession::new(start("async", Some(Mode::Async)), "lat-async");
    let sync = HttpSession::new(start("sync", Some(Mode::Sync)), "lat-sync");
    for s in [&off, &on, &sync] {
        s.create();
        s.end();
    }
    let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
    for t in 0..turns {
        // Each goes first as often as the others.
        for k in 0..3 {
            match (t + k) % 3 {
                0 => a.push(off.turn(t, "off")),
                1 => b.push(on.turn(t, "async")),
                _ => c.push(sync.turn(t, "sync")),
            }
        }
    }
    for v in [&mut a, &mut b, &mut c] {
        v.sort();
    }
    println!("replication to a loopback git daemon, {turns} full HTTP turns each, alternated:");
    for (name, v) in [("off", &a), ("async", &b), ("sync", &c)] {
        println!(
            "  {name:5}: p50 {:.2} ms, p99 {:.2} ms",
            ms(pct(v, 0.5)),
            ms(pct(v, 0.99))
        );
    }
    let ratio = pct(&b, 0.5).as_secs_f64() / pct(&a, 0.5).as_secs_f64();
    println!(
        "  async / off p50: {ratio:.2}x (target <= 1.1x): {}",
        if ratio <= 1.1 { "PASS" } else { "FAIL" }
    );
    println!(
        "  sync / off p50: {:.2}x, p99: {:.2}x (reported)",
        pct(&c, 0.5).as_secs_f64() / pct(&a, 0.5).as_secs_f64(),
        pct(&c, 0.99).as_secs_f64() / pct(&a, 0.99).as_secs_f64()
    );
    let load_repo = repo.with_file_name("memory-load.git");
    std::fs::create_dir_all(&load_repo).expect("mkdir");
    git(&load_repo, &["init", "-q", "--bare"]);
    git(&load_repo, &["config", "receive.autogc", "false"]);
    lag_under_load(tmp, port, &load_repo);
}

/// Target 2: the lag of every acknowledged turn under the 64-session load.
fn lag_under_load(tmp: &Path, port: u16, repo: &Path) {
    // A remote of its own: what the latency series pushed does not weigh
    // on it.
    let addr = start_server(&tmp.join("load"), move |c| {
        c.replication.remotes = vec![remote(port, Mode::Async, "memory-load.git")];
    });
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (stop, repo) = (stop.clone(), repo.to_path_buf());
        std::thread::spawn(move || {
            // (session, commit) → first time the remote held it.
            let mut seen: HashMap<(usize, String), Instant> = HashMap::new();
            loop {
                let done = stop.load(Ordering::SeqCst);
                let now = Instant::now();
                for s in 0..LOAD_SESSIONS {
                    let path = repo.join(format!("refs/sessions/load-{s}/heads/main"));
                    if let Ok(text) = std::fs::read_to_string(&path) {
                        seen.entry((s, text.trim().to_string())).or_insert(now);
                    }
                }
                if done {
                    return seen;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        })
    };
    let started = Instant::now();
    let clients: Vec<_> = (0..LOAD_SESSIONS)
        .map(|s| {
            std::thread::spawn(move || {
                let session = HttpSession::new(addr, &format!("load-{s}"));
                (0..LOAD_TURNS)
                    .map(|t| {
                        let (_, commit, acked) = session.turn_acked(t, "load");
                        (commit, acked)
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let acked: Vec<Vec<(String, Instant)>> = clients
        .into_iter()
        .map(|c| c.join().expect("client"))
        .collect();
    let elapsed = started.elapsed();
    // Wait until every session's last commit is on the remote (or 60 s).
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let all = acked.iter().enumerate().all(|(s, turns)| {
            let path = repo.join(format!("refs/sessions/load-{s}/heads/main"));
            let last = turns.last().map(|t| t.0.as_str()).unwrap_or_default();
            std::fs::read_to_string(path).is_ok_and(|t| t.trim() == last)
        });
        if all || Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(30));
    stop.store(true, Ordering::SeqCst);
    let seen = watcher.join().expect("watcher");
    if let Ok(r) = ureq::get(&format!("http://{addr}/metrics")).call() {
        let text = r.into_string().unwrap_or_default();
        for line in text.lines().filter(|l| {
            l.starts_with("openprogram_replication_push_duration_seconds_sum")
                || l.starts_with("openprogram_replication_push_duration_seconds_count")
                || l.starts_with("openprogram_replication_pushes_total")
                || l.starts_with("openprogram_replication_batch_fallbacks_total")
                || l.starts_with("openprogram_replication_failures_total")
        }) {
            println!("  {line}");
        }
    }
    let mut lags = Vec::new();
    let mut missing = 0;
    for (s, turns) in acked.iter().enumerate() {
        for (i, (_, at)) in turns.iter().enumerate() {
            // On the remote once it held this commit or a later one.
            let first = turns[i..]
                .iter()
                .filter_map(|(c, _)| seen.get(&(s, c.clone())))
                .min();
            match first {
                Some(t) => lags.push(t.saturating_duration_since(*at)),
                None => missing += 1,
            }
        }
    }
    lags.sort();
    let n = LOAD_SESSIONS * LOAD_TURNS;
    let p99 = pct(&lags, 0.99);
    println!(
        "replication lag under load: {LOAD_SESSIONS} sessions x {LOAD_TURNS} turns ({n} turns, {:.0} turns/s): p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms, {missing} never seen",
        n as f64 / elapsed.as_secs_f64(),
        ms(pct(&lags, 0.5)),
        ms(p99),
        ms(lags.last().copied().unwrap_or_default()),
    );
    println!(
        "  lag p99 < 2 s: {}",
        if p99 < Duration::from_secs(2) && missing == 0 {
            "PASS"
        } else {
            "FAIL"
        }
    );
}
