use actix_web::{web, HttpResponse};
use openprogram_actors::session::EndTurn;

use crate::error::ApiError;
use crate::startup::AppState;

/// `POST /api/sessions/{id}/turns`: end the open turn with one git commit.
#[tracing::instrument(name = "end_turn", skip(state, body))]
pub async fn end_turn(
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: web::Json<EndTurn>,
) -> Result<HttpResponse, ApiError> {
    let outcome = state.engine.end_turn(&id, body.into_inner()).await?;
    Ok(HttpResponse::Created().json(outcome))
}
