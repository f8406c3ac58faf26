//! Benchmarks (see the README's "Benchmarks" section).
//!
//!   cargo build --release --workspace   (the server and this program)
//!   ./target/release/bench [--turns 5000] [--http-turns 200]
//!
//! 1. Per-turn commit latency of the engine (fsync on) as a session grows,
//!    measured around 10, 1,000 and 5,000 turns, side by side with the
//!    original system's approach (`git add -A && git commit` subprocesses,
//!    git's defaults, flat `history/`) on the same node files; both grown in
//!    alternation, and each window paired with fresh 10-turn sessions timed
//!    in the same seconds (disk latency drifts; see `bench_commits`).
//! 2. Durable turns over HTTP against a real server: in one request, and
//!    in four (user + assistant + tool append, fill, end of turn); and
//!    64 sessions at once writing either.
//!
//! First, the floor: the disk's fsync'd 2 KB atomic write and bare
//! fdatasync, p50 and p99; latencies are also printed as multiples of it.
//! `--quick` runs every phase smaller, in under 10 minutes.
//! 3. The registry with `--sessions` (10,000) real sessions: startup time of
//!    the `openprogram` process with `index.json` and rebuilding it, and
//!    `GET /api/sessions` latency.

// a benchmark program: a failed setup step stops the run.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use openprogram_actors::git::GitError;
use openprogram_actors::meta::SessionMeta;
use openprogram_actors::node::Role;
use openprogram_actors::pack_keeper::{Merged, PackKeeper};
use openprogram_actors::session::upkeep::{BUSY_MERGE_CAP, FORCE_PACKS};
use openprogram_actors::session::{EndTurn, NewNode, SessionCore};
use openprogram_actors::store::Store;
use serde_json::json;

#[path = "bench_support/cluster.rs"]
mod cluster;
#[path = "bench_support/floor.rs"]
mod floor;
#[path = "bench_support/load.rs"]
mod load;
#[path = "bench_support/server.rs"]
mod server;
use load::idle_maintenance_size;
#[path = "bench_support/import.rs"]
mod import;
#[path = "bench_support/memory.rs"]
mod memory;
#[path = "bench_support/mirror.rs"]
mod mirror;
#[path = "bench_support/redaction.rs"]
mod redaction;
#[path = "bench_support/registry.rs"]
mod registry;
#[path = "bench_support/replication.rs"]
mod replication;
#[path = "bench_support/startup.rs"]
mod startup;
use registry::{bench_fsyncs, bench_registry};

struct Args {
    turns: usize,
    http_turns: usize,
    subprocess: bool,
    subprocess_turns: Option<usize>,
    sessions: usize,
    strace_turns: usize,
    load_sessions: usize,
    load_turns: usize,
    /// `--keep`: leave the benchmark's directory behind for a look.
    keep: bool,
    /// `--memory-minutes N`: only the memory soak, for N minutes.
    memory_minutes: Option<f64>,
    /// `--memory-live S T`: only the live-session memory check, with S
    /// sessions of T turns each.
    memory_live: Option<(usize, usize)>,
    import: Option<(usize, usize)>,
    /// `--mirror S T`: only the live mirror's latency.
    mirror: Option<(usize, usize)>,
    /// `--startup N`: only the start of an N-session server.
    startup: Option<usize>,
    /// `--replication T`: only replication's cost and lag (T turns per
    /// latency series).
    replication: Option<usize>,
    /// `--cluster SECONDS`: only the cluster's throughput, replica cost
    /// and takeover.
    cluster: Option<usize>,
    /// `--redaction ROUNDS`: only what redaction costs.
    redaction: Option<usize>,
    load_only: bool,
    http_only: bool,
}

