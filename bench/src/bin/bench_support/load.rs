//! Load: many sessions at once against one real server, every turn
//! durable (`sessions` client threads, each with its own session and
//! keep-alive connection, run turns as fast as the server answers: whole
//! turns in one request, then turns of four requests). One client's
//! turns against one fsync'd 2 KB write. A session's `.git` after idle
//! maintenance.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use super::floor::Floor;
use super::server::{start_server, start_stoppable, HttpSession};
use super::{ms, percentile};

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
    /// The part of it the load's client threads used (their own
    /// `/proc/thread-self/stat`, read as each ends), user and kernel.
    pub client_cpu: (f64, f64),
    /// The change feed's lag behind acknowledged turns: from a turn's
    /// acknowledgement to its commit's event reaching a reader that
    /// long-polls `/api/changes` (sorted; 0 when it came first).
    pub feed_lags: Vec<Duration>,
    /// Acknowledged turns whose commit never reached the reader.
    pub feed_missing: usize,
}

/// Follow the change feed from `cursor` until `stop`, noting when each
/// commit's event arrived.
fn follow_feed(
    url: &str,
    mut cursor: String,
    stop: &std::sync::atomic::AtomicBool,
) -> std::collections::HashMap<String, Instant> {
    use std::sync::atomic::Ordering;
    let agent = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(30))
        .build();
    let mut seen = std::collections::HashMap::new();
    loop {
        let stopping = stop.load(Ordering::SeqCst);
        let page: serde_json::Value = match agent
            .get(&format!(
                "{url}/api/changes?since={cursor}&limit=1000&wait=1"
            ))
            .call()
        {
            Ok(r) => r.into_json().unwrap_or_default(),
            Err(_) => return seen,
        };
        let now = Instant::now();
        let events = page["events"].as_array().cloned().unwrap_or_default();
        for e in &events {
            if let Some(c) = e["event"]["commit"].as_str() {
                seen.insert(c.to_string(), now);
            }
        }
        if let Some(c) = page["next_cursor"].as_str() {
            cursor = c.to_string();
        }
        if stopping && events.is_empty() {
            return seen;
        }
    }
}

/// User and kernel CPU seconds this process has used (`/proc/self/stat`,
/// in clock ticks of 1/100 s).
fn cpu_seconds() -> Option<(f64, f64)> {
    cpu_of("/proc/self/stat")
}

/// Per thread name, over this process's live threads: CPU seconds (user +
/// kernel) and bytes the threads caused to be written to disk.
fn by_thread() -> std::collections::HashMap<String, (f64, f64)> {
    let mut out = std::collections::HashMap::new();
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return out;
    };
    for task in tasks.flatten() {
        let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else {
            continue;
        };
        let name = stat
            .split_once('(')
            .and_then(|(_, r)| r.rsplit_once(')'))
            .map(|(n, _)| n.to_string())
            .unwrap_or_default();
        let (user, sys) = cpu_in(&stat).unwrap_or_default();
        let written = std::fs::read_to_string(task.path().join("io"))
            .ok()
            .and_then(|io| {
                io.lines()
                    .find_map(|l| l.strip_prefix("write_bytes: "))
                    .and_then(|v| v.trim().parse::<f64>().ok())
            })
            .unwrap_or(0.0);
        let entry = out.entry(name).or_insert((0.0, 0.0));
        entry.0 += user + sys;
        entry.1 += written;
    }
    out
}

/// User and kernel CPU seconds the calling thread has used.
fn thread_cpu() -> (f64, f64) {
    cpu_of("/proc/thread-self/stat").unwrap_or_default()
}

fn cpu_of(path: &str) -> Option<(f64, f64)> {
    cpu_in(&std::fs::read_to_string(path).ok()?)
}

