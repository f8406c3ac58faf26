//! WebSocket actions on sessions: the sidebar list and its flags, working
//! directories, git views, replay (`git_checkout`) and rewind.

use openprogram_actors::limit::LogLimit;
use openprogram_actors::meta::MetaPatch;
use openprogram_actors::registry::ListQuery;
use openprogram_actors::session::{CheckoutTo, Step, SwitchTo};
use serde::Deserialize;
use serde_json::{json, Value};

use super::frames::{frame, reply_error, Call, Frames};
use crate::state::AppState;

/// The `sessions_list` frame: `{"type": "sessions_list", "data": [rows]}`
/// with the `request_id` it answers, if any. The rows are every session
/// (up to the original's 10,000), archived ones included (the client
/// switches active / archived / all locally), newest first. Sessions with
/// neither a title nor a message are listed too, as REST lists them: the
/// specification shows every valid session, with no filtering of empty
/// placeholders (the original skipped them).
///
/// Made from the rows' kept client JSON, the bytes REST lists, rather
/// than as a `Value`: at 10,000 sessions the frame is about 5 MB, and it
/// is broadcast after every chat message, as in the original.
pub async fn list_text(
    state: &AppState,
    request_id: Option<&Value>,
) -> Result<String, openprogram_actors::EngineError> {
    let page = state.engine.list_all(ListQuery::everything(None)).await?;
    let rows = page.rows_json();
    let mut out = Vec::with_capacity(rows.len() + 64);
    out.extend_from_slice(br#"{"type":"sessions_list","data":"#);
    rows.write_rest(&mut out);
    if let Some(id) = request_id {
        out.extend_from_slice(br#","request_id":"#);
        out.extend_from_slice(id.to_string().as_bytes());
    }
    out.push(b'}');
    // Every part is serde_json's output: always UTF-8.
    Ok(String::from_utf8(out)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
}

#[derive(Deserialize)]
struct Flags {
    session_id: String,
    pinned: Option<bool>,
    archived: Option<bool>,
    unread: Option<bool>,
    #[serde(
        default,
        deserialize_with = "openprogram_actors::meta::double_option::deserialize"
    )]
    group: Option<Option<String>>,
}

#[derive(Deserialize)]
struct SessionRef {
    session_id: String,
}

#[derive(Deserialize)]
struct Rename {
    session_id: String,
    #[serde(default)]
    title: String,
}

/// `update_session_flags`: writes only the keys present; the change
/// reaches every client as `session_updated`.
pub async fn update_flags(c: &Call<'_>, v: Value) -> Result<Frames, Value> {
    let f: Flags = c.parse(v)?;
    let patch = MetaPatch {
        pinned: f.pinned,
        archived: f.archived,
        unread: f.unread,
        // The original writes a null group as "".
        group: f.group.map(|g| g.filter(|g| !g.is_empty())),
        ..Default::default()
    };
    if patch.is_empty() {
        return Err(c.error("invalid_fields", "no flag given"));
    }
    c.engine()
        .update_meta(&f.session_id, patch)
        .await
        .map_err(|e| c.fail(e))?;
    Ok(Vec::new())
}

#[derive(Deserialize)]
struct Focus {
    #[serde(default)]
    session_id: Option<String>,
}

/// `mark_session_read`: the session is seen. No id (null or empty: the
/// client left every session, a new chat) is quiet, as in the original;
/// otherwise every client hears `session_updated {id, unread: false}`,
/// also when it was read already (the original always answers).
pub async fn mark_read(c: &Call<'_>, v: Value) -> Result<Frames, Value> {
    let r: Focus = c.parse(v)?;
    let Some(sid) = r.session_id.filter(|s| !s.is_empty()) else {
        return Ok(Vec::new());
    };
    let patch = MetaPatch {
        unread: Some(false),
        ..Default::default()
    };
    c.engine()
        .update_meta(&sid, patch)
        .await
        .map_err(|e| c.fail(e))?;
    c.engine().publish(
        "session_updated",
        serde_json::json!({"id": sid, "unread": false}),
    );
    Ok(Vec::new())
}

/// `get_run_state {session_id}` → `run_state {session_id, run_active}`:
/// whether a run holds the session (a turn running, or open waiting for a
/// runner), without changing which session the client looks at. No session or an unknown one: not
/// running.
pub async fn run_state(c: &Call<'_>, v: Value) -> Result<Frames, Value> {
    let r: Focus = c.parse(v)?;
    let sid = r.session_id.filter(|s| !s.is_empty());
    let running = match &sid {
        Some(id) => {
            let row = c.engine().row(id).await.map_err(|e| c.fail(e))?;
            row.is_some_and(|row| row.status == openprogram_actors::meta::Status::Running)
                || c.state.runners.has_run(id)
        }
        None => false,
    };
    Ok(vec![frame(
        "run_state",
        serde_json::json!({"session_id": sid, "run_active": running}),
    )])
}

/// `rename_session`: a typed title, or an empty one to regenerate it.
pub async fn rename(c: &Call<'_>, v: Value) -> Result<Frames, Value> {
    let r: Rename = c.parse(v)?;
    c.engine()
        .rename_or_regenerate(&r.session_id, &r.title)
        .await
        .map_err(|e| c.fail(e))?;
    Ok(Vec::new())
}

pub async fn delete(c: &Call<'_>, v: Value) -> Result<Frames, Value> {
    let r: SessionRef = c.parse(v)?;
    c.engine()
        .delete(&r.session_id)
        .await
        .map_err(|e| c.fail(e))?;
    Ok(Vec::new())
}

/// `clear_sessions`: delete every session (each leaves with a
/// `session_deleted` broadcast), then the now empty `sessions_list`.
pub async fn clear(c: &Call<'_>) -> Result<Frames, Value> {
    loop {
        let page = c
            .engine()
            .list(ListQuery::everything(None))
            .await
            .map_err(|e| c.fail(e))?;
        if page.sessions.is_empty() {
            break;
        }
        for row in &page.sessions {
            c.engine().delete(&row.id).await.map_err(|e| c.fail(e))?;
        }
    }
    // The (empty) list follows (`actions::LISTED`).
    Ok(Vec::new())
}

#[derive(Deserialize)]
struct Workdir {
    session_id: Option<String>,
    path: Option<String>,
}

/// `add_session_workdir` / `remove_session_workdir`: the reply frame
/// carries `ok` and, on failure, `error` (allowed after the freeze).
pub async fn workdir(c: &Call<'_>, v: Value, add: bool) -> Result<Frames, Value> {
    let w: Workdir = c.parse(v)?;
    let kind = if add {
        "session_workdir_added"
    } else {
        "session_workdir_removed"
    };
    let reply = |ok: bool, path: Option<String>, error: Option<String>, code: Option<&str>| {
        frame(
            kind,
            json!({ "ok": ok, "session_id": w.session_id, "path": path, "error": error, "code": code }),
        )
    };
    let (Some(sid), Some(path)) = (&w.session_id, w.path.as_ref().filter(|p| !p.is_empty())) else {
        let error = if w.session_id.is_none() {
            "session_id is required"
        } else {
            "path is required"
        };
        return Ok(vec![reply(
            false,
            w.path.clone(),
            Some(error.into()),
            Some("invalid_fields"),
        )]);
    };
    let result = if add {
        c.engine().add_working_dir(sid, path).await
    } else {
        c.engine().remove_working_dir(sid, path).await
    };
    Ok(vec![match result {
        Ok(meta) => {
            // The stored (resolved) form of the path.
            let stored = if add {
                meta.working_dirs.last().map(|p| p.display().to_string())
            } else {
                Some(path.clone())
            };
            reply(true, stored, None, None)
        }
        Err(e) => {
            let (error, code) = reply_error(e);
            reply(false, Some(path.clone()), Some(error), Some(code))
        }
    }])
}

pub async fn list_workdirs(c: &Call<'_>, v: Value) -> Result<Frames, Value> {
    let r: SessionRef = c.parse(v)?;
    let meta = c
        .engine()
        .meta(&r.session_id)
        .await
        .map_err(|e| c.fail(e))?;
    Ok(vec![frame(
        "session_workdirs",
        json!({ "session_id": r.session_id, "workdirs": meta.working_dirs }),
    )])
}

#[derive(Deserialize)]
struct SessionLog {
    session_id: String,
    #[serde(default)]
    limit: LogLimit,
}

/// `git_session_log`: the session's commits, newest first.
pub async fn git_log(c: &Call<'_>, v: Value) -> Result<Frames, Value> {
    let r: SessionLog = c.parse(v)?;
    let commits = c
        .engine()
        .commits(&r.session_id, r.limit.get())
        .await
        .map_err(|e| c.fail(e))?;
    Ok(vec![frame(
        "git_session_log",
        json!({ "session_id": r.session_id, "commits": commits }),
    )])
}

/// A reply `data` with the session id beside the value's fields.
fn on_session(kind: &str, session_id: &str, data: impl serde::Serialize) -> Value {
    frame(kind, crate::routes::ForSession { session_id, data })
}

pub async fn git_history(c: &Call<'_>, v: Value) -> Result<Frames, Value> {
    let r: SessionRef = c.parse(v)?;
    let history = c
        .engine()
        .history(&r.session_id)
        .await
        .map_err(|e| c.fail(e))?;
    Ok(vec![on_session("git_history", &r.session_id, history)])
}

pub async fn git_branches(c: &Call<'_>, v: Value) -> Result<Frames, Value> {
    let r: SessionRef = c.parse(v)?;
    let branches = c
        .engine()
        .branches(&r.session_id)
        .await
        .map_err(|e| c.fail(e))?;
    Ok(vec![on_session(
        "git_branches",
        &r.session_id,
        json!({ "branches": branches }),
    )])
}

/// `git_checkout` (also `git_session_checkout`, spec 001's name): show a
/// commit (`commit` or `commit_sha`), a turn of the current line, or a step
/// (`prev`, `next`, `latest`). Read-only; the next message continues from
/// the state shown, on a new branch.
#[derive(Deserialize)]
struct Checkout {
    session_id: String,
    #[serde(default, alias = "commit_sha")]
    commit: Option<String>,
    #[serde(default)]
    turn: Option<u64>,
    #[serde(default)]
    step: Option<Step>,
}

pub async fn git_checkout(c: &Call<'_>, v: Value, kind: &str) -> Result<Frames, Value> {
    let r: Checkout = c.parse(v)?;
    let to = CheckoutTo {
        commit: r.commit,
        turn: r.turn,
        step: r.step,
    };
    let shown = c
        .engine()
        .checkout(&r.session_id, to)
        .await
        .map_err(|e| c.fail(e))?;
    Ok(vec![on_session(kind, &r.session_id, shown)])
}

#[derive(Deserialize)]
struct Switch {
    session_id: String,
    #[serde(default)]
    node_id: Option<String>,
    #[serde(default)]
    branch: Option<String>,
}

/// `git_switch`: move the head to a node or a branch's tip.
pub async fn git_switch(c: &Call<'_>, v: Value) -> Result<Frames, Value> {
    let r: Switch = c.parse(v)?;
    let to = SwitchTo {
        node_id: r.node_id,
        branch: r.branch,
    };
    let shown = c
        .engine()
        .switch(&r.session_id, to)
        .await
        .map_err(|e| c.fail(e))?;
    Ok(vec![on_session("git_switch", &r.session_id, shown)])
}
