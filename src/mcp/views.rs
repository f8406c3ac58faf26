//! What the MCP tools answer with, read through the engine: a session's
//! turns (each a commit of its history: its number, branch, commit, time,
//! the agent's project commit, its nodes), as data or as Markdown.

use openprogram_actors::engine::Engine;
use openprogram_actors::git::Trailers;
use openprogram_actors::node::{Node, Role};
use openprogram_actors::session::HistoryRow;
use openprogram_actors::EngineError;
use serde::Serialize;
use serde_json::Value;

/// One node as the tools show it.
#[derive(Debug, Clone, Serialize)]
pub struct NodeView {
    pub id: String,
    pub role: Role,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub caller: Option<String>,
    pub text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    pub created_at: f64,
}

impl From<&Node> for NodeView {
    fn from(n: &Node) -> NodeView {
        NodeView {
            id: n.id.clone(),
            role: n.role,
            name: n.name.clone(),
            caller: n.caller.clone(),
            text: n.text(),
            output: n.output.clone(),
            created_at: n.created_at,
        }
    }
}

/// One turn: its commit and its nodes.
#[derive(Debug, Clone, Serialize)]
pub struct TurnView {
    pub turn: u64,
    pub branch: String,
    pub commit: String,
    pub committed_at: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project_commit: Option<String>,
    pub nodes: Vec<NodeView>,
}

/// The turns of `rows` (commits of one line, oldest first), their nodes
/// taken from the path that ends at the last one's head.
async fn turns_of(
    engine: &Engine,
    session: &str,
    all: &[HistoryRow],
    rows: &[&HistoryRow],
) -> Result<Vec<TurnView>, EngineError> {
    let Some(last) = rows.last() else {
        return Ok(Vec::new());
    };
    let path = engine.branch(session, last.head_node.clone()).await?;
    let last_seq = |sha: Option<&str>| {
        sha.and_then(|s| all.iter().find(|r| r.sha == s))
            .map_or(0, |r| Trailers::parse(&r.message).last_seq)
    };
    Ok(rows
        .iter()
        .map(|r| {
            let trailers = Trailers::parse(&r.message);
            let (from, to) = (last_seq(r.parent.as_deref()), trailers.last_seq);
            TurnView {
                turn: r.turn,
                branch: r.branch.clone(),
                commit: r.sha.clone(),
                committed_at: r.timestamp,
                project_commit: trailers.project_commit,
                nodes: path
                    .iter()
                    .filter(|n| n.seq > from && n.seq <= to)
                    .map(NodeView::from)
                    .collect(),
            }
        })
        .collect())
}

/// A session's turns `from..=to` on `branch` (default: the one shown).
pub async fn session_turns(
    engine: &Engine,
    session: &str,
    branch: Option<&str>,
    from: u64,
    to: u64,
) -> Result<(String, Vec<TurnView>), EngineError> {
    let history = engine.history(session).await?;
    let branch = branch.unwrap_or(&history.branch).to_string();
    let mut rows: Vec<&HistoryRow> = line_of(&history.commits, &branch)
        .into_iter()
        .filter(|r| r.turn > 0 && r.turn >= from && r.turn <= to)
        .collect();
    rows.sort_by_key(|r| r.turn);
    let turns = turns_of(engine, session, &history.commits, &rows).await?;
    Ok((branch, turns))
}

/// The turn commits of `branch`'s line, newest first: from its tip back
/// through its parents, so a branch that forked from another (a retry)
/// has the turns it shares with it; a turn committed twice (continued
/// after it ended) counts once, by its newer commit.
fn line_of<'a>(commits: &'a [HistoryRow], branch: &str) -> Vec<&'a HistoryRow> {
    let by_sha: std::collections::HashMap<&str, &HistoryRow> =
        commits.iter().map(|r| (r.sha.as_str(), r)).collect();
    let mut line = Vec::new();
    let mut turns = std::collections::HashSet::new();
    let mut cursor = commits.iter().find(|r| r.branch == branch);
    while let Some(r) = cursor {
        if line.len() > commits.len() {
            break;
        }
        if turns.insert(r.turn) {
            line.push(r);
        }
        cursor = r.parent.as_deref().and_then(|p| by_sha.get(p).copied());
    }
    line
}

/// One turn, by its commit (a prefix of at least 7 characters) or by its
/// number on `branch` (default: the one shown).
pub async fn one_turn(
    engine: &Engine,
    session: &str,
    turn: Option<u64>,
    commit: Option<&str>,
    branch: Option<&str>,
) -> Result<Option<TurnView>, EngineError> {
    let history = engine.history(session).await?;
    let branch = branch.unwrap_or(&history.branch);
    let row = match (commit, turn) {
        (Some(c), _) => history
            .commits
            .iter()
            .find(|r| c.len() >= 7 && r.sha.starts_with(c) && r.turn > 0),
        (None, Some(t)) => line_of(&history.commits, branch)
            .into_iter()
            .find(|r| r.turn == t),
        (None, None) => None,
    };
    let Some(row) = row else {
        return Ok(None);
    };
    Ok(turns_of(engine, session, &history.commits, &[row])
        .await?
        .into_iter()
        .next())
}

/// A turn as Markdown: a heading with its commit, then each node.
pub fn markdown(title: &str, turns: &[TurnView]) -> String {
    let mut out = format!("# {title}\n");
    for t in turns {
        out.push_str(&format!(
            "\n## Turn {} ({} {})\n",
            t.turn,
            t.branch,
            t.commit.get(..7).unwrap_or(&t.commit)
        ));
        for n in &t.nodes {
            let who = match (&n.name, n.role) {
                (Some(name), Role::Tool | Role::Code) => format!("{} `{name}`", n.role.as_str()),
                _ => n.role.as_str().to_string(),
            };
            out.push_str(&format!("\n**{who}**: {}\n", n.text));
            if let Some(o) = &n.output {
                let o = match o {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                out.push_str(&format!("\n```\n{o}\n```\n"));
            }
        }
    }
    out
}
