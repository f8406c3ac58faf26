//! `load_session` → `session_loaded`: a session as the original web client
//! reads it. `messages` is the current branch (the same view as
//! `GET /messages`) with each reply's tool calls folded into its
//! `tool_calls`, and sibling navigation on every message that has
//! alternatives (a retried answer, a message resent after a rewind);
//! `graph` is every node of every branch, laid out in lanes.

use std::collections::HashMap;

use openprogram_actors::meta::SessionMeta;
use openprogram_actors::node::{content_text, Node, Role};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::frames::{frame, Call, Frames};

#[derive(Deserialize)]
struct Load {
    #[serde(default)]
    session_id: Option<String>,
}

/// The reply for a session that does not exist (yet): the original's
/// empty "New conversation", which the client shows as a fresh chat.
fn new_conversation(id: Option<&str>) -> Value {
    frame(
        "session_loaded",
        json!({
            "id": id,
            "title": "New conversation",
            "messages": [],
            "context_tree": {},
            "provider_info": null,
            "settings": {},
        }),
    )
}

pub async fn load(c: &Call<'_>, v: Value) -> Result<Frames, Value> {
    let r: Load = c.parse(v)?;
    let Some(sid) = r.session_id.filter(|s| !s.is_empty()) else {
        return Ok(vec![new_conversation(None)]);
    };
    let meta = match c.engine().meta(&sid).await {
        Ok(meta) => meta,
        Err(e) if e.is_unknown_session() => return Ok(vec![new_conversation(Some(&sid))]),
        Err(e) => return Err(c.fail(e)),
    };
    let chain = c.engine().branch(&sid, None).await.map_err(|e| c.fail(e))?;
    let all = c.engine().nodes(&sid).await.map_err(|e| c.fail(e))?;
    let tree = Tree::new(&all);
    let messages = client_messages(&chain, &tree);
    let graph = graph_rows(&all, &tree);
    Ok(vec![frame(
        "session_loaded",
        loaded(&meta, messages, graph),
    )])
}

fn loaded(meta: &SessionMeta, messages: Vec<Value>, graph: Vec<Value>) -> Value {
    let running = meta.run_holds();
    json!({
        "id": meta.id,
        "title": meta.title,
        "messages": messages,
        "graph": graph,
        "head_id": meta.head,
        "context_tree": {},
        "provider_info": null,
        "context_stats": null,
        "channel": meta.channel,
        "account_id": meta.account_id,
        "peer": meta.peer_id,
        "peer_display": meta.peer_display,
        "source": meta.source,
        "goal": null,
        "project_id": meta.project_id,
        "settings": {
            "additional_working_dirs": meta.working_dirs,
        },
        "run_active": running,
        "status": meta.status,
    })
}

/// The parent and child links of every node, for sibling navigation.
pub struct Tree<'a> {
    by_id: HashMap<&'a str, &'a Node>,
    /// Conversational children of each node (by predecessor), in
    /// sequence order; roots under "".
    children: HashMap<&'a str, Vec<&'a Node>>,
}

impl<'a> Tree<'a> {
    pub fn new(all: &'a [Node]) -> Tree<'a> {
        let mut children: HashMap<&str, Vec<&Node>> = HashMap::new();
        for n in all.iter().filter(|n| n.is_conversational()) {
            children
                .entry(n.predecessor.as_deref().unwrap_or(""))
                .or_default()
                .push(n);
        }
        for kids in children.values_mut() {
            kids.sort_by_key(|n| n.seq);
        }
        Tree {
            by_id: all.iter().map(|n| (n.id.as_str(), n)).collect(),
            children,
        }
    }

    pub fn node(&self, id: &str) -> Option<&'a Node> {
        self.by_id.get(id).copied()
    }

    /// The alternatives of a conversational node: the nodes of its role
    /// that share its predecessor, oldest first (itself included).
    pub fn siblings(&self, n: &Node) -> Vec<&'a Node> {
        self.children
            .get(n.predecessor.as_deref().unwrap_or(""))
            .map(|kids| kids.iter().filter(|k| k.role == n.role).copied().collect())
            .unwrap_or_default()
    }

    /// The end of the newest line below `n`: where showing that
    /// alternative puts the head.
    pub fn deepest(&self, n: &'a Node) -> &'a Node {
        let mut cursor = n;
        for _ in 0..self.by_id.len() {
            match self
                .children
                .get(cursor.id.as_str())
                .and_then(|kids| kids.last())
            {
                Some(next) => cursor = next,
                None => break,
            }
        }
        cursor
    }
}

