//! Benchmarks (see the README's "Benchmarks" section).
//!
//!   cargo run --release --bin bench -- [--turns 5000] [--http-turns 200]
//!
//! 1. Per-turn commit latency of the engine (fsync on) as a session grows,
//!    measured around 10, 1,000 and 5,000 turns, side by side with the
//!    original system's approach (`git add -A && git commit` subprocesses,
//!    git's defaults, flat `history/`) on the same node files.
//! 2. A full turn over HTTP against a real server (user + assistant + tool
//!    append, fill, end of turn).
//! 3. The registry with `--sessions` (10,000) real sessions: startup time of
//!    the `openprogram` process with `index.json` and rebuilding it, and
//!    `GET /api/sessions` latency.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use openprogram_actors::meta::SessionMeta;
use openprogram_actors::node::Role;
use openprogram_actors::session::{EndTurn, NewNode, SessionCore};
use serde_json::json;

struct Args {
    turns: usize,
    http_turns: usize,
    subprocess: bool,
    subprocess_turns: Option<usize>,
    sessions: usize,
}

fn parse_args() -> Args {
    let mut args = Args {
        turns: 5000,
        http_turns: 200,
        subprocess: true,
        subprocess_turns: None,
        sessions: 10_000,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut num = |name: &str| -> usize {
            it.next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{name} needs a number"))
        };
        match a.as_str() {
            "--turns" => args.turns = num("--turns"),
            "--http-turns" => args.http_turns = num("--http-turns"),
            "--no-subprocess" => args.subprocess = false,
            "--subprocess-turns" => args.subprocess_turns = Some(num("--subprocess-turns")),
            "--sessions" => args.sessions = num("--sessions"),
            other => panic!("unknown argument {other}"),
        }
    }
    args
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// p50/p99 of the samples taken in a window of turn numbers.
fn window_stats(samples: &[(usize, Duration)], lo: usize, hi: usize) -> (f64, f64) {
    let mut v: Vec<Duration> = samples
        .iter()
        .filter(|(t, _)| *t >= lo && *t <= hi)
        .map(|(_, d)| *d)
        .collect();
    v.sort();
    (ms(percentile(&v, 0.5)), ms(percentile(&v, 0.99)))
}

fn node(role: Role, content: &str, caller: Option<&str>, name: Option<&str>) -> NewNode {
    NewNode {
        id: None,
        role,
        content: json!(content),
        predecessor: None,
        caller: caller.map(str::to_string),
        metadata: Default::default(),
        name: name.map(str::to_string),
        output: None,
    }
}

/// Grow one session to `turns` turns through the engine; time each end of
/// turn (meta.json + the git commit, fsync on).
fn bench_engine(dir: &Path, turns: usize) -> Vec<(usize, Duration)> {
    openprogram_actors::git::enable_fsync();
    let sdir = dir.join("engine-session");
    let (mut core, _) =
        SessionCore::create(&sdir, SessionMeta::new("engine-session".into(), 0.0), None)
            .expect("create session");
    let mut samples = Vec::with_capacity(turns);
    for t in 1..=turns {
        core.append(node(
            Role::User,
            &format!("user message number {t} asking something"),
            None,
            None,
        ))
        .expect("user");
        let a = core
            .append(node(
                Role::Assistant,
                "a reply of moderate length",
                None,
                None,
            ))
            .expect("assistant");
        core.append(node(
            Role::Tool,
            "tool output",
            Some(&a.node.id),
            Some("read"),
        ))
        .expect("tool");
        let start = Instant::now();
        core.end_turn(EndTurn::default(), None).expect("end turn");
        samples.push((t, start.elapsed()));
        if t % 1000 == 0 {
            eprintln!("  engine: {t} turns");
        }
    }
    samples
}

/// The original approach: the same three node files per turn, flat in
/// `history/`, then `git add -A && git commit` as subprocesses.
fn bench_subprocess(dir: &Path, turns: usize) -> Vec<(usize, Duration)> {
    let repo = dir.join("subprocess-session");
    std::fs::create_dir_all(repo.join("history")).expect("mkdir");
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(args)
            .current_dir(&repo)
            .env("GIT_AUTHOR_NAME", "bench")
            .env("GIT_AUTHOR_EMAIL", "bench@example.com")
            .env("GIT_COMMITTER_NAME", "bench")
            .env("GIT_COMMITTER_EMAIL", "bench@example.com")
            .output()
            .expect("run git");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    git(&["init", "-q", "-b", "main"]);
    let mut seq = 0u64;
    let mut samples = Vec::with_capacity(turns);
    for t in 1..=turns {
        for (role, content) in [
            ('u', "user message"),
            ('a', "a reply of moderate length"),
            ('t', "tool output"),
        ] {
            seq += 1;
            let id = uuid::Uuid::new_v4().simple().to_string();
            let body = json!({"id": id, "role": role.to_string(), "content": content, "seq": seq});
            std::fs::write(
                repo.join(format!("history/{seq:06}-{role}-{id}.json")),
                body.to_string(),
            )
            .expect("write node");
        }
        std::fs::write(repo.join("meta.json"), json!({"turn_count": t}).to_string()).expect("meta");
        let start = Instant::now();
        git(&["add", "-A"]);
        git(&["commit", "-q", "-m", &format!("turn {t}: user message")]);
        samples.push((t, start.elapsed()));
        if t % 1000 == 0 {
            eprintln!("  subprocess: {t} turns");
        }
    }
    samples
}

/// Start the real server in process on `state`; returns its address.
fn start_server(state: &Path) -> std::net::SocketAddr {
    let state = state.to_path_buf();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut config = openprogram::config::Config::load(&Default::default()).expect("config");
        config.store.state_dir = state.display().to_string();
        config.server.bind = "127.0.0.1:0".into();
        actix_web::rt::System::new().block_on(async move {
            let app = openprogram::startup::Application::build(&config).expect("start server");
            tx.send(app.addr()).expect("send addr");
            let _ = app.run_until_stopped().await;
        });
    });
    rx.recv().expect("server address")
}

