//! Three nodes behind HAProxy over one PostgreSQL (docs/CLUSTER.md):
//! clients only talk to HAProxy; an owner killed under load loses no
//! acknowledged turn and its sessions are served again within 10 s; the
//! copies on disk are checked with git.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::cluster_harness::Cluster;
use crate::helpers::git;

/// What the clients saw: per session, the turns acknowledged in order and
/// when; every error answer by code.
#[derive(Default)]
struct History {
    acked: BTreeMap<String, Vec<(u64, Instant)>>,
    errors: BTreeMap<String, u64>,
}

fn whole_turn(agent: &ureq::Agent, base: &str, session: &str, k: u64) -> Result<u16, String> {
    let mut body = json!({
        "nodes": [
            {"id": format!("{session}-u{k}"), "role": "user", "content": format!("turn {k} of {session}")},
            {"id": format!("{session}-a{k}"), "role": "assistant", "content": format!("reply {k}")}
        ]
    });
    if k == 1 {
        body["session"] = json!({"title": session});
    }
    let resp = agent
        .post(&format!("{base}/api/sessions/{session}/turns"))
        .set("Idempotency-Key", &format!("{session}-{k}"))
        .send_json(body);
    match resp {
        Ok(r) => Ok(r.status()),
        Err(ureq::Error::Status(code, r)) => {
            let v: Value = r.into_json().unwrap_or_default();
            Err(format!("{code} {}", v["code"].as_str().unwrap_or("?")))
        }
        Err(e) => Err(format!("transport {}", e.kind())),
    }
}

/// A channel bridge: turns for its sessions round after round, each turn
/// retried (same Idempotency-Key) until acknowledged.
fn bridge(base: String, sessions: Vec<String>, stop: Arc<AtomicBool>, history: Arc<Mutex<History>>) {
    let agent = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(30))
        .build();
    let mut next: BTreeMap<String, u64> = sessions.iter().map(|s| (s.clone(), 1)).collect();
    while !stop.load(Ordering::Relaxed) {
        for s in &sessions {
            let k = next[s];
            let give_up = Instant::now() + Duration::from_secs(60);
            loop {
                match whole_turn(&agent, &base, s, k) {
                    Ok(200 | 201) => {
                        history
                            .lock()
                            .unwrap()
                            .acked
                            .entry(s.clone())
                            .or_default()
                            .push((k, Instant::now()));
                        break;
                    }
                    Ok(other) => panic!("unexpected status {other}"),
                    Err(e) => {
                        *history.lock().unwrap().errors.entry(e).or_default() += 1;
                        assert!(Instant::now() < give_up, "turn {k} of {s} never acknowledged");
                        std::thread::sleep(Duration::from_millis(100));
                    }
                }
            }
            next.insert(s.clone(), k + 1);
        }
    }
}

fn user_turns(base: &str, session: &str) -> Vec<String> {
    let v: Value = ureq::get(&format!("{base}/api/sessions/{session}/nodes"))
        .call()
        .unwrap()
        .into_json()
        .unwrap();
    v.as_array()
        .or_else(|| v["nodes"].as_array())
        .unwrap()
        .iter()
        .filter(|n| n["role"] == "user")
        .map(|n| n["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn an_owner_killed_under_load_loses_no_acknowledged_turn() {
    let Some(mut cluster) = Cluster::start(3) else {
        return;
    };
    let base = cluster.proxy.url();
    let stop = Arc::new(AtomicBool::new(false));
    let history = Arc::new(Mutex::new(History::default()));
    let bridges: Vec<_> = (0..4)
        .map(|b| {
            let sessions: Vec<String> = (0..5).map(|i| format!("c{b}-{i}")).collect();
            let (base, stop, history) = (base.clone(), stop.clone(), history.clone());
            std::thread::spawn(move || bridge(base, sessions, stop, history))
        })
        .collect();
    std::thread::sleep(Duration::from_secs(4));
    // The node owning the most sessions dies.
    let owned: Vec<u64> = cluster
        .nodes
        .iter()
        .map(|n| n.get("/cluster/v1/status").1["owned"].as_u64().unwrap())
        .collect();
    assert_eq!(owned.iter().sum::<u64>(), 20, "every session has one owner: {owned:?}");
    let victim = (0..owned.len()).max_by_key(|i| owned[*i]).unwrap();
    let victim_sessions: Vec<String> = std::fs::read_dir(cluster.nodes[victim].state_dir.join("sessions"))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with('c'))
        .collect();
    let killed_at = Instant::now();
    cluster.nodes[victim].kill();
    std::thread::sleep(Duration::from_secs(14));
    stop.store(true, Ordering::Relaxed);
    for b in bridges {
        b.join().unwrap();
    }
    let history = history.lock().unwrap();

    // Served again: the first acknowledgement after the kill, per session
    // the dead node owned.
    let mut back = Vec::new();
    for s in &victim_sessions {
        let first = history.acked[s]
            .iter()
            .find(|(_, at)| *at > killed_at)
            .map(|(_, at)| at.duration_since(killed_at));
        back.push(first.unwrap_or_else(|| panic!("{s} was never served again")));
    }
    let worst = back.iter().max().copied().unwrap_or_default();
    eprintln!(
        "killed {} owning {} sessions; served again after at most {:.1} s; errors seen: {:?}; turns acknowledged: {}",
        cluster.names[victim],
        victim_sessions.len(),
        worst.as_secs_f64(),
        history.errors,
        history.acked.values().map(Vec::len).sum::<usize>()
    );
    assert!(!victim_sessions.is_empty());
    assert!(worst <= Duration::from_secs(10), "takeover took {worst:?}");

    // Every acknowledged turn exactly once, in order (through HAProxy).
    for (s, turns) in &history.acked {
        let expected: Vec<String> = turns.iter().map(|(k, _)| format!("turn {k} of {s}")).collect();
        assert_eq!(user_turns(&base, s), expected, "session {s}");
    }

    // On disk: exactly one live node has each session, fsck-clean, with
    // one commit per turn; its first replica has the same branch.
    let live: Vec<usize> = (0..cluster.nodes.len()).filter(|i| *i != victim).collect();
    for (s, turns) in &history.acked {
        let holders: Vec<usize> = live
            .iter()
            .copied()
            .filter(|i| cluster.nodes[*i].session_dir(s).exists())
            .collect();
        assert_eq!(holders.len(), 1, "{s} is on one live node: {holders:?}");
        let owner = &cluster.nodes[holders[0]];
        let dir = owner.session_dir(s);
        git(&dir, &["fsck", "--strict", "--no-progress"]);
        let count = git(&dir, &["rev-list", "--count", "main"]);
        assert!(count.trim().parse::<usize>().unwrap() >= turns.len(), "{s}: {count}");
        let tip = git(&dir, &["rev-parse", "main"]);
        let other = live.iter().copied().find(|i| *i != holders[0]).unwrap();
        let replica = cluster.nodes[other]
            .state_dir
            .join("cluster/replicas")
            .join(format!("{s}.git"));
        assert_eq!(git(&replica, &["rev-parse", "main"]), tip, "{s}'s replica");
        git(&replica, &["fsck", "--strict", "--no-progress"]);
    }
}