fn parse_args() -> Args {
    let mut args = Args {
        turns: 5000,
        http_turns: 200,
        subprocess: true,
        subprocess_turns: None,
        sessions: 10_000,
        strace_turns: 0,
        load_sessions: 64,
        load_turns: 20,
        keep: false,
        memory_minutes: None,
        memory_live: None,
        import: None,
        mirror: None,
        replication: None,
        startup: None,
        cluster: None,
        redaction: None,
        load_only: false,
        http_only: false,
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
            "--strace-turns" => args.strace_turns = num("--strace-turns"),
            "--load-sessions" => args.load_sessions = num("--load-sessions"),
            "--load-turns" => args.load_turns = num("--load-turns"),
            "--keep" => args.keep = true,
            // The one-request load alone (for a profiler).
            "--load-only" => args.load_only = true,
            // The durable HTTP turns alone (target 1).
            "--http-only" => args.http_only = true,
            "--quick" => {
                // Under 10 minutes: every phase, smaller.
                args.turns = 1000;
                args.subprocess_turns = Some(200);
                args.sessions = 0;
                args.http_turns = 100;
                args.load_turns = 10;
            }
            "--memory-minutes" => {
                args.memory_minutes = it.next().and_then(|v| v.parse().ok());
            }
            "--memory-live" => {
                let sessions = num("--memory-live");
                let turns = num("--memory-live");
                args.memory_live = Some((sessions, turns));
            }
            "--import" => {
                let sessions = num("--import");
                let turns = num("--import");
                args.import = Some((sessions, turns));
            }
            "--replication" => args.replication = Some(num("--replication")),
            "--startup" => args.startup = Some(num("--startup")),
            "--cluster" => args.cluster = Some(num("--cluster")),
            "--redaction" => args.redaction = Some(num("--redaction")),
            "--mirror" => {
                let sessions = num("--mirror");
                let turns = num("--mirror");
                args.mirror = Some((sessions, turns));
            }
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
        at: None,
    }
}

/// One engine session, one turn at a time (user + assistant + tool append,
/// then the timed end of turn: meta.json + the git commit, fsync on), with
/// its packs maintained as its actor does (`session/upkeep.rs`).
struct EngineSession {
    core: SessionCore,
    turns: usize,
    keeper: PackKeeper,
    lock: std::sync::Arc<tokio::sync::Mutex<()>>,
    merging: Option<tokio::sync::oneshot::Receiver<Result<Merged, GitError>>>,
}

impl EngineSession {
    /// As the server does: writes go through the `store`'s write-ahead log.
    fn create(store: &Store, dir: &Path, name: &str, keeper: &PackKeeper) -> EngineSession {
        openprogram_actors::git::enable_fsync();
        let (core, _) = SessionCore::create(
            store,
            &dir.join(name),
            SessionMeta::new(name.into(), 0.0),
            None,
        )
        .expect("create session");
        EngineSession {
            core,
            turns: 0,
            keeper: keeper.clone(),
            lock: Default::default(),
            merging: None,
        }
    }

    /// The actor's step between two writes: drop the packs a finished
    /// merge replaced. Its time is paid by the next write.
    fn drop_merged(&mut self) -> Duration {
        let start = Instant::now();
        let done = match self.merging.as_mut().map(|rx| rx.try_recv()) {
            Some(Ok(Ok(Some(victims)))) => {
                let old = self.core.drop_merged(&victims).expect("fresh handle");
                self.keeper.retire(self.core.git_dir(), old);
                true
            }
            Some(Err(tokio::sync::oneshot::error::TryRecvError::Empty)) => false,
            Some(_) => true,
            None => false,
        };
        if done {
            self.merging = None;
        }
        start.elapsed()
    }

    /// This session never idles: a merge starts when its packs pile up,
    /// on the keeper's thread, while the turns go on. `BENCH_NO_MERGE=1`
    /// leaves the packs unmerged (the disk's own jitter, for comparison).
    fn plan_merge(&mut self) {
        if std::env::var_os("BENCH_NO_MERGE").is_none()
            && self.merging.is_none()
            && self.core.pack_count() >= FORCE_PACKS
        {
            let guard = self.lock.clone().try_lock_owned().expect("lock");
            self.merging = Some(self.keeper.submit(
                self.core.git_dir(),
                Some(BUSY_MERGE_CAP),
                guard,
            ));
        }
    }

