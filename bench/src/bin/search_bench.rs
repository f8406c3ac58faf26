//! Search benchmark: sessions × turns of synthetic but well-formed session
//! repositories (the layout and trailers the store writes), then the full
//! index build, the index size against the indexed text, and query
//! latencies, each against its target with PASS or FAIL.
//!
//!   cargo build --release --workspace
//!   ./target/release/search_bench [--sessions 10000] [--turns 20]
//!   ./target/release/search_bench --quick      # 1,000 × 20, ~1 min
//!   ... -- --index-only   # the index part alone (no servers)
//!   SEARCH_BENCH_KEEP=<dir> ...   # make the sessions once, reuse them
//!
//! Then two real servers in process, one with search on and one with it
//! off: full HTTP turns alternated between them (the indexer's cost on a
//! turn's reply), and 64 sessions at once on the first (whether indexing
//! keeps up: how long after the last turn its words are found).

// a benchmark program: a failed setup step stops the run.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use git2::{Repository, Signature};
use openprogram_actors::search::{Request, Search};

#[path = "bench_support/server.rs"]
mod server;
use server::{start_server, HttpSession};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Words of a synthetic language: random syllables, 20,000 of them.
fn vocabulary() -> Vec<String> {
    let syll = [
        "ka", "lo", "mi", "ter", "an", "po", "ri", "sen", "du", "vel", "or", "is", "ne", "tra",
        "gu",
    ];
    let mut rng = Rng(7);
    (0..VOCABULARY)
        .map(|_| {
            let n = 2 + rng.below(3);
            (0..n)
                .map(|_| syll[rng.below(syll.len())])
                .collect::<String>()
        })
        .collect()
}

const VOCABULARY: usize = 20_000;

/// Word frequencies follow Zipf's law (the k-th commonest word comes up
/// in proportion to 1/k), as in natural language: the cumulative
/// weights, sampled by bisection.
fn zipf_cdf() -> Vec<f64> {
    let mut acc = 0.0;
    let mut cdf: Vec<f64> = (1..=VOCABULARY)
        .map(|k| {
            acc += 1.0 / k as f64;
            acc
        })
        .collect();
    for c in cdf.iter_mut() {
        *c /= acc;
    }
    cdf
}

fn sentence(rng: &mut Rng, vocab: &[String], cdf: &[f64], words: usize) -> String {
    let mut out = Vec::with_capacity(words);
    for _ in 0..words {
        let u = (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
        let k = cdf.partition_point(|c| *c < u).min(vocab.len() - 1);
        out.push(vocab[k].as_str());
    }
    out.join(" ")
}

fn node_json(id: &str, seq: u64, role: &str, text: &str, name: Option<&str>) -> String {
    let mut v = serde_json::json!({
        "id": id, "role": role, "content": text, "predecessor": null, "caller": null,
        "seq": seq, "created_at": 1.79e9 + seq as f64, "metadata": {}
    });
    if let Some(n) = name {
        v["name"] = n.into();
        v["caller"] = format!("a{seq}").into();
        v["output"] = text.into();
        v["content"] = serde_json::Value::Null;
    }
    v.to_string()
}

/// One session repository with `turns` commits; returns the indexed text bytes.
fn make_session(
    dir: &Path,
    id: &str,
    turns: usize,
    (vocab, cdf): (&[String], &[f64]),
    rng: &mut Rng,
) -> usize {
    std::fs::create_dir_all(dir).expect("mkdir");
    let repo = Repository::init(dir).expect("init");
    let sig = Signature::new(
        "OpenProgram",
        "sessions@openprogram.local",
        &git2::Time::new(1_790_000_000, 0),
    )
    .expect("sig");
    let mut parent: Option<git2::Oid> = None;
    let mut text_bytes = 0;
    let mut seq = 0u64;
    let mut tree_oid = repo.treebuilder(None).expect("tb").write().expect("tree");
    for t in 1..=turns {
        let mut update = git2::build::TreeUpdateBuilder::new();
        for (role, letter, words, name) in [
            ("user", 'u', 14, None),
            ("assistant", 'a', 40, None),
            ("tool", 't', 10, Some("grep")),
        ] {
            seq += 1;
            let text = sentence(rng, vocab, cdf, words);
            text_bytes += text.len() + name.map_or(0, |n: &str| n.len() + 1);
            let nid = format!("{letter}{seq}");
            let body = node_json(&nid, seq, role, &text, name);
            let blob = repo.blob(body.as_bytes()).expect("blob");
            let path = format!(
                "history/{:02}/{:02}/{seq:06}-{letter}-{nid}.json",
                seq / 10_000 % 100,
                seq / 100 % 100
            );
            update.upsert(path, blob, git2::FileMode::Blob);
        }
        let base = repo.find_tree(tree_oid).expect("tree");
        tree_oid = update.create_updated(&repo, &base).expect("update");
        let tree = repo.find_tree(tree_oid).expect("tree");
        let msg = format!("turn {t}: work\n\nOpenprogram-Session: {id}\nOpenprogram-Turn: {t}\nOpenprogram-Branch: main\nOpenprogram-Last-Seq: {seq}\n");
        let parents: Vec<git2::Commit<'_>> = parent
            .iter()
            .map(|p| repo.find_commit(*p).expect("parent"))
            .collect();
        let refs: Vec<&git2::Commit<'_>> = parents.iter().collect();
        let oid = repo
            .commit(Some("refs/heads/main"), &sig, &sig, &msg, &tree, &refs)
            .expect("commit");
        parent = Some(oid);
    }
    let meta =
        serde_json::json!({"id": id, "title": "", "created_at": 1.79e9, "updated_at": 1.79e9});
    std::fs::write(dir.join("meta.json"), meta.to_string()).expect("meta");
    text_bytes
}

fn du(p: &Path) -> u64 {
    openprogram_actors::maintenance::gc::size_of(p)
}

fn pct(v: &mut [Duration], p: f64) -> f64 {
    v.sort();
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i].as_secs_f64() * 1e3
}

