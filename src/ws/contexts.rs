//! The original web client's Context tab: the context snapshots a session
//! stored with its turns (`context` of the end of a turn), listed for the
//! path shown now. A snapshot's id in these frames is
//! `<session id>/<context id>` (the detail request names no session, and
//! neither id may contain `/`).

use openprogram_actors::node::content_text;
use openprogram_actors::session::ContextRecord;
use serde::Deserialize;
use serde_json::{json, Value};

use super::frames::{frame, reply_error, Call, Frames};

/// At most this many snapshots are listed, newest first (the original's
/// page).
const LIST_LIMIT: usize = 50;

#[derive(Deserialize)]
struct SessionRef {
    #[serde(default)]
    session_id: Option<String>,
}

/// The snapshot's items: its `items` or `messages` array.
fn items(content: &Value) -> &[Value] {
    ["items", "messages"]
        .iter()
        .find_map(|k| content.get(k).and_then(Value::as_array))
        .map_or(&[], Vec::as_slice)
}

fn tokens(content: &Value) -> u64 {
    content
        .get("total_tokens")
        .or_else(|| content.get("tokens"))
        .and_then(Value::as_u64)
        .unwrap_or(0)
}

fn meta(sid: &str, c: &ContextRecord) -> Value {
    let head = c.head_node.clone().unwrap_or_default();
    json!({
        "id": format!("{sid}/{}", c.id),
        "context_id": c.id,
        "parent_id": c.previous.as_ref().map(|p| format!("{sid}/{p}")),
        "created_at": c.created_at,
        "head_node_id": head,
        "turn_group_id": format!("single:{head}"),
        "total_tokens": tokens(&c.content),
        "summary": c.content.get("summary").and_then(Value::as_str)
            .map_or_else(|| format!("turn {}", c.turn), str::to_owned),
        "item_count": items(&c.content).len(),
        "state_counts": {"full": items(&c.content).len()},
        "turn": c.turn,
        "commit": c.commit,
    })
}

/// `list_context_commits {session_id}` → `context_commits_list
/// {session_id, commits, error}`.
pub async fn list(c: &Call<'_>, v: Value) -> Result<Frames, Value> {
    let r: SessionRef = c.parse(v)?;
    let sid = r.session_id.filter(|s| !s.is_empty());
    let (commits, error) = match &sid {
        None => (Vec::new(), None),
        Some(id) => match c.engine().contexts(id, LIST_LIMIT).await {
            Ok(list) => (list.iter().map(|x| meta(id, x)).collect(), None),
            Err(e) => (Vec::new(), Some(reply_error(e).0)),
        },
    };
    Ok(vec![frame(
        "context_commits_list",
        json!({"session_id": sid, "commits": commits, "error": error}),
    )])
}

#[derive(Deserialize)]
struct Detail {
    #[serde(default)]
    commit_id: Option<String>,
}

/// `get_context_commit_detail {commit_id}` → `context_commit_detail {id,
/// items, …, error}`: each item a message of the snapshot, rendered as
/// text.
pub async fn detail(c: &Call<'_>, v: Value) -> Result<Frames, Value> {
    let r: Detail = c.parse(v)?;
    let id = r.commit_id.unwrap_or_default();
    let failed = |error: String| {
        Ok(vec![frame(
            "context_commit_detail",
            json!({"id": id, "items": [], "error": error}),
        )])
    };
    let Some((sid, cid)) = id.split_once('/') else {
        return failed("commit_id required (<session id>/<context id>)".into());
    };
    let record = match c.engine().context(sid, cid).await {
        Ok(record) => record,
        Err(e) => return failed(reply_error(e).0),
    };
    let items: Vec<Value> = items(&record.content)
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let body = item.get("content").unwrap_or(item);
            json!({
                "source_node_id": item.get("id").and_then(Value::as_str)
                    .map_or_else(|| format!("{cid}#{i}"), str::to_owned),
                "role": item.get("role").and_then(Value::as_str).unwrap_or("message"),
                "state": "full",
                "rendered": content_text(body),
                "tokens": item.get("tokens").and_then(Value::as_u64).unwrap_or(0),
                "reason": "",
                "locked": false,
                "is_anchor": false,
                "merged_into": null,
            })
        })
        .collect();
    let mut data = meta(sid, &record);
    if let Some(obj) = data.as_object_mut() {
        obj.insert("session_id".into(), sid.into());
        obj.insert("items".into(), Value::Array(items));
        obj.insert("error".into(), Value::Null);
        obj.insert("content".into(), record.content.clone());
    }
    Ok(vec![frame("context_commit_detail", data)])
}
