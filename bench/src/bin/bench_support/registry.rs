//! The registry and process benchmarks of `bench`: real `openprogram serve`
//! processes on 10,000 sessions (startup, listing, a turn and a creation
//! against a 10-session server) and the fsync count under strace.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use openprogram_actors::meta::SessionMeta;
use openprogram_actors::node::Role;
use openprogram_actors::session::SessionCore;
use openprogram_actors::store::Store;

use super::server::HttpSession;
use super::{ms, node, percentile};

/// Create `n` real sessions (git repo, meta, one user message) on 2 threads.
pub fn populate(sessions_dir: &Path, n: usize) {
    std::fs::create_dir_all(sessions_dir).expect("mkdir");
    // Set-up, not measured: each write durable on its own.
    let store = &Store::without_log(sessions_dir);
    std::thread::scope(|scope| {
        for part in 0..2 {
            scope.spawn(move || {
                for i in (part..n).step_by(2) {
                    let id = format!("s{i:05}");
                    let mut meta = SessionMeta::new(id.clone(), 1.7e9 + i as f64);
                    meta.title = format!("Session number {i}");
                    let first = node(
                        Role::User,
                        &format!("first message of session {i}"),
                        None,
                        None,
                    );
                    SessionCore::create(store, &sessions_dir.join(&id), meta, Some((first, None)))
                        .expect("create");
                }
            });
        }
    });
}

/// A child `openprogram` process, stopped (SIGTERM, then reaped) on drop.
pub struct ChildServer(std::process::Child);

impl ChildServer {
    /// SIGKILL, reaped (a node dying in the cluster benchmark).
    #[allow(dead_code)]
    pub fn kill(mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
        std::mem::forget(self);
    }

    pub fn pid(&self) -> u32 {
        self.0.id()
    }

    /// How the server ended, when it has (a crash under the load).
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.0.try_wait().ok().flatten()
    }
}

impl Drop for ChildServer {
    /// SIGTERM, then the exit is checked: a server that does not end its
    /// graceful shutdown with success is reported (a signal, an abort).
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        match self.0.wait() {
            Ok(status) if status.success() => {}
            Ok(status) => eprintln!(
                "FAIL: the server (pid {}) did not shut down cleanly: {status}",
                self.0.id()
            ),
            Err(e) => eprintln!("the server could not be waited for: {e}"),
        }
    }
}

/// The server binary beside this one (`cargo build --release` makes it;
/// the benchmark crate cannot).
pub fn server_exe() -> std::path::PathBuf {
    let exe = std::env::current_exe()
        .expect("exe")
        .with_file_name("openprogram");
    assert!(
        exe.is_file(),
        "{} is missing: run `cargo build --release` first",
        exe.display()
    );
    exe
}

/// Spawn `openprogram serve` on `state` and time it until it answers
/// `/api/health`. Returns the server, its URL and the startup time.
pub fn spawn_server(state: &Path) -> (ChildServer, String, Duration) {
    spawn_server_with(state, &[])
}

/// `spawn_server` with `envs` set for the server.
pub fn spawn_server_with(
    state: &Path,
    envs: &[(&str, &std::ffi::OsStr)],
) -> (ChildServer, String, Duration) {
    spawn_server_on(state, "127.0.0.1:0", envs)
}

