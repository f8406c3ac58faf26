//! WebSocket actions on a session's branches as the original web client
//! uses them: the branch list with the history graph, showing the branch
//! that holds a message, and rewinding to before a message. Each maps onto
//! the session's git branches; nothing is ever deleted (a rewind is a
//! replay view, and the next message continues on a new `replay-*`
//! branch).

use openprogram_actors::meta::Status;
use openprogram_actors::node::{preview, Node, Role};
use openprogram_actors::session::{CheckoutTo, History, HistoryRow, SwitchTo, RUN_ACTIVE};
use serde::Deserialize;
use serde_json::{json, Value};

use super::frames::{frame, reply_error, Call, Frames};
use super::transcript::{graph_rows, Tree};

#[derive(Deserialize)]
struct SessionRef {
    session_id: String,
}

/// `list_branches {session_id}` → `branches_list {session_id, branches,
/// active, trunk_head, graph}`: one row per git branch (`head_msg_id`, the
/// node its last turn ended on; `name`; `active` when the head is there),
/// the head, `main`'s last node, and the history graph.
pub async fn list(c: &Call<'_>, v: Value) -> Result<Frames, Value> {
    let r: SessionRef = c.parse(v)?;
    let sid = r.session_id;
    let meta = c.engine().meta(&sid).await.map_err(|e| c.fail(e))?;
    let branches = c.engine().branches(&sid).await.map_err(|e| c.fail(e))?;
    let all = c.engine().nodes(&sid).await.map_err(|e| c.fail(e))?;
    let tree = Tree::new(&all);
    let rows: Vec<Value> = branches
        .iter()
        .filter_map(|b| {
            let head = b.head_node.clone()?;
            Some(json!({
                "head_msg_id": head,
                "name": b.name,
                "is_named": true,
                "created_at": b.updated_at,
                "active": meta.head.as_deref() == Some(head.as_str()),
                "turns": b.turns,
                "current": b.current,
                "commit": b.commit,
            }))
        })
        .collect();
    let trunk = branches
        .iter()
        .find(|b| b.name == "main")
        .and_then(|b| b.head_node.clone());
    Ok(vec![frame(
        "branches_list",
        json!({
            "session_id": sid,
            "branches": rows,
            "active": meta.head,
            "trunk_head": trunk,
            "graph": graph_rows(&all, &tree),
        }),
    )])
}

#[derive(Deserialize)]
struct CheckoutBranch {
    #[serde(default)]
    session_id: Option<String>,
    #[serde(default)]
    head_msg_id: Option<String>,
}

/// `checkout_branch {session_id, head_msg_id}` → `branch_checked_out
/// {session_id, head_msg_id, ok, error}`: the head moves to that message
/// and git checks out the branch that holds it (as `POST /switch`).
/// Refused while a turn runs, as in the original.
pub async fn checkout(c: &Call<'_>, v: Value) -> Result<Frames, Value> {
    let r: CheckoutBranch = c.parse(v)?;
    let reply = |ok: bool, error: Option<String>, code: Option<&str>| {
        vec![frame(
            "branch_checked_out",
            json!({"session_id": r.session_id, "head_msg_id": r.head_msg_id,
                   "ok": ok, "error": error, "code": code}),
        )]
    };
    let (Some(sid), Some(node)) = (r.session_id.as_deref(), r.head_msg_id.as_deref()) else {
        return Ok(reply(
            false,
            Some("session_id and head_msg_id required".into()),
            Some("invalid_fields"),
        ));
    };
    match c.engine().meta(sid).await {
        Ok(meta) if meta.status == Status::Running => {
            return Ok(reply(false, Some(RUN_ACTIVE.into()), Some("run_active")))
        }
        Ok(_) => {}
        Err(e) => {
            let (error, code) = reply_error(e);
            return Ok(reply(false, Some(error), Some(code)));
        }
    }
    let to = SwitchTo {
        node_id: Some(node.to_string()),
        branch: None,
    };
    Ok(match c.engine().switch(sid, to).await {
        Ok(_) => reply(true, None, None),
        Err(e) => {
            let (error, code) = reply_error(e);
            reply(false, Some(error), Some(code))
        }
    })
}

/// The rewind points of the current path, newest first (the order the
/// client numbers for `__by_index__N`): each turn with the user message
/// it answered.
async fn points(c: &Call<'_>, sid: &str) -> Result<(Vec<Value>, Vec<Node>, History), Value> {
    let history = c.engine().history(sid).await.map_err(|e| c.fail(e))?;
    let chain = c.engine().branch(sid, None).await.map_err(|e| c.fail(e))?;
    let on_path: Vec<&HistoryRow> = history
        .commits
        .iter()
        .filter(|h| h.on_current_path)
        .collect();
    let points = on_path
        .iter()
        .map(|h| {
            let user = h
                .head_node
                .as_deref()
                .and_then(|head| chain.iter().position(|n| n.id == head))
                .and_then(|at| chain.get(..=at))
                .and_then(|before| {
                    before
                        .iter()
                        .rev()
                        .find(|n| n.role == Role::User && n.is_conversational())
                });
            let text = user.map(Node::text).unwrap_or_default();
            json!({
                "turn": h.turn,
                "commit": h.sha,
                "short_sha": h.short_sha,
                "branch": h.branch,
                "commit_summary": h.summary,
                "timestamp": h.timestamp,
                "head_node": h.head_node,
                "msg_id": user.map(|u| u.id.clone()),
                "seq": user.map(|u| u.seq),
                "created_at": user.map(|u| u.created_at),
                "summary": preview(&text).unwrap_or_default(),
                "user_text": text,
                "files_affected": [],
            })
        })
        .collect();
    Ok((points, chain, history))
}

