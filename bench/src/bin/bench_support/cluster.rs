//! `bench --cluster SECONDS`: three nodes over PostgreSQL behind HAProxy on
//! loopback against one plain server, in the same run: whole turns from 16
//! clients over 48 sessions for SECONDS each, throughput and p50/p99 (the
//! cost of the synchronous replica), then the takeover: the busiest node
//! is killed under load and every one of its sessions must be served again
//! within 10 s (lease 5 s).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::registry::{spawn_server_on, spawn_server_with, ChildServer};

const CLIENTS: usize = 16;
const SESSIONS: usize = 48;
/// A session's time to be served again after its owner died, at most.
const TAKEOVER_TARGET: Duration = Duration::from_secs(10);

fn port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// PostgreSQL started with `pg_ctl` in `dir` (as `nobody` when root).
struct Pg {
    bin: PathBuf,
    data: PathBuf,
    port: u16,
}

impl Pg {
    fn run(&self, program: &str, args: &[&str]) -> bool {
        let root = unsafe { libc::geteuid() } == 0;
        let mut cmd = if root {
            let mut c = Command::new("runuser");
            c.args(["-u", "nobody", "--"]).arg(self.bin.join(program));
            c
        } else {
            Command::new(self.bin.join(program))
        };
        cmd.args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    fn start(dir: &Path) -> Option<Pg> {
        let bin = std::fs::read_dir("/usr/lib/postgresql")
            .ok()?
            .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
            .find(|b| b.join("pg_ctl").exists())?;
        let home = dir.join("pg");
        std::fs::create_dir_all(&home).ok()?;
        let _ = Command::new("chown")
            .args(["nobody:nogroup"])
            .arg(&home)
            .status();
        let _ = Command::new("chmod").arg("755").arg(dir).status();
        let pg = Pg {
            bin,
            data: home.join("data"),
            port: port(),
        };
        let data = pg.data.to_string_lossy().into_owned();
        let opts = format!(
            "-p {} -c listen_addresses=127.0.0.1 -c unix_socket_directories={}",
            pg.port,
            home.display()
        );
        (pg.run(
            "initdb",
            &["-D", &data, "-U", "memory", "--auth=trust", "--no-sync"],
        ) && pg.run(
            "pg_ctl",
            &["-D", &data, "-o", &opts, "-w", "-l", "/dev/null", "start"],
        ))
        .then_some(pg)
    }

    fn url(&self) -> String {
        format!(
            "host=127.0.0.1 port={} user=memory dbname=postgres",
            self.port
        )
    }
}

impl Drop for Pg {
    fn drop(&mut self) {
        let data = self.data.to_string_lossy().into_owned();
        self.run("pg_ctl", &["-D", &data, "-m", "immediate", "stop"]);
    }
}

struct Proxy(Child);

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn haproxy(dir: &Path, nodes: &[u16]) -> Option<(Proxy, String)> {
    let listen = port();
    let servers: String = nodes
        .iter()
        .enumerate()
        .map(|(i, p)| format!("  server n{i} 127.0.0.1:{p} check\n"))
        .collect();
    let cfg = format!(
        "global\n  maxconn 1024\ndefaults\n  mode http\n  timeout connect 2s\n  timeout client 60s\n  timeout server 60s\n\
         frontend f\n  bind 127.0.0.1:{listen}\n  default_backend b\n\
         backend b\n  balance uri path-only depth 3\n  hash-type consistent\n  option httpchk\n\
         \x20 http-check send meth GET uri /api/health ver HTTP/1.1 hdr Host 127.0.0.1\n\
         \x20 default-server inter 500ms fall 2 rise 2\n{servers}"
    );
    let path = dir.join("haproxy.cfg");
    std::fs::write(&path, cfg).ok()?;
    let child = Command::new("haproxy")
        .arg("-db")
        .arg("-f")
        .arg(&path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let url = format!("http://127.0.0.1:{listen}");
    let agent = ureq::agent();
    let deadline = Instant::now() + Duration::from_secs(20);
    while agent.get(&format!("{url}/api/health")).call().is_err() {
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Some((Proxy(child), url))
}

/// What the clients measured.
#[derive(Default)]
struct Tally {
    latencies: Vec<Duration>,
    /// Per session: the times its turns were acknowledged.
    acked: BTreeMap<String, Vec<Instant>>,
    failures: usize,
}

fn turn_body(session: &str, k: usize) -> serde_json::Value {
    let filler = "x".repeat(700);
    serde_json::json!({
        "nodes": [
            {"id": format!("u{k}"), "role": "user", "content": format!("turn {k} of {session}: {filler}")},
            {"id": format!("a{k}"), "role": "assistant", "content": format!("reply {k}: {filler}")},
            {"id": format!("t{k}"), "role": "tool", "name": "grep", "caller": format!("a{k}"),
             "content": {"pattern": "fn"}, "output": filler.clone()},
            {"id": format!("b{k}"), "role": "assistant", "content": format!("done {k}")}
        ]
    })
}

/// 16 clients over 48 sessions until `stop`; each turn retried with its
/// Idempotency-Key until acknowledged.
fn load(base: &str, prefix: &str, stop: Arc<AtomicBool>) -> Arc<Mutex<Tally>> {
    let tally = Arc::new(Mutex::new(Tally::default()));
    let threads: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let (base, prefix, stop, tally) = (
                base.to_string(),
                prefix.to_string(),
                stop.clone(),
                tally.clone(),
            );
            std::thread::spawn(move || {
                let agent = ureq::AgentBuilder::new()
                    .timeout(Duration::from_secs(30))
                    .build();
                let mine: Vec<String> = (0..SESSIONS)
                    .filter(|s| s % CLIENTS == c)
                    .map(|s| format!("{prefix}-{s}"))
                    .collect();
                let mut k = 1;
                while !stop.load(Ordering::Relaxed) {
                    for s in &mine {
                        loop {
                            let started = Instant::now();
                            let r = agent
                                .post(&format!("{base}/api/sessions/{s}/turns"))
                                .set("Idempotency-Key", &format!("{s}-{k}"))
                                .send_json(turn_body(s, k));
                            let mut t = tally.lock().expect("tally");
                            if r.is_ok() {
                                t.latencies.push(started.elapsed());
                                t.acked.entry(s.clone()).or_default().push(Instant::now());
                                break;
                            }
                            t.failures += 1;
                            drop(t);
                            std::thread::sleep(Duration::from_millis(50));
                        }
                    }
                    k += 1;
                }
            })
        })
        .collect();
    let waiter = tally.clone();
    std::thread::spawn(move || {
        for t in threads {
            let _ = t.join();
        }
        drop(waiter);
    });
    tally
}

fn pct(v: &[Duration], p: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v[((v.len() as f64 - 1.0) * p).round() as usize].as_secs_f64() * 1e3
}

/// Run the load for `secs` and report; (turns/s, p50, p99).
fn measure(what: &str, base: &str, prefix: &str, secs: f64) -> (f64, f64, f64) {
    let stop = Arc::new(AtomicBool::new(false));
    let tally = load(base, prefix, stop.clone());
    std::thread::sleep(Duration::from_secs_f64(secs));
    stop.store(true, Ordering::Relaxed);
    std::thread::sleep(Duration::from_millis(500));
    let t = tally.lock().expect("tally");
    let mut l = t.latencies.clone();
    l.sort();
    let rate = l.len() as f64 / secs;
    let (p50, p99) = (pct(&l, 0.5), pct(&l, 0.99));
    println!(
        "  {what:<34} {rate:>7.0} turns/s   p50 {p50:>6.2} ms   p99 {p99:>7.2} ms   ({} turns, {} failed attempts)",
        l.len(),
        t.failures
    );
    (rate, p50, p99)
}

pub fn bench_cluster(dir: &Path, secs: f64) {
    println!("Cluster (loopback, 2 cores shared by every process): whole turns (~3 KB), {CLIENTS} clients, {SESSIONS} sessions, {secs} s each");
    let Some(pg) = Pg::start(dir) else {
        println!("  SKIPPED: PostgreSQL's server (pg_ctl) is not installed");
        return;
    };
    // One plain server, in the same run.
    let single = dir.join("single");
    let (one, url, _) = spawn_server_with(&single, &[]);
    let (_, p50_one, p99_one) = measure("one server, no cluster", &url, "one", secs);
    drop(one);

    let ports: Vec<u16> = (0..3).map(|_| port()).collect();
    let pg_url = pg.url();
    let mut nodes: Vec<Option<ChildServer>> = ports
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let name = format!("node-{i}");
            let advertise = format!("http://127.0.0.1:{p}");
            let env: [(&str, &std::ffi::OsStr); 3] = [
                ("OPENPROGRAM_CLUSTER_POSTGRES_URL", pg_url.as_ref()),
                ("OPENPROGRAM_CLUSTER_NODE_ID", name.as_ref()),
                ("OPENPROGRAM_CLUSTER_ADVERTISE", advertise.as_ref()),
            ];
            Some(spawn_server_on(&dir.join(&name), &format!("127.0.0.1:{p}"), &env).0)
        })
        .collect();
    let Some((_proxy, base)) = haproxy(dir, &ports) else {
        println!("  SKIPPED: HAProxy did not start (is it installed?)");
        return;
    };
    // Every node sees the others before the load starts.
    std::thread::sleep(Duration::from_secs(2));
    let (_, p50_c, p99_c) = measure("3 nodes behind HAProxy", &base, "c", secs);
    println!(
        "  cost of the synchronous replica (and the proxy hop): p50 {:.2}x, p99 {:.2}x one server's",
        p50_c / p50_one.max(1e-9),
        p99_c / p99_one.max(1e-9)
    );

    // Takeover under load.
    let stop = Arc::new(AtomicBool::new(false));
    let tally = load(&base, "k", stop.clone());
    std::thread::sleep(Duration::from_secs(3));
    let owned: Vec<u64> = ports
        .iter()
        .map(|p| {
            ureq::get(&format!("http://127.0.0.1:{p}/cluster/v1/status"))
                .call()
                .ok()
                .and_then(|r| r.into_json::<serde_json::Value>().ok())
                .and_then(|v| v["owned"].as_u64())
                .unwrap_or(0)
        })
        .collect();
    let victim = (0..3).max_by_key(|i| owned[*i]).unwrap_or(0);
    let held: Vec<String> = std::fs::read_dir(dir.join(format!("node-{victim}")).join("sessions"))
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|n| n.starts_with("k-"))
                .collect()
        })
        .unwrap_or_default();
    let killed = Instant::now();
    if let Some(n) = nodes[victim].take() {
        n.kill();
    }
    std::thread::sleep(Duration::from_secs(14));
    stop.store(true, Ordering::Relaxed);
    std::thread::sleep(Duration::from_millis(500));
    let t = tally.lock().expect("tally");
    let worst = held
        .iter()
        .map(|s| {
            t.acked
                .get(s)
                .and_then(|at| at.iter().find(|a| **a > killed))
                .map_or(Duration::MAX, |a| a.duration_since(killed))
        })
        .max()
        .unwrap_or_default();
    let verdict = if worst <= TAKEOVER_TARGET {
        "PASS"
    } else {
        "FAIL"
    };
    println!(
        "  takeover: node-{victim} killed owning {} sessions; all served again within {:.1} s: {verdict} (target <= {} s, lease 5 s)",
        held.len(),
        worst.as_secs_f64(),
        TAKEOVER_TARGET.as_secs()
    );
}
