//! Retry branches, head switches and replay: the DAG's branches mapped onto
//! git branches (spec 001 §2.3–2.4, §5 invariant 4).
//!
//! - Every turn commit's tree holds exactly the nodes of its path (plus
//!   `meta.json` of that moment), so `git checkout <sha>` shows that turn.
//! - A turn that continues the tip of the current branch commits on it. A
//!   turn that starts anywhere else (a retried answer, a message sent while
//!   replaying an old turn, a message after switching the head to an older
//!   node) commits on a new branch that starts at the commit holding its
//!   starting point: `retry-<assistant id>` or `replay-<user message id>`.
//!   Nothing is ever rewritten; `main` stays the original line.
//! - The work tree holds the current branch; the nodes of the other
//!   branches are read from their commits.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use git2::Oid;
use serde::{Deserialize, Serialize};

use super::core::SessionCore;
use super::error::SessionError;
use super::graph::Graph;
use super::layout::{self, META};
use super::node_index::NodeRef;
use crate::git::{self, BranchTip};
use crate::meta::View;
use crate::node::{Node, Role};

/// Folders of a session's work tree that follow the current branch.
const TRACKED_DIRS: [&str; 2] = [layout::HISTORY, layout::CONTEXT_COMMITS];

/// One branch of the session (`GET /branches`).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BranchInfo {
    pub name: String,
    pub commit: String,
    pub short_sha: String,
    /// The node the branch's last turn ended on.
    pub head_node: Option<String>,
    /// Turns on the branch's path.
    pub turns: u64,
    pub current: bool,
    pub updated_at: i64,
}

/// One commit of the session's timeline (`GET /history`).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct HistoryRow {
    pub sha: String,
    pub short_sha: String,
    pub turn: u64,
    pub branch: String,
    pub summary: String,
    pub message: String,
    pub timestamp: i64,
    pub parent: Option<String>,
    pub head_node: Option<String>,
    /// On the path of the current head (what prev / next step along).
    pub on_current_path: bool,
}

/// Where the conversation stands: "turn 7 of 12" on a branch.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Position {
    /// The commit shown (null before the first turn).
    pub commit: Option<String>,
    pub turn: u64,
    pub of: u64,
    pub branch: String,
    /// True at the branch tip that new messages continue; false while
    /// replaying an older turn.
    pub live: bool,
    pub prev: Option<String>,
    pub next: Option<String>,
    pub head: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct History {
    pub branch: String,
    pub position: Position,
    /// Every commit of every branch, newest first.
    pub commits: Vec<HistoryRow>,
}

/// A replay view or a switch result: the position and what it shows.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Shown {
    #[serde(flatten)]
    pub position: Position,
    /// The rendered conversation at that point.
    pub messages: Vec<Node>,
}

/// `POST /checkout`: exactly one of the fields.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CheckoutTo {
    #[serde(default)]
    pub commit: Option<String>,
    #[serde(default)]
    pub turn: Option<u64>,
    #[serde(default)]
    pub step: Option<Step>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum Step {
    Prev,
    Next,
    Latest,
}

/// `POST /switch`: exactly one of the fields.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SwitchTo {
    #[serde(default)]
    pub node_id: Option<String>,
    #[serde(default)]
    pub branch: Option<String>,
}

impl SessionCore {
    // ----- placing a turn ------------------------------------------------

    /// Put HEAD on the branch the turn opened by `opener_id` commits to.
    /// Idempotent (the crash repair calls it again).
    pub(super) fn place_turn(&mut self, opener_id: &str) -> Result<(), SessionError> {
        let opener = self
            .node(opener_id)
            .ok_or_else(|| SessionError::UnknownNode(opener_id.to_string()))?;
        let start = opener.predecessor_id().map(str::to_string);
        let (role, seq, id) = (opener.role(), opener.seq(), opener.id().to_string());
        // The common case, cheaply: the turn continues the branch's tip
        // (read from the refs and the commit this session made last,
        // kept in memory: no object lookup, which would make libgit2
        // rescan `objects/pack` for the pack the last commit wrote).
        let tip = self.head_tip()?;
        let tip_head = self.trailers_at(tip)?.head_node;
        if tip_head == start {
            return Ok(());
        }
        let base = self.commit_ending_on_path(start.as_deref())?;
        if base == tip {
            return Ok(());
        }
        if self.batch.is_some() {
            // A whole turn is gathered only when it continues the tip.
            return Err(SessionError::Invalid(
                "a whole turn that starts a branch cannot be gathered".into(),
            ));
        }
        // Continuing the tip of another branch continues that branch.
        let tips = git::list_branches(&self.repo)?;
        let (name, created) = match tips.iter().find(|t| Some(t.oid) == base) {
            Some(t) => (t.name.clone(), false),
            None => {
                let prefix = if role == Role::Assistant {
                    "retry"
                } else {
                    "replay"
                };
                let name = git::new_branch_name(&self.repo, prefix, &id, seq)?;
                if let Some(b) = base {
                    git::create_branch(&self.repo, &name, b)?;
                }
                (name, true)
            }
        };
        tracing::info!(session = %self.meta.id, branch = %name, "turn starts a branch");
        if let Err(e) = self.checkout_branch_or_back(&name) {
            if created {
                let _ = git::delete_branch(&self.repo, &name);
            }
            return Err(e);
        }
        // The work tree shows the new path at once.
        let opener = self
            .node(opener_id)
            .ok_or_else(|| SessionError::UnknownNode(opener_id.to_string()))?;
        let parent_head = git::head_trailers(&self.repo)?.head_node;
        let path = self.path_nodes_since(opener, parent_head.as_deref());
        for n in self.load_nodes(&path)? {
            self.write_node(&n)?;
        }
        Ok(())
    }

