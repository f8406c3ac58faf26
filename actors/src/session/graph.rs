//! The commit graph of a session as the branch views need it (every
//! commit, each branch's first-parent line), and the nodes of the branches
//! the work tree does not hold, read from their git trees.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use git2::Oid;

use super::core::SessionCore;
use super::error::SessionError;
use super::layout;
use super::node_index::NodeHead;
use crate::git::{self, BranchTip, CommitRow};
use crate::node::Node;

/// The commit graph of a session, read once per request.
pub(super) struct Graph {
    pub(super) commits: Vec<CommitRow>,
    pub(super) by_oid: HashMap<Oid, usize>,
    pub(super) tips: Vec<BranchTip>,
    pub(super) current: String,
    /// Each branch's first-parent line, tip first.
    pub(super) lines: HashMap<String, Vec<Oid>>,
    /// The same lines as sets, for membership tests.
    pub(super) members: HashMap<String, HashSet<Oid>>,
}

impl Graph {
    pub(super) fn read(core: &SessionCore) -> Result<Graph, SessionError> {
        // The turn commits: the `session init` root holds no turn, so no
        // view lists it, counts it or steps onto it.
        let mut commits = git::all_commits(&core.repo)?;
        commits.retain(|c| !c.is_session_init());
        let by_oid = commits
            .iter()
            .enumerate()
            .map(|(i, c)| (c.oid, i))
            .collect();
        let tips = git::list_branches(&core.repo)?;
        let current = git::current_branch(&core.repo)?;
        let mut graph = Graph {
            commits,
            by_oid,
            tips,
            current,
            lines: HashMap::new(),
            members: HashMap::new(),
        };
        for t in &graph.tips {
            let mut line = Vec::new();
            let mut cursor = Some(t.oid);
            while let Some(oid) = cursor.filter(|o| graph.by_oid.contains_key(o)) {
                line.push(oid);
                cursor = graph.row(oid).and_then(|r| r.parent);
            }
            graph
                .members
                .insert(t.name.clone(), line.iter().copied().collect());
            graph.lines.insert(t.name.clone(), line);
        }
        Ok(graph)
    }

    pub(super) fn row(&self, oid: Oid) -> Option<&CommitRow> {
        self.by_oid.get(&oid).map(|&i| &self.commits[i])
    }

    /// A branch's last turn commit (none while it holds only the
    /// `session init` root).
    pub(super) fn tip(&self, branch: &str) -> Option<Oid> {
        self.tips
            .iter()
            .find(|t| t.name == branch)
            .map(|t| t.oid)
            .filter(|o| self.by_oid.contains_key(o))
    }

    pub(super) fn line(&self, branch: &str) -> &[Oid] {
        self.lines.get(branch).map_or(&[], Vec::as_slice)
    }

    /// A commit of this session by full sha or a prefix of 7+ characters.
    pub(super) fn find(&self, sha: &str) -> Result<Oid, SessionError> {
        let sha = sha.trim().to_ascii_lowercase();
        let mut found = self
            .commits
            .iter()
            .filter(|c| sha.len() >= 7 && c.oid.to_string().starts_with(&sha));
        match (found.next(), found.next()) {
            (Some(c), None) => Ok(c.oid),
            _ => Err(SessionError::UnknownCommit(sha)),
        }
    }

    /// The branch a commit was made on (its trailer), if that branch still
    /// holds it; else `main` or the first branch that holds it.
    pub(super) fn branch_holding(&self, oid: Oid) -> String {
        if let Some(b) = self.row(oid).and_then(|c| c.trailers.branch.as_ref()) {
            if self.holds(b, oid) {
                return b.clone();
            }
        }
        self.tips
            .iter()
            .find(|t| self.holds(&t.name, oid))
            .map_or_else(|| self.current.clone(), |t| t.name.clone())
    }

    /// Whether `oid` is on `branch`'s first-parent line.
    pub(super) fn holds(&self, branch: &str, oid: Oid) -> bool {
        self.members.get(branch).is_some_and(|m| m.contains(&oid))
    }
}

/// The nodes of the branches other than the work tree's: every node file
/// in a branch tip's tree that `known` lacks, read from its blob. Folders
/// shared between branches are read once.
pub(super) fn read_branch_nodes(
    repo: &git2::Repository,
    known: &[NodeHead],
) -> Result<Vec<NodeHead>, SessionError> {
    let mut ids: HashSet<String> = known.iter().map(|n| n.id.clone()).collect();
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for tip in git::list_branches(repo)? {
        let tree = repo.find_commit(tip.oid)?.tree()?;
        for (path, oid) in git::blobs_under(repo, &tree, Path::new(layout::HISTORY), &mut seen)? {
            let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            let Some((seq, role, id)) = layout::parse_node_file_name(name) else {
                continue;
            };
            if ids.contains(&id) {
                continue;
            }
            match serde_json::from_slice::<Node>(repo.find_blob(oid)?.content()) {
                Ok(n) if n.seq == seq && n.role == role && n.id == id => {
                    ids.insert(id);
                    out.push(NodeHead::from(n));
                }
                _ => {
                    tracing::warn!(path = %path.display(), branch = %tip.name, "unreadable node in git; skipped")
                }
            }
        }
    }
    Ok(out)
}