/// A tool or code node as the client's tool block.
fn tool_block(n: &Node) -> Value {
    let input = match &n.content {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    let is_error = n.metadata.get("is_error").and_then(Value::as_bool) == Some(true)
        || n.metadata.get("status").and_then(Value::as_str) == Some("error");
    json!({
        "type": "tool",
        "tool": n.name.clone().unwrap_or_else(|| n.role.as_str().to_owned()),
        "tool_call_id": n.id,
        "input": input,
        "result": n.output.as_ref().map(content_text),
        "is_error": is_error,
    })
}

/// The fields every row carries.
fn base_row(n: &Node) -> Map<String, Value> {
    let mut row = Map::new();
    row.insert("id".into(), n.id.clone().into());
    row.insert("role".into(), n.role.as_str().into());
    row.insert("content".into(), content_text(&n.content).into());
    row.insert("created_at".into(), n.created_at.into());
    row.insert("timestamp".into(), n.created_at.into());
    row.insert("seq".into(), n.seq.into());
    row.insert("predecessor".into(), n.predecessor.clone().into());
    row.insert("caller".into(), n.caller.clone().into());
    for key in ["display", "type", "status", "model", "usage", "source"] {
        if let Some(v) = n.metadata.get(key) {
            row.insert(key.into(), v.clone());
        }
    }
    row
}

fn sibling_fields(row: &mut Map<String, Value>, n: &Node, tree: &Tree<'_>) {
    let sibs = tree.siblings(n);
    let index = sibs.iter().position(|s| s.id == n.id);
    let total = sibs.len().max(1);
    let (prev, next) = match index {
        Some(i) if total > 1 => (
            i.checked_sub(1)
                .and_then(|j| sibs.get(j))
                .map(|s| tree.deepest(s).id.clone()),
            sibs.get(i + 1).map(|s| tree.deepest(s).id.clone()),
        ),
        _ => (None, None),
    };
    row.insert("sibling_index".into(), (index.unwrap_or(0) + 1).into());
    row.insert("sibling_total".into(), total.into());
    row.insert("prev_sibling_id".into(), prev.into());
    row.insert("next_sibling_id".into(), next.into());
}

/// The current branch as the client's message rows: a reply carries its
/// tool calls; a tool node whose caller is not shown stays its own row.
pub fn client_messages(chain: &[Node], tree: &Tree<'_>) -> Vec<Value> {
    let shown: HashMap<&str, Role> = chain.iter().map(|n| (n.id.as_str(), n.role)).collect();
    let mut calls: HashMap<&str, Vec<Value>> = HashMap::new();
    for n in chain {
        if let Some(caller) = n.caller.as_deref() {
            if matches!(n.role, Role::Tool | Role::Code)
                && shown.get(caller) == Some(&Role::Assistant)
            {
                calls.entry(caller).or_default().push(tool_block(n));
            }
        }
    }
    let mut out = Vec::new();
    for n in chain {
        let folded = n.caller.as_deref().is_some_and(|c| {
            matches!(n.role, Role::Tool | Role::Code) && shown.get(c) == Some(&Role::Assistant)
        });
        if folded {
            continue;
        }
        let mut row = base_row(n);
        match n.role {
            Role::Assistant => {
                let tools = calls.remove(n.id.as_str()).unwrap_or_default();
                row.insert("tool_calls".into(), Value::Array(tools));
            }
            Role::Tool | Role::Code => {
                row.insert("function".into(), n.name.clone().into());
                if let Some(out) = &n.output {
                    row.insert("content".into(), content_text(out).into());
                }
            }
            Role::System => {
                if let Some(name) = &n.name {
                    row.insert("function".into(), name.clone().into());
                }
            }
            Role::User => {}
        }
        if n.is_conversational() {
            sibling_fields(&mut row, n, tree);
        }
        out.push(Value::Object(row));
    }
    out
}

/// Every node of every branch for the client's history graph: `_depth`
/// is the row (sequence order), `_tier` the column inside a lane (user,
/// reply, then one more per call level), `_lane` the branch: the first
/// continuation of a node stays in its lane, each alternative opens one.
pub fn graph_rows(all: &[Node], tree: &Tree<'_>) -> Vec<Value> {
    let mut ordered: Vec<&Node> = all.iter().collect();
    ordered.sort_by_key(|n| n.seq);
    let mut lane: HashMap<&str, u64> = HashMap::new();
    let mut tier: HashMap<&str, u64> = HashMap::new();
    let mut lanes = 0u64;
    let mut rows = Vec::with_capacity(ordered.len());
    for (depth, n) in ordered.iter().enumerate() {
        let (my_lane, my_tier) = match n.caller.as_deref().and_then(|c| tree.node(c)) {
            Some(caller) => (
                lane.get(caller.id.as_str()).copied().unwrap_or(0),
                tier.get(caller.id.as_str()).copied().unwrap_or(1) + 1,
            ),
            None => {
                let parent = n.predecessor.as_deref().unwrap_or("");
                let first = tree
                    .children
                    .get(parent)
                    .and_then(|kids| kids.first())
                    .is_some_and(|k| k.id == n.id);
                let inherited = if parent.is_empty() {
                    None
                } else {
                    lane.get(parent).copied()
                };
                let l = match (first, inherited) {
                    (true, Some(l)) => l,
                    _ => {
                        lanes += 1;
                        lanes - 1
                    }
                };
                let t = match n.role {
                    Role::Assistant => 2,
                    _ => 1,
                };
                (l, t)
            }
        };
        lane.insert(n.id.as_str(), my_lane);
        tier.insert(n.id.as_str(), my_tier);
        let body = content_text(&n.content);
        rows.push(json!({
            "id": n.id,
            "predecessor": n.predecessor,
            "caller": n.caller.clone().unwrap_or_default(),
            "role": n.role.as_str(),
            "function": n.name,
            "name": n.name,
            "display": n.metadata.get("display"),
            "status": n.metadata.get("status"),
            "preview": openprogram_actors::node::preview(&body).unwrap_or_default(),
            "created_at": n.created_at,
            "_depth": depth,
            "_tier": my_tier,
            "_lane": my_lane,
        }));
    }
    rows
}
