//! One list for the cluster: every registry row in PostgreSQL
//! (`cluster_sessions`), written by the node that owns the session right
//! after each change, and listed by any node with the filters and the
//! order of one node's list (newest `updated_at` first, then id).
//!
//! A row is written only while no other node holds the session's lease,
//! so a node that lost a session (and sets its folder aside) neither
//! overwrites nor deletes the new owner's row.

use std::collections::HashMap;
use std::sync::Arc;

use postgres::types::ToSql;

use super::error::ClusterError;
use super::{db, lock, Cluster};
use crate::registry::actor::RowChange;
use crate::registry::{ListQuery, SessionRow};

/// Rows written in one transaction, at most.
const BATCH: usize = 256;

impl Cluster {
    /// The thread writing this node's row changes.
    pub fn share_rows(&self) -> std::io::Result<crossbeam_channel::Sender<RowChange>> {
        let (tx, rx) = crossbeam_channel::unbounded::<RowChange>();
        let me = self.clone();
        std::thread::Builder::new()
            .name("cluster-rows".into())
            .spawn(move || me.rows_loop(rx))?;
        Ok(tx)
    }

    fn rows_loop(&self, rx: crossbeam_channel::Receiver<RowChange>) {
        let mut client: Option<postgres::Client> = None;
        while let Ok(first) = rx.recv() {
            // The latest change of each row, in one transaction.
            let mut batch: HashMap<String, Option<Arc<SessionRow>>> = HashMap::new();
            batch.insert(first.0, first.1);
            while batch.len() < BATCH {
                match rx.try_recv() {
                    Ok((id, row)) => {
                        batch.insert(id, row);
                    }
                    Err(_) => break,
                }
            }
            {
                let mut known = lock(&self.inner.known);
                for (id, row) in &batch {
                    if row.is_some() {
                        known.insert(id.clone());
                    } else {
                        known.remove(id);
                    }
                }
            }
            loop {
                if client.as_ref().is_none_or(|c| c.is_closed()) {
                    client = db::connect(&self.inner.config.postgres_url).ok();
                }
                let written = match client.as_mut() {
                    Some(c) => write_rows(c, &self.inner.config.node_id, &batch),
                    None => Err(ClusterError::Database("not connected".into())),
                };
                match written {
                    Ok(()) => break,
                    Err(e) => {
                        tracing::warn!(error = %e, rows = batch.len(), "session rows not shared yet; retrying");
                        client = None;
                        std::thread::sleep(self.retry_pause());
                        // Later changes of the same rows replace these.
                        while let Ok((id, row)) = rx.try_recv() {
                            batch.insert(id, row);
                        }
                    }
                }
            }
        }
    }

    /// One page of the cluster's list, and how many rows match.
    pub fn list(&self, q: &ListQuery) -> Result<(usize, Vec<SessionRow>), ClusterError> {
        self.with_db(|c| list(c, q))
    }
}

fn write_rows(
    client: &mut postgres::Client,
    node: &str,
    batch: &HashMap<String, Option<Arc<SessionRow>>>,
) -> Result<(), ClusterError> {
    let mut tx = client.transaction()?;
    let upsert = tx.prepare(
        "INSERT INTO cluster_sessions (session_id, node_id, updated_us, archived, pinned, status,
             agent_id, source, channel, grp, project_id, row)
         SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12
         WHERE NOT EXISTS (SELECT 1 FROM cluster_leases l
                           WHERE l.session_id = $1 AND l.node_id <> $2)
         ON CONFLICT (session_id) DO UPDATE SET
             node_id = excluded.node_id, updated_us = excluded.updated_us,
             archived = excluded.archived, pinned = excluded.pinned,
             status = excluded.status, agent_id = excluded.agent_id,
             source = excluded.source, channel = excluded.channel, grp = excluded.grp,
             project_id = excluded.project_id, row = excluded.row",
    )?;
    let delete = tx.prepare(
        "DELETE FROM cluster_sessions WHERE session_id = $1
         AND NOT EXISTS (SELECT 1 FROM cluster_leases l
                         WHERE l.session_id = $1 AND l.node_id <> $2)",
    )?;
    for (id, row) in batch {
        match row {
            Some(r) => {
                let json =
                    serde_json::to_string(&**r).map_err(|e| ClusterError::Local(e.to_string()))?;
                let status = status_text(r);
                tx.execute(
                    &upsert,
                    &[
                        id,
                        &node,
                        &order_us(r.updated_at),
                        &r.archived,
                        &r.pinned,
                        &status,
                        &r.agent_id,
                        &r.source,
                        &r.channel,
                        &r.group,
                        &r.project_id,
                        &json,
                    ],
                )?;
            }
            None => {
                tx.execute(&delete, &[id, &node])?;
            }
        }
    }
    tx.commit()?;
    Ok(())
}

/// The list order's time key, as the registry computes it.
fn order_us(updated_at: f64) -> i64 {
    (updated_at * 1e6) as i64
}

fn status_text(r: &SessionRow) -> String {
    serde_json::to_value(r.status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn list(
    client: &mut postgres::Client,
    q: &ListQuery,
) -> Result<(usize, Vec<SessionRow>), ClusterError> {
    let mut clauses: Vec<String> = Vec::new();
    let mut params: Vec<Box<dyn ToSql + Sync>> = Vec::new();
    let mut add = |column: &str, value: Box<dyn ToSql + Sync>| {
        params.push(value);
        clauses.push(format!("{column} = ${}", params.len()));
    };
    match q.archived {
        Some(a) => add("archived", Box::new(a)),
        None if !q.include_archived => add("archived", Box::new(false)),
        None => {}
    }
    if let Some(v) = &q.agent_id {
        add("agent_id", Box::new(v.clone()));
    }
    if let Some(v) = &q.source {
        add("source", Box::new(v.clone()));
    }
    if let Some(v) = &q.channel {
        add("channel", Box::new(v.clone()));
    }
    if let Some(v) = q.status {
        let text = serde_json::to_value(v)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        add("status", Box::new(text));
    }
    if let Some(v) = q.pinned {
        add("pinned", Box::new(v));
    }
    if let Some(v) = &q.group {
        add("grp", Box::new(v.clone()));
    }
    if let Some(v) = &q.project_id {
        add("project_id", Box::new(v.clone()));
    }
    let filter = if clauses.is_empty() {
        String::new()
    } else {
        format!("WHERE {}", clauses.join(" AND "))
    };
    let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| &**p).collect();
    let total: i64 = client
        .query_one(
            &format!("SELECT count(*) FROM cluster_sessions {filter}"),
            &refs,
        )?
        .get(0);
    let (offset, limit) = (q.offset as i64, q.limit() as i64);
    let rows = client.query(
        &format!(
            "SELECT row FROM cluster_sessions {filter}
             ORDER BY updated_us DESC, session_id COLLATE \"C\" ASC OFFSET {offset} LIMIT {limit}"
        ),
        &refs,
    )?;
    let mut out = Vec::with_capacity(rows.len());
    for r in rows {
        let text: String = r.get(0);
        let row: SessionRow =
            serde_json::from_str(&text).map_err(|e| ClusterError::Local(e.to_string()))?;
        out.push(row);
    }
    Ok((total.max(0) as usize, out))
}
