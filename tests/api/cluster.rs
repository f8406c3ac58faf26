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
use crate::ws::WsClient;

/// What the clients saw: per session, the turns acknowledged in order and
/// when; every error answer by code.
#[derive(Default)]
struct History {
    acked: BTreeMap<String, Vec<(u64, Instant)>>,
    errors: BTreeMap<String, u64>,
    /// Turns never acknowledged within 60 s: session, turn, last error.
    stuck: Vec<(String, u64, String)>,
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
fn bridge(
    base: String,
    sessions: Vec<String>,
    stop: Arc<AtomicBool>,
    history: Arc<Mutex<History>>,
) {
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
                        let mut h = history.lock().unwrap();
                        *h.errors.entry(e.clone()).or_default() += 1;
                        if Instant::now() >= give_up {
                            h.stuck.push((s.clone(), k, e));
                            return;
                        }
                        drop(h);
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

/// What a fault did to the node it hit.
struct Hit {
    /// The node hit, and the sessions it owned.
    node: usize,
    sessions: Vec<String>,
    /// The node is down for good (its copies are not checked).
    dead: bool,
}

/// The node owning the most of the test's sessions, and those sessions.
fn busiest(cluster: &Cluster) -> (usize, Vec<String>) {
    let owned: Vec<u64> = cluster
        .nodes
        .iter()
        .map(|n| n.get("/cluster/v1/status").1["owned"].as_u64().unwrap())
        .collect();
    assert_eq!(
        owned.iter().sum::<u64>(),
        20,
        "every session has one owner: {owned:?}"
    );
    let node = (0..owned.len()).max_by_key(|i| owned[*i]).unwrap();
    let sessions = std::fs::read_dir(cluster.nodes[node].state_dir.join("sessions"))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with('c'))
        .collect();
    (node, sessions)
}

/// 20 sessions written by 4 bridges through HAProxy; `fault` after 4 s;
/// 14 s more; then every acknowledged turn is checked through the API and
/// on disk. The seconds until the hit node's sessions were served again.
fn under_load(what: &str, fault: impl FnOnce(&mut Cluster) -> Hit) -> Option<f64> {
    under_load_on(Cluster::start(3)?, what, fault)
}

/// `under_load` on a cluster started by the caller.
fn under_load_on(
    mut cluster: Cluster,
    what: &str,
    fault: impl FnOnce(&mut Cluster) -> Hit,
) -> Option<f64> {
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
    // The fault comes once every session has an acknowledged turn (a
    // loaded machine makes them slowly), and at least 4 s into the load.
    let started = Instant::now();
    loop {
        let made = history.lock().unwrap().acked.len();
        if made == 20 && started.elapsed() >= Duration::from_secs(4) {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "{what}: only {made} of 20 sessions were made in 120 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let hit_at = Instant::now();
    let hit = fault(&mut cluster);
    std::thread::sleep(Duration::from_secs(14).saturating_sub(hit_at.elapsed()));
    stop.store(true, Ordering::Relaxed);
    for b in bridges {
        b.join().unwrap();
    }
    let history = history.lock().unwrap();
    if !history.stuck.is_empty() {
        panic!(
            "{what}: turns never acknowledged within 60 s: {:?}\n{}",
            history.stuck,
            diagnose(&cluster, history.stuck.iter().map(|(s, _, _)| s.as_str()))
        );
    }

    // Served again: the first acknowledgement after the fault, per
    // session the hit node owned.
    let mut back = Vec::new();
    for s in &hit.sessions {
        let first = history.acked[s]
            .iter()
            .find(|(_, at)| *at > hit_at)
            .map(|(_, at)| at.duration_since(hit_at));
        back.push(first.unwrap_or_else(|| panic!("{what}: {s} was never served again")));
    }
    let worst = back.iter().max().copied().unwrap_or_default();
    eprintln!(
        "{what}: {} owned {} sessions; served again after at most {:.1} s; acknowledged lost: checked below; errors seen: {:?}; turns acknowledged: {}",
        cluster.names[hit.node],
        hit.sessions.len(),
        worst.as_secs_f64(),
        history.errors,
        history.acked.values().map(Vec::len).sum::<usize>()
    );

    // Every acknowledged turn exactly once, in order (through HAProxy).
    for (s, turns) in &history.acked {
        let expected: Vec<String> = turns
            .iter()
            .map(|(k, _)| format!("turn {k} of {s}"))
            .collect();
        assert_eq!(user_turns(&base, s), expected, "{what}: session {s}");
    }

    // On disk: exactly one serving node has each session, fsck-clean, with
    // a commit per turn; its first replica has the same branch.
    let nodes: Vec<usize> = (0..cluster.nodes.len())
        .filter(|i| !(hit.dead && *i == hit.node))
        .collect();
    let leases = leases(&cluster);
    for (s, turns) in &history.acked {
        let (owner, replicas) = &leases[s];
        let owner = cluster.names.iter().position(|n| n == owner).unwrap();
        assert!(
            nodes.contains(&owner),
            "{what}: {s} is owned by a serving node"
        );
        for i in &nodes {
            assert_eq!(
                cluster.nodes[*i].session_dir(s).exists(),
                *i == owner,
                "{what}: {s} is served from one folder, on {}",
                cluster.names[owner]
            );
        }
        let dir = cluster.nodes[owner].session_dir(s);
        git(&dir, &["fsck", "--strict", "--no-progress"]);
        let count = git(&dir, &["rev-list", "--count", "main"]);
        assert!(
            count.trim().parse::<usize>().unwrap() >= turns.len(),
            "{s}: {count}"
        );
        let tip = git(&dir, &["rev-parse", "main"]);
        let first = cluster
            .names
            .iter()
            .position(|n| *n == replicas[0])
            .unwrap();
        let replica = cluster.nodes[first]
            .state_dir
            .join("cluster/replicas")
            .join(format!("{s}.git"));
        assert_eq!(
            git(&replica, &["rev-parse", "main"]),
            tip,
            "{what}: {s}'s first replica"
        );
        git(&replica, &["fsck", "--strict", "--no-progress"]);
    }
    Some(worst.as_secs_f64())
}

/// For sessions a test found stuck: their lease rows and what each node's
/// log says of them (the last lines).
fn diagnose<'a>(cluster: &Cluster, sessions: impl Iterator<Item = &'a str>) -> String {
    let leases = leases(cluster);
    let mut out = String::new();
    for s in sessions {
        out.push_str(&format!("== {s}: lease {:?}\n", leases.get(s)));
        for (name, node) in cluster.names.iter().zip(&cluster.nodes) {
            let log = node.log();
            let lines: Vec<&str> = log.lines().filter(|l| l.contains(s)).collect();
            let tail = &lines[lines.len().saturating_sub(15)..];
            out.push_str(&format!(
                "-- {name} ({} lines)\n{}\n",
                lines.len(),
                tail.join("\n")
            ));
        }
    }
    out
}

/// Each session's owner and replicas, from PostgreSQL.
fn leases(cluster: &Cluster) -> BTreeMap<String, (String, Vec<String>)> {
    let out = std::process::Command::new("psql")
        .args([&cluster.pg.url(), "-At", "-F", "|", "-c"])
        .arg("SELECT session_id, node_id, array_to_string(replicas, ',') FROM cluster_leases")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split('|').collect();
            (
                f[0].to_string(),
                (
                    f[1].to_string(),
                    f[2].split(',').map(str::to_string).collect(),
                ),
            )
        })
        .collect()
}

