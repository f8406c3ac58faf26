use actix_web::{web, HttpResponse};
use openprogram_actors::node::Role;
use openprogram_actors::session::{CreateSpec, NewNode, NodePatch, Posted};
use serde::Deserialize;
use serde_json::Value;

use crate::error::ApiError;
use crate::state::AppState;

/// The body of `POST /messages`: a node's fields plus `session` and
/// `queue`. Every field is checked: an unknown one (a typo such as
/// `predecesor`) is refused with its name, never ignored.
#[derive(Debug)]
pub struct AppendBody {
    node: NewNode,
    /// Fields for the session when this message creates it.
    session: Option<CreateSpec>,
    /// Queue a user message that arrives while a turn is running (it opens
    /// the next turn) instead of refusing it.
    queue: bool,
}

impl<'de> Deserialize<'de> for AppendBody {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let mut fields = serde_json::Map::<String, Value>::deserialize(d)?;
        let session = match fields.remove("session") {
            None | Some(Value::Null) => None,
            Some(v) if !v.is_object() => {
                return Err(D::Error::custom("session: expected an object"));
            }
            Some(v) => Some(
                CreateSpec::deserialize(v)
                    .map_err(|e| D::Error::custom(format!("session: {e}")))?,
            ),
        };
        let queue = match fields.remove("queue") {
            None => false,
            Some(v) => bool::deserialize(v).map_err(|e| D::Error::custom(format!("queue: {e}")))?,
        };
        let node = NewNode::deserialize(Value::Object(fields)).map_err(D::Error::custom)?;
        Ok(AppendBody {
            node,
            session,
            queue,
        })
    }
}

/// `POST /api/sessions/{id}/messages`: append a node. A user or system
/// message to a session that does not exist yet creates it (one atomic
/// step).
#[utoipa::path(post, path = "/api/sessions/{id}/messages", tag = "messages", summary = "Append a node (a user message opens a turn)", params(("id" = String, Path, description = "session id")), request_body(content = crate::schemas::AppendRequest, description = "role, content, id, predecessor, caller, metadata, queue, session"), responses((status = 201, description = "appended", body = crate::schemas::Appended), (status = 200, description = "the same node again (idempotent)", body = crate::schemas::Appended), (status = 202, description = "queued behind the running turn", body = crate::schemas::QueuedAnswer), (status = 400, description = "invalid_id, invalid_body, unknown_caller, invalid_caller, unknown_predecessor", body = crate::schemas::ErrorBody), (status = 404, description = "unknown_session, unknown_project", body = crate::schemas::ErrorBody), (status = 409, description = "run_active, no_open_turn, node_conflict, session_full, project_path_missing", body = crate::schemas::ErrorBody), (status = 500, description = "storage_error", body = crate::schemas::ErrorBody)))]
#[tracing::instrument(name = "append_message", skip(state, body), fields(role))]
pub async fn append(
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: web::Json<AppendBody>,
) -> Result<HttpResponse, ApiError> {
    let AppendBody {
        node,
        session,
        queue,
    } = body.into_inner();
    tracing::Span::current().record("role", tracing::field::debug(node.role));
    check_session_id(session.as_ref(), &id)?;
    // A user message or a system prompt (agent runtimes persist theirs
    // first) creates the session.
    let create = matches!(node.role, Role::User | Role::System)
        .then(|| session.unwrap_or_default().into_meta(id.to_string()));
    let posted = state.engine.post(&id, node, create, queue).await?;
    Ok(posted_response(&id, posted))
}

/// The `session` fields of a creating request may repeat the path's id,
/// never name another.
pub fn check_session_id(session: Option<&CreateSpec>, id: &str) -> Result<(), ApiError> {
    if session.is_some_and(|s| s.id.as_deref().is_some_and(|sid| sid != id)) {
        return Err(ApiError::bad_request(
            "invalid_body",
            "session.id differs from the id in the path",
        ));
    }
    Ok(())
}

/// 201 appended (200 for a repeated id), 202 queued behind the running
/// turn; the body names the session (a channel's is derived, not given).
pub fn posted_response(session_id: &str, posted: Posted) -> HttpResponse {
    let data = |data| super::ForSession { session_id, data };
    match posted {
        Posted::Appended(out) if out.created => HttpResponse::Created().json(data(out)),
        Posted::Appended(out) => HttpResponse::Ok().json(data(out)),
        queued @ Posted::Queued { .. } => HttpResponse::Accepted().json(super::ForSession {
            session_id,
            data: queued,
        }),
    }
}

/// `PATCH /api/sessions/{id}/messages/{node_id}`: fill a node of the open turn.
#[utoipa::path(patch, path = "/api/sessions/{id}/messages/{node_id}", tag = "messages", summary = "Patch a node of the open turn", params(("id" = String, Path, description = "session id"), ("node_id" = String, Path, description = "node id")), request_body(content = openprogram_actors::session::NodePatch, description = "content, output, metadata"), responses((status = 200, description = "the node", body = openprogram_actors::node::Node), (status = 400, description = "invalid_id, invalid_body", body = crate::schemas::ErrorBody), (status = 404, description = "unknown_session, unknown_node", body = crate::schemas::ErrorBody), (status = 409, description = "node_immutable", body = crate::schemas::ErrorBody), (status = 500, description = "storage_error", body = crate::schemas::ErrorBody)))]
#[tracing::instrument(name = "update_message", skip(state, body))]
pub async fn update(
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    body: web::Json<NodePatch>,
) -> Result<HttpResponse, ApiError> {
    let (id, node_id) = path.into_inner();
    let node = state
        .engine
        .update_node(&id, &node_id, body.into_inner())
        .await?;
    Ok(HttpResponse::Ok().json(node))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    head: Option<String>,
}

/// `GET /api/sessions/{id}/messages[?head=NODE]`: the rendered branch.
#[utoipa::path(get, path = "/api/sessions/{id}/messages", tag = "messages", summary = "The rendered conversation of the head (or ?head=)", params(("id" = String, Path, description = "session id")), responses((status = 200, description = "{session_id, messages}", body = crate::schemas::MessagesPage), (status = 400, description = "invalid_id, invalid_query", body = crate::schemas::ErrorBody), (status = 404, description = "unknown_session, unknown_node", body = crate::schemas::ErrorBody), (status = 500, description = "storage_error", body = crate::schemas::ErrorBody)))]
#[tracing::instrument(name = "list_messages", skip(state))]
pub async fn list(
    state: web::Data<AppState>,
    id: web::Path<String>,
    query: web::Query<ListQuery>,
) -> Result<HttpResponse, ApiError> {
    let messages = state.engine.branch(&id, query.into_inner().head).await?;
    let head = messages
        .iter()
        .rev()
        .find(|n| n.is_conversational())
        .map(|n| n.id.clone());
    Ok(HttpResponse::Ok()
        .json(serde_json::json!({"session_id": id.as_str(), "head": head, "messages": messages})))
}
