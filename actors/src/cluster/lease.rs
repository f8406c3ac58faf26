//! The lease thread: every `lease / 10` it renews this node's row and
//! every lease it holds in one statement each, takes the answer as what
//! this node owns, refreshes the node list, and claims the sessions whose
//! owner stopped renewing and whose first replica is this node.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::db::{self, LeaseRow};
use super::error::ClusterError;
use super::{lock, Cluster, Owned, MARGIN};

/// Threads making claimed sessions servable.
const TAKEOVER_THREADS: usize = 4;

/// Ticks between two sweeps of leases held for no session (a write to a
/// session that was never made claims one): 60 s at the default lease.
const SWEEP_TICKS: u32 = 120;

/// Sessions claimed in one tick, at most.
const CLAIMS_PER_TICK: i64 = 256;

pub struct Renewer {
    cluster: Cluster,
    client: Option<postgres::Client>,
    takeovers: crossbeam_channel::Sender<LeaseRow>,
    /// Since when every renewal succeeded (None after a failure).
    connected_since: Option<Instant>,
    /// Ticks since the last sweep of leases with no session.
    since_sweep: u32,
    /// Leases held with no session listed at the last sweep.
    unlisted: HashSet<String>,
}

impl Renewer {
    pub fn new(cluster: Cluster, client: postgres::Client) -> Renewer {
        let (takeovers, rx) = crossbeam_channel::unbounded();
        // A dead node's sessions are made servable several at a time
        // (each is a restore, a load and a full push).
        for i in 0..TAKEOVER_THREADS {
            let (worker, rx) = (cluster.clone(), rx.clone());
            let spawned = std::thread::Builder::new()
                .name(format!("cluster-takeover-{i}"))
                .spawn(move || worker.takeover_loop(rx));
            if let Err(e) = spawned {
                tracing::error!(error = %e, "a takeover thread did not start");
            }
        }
        Renewer {
            cluster,
            client: Some(client),
            takeovers,
            connected_since: None,
            since_sweep: 0,
            unlisted: HashSet::new(),
        }
    }

    pub fn run(mut self) {
        // Ten ticks a lease: a renewal every half second at the default
        // 5 s, and orphans claimed within half a second of their end.
        let period = self.cluster.inner.config.lease / 10;
        while !self.cluster.inner.stop.load(Ordering::Relaxed) {
            let started = Instant::now();
            if let Err(e) = self.tick() {
                tracing::warn!(error = %e, "cluster lease not renewed");
                self.client = None;
                self.connected_since = None;
            }
            std::thread::sleep(period.saturating_sub(started.elapsed()));
        }
    }

    /// One renewal (and claims).
    pub fn tick(&mut self) -> Result<(), ClusterError> {
        let cluster = self.cluster.clone();
        let inner = &cluster.inner;
        let config = &inner.config;
        if self.client.as_ref().is_none_or(|c| c.is_closed()) {
            self.client = Some(db::connect(&config.postgres_url)?);
        }
        let Some(client) = self.client.as_mut() else {
            return Ok(());
        };
        let sent = Instant::now();
        let held = db::renew(
            client,
            &config.node_id,
            &config.advertise,
            config.lease_ms(),
        )?;
        let deadline = sent + config.lease.saturating_sub(MARGIN);
        let nodes = db::nodes(client)?;
        let lost = {
            let mut state = lock(&inner.state);
            let lost = renewed(&mut state.owned, held, sent);
            state.nodes = nodes.into_iter().map(|n| (n.node.clone(), n)).collect();
            state.deadline = Some(deadline);
            lost
        };
        for (id, epoch) in lost {
            tracing::warn!(session = %id, epoch, "lease lost to another node: the local copy is set aside");
            self.cluster.set_aside(&id, epoch);
        }
        self.since_sweep += 1;
        if self.since_sweep >= SWEEP_TICKS {
            self.since_sweep = 0;
            self.sweep()?;
        }
        // Claims only after a whole lease of renewals: after PostgreSQL
        // or this node was away, every live owner has renewed by then.
        let since = *self.connected_since.get_or_insert(sent);
        if since.elapsed() < config.lease {
            return Ok(());
        }
        self.claim_orphans()
    }