/// Create `n` real sessions (git repo, meta, one user message) on 2 threads.
fn populate(sessions_dir: &Path, n: usize) {
    std::fs::create_dir_all(sessions_dir).expect("mkdir");
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
                    SessionCore::create(&sessions_dir.join(&id), meta, Some((first, None)))
                        .expect("create");
                }
            });
        }
    });
}

/// A child `openprogram` process, stopped (SIGTERM, then reaped) on drop.
struct ChildServer(std::process::Child);

impl Drop for ChildServer {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        let _ = self.0.wait();
    }
}

/// Spawn `openprogram serve` on `state` and time it until it answers
/// `/api/health`. Returns the server, its URL and the startup time.
fn spawn_server(state: &Path) -> (ChildServer, String, Duration) {
    let exe = std::env::current_exe()
        .expect("exe")
        .with_file_name("openprogram");
    let info = state.join("server.json");
    let _ = std::fs::remove_file(&info);
    let start = Instant::now();
    let server = ChildServer(
        Command::new(exe)
            .args(["serve", "--bind", "127.0.0.1:0", "--state-dir"])
            .arg(state)
            .env("RUST_LOG", "warn")
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

/// Registry figures: process startup with and without index.json, listing.
fn bench_registry(dir: &Path, n: usize) {
    let state = dir.join("registry-state");
    eprintln!("registry: creating {n} sessions…");
    let t = Instant::now();
    populate(&state.join("sessions"), n);
    eprintln!("  created in {:.1}s", t.elapsed().as_secs_f64());
    let (child, _, rebuild) = spawn_server(&state);
    drop(child);
    let (child, _, warm1) = spawn_server(&state);
    drop(child);
    let (child, url, warm) = spawn_server(&state);
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
    drop(child);
    println!("Registry with {n} sessions:");
    println!(
        "  process startup rebuilding index.json: {:.0} ms",
        ms(rebuild)
    );
    println!(
        "  process startup with index.json: {:.0} ms (and {:.0} ms)",
        ms(warm),
        ms(warm1)
    );
    for (label, v) in rows {
        println!(
            "  {label}: p50 {:.2} ms, p99 {:.2} ms",
            ms(percentile(&v, 0.5)),
            ms(percentile(&v, 0.99))
        );
    }
}

/// Full turns over HTTP against the real server, started in process.
fn bench_http(dir: &Path, turns: usize) -> Vec<Duration> {
    let addr = start_server(&dir.join("http-state"));
    let base = format!("http://{addr}/api/sessions/http-bench");
    let agent = ureq::agent();
    let post = |path: &str, body: serde_json::Value| -> serde_json::Value {
        agent
            .post(&format!("{base}{path}"))
            .send_json(body)
            .expect("request")
            .into_json()
            .expect("json")
    };
    let mut samples = Vec::with_capacity(turns);
    for t in 0..turns {
        let start = Instant::now();
        post(
            "/messages",
            json!({"role": "user", "content": format!("question {t}")}),
        );
        let a = post("/messages", json!({"role": "assistant", "content": ""}));
        let aid = a["node"]["id"].as_str().expect("id").to_string();
        post(
            "/messages",
            json!({"role": "tool", "name": "read", "caller": aid, "content": "file"}),
        );
        agent
            .request("PATCH", &format!("{base}/messages/{aid}"))
            .send_json(json!({"content": "the answer"}))
            .expect("patch");
        post("/turns", json!({}));
        samples.push(start.elapsed());
    }
    samples.sort();
    samples
}

fn main() {
    let args = parse_args();
    let tmp = tempfile::tempdir().expect("tempdir");
    let windows: Vec<(usize, usize, usize)> = [10usize, 1000, 5000]
        .into_iter()
        .filter(|&n| n <= args.turns)
        .map(|n| (n, n.saturating_sub(if n <= 10 { 9 } else { 49 }).max(1), n))
        .collect();

    eprintln!(
        "engine: growing a session to {} turns (fsync on)…",
        args.turns
    );
    let ours = bench_engine(tmp.path(), args.turns);
    eprintln!(
        "subprocess: growing a session to {} turns (git defaults)…",
        args.subprocess_turns.unwrap_or(args.turns).min(args.turns)
    );
    let theirs = if args.subprocess {
        bench_subprocess(
            tmp.path(),
            args.subprocess_turns.unwrap_or(args.turns).min(args.turns),
        )
    } else {
        Vec::new()
    };

    println!("Per-turn commit latency (ms): ours = git2 in process, fsync on; theirs = git add -A && git commit");
    println!(
        "{:>8} {:>10} {:>10} {:>12} {:>12} {:>10}",
        "turns", "ours p50", "ours p99", "theirs p50", "theirs p99", "speed-up"
    );
    let base = windows
        .first()
        .map(|&(_, lo, hi)| window_stats(&ours, lo, hi).0)
        .unwrap_or(0.0);
    for &(n, lo, hi) in &windows {
        let (o50, o99) = window_stats(&ours, lo, hi);
        let (t50, t99) = window_stats(&theirs, lo, hi);
        if theirs.iter().all(|(t, _)| *t < lo) {
            println!(
                "{n:>8} {o50:>10.2} {o99:>10.2} {:>12} {:>12} {:>10}",
                "-", "-", "-"
            );
            continue;
        }
        println!(
            "{n:>8} {o50:>10.2} {o99:>10.2} {t50:>12.2} {t99:>12.2} {:>9.1}x",
            t50 / o50
        );
    }
    if let Some(&(n, lo, hi)) = windows.last() {
        let (o50, _) = window_stats(&ours, lo, hi);
        println!(
            "growth: ours at {n} turns / ours at 10 turns = {:.2}x",
            o50 / base
        );
    }
    let size = |p: &Path| -> u64 {
        let out = Command::new("du")
            .args(["-sk"])
            .arg(p)
            .output()
            .expect("du");
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    println!(
        "repo size after {} turns: ours {} KiB, theirs {} KiB",
        args.turns,
        size(&tmp.path().join("engine-session/.git")),
        size(&tmp.path().join("subprocess-session/.git"))
    );

    if args.sessions > 0 {
        bench_registry(tmp.path(), args.sessions);
    }
    if args.http_turns > 0 {
        let http = bench_http(tmp.path(), args.http_turns);
        println!(
            "Full turn over HTTP (user + assistant + tool + fill + end), {} turns: p50 {:.2} ms, p99 {:.2} ms",
            args.http_turns,
            ms(percentile(&http, 0.5)),
            ms(percentile(&http, 0.99))
        );
    }
}