fn verdict(ok: bool) -> &'static str {
    if ok {
        "PASS"
    } else {
        "FAIL"
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let get = |name: &str, default: usize| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let quick = args.iter().any(|a| a == "--quick");
    let sessions = get("--sessions", if quick { 1000 } else { 10_000 });
    let turns = get("--turns", 20);
    let tmp = tempfile::tempdir().expect("tempdir");
    // SEARCH_BENCH_KEEP=<dir>: the sessions are made there once and reused
    // by later runs of the same size (the index is built again each time).
    let keep = std::env::var_os("SEARCH_BENCH_KEEP").map(std::path::PathBuf::from);
    let state = keep
        .as_ref()
        .map(|k| k.join(format!("{sessions}x{turns}")))
        .unwrap_or_else(|| tmp.path().join("state"));
    let made = state.join("text_bytes");
    let reused: Option<usize> = std::fs::read_to_string(&made)
        .ok()
        .and_then(|t| t.trim().parse().ok());
    let _ = std::fs::remove_dir_all(state.join("search"));
    let sessions_dir = state.join("sessions");
    let vocab = vocabulary();
    let cdf = zipf_cdf();
    eprintln!(
        "making {sessions} sessions × {turns} turns ({} nodes)…",
        sessions * turns * 3
    );
    let started = Instant::now();
    let text: usize = reused.unwrap_or_else(|| {
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..2)
                .map(|part| {
                    let (dir, vocab, cdf) = (&sessions_dir, &vocab, &cdf);
                    scope.spawn(move || {
                        let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (part as u64 + 1));
                        (part..sessions)
                            .step_by(2)
                            .map(|i| {
                                // Ids as the server makes them (32 hex digits).
                                let id = format!("{:016x}{i:016x}", rng.next());
                                make_session(&dir.join(&id), &id, turns, (vocab, cdf), &mut rng)
                            })
                            .sum::<usize>()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().expect("thread")).sum()
        })
    });
    std::fs::write(&made, text.to_string()).expect("text size");
    eprintln!(
        "made in {:.1} s; {:.1} MB of text",
        started.elapsed().as_secs_f64(),
        text as f64 / 1e6
    );

    let search = Search::open(&state, Vec::new()).expect("open");
    let all = Search::sessions_on_disk(&openprogram_actors::store::Store::without_log(
        &state.join("sessions"),
    ))
    .expect("sessions");
    let t0 = Instant::now();
    let n = search.rebuild_now(all).expect("index");
    let build = t0.elapsed();
    let size = du(&state.join("search"));
    if std::env::var_os("SEARCH_BENCH_FILES").is_some() {
        let mut by_ext: std::collections::BTreeMap<String, u64> = Default::default();
        for e in std::fs::read_dir(state.join("search"))
            .into_iter()
            .flatten()
            .flatten()
        {
            let name = e.file_name().to_string_lossy().into_owned();
            let ext = name.rsplit('.').next().unwrap_or("").to_string();
            *by_ext.entry(ext).or_default() += e.metadata().map(|m| m.len()).unwrap_or(0);
        }
        eprintln!("index files by kind (bytes): {by_ext:?}");
        for (part, bytes) in search.space_by_field().expect("space usage") {
            eprintln!("  {part}: {bytes}");
        }
    }
    let ratio = size as f64 / text as f64;
    let mut rng = Rng(42);
    // Latencies of `n` queries made by `make`.
    let mut timed = |n: usize, make: &dyn Fn(&mut Rng) -> String| -> Vec<Duration> {
        (0..n)
            .map(|_| {
                let q = make(&mut rng);
                let t = Instant::now();
                search
                    .query_now(&Request {
                        q,
                        limit: 20,
                        ..Request::default()
                    })
                    .expect("query");
                t.elapsed()
            })
            .collect()
    };
    let mut two = timed(300, &|r| {
        format!("{} {}", vocab[r.below(400)], vocab[r.below(400)])
    });
    let mut phrase = timed(200, &|r| {
        format!("\"{} {}\"", vocab[r.below(200)], vocab[r.below(200)])
    });
    let (t50, t99, p50) = (
        pct(&mut two, 0.5),
        pct(&mut two, 0.99),
        pct(&mut phrase, 0.5),
    );
    println!(
        "Search over {n} sessions × {turns} turns ({} nodes, {:.1} MB of text)",
        n * turns * 3,
        text as f64 / 1e6
    );
    println!("| target | measured | limit | |");
    println!("|---|---|---|---|");
    println!(
        "| full index build | {:.1} s | (reported) | |",
        build.as_secs_f64()
    );
    println!(
        "| index size / indexed text | {:.1} MB / {:.1} MB = {:.1} % | ≤ 30 % | {} |",
        size as f64 / 1e6,
        text as f64 / 1e6,
        ratio * 100.0,
        verdict(ratio <= 0.30)
    );
    println!(
        "| two-word query p50 | {t50:.2} ms | < 20 ms | {} |",
        verdict(t50 < 20.0)
    );
    println!(
        "| two-word query p99 | {t99:.2} ms | < 100 ms | {} |",
        verdict(t99 < 100.0)
    );
    println!(
        "| phrase query p50 | {p50:.2} ms | < 50 ms | {} |",
        verdict(p50 < 50.0)
    );
    let turn_pairs = get("--turn-pairs", 300);
    let load_turns = get("--load-turns", 30);
    if args.iter().any(|a| a == "--index-only") {
        return;
    }
    drop(search);
    bench_mcp(&state, n, &vocab);
    bench_turns(tmp.path(), turn_pairs, load_turns);
}

