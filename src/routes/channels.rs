//! Channel bridges (chat apps): one session per conversation key.

use actix_web::{web, HttpResponse};
use openprogram_actors::ids;
use openprogram_actors::node::Role;
use openprogram_actors::session::{CreateSpec, NewNode};
use serde::Deserialize;

use super::messages::posted_response;
use crate::error::ApiError;
use crate::state::AppState;

#[derive(Debug, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
#[derive(utoipa::ToSchema)]
pub struct ChannelMessage {
    account_id: String,
    peer_id: String,
    #[serde(default)]
    peer_display: Option<String>,
    #[serde(default)]
    peer_kind: Option<String>,
    text: String,
    /// Makes a retried post idempotent.
    #[serde(default)]
    message_id: Option<String>,
}

/// `POST /api/channels/{channel}/messages`: route a person's message to the
/// session of its conversation (channel + account + peer), creating it on
/// the first message. A message is never refused: during a running turn it
/// is queued durably (202) and opens the next turn, in arrival order.
#[utoipa::path(post, path = "/api/channels/{channel}/messages", tag = "channels", summary = "A channel message, routed to its conversation session", params(("channel" = String, Path, description = "channel name")), request_body(content = crate::routes::channels::ChannelMessage, description = "account_id, peer_id, peer_display, peer_kind, text, message_id"), responses((status = 201, description = "opened a turn", body = crate::schemas::Appended), (status = 200, description = "the same message again", body = crate::schemas::Appended), (status = 202, description = "queued", body = crate::schemas::QueuedAnswer), (status = 400, description = "invalid_id, invalid_body", body = crate::schemas::ErrorBody), (status = 500, description = "storage_error", body = crate::schemas::ErrorBody)))]
#[tracing::instrument(name = "channel_message", skip(state, body))]
pub async fn post(
    state: web::Data<AppState>,
    req: actix_web::HttpRequest,
    channel: web::Path<String>,
    body: web::Json<ChannelMessage>,
) -> Result<HttpResponse, ApiError> {
    let m = body.into_inner();
    ids::validate("channel", &channel)
        .map_err(|e| ApiError::bad_request("invalid_id", e.to_string()))?;
    if m.account_id.is_empty() || m.peer_id.is_empty() {
        return Err(ApiError::bad_request(
            "invalid_body",
            "account_id and peer_id are required",
        ));
    }
    if let Some(mid) = &m.message_id {
        ids::validate("message id", mid)
            .map_err(|e| ApiError::bad_request("invalid_id", e.to_string()))?;
    }
    let session_id = ids::conversation_id(&channel, &m.account_id, &m.peer_id);
    // On a cluster node: the conversation's session may be another node's.
    let bytes = serde_json::to_vec(&m).unwrap_or_default();
    if let Some(answer) = crate::cluster::serve_elsewhere(&state, &req, &session_id, bytes).await {
        return Ok(answer);
    }
    let mut metadata = serde_json::Map::new();
    metadata.insert("channel".into(), channel.as_str().into());
    if let Some(kind) = &m.peer_kind {
        metadata.insert("peer_kind".into(), kind.clone().into());
    }
    let node = NewNode {
        id: m.message_id,
        role: Role::User,
        content: m.text.into(),
        predecessor: None,
        caller: None,
        metadata,
        name: None,
        output: None,
        at: None,
    };
    let spec = CreateSpec {
        // As the original: the source is the channel's name.
        source: Some(channel.to_string()),
        channel: Some(channel.to_string()),
        account_id: Some(m.account_id),
        peer_id: Some(m.peer_id),
        peer_display: m.peer_display,
        ..CreateSpec::default()
    };
    let posted = state
        .engine
        .post(
            &session_id,
            node,
            Some(spec.into_meta(session_id.clone())),
            true,
        )
        .await?;
    Ok(posted_response(&session_id, posted))
}
