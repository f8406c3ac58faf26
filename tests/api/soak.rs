//! More sessions written to than the session cache holds: actors are
//! evicted and started again all the time, with their pack maintenance
//! queued behind the other sessions'. No request may wait on that: a
//! bounded soak (a small cache, several clients, 30 s) fails on any
//! request over 5 s, and every request ends. (An evicted actor kept alive
//! by its maintenance timers held the session's lease, so the session's
//! next actor, and every request for it, waited: 5 s and more here,
//! minutes under a bigger load.)

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::helpers::TestServer;

const CLIENTS: u64 = 6;
const SESSIONS: u64 = 48;
const CAP: &str = "8";

/// `SOAK_SECS` runs it longer. (The bound is a liveness bound, far above
/// what a request takes here: the slowest was 0.2 s alone.)
#[test]
fn no_request_waits_when_more_sessions_are_busy_than_the_cache_holds() {
    let secs: u64 = std::env::var("SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    let s = Arc::new(TestServer::start_with_env(&[
        ("OPENPROGRAM_STORE_SESSION_CACHE_CAP", CAP),
        // Requests past 2 s are logged with the stage they wait in.
        ("OPENPROGRAM_SERVER_SLOW_REQUEST_MS", "2000"),
    ]));
    let stop = Arc::new(AtomicBool::new(false));
    let slow = Arc::new(Mutex::new(Vec::new()));
    let mut threads = Vec::new();
    for c in 0..CLIENTS {
        let (s, stop, slow) = (s.clone(), stop.clone(), slow.clone());
        threads.push(std::thread::spawn(move || {
            let mut seed = 0x9e37_79b9_7f4a_7c15_u64 ^ (c + 1);
            let mut n = 0u64;
            let mut worst = Duration::ZERO;
            while !stop.load(Ordering::Relaxed) {
                seed = seed
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                let session = format!("soak-{}", (seed >> 33) % SESSIONS);
                n += 1;
                let body = json!({"nodes": [
                    {"role": "user", "content": format!("client {c} turn {n}")},
                    {"role": "assistant", "content": "done"}]});
                let started = Instant::now();
                let (st, v) = s.post(&format!("/api/sessions/{session}/turns"), body);
                let took = started.elapsed();
                worst = worst.max(took);
                if took > Duration::from_secs(5) {
                    slow.lock().unwrap().push((session.clone(), took));
                }
                // A turn refused because another runs there is fine; a
                // wait is not.
                assert!(st == 201 || st == 409, "{session}: {st} {v}");
            }
            (n, worst)
        }));
    }
    std::thread::sleep(Duration::from_secs(secs));
    stop.store(true, Ordering::Relaxed);
    let mut total = 0;
    let mut worst = Duration::ZERO;
    for t in threads {
        let (n, w) = t.join().unwrap();
        total += n;
        worst = worst.max(w);
    }
    eprintln!(
        "soak: {total} whole turns over {SESSIONS} sessions, cache {CAP}, the slowest {worst:?}"
    );
    for line in s.log().lines().filter(|l| l.contains("still waiting")) {
        eprintln!("{line}");
    }
    let slow = slow.lock().unwrap();
    assert!(
        slow.is_empty(),
        "requests over 5 s: {:?}\n{}",
        &slow[..slow.len().min(20)],
        s.log()
    );
    assert!(total > 100, "the load ran: {total}");
}
