//! Provenance pointers resolved: a derived memory's pointer back to the
//! entity layer (spec 000 §5: project, session, node ids, commit, event
//! and ingestion time) answered with the nodes as that commit holds them
//! (read from git), the session's title and the project commit of that
//! turn. Every pointer gets its own status; none fails the others.

use serde::{Deserialize, Serialize};

use super::Engine;
use crate::ids;
use crate::node::Node;
use crate::session::provenance::GetNodesAt;

/// A pointer as a pipeline keeps it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Pointer {
    #[serde(default)]
    pub project_id: Option<String>,
    pub session_id: String,
    #[serde(default)]
    pub node_ids: Vec<String>,
    /// The turn commit the nodes were read at; none: as they are now.
    #[serde(default)]
    pub commit: Option<String>,
    #[serde(default)]
    pub event_time: Option<f64>,
    #[serde(default)]
    pub ingestion_time: Option<f64>,
}

/// What one pointer resolves to.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Resolved {
    /// `ok`; `node_not_in_commit` (some ids are not there: `missing`);
    /// `unknown_session` (never made, or deleted); `unknown_commit` (not a
    /// commit of that session); `invalid` (an id that cannot be one).
    pub status: &'static str,
    pub pointer: Pointer,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The session's project now (it may have moved since the pointer).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub committed_at: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project_commit: Option<String>,
    pub nodes: Vec<Node>,
    pub missing: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl Resolved {
    fn status(pointer: Pointer, status: &'static str, message: String) -> Resolved {
        Resolved {
            status,
            pointer,
            title: None,
            project_id: None,
            commit: None,
            turn: None,
            branch: None,
            committed_at: None,
            project_commit: None,
            nodes: Vec::new(),
            missing: Vec::new(),
            message: Some(message),
        }
    }
}

/// Pointers one request may resolve.
pub const MAX_POINTERS: usize = 1000;

impl Engine {
    /// Resolve each pointer (see the module's description).
    pub async fn resolve_provenance(&self, pointers: Vec<Pointer>) -> Vec<Resolved> {
        let mut out = Vec::with_capacity(pointers.len());
        for p in pointers {
            out.push(self.resolve_one(p).await);
        }
        out
    }

    async fn resolve_one(&self, p: Pointer) -> Resolved {
        if let Err(e) = ids::validate("session id", &p.session_id) {
            return Resolved::status(p, "invalid", e.to_string());
        }
        if let Some(bad) = p
            .node_ids
            .iter()
            .find(|i| ids::validate("node id", i).is_err())
        {
            let message = format!("'{bad}' cannot be a node id");
            return Resolved::status(p, "invalid", message);
        }
        let meta = match self.meta(&p.session_id).await {
            Ok(m) => m,
            Err(e) if e.is_unknown_session() => {
                let message = format!("no session '{}' (never made, or deleted)", p.session_id);
                return Resolved::status(p, "unknown_session", message);
            }
            Err(e) => return Resolved::status(p, "unavailable", e.to_string()),
        };
        let (at, now) = match &p.commit {
            Some(c) => {
                let msg = GetNodesAt {
                    commit: c.clone(),
                    ids: p.node_ids.clone(),
                };
                match self.call(&p.session_id, msg).await {
                    Ok(Some(at)) => (Some(at), None),
                    Ok(None) => {
                        let message =
                            format!("'{c}' is not a commit of session '{}'", p.session_id);
                        return Resolved::status(p, "unknown_commit", message);
                    }
                    Err(e) => return Resolved::status(p, "unavailable", e.to_string()),
                }
            }
            None => match self.nodes(&p.session_id).await {
                Ok(all) => (None, Some(all)),
                Err(e) => return Resolved::status(p, "unavailable", e.to_string()),
            },
        };
        let mut r = Resolved::status(p, "ok", String::new());
        r.message = None;
        r.title = Some(meta.title);
        r.project_id = Some(meta.project_id);
        match (at, now) {
            (Some(at), _) => {
                r.commit = Some(at.commit);
                r.turn = Some(at.turn);
                r.branch = at.branch;
                r.committed_at = Some(at.committed_at);
                r.project_commit = at.project_commit;
                r.nodes = at.nodes;
                r.missing = at.missing;
            }
            (None, Some(all)) => {
                let wanted = &r.pointer.node_ids;
                r.nodes = all.into_iter().filter(|n| wanted.contains(&n.id)).collect();
                r.missing = wanted
                    .iter()
                    .filter(|i| !r.nodes.iter().any(|n| &n.id == *i))
                    .cloned()
                    .collect();
            }
            (None, None) => {}
        }
        if !r.missing.is_empty() {
            r.status = "node_not_in_commit";
        }
        r
    }
}
