//! WebSocket actions across a cluster (docs/CLUSTER.md): an action for a
//! session another node owns is answered there, and this node answers the
//! actions other nodes forward (`POST /cluster/v1/ws-action`).

use actix_web::{web, HttpResponse};
use openprogram_actors::cluster::{ClusterError, Place};

use crate::cluster::{api, cluster_of, locate, FORWARDED_BY};
use crate::error::ApiError;
use crate::state::AppState;

/// `POST /cluster/v1/ws-action`: a WebSocket action another node took
/// for a session this node owns; the reply frames as a JSON array of
/// frame texts.
pub async fn ws_action(
    state: web::Data<AppState>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    cluster_of(&state)?;
    let text = std::str::from_utf8(&body)
        .map_err(|_| ApiError::bad_request("invalid_body", "the action is not UTF-8"))?;
    let frames = super::actions::handle_here(&state, text).await;
    Ok(HttpResponse::Ok().json(frames))
}

/// A WebSocket action for a session another node owns, answered there
/// (None: answer it here). Its broadcasts reach this node's clients
/// through the cluster's event relay.
pub async fn ws_forward(state: &AppState, text: &str) -> Option<Vec<String>> {
    #[derive(serde::Deserialize)]
    struct Peek {
        action: Option<String>,
        session_id: Option<String>,
        request_id: Option<serde_json::Value>,
    }
    let cluster = state.engine.cluster()?.clone();
    let peek: Peek = serde_json::from_str(text).ok()?;
    let id = peek.session_id.filter(|s| !s.is_empty())?;
    let write = !peek.action.as_deref().is_some_and(reads_only_action);
    let place = locate(&cluster, &id, write).await;
    let refuse = |e: ClusterError| {
        let e = api(e);
        let frame =
            super::frames::action_error(peek.action.as_deref(), Some(&id), &e.message, e.code);
        Some(super::frames::to_text(
            vec![frame],
            peek.request_id.as_ref(),
        ))
    };
    let url = match place {
        Ok(Place::Local) => return None,
        Ok(Place::Moving) => return refuse(ClusterError::Moving(id.clone())),
        Err(e) => return refuse(e),
        Ok(Place::Forward { url, .. }) => url,
    };
    let (body, token, me) = (
        text.to_string(),
        cluster.token().map(str::to_string),
        cluster.node_id().to_string(),
    );
    let sent = web::block(move || {
        let mut r = ureq::AgentBuilder::new()
            .timeout_connect(std::time::Duration::from_secs(2))
            .timeout(std::time::Duration::from_secs(120))
            .build()
            .post(&format!(
                "{}/cluster/v1/ws-action",
                url.trim_end_matches('/')
            ))
            .set("Content-Type", "application/json")
            .set(FORWARDED_BY, &me);
        if let Some(t) = token {
            r = r.set("Authorization", &format!("Bearer {t}"));
        }
        r.send_string(&body)
            .map_err(|e| e.to_string())?
            .into_json::<Vec<String>>()
            .map_err(|e| e.to_string())
    })
    .await;
    match sent {
        Ok(Ok(frames)) => Some(frames),
        _ => refuse(ClusterError::Moving(id.clone())),
    }
}

/// WebSocket actions that only read (the others may create the session).
fn reads_only_action(action: &str) -> bool {
    action.starts_with("list_")
        || action.starts_with("get_")
        || matches!(
            action,
            "load_session"
                | "git_session_log"
                | "git_history"
                | "git_branches"
                | "rewind_list"
                | "turn_file_diff"
                | "revert_preview"
                | "agent_turns"
                | "project_file_tree"
                | "project_file_read"
        )
}