#[test]
fn an_owner_killed_under_load_loses_no_acknowledged_turn() {
    // (How soon its sessions are served again is the benchmark's target:
    // `bench --cluster`; here it is only reported.)
    under_load("SIGKILL of an owner", |c| {
        let (node, sessions) = busiest(c);
        c.nodes[node].kill();
        Hit {
            node,
            sessions,
            dead: true,
        }
    });
}

#[test]
fn an_owner_stopped_past_its_lease_writes_nothing_when_it_continues() {
    under_load("SIGSTOP of an owner for 9 s, then SIGCONT", |c| {
        let (node, sessions) = busiest(c);
        let pid = c.nodes[node].pid().unwrap().to_string();
        let signal = |s: &str| {
            assert!(std::process::Command::new("kill")
                .args([s, &pid])
                .status()
                .unwrap()
                .success())
        };
        signal("-STOP");
        std::thread::sleep(Duration::from_secs(9));
        signal("-CONT");
        // It learns at its next renewal that it lost them, and keeps its
        // copies aside. (A lease nobody claimed while it was stopped is
        // renewed by it, and that session stays its own.)
        let fenced = c.nodes[node].state_dir.join("cluster/fenced");
        let kept = || std::fs::read_dir(&fenced).map(|d| d.count()).unwrap_or(0);
        let me = c.names[node].clone();
        let lost = || -> Vec<String> {
            let leases = leases(c);
            sessions
                .iter()
                .filter(|s| leases.get(*s).is_some_and(|(owner, _)| *owner != me))
                .cloned()
                .collect()
        };
        // (A wait for a state, not a speed target: on a loaded machine the
        // returning node takes a while to run again.)
        let deadline = Instant::now() + Duration::from_secs(90);
        let lost = loop {
            let lost = lost();
            let here: Vec<&String> = lost
                .iter()
                .filter(|s| c.nodes[node].session_dir(s).exists())
                .collect();
            if !lost.is_empty() && here.is_empty() && kept() == lost.len() {
                break lost;
            }
            assert!(
                Instant::now() < deadline,
                "every lost session leaves its place for cluster/fenced ({} of {} kept; still here: {here:?}): {:#?}",
                kept(),
                lost.len(),
                c.nodes[node]
                    .log()
                    .lines()
                    .filter(|l| l.contains("aside") || l.contains("WARN") || l.contains("ERROR"))
                    .collect::<Vec<_>>()
            );
            std::thread::sleep(Duration::from_millis(100));
        };
        assert!(
            !lost.is_empty(),
            "another node took over the stopped owner's sessions"
        );
        for s in sessions.iter().filter(|s| !lost.contains(s)) {
            eprintln!("{s}: nobody claimed it while its owner was stopped; its owner renewed it");
            assert!(
                c.nodes[node].session_dir(s).exists(),
                "{s} stays with its owner"
            );
        }
        Hit {
            node,
            sessions,
            dead: false,
        }
    });
}