    /// The nodes a turn opened by `opener` adds to its parent commit's path
    /// besides its own: the chain from its predecessor back to (not
    /// including) `parent_head`, with the nodes those called. Empty when
    /// the turn continues the parent's head.
    pub(super) fn path_nodes_since<'a>(
        &'a self,
        opener: NodeRef<'a>,
        parent_head: Option<&str>,
    ) -> Vec<NodeRef<'a>> {
        let mut chain = Vec::new();
        let mut cursor = opener.predecessor();
        while let Some(n) = cursor {
            if Some(n.id()) == parent_head || chain.len() > self.dag.len() {
                break;
            }
            chain.push(n);
            cursor = n.predecessor();
        }
        if chain.is_empty() {
            return chain;
        }
        let on_chain: HashSet<u32> = chain.iter().map(|n| n.at()).collect();
        let called = |n: &NodeRef<'_>| {
            n.caller_id()
                .and_then(|c| self.node(c))
                .is_some_and(|c| on_chain.contains(&c.at()))
        };
        self.dag
            .iter()
            .take_while(|n| n.seq() < opener.seq())
            .filter(|n| on_chain.contains(&n.at()) || called(n))
            .collect()
    }

    /// The newest commit (any branch) whose head node lies on the chain
    /// that ends at `start`: where a turn starting after `start` branches
    /// off. `None` when no turn of that chain was committed.
    fn commit_ending_on_path(&self, start: Option<&str>) -> Result<Option<Oid>, SessionError> {
        let commits = git::all_commits(&self.repo)?;
        // Nothing of the path was committed before: the turn starts from
        // the `session init` root (sessions made before it start a root
        // of their own).
        let root = commits.iter().find(|c| c.is_session_init()).map(|c| c.oid);
        let by_head: HashMap<String, Oid> = commits
            .into_iter()
            .filter_map(|c| c.trailers.head_node.map(|h| (h, c.oid)))
            .collect();
        let mut cursor = start;
        let mut steps = 0;
        while let Some(id) = cursor {
            if let Some(oid) = by_head.get(id) {
                return Ok(Some(*oid));
            }
            steps += 1;
            if steps > self.dag.len() {
                break;
            }
            cursor = self.node(id).and_then(|n| n.predecessor_id());
        }
        Ok(root)
    }

    /// Attach HEAD to `name`, make the work tree that branch's files (plus
    /// anything not committed yet) and rebuild the index. In this order, so
    /// a crash in between is repaired at load (`sync_worktree_to_head`).
    fn checkout_branch(&mut self, name: &str) -> Result<(), SessionError> {
        git::attach_head(&self.repo, name)?;
        // The index must follow the new HEAD even when no file changed.
        if !self.sync_worktree_to_head()? {
            self.rebuild_index()?;
        }
        Ok(())
    }

    /// `checkout_branch`, or on failure (say, a full disk) back to the
    /// branch we were on, so a refused switch changes nothing.
    fn checkout_branch_or_back(&mut self, name: &str) -> Result<(), SessionError> {
        let previous = git::current_branch(&self.repo)?;
        let result = self.checkout_branch(name);
        if let Err(e) = &result {
            tracing::error!(session = %self.meta.id, branch = %name, error = %e, "branch checkout failed; going back");
            if let Err(back) = self.checkout_branch(&previous) {
                tracing::error!(session = %self.meta.id, error = %back, "going back failed too; the next load repairs the work tree");
            }
        }
        result
    }

    /// Make the work tree's history and context files those of HEAD, keeping
    /// files that no branch holds (not committed yet). Returns whether
    /// anything changed (then the index is rebuilt too).
    pub(super) fn sync_worktree_to_head(&mut self) -> Result<bool, SessionError> {
        let head = git::head_commit(&self.repo)?;
        let target = head.as_ref().map(|c| c.tree()).transpose()?;
        let tips: Vec<git2::Tree<'_>> = git::list_branches(&self.repo)?
            .iter()
            .filter_map(|t| self.repo.find_commit(t.oid).and_then(|c| c.tree()).ok())
            .collect();
        let changed = git::sync_worktree(&self.repo, target.as_ref(), &TRACKED_DIRS, &tips)?;
        drop(tips);
        drop(target);
        drop(head);
        if changed {
            self.rebuild_index()?;
            if self.store.is_logged() {
                // The work tree now holds another branch's files, synced
                // here: replay must not bring back the older ones.
                crate::fsio::sync_filesystem(&self.dir)?;
                self.store.commit(vec![crate::wal::Change::Barrier {
                    root: self.dir.clone(),
                }])?;
            }
        }
        Ok(changed)
    }

    fn rebuild_index(&mut self) -> Result<(), SessionError> {
        let head = git::head_commit(&self.repo)?;
        let tree = head.as_ref().map(|c| c.tree()).transpose()?;
        let mut index = git::GitIndex::from_tree(&self.repo, tree.as_ref(), &[Path::new(META)])?;
        index.write()?;
        self.index = index;
        Ok(())
    }

    // ----- reads ---------------------------------------------------------

    /// Every branch, `main` first.
    pub fn branches(&self) -> Result<Vec<BranchInfo>, SessionError> {
        let current = git::current_branch(&self.repo)?;
        Ok(git::list_branches(&self.repo)?
            .into_iter()
            .map(|t| {
                let sha = t.oid.to_string();
                BranchInfo {
                    current: t.name == current,
                    short_sha: git::short_sha(&sha),
                    commit: sha,
                    head_node: t.trailers.head_node,
                    turns: t.trailers.turn,
                    updated_at: t.time,
                    name: t.name,
                }
            })
            .collect())
    }

    /// The timeline: every commit of every branch, with the branch it was
    /// made on and whether it lies on the current path.
    pub fn history(&self) -> Result<History, SessionError> {
        let graph = Graph::read(self)?;
        let (line_branch, shown) = self.shown(&graph);
        let commits = graph
            .commits
            .iter()
            .map(|c| {
                let sha = c.oid.to_string();
                HistoryRow {
                    short_sha: git::short_sha(&sha),
                    sha,
                    turn: c.trailers.turn,
                    branch: graph.branch_holding(c.oid),
                    summary: c.summary.clone(),
                    message: c.message.clone(),
                    timestamp: c.time,
                    parent: c.parent.map(|p| p.to_string()),
                    head_node: c.trailers.head_node.clone(),
                    on_current_path: graph.holds(&line_branch, c.oid),
                }
            })
            .collect();
        Ok(History {
            branch: graph.current.clone(),
            position: self.position(&graph, shown, &line_branch),
            commits,
        })
    }

    /// What is shown now: the replayed commit, or the current branch's tip.
    pub(super) fn shown(&self, graph: &Graph) -> (String, Option<Oid>) {
        match &self.meta.viewing {
            Some(v) => match Oid::from_str(&v.commit) {
                Ok(oid) if graph.holds(&v.branch, oid) => (v.branch.clone(), Some(oid)),
                _ => (graph.current.clone(), graph.tip(&graph.current)),
            },
            None => (graph.current.clone(), graph.tip(&graph.current)),
        }
    }

    fn position(&self, graph: &Graph, shown: Option<Oid>, branch: &str) -> Position {
        let line = graph.line(branch);
        let row = shown.and_then(|oid| graph.row(oid));
        let index = shown.and_then(|oid| line.iter().position(|o| *o == oid));
        Position {
            commit: shown.map(|o| o.to_string()),
            turn: row.map_or(0, |r| r.trailers.turn),
            of: graph
                .tip(branch)
                .and_then(|t| graph.row(t))
                .map_or(0, |r| r.trailers.turn),
            branch: branch.to_string(),
            live: shown == graph.tip(&graph.current) && branch == graph.current,
            prev: row
                .and_then(|r| r.parent)
                .filter(|p| graph.row(*p).is_some())
                .map(|p| p.to_string()),
            next: index.filter(|i| *i > 0).map(|i| line[i - 1].to_string()),
            head: self.meta.head.clone(),
        }
    }

    // ----- moving the head -----------------------------------------------

    /// Replay: show the conversation as it was at a commit (read-only; the
    /// next user message continues from there on a new branch). Nothing
    /// in git moves.
    pub fn checkout(&mut self, to: CheckoutTo) -> Result<Shown, SessionError> {
        let given = [to.commit.is_some(), to.turn.is_some(), to.step.is_some()];
        if given.iter().filter(|g| **g).count() != 1 {
            return Err(SessionError::Invalid(
                "give exactly one of commit, turn or step".into(),
            ));
        }
        self.close_interrupted_turn()?;
        let graph = Graph::read(self)?;
        if graph.commits.is_empty() {
            return Err(SessionError::NoTurns);
        }
        let (line_branch, shown) = self.shown(&graph);
        let line = graph.line(&line_branch);
        let (target, branch) = if let Some(c) = &to.commit {
            let oid = graph.find(c)?;
            let branch = if graph.holds(&line_branch, oid) {
                line_branch.clone()
            } else {
                graph.branch_holding(oid)
            };
            (oid, branch)
        } else if let Some(k) = to.turn {
            let oid = line
                .iter()
                .find(|o| graph.row(**o).is_some_and(|r| r.trailers.turn == k))
                .copied()
                .ok_or_else(|| {
                    SessionError::NoSuchTurn(format!("branch {line_branch} has no turn {k}"))
                })?;
            (oid, line_branch.clone())
        } else if to.step == Some(Step::Latest) {
            let tip = graph
                .tip(&graph.current)
                .ok_or_else(|| SessionError::NoSuchTurn("the current branch has no turn".into()))?;
            (tip, graph.current.clone())
        } else {
            let at = shown.ok_or(SessionError::NoTurns)?;
            let index = line.iter().position(|o| *o == at).unwrap_or(0);
            let oid =
                match to.step {
                    Some(Step::Next) => index.checked_sub(1).map(|i| line[i]).ok_or_else(|| {
                        SessionError::NoSuchTurn("already at the latest turn".into())
                    })?,
                    _ => line.get(index + 1).copied().ok_or_else(|| {
                        SessionError::NoSuchTurn("already at the first turn".into())
                    })?,
                };
            (oid, line_branch.clone())
        };
        let row = graph
            .row(target)
            .ok_or_else(|| SessionError::UnknownCommit(target.to_string()))?;
        let live = Some(target) == graph.tip(&graph.current) && branch == graph.current;
        let head = row.trailers.head_node.clone();
        self.update_meta(|m| {
            m.head = head;
            m.viewing = (!live).then(|| View {
                commit: target.to_string(),
                branch: branch.clone(),
            });
        })?;
        Ok(Shown {
            position: self.position(&graph, Some(target), &branch),
            messages: self.branch(None)?,
        })
    }

    /// Switch the head to a node (or to a branch's tip): git checks out the
    /// branch that holds it, and the conversation renders from there.
    pub fn switch(&mut self, to: SwitchTo) -> Result<Shown, SessionError> {
        self.close_interrupted_turn()?;
        let tips = git::list_branches(&self.repo)?;
        let current = git::current_branch(&self.repo)?;
        let (tip, head) = match (&to.node_id, &to.branch) {
            (Some(_), Some(_)) | (None, None) => {
                return Err(SessionError::Invalid(
                    "give exactly one of node_id or branch".into(),
                ))
            }
            (None, Some(b)) => {
                let tip = tips
                    .iter()
                    .find(|t| &t.name == b)
                    .ok_or_else(|| SessionError::UnknownBranch(b.clone()))?;
                (tip.clone(), tip.trailers.head_node.clone())
            }
            (Some(id), None) => {
                let node = self
                    .node(id)
                    .ok_or_else(|| SessionError::UnknownNode(id.clone()))?;
                let rel = layout::node_rel_path(node.seq(), node.role(), node.id());
                let holds = |t: &&BranchTip| {
                    self.repo
                        .find_commit(t.oid)
                        .and_then(|c| c.tree())
                        .is_ok_and(|tree| tree.get_path(&rel).is_ok())
                };
                let tip = tips
                    .iter()
                    .filter(|t| t.name == current)
                    .chain(tips.iter().filter(|t| t.name != current))
                    .find(holds)
                    .ok_or_else(|| SessionError::NotCommitted(id.clone()))?;
                (tip.clone(), Some(id.clone()))
            }
        };
        if tip.name != current {
            self.checkout_branch_or_back(&tip.name)?;
        }
        let turns = tip.trailers.turn;
        self.update_meta(|m| {
            m.head = head;
            m.viewing = None;
            m.turn_count = turns;
        })?;
        let graph = Graph::read(self)?;
        Ok(Shown {
            position: self.position(&graph, Some(tip.oid), &tip.name),
            messages: self.branch(None)?,
        })
    }
}