    /// Append one turn's nodes and time its end of turn (and a drop of
    /// merged packs it waited behind).
    fn turn(&mut self) -> Duration {
        let waited = self.drop_merged();
        self.turns += 1;
        let t = self.turns;
        self.core
            .append(node(
                Role::User,
                &format!("user message number {t} asking something"),
                None,
                None,
            ))
            .expect("user");
        let a = self
            .core
            .append(node(
                Role::Assistant,
                "a reply of moderate length",
                None,
                None,
            ))
            .expect("assistant");
        self.core
            .append(node(
                Role::Tool,
                "tool output",
                Some(&a.node.id),
                Some("read"),
            ))
            .expect("tool");
        let start = Instant::now();
        self.core
            .end_turn(EndTurn::default(), None)
            .expect("end turn");
        let took = start.elapsed() + waited;
        self.plan_merge();
        took
    }
}

/// The original approach: the same three node files per turn, flat in
/// `history/`, then `git add -A && git commit` as subprocesses.
struct SubprocessSession {
    repo: std::path::PathBuf,
    seq: u64,
    turns: usize,
}

impl SubprocessSession {
    fn create(dir: &Path) -> SubprocessSession {
        let s = SubprocessSession {
            repo: dir.join("subprocess-session"),
            seq: 0,
            turns: 0,
        };
        std::fs::create_dir_all(s.repo.join("history")).expect("mkdir");
        s.git(&["init", "-q", "-b", "main"]);
        s
    }

    fn git(&self, args: &[&str]) {
        let out = Command::new("git")
            .args(args)
            .current_dir(&self.repo)
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
    }

    fn turn(&mut self) -> Duration {
        self.turns += 1;
        let t = self.turns;
        for (role, content) in [
            ('u', "user message"),
            ('a', "a reply of moderate length"),
            ('t', "tool output"),
        ] {
            self.seq += 1;
            let seq = self.seq;
            let id = uuid::Uuid::new_v4().simple().to_string();
            let body = json!({"id": id, "role": role.to_string(), "content": content, "seq": seq});
            std::fs::write(
                self.repo.join(format!("history/{seq:06}-{role}-{id}.json")),
                body.to_string(),
            )
            .expect("write node");
        }
        std::fs::write(
            self.repo.join("meta.json"),
            json!({"turn_count": t}).to_string(),
        )
        .expect("meta");
        let start = Instant::now();
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "-m", &format!("turn {t}: user message")]);
        start.elapsed()
    }
}

/// What the commit benchmark measured, per turn number of the big session.
struct CommitSamples {
    ours: Vec<(usize, Duration)>,
    theirs: Vec<(usize, Duration)>,
    /// Turns of fresh 10-turn sessions, timed in between the big session's
    /// turns of a window (same seconds, same disk state).
    paired_small: Vec<(usize, Duration)>,
    /// A bare fdatasync of a 4 KB write after each of the big session's
    /// turns: the disk's own tail in the same seconds.
    syncs: Vec<Duration>,
}

/// Grow one engine session to `turns` turns, and the subprocess repo to
/// `sub_turns`, one turn each in alternation, so both are measured in the
/// same seconds. Inside each measuring window above 10 turns, every turn of
/// the big session is followed by the 11th turn of a fresh session grown
/// to 10 turns: a paired baseline that disk-speed drift cannot skew.
fn bench_commits(
    store: &Store,
    dir: &Path,
    turns: usize,
    sub_turns: usize,
    windows: &[(usize, usize, usize)],
) -> CommitSamples {
    let keeper = PackKeeper::spawn(Duration::ZERO, None).expect("pack keeper");
    let mut big = EngineSession::create(store, dir, "engine-session", &keeper);
    let mut sub = (sub_turns > 0).then(|| SubprocessSession::create(dir));
    let mut out = CommitSamples {
        ours: Vec::with_capacity(turns),
        theirs: Vec::with_capacity(sub_turns),
        paired_small: Vec::new(),
        syncs: Vec::with_capacity(turns),
    };
    let mut syncer = floor::Syncer::new(dir);
    let small_dir = dir.join("small");
    std::fs::create_dir_all(&small_dir).expect("mkdir");
    let mut pool: Vec<EngineSession> = Vec::new();
    for t in 1..=turns {
        // Before a window: the 10-turn sessions it will use, one per turn.
        if let Some(&(_, lo, hi)) = windows.iter().find(|&&(n, lo, _)| n > 10 && t == lo) {
            pool = (lo..=hi)
                .map(|i| {
                    let mut s = EngineSession::create(store, &small_dir, &format!("s{i}"), &keeper);
                    for _ in 0..10 {
                        s.turn();
                    }
                    s
                })
                .collect();
        }
        out.ours.push((t, big.turn()));
        out.syncs.push(syncer.sync());
        if let Some(s) = sub.as_mut().filter(|_| t <= sub_turns) {
            out.theirs.push((t, s.turn()));
        }
        if let Some(mut small) = pool.pop() {
            out.paired_small.push((t, small.turn()));
        }
        if t % 1000 == 0 {
            eprintln!("  {t} turns");
        }
    }
    out
}

