//! The cluster's statements against PostgreSQL: the schema's migrations,
//! node rows, lease rows. Every statement is one round trip; none holds a
//! transaction open across a network call to another node.

use postgres::{Client, NoTls};

use super::error::ClusterError;

/// The schema's migrations, in order; a migration is never edited once
/// released (a new one is added).
const MIGRATIONS: &[(i32, &str)] = &[
    (1, include_str!("migrations/0001_leases.sql")),
    (2, include_str!("migrations/0002_sessions.sql")),
];

/// Any fixed number: the advisory lock nodes take while migrating.
const MIGRATION_LOCK: i64 = 0x6f70_6d65_6d00;

/// A lease row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseRow {
    pub session: String,
    pub node: String,
    pub epoch: i64,
    pub replicas: Vec<String>,
}

/// A node row, with whether its lease runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeRow {
    pub node: String,
    pub advertise: String,
    pub live: bool,
}

pub fn connect(url: &str) -> Result<Client, ClusterError> {
    let mut config: postgres::Config = url
        .parse()
        .map_err(|e: postgres::Error| ClusterError::Database(e.to_string()))?;
    config.connect_timeout(std::time::Duration::from_secs(5));
    config.application_name("openprogram");
    Ok(config.connect(NoTls)?)
}

/// Apply the migrations this database lacks, under an advisory lock (nodes
/// starting together apply each once). The schema version after.
pub fn migrate(client: &mut Client) -> Result<i32, ClusterError> {
    client.execute("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK])?;
    let result = (|| {
        client.batch_execute(
            "CREATE TABLE IF NOT EXISTS cluster_schema (
                 version int PRIMARY KEY,
                 applied_at timestamptz NOT NULL DEFAULT now())",
        )?;
        let row = client.query_one("SELECT coalesce(max(version), 0) FROM cluster_schema", &[])?;
        let mut version: i32 = row.get(0);
        for (v, sql) in MIGRATIONS {
            if *v <= version {
                continue;
            }
            let mut tx = client.transaction()?;
            tx.batch_execute(sql)?;
            tx.execute("INSERT INTO cluster_schema (version) VALUES ($1)", &[v])?;
            tx.commit()?;
            tracing::info!(version = v, "cluster schema migrated");
            version = *v;
        }
        Ok::<i32, postgres::Error>(version)
    })();
    let unlocked = client.execute("SELECT pg_advisory_unlock($1)", &[&MIGRATION_LOCK]);
    let version = result?;
    unlocked?;
    Ok(version)
}

/// Renew this node's row and every lease it holds (one statement each);
/// the leases it holds after.
pub fn renew(
    client: &mut Client,
    node: &str,
    advertise: &str,
    lease_ms: i64,
) -> Result<Vec<LeaseRow>, ClusterError> {
    client.execute(
        "INSERT INTO cluster_nodes (node_id, advertise, lease_until)
         VALUES ($1, $2, now() + make_interval(secs => $3))
         ON CONFLICT (node_id) DO UPDATE
         SET advertise = excluded.advertise, lease_until = excluded.lease_until",
        &[&node, &advertise, &secs(lease_ms)],
    )?;
    let rows = client.query(
        "UPDATE cluster_leases SET expires_at = now() + make_interval(secs => $2)
         WHERE node_id = $1 RETURNING session_id, node_id, epoch, replicas",
        &[&node, &secs(lease_ms)],
    )?;
    Ok(rows.iter().map(lease_row).collect())
}

fn lease_row(r: &postgres::Row) -> LeaseRow {
    LeaseRow {
        session: r.get(0),
        node: r.get(1),
        epoch: r.get(2),
        replicas: r.get(3),
    }
}

pub fn nodes(client: &mut Client) -> Result<Vec<NodeRow>, ClusterError> {
    let rows = client.query(
        "SELECT node_id, advertise, lease_until > now() FROM cluster_nodes ORDER BY node_id",
        &[],
    )?;
    Ok(rows
        .iter()
        .map(|r| NodeRow {
            node: r.get(0),
            advertise: r.get(1),
            live: r.get(2),
        })
        .collect())
}