/// The MCP server's `sessions_search` over HTTP on a real server holding
/// the sessions just made: the time from the request to its whole answer
/// (each hit with its commit and link), p50 against 25 ms.
fn bench_mcp(state: &Path, sessions: usize, vocab: &[String]) {
    // Every session kept (the default caps a state directory at 1,000).
    let addr = start_server(state, |c| {
        c.maintenance.max_sessions = 0;
        c.maintenance.empty_shell_max_age_s = 0.0;
        c.maintenance.archive_ttl_days = 0.0;
    });
    let agent = ureq::agent();
    let url = format!("http://{addr}/mcp");
    let mut rng = Rng(7);
    let call = |q: String| -> Duration {
        let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "sessions_search", "arguments": {"query": q, "limit": 10}}});
        let t = Instant::now();
        let r: serde_json::Value = agent
            .post(&url)
            .set("Accept", "application/json, text/event-stream")
            .set("MCP-Protocol-Version", "2025-06-18")
            .send_json(body)
            .expect("mcp call")
            .into_json()
            .expect("json");
        let took = t.elapsed();
        assert_eq!(r["result"]["isError"], false, "{r}");
        took
    };
    // Warm: the first queries load the sessions they hit.
    for _ in 0..50 {
        call(format!(
            "{} {}",
            vocab[rng.below(400)],
            vocab[rng.below(400)]
        ));
    }
    let mut times: Vec<Duration> = (0..300)
        .map(|_| {
            call(format!(
                "{} {}",
                vocab[rng.below(400)],
                vocab[rng.below(400)]
            ))
        })
        .collect();
    let (p50, p99) = (pct(&mut times, 0.5), pct(&mut times, 0.99));
    println!();
    let listed: usize = agent
        .get(&format!("http://{addr}/api/sessions?limit=1"))
        .call()
        .ok()
        .and_then(|r| r.into_json::<serde_json::Value>().ok())
        .and_then(|v| v["total"].as_u64())
        .unwrap_or(0) as usize;
    assert_eq!(listed, sessions, "every session is served");
    println!("MCP over HTTP on a real server with {sessions} sessions (`sessions_search`, two words, 10 hits with their commits)");
    println!("| target | measured | limit | |");
    println!("|---|---|---|---|");
    println!(
        "| sessions_search p50 | {p50:.2} ms | < 25 ms | {} |",
        verdict(p50 < 25.0)
    );
    println!("| sessions_search p99 | {p99:.2} ms | (reported) | |");
}

