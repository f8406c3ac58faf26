//! Nodes as a commit of the session holds them: what a provenance pointer
//! names is read from git, so a later fill, a branch switch or a replay
//! cannot change the answer.

use std::collections::HashSet;
use std::path::Path;

use actix::prelude::*;
use serde::Serialize;

use super::actor::SessionActor;
use super::core::SessionCore;
use super::error::SessionError;
use super::layout::{self, HISTORY};
use crate::git::{self, Trailers};
use crate::node::Node;

/// A commit of the session and the nodes asked for that it holds.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AtCommit {
    pub commit: String,
    pub turn: u64,
    pub branch: Option<String>,
    pub committed_at: i64,
    /// The agent's commit in the bound project for that turn.
    pub project_commit: Option<String>,
    pub nodes: Vec<Node>,
    /// Ids asked for that the commit does not hold.
    pub missing: Vec<String>,
}

impl SessionCore {
    /// The nodes `ids` as commit `commit` (a sha or a prefix of 7 or more)
    /// holds them; `None` when the commit is not one of this session's
    /// (not in its repository, or on none of its branches).
    pub fn nodes_at(&self, commit: &str, ids: &[String]) -> Result<Option<AtCommit>, SessionError> {
        if commit.len() < 7 || !commit.chars().all(|c| c.is_ascii_hexdigit()) {
            return Ok(None);
        }
        let Ok(c) = self
            .repo
            .revparse_single(commit)
            .and_then(|o| o.peel_to_commit())
        else {
            return Ok(None);
        };
        let on_a_branch = git::list_branches(&self.repo)?.iter().any(|tip| {
            tip.oid == c.id()
                || self
                    .repo
                    .graph_descendant_of(tip.oid, c.id())
                    .unwrap_or(false)
        });
        if !on_a_branch {
            return Ok(None);
        }
        let wanted: HashSet<&str> = ids.iter().map(String::as_str).collect();
        let tree = c.tree()?;
        let mut nodes = Vec::new();
        for (path, oid) in
            git::blobs_under(&self.repo, &tree, Path::new(HISTORY), &mut HashSet::new())?
        {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let Some((_, _, id)) = layout::parse_node_file_name(name) else {
                continue;
            };
            if !wanted.contains(id.as_str()) {
                continue;
            }
            let blob = self.repo.find_blob(oid)?;
            if let Ok(node) = serde_json::from_slice::<Node>(blob.content()) {
                nodes.push(node);
            }
        }
        nodes.sort_by_key(|n| n.seq);
        let found: HashSet<&str> = nodes.iter().map(|n| n.id.as_str()).collect();
        let missing = ids
            .iter()
            .filter(|i| !found.contains(i.as_str()))
            .cloned()
            .collect();
        let message = c.message().unwrap_or("");
        let trailers = Trailers::parse(message);
        Ok(Some(AtCommit {
            commit: c.id().to_string(),
            turn: trailers.turn,
            branch: trailers.branch,
            committed_at: c.time().seconds(),
            project_commit: trailers.project_commit,
            nodes,
            missing,
        }))
    }
}

/// `SessionCore::nodes_at` through the session's actor.
#[derive(Message, Clone)]
#[rtype(result = "Result<Option<AtCommit>, SessionError>")]
pub struct GetNodesAt {
    pub commit: String,
    pub ids: Vec<String>,
}

impl Handler<GetNodesAt> for SessionActor {
    type Result = AtomicResponse<Self, Result<Option<AtCommit>, SessionError>>;

    fn handle(&mut self, msg: GetNodesAt, _: &mut Self::Context) -> Self::Result {
        AtomicResponse::new(self.on_core(move |core| core.nodes_at(&msg.commit, &msg.ids)))
    }
}