/// The lease of one session, if it has one.
pub fn lease(client: &mut Client, session: &str) -> Result<Option<LeaseRow>, ClusterError> {
    let row = client.query_opt(
        "SELECT session_id, node_id, epoch, replicas FROM cluster_leases WHERE session_id = $1",
        &[&session],
    )?;
    Ok(row.as_ref().map(lease_row))
}

/// A lease for a session nobody holds (epoch 1); the row as it is after
/// (another node's, if it was first).
pub fn claim_new(
    client: &mut Client,
    session: &str,
    node: &str,
    lease_ms: i64,
    replicas: &[String],
) -> Result<LeaseRow, ClusterError> {
    client.execute(
        "INSERT INTO cluster_leases (session_id, node_id, epoch, expires_at, replicas)
         VALUES ($1, $2, 1, now() + make_interval(secs => $3), $4)
         ON CONFLICT (session_id) DO NOTHING",
        &[&session, &node, &secs(lease_ms), &replicas],
    )?;
    lease(client, session)?.ok_or_else(|| ClusterError::Moving(session.to_string()))
}

/// Sessions whose lease ended more than `grace_ms` ago, whose owner's
/// node row has ended too, and whose first replica is `node`.
pub fn orphans(
    client: &mut Client,
    node: &str,
    grace_ms: i64,
    limit: i64,
) -> Result<Vec<LeaseRow>, ClusterError> {
    let rows = client.query(
        "SELECT session_id, node_id, epoch, replicas FROM cluster_leases
         WHERE replicas[1] = $1 AND node_id <> $1
           AND expires_at < now() - make_interval(secs => $2)
           AND NOT EXISTS (SELECT 1 FROM cluster_nodes n
                           WHERE n.node_id = cluster_leases.node_id AND n.lease_until > now())
         ORDER BY expires_at LIMIT $3",
        &[&node, &secs(grace_ms), &limit],
    )?;
    Ok(rows.iter().map(lease_row).collect())
}

/// Take over an orphaned session: one conditional statement (the epoch
/// seen, the lease still ended). The new epoch, or None when another node
/// moved first.
pub fn take_over(
    client: &mut Client,
    seen: &LeaseRow,
    node: &str,
    lease_ms: i64,
    grace_ms: i64,
    replicas: &[String],
) -> Result<Option<i64>, ClusterError> {
    let row = client.query_opt(
        "UPDATE cluster_leases
         SET node_id = $1, epoch = epoch + 1,
             expires_at = now() + make_interval(secs => $2), replicas = $3
         WHERE session_id = $4 AND epoch = $5
           AND expires_at < now() - make_interval(secs => $6)
         RETURNING epoch",
        &[
            &node,
            &secs(lease_ms),
            &replicas,
            &seen.session,
            &seen.epoch,
            &secs(grace_ms),
        ],
    )?;
    Ok(row.map(|r| r.get(0)))
}

/// Put a replica that has every acknowledged turn first (fenced by the
/// epoch and the owner). False when the row moved on.
pub fn set_replicas(
    client: &mut Client,
    session: &str,
    node: &str,
    epoch: i64,
    replicas: &[String],
) -> Result<bool, ClusterError> {
    let n = client.execute(
        "UPDATE cluster_leases SET replicas = $1
         WHERE session_id = $2 AND node_id = $3 AND epoch = $4",
        &[&replicas, &session, &node, &epoch],
    )?;
    Ok(n == 1)
}

/// A deleted session's lease goes (only its owner's).
pub fn release(client: &mut Client, session: &str, node: &str) -> Result<(), ClusterError> {
    client.execute(
        "DELETE FROM cluster_leases WHERE session_id = $1 AND node_id = $2",
        &[&session, &node],
    )?;
    Ok(())
}

/// Milliseconds as the seconds `make_interval` takes.
fn secs(ms: i64) -> f64 {
    ms as f64 / 1000.0
}

/// Of `ids`, the sessions another node holds, with their epochs.
pub fn held_elsewhere(
    client: &mut Client,
    node: &str,
    ids: &[String],
) -> Result<Vec<(String, i64)>, ClusterError> {
    let rows = client.query(
        "SELECT session_id, epoch FROM cluster_leases
         WHERE session_id = ANY($1) AND node_id <> $2",
        &[&ids, &node],
    )?;
    Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
}