/// `rewind_list {session_id}` → `rewind_points {session_id, points,
/// current_turn, live}`: the turns of the current path, newest first.
pub async fn rewind_list(c: &Call<'_>, v: Value) -> Result<Frames, Value> {
    let r: SessionRef = c.parse(v)?;
    let (points, _, history) = points(c, &r.session_id).await?;
    Ok(vec![frame(
        "rewind_points",
        json!({
            "session_id": r.session_id,
            "points": points,
            "current_turn": history.position.turn,
            "live": history.position.live,
        }),
    )])
}

#[derive(Deserialize)]
struct Rewind {
    session_id: String,
    #[serde(default)]
    turn: Option<u64>,
    #[serde(default, alias = "commit_sha")]
    commit: Option<String>,
    #[serde(default)]
    target_msg_id: Option<String>,
}

/// `rewind`: with `turn` or `commit`, the replay view of that turn
/// (`rewind_result {ok, …position, messages}`); with `target_msg_id` (a
/// user message of the current path, or `__by_index__N` from
/// `rewind_points`), back to before that message: `rewind_result
/// {session_id, target_msg_id, user_text, turns_reverted, nodes_rewound,
/// new_head_id, errors}`. Either way nothing is deleted, and the next
/// message continues on a new `replay-*` branch.
pub async fn rewind(c: &Call<'_>, v: Value) -> Result<Frames, Value> {
    let r: Rewind = c.parse(v)?;
    if let Some(target) = r.target_msg_id {
        return rewind_to_message(c, r.session_id, target).await;
    }
    let to = CheckoutTo {
        commit: r.commit,
        turn: r.turn,
        step: None,
    };
    let shown = c
        .engine()
        .checkout(&r.session_id, to)
        .await
        .map_err(|e| c.fail(e))?;
    let mut data = serde_json::to_value(&shown).unwrap_or_default();
    if let Some(obj) = data.as_object_mut() {
        obj.insert("ok".into(), true.into());
        obj.insert("session_id".into(), r.session_id.into());
    }
    Ok(vec![frame("rewind_result", data)])
}

async fn rewind_to_message(c: &Call<'_>, sid: String, target: String) -> Result<Frames, Value> {
    let failed = |error: String, code: &str| {
        Ok(vec![frame(
            "rewind_result",
            json!({"session_id": sid, "target_msg_id": target, "user_text": "",
                   "turns_reverted": 0, "nodes_rewound": 0, "total_restored_paths": [],
                   "new_head_id": null, "errors": [error.clone()], "error": error, "code": code}),
        )])
    };
    let meta = match c.engine().meta(&sid).await {
        Ok(meta) => meta,
        Err(e) => {
            let (error, code) = reply_error(e);
            return failed(error, code);
        }
    };
    if meta.status == Status::Running {
        return failed(RUN_ACTIVE.into(), "run_active");
    }
    let (points, chain, _) = points(c, &sid).await?;
    let msg_id = match target.strip_prefix("__by_index__") {
        Some(n) => {
            let picked = n
                .parse::<usize>()
                .ok()
                .and_then(|i| i.checked_sub(1))
                .and_then(|i| points.get(i))
                .and_then(|p| p["msg_id"].as_str().map(str::to_owned));
            match picked {
                Some(id) => id,
                None => {
                    return failed(
                        format!("Invalid index {n}. Available: 1-{}", points.len()),
                        "invalid_fields",
                    )
                }
            }
        }
        None => target.clone(),
    };
    let Some(at) = chain
        .iter()
        .position(|n| n.id == msg_id && n.role == Role::User)
    else {
        return failed(
            format!("message '{msg_id}' is not a user message of the current branch"),
            "unknown_node",
        );
    };
    let user = &chain[at];
    let Some(before) = user.predecessor.clone() else {
        return failed(
            "the first message has nothing before it: start a new chat, or fork the session".into(),
            "no_such_turn",
        );
    };
    let turns_reverted = chain[at..]
        .iter()
        .filter(|n| n.role == Role::User && n.is_conversational())
        .count();
    let nodes_rewound = chain.len() - at;
    // The turn that ended on the message before: its replay view.
    let turn_end = points
        .iter()
        .find(|p| p["head_node"].as_str() == Some(before.as_str()))
        .and_then(|p| p["commit"].as_str().map(str::to_owned));
    let moved = match turn_end {
        Some(commit) => {
            let to = CheckoutTo {
                commit: Some(commit),
                turn: None,
                step: None,
            };
            c.engine().checkout(&sid, to).await.map(|_| ())
        }
        None => {
            let to = SwitchTo {
                node_id: Some(before.clone()),
                branch: None,
            };
            c.engine().switch(&sid, to).await.map(|_| ())
        }
    };
    if let Err(e) = moved {
        let (error, code) = reply_error(e);
        return failed(error, code);
    }
    Ok(vec![frame(
        "rewind_result",
        json!({
            "session_id": sid,
            "target_msg_id": msg_id,
            "user_text": user.text(),
            "turns_reverted": turns_reverted,
            "nodes_rewound": nodes_rewound,
            "total_restored_paths": [],
            "new_head_id": before,
            "errors": [],
        }),
    )])
}
