//! The lease thread: every `lease / 10` it renews this node's row and
//! every lease it holds in one statement each, takes the answer as what
//! this node owns, refreshes the node list, and claims the sessions whose
//! owner stopped renewing and whose first replica is this node.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::db::{self, LeaseRow};
use super::error::ClusterError;
use super::{lock, Cluster, Owned, MARGIN};

/// Threads making claimed sessions servable.
const TAKEOVER_THREADS: usize = 4;

/// Sessions claimed in one tick, at most.
const CLAIMS_PER_TICK: i64 = 256;

pub struct Renewer {
    cluster: Cluster,
    client: Option<postgres::Client>,
    takeovers: crossbeam_channel::Sender<LeaseRow>,
    /// Since when every renewal succeeded (None after a failure).
    connected_since: Option<Instant>,
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
        let inner = &self.cluster.inner;
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
            let owned: HashMap<String, Owned> = held
                .into_iter()
                .map(|r| {
                    (
                        r.session,
                        Owned {
                            epoch: r.epoch,
                            replicas: r.replicas,
                        },
                    )
                })
                .collect();
            let lost: Vec<(String, i64)> = state
                .owned
                .iter()
                .filter(|(id, _)| !owned.contains_key(*id))
                .map(|(id, o)| (id.clone(), o.epoch))
                .collect();
            state.owned = owned;
            state.nodes = nodes.into_iter().map(|n| (n.node.clone(), n)).collect();
            state.deadline = Some(deadline);
            state.renewed_at = Some(crate::meta::now());
            lost
        };
        for (id, epoch) in lost {
            tracing::warn!(session = %id, epoch, "lease lost to another node: the local copy is set aside");
            self.cluster.set_aside(&id, epoch);
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
