//! Several nodes sharing the sessions (docs/CLUSTER.md): leases with an
//! epoch in PostgreSQL (`db`, renewed by `lease`), a replica push before
//! an end of turn is acknowledged (`replicate`, `wire`, `replica`), takeover of a dead
//! node's sessions by their first replica (`takeover`). The service
//! forwards requests for sessions this node does not own (`place`).

mod db;
pub mod error;
mod events;
mod lease;
pub mod replica;
mod replica_packs;
mod replicate;
mod ring;
mod rows;
mod takeover;
#[cfg(test)]
mod tests;
pub mod wire;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use git2::Oid;
use serde::Serialize;

pub use db::{LeaseRow, NodeRow};
pub use error::ClusterError;
pub use takeover::Adoption;

use crate::replication::SessionLocks;
use crate::store::Store;
use replica::Replicas;

/// The cluster's folder in the state directory.
pub const DIR: &str = "cluster";

/// The stretch of a lease a node does not use: it stops acknowledging this
/// long before PostgreSQL's lease end (clock-rate drift, the renewal's
/// round trip), and others claim only this long after it.
pub const MARGIN: Duration = Duration::from_secs(1);

/// `[cluster]`.
#[derive(Debug, Clone, Default)]
pub struct ClusterConfig {
    /// libpq-style connection string (`host=… user=… dbname=…`) or URL.
    pub postgres_url: String,
    /// This node's name (letters, digits, `-`, `_`).
    pub node_id: String,
    /// Where the other nodes reach this one (`http://host:port`).
    pub advertise: String,
    /// Length of a lease.
    pub lease: Duration,
    /// Sent as `Authorization: Bearer …` to the other nodes (the shared
    /// `server.token`).
    pub token: Option<String>,
}

impl ClusterConfig {
    pub fn check(&self) -> Result<(), String> {
        if self.postgres_url.trim().is_empty() {
            return Err("cluster.postgres_url is required".into());
        }
        crate::ids::validate("cluster.node_id", &self.node_id).map_err(|e| e.to_string())?;
        if !(self.advertise.starts_with("http://") || self.advertise.starts_with("https://")) {
            return Err("cluster.advertise must be an http:// or https:// URL".into());
        }
        if self.lease < Duration::from_secs(3) {
            return Err("cluster.lease_ms must be at least 3000".into());
        }
        Ok(())
    }

    fn lease_ms(&self) -> i64 {
        self.lease.as_millis() as i64
    }
}

/// Where a request for a session is served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// Here (this node owns it, or nobody does and it is not here either).
    Local,
    /// At another node (its advertise URL).
    Forward { node: String, url: String },
    /// Being taken over: retry shortly.
    Moving,
}

/// Branches and their tips.
type Tips = Vec<(String, Oid)>;

/// What a replica acknowledged: the tips, and the `meta.json` sent.
type Acked = (Tips, Option<serde_json::Value>);

/// A session this node owns.
#[derive(Debug, Clone)]
struct Owned {
    epoch: i64,
    replicas: Vec<String>,
    /// When this node learned it holds the lease (a renewal's answer, a
    /// claim): a renewal sent before it cannot list it.
    since: Instant,
}

#[derive(Default)]
struct State {
    owned: HashMap<String, Owned>,
    nodes: BTreeMap<String, NodeRow>,
    /// Until when this node may acknowledge writes (monotonic).
    deadline: Option<Instant>,
}

/// The cluster as a node sees it; cheap to clone.
#[derive(Clone)]
pub struct Cluster {
    inner: Arc<Inner>,
}

struct Inner {
    config: ClusterConfig,
    store: Store,
    state: Mutex<State>,
    /// The request path's connection (lookups, claims, replica order).
    db: Mutex<Option<postgres::Client>>,
    replicas: Replicas,
    /// Per (session, replica node): the tips that replica acknowledged.
    /// (and the `meta.json` it was sent last).
    acked: Mutex<HashMap<(String, String), Acked>>,
    /// One push of a session at a time.
    pushing: SessionLocks,
    /// Sessions being taken over (claimed, not yet served).
    moving: Mutex<HashSet<String>>,
    agent: ureq::Agent,
    stop: AtomicBool,
    adoptions: Mutex<Option<tokio::sync::mpsc::UnboundedSender<Adoption>>>,
    copies: crossbeam_channel::Sender<(String, String)>,
    /// Third copies queued and not pushed yet: a session is queued once
    /// however many turns it makes meanwhile (the push sends them all).
    queued_copies: Mutex<HashSet<(String, String)>>,
    /// The sessions this node's registry lists (kept by the row writer).
    known: Mutex<HashSet<String>>,
}