#[test]
fn postgresql_restarted_under_load_loses_nothing() {
    under_load(
        "PostgreSQL restarted (down 6 s, past the nodes' deadlines)",
        |c| {
            let before = leases(c);
            c.pg.restart(Duration::from_secs(6));
            // Every owner renews before anyone may claim: no session moved.
            std::thread::sleep(Duration::from_secs(7));
            assert_eq!(leases(c), before, "no takeover after PostgreSQL came back");
            Hit {
                node: 0,
                sessions: Vec::new(),
                dead: false,
            }
        },
    );
}

#[test]
fn a_websocket_client_on_one_node_sees_a_rename_made_through_another() {
    let Some(cluster) = Cluster::start(3) else {
        return;
    };
    let agent = ureq::agent();
    let base = cluster.proxy.url();
    for i in 1..=9 {
        assert_eq!(whole_turn(&agent, &base, &format!("w-{i}"), 1), Ok(201));
    }
    let mut clients: Vec<WsClient> = cluster.nodes.iter().map(WsClient::connect).collect();
    for round in 0..3 {
        for (i, client) in clients.iter_mut().enumerate() {
            let through = (i + 1) % 3;
            let title = format!("Round {round}, watched on {i}, renamed through {through}");
            let session = format!("w-{}", round + 1);
            let (st, v) = cluster.nodes[through].patch(
                &format!("/api/sessions/{session}"),
                json!({ "title": title }),
            );
            assert_eq!(st, 200, "{v}");
            let seen = client.expect("session_updated", |v| v["data"]["title"] == title.as_str());
            assert_eq!(seen["data"]["id"], session.as_str());
        }
    }
    // An action for a session another node owns is answered there.
    let owners = leases(&cluster);
    for (i, client) in clients.iter_mut().enumerate() {
        let (session, (owner, _)) = owners
            .iter()
            .find(|(s, (o, _))| *o != cluster.names[i] && s.as_str() > "w-3")
            .expect("a session another node owns");
        let title = format!("Renamed by a client of {i}");
        client.send(json!({"action": "rename_session", "session_id": session, "title": title, "request_id": 7}));
        let seen = client.expect("session_updated", |v| v["data"]["title"] == title.as_str());
        assert_eq!(seen["data"]["id"], session.as_str());
        let at = cluster.names.iter().position(|n| n == owner).unwrap();
        let (_, meta) = cluster.nodes[at].get(&format!("/api/sessions/{session}"));
        assert_eq!(meta["title"], title.as_str(), "the owner has it");
        client.send(json!({"action": "load_session", "session_id": session, "request_id": 8}));
        let loaded = client.next_where(|v| v["request_id"] == 8);
        assert_ne!(loaded["type"], "action_error", "{loaded}");
    }
    for s in ["w-1", "w-2"] {
        let (st, _) = cluster.nodes[0].patch(
            &format!("/api/sessions/{s}"),
            json!({"title": format!("{s} again")}),
        );
        assert_eq!(st, 200);
    }
    // The list on every node names the titles the owner has.
    for n in &cluster.nodes {
        let (_, v) = n.get("/api/sessions/w-3");
        assert_eq!(
            v["title"], "Round 2, watched on 2, renamed through 0",
            "{v}"
        );
    }
}