/// The indexer's cost on the acknowledged path, and whether it keeps up.
fn bench_turns(dir: &Path, pairs: usize, load_turns: usize) {
    let on = start_server(&dir.join("on"), |_| {});
    let off = start_server(&dir.join("off"), |c| c.search.enabled = false);
    let (a, b) = (HttpSession::new(on, "lat"), HttpSession::new(off, "lat"));
    let mut with = Vec::with_capacity(pairs);
    let mut without = Vec::with_capacity(pairs);
    for t in 0..pairs {
        // Alternated, so both see the same disk and the same moments.
        let words = format!("alpha{t} beta gamma");
        if t % 2 == 0 {
            with.push(a.turn(t, &words));
            without.push(b.turn(t, &words));
        } else {
            without.push(b.turn(t, &words));
            with.push(a.turn(t, &words));
        }
    }
    let (w50, wo50) = (pct(&mut with, 0.5), pct(&mut without, 0.5));
    let ratio = w50 / wo50;

    // 64 sessions at once, every reply with a word of its own.
    let sessions = 64;
    let started = Instant::now();
    std::thread::scope(|scope| {
        for s in 0..sessions {
            scope.spawn(move || {
                let session = HttpSession::new(on, &format!("load{s}"));
                for t in 0..load_turns {
                    session.turn(t, &format!("kw{s}x{t}"));
                }
            });
        }
    });
    let load = started.elapsed();
    let rate = (sessions * load_turns) as f64 / load.as_secs_f64();
    // Until each session's last word is found.
    let agent = ureq::agent();
    let found = |word: &str| -> bool {
        agent
            .get(&format!("http://{on}/api/search"))
            .query("q", word)
            .call()
            .ok()
            .and_then(|r| r.into_json::<serde_json::Value>().ok())
            .is_some_and(|v| v["total"].as_u64().unwrap_or(0) > 0)
    };
    let mut missing: Vec<String> = (0..sessions)
        .map(|s| format!("kw{s}x{}", load_turns - 1))
        .collect();
    while !missing.is_empty() && started.elapsed() < load + Duration::from_secs(60) {
        missing.retain(|w| !found(w));
        if !missing.is_empty() {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let lag = started.elapsed() - load;
    println!();
    println!("Indexing beside the turns (full HTTP turns, {pairs} alternated pairs; then {sessions} sessions × {load_turns} turns at once)");
    println!("| target | measured | limit | |");
    println!("|---|---|---|---|");
    println!(
        "| turn p50, search on / off | {w50:.2} ms / {wo50:.2} ms = {ratio:.2}× | ≤ 1.10× | {} |",
        verdict(ratio <= 1.10)
    );
    println!("| {sessions}-session load | {rate:.0} turns/s | (reported) | |");
    println!(
        "| last words searchable after the load | {:.2} s{} | ≤ 1 s | {} |",
        lag.as_secs_f64(),
        if missing.is_empty() {
            ""
        } else {
            " (some never)"
        },
        verdict(missing.is_empty() && lag <= Duration::from_secs(1))
    );
}
