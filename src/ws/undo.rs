//! Undo over the WebSocket: the original web client's per-turn file card
//! (`list_turn_files`, `turn_file_diff`, `revert_turn`, answered from the
//! turn's agent commit in the bound project), and the same operations as
//! the HTTP routes (`revert_preview`, `agent_turns`, `apply_agent_turn`).

use openprogram_actors::project::agent_turns::AgentTurn;
use serde::Deserialize;
use serde_json::{json, Value};

use super::frames::{frame, reply_error, Call, Frames};

#[derive(Deserialize)]
struct TurnFiles {
    session_id: String,
    #[serde(default, alias = "msg_id")]
    assistant_msg_id: Option<String>,
    #[serde(default)]
    turn: Option<u64>,
    #[serde(default)]
    through: Option<u64>,
    #[serde(default)]
    path: Option<String>,
}

/// The turn the frame names: `turn`, or the one holding its message.
async fn turn_named(c: &Call<'_>, r: &TurnFiles) -> Result<Option<u64>, String> {
    if let Some(n) = r.turn {
        return Ok(Some(n));
    }
    let Some(msg) = r.assistant_msg_id.as_deref().filter(|m| !m.is_empty()) else {
        return Err("a message id or a turn number is required".into());
    };
    c.engine()
        .turn_of_node(&r.session_id, msg)
        .await
        .map_err(|e| reply_error(e).0)
}

/// A file of a turn as the original client lists it: the absolute path,
/// the project-relative one, `add`/`modify`/`delete`, line counts.
fn file_rows(turn: &AgentTurn, root: &std::path::Path) -> Vec<Value> {
    turn.files
        .iter()
        .map(|f| {
            let op = match f.status {
                "added" => "add",
                "deleted" => "delete",
                "renamed" => "rename",
                _ => "modify",
            };
            json!({"path": root.join(&f.path), "rel": f.path, "op": op,
                   "added": f.additions, "removed": f.deletions})
        })
        .collect()
}

/// `list_turn_files {session_id, assistant_msg_id}` →
/// `list_turn_files_result {session_id, assistant_msg_id, files, paths,
/// reverted, state, commit}`: the files of the turn's agent commit (or of
/// its held commit); none for a turn that changed nothing.
pub async fn list_turn_files(c: &Call<'_>, v: Value) -> Result<Frames, Value> {
    let r: TurnFiles = c.parse(v)?;
    let mut data = json!({"session_id": r.session_id, "assistant_msg_id": r.assistant_msg_id,
                          "files": [], "paths": [], "reverted": false});
    let turn = turn_named(c, &r).await;
    if let Ok(n) = &turn {
        data["turn"] = json!(n);
    }
    let found = match turn {
        Ok(Some(n)) => c
            .engine()
            .agent_turn(&r.session_id, n, None)
            .await
            .map_err(|e| reply_error(e).0),
        Ok(None) => Ok(None),
        Err(e) => Err(e),
    };
    match found {
        Ok(Some((turn, _))) => {
            let root = c
                .engine()
                .session_cwd(&r.session_id)
                .await
                .map(|(p, _)| p)
                .unwrap_or_default();
            let files = file_rows(&turn, &root);
            let paths: Vec<Value> = files.iter().map(|f| f["path"].clone()).collect();
            data["files"] = Value::Array(files);
            data["paths"] = Value::Array(paths);
            data["reverted"] = json!(turn.reverted_by.is_some());
            data["state"] = json!(turn.state);
            data["commit"] = json!(turn.commit);
        }
        Ok(None) => {}
        Err(e) => data["error"] = json!(e),
    }
    Ok(vec![frame("list_turn_files_result", data)])
}

/// `turn_file_diff {session_id, assistant_msg_id, path}` →
/// `turn_file_diff_result {session_id, assistant_msg_id, path, diff,
/// approximate: false}`: the file's patch in the turn's agent commit.
pub async fn turn_file_diff(c: &Call<'_>, v: Value) -> Result<Frames, Value> {
    let r: TurnFiles = c.parse(v)?;
    let path = r.path.clone().unwrap_or_default();
    let mut data = json!({"session_id": r.session_id, "assistant_msg_id": r.assistant_msg_id,
                          "path": path, "diff": "", "approximate": false});
    let root = c
        .engine()
        .session_cwd(&r.session_id)
        .await
        .map(|(p, _)| p)
        .unwrap_or_default();
    let rel = std::path::Path::new(&path)
        .strip_prefix(&root)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| path.clone());
    let found = match turn_named(c, &r).await {
        Ok(Some(n)) => c
            .engine()
            .agent_turn(&r.session_id, n, Some(rel))
            .await
            .map_err(|e| reply_error(e).0),
        Ok(None) => Ok(None),
        Err(e) => Err(e),
    };
    match found {
        Ok(Some((_, patch))) => data["diff"] = json!(patch),
        Ok(None) => data["error"] = json!("this turn has no agent commit"),
        Err(e) => data["error"] = json!(e),
    }
    Ok(vec![frame("turn_file_diff_result", data)])
}

