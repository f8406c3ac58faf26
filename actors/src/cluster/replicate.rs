//! The owner's side of replication between nodes: a created session's
//! lease and first push, the push to the first reachable replica before
//! an acknowledgement (and the replica order rewritten when it is not the
//! first), the third copy in the background, a deleted session's lease and
//! copies; and the replica side's entry point.

use std::path::Path;
use std::sync::atomic::Ordering;

use super::wire::Push;
use super::{db, lock, Cluster, ClusterError, Owned};

impl Cluster {
    /// A session made on this node: its lease (epoch 1) and its first
    /// replica push, before its creation is acknowledged.
    pub fn created(&self, id: &str, dir: &Path) -> Result<(), ClusterError> {
        if !self.lease_ok() {
            return Err(ClusterError::LeaseExpired);
        }
        let row = self.claim_local(id)?;
        if row.node != self.inner.config.node_id {
            return Err(ClusterError::Moving(id.to_string()));
        }
        self.replicate(id, dir)
    }

    /// Before an end of turn is acknowledged: the first reachable replica
    /// has the session's branches, and this node still holds its lease.
    pub fn replicate(&self, id: &str, dir: &Path) -> Result<(), ClusterError> {
        let _held = self.inner.pushing.hold(id);
        if lock(&self.inner.moving).contains(id) {
            return Err(ClusterError::Moving(id.to_string()));
        }
        let owned = lock(&self.inner.state).owned.get(id).cloned();
        let owned = match owned {
            Some(owned) => owned,
            // Made before it had a lease (a session created by its first
            // message): it is claimed now.
            None => {
                let row = self.claim_local(id)?;
                if row.node != self.inner.config.node_id {
                    return Err(ClusterError::Moving(id.to_string()));
                }
                Owned {
                    epoch: row.epoch,
                    replicas: row.replicas,
                    since: std::time::Instant::now(),
                }
            }
        };
        if !self.lease_ok() {
            return Err(ClusterError::LeaseExpired);
        }
        let mut failures = Vec::new();
        // The listed replicas first, then live nodes not listed when the
        // list is short (a takeover while the other nodes were down leaves
        // it so): a session never stays without two copies once nodes are
        // back.
        let mut candidates = owned.replicas.clone();
        if candidates.len() < 2 {
            let mut except = candidates.clone();
            except.push(self.inner.config.node_id.clone());
            candidates.extend(self.replicas_for(id, &except));
        }
        for node in &candidates {
            match self.push_to(id, dir, node, owned.epoch) {
                Ok(()) => {
                    let order = first_then(node, &candidates);
                    if order != owned.replicas {
                        self.reorder(id, &owned, order.clone())?;
                    }
                    for other in order.iter().filter(|n| *n != node) {
                        let key = (id.to_string(), other.clone());
                        if lock(&self.inner.queued_copies).insert(key.clone()) {
                            let _ = self.inner.copies.send(key);
                        }
                    }
                    if !self.lease_ok() {
                        return Err(ClusterError::LeaseExpired);
                    }
                    return Ok(());
                }
                Err(ClusterError::StaleEpoch { .. }) => {
                    lock(&self.inner.state).owned.remove(id);
                    return Err(ClusterError::Moving(id.to_string()));
                }
                Err(e) => failures.push(format!("{node}: {e}")),
            }
        }
        if candidates.is_empty() {
            failures.push("no other live node".into());
        }
        Err(ClusterError::ReplicaUnavailable(failures.join("; ")))
    }

    /// A node took a push that the first replica did not (or the list was
    /// short): the new `order`, with that node first, goes to PostgreSQL
    /// before the turn is acknowledged.
    fn reorder(&self, id: &str, owned: &Owned, order: Vec<String>) -> Result<(), ClusterError> {
        let me = &self.inner.config.node_id;
        if !self.with_db(|c| db::set_replicas(c, id, me, owned.epoch, &order))? {
            lock(&self.inner.state).owned.remove(id);
            return Err(ClusterError::Moving(id.to_string()));
        }
        if let Some(o) = lock(&self.inner.state).owned.get_mut(id) {
            o.replicas = order;
        }
        Ok(())
    }

    /// Push the session to one replica node (everything, when it says it
    /// lacks a base).
    fn push_to(&self, id: &str, dir: &Path, node: &str, epoch: i64) -> Result<(), ClusterError> {
        let key = (id.to_string(), node.to_string());
        let (known, meta) = lock(&self.inner.acked)
            .get(&key)
            .cloned()
            .unwrap_or_default();
        let me = &self.inner.config.node_id;
        let push = Push::build_with_meta(dir, epoch, me, &known, meta.as_ref())?;
        match self.send_push(id, node, epoch, push) {
            Err(ClusterError::ReplicaBehind) if !known.is_empty() => {
                let whole = Push::build_with_meta(dir, epoch, me, &[], None)?;
                self.send_push(id, node, epoch, whole)
            }
            other => other,
        }
    }