/// The grown session: loading it (as after an LRU eviction or a restart),
/// a retry of its 2nd answer (a branch whose work tree holds a few files
/// instead of thousands), switching back to `main`, and loading it with two
/// branches.
fn bench_branches(store: &Store, dir: &Path) {
    use openprogram_actors::session::SwitchTo;
    let sdir = dir.join("engine-session");
    let load = || {
        let start = Instant::now();
        let core = SessionCore::load(store, &sdir).expect("load");
        (start.elapsed(), core)
    };
    let (first, _) = load();
    let (second, mut core) = load();
    let turns = core.meta().turn_count;
    let all = core.nodes().expect("nodes");
    let files = all.len();
    let user2 = all
        .iter()
        .filter(|n| n.role == Role::User)
        .nth(1)
        .map(|n| n.id.clone())
        .expect("a 2nd user message");
    let start = Instant::now();
    core.append(NewNode {
        predecessor: Some(user2),
        ..node(Role::Assistant, "another answer", None, None)
    })
    .expect("retry");
    let retry = start.elapsed();
    core.end_turn(EndTurn::default(), None).expect("end retry");
    let start = Instant::now();
    core.switch(SwitchTo {
        node_id: None,
        branch: Some("main".into()),
    })
    .expect("switch");
    let back = start.elapsed();
    drop(core);
    let (branched, _) = load();
    println!("A session of {turns} turns ({files} node files):");
    println!(
        "  load: {:.1} ms (then {:.1} ms); with a second branch: {:.1} ms",
        ms(first),
        ms(second),
        ms(branched)
    );
    println!(
        "  retry of the 2nd answer (new branch, work tree down to its path): {:.1} ms; switch back to main (work tree rebuilt): {:.1} ms",
        ms(retry),
        ms(back)
    );
}

/// Target 7: a session grown to 1,000 turns as the big one was (busy,
/// merges capped), then what its idle maintenance does, then its size.
fn disk_after_maintenance(store: &Store, dir: &Path) {
    const TURNS: usize = 1000;
    let keeper = PackKeeper::spawn(Duration::ZERO, None).expect("pack keeper");
    let mut session = EngineSession::create(store, dir, "disk-session", &keeper);
    let mut peak = 0;
    for _ in 0..TURNS {
        session.turn();
        peak = peak.max(session.core.pack_count());
    }
    println!("A session grown to {TURNS} turns, never idle: at most {peak} packs at once (busy merges copy, capped at {BUSY_MERGE_CAP} objects)");
    while session.merging.is_some() {
        std::thread::sleep(Duration::from_millis(10));
        session.drop_merged();
    }
    idle_maintenance_size(&dir.join("disk-session/.git"), TURNS);
}