/// `GET path` on `node` until `done` holds (rows are shared right after
/// each change, not inside its request).
fn get_until(
    node: &crate::helpers::TestServer,
    path: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let (st, v) = node.get(path);
        if st == 200 && done(&v) {
            return v;
        }
        assert!(Instant::now() < deadline, "{path}: {v}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn every_node_lists_every_session_in_the_order_of_one_node() {
    let Some(cluster) = Cluster::start(3) else {
        return;
    };
    let agent = ureq::agent();
    let base = cluster.proxy.url();
    let ids: Vec<String> = (0..12).map(|i| format!("l-{i:02}")).collect();
    for id in &ids {
        assert_eq!(whole_turn(&agent, &base, id, 1), Ok(201));
    }
    let owners: std::collections::BTreeSet<String> =
        leases(&cluster).values().map(|(o, _)| o.clone()).collect();
    assert!(
        owners.len() > 1,
        "the sessions are spread over the nodes: {owners:?}"
    );
    // Newest first: the last created leads.
    let mut newest_first = ids.clone();
    newest_first.reverse();
    for node in &cluster.nodes {
        let v = get_until(node, "/api/sessions", |v| v["total"] == 12);
        let listed: Vec<&str> = v["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap())
            .collect();
        assert_eq!(listed, newest_first, "one order on every node");
        let page = get_until(node, "/api/sessions?limit=5&offset=5", |v| v["total"] == 12);
        assert_eq!(page["sessions"][0]["id"], newest_first[5].as_str());
    }
    // A pin made through one node filters the list on the others.
    let (st, _) = cluster.nodes[0].patch("/api/sessions/l-03", json!({"pinned": true}));
    assert_eq!(st, 200);
    let (st, _) = cluster.nodes[1].patch("/api/sessions/l-07", json!({"archived": true}));
    assert_eq!(st, 200);
    for node in &cluster.nodes {
        let v = get_until(node, "/api/sessions?pinned=true", |v| v["total"] == 1);
        assert_eq!(v["sessions"][0]["id"], "l-03");
        let v = get_until(node, "/api/sessions", |v| v["total"] == 11);
        assert!(v["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["id"] != "l-07"));
        let v = get_until(node, "/api/sessions?archived=true", |v| v["total"] == 1);
        assert_eq!(v["sessions"][0]["id"], "l-07");
    }
    // A deletion through any node leaves every list.
    let (st, _) = cluster.nodes[2].raw_delete("/api/sessions/l-05");
    assert!(st == 200 || st == 204, "{st}");
    for node in &cluster.nodes {
        let v = get_until(node, "/api/sessions?include_archived=true", |v| {
            v["total"] == 11
        });
        assert!(v["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["id"] != "l-05"));
    }
}

#[test]
fn a_search_on_any_node_finds_sessions_held_by_every_node() {
    let Some(cluster) = Cluster::start(3) else {
        return;
    };
    let agent = ureq::agent();
    let base = cluster.proxy.url();
    let ids: Vec<String> = (0..9).map(|i| format!("f-{i}")).collect();
    for id in &ids {
        assert_eq!(whole_turn(&agent, &base, id, 1), Ok(201));
    }
    let owners: std::collections::BTreeSet<String> =
        leases(&cluster).values().map(|(o, _)| o.clone()).collect();
    assert_eq!(owners.len(), 3, "the sessions are on every node");
    // "turn 1 of f-N": every session's user message matches "turn".
    for node in &cluster.nodes {
        let v = get_until(node, "/api/search?q=turn&role=user&limit=50", |v| {
            v["total"] == 9
        });
        let mut found: Vec<&str> = v["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["session_id"].as_str().unwrap())
            .collect();
        found.sort();
        assert_eq!(found, ids.iter().map(String::as_str).collect::<Vec<_>>());
        // Pages of the merged answer: no hit twice, none left out.
        let mut paged = Vec::new();
        for offset in [0, 4, 8] {
            let (_, v) = node.get(&format!(
                "/api/search?q=turn&role=user&limit=4&offset={offset}"
            ));
            assert_eq!(v["total"], 9);
            paged.extend(
                v["hits"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|h| h["session_id"].as_str().unwrap().to_string()),
            );
        }
        paged.sort();
        assert_eq!(paged, ids);
        let v = get_until(node, "/api/search?q=f-4&group=session", |v| v["total"] == 1);
        assert_eq!(v["sessions"][0]["session_id"], "f-4", "{v}");
    }
}

#[test]
fn with_its_replicas_down_an_owner_acknowledges_nothing_and_resumes_after() {
    under_load("both replicas of the busiest node killed for 8 s", |c| {
        let (owner, sessions) = busiest(c);
        let others: Vec<usize> = (0..c.nodes.len()).filter(|i| *i != owner).collect();
        // One replica down: its sessions' turns go to the other one (put
        // first in PostgreSQL; the final check reads the first replica).
        c.nodes[others[0]].kill();
        std::thread::sleep(Duration::from_secs(3));
        // Both down: nothing is acknowledged on one copy.
        c.nodes[others[1]].kill();
        std::thread::sleep(Duration::from_secs(1));
        let agent = ureq::agent();
        let probe = format!("{}/api/sessions/probe-1/turns", c.nodes[owner].url);
        let refused = agent
            .post(&probe)
            .send_json(json!({"nodes": [{"id": "probe-u", "role": "user", "content": "probe"}]}));
        match refused {
            Err(ureq::Error::Status(503, r)) => {
                let v: Value = r.into_json().unwrap();
                assert_eq!(v["code"], "replica_unavailable", "{v}");
            }
            other => panic!("a turn with no replica must not be acknowledged: {other:?}"),
        }
        std::thread::sleep(Duration::from_secs(4));
        c.nodes[others[0]].spawn();
        c.nodes[others[1]].spawn();
        Hit {
            node: owner,
            sessions,
            dead: false,
        }
    });
}

/// What docs/CLUSTER.md says an open turn may lose: its appends are
/// durable on the owner only, so a takeover serves the session as of its
/// last ended turn; the next turn starts from there and is kept.
#[test]
fn a_takeover_serves_the_last_ended_turn_and_drops_the_open_one() {
    let Some(mut cluster) = Cluster::start(3) else {
        return;
    };
    let agent = ureq::agent();
    let base = cluster.proxy.url();
    assert_eq!(whole_turn(&agent, &base, "o-1", 1), Ok(201));
    let owners = leases(&cluster);
    let (owner, replicas) = owners["o-1"].clone();
    let at = cluster.names.iter().position(|n| *n == owner).unwrap();
    // A rename acknowledged after the last turn (not committed until the
    // next one) survives the takeover.
    let (st, _) = cluster.nodes[at].patch(
        "/api/sessions/o-1",
        json!({"title": "Kept through a takeover"}),
    );
    assert_eq!(st, 200);
    // Turn 2 opened on the owner, never ended.
    cluster.nodes[at].append(
        "o-1",
        json!({"id": "open-u", "role": "user", "content": "an open turn"}),
    );
    cluster.nodes[at].kill();
    let first = cluster
        .names
        .iter()
        .position(|n| *n == replicas[0])
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (st, v) = cluster.nodes[first].get("/api/sessions/o-1/nodes");
        if st == 200 {
            let users: Vec<&str> = v
                .as_array()
                .or_else(|| v["nodes"].as_array())
                .unwrap()
                .iter()
                .filter(|n| n["role"] == "user")
                .map(|n| n["content"].as_str().unwrap_or_default())
                .collect();
            assert_eq!(
                users,
                ["turn 1 of o-1"],
                "the last ended turn, without the open one"
            );
            let (_, meta) = cluster.nodes[first].get("/api/sessions/o-1");
            assert_eq!(meta["title"], "Kept through a takeover", "{meta}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "o-1 was not taken over: {st} {v}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // The session goes on from there (through HAProxy, with a node down).
    let deadline = Instant::now() + Duration::from_secs(20);
    while whole_turn(&agent, &base, "o-1", 2) != Ok(201) {
        assert!(Instant::now() < deadline, "turn 2 was never acknowledged");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(user_turns(&base, "o-1"), ["turn 1 of o-1", "turn 2 of o-1"]);
}

/// A session taken over while no other node was live has no replica to
/// name; once the nodes are back its turns are acknowledged again, on two
/// nodes, and the lease names two replicas.
#[test]
fn a_session_taken_over_alone_gets_its_replicas_back_when_nodes_return() {
    let Some(mut cluster) = Cluster::start(3) else {
        return;
    };
    let agent = ureq::agent();
    assert_eq!(whole_turn(&agent, &cluster.proxy.url(), "r-1", 1), Ok(201));
    let (owner, replicas) = leases(&cluster)["r-1"].clone();
    let at = |n: &str| cluster.names.iter().position(|x| x == n).unwrap();
    let (a, b, c) = (at(&owner), at(&replicas[0]), at(&replicas[1]));
    // The second replica goes down past its node's lease, then the owner:
    // the first replica takes the session over with nobody else live.
    cluster.nodes[c].kill();
    std::thread::sleep(Duration::from_secs(6));
    cluster.nodes[a].kill();
    let url = cluster.nodes[b].url.clone();
    let deadline = Instant::now() + Duration::from_secs(30);
    let alone = loop {
        match whole_turn(&agent, &url, "r-1", 2) {
            Err(e) if e == "503 replica_unavailable" => break e,
            other => assert!(
                Instant::now() < deadline,
                "r-1 was not taken over by {}: {other:?}",
                cluster.names[b]
            ),
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(leases(&cluster)["r-1"].0, cluster.names[b], "{alone}");
    cluster.nodes[c].spawn();
    cluster.nodes[a].spawn();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match whole_turn(&agent, &url, "r-1", 2) {
            Ok(200 | 201) => break,
            other => assert!(
                Instant::now() < deadline,
                "turn 2 of r-1 was never acknowledged with both nodes back: {other:?}\n{}",
                diagnose(&cluster, ["r-1"].into_iter())
            ),
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    // Once both nodes are live again, the next turn names two replicas
    // (the one back first may have been the only live one at turn 2).
    cluster.wait_all_live();
    assert_eq!(whole_turn(&agent, &url, "r-1", 3), Ok(201));
    let (now, replicas) = leases(&cluster)["r-1"].clone();
    assert_eq!(now, cluster.names[b]);
    assert_eq!(replicas.len(), 2, "{replicas:?}");
    assert!(
        replicas.iter().all(|r| *r != now && !r.is_empty()),
        "{replicas:?}"
    );
    let tip = git(&cluster.nodes[b].session_dir("r-1"), &["rev-parse", "main"]);
    let first = cluster.nodes[at(&replicas[0])]
        .state_dir
        .join("cluster/replicas/r-1.git");
    assert_eq!(git(&first, &["rev-parse", "main"]), tip);
    assert_eq!(
        user_turns(&cluster.proxy.url(), "r-1"),
        ["turn 1 of r-1", "turn 2 of r-1", "turn 3 of r-1"]
    );
}

#[test]
fn a_node_whose_disk_fills_acknowledges_nothing_it_cannot_keep() {
    use crate::full_disk::{fill, mount_tmpfs, Mounted};
    let mounted = std::cell::Cell::new(None);
    let Some(cluster) = Cluster::start_with(3, |i, state| {
        if i == 2 && mount_tmpfs(state, "64m") {
            mounted.set(Some(Mounted(state.to_path_buf())));
        }
    }) else {
        return;
    };
    let Some(_unmount) = mounted.take() else {
        assert!(
            std::env::var_os("OPENPROGRAM_MOUNT_REQUIRED").is_none(),
            "could not mount a tmpfs for the full-disk cluster test"
        );
        eprintln!("skipped: mounting a tmpfs needs the right to mount");
        return;
    };
    under_load_on(cluster, "node-c's disk full for 5 s", |c| {
        let sessions: Vec<String> = std::fs::read_dir(c.nodes[2].state_dir.join("sessions"))
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.starts_with('c'))
            .collect();
        let filler = c.nodes[2].state_dir.join("filler");
        fill(&filler);
        std::thread::sleep(Duration::from_secs(5));
        std::fs::remove_file(&filler).unwrap();
        Hit {
            node: 2,
            sessions,
            dead: false,
        }
    });
}

#[test]
fn a_channel_conversation_is_one_session_whichever_node_its_messages_reach() {
    let Some(cluster) = Cluster::start(3) else {
        return;
    };
    // Three peers, each writing through every node in turn: each peer's
    // messages land in one session, on one node (the first opens its turn,
    // the others queue behind it).
    let mut seen: BTreeMap<&str, std::collections::BTreeSet<String>> = BTreeMap::new();
    for round in 0..3 {
        for (i, node) in cluster.nodes.iter().enumerate() {
            for peer in ["ada", "bob", "cy"] {
                let (st, v) = node.post(
                    "/api/channels/telegram/messages",
                    json!({"account_id": "bot", "peer_id": peer,
                           "text": format!("{peer} says {round}.{i}"),
                           "message_id": format!("{peer}-{round}-{i}")}),
                );
                assert!(st == 201 || st == 202, "{st} {v}");
                let id = v["session_id"].as_str().unwrap_or_default().to_string();
                seen.entry(peer).or_default().insert(id);
            }
        }
    }
    for (peer, ids) in &seen {
        assert_eq!(ids.len(), 1, "{peer}: one session: {ids:?}");
    }
    let v = get_until(&cluster.nodes[0], "/api/sessions?channel=telegram", |v| {
        v["total"] == 3
    });
    let leases = leases(&cluster);
    for row in v["sessions"].as_array().unwrap() {
        let id = row["id"].as_str().unwrap();
        let at = cluster
            .names
            .iter()
            .position(|n| *n == leases[id].0)
            .unwrap();
        for (i, node) in cluster.nodes.iter().enumerate() {
            assert_eq!(node.session_dir(id).exists(), i == at, "{id} on node {i}");
        }
    }
}

/// A purge on the owner reaches both replicas: they hold the rewritten
/// branches and no object of the old history (`git cat-file
/// --batch-all-objects`), `git fsck --strict` clean; the next turn is
/// acknowledged as before.
#[test]
fn a_purge_on_the_owner_leaves_no_old_object_on_any_replica() {
    let Some(cluster) =
        Cluster::start_with_env(3, |_, _| {}, &[("OPENPROGRAM_REDACTION_MODE", "off")])
    else {
        return;
    };
    let secret = openprogram_actors::redact::fake::fake_secrets(21)
        .into_iter()
        .find(|f| f.kind == "github")
        .unwrap()
        .secret;
    let agent = ureq::agent();
    let base = cluster.proxy.url();
    let resp = agent
        .post(&format!("{base}/api/sessions/p-1/turns"))
        .send_json(json!({"nodes": [
            {"id": "u1", "role": "user", "content": format!("the token is {secret}")},
            {"id": "a1", "role": "assistant", "content": "stored"}
        ]}))
        .unwrap();
    assert_eq!(resp.status(), 201);
    assert_eq!(whole_turn(&agent, &base, "p-1", 2), Ok(201));
    let (owner, replicas) = leases(&cluster)["p-1"].clone();
    let at = |name: &str| cluster.names.iter().position(|n| n == name).unwrap();
    let replica_dirs: Vec<std::path::PathBuf> = replicas
        .iter()
        .map(|r| {
            cluster.nodes[at(r)]
                .state_dir
                .join("cluster/replicas/p-1.git")
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !replica_dirs
        .iter()
        .all(|d| d.exists() && crate::purge::objects(d, true).contains(&secret))
    {
        assert!(Instant::now() < deadline, "the copies never arrived");
        std::thread::sleep(Duration::from_millis(100));
    }

    let owner_node = &cluster.nodes[at(&owner)];
    let (st, purged) = owner_node.post("/api/sessions/p-1/purge", json!({}));
    assert_eq!(st, 200, "{purged}");
    assert!(purged["record"].is_object(), "{purged}");
    assert_eq!(purged["not_pushed"], json!([]), "{purged}");
    let heads = git(
        &owner_node.session_dir("p-1"),
        &["for-each-ref", "refs/heads"],
    );
    for d in &replica_dirs {
        assert!(
            !crate::purge::objects(d, true).contains(&secret),
            "{}",
            d.display()
        );
        git(d, &["fsck", "--strict", "--no-progress"]);
        assert_eq!(git(d, &["for-each-ref", "refs/heads"]), heads);
    }
    assert!(!crate::purge::objects(&owner_node.session_dir("p-1"), true).contains(&secret));
    assert_eq!(whole_turn(&agent, &base, "p-1", 3), Ok(201));
}