/// User and kernel CPU seconds in the text of a `/proc/…/stat` file (in
/// clock ticks of 1/100 s).
fn cpu_in(stat: &str) -> Option<(f64, f64)> {
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

/// How the load's clients write a turn.
#[derive(Clone, Copy, PartialEq)]
pub enum TurnShape {
    /// The whole turn in one request (`POST …/turns` with its nodes).
    Whole,
    /// User, assistant, tool, fill, end: four requests and the end.
    Four,
}

pub fn bench_load(dir: &Path, sessions: usize, turns_each: usize, shape: TurnShape) -> LoadFigures {
    let state = match shape {
        TurnShape::Whole => "load-whole-state",
        TurnShape::Four => "load-state",
    };
    let server = start_stoppable(&dir.join(state), |c| {
        // The full-text index has its own benchmark (search_bench).
        c.search.enabled = false;
    });
    let addr = server.addr;
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
    let cursor: serde_json::Value = ureq::get(&format!("{url}/api/changes?since=latest"))
        .call()
        .ok()
        .and_then(|r| r.into_json().ok())
        .unwrap_or_default();
    let cursor = cursor["next_cursor"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let cpu_before = cpu_seconds();
    let threads_before = by_thread();
    let start = Instant::now();
    let (turns, seen, client_cpu) = std::thread::scope(|scope| {
        // BENCH_NO_FEED=1: no reader of the feed (its cost apart).
        let follower = scope.spawn(|| {
            if std::env::var_os("BENCH_NO_FEED").is_some() {
                return (std::collections::HashMap::new(), (0.0, 0.0));
            }
            let seen = follow_feed(&url, cursor, &stop);
            (seen, thread_cpu())
        });
        let handles: Vec<_> = (0..sessions)
            .map(|i| {
                let url = url.clone();
                scope.spawn(move || {
                    let s = HttpSession::at(&url, &format!("load-{i}"));
                    let turns = (0..turns_each)
                        .map(|t| match shape {
                            TurnShape::Whole => s.whole_turn_acked(t),
                            TurnShape::Four => s.turn_acked(t, ""),
                        })
                        .collect::<Vec<_>>();
                    (turns, thread_cpu())
                })
            })
            .collect();
        let mut client_cpu = (0.0, 0.0);
        let mut turns: Vec<(Duration, String, Instant)> = Vec::new();
        for h in handles {
            let (t, (user, sys)) = h.join().expect("client thread");
            turns.extend(t);
            client_cpu.0 += user;
            client_cpu.1 += sys;
        }
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        let (seen, (user, sys)) = follower.join().expect("feed reader");
        client_cpu.0 += user;
        client_cpu.1 += sys;
        (turns, seen, client_cpu)
    });
    let seconds = start.elapsed().as_secs_f64();
    // BENCH_THREADS=1: the server's CPU per turn by thread name.
    if std::env::var_os("BENCH_THREADS").is_some() {
        let per_turn = turns.len().max(1) as f64;
        // (name, CPU ms per turn, KB written per turn)
        let mut by: Vec<(String, f64, f64)> = by_thread()
            .into_iter()
            .map(|(n, (cpu, bytes))| {
                let (cpu0, bytes0) = threads_before.get(&n).copied().unwrap_or_default();
                let ms = (cpu - cpu0) * 1e3 / per_turn;
                (n, ms, (bytes - bytes0) / 1e3 / per_turn)
            })
            .collect();
        by.sort_by(|a, b| b.1.total_cmp(&a.1));
        let list: Vec<String> = by
            .iter()
            .filter(|(_, ms, _)| *ms >= 0.005)
            .map(|(n, ms, _)| format!("{n} {ms:.3}"))
            .collect();
        println!(
            "CPU per turn by thread (ms; live threads only): {}",
            list.join(", ")
        );
        by.sort_by(|a, b| b.2.total_cmp(&a.2));
        let list: Vec<String> = by
            .iter()
            .filter(|(_, _, kb)| *kb >= 0.05)
            .map(|(n, _, kb)| format!("{n} {kb:.1}"))
            .collect();
        println!("Bytes written per turn by thread (KB): {}", list.join(", "));
    }
    let mut feed_lags = Vec::new();
    let mut feed_missing = 0;
    for (_, commit, acked) in &turns {
        match seen.get(commit) {
            Some(at) => feed_lags.push(at.saturating_duration_since(*acked)),
            None => feed_missing += 1,
        }
    }
    feed_lags.sort();
    let mut all: Vec<Duration> = turns.iter().map(|t| t.0).collect();
    let cpu = match (cpu_before, cpu_seconds()) {
        (Some((u0, s0)), Some((u1, s1))) => Some((u1 - u0, s1 - s0)),
        _ => None,
    };
    let after = scrape();
    server.stop();
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
    if let (Some(sum), Some(count)) = (
        delta("openprogram_wal_flush_seconds_sum"),
        delta("openprogram_wal_flush_seconds_count"),
    ) {
        if count > 0.0 {
            println!(
                "Log flushes under that load: {count:.0}, mean {:.2} ms (the write and its fdatasync)",
                sum * 1e3 / count
            );
        }
    }
    LoadFigures {
        turns: all.len(),
        seconds,
        p50: at(0.5),
        p99: at(0.99),
        entries_per_flush,
        cpu,
        client_cpu,
        feed_lags,
        feed_missing,
    }
}

/// Targets 1 and 3 of the performance issue, measured first: the later
/// phases delete tens of thousands of files (a branch switch of the
/// 5,000-turn session drops 15,000), and on this VM's ext4 (no journal)
/// each inode freed makes every file creation near it skip it for one to
/// six minutes (`recently_deleted`), which would load the turns measured
/// after them.
pub fn report(
    dir: &Path,
    floor: &Floor,
    load_sessions: usize,
    load_turns: usize,
    http_turns: usize,
) {
    if load_sessions > 0 && load_turns > 0 {
        // As many requests per client in both: a whole turn is one.
        load_report(dir, floor, load_sessions, 4 * load_turns, TurnShape::Whole);
        load_report(dir, floor, load_sessions, load_turns, TurnShape::Four);
        turn_files(dir);
    }
    if http_turns > 0 {
        let HttpTurns {
            four,
            whole,
            writes,
        } = bench_http(dir, http_turns);
        let write50 = ms(percentile(&writes, 0.5));
        let (four50, whole50) = (ms(percentile(&four, 0.5)), ms(percentile(&whole, 0.5)));
        println!(
            "Durable turns over HTTP, {http_turns} of each, alternated: four requests (user + assistant + tool + fill, then the end) p50 {four50:.2} ms ({}), p99 {:.2} ms; one request with the whole turn (about 3 KB) p50 {whole50:.2} ms ({}), p99 {:.2} ms; one fsync'd 2 KB atomic write in the same seconds: p50 {write50:.2} ms",
            floor.times(four50),
            ms(percentile(&four, 0.99)),
            floor.times(whole50),
            ms(percentile(&whole, 0.99)),
        );
        let four_ratio = four50 / write50;
        let whole_ratio = whole50 / write50;
        println!(
            "| full durable HTTP turn, four requests / one fsync'd 2 KB write (p50s) | {four_ratio:.1}× | ≤ 6× | {} |",
            if four_ratio <= 6.0 { "PASS" } else { "FAIL" }
        );
        println!(
            "| durable turn in one request / one fsync'd 2 KB write (p50s) | {whole_ratio:.1}× | ≤ 2× | {} |",
            if whole_ratio <= 2.0 { "PASS" } else { "FAIL" }
        );
    }
}

/// The one-request load alone (`--load-only`: for a profiler).
pub fn load_only(dir: &Path, floor: &Floor, sessions: usize, turns: usize) {
    load_report(dir, floor, sessions, 4 * turns, TurnShape::Whole);
    turn_files(dir);
}

/// What target 3's CPU per turn is up against: the files the layout
/// makes a whole turn leave, alone (after the loads: see `report`).
fn turn_files(dir: &Path) {
    let files = ms(super::floor::turn_files_cpu(dir, 4000));
    println!(
        "The files of a whole turn alone (four node files created, a pack and its index created and renamed, meta.json overwritten; the server's calls, one thread, 4,000 turns): {files:.3} ms of CPU a turn = {:.0}% of the 0.4 ms target; on 2 cores they alone would allow {:.0} turns/s",
        100.0 * files / 0.4,
        2000.0 / files
    );
}

fn pass(ok: bool) -> &'static str {
    if ok {
        "PASS"
    } else {
        "FAIL"
    }
}

/// One load (`shape`), its figures and its targets: one-request turns
/// ≥ 4,000/s, CPU ≤ 0.4 ms a turn, p99 ≤ 50 ms; four-request turns
/// ≥ 1,500/s.
fn load_report(dir: &Path, floor: &Floor, sessions: usize, turns: usize, shape: TurnShape) {
    let f = bench_load(dir, sessions, turns, shape);
    let rate = f.turns as f64 / f.seconds;
    let what = match shape {
        TurnShape::Whole => "whole turns in one request",
        TurnShape::Four => "turns of four requests and the end",
    };
    println!(
        "Load: {sessions} sessions at once, {} durable {what} in {:.1} s (entries per log flush: {}); turn p50 {:.1} ms ({}), p99 {:.1} ms ({})",
        f.turns,
        f.seconds,
        f.entries_per_flush
            .map_or("-".to_string(), |e| format!("{e:.1}")),
        ms(f.p50),
        floor.times(ms(f.p50)),
        ms(f.p99),
        floor.times(ms(f.p99)),
    );
    // The server's share: the process's CPU less its client threads'.
    let per_turn = f.cpu.map(|(user, sys)| {
        let per = |s: f64| s * 1e3 / f.turns as f64;
        let (cu, cs) = f.client_cpu;
        println!(
            "CPU per turn under that load: server {:.2} ms (user {:.2}, kernel {:.2}); the load's clients (HTTP and the feed's reader, in this process) {:.2} ms more",
            per(user + sys - cu - cs),
            per(user - cu),
            per(sys - cs),
            per(cu + cs),
        );
        per(user + sys - cu - cs)
    });
    match shape {
        TurnShape::Whole => {
            println!(
                "| one-request turns/s across {sessions} sessions | {rate:.0} | ≥ 4,000 | {} |",
                pass(rate >= 4000.0)
            );
            if let Some(cpu) = per_turn {
                println!(
                    "| server CPU per one-request turn under that load | {cpu:.2} ms | ≤ 0.4 ms | {} |",
                    pass(cpu <= 0.4)
                );
            }
            println!(
                "| one-request turn p99 under that load | {:.1} ms | ≤ 50 ms | {} |",
                ms(f.p99),
                pass(ms(f.p99) <= 50.0)
            );
        }
        TurnShape::Four => {
            println!(
                "| four-request turns/s across {sessions} sessions | {rate:.0} | ≥ 1,500 | {} |",
                pass(rate >= 1500.0)
            );
        }
    }
    if !f.feed_lags.is_empty() {
        let lag99 = ms(percentile(&f.feed_lags, 0.99));
        println!(
            "| change feed lag behind acknowledged turns under that load, p99 (p50 {:.1} ms, max {:.1} ms, {} of {} events missing) | {lag99:.1} ms | < 1000 ms, none missing | {} |",
            ms(percentile(&f.feed_lags, 0.5)),
            ms(*f.feed_lags.last().unwrap_or(&Duration::ZERO)),
            f.feed_missing,
            f.turns,
            pass(lag99 < 1000.0 && f.feed_missing == 0)
        );
    }
}

/// The HTTP turns' times and the fsync'd writes between them, sorted.
pub struct HttpTurns {
    pub four: Vec<Duration>,
    pub whole: Vec<Duration>,
    pub writes: Vec<Duration>,
}

/// Full HTTP turns of four requests and whole turns in one request,
/// alternated, each followed by one fsync'd 2 KB atomic write
/// (`fsio::atomic_write`: temp file + fsync + rename + folder fsync) in
/// the same seconds.
pub fn bench_http(dir: &Path, turns: usize) -> HttpTurns {
    let addr = start_server(&dir.join("http-state"), |_| {});
    let session = HttpSession::new(addr, "http-bench");
    let whole_session = HttpSession::new(addr, "http-bench-whole");
    let target = dir.join("fsync-2k.json");
    let mut out = HttpTurns {
        four: Vec::with_capacity(turns),
        whole: Vec::with_capacity(turns),
        writes: Vec::with_capacity(2 * turns),
    };
    let write = |out: &mut HttpTurns| out.writes.push(super::floor::atomic_write(&target));
    for t in 0..turns {
        out.four.push(session.turn(t, ""));
        write(&mut out);
        out.whole.push(whole_session.whole_turn(t));
        write(&mut out);
    }
    out.four.sort();
    out.whole.sort();
    out.writes.sort();
    out
}

/// What an idle session's background maintenance does (geometric merges
/// until none is due), then the size of its `.git`.
pub fn idle_maintenance_size(git_dir: &Path, turns: usize) {
    use openprogram_actors::git::repack;
    let Ok(repo) = git2::Repository::open(git_dir) else {
        return;
    };
    while let Ok(Some(victims)) = repack::plan(git_dir, None) {
        let written = repack::build(&repo, &victims).expect("merge");
        repack::drop_packs(&victims, &written).expect("drop");
        repack::purge_merged(git_dir, Duration::ZERO).expect("purge");
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