/// What `GET /cluster/v1/status` shows.
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    pub node_id: String,
    pub advertise: String,
    pub owned: usize,
    /// Seconds this node may still acknowledge writes (0 when expired).
    pub lease_left_s: f64,
    pub nodes: Vec<NodeView>,
    pub moving: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct NodeView {
    pub node_id: String,
    pub advertise: String,
    pub live: bool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Cluster {
    /// Connect, migrate the schema, renew once (so what this node owns is
    /// known before it serves), then start the lease and copy threads.
    /// Takeovers wait for `adoptions` to be taken by the engine.
    /// (PostgreSQL's client runs its own runtime: this runs on a thread of
    /// its own, never on an async runtime's thread.)
    pub fn start(config: ClusterConfig, store: Store) -> Result<Cluster, ClusterError> {
        std::thread::scope(|s| {
            s.spawn(move || Self::start_here(config, store))
                .join()
                .unwrap_or_else(|_| Err(ClusterError::Local("the cluster start panicked".into())))
        })
    }

    fn start_here(config: ClusterConfig, store: Store) -> Result<Cluster, ClusterError> {
        config.check().map_err(ClusterError::Local)?;
        let mut client = db::connect(&config.postgres_url)?;
        let version = db::migrate(&mut client)?;
        let root = store.state_dir().join(DIR);
        crate::fsio::create_private_dir_all(&root.join("replicas"))?;
        let (copies, copies_rx) = crossbeam_channel::unbounded();
        let agent = ureq::AgentBuilder::new()
            .timeout_connect(Duration::from_secs(2))
            .timeout(Duration::from_secs(30))
            .build();
        let cluster = Cluster {
            inner: Arc::new(Inner {
                replicas: Replicas::new(root.join("replicas")),
                config,
                store,
                state: Mutex::new(State::default()),
                db: Mutex::new(None),
                acked: Mutex::new(HashMap::new()),
                pushing: SessionLocks::default(),
                moving: Mutex::new(HashSet::new()),
                agent,
                stop: AtomicBool::new(false),
                adoptions: Mutex::new(None),
                copies,
                queued_copies: Mutex::new(HashSet::new()),
                known: Mutex::new(HashSet::new()),
            }),
        };
        let mut renewer = lease::Renewer::new(cluster.clone(), client);
        renewer.tick()?;
        tracing::info!(
            node = %cluster.inner.config.node_id,
            schema = version,
            owned = lock(&cluster.inner.state).owned.len(),
            "joined the cluster"
        );
        std::thread::Builder::new()
            .name("cluster-lease".into())
            .spawn(move || renewer.run())?;
        let copier = cluster.clone();
        std::thread::Builder::new()
            .name("cluster-copies".into())
            .spawn(move || copier.copy_loop(copies_rx))?;
        Ok(cluster)
    }

    /// The channel takeovers and set-asides are sent on (the engine takes
    /// it once, when it attaches the cluster).
    pub fn adoptions(&self) -> tokio::sync::mpsc::UnboundedReceiver<Adoption> {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        *lock(&self.inner.adoptions) = Some(tx);
        rx
    }

    pub fn node_id(&self) -> &str {
        &self.inner.config.node_id
    }

    pub fn stop(&self) {
        self.inner.stop.store(true, Ordering::Relaxed);
    }

    /// Whether this node may acknowledge writes now.
    pub fn lease_ok(&self) -> bool {
        lock(&self.inner.state)
            .deadline
            .is_some_and(|d| Instant::now() < d)
    }

    /// Where a request for session `id` is served, without blocking when
    /// this node owns it (None: ask `place`, which may query PostgreSQL).
    pub fn place_fast(&self, id: &str) -> Option<Place> {
        if lock(&self.inner.moving).contains(id) {
            return Some(Place::Moving);
        }
        lock(&self.inner.state)
            .owned
            .contains_key(id)
            .then_some(Place::Local)
    }

    /// Where a read of session `id` is served (blocking: one lookup). A
    /// session without a lease that is on this node's disk is claimed; one
    /// that is nowhere is read here (and not found).
    pub fn place(&self, id: &str) -> Result<Place, ClusterError> {
        self.place_with(id, false)
    }

    /// Where a write to session `id` is served: as `place`, and a session
    /// nobody holds yet is claimed by this node first, so two nodes never
    /// both create it.
    pub fn place_write(&self, id: &str) -> Result<Place, ClusterError> {
        self.place_with(id, true)
    }

    fn place_with(&self, id: &str, write: bool) -> Result<Place, ClusterError> {
        if let Some(p) = self.place_fast(id) {
            return Ok(p);
        }
        let row = match self.with_db(|c| db::lease(c, id))? {
            Some(row) => row,
            None if write || self.inner.store.default_session_dir(id).exists() => {
                self.claim_local(id)?
            }
            None => return Ok(Place::Local),
        };
        if row.node == self.inner.config.node_id {
            // Ours since the last renewal (a takeover not yet served).
            return Ok(if lock(&self.inner.moving).contains(id) {
                Place::Moving
            } else {
                Place::Local
            });
        }
        let url = lock(&self.inner.state)
            .nodes
            .get(&row.node)
            .map(|n| n.advertise.clone());
        match url {
            Some(url) => Ok(Place::Forward {
                node: row.node,
                url,
            }),
            None => Ok(Place::Moving),
        }
    }

    /// A session on this disk that no node holds becomes this node's.
    fn claim_local(&self, id: &str) -> Result<LeaseRow, ClusterError> {
        let replicas = self.replicas_for(id, &[]);
        let row = self.with_db(|c| {
            db::claim_new(
                c,
                id,
                &self.inner.config.node_id,
                self.inner.config.lease_ms(),
                &replicas,
            )
        })?;
        if row.node == self.inner.config.node_id {
            self.own(&row);
        }
        Ok(row)
    }

    fn own(&self, row: &LeaseRow) {
        lock(&self.inner.state).owned.insert(
            row.session.clone(),
            Owned {
                epoch: row.epoch,
                replicas: row.replicas.clone(),
                since: Instant::now(),
            },
        );
    }

    /// Up to two live nodes other than this one (and `except`), in the
    /// order of a hash of the session id.
    fn replicas_for(&self, id: &str, except: &[String]) -> Vec<String> {
        let state = lock(&self.inner.state);
        let live: Vec<&str> = state
            .nodes
            .values()
            .filter(|n| n.live && n.node != self.inner.config.node_id)
            .filter(|n| !except.contains(&n.node))
            .map(|n| n.node.as_str())
            .collect();
        ring::ranked(id, &live).into_iter().take(2).collect()
    }

    /// Run `f` on the request path's connection (connecting again after
    /// an error).
    fn with_db<T>(
        &self,
        f: impl FnOnce(&mut postgres::Client) -> Result<T, ClusterError>,
    ) -> Result<T, ClusterError> {
        let mut slot = lock(&self.inner.db);
        if slot.as_ref().is_none_or(|c| c.is_closed()) {
            *slot = Some(db::connect(&self.inner.config.postgres_url)?);
        }
        let client = slot
            .as_mut()
            .ok_or_else(|| ClusterError::Database("no connection".into()))?;
        let out = f(client);
        if matches!(out, Err(ClusterError::Database(_))) {
            *slot = None;
        }
        out
    }

    pub fn status(&self) -> Status {
        let state = lock(&self.inner.state);
        Status {
            node_id: self.inner.config.node_id.clone(),
            advertise: self.inner.config.advertise.clone(),
            owned: state.owned.len(),
            lease_left_s: state.deadline.map_or(0.0, |d| {
                d.saturating_duration_since(Instant::now()).as_secs_f64()
            }),
            nodes: state
                .nodes
                .values()
                .map(|n| NodeView {
                    node_id: n.node.clone(),
                    advertise: n.advertise.clone(),
                    live: n.live,
                })
                .collect(),
            moving: lock(&self.inner.moving).len(),
        }
    }

    /// The token this node sends to the others.
    pub fn token(&self) -> Option<&str> {
        self.inner.config.token.as_deref()
    }
}