/// Target 2 of the performance issue: the tail of the acknowledged path
/// against the disk's own, over every turn of the growth: end of turn p99
/// ≤ 2× the p99 of the bare fdatasyncs interleaved with the turns, and
/// max ≤ 10× p50. The blocks of 500 turns (the first from turn 1) show
/// where a tail came from.
fn stall_report(ours: &[(usize, Duration)], syncs: &[Duration]) {
    const BLOCK: usize = 500;
    println!("End of turn over every turn of the growth, by blocks of {BLOCK} turns:");
    println!(
        "{:>12} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "turns", "p50 ms", "p99 ms", "max ms", "p99/p50", "max/p50"
    );
    for block in ours.chunks(BLOCK) {
        let mut v: Vec<Duration> = block.iter().map(|(_, d)| *d).collect();
        v.sort();
        let (p50, p99, max) = (
            ms(percentile(&v, 0.5)),
            ms(percentile(&v, 0.99)),
            ms(v[v.len() - 1]),
        );
        let (first, last) = (block[0].0, block[block.len() - 1].0);
        println!(
            "{:>12} {p50:>9.2} {p99:>9.2} {max:>9.2} {:>8.2}x {:>8.2}x",
            format!("{first}-{last}"),
            p99 / p50,
            max / p50
        );
    }
    let mut all: Vec<Duration> = ours.iter().map(|(_, d)| *d).collect();
    all.sort();
    let mut disk = syncs.to_vec();
    disk.sort();
    let (p50, p99, max) = (
        ms(percentile(&all, 0.5)),
        ms(percentile(&all, 0.99)),
        ms(*all.last().unwrap_or(&Duration::ZERO)),
    );
    let (sync50, sync99) = (ms(percentile(&disk, 0.5)), ms(percentile(&disk, 0.99)));
    println!(
        "End of turn over all {} turns: p50 {p50:.2} ms, p99 {p99:.2} ms, max {max:.2} ms; a bare fdatasync of a 4 KB write after each turn: p50 {sync50:.2} ms, p99 {sync99:.2} ms, max {:.2} ms",
        all.len(),
        ms(*disk.last().unwrap_or(&Duration::ZERO)),
    );
    let tail = p99 / sync99;
    println!(
        "| end of turn p99 / bare fdatasync p99, interleaved, over the growth | {tail:.2}× | ≤ 2× | {} |",
        if tail <= 2.0 { "PASS" } else { "FAIL" }
    );
    println!(
        "| end of turn max / p50 over the growth | {:.2}× | ≤ 10× | {} |",
        max / p50,
        if max / p50 <= 10.0 { "PASS" } else { "FAIL" }
    );
}