/// `revert_turn {session_id, msg_id | turn, through?}` →
/// `revert_turn_result {session_id, msg_id, reverted_paths, errors,
/// commit, refusals?}`: one new commit undoing the turn's agent commit
/// (refusals listed in `errors`, nothing changed).
pub async fn revert_turn(c: &Call<'_>, v: Value) -> Result<Frames, Value> {
    let r: TurnFiles = c.parse(v)?;
    let mut data = json!({"session_id": r.session_id, "msg_id": r.assistant_msg_id,
                          "reverted_paths": [], "errors": []});
    let turn = match turn_named(c, &r).await {
        Ok(Some(n)) => n,
        Ok(None) => {
            data["errors"] = json!(["the turn is still open"]);
            return Ok(vec![frame("revert_turn_result", data)]);
        }
        Err(e) => {
            data["errors"] = json!([e]);
            return Ok(vec![frame("revert_turn_result", data)]);
        }
    };
    let turns = match crate::routes::undo::turn_range(turn, r.through) {
        Ok(t) => t,
        Err(e) => return Err(c.error(e.code, &e.message)),
    };
    match c.engine().revert_turns(&r.session_id, turns).await {
        Ok(done) => {
            let root = c
                .engine()
                .session_cwd(&r.session_id)
                .await
                .map(|(p, _)| p)
                .unwrap_or_default();
            let paths: Vec<Value> = done
                .landed
                .diff
                .files
                .iter()
                .map(|f| json!(root.join(&f.path)))
                .collect();
            data["reverted_paths"] = Value::Array(paths);
            data["commit"] = json!(done.landed.commit);
            data["node_id"] = json!(done.node_id);
            data["turn"] = json!(turn);
        }
        Err(e) => {
            let api = crate::error::ApiError::from(e);
            data["errors"] = json!([api.message]);
            data["code"] = json!(api.code);
            if let Some(details) = api.details {
                data["refusal"] = details;
            }
        }
    }
    Ok(vec![frame("revert_turn_result", data)])
}

/// `revert_preview {session_id, turn | assistant_msg_id, through?}` →
/// `revert_preview {session_id, turns, diff, refusals, can_revert}`.
pub async fn revert_preview(c: &Call<'_>, v: Value) -> Result<Frames, Value> {
    let r: TurnFiles = c.parse(v)?;
    let turn = match turn_named(c, &r).await {
        Ok(Some(n)) => n,
        Ok(None) => return Err(c.error("no_agent_turn", "the turn is still open")),
        Err(e) => return Err(c.error("no_agent_turn", &e)),
    };
    let turns = crate::routes::undo::turn_range(turn, r.through)
        .map_err(|e| c.error(e.code, &e.message))?;
    let preview = c
        .engine()
        .revert_preview(&r.session_id, turns)
        .await
        .map_err(|e| c.fail(e))?;
    Ok(vec![frame("revert_preview", preview)])
}

#[derive(Deserialize)]
struct ProjectTurns {
    project_id: String,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    session_id: Option<String>,
    #[serde(default)]
    turn: Option<u64>,
}

/// `agent_turns {project_id, limit?}` → `agent_turns {project_id,
/// sessions}` (as `GET /api/projects/{id}/agent-turns`).
pub async fn agent_turns(c: &Call<'_>, v: Value) -> Result<Frames, Value> {
    let r: ProjectTurns = c.parse(v)?;
    let limit = r.limit.unwrap_or(100).clamp(1, 10_000);
    let sessions = c
        .engine()
        .agent_turns(&r.project_id, limit)
        .await
        .map_err(|e| c.fail(e))?;
    Ok(vec![frame(
        "agent_turns",
        json!({"project_id": r.project_id, "sessions": sessions}),
    )])
}

/// `apply_agent_turn {project_id, session_id, turn}` →
/// `agent_turn_applied {project_id, session_id, turn, commit, …}`.
pub async fn apply_agent_turn(c: &Call<'_>, v: Value) -> Result<Frames, Value> {
    let r: ProjectTurns = c.parse(v)?;
    let (Some(sid), Some(turn)) = (r.session_id, r.turn) else {
        return Err(c.error("invalid_fields", "session_id and turn are required"));
    };
    let done = c
        .engine()
        .apply_agent_turn(&r.project_id, &sid, turn)
        .await
        .map_err(|e| c.fail(e))?;
    let mut data = serde_json::to_value(&done).unwrap_or_default();
    data["session_id"] = json!(sid);
    data["turn"] = json!(turn);
    Ok(vec![frame("agent_turn_applied", data)])
}