    fn claim_orphans(&mut self) -> Result<(), ClusterError> {
        let inner = &self.cluster.inner;
        let config = &inner.config;
        let Some(client) = self.client.as_mut() else {
            return Ok(());
        };
        let grace = MARGIN.as_millis() as i64;
        for row in db::orphans(client, &config.node_id, grace, CLAIMS_PER_TICK)? {
            let mut except = vec![row.node.clone()];
            except.push(config.node_id.clone());
            // The old second replica first (it has most of the history),
            // then the next live node.
            let mut replicas: Vec<String> = row
                .replicas
                .iter()
                .skip(1)
                .filter(|n| self.cluster.is_live(n))
                .cloned()
                .collect();
            except.extend(replicas.iter().cloned());
            replicas.extend(self.cluster.replicas_for(&row.session, &except));
            replicas.truncate(2);
            lock(&inner.moving).insert(row.session.clone());
            match db::take_over(
                client,
                &row,
                &config.node_id,
                config.lease_ms(),
                grace,
                &replicas,
            )? {
                Some(epoch) => {
                    tracing::info!(session = %row.session, from = %row.node, epoch, "taking over");
                    let claimed = LeaseRow {
                        session: row.session.clone(),
                        node: config.node_id.clone(),
                        epoch,
                        replicas,
                    };
                    self.cluster.own(&claimed);
                    let _ = self.takeovers.send(claimed);
                }
                None => {
                    lock(&inner.moving).remove(&row.session);
                }
            }
        }
        Ok(())
    }
}

/// The leases this node holds after a renewal sent at `sent` answered
/// `held`, and those it lost (with their epochs). A claim made while the
/// renewal was on its way is not in its answer but is not lost: it stays
/// (forgotten, it would never be set aside if it were lost before the next
/// renewal).
fn renewed(
    owned: &mut HashMap<String, Owned>,
    held: Vec<LeaseRow>,
    sent: Instant,
) -> Vec<(String, i64)> {
    let mut now: HashMap<String, Owned> = held
        .into_iter()
        .map(|r| {
            let o = Owned {
                epoch: r.epoch,
                replicas: r.replicas,
                since: sent,
            };
            (r.session, o)
        })
        .collect();
    let mut lost = Vec::new();
    for (id, o) in owned.drain() {
        if now.contains_key(&id) {
            continue;
        }
        if o.since >= sent {
            now.insert(id, o);
        } else {
            lost.push((id, o.epoch));
        }
    }
    *owned = now;
    lost
}

impl Renewer {
    /// Leases this node held at two sweeps in a row for sessions its
    /// registry does not list (and that are not being taken over) go.
    fn sweep(&mut self) -> Result<(), ClusterError> {
        let inner = &self.cluster.inner;
        let unlisted: HashSet<String> = {
            let state = lock(&inner.state);
            let known = lock(&inner.known);
            let moving = lock(&inner.moving);
            state
                .owned
                .keys()
                .filter(|id| !known.contains(*id) && !moving.contains(*id))
                .cloned()
                .collect()
        };
        let stale: Vec<String> = unlisted.intersection(&self.unlisted).cloned().collect();
        self.unlisted = unlisted;
        let Some(client) = self.client.as_mut() else {
            return Ok(());
        };
        for id in stale {
            if inner.store.default_session_dir(&id).exists() {
                continue;
            }
            db::release(client, &id, &inner.config.node_id)?;
            lock(&inner.state).owned.remove(&id);
            self.unlisted.remove(&id);
            tracing::debug!(session = %id, "lease of a session never made released");
        }
        Ok(())
    }
}

impl Cluster {
    fn is_live(&self, node: &str) -> bool {
        lock(&self.inner.state)
            .nodes
            .get(node)
            .is_some_and(|n| n.live)
    }

    /// Pause between attempts of a takeover that failed.
    pub(super) fn retry_pause(&self) -> Duration {
        self.inner.config.lease / 5
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, epoch: i64) -> LeaseRow {
        LeaseRow {
            session: id.into(),
            node: "me".into(),
            epoch,
            replicas: vec!["b".into()],
        }
    }

    fn owned(epoch: i64, since: Instant) -> Owned {
        Owned {
            epoch,
            replicas: Vec::new(),
            since,
        }
    }

    #[test]
    fn a_claim_made_while_a_renewal_was_on_its_way_is_kept_and_lost_at_the_next() {
        let before = Instant::now();
        let sent = before + Duration::from_millis(10);
        let mut state: HashMap<String, Owned> = HashMap::new();
        state.insert("kept".into(), owned(1, before));
        state.insert("taken".into(), owned(1, before));
        // Claimed after the renewal was sent: its answer cannot list it.
        state.insert("new".into(), owned(1, sent + Duration::from_millis(1)));
        let lost = renewed(&mut state, vec![row("kept", 1)], sent);
        assert_eq!(lost, vec![("taken".to_string(), 1)]);
        assert!(state.contains_key("kept") && state.contains_key("new"));
        assert!(!state.contains_key("taken"));
        // Taken by another node before the next renewal: lost then.
        let next = sent + Duration::from_millis(500);
        let lost = renewed(&mut state, vec![row("kept", 1)], next);
        assert_eq!(lost, vec![("new".to_string(), 1)]);
        assert_eq!(state.keys().collect::<Vec<_>>(), vec!["kept"]);
        assert_eq!(state["kept"].since, next);
    }
}
