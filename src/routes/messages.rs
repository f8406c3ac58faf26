use actix_web::{web, HttpResponse};
use openprogram_actors::node::Role;
use openprogram_actors::session::{CreateSpec, NewNode, NodePatch, Posted};
use serde::Deserialize;

use crate::error::ApiError;
use crate::startup::AppState;

#[derive(Debug, Deserialize)]
pub struct AppendBody {
    #[serde(flatten)]
    node: NewNode,
    /// Fields for the session when this message creates it.
    #[serde(default)]
    session: Option<CreateSpec>,
    /// Queue a user message that arrives while a turn is running (it opens
    /// the next turn) instead of refusing it.
    #[serde(default)]
    queue: bool,
}

/// `POST /api/sessions/{id}/messages`: append a node. A user message to a
/// session that does not exist yet creates it (one atomic step).
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
    if session
        .as_ref()
        .is_some_and(|s| s.id.as_deref().is_some_and(|sid| sid != id.as_str()))
    {
        return Err(ApiError::bad_request(
            "invalid_body",
            "session.id differs from the id in the path",
        ));
    }
    let create =
        (node.role == Role::User).then(|| session.unwrap_or_default().into_meta(id.to_string()));
    Ok(posted_response(
        state.engine.post(&id, node, create, queue).await?,
    ))
}

/// 201 appended (200 for a repeated id), 202 queued behind the running turn.
pub fn posted_response(posted: Posted) -> HttpResponse {
    match posted {
        Posted::Appended(out) if out.created => HttpResponse::Created().json(out),
        Posted::Appended(out) => HttpResponse::Ok().json(out),
        queued @ Posted::Queued { .. } => HttpResponse::Accepted().json(queued),
    }
}

/// `PATCH /api/sessions/{id}/messages/{node_id}`: fill a node of the open turn.
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