fn main() {
    let args = parse_args();
    // BENCH_LOG=<filter>: the in-process server's logs on stderr.
    if let Ok(filter) = std::env::var("BENCH_LOG") {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_writer(std::io::stderr)
            .init();
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    // The engine sessions' state directory (its log); they live beside it.
    let (store, _) = Store::open_state_dir(&tmp.path().join("engine-state")).expect("store");
    if args.keep {
        eprintln!("keeping the benchmark's files in {}", tmp.path().display());
    }
    if let Some(rounds) = args.redaction {
        redaction::bench_redaction(tmp.path(), rounds);
        return;
    }
    if let Some((sessions, turns)) = args.import {
        import::bench_import(tmp.path(), sessions, turns);
        if args.keep {
            let _ = tmp.keep();
        }
        return;
    }
    if let Some(secs) = args.cluster {
        cluster::bench_cluster(tmp.path(), secs as f64);
        if args.keep {
            let _ = tmp.keep();
        }
        return;
    }
    if let Some(n) = args.startup {
        startup::bench_startup(tmp.path(), n);
        if args.keep {
            let _ = tmp.keep();
        }
        return;
    }
    if let Some(turns) = args.replication {
        replication::bench_replication(tmp.path(), turns);
        if args.keep {
            let _ = tmp.keep();
        }
        return;
    }
    if let Some((sessions, turns)) = args.mirror {
        mirror::bench_mirror(tmp.path(), sessions, turns);
        if args.keep {
            let _ = tmp.keep();
        }
        return;
    }
    if let Some((sessions, turns)) = args.memory_live {
        memory::bench_live(tmp.path(), sessions, turns);
        if args.keep {
            let _ = tmp.keep();
        }
        return;
    }
    if let Some(minutes) = args.memory_minutes {
        memory::bench_memory(tmp.path(), minutes);
        if args.keep {
            let _ = tmp.keep();
        }
        return;
    }
    let floor = floor::measure(tmp.path(), 500);
    floor.print();
    if args.load_only {
        load::load_only(tmp.path(), &floor, args.load_sessions, args.load_turns);
        return;
    }
    if args.http_only {
        load::report(tmp.path(), &floor, 0, 0, args.http_turns);
        return;
    }
    load::report(
        tmp.path(),
        &floor,
        args.load_sessions,
        args.load_turns,
        args.http_turns,
    );
    let windows: Vec<(usize, usize, usize)> = [10usize, 1000, 5000]
        .into_iter()
        .filter(|&n| n <= args.turns)
        .map(|n| (n, n.saturating_sub(if n <= 10 { 9 } else { 49 }).max(1), n))
        .collect();

    let sub_turns = if args.subprocess {
        args.subprocess_turns.unwrap_or(args.turns).min(args.turns)
    } else {
        0
    };
    eprintln!(
        "growing a session to {} turns (fsync on), and the subprocess repo to {sub_turns}, alternately…",
        args.turns
    );
    let samples = bench_commits(&store, tmp.path(), args.turns, sub_turns, &windows);
    let (ours, theirs) = (&samples.ours, &samples.theirs);

    println!("Per-turn commit latency (ms): ours = git2 in process, fsync on; theirs = git add -A && git commit");
    println!("(10-turn p50 = fresh 10-turn sessions timed in between the same window's turns)");
    println!(
        "{:>8} {:>10} {:>10} {:>9} {:>14} {:>8} {:>12} {:>12} {:>10}",
        "turns",
        "ours p50",
        "ours p99",
        "/floor",
        "10-turn p50",
        "growth",
        "theirs p50",
        "theirs p99",
        "speed-up"
    );
    for &(n, lo, hi) in &windows {
        let (o50, o99) = window_stats(ours, lo, hi);
        let small = if n <= 10 {
            o50
        } else {
            window_stats(&samples.paired_small, lo, hi).0
        };
        let theirs_cols = if theirs.iter().any(|(t, _)| *t >= lo) {
            let (t50, t99) = window_stats(theirs, lo, hi);
            format!("{t50:>12.2} {t99:>12.2} {:>9.1}x", t50 / o50)
        } else {
            format!("{:>12} {:>12} {:>10}", "-", "-", "-")
        };
        println!(
            "{n:>8} {o50:>10.2} {o99:>10.2} {:>8.2}x {small:>14.2} {:>7.2}x {theirs_cols}",
            o50 / floor.write_p50(),
            o50 / small
        );
    }
    if let (Some(&(_, flo, fhi)), Some(&(n, lo, hi))) = (windows.first(), windows.last()) {
        println!(
            "unpaired: ours at {n} turns / ours at the first 10 turns (minutes earlier) = {:.2}x",
            window_stats(ours, lo, hi).0 / window_stats(ours, flo, fhi).0
        );
    }
    stall_report(ours, &samples.syncs);
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

    disk_after_maintenance(&store, tmp.path());
    // A retry needs a 2nd user message: a session of two turns at least.
    if args.turns >= 2 {
        bench_branches(&store, tmp.path());
    }
    if args.sessions > 0 {
        bench_registry(tmp.path(), args.sessions);
    }
    if args.strace_turns > 0 {
        match bench_fsyncs(tmp.path(), args.strace_turns) {
            Some(f) => {
                let before_reply = f.log + f.other;
                println!(
                    "fsync-family calls per durable turn (strace -f, {} turns): total {:.1} = log {:.1} + registry journal {:.1} + search index {:.1} + other {:.1} {:?}",
                    args.strace_turns, f.total, f.log, f.registry, f.search, f.other, f.other_paths
                );
                println!(
                    "| fsync-family calls per durable turn before the replies (log + other) | {before_reply:.1} | ≤ 6 | {} |",
                    if before_reply <= 6.0 { "PASS" } else { "FAIL" }
                );
            }
            None => println!("fsync count skipped: strace did not run (apt install strace)"),
        }
    }
    if args.keep {
        let _ = tmp.keep();
    }
}