    /// Send `push` (none: the replica has everything) to `node`.
    fn send_push(
        &self,
        id: &str,
        node: &str,
        epoch: i64,
        push: Option<Push>,
    ) -> Result<(), ClusterError> {
        let me = &self.inner.config.node_id;
        let Some(push) = push else {
            return Ok(());
        };
        let url = lock(&self.inner.state)
            .nodes
            .get(node)
            .map(|n| {
                format!(
                    "{}/cluster/v1/replicas/{id}",
                    n.advertise.trim_end_matches('/')
                )
            })
            .ok_or_else(|| ClusterError::ReplicaUnavailable(format!("unknown node {node}")))?;
        let body = push.encode()?;
        let mut req = self
            .inner
            .agent
            .post(&url)
            .set("Content-Type", "application/octet-stream")
            .set("X-OpenProgram-Node", me);
        if let Some(t) = &self.inner.config.token {
            req = req.set("Authorization", &format!("Bearer {t}"));
        }
        match req.send_bytes(&body) {
            Ok(_) => {
                lock(&self.inner.acked).insert(
                    (id.to_string(), node.to_string()),
                    (push.tips(), push.header.meta.clone()),
                );
                Ok(())
            }
            Err(ureq::Error::Status(409, resp)) => {
                let v: serde_json::Value = resp.into_json().unwrap_or_default();
                match v["code"].as_str() {
                    Some("replica_behind") => Err(ClusterError::ReplicaBehind),
                    _ => Err(ClusterError::StaleEpoch {
                        got: epoch,
                        seen: v["seen"].as_i64().unwrap_or_default(),
                    }),
                }
            }
            Err(ureq::Error::Status(code, resp)) => Err(ClusterError::ReplicaUnavailable(format!(
                "{node} answered {code}: {}",
                resp.into_string().unwrap_or_default()
            ))),
            Err(e) => Err(ClusterError::ReplicaUnavailable(format!("{node}: {e}"))),
        }
    }

    /// After a purge rewrote the session's history: every replica gets the
    /// rewritten branches whole and drops every object they no longer
    /// reach. The nodes that could not take it, with why.
    pub fn replicate_purged(&self, id: &str, dir: &Path) -> Vec<String> {
        let _held = self.inner.pushing.hold(id);
        let Some(owned) = lock(&self.inner.state).owned.get(id).cloned() else {
            return Vec::new();
        };
        let mut failed = Vec::new();
        let me = &self.inner.config.node_id;
        for node in &owned.replicas {
            let sent = Push::build_with_meta(dir, owned.epoch, me, &[], None).and_then(|push| {
                let push = push.map(|mut p| {
                    p.header.purged = true;
                    p
                });
                self.send_push(id, node, owned.epoch, push)
            });
            if let Err(e) = sent {
                failed.push(format!("{node}: {e}"));
            }
        }
        failed
    }

    /// The third copy: pushed after the acknowledgement, best effort.
    pub(super) fn copy_loop(&self, rx: crossbeam_channel::Receiver<(String, String)>) {
        while let Ok((id, node)) = rx.recv() {
            if self.inner.stop.load(Ordering::Relaxed) {
                return;
            }
            lock(&self.inner.queued_copies).remove(&(id.clone(), node.clone()));
            let _held = self.inner.pushing.hold(&id);
            let Some(epoch) = lock(&self.inner.state).owned.get(&id).map(|o| o.epoch) else {
                continue;
            };
            let dir = self.inner.store.default_session_dir(&id);
            if let Err(e) = self.push_to(&id, &dir, &node, epoch) {
                tracing::debug!(session = %id, node = %node, error = %e, "third copy not pushed");
            }
        }
    }

    /// A push from the owner of `id` (the replica side).
    pub fn receive(&self, id: &str, body: &[u8]) -> Result<usize, ClusterError> {
        let push = Push::decode(body)?;
        if lock(&self.inner.state).owned.contains_key(id) {
            // This node owns it now: whoever pushes lost it.
            let epoch = lock(&self.inner.state).owned.get(id).map_or(0, |o| o.epoch);
            if push.header.epoch <= epoch {
                return Err(ClusterError::StaleEpoch {
                    got: push.header.epoch,
                    seen: epoch,
                });
            }
        }
        Ok(self.inner.replicas.receive(id, &push)?.len())
    }

    /// A deleted session: its lease goes, and its replicas' copies.
    pub fn deleted(&self, id: &str) -> Result<(), ClusterError> {
        let owned = lock(&self.inner.state).owned.remove(id);
        self.with_db(|c| db::release(c, id, &self.inner.config.node_id))?;
        for node in owned.map(|o| o.replicas).unwrap_or_default() {
            let url = lock(&self.inner.state).nodes.get(&node).map(|n| {
                format!(
                    "{}/cluster/v1/replicas/{id}",
                    n.advertise.trim_end_matches('/')
                )
            });
            if let Some(url) = url {
                let mut req = self.inner.agent.delete(&url);
                if let Some(t) = &self.inner.config.token {
                    req = req.set("Authorization", &format!("Bearer {t}"));
                }
                if let Err(e) = req.call() {
                    tracing::warn!(session = %id, node = %node, error = %e, "replica copy not deleted");
                }
            }
        }
        Ok(())
    }

    /// A replica copy deleted by its owner.
    pub fn drop_replica(&self, id: &str) -> Result<(), ClusterError> {
        self.inner.replicas.remove(id)
    }
}

/// The replica order once `node` took a push: it first, then the other
/// candidates in their order, two at most.
fn first_then(node: &str, candidates: &[String]) -> Vec<String> {
    let mut order = vec![node.to_string()];
    order.extend(candidates.iter().filter(|n| *n != node).cloned());
    order.truncate(2);
    order
}

#[cfg(test)]
mod tests {
    use super::first_then;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_node_that_took_the_push_goes_first_and_a_short_list_is_filled() {
        let listed = names(&["b", "c"]);
        assert_eq!(first_then("b", &listed), listed);
        assert_eq!(first_then("c", &listed), names(&["c", "b"]));
        // Taken over with one listed replica (down), a live node filled in.
        assert_eq!(
            first_then("d", &names(&["b", "d", "c"])),
            names(&["d", "b"])
        );
        // Taken over with none listed.
        assert_eq!(first_then("d", &names(&["d"])), names(&["d"]));
    }
}