/// `spawn_server_with`, listening on `bind`.
pub fn spawn_server_on(
    state: &Path,
    bind: &str,
    envs: &[(&str, &std::ffi::OsStr)],
) -> (ChildServer, String, Duration) {
    let exe = server_exe();
    let info = state.join("server.json");
    let _ = std::fs::remove_file(&info);
    let start = Instant::now();
    let server = ChildServer(
        Command::new(exe)
            .args(["serve", "--bind", bind, "--state-dir"])
            .arg(state)
            // `BENCH_SERVER_LOG=info` shows the servers' own startup logs.
            .env(
                "RUST_LOG",
                std::env::var("BENCH_SERVER_LOG").unwrap_or_else(|_| "warn".into()),
            )
            .envs(envs.iter().copied())
            .spawn()
            .expect("spawn openprogram (build it with cargo build --release)"),
    );
    let agent = ureq::agent();
    let pid = server.0.id() as u64;
    loop {
        if let Some(url) = std::fs::read(&info)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .filter(|v| v["pid"].as_u64() == Some(pid))
            .and_then(|v| v["url"].as_str().map(str::to_string))
        {
            if agent.get(&format!("{url}/api/health")).call().is_ok() {
                return (server, url, start.elapsed());
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "server did not start"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Wait until the server at `url` has indexed every session for search
/// (`openprogram_search_backlog` 0 in `/metrics`): a start on sessions the
/// index has not seen indexes them in the background, which is not what
/// a later start or the resident memory of a settled server costs.
pub fn wait_indexed(url: &str) -> Duration {
    let start = Instant::now();
    loop {
        match metric(url, "openprogram_search_backlog") {
            Some(0.0) | None => return start.elapsed(),
            Some(_) => {}
        }
        assert!(
            start.elapsed() < Duration::from_secs(600),
            "search indexing did not finish"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The sum of every series of the metric `name` the server at `url`
/// exports in `/metrics`; None when it exports none or does not answer.
pub fn metric(url: &str, name: &str) -> Option<f64> {
    let body = ureq::get(&format!("{url}/metrics"))
        .call()
        .ok()?
        .into_string()
        .ok()?;
    let mut values = body
        .lines()
        .filter(|l| {
            l.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with(' ') || rest.starts_with('{'))
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .peekable();
    values.peek()?;
    Some(values.sum())
}

/// Calls of the fsync family made by a real server (every thread, the
/// background included) for `turns` full HTTP turns, less those of a run
/// with one turn (startup, shutdown), per turn: `strace -f -c` counts them.
/// fsync-family calls per durable turn, by what they flush.
pub struct FsyncCounts {
    pub total: f64,
    /// The write-ahead log: the flushes the replies wait for.
    pub log: f64,
    /// The registry journal (written after the reply, in the background).
    pub registry: f64,
    /// The full-text index (its own background commits).
    pub search: f64,
    /// Anything else (on the reply path unless shown otherwise).
    pub other: f64,
    pub other_paths: Vec<(String, u64)>,
}

pub fn bench_fsyncs(dir: &Path, turns: usize) -> Option<FsyncCounts> {
    let exe = server_exe();
    // (log, registry, search, other, other paths)
    type Counts = (u64, u64, u64, u64, std::collections::BTreeMap<String, u64>);
    let count = |n: usize, tag: &str| -> Option<Counts> {
        let state = dir.join(format!("strace-{tag}"));
        let out = dir.join(format!("strace-{tag}.txt"));
        let mut child = Command::new("strace")
            .args(["-f", "-y", "-o"])
            .arg(&out)
            .args(["-e", "trace=fsync,fdatasync,syncfs,sync_file_range,msync"])
            .arg(&exe)
            .args(["serve", "--bind", "127.0.0.1:0", "--state-dir"])
            .arg(&state)
            // `BENCH_SERVER_LOG=info` shows the servers' own startup logs.
            .env(
                "RUST_LOG",
                std::env::var("BENCH_SERVER_LOG").unwrap_or_else(|_| "warn".into()),
            )
            .spawn()
            .ok()?;
        let started = Instant::now();
        let info = loop {
            let info = std::fs::read(state.join("server.json"))
                .ok()
                .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok());
            if let Some(i) = info {
                break i;
            }
            if started.elapsed() > Duration::from_secs(60) {
                let _ = child.kill();
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let url = info["url"].as_str()?.to_string();
        let pid = info["pid"].as_u64()?;
        while ureq::get(&format!("{url}/api/health")).call().is_err() {
            std::thread::sleep(Duration::from_millis(20));
        }
        let session = HttpSession::at(&url, "fsyncs");
        for t in 0..n {
            session.turn(t, "");
        }
        // Let the background work of those turns happen (search, journal).
        std::thread::sleep(Duration::from_millis(1500));
        Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .ok()?;
        child.wait().ok()?;
        let text = std::fs::read_to_string(&out).ok()?;
        let mut c: Counts = Default::default();
        for line in text.lines() {
            let Some(call) = [
                "fsync(",
                "fdatasync(",
                "syncfs(",
                "sync_file_range(",
                "msync(",
            ]
            .iter()
            .find_map(|k| line.split_once(k).map(|(_, rest)| rest)) else {
                continue;
            };
            let path = call
                .split_once('<')
                .and_then(|(_, r)| r.split_once('>'))
                .map_or("", |(p, _)| p);
            if path.contains("/wal/") {
                c.0 += 1;
            } else if path.contains("/index.journal") || path.ends_with("/index.json") {
                c.1 += 1;
            } else if path.contains("/search") {
                c.2 += 1;
            } else {
                c.3 += 1;
                *c.4.entry(path.rsplit('/').next().unwrap_or("").to_string())
                    .or_default() += 1;
            }
        }
        Some(c)
    };
    let base = count(1, "base")?;
    let many = count(turns + 1, "many")?;
    let per = |a: u64, b: u64| a.saturating_sub(b) as f64 / turns as f64;
    let mut other_paths: Vec<(String, u64)> = many
        .4
        .iter()
        .map(|(k, v)| (k.clone(), v.saturating_sub(*base.4.get(k).unwrap_or(&0))))
        .filter(|(_, v)| *v > 0)
        .collect();
    other_paths.sort_by_key(|p| std::cmp::Reverse(p.1));
    let (log, registry, search, other) = (
        per(many.0, base.0),
        per(many.1, base.1),
        per(many.2, base.2),
        per(many.3, base.3),
    );
    Some(FsyncCounts {
        total: log + registry + search + other,
        log,
        registry,
        search,
        other,
        other_paths,
    })
}

/// SessionRegistry figures: process startup with and without index.json, listing.
pub fn bench_registry(dir: &Path, n: usize) {
    let state = dir.join("registry-state");
    eprintln!("registry: creating {n} sessions…");
    let t = Instant::now();
    populate(&state.join("sessions"), n);
    eprintln!("  created in {:.1}s", t.elapsed().as_secs_f64());
    // The sessions went through this process's write-ahead log: on disk
    // before any server starts, so a startup is not timed flushing them.
    openprogram_actors::fsio::sync_filesystem(&state).expect("syncfs");
    let (child, first_url, rebuild) = spawn_server(&state);
    let indexing = wait_indexed(&first_url);
    drop(child);
    let (child, warm_url, warm1) = spawn_server(&state);
    wait_indexed(&warm_url);
    drop(child);
    let (child, url, warm) = spawn_server(&state);
    let caught_up = wait_indexed(&url);
    let agent = ureq::agent();
    let get = |path: &str| -> Duration {
        let start = Instant::now();
        let body = agent
            .get(&format!("{url}{path}"))
            .call()
            .expect("list")
            .into_string()
            .expect("body");
        assert!(body.contains("\"sessions\""));
        start.elapsed()
    };
    let status_kib = |field: &str| -> u64 {
        std::fs::read_to_string(format!("/proc/{}/status", child.0.id()))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with(field))
                    .and_then(|l| l.split_whitespace().nth(1))
                    .and_then(|v| v.parse().ok())
            })
            .unwrap_or(0)
    };
    let rss_kib = || status_kib("VmRSS:");
    let mut rows = Vec::new();
    for (label, path, runs) in [
        (
            "GET /api/sessions (default page of 200)",
            "/api/sessions",
            300,
        ),
        ("GET /api/sessions?limit=50", "/api/sessions?limit=50", 300),
        (
            "GET /api/sessions?pinned=false&limit=50&offset=5000",
            "/api/sessions?pinned=false&limit=50&offset=5000",
            300,
        ),
        (
            "GET /api/sessions?limit=10000 (every row)",
            "/api/sessions?limit=10000",
            30,
        ),
    ] {
        let mut v: Vec<Duration> = (0..runs).map(|_| get(path)).collect();
        v.sort();
        rows.push((label, v));
    }
    let rss = rss_kib() as f64 / 1024.0;
    // Anonymous memory is what the server allocated; file-backed pages
    // are the binary's and libraries' code the kernel mapped (in blocks
    // around each page run) and the search index's files.
    let (anon, file) = (
        status_kib("RssAnon:") as f64 / 1024.0,
        status_kib("RssFile:") as f64 / 1024.0,
    );
    // The same work on a 10-session server, alternated with this one:
    // what the session count costs a turn and a creation.
    let small_state = dir.join("registry-small");
    populate(&small_state.join("sessions"), 10);
    let (small_child, small_url, _) = spawn_server(&small_state);
    let (big, small) = (
        HttpSession::at(&url, "turns-bench"),
        HttpSession::at(&small_url, "turns-bench"),
    );
    let (mut on_big, mut on_small) = (Vec::new(), Vec::new());
    for t in 0..200 {
        on_big.push(big.turn(t, ""));
        on_small.push(small.turn(t, ""));
    }
    let (mut make_big, mut make_small) = (Duration::ZERO, Duration::ZERO);
    for i in 0..300 {
        make_big += HttpSession::at(&url, &format!("new-{i}")).create();
        make_small += HttpSession::at(&small_url, &format!("new-{i}")).create();
    }
    drop(small_child);
    drop(child);
    on_big.sort();
    on_small.sort();
    let (tb, ts) = (ms(percentile(&on_big, 0.5)), ms(percentile(&on_small, 0.5)));
    let (rb, rs) = (
        300.0 / make_big.as_secs_f64(),
        300.0 / make_small.as_secs_f64(),
    );
    println!("| turn p50, {n} / 10 sessions (200 alternated turns over HTTP) | {tb:.2} / {ts:.2} ms = {:.2}× | ≤ 1.2× | {} |",
        tb / ts,
        if tb / ts <= 1.2 { "PASS" } else { "FAIL" }
    );
    println!("| sessions created per second, {n} / 10 sessions (300 each, alternated) | {rb:.0} / {rs:.0} = {:.2}× | ≥ 1/1.2 | {} |",
        rb / rs,
        if rb / rs >= 1.0 / 1.2 { "PASS" } else { "FAIL" }
    );
    println!("SessionRegistry with {n} sessions:");
    println!(
        "  process startup rebuilding index.json: {:.0} ms",
        ms(rebuild)
    );
    println!(
        "  search indexing of the {n} sessions after that start: {:.1} s (in the background)",
        indexing.as_secs_f64()
    );
    println!(
        "  process startup with index.json: {:.0} ms (and {:.0} ms); search caught up {:.0} ms after",
        ms(warm),
        ms(warm1),
        ms(caught_up)
    );
    let list50 = ms(percentile(&rows[0].1, 0.5));
    for (label, v) in rows {
        println!(
            "  {label}: p50 {:.2} ms, p99 {:.2} ms",
            ms(percentile(&v, 0.5)),
            ms(percentile(&v, 0.99))
        );
    }
    println!(
        "  server RSS after the listings: {rss:.1} MiB (anonymous {anon:.1}, file-backed {file:.1})"
    );
    // Target 8: the figures the performance issue kept, within 1.2×.
    let kept = |label: &str, value: f64, unit: &str, was: f64| {
        println!(
            "| {label} (was {was} {unit}) | {value:.2} {unit} | ≤ {:.2} {unit} | {} |",
            was * 1.2,
            if value <= was * 1.2 { "PASS" } else { "FAIL" }
        );
    };
    kept(
        &format!("list of {n} sessions, default page, p50"),
        list50,
        "ms",
        0.5,
    );
    kept("startup with index.json", ms(warm), "ms", 74.0);
    kept("startup rebuilding index.json", ms(rebuild), "ms", 900.0);
    kept("server RSS", rss, "MiB", 42.0);
}
